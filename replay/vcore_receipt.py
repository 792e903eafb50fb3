"""verdict-core run receipts: rebuild ``receipt.json`` from the evidence and verify it.

Implements ../shared/reference/verdict-core/FORMAT.md (section numbers below refer to
it). Pure: the caller reads the run directory and hands over bytes (``RunFiles``);
this module parses, projects and compares. ``verify_run_files`` returns the problem
strings of § 7, in the order found.

Where § 4 can be read two ways, the reading is that of verdict-core's own receipt code,
which wrote every real receipt: an honest receipt must never read as tampered. So a row
that never saw a ``terminal`` is ``unattested`` whatever ended it, route identity is
classified after the whole log (a later ``failure`` category counts), a "present" field
is a non-empty one, and only a ``dispatch`` to another route drops a selection's buffer
(docs/readme/verdict.md lists them; tests/test_vcore_shapes.py pins them).

JSON is parsed with Python's ``json`` module on purpose: the receipt is compared with
Python semantics (``1 == 1.0 == true``, § 7) and ``graph_digest`` is defined over
``json.dumps`` output (§ 3), so the reference encoder is the one to use here.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RECEIPT_SCHEMA = "verdict.run-receipt/v1"
GRAPH_SCHEMA = "verdict.orchestration/v1"
MECHANICAL = "(mechanical merge)"
# FORMAT.md § 4 names this field "a fixed sentence" without quoting it. This is the
# sentence verdict-core writes (its receipt module, MIT): any other text would make every
# honest receipt with a successful mismatched attempt fail verification.
ROUTE_IDENTITY_WARNING = (
    "One or more successful attempts reported a model different from the intended route"
)


class RebuildError(ValueError):
    """The evidence cannot be projected into a receipt (§ 7 step 6)."""


@dataclass(frozen=True, slots=True)
class VEvent:
    """One parsed line of ``events.jsonl`` (§ 1 'Reading')."""

    seq: int
    at: str
    type: str
    node_id: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunFiles:
    """A run directory's contents as the reader found them.

    ``None`` means the file is absent; a ``*_error`` string is a read failure already
    phrased as § 7 phrases it (e.g. ``cannot read graph.json: [Errno 2] …``).
    """

    name: str
    receipt: bytes | None
    events: bytes | None
    graph: bytes | None = None
    graph_error: str | None = None
    review: bytes | None = None
    review_error: str | None = None
    events_label: str = "events.jsonl"
    receipt_error: str | None = None


# ----------------------------------------------------------------- § 1, § 5: the log


def events_digest(raw: bytes) -> str:
    """§ 5: SHA-256 of the file's exact bytes, no decoding or normalisation."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def parse_events(raw: bytes, label: str = "events.jsonl") -> list[VEvent]:
    """§ 1: UTF-8, ``splitlines()``, blank lines skipped, seq strictly increasing.

    Unknown event types are accepted (a tolerant reader, as § 1 allows): only the
    projected types can change a receipt, and ``events_digest`` covers the rest.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RebuildError(f"{label}: corrupt event: {exc}") from None
    events: list[VEvent] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
            ev = VEvent(
                seq=int(v["seq"]),
                at=str(v["at"]),
                type=str(v["type"]),
                node_id=str(v.get("node_id", "")),
                data=dict(v.get("data") or {}),
            )
        except Exception as exc:  # the reference reader reports any parse failure alike
            raise RebuildError(f"{label}:{lineno}: corrupt event: {exc}") from None
        if events and ev.seq <= events[-1].seq:
            raise RebuildError(f"{label}:{lineno}: seq {ev.seq} not greater than {events[-1].seq}")
        events.append(ev)
    return events


# ------------------------------------------------------------------ § 3: the graph

NODE_DEFAULTS: dict[str, Any] = {
    "kind": "implement",
    "story": "",
    "depends_on": [],
    "owned_files": [],
    "required_context": [],
    "acceptance": [],
    "verification_command": [],
    "barrier": "",
    "risk": "low",
    "required_capabilities": ["tools"],
    "coding": True,
    "reasoning": False,
    "min_context_tokens": 32000,
}
NODE_FIELDS = ("node_id", "objective", *NODE_DEFAULTS)
_LIST_FIELDS = ("depends_on", "acceptance", "verification_command", "required_capabilities")
_PATH_FIELDS = ("owned_files", "required_context")


def _as_list(value: Any, field: str, node_id: str) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    raise RebuildError(
        f"graph node {node_id!r}: {field} must be a list, got {type(value).__name__}"
    )


def _norm_path(item: Any, field: str, node_id: str) -> str:
    path = str(item).strip().replace("\\", "/")
    if path.startswith("/") or ".." in path.split("/"):
        raise RebuildError(
            f"graph node {node_id!r}: {field} entry {item!r} must be a relative path inside the repo"
        )
    return posixpath.normpath(path)


def _barrier(value: Any) -> str:
    if value is True:
        return "integration"
    if value is False or value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def normalise_node(raw: Any) -> dict[str, Any]:
    """§ 3 step 2: exactly the node fields, defaults filled, values coerced."""
    if not isinstance(raw, dict):
        raise RebuildError(f"graph node must be an object, got {type(raw).__name__}")
    node_id = str(raw.get("node_id", ""))
    unknown = sorted(set(raw) - set(NODE_FIELDS))
    if unknown:
        raise RebuildError(f"graph node {node_id!r}: unknown key(s) {unknown}")
    if "node_id" not in raw or "objective" not in raw:
        raise RebuildError(f"graph node {node_id!r}: node_id and objective are required")
    node = {**NODE_DEFAULTS, **raw}
    out: dict[str, Any] = {"node_id": node_id, "objective": str(node["objective"])}
    out["kind"] = str(node["kind"])
    out["story"] = str(node["story"])
    for f in _LIST_FIELDS:
        out[f] = [str(x) for x in _as_list(node[f], f, node_id)]
    for f in _PATH_FIELDS:
        out[f] = [_norm_path(x, f, node_id) for x in _as_list(node[f], f, node_id)]
    out["barrier"] = _barrier(node["barrier"])
    risk = str(node["risk"]).lower()
    out["risk"] = risk if risk in ("low", "medium", "high") else "medium"
    out["coding"] = bool(node["coding"])
    out["reasoning"] = bool(node["reasoning"])
    out["min_context_tokens"] = int(node["min_context_tokens"])
    return {k: out[k] for k in NODE_FIELDS}


def canonical_graph(graph: Mapping[str, Any]) -> dict[str, Any]:
    """§ 3 steps 1–4 (``run_id`` and extra top-level keys such as ``openspec`` dropped)."""
    nodes = graph.get("nodes") or []
    if not isinstance(nodes, list):
        raise RebuildError("graph.json: nodes must be a list")
    return {
        "schema_version": GRAPH_SCHEMA,
        "goal": graph.get("goal", ""),
        "topology": graph.get("topology") or "PARALLEL_WORK_UNITS",
        "rationale": graph.get("rationale") or [],
        "max_parallel": int(graph.get("max_parallel") or 3),
        "nodes": [normalise_node(n) for n in nodes],
    }


def graph_digest(canonical: Mapping[str, Any]) -> str:
    """§ 3 step 5."""
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------- § 4.1: node records


def _free(ev: VEvent, with_node: bool = True) -> dict[str, Any]:
    head: dict[str, Any] = {"seq": ev.seq, "at": ev.at}
    if with_node:
        head["node_id"] = ev.node_id
    return {**head, **ev.data}


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


_PROBE_FIELDS = ("probe_class", "cache_checked_at", "cache_freshness")


def present_text(data: Mapping[str, Any], fields: Sequence[str]) -> dict[str, str]:
    """The ``fields`` of ``data`` that are *present* in § 4.1's sense, as strings.

    A null or empty value is not present: verdict-core leaves such a key off the row
    rather than writing ``null``, so a newer event that carries ``cache_checked_at:
    null`` must not add a key its receipt never had.
    """
    return {f: str(data[f]) for f in fields if data.get(f)}


def classify_route_identity(
    ok: bool, reported: str, error: str, failure_category: str, route_id: str
) -> str:
    """§ 4.1 ``terminal``: mechanical merge; a failed attempt is ``mismatch`` only when its
    error or failure category is ``model_mismatch``; a success is attested by the model
    it reports (none reported: ``unattested``)."""
    if reported == MECHANICAL:
        return "mechanical"
    if not ok:
        return "mismatch" if "model_mismatch" in (error, failure_category) else "unattested"
    if not reported:
        return "unattested"
    return "match" if reported == route_id else "mismatch"


class _NodeState:
    """Folds one node's events into its receipt record (§ 4.1)."""

    def __init__(self, node: Mapping[str, Any]) -> None:
        self.node = node
        self.rows: dict[int, dict[str, Any]] = {}
        self.current = 0
        self.last_success_seq: int | None = None
        self.claimed: str | None = None
        self.revocations: list[int] = []
        self.verifies: list[VEvent] = []
        self.commit: str | None = None
        self.buffer: tuple[str, dict[str, Any]] | None = None
        # attempt -> the last terminal's (ok, reported_model, error): route identity is
        # classified once every event is in, since the failure category it reads
        # usually arrives after the terminal (§ 2 'Typical order').
        self.terminals: dict[int, tuple[bool, str, str]] = {}
        self.barriers: dict[str, list[tuple[int, bool]]] = {}
        self.final_state = "PLANNED"

    def _row(self, attempt: int) -> dict[str, Any]:
        row = self.rows.get(attempt)
        if row is None:
            row = {
                "attempt": attempt,
                "route_id": "",
                "provider": "",
                "capacity_class": "unknown",
                "outcome": "running",
                "fault_injected": False,
            }
            self.rows[attempt] = row
        return row

    def _touch(self, row: dict[str, Any], data: Mapping[str, Any]) -> None:
        row["route_id"] = data.get("route_id") or row["route_id"]
        row["provider"] = (
            data.get("provider") or row["provider"] or row["route_id"].split("/", 1)[0].lower()
        )
        if data.get("capacity_class"):
            row["capacity_class"] = data["capacity_class"]
        row["fault_injected"] = bool(row["fault_injected"] or data.get("fault_injected"))
        row.update(present_text(data, _PROBE_FIELDS))

    def _take_buffer(self, row: dict[str, Any], is_dispatch: bool) -> None:
        """§ 4.1: a preceding ``selection``'s fields go to the next row event on the
        route it chose; only a ``dispatch`` to another route drops them (a late
        ``terminal``/``failure`` of an earlier attempt on another route leaves them)."""
        if self.buffer is None:
            return
        route, fields = self.buffer
        if route and row["route_id"] == route:
            row.update(fields)
            self.buffer = None
        elif is_dispatch:
            self.buffer = None

    def selection(self, ev: VEvent) -> None:
        fields = present_text(ev.data, _PROBE_FIELDS)
        if ev.data.get("unknown_capacity_opt_in"):
            fields["unknown_capacity_opt_in"] = "true"
        self.buffer = (str(ev.data.get("route_id") or ""), fields)

    def _attempt_event(self, ev: VEvent, attempt: int) -> dict[str, Any]:
        row = self._row(attempt)
        self._touch(row, ev.data)
        self._take_buffer(row, is_dispatch=ev.type == "dispatch")
        return row

    def dispatch(self, ev: VEvent) -> None:
        a = ev.data.get("attempt")
        attempt = a if _positive_int(a) else self.current + 1
        self.current = attempt
        self._attempt_event(ev, attempt)

    def _attempt_of(self, ev: VEvent) -> int:
        a = ev.data.get("attempt")
        attempt = a if _positive_int(a) else (self.current or 1)
        self.current = attempt
        return attempt

    def terminal(self, ev: VEvent) -> None:
        row = self._attempt_event(ev, self._attempt_of(ev))
        d = ev.data
        ok = d.get("ok") is True
        row["outcome"] = "success" if ok else "failure"
        dur = d.get("duration_seconds")
        if isinstance(dur, int | float) and not isinstance(dur, bool):
            row["duration_seconds"] = float(dur)
        if isinstance(d.get("usage"), dict):
            row["usage"] = d["usage"]
        row.update(present_text(d, ("executor_kind", "harness")))
        reported = str(d.get("reported_model") or "")
        row["intended_route"] = row["route_id"]
        row["executed_model"] = reported or None
        self.terminals[row["attempt"]] = (ok, reported, str(d.get("error") or ""))
        if ok:
            self.last_success_seq = ev.seq

    def failure(self, ev: VEvent) -> None:
        row = self._attempt_event(ev, self._attempt_of(ev))
        row["outcome"] = "failure"
        row["failure_category"] = ev.data.get("category") or "unknown"

    def node_state(self, ev: VEvent) -> None:
        state = str(ev.data.get("state") or "")
        self.claimed = state
        if state == "TERMINAL_SUCCESS":
            self.last_success_seq = ev.seq
        if state in ("REJECTED", "BLOCKED"):
            self.revocations.append(ev.seq)

    def integrate(self, ev: VEvent) -> None:
        # § 4.1: an integrate without a commit (a failed merge) sets none — the record
        # then has no ``commit`` key, as verdict-core writes it, rather than ``null``.
        if ev.data.get("commit"):
            self.commit = str(ev.data["commit"])

    def barrier(self, ev: VEvent, name: str) -> None:
        self.barriers.setdefault(name, []).append((ev.seq, ev.data.get("ok") is True))

    def record(self) -> dict[str, Any]:
        last = self.last_success_seq
        validated = [
            # a verify without a command reads as "" (§ 2: verify always carries one)
            {
                "command": v.data.get("command", ""),
                "exit_code": v.data.get("exit_code"),
                "seq": v.seq,
            }
            for v in self.verifies
            if v.data.get("ok") is True and last is not None and v.seq > last
        ]
        state = self.final_state = self._final_state(validated)
        rows = [self.rows[a] for a in sorted(self.rows)]
        live = rows[-1] if rows and state == "RUNNING" else None
        for row in rows:
            if row["outcome"] == "running" and row is not live:
                row["outcome"] = "abandoned"
            row["route_identity"] = self._route_identity(row)
        rec: dict[str, Any] = {
            "node_id": self.node["node_id"],
            "kind": self.node["kind"],
            "final_state": state,
            "attempts": rows,
            "validated_by": validated,
        }
        if self.commit is not None:
            rec["commit"] = self.commit
        return rec

    def _route_identity(self, row: Mapping[str, Any]) -> str:
        """§ 4.1: a row that never saw a ``terminal`` is ``unattested`` whatever ended it
        (running, abandoned or failed); otherwise its last terminal decides."""
        seen = self.terminals.get(row["attempt"])
        if seen is None:
            return "unattested"
        ok, reported, error = seen
        return classify_route_identity(
            ok, reported, error, str(row.get("failure_category") or ""), row["route_id"]
        )

    def _final_state(self, validated: list[dict[str, Any]]) -> str:
        if validated and not any(s > max(v["seq"] for v in validated) for s in self.revocations):
            return "VALIDATED"
        if self.claimed and self.claimed != "VALIDATED":
            return self.claimed
        if self.last_success_seq is not None:
            return "TERMINAL_SUCCESS"
        if self.rows:
            outcome = self.rows[max(self.rows)]["outcome"]
            return {"success": "TERMINAL_SUCCESS", "failure": "TERMINAL_FAILURE"}.get(
                outcome, "RUNNING"
            )
        return "PLANNED"

    def no_change_after_ownership(self) -> bool:
        last_ok_no_change = max(
            (s for s, ok in self.barriers.get("no_change", []) if ok), default=None
        )
        last_ownership = max((s for s, _ in self.barriers.get("ownership", [])), default=-1)
        return last_ok_no_change is not None and last_ok_no_change > last_ownership


def node_records(
    nodes: Sequence[Mapping[str, Any]], events: Sequence[VEvent]
) -> tuple[list[dict[str, Any]], dict[str, _NodeState]]:
    states = {n["node_id"]: _NodeState(n) for n in nodes}
    for ev in events:
        st = states.get(ev.node_id)
        if st is None:
            continue
        handler = {
            "selection": st.selection,
            "dispatch": st.dispatch,
            "terminal": st.terminal,
            "failure": st.failure,
            "node_state": st.node_state,
            "integrate": st.integrate,
        }.get(ev.type)
        if handler is not None:
            handler(ev)
        elif ev.type == "verify":
            st.verifies.append(ev)
        elif ev.type == "barrier":
            st.barrier(ev, str(ev.data.get("name") or ev.node_id or "integration"))
    return [states[n["node_id"]].record() for n in nodes], states


# ------------------------------------------------------ § 4.2, § 4.3: integration, review


def integration(nodes: Sequence[Mapping[str, Any]], events: Sequence[VEvent]) -> dict[str, Any]:
    barriers: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev.type == "barrier":
            name = ev.data.get("name") or ev.node_id or "integration"
            barriers[name] = {"name": name, "ok": ev.data.get("ok") is True, "seq": ev.seq}
    declared = sorted({n["barrier"] for n in nodes if n["barrier"]})
    missing = [name for name in declared if name not in barriers]
    ok = bool(barriers) and not missing and all(b["ok"] for b in barriers.values())
    return {"ok": ok, "barriers": [barriers[k] for k in sorted(barriers)], "missing": missing}


_REVIEW_ATTEMPT_FIELDS = (
    "attempt",
    "route_id",
    "status",
    "category",
    "scope",
    "cooldown_seconds",
    "duration_seconds",
    "detail",
)


def _blocking(src: Mapping[str, Any]) -> int:
    findings = src.get("findings")
    if isinstance(findings, list):
        return sum(
            1
            for f in findings
            if isinstance(f, Mapping) and str(f.get("severity", "")).lower() in ("critical", "high")
        )
    value = src.get("blocking")
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, int) else 0


def review(review_json: Any, events: Sequence[VEvent]) -> dict[str, Any]:
    reviews = [e for e in events if e.type == "review"]
    if review_json is not None:
        if not isinstance(review_json, dict):
            raise RebuildError("review.json must contain a JSON object")
        src: Mapping[str, Any] = review_json
    elif reviews:
        src = reviews[-1].data
    else:
        src = {"status": "MISSING", "reviewer": "", "route_id": "", "blocking": 0}
    out: dict[str, Any] = {
        "status": str(src.get("status") or "ERROR").upper(),
        "reviewer": _text(src.get("reviewer")),
        "route_id": _text(src.get("route_id")),
        "blocking": _blocking(src),
    }
    attempts = [
        {k: e.data[k] for k in _REVIEW_ATTEMPT_FIELDS if e.data.get(k) is not None}
        for e in events
        if e.type == "review_attempt"
    ]
    if attempts:
        out["attempts"] = attempts
    return out


def _text(value: Any) -> str:
    return "" if value is None else str(value)


# ---------------------------------------------------------- § 6: completion verdict


def _openspec_problem(block: Any) -> str | None:
    if not isinstance(block, Mapping):
        return "OpenSpec block malformed"
    result = block.get("conformance_result")
    if not isinstance(result, Mapping):
        return "OpenSpec conformance required: no conformance result recorded"
    if result.get("status") != "PASS":
        why = result.get("reason") or f"status {result.get('status')}"
        return f"OpenSpec conformance required: {why}"
    expected = block.get("spec_revision_digest")
    if not expected or result.get("spec_revision_digest") != expected:
        return "OpenSpec spec_changed: conformance revision differs"
    if (
        not result.get("output_sha256")
        or result.get("valid") is not True
        or result.get("issues")
        or result.get("exit_code") != 0
    ):
        return "OpenSpec conformance evidence invalid"
    return None


def completion_verdict(receipt: Mapping[str, Any]) -> tuple[str, str]:
    """§ 6: the first rule that fires decides; all but the first yield BLOCKED."""
    if receipt.get("claimed_outcome") == "CANCELLED":
        return "CANCELLED", "run cancelled by operator"
    schema = receipt.get("schema")
    if schema != RECEIPT_SCHEMA:
        return "BLOCKED", f"unknown receipt schema {schema!r}"
    if "openspec" in receipt:
        problem = _openspec_problem(receipt["openspec"])
        if problem:
            return "BLOCKED", problem
    gated = [n for n in receipt.get("nodes", []) if n.get("kind") in ("implement", "integrate")]
    if not gated:
        return "BLOCKED", "no implement/integrate nodes to validate"
    for n in gated:
        if n.get("final_state") != "VALIDATED":
            return (
                "BLOCKED",
                f"node {n['node_id']} not VALIDATED (final_state={n.get('final_state')})",
            )
    integ = receipt.get("integration") or {}
    if not integ.get("ok"):
        failed = [b["name"] for b in integ.get("barriers", []) if not b.get("ok")]
        if failed:
            return "BLOCKED", f"integration barrier failed: {', '.join(failed)}"
        if integ.get("missing"):
            return "BLOCKED", f"integration barrier missing: {', '.join(integ['missing'])}"
        return "BLOCKED", "integration barrier not recorded"
    rev = receipt.get("review") or {}
    if rev.get("status") != "PASS":
        return "BLOCKED", f"review status {rev.get('status')} (PASS required)"
    if rev.get("blocking"):
        return "BLOCKED", f"review has {rev['blocking']} blocking finding(s)"
    return "COMPLETE", "all implement/integrate nodes validated, barrier ok, review PASS"


# ----------------------------------------------------------------- § 4: the receipt


def _of(events: Sequence[VEvent], *types: str) -> list[VEvent]:
    return [e for e in events if e.type in types]


def rebuild_receipt(
    events: Sequence[VEvent],
    events_raw: bytes,
    graph: Mapping[str, Any],
    review_json: Any,
    run_name: str,
) -> dict[str, Any]:
    """§ 4: every receipt field from the log, the graph and the optional review.json."""
    if not isinstance(graph, Mapping):
        raise RebuildError("graph.json must contain a JSON object")
    canon = canonical_graph(graph)
    nodes = canon["nodes"]
    records, states = node_records(nodes, events)
    started = next(iter(_of(events, "run_started")), None)
    finished = _of(events, "run_finished")
    started_data = started.data if started else {}
    attempts = [row for rec in records for row in rec["attempts"]]
    identities = [row.get("route_identity") for row in attempts]
    receipt: dict[str, Any] = {
        "schema": RECEIPT_SCHEMA,
        "run_id": graph.get("run_id") or started_data.get("run_id") or run_name,
        "goal": canon["goal"],
        "topology": canon["topology"],
        "graph_digest": graph_digest(canon),
        "nodes": records,
        "route_identity_summary": {
            "attempts": len(attempts),
            **{k: identities.count(k) for k in ("match", "mismatch", "unattested", "mechanical")},
        },
        "integration": integration(nodes, events),
        "reassignments": [_free(e) for e in _of(events, "reassign")],
        "cooldowns": [_free(e) for e in _of(events, "cooldown")],
        "controller_events": [_free(e) for e in _of(events, "controller")],
        "review": review(review_json, events),
        "planner_attempts": [
            _free(e, with_node=False)
            for e in _of(events, "plan_started", "plan_repair_started", "plan_repair_terminal")
        ],
        "decision_signals": [_free(e) for e in _of(events, "decision_signals")] or None,
        "claimed_outcome": str(finished[-1].data.get("outcome", "")) if finished else "",
        "event_count": len(events),
        "events_digest": events_digest(events_raw),
        "started_at": started.at if started else (events[0].at if events else None),
        "finished_at": finished[-1].at if finished else None,
    }
    receipt.update(_optional_fields(graph, started_data, events, nodes, states, attempts))
    receipt["outcome"], receipt["reason"] = completion_verdict(receipt)
    return receipt


def _optional_fields(
    graph: Mapping[str, Any],
    started_data: Mapping[str, Any],
    events: Sequence[VEvent],
    nodes: Sequence[Mapping[str, Any]],
    states: Mapping[str, _NodeState],
    attempts: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """§ 4 'Optional': omitted, never null, when the condition fails."""
    out: dict[str, Any] = {}
    if isinstance(started_data.get("retry_budget"), Mapping):
        out["retry_budget"] = started_data["retry_budget"]
    first_producer = next((e.data.get("producer") for e in _of(events, "run_started")), None)
    if isinstance(first_producer, Mapping):
        out["producer"] = {
            k: first_producer.get(k) for k in ("verdict_version", "git_sha", "dirty")
        }
    gates, gate_results = _of(events, "repo_gates"), _of(events, "repo_gate")
    if gates or gate_results:
        out["repo_gates"] = [_free(e) for e in gates]
        out["repo_gate_results"] = [_free(e) for e in gate_results]
    no_change = [
        n["node_id"]
        for n in nodes
        if n["kind"] == "implement"
        and states[n["node_id"]].final_state == "VALIDATED"
        and states[n["node_id"]].no_change_after_ownership()
    ]
    if no_change:
        out["no_change_nodes"] = no_change
    if any(a["outcome"] == "success" and a.get("route_identity") == "mismatch" for a in attempts):
        out["route_identity_warning"] = ROUTE_IDENTITY_WARNING
    if "openspec" in graph:
        block = graph["openspec"]
        conformance = _of(events, "openspec_conformance")
        result = conformance[-1].data.get("result") if conformance else None
        out["openspec"] = (
            {**block, "conformance_result": result} if isinstance(block, Mapping) else block
        )
    return out


# ------------------------------------------------------------------ § 7: verification


STRICT_BYTES_PROBLEM = (
    "receipt.json bytes differ from the canonical serialisation of the rebuilt receipt"
)


@dataclass(frozen=True, slots=True)
class Difference:
    """One leaf where the stored receipt and the rebuilt one differ.

    ``path`` is a short JSON path from the receipt's top (``nodes[0].attempts[1].outcome``);
    a side that has no value there (a key or list item missing) is ``ABSENT``.
    """

    path: str
    stored: Any
    rebuilt: Any

    def as_json(self) -> dict[str, Any]:
        """Both values as JSON; a side with nothing at ``path`` is left out (not ``null``,
        which would read as a stored null)."""
        out: dict[str, Any] = {"path": self.path}
        for side in ("stored", "rebuilt"):
            value = getattr(self, side)
            if value is not ABSENT:
                out[side] = value
        return out


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()


@dataclass(frozen=True, slots=True)
class Verification:
    """§ 7's problem strings, plus where each field mismatch lies and the rebuilt receipt
    (``None`` when verification stopped before rebuilding, or the rebuild failed)."""

    problems: list[str]
    differences: list[Difference]
    rebuilt: dict[str, Any] | None = None


def verify_run_files(files: RunFiles, strict: bool = False) -> list[str]:
    """§ 7: the problems with a run directory's receipt, in the order found."""
    return check_run_files(files, strict).problems


def check_run_files(files: RunFiles, strict: bool = False) -> Verification:
    """§ 7, with the differing leaves of every mismatching field.

    ``strict`` adds § 7's optional byte check: ``receipt.json`` must be exactly the
    rebuilt receipt as verdict-core writes it (§ 4), reported last.
    """

    def stop(*problems: str) -> Verification:
        return Verification(list(problems), [])

    if files.receipt_error is not None:
        return stop(f"cannot read receipt.json: {files.receipt_error}")
    if files.receipt is None:
        return stop("missing receipt.json")
    try:
        stored = json.loads(files.receipt)
    except Exception as exc:
        return stop(f"cannot read receipt.json: {exc}")
    if not isinstance(stored, dict):
        return stop("receipt.json must contain a JSON object")
    problems: list[str] = []
    if stored.get("schema") != RECEIPT_SCHEMA:
        problems.append(f"unexpected schema {stored.get('schema')!r}")
    if files.events is None:
        return stop(*problems, "missing events.jsonl")
    if stored.get("events_digest") != events_digest(files.events):
        problems.append("events_digest mismatch: events.jsonl changed after receipt was written")
    try:
        rebuilt = rebuild_from_files(files)
    except RebuildError as exc:
        return stop(*problems, f"cannot rebuild receipt: {exc}")
    problems.extend(compare_receipts(stored, rebuilt))
    if strict and files.receipt != receipt_bytes(rebuilt):
        problems.append(STRICT_BYTES_PROBLEM)
    return Verification(problems, receipt_differences(stored, rebuilt), rebuilt)


def rebuild_from_files(files: RunFiles) -> dict[str, Any]:
    if files.events is None:
        raise RebuildError("missing events.jsonl")
    events = parse_events(files.events, files.events_label)
    if files.graph_error is not None:
        raise RebuildError(files.graph_error)
    if files.graph is None:
        raise RebuildError("cannot read graph.json: file not found")
    graph = _load(files.graph, "graph.json")
    if files.review_error is not None:
        raise RebuildError(files.review_error)
    review_json = _load(files.review, "review.json") if files.review is not None else None
    return rebuild_receipt(events, files.events, graph, review_json, files.name)


def _load(raw: bytes, name: str) -> Any:
    try:
        return json.loads(raw)
    except Exception as exc:
        raise RebuildError(f"cannot read {name}: {exc}") from None


def compare_receipts(stored: Mapping[str, Any], rebuilt: Mapping[str, Any]) -> list[str]:
    """§ 7 step 7: top-level keys only, Python structural equality, missing reads as null."""
    return [
        f"{key} mismatch: stored receipt differs from recomputed evidence"
        for key in _compared_keys(stored, rebuilt)
    ]


def _compared_keys(stored: Mapping[str, Any], rebuilt: Mapping[str, Any]) -> list[str]:
    return [
        key
        for key in sorted(set(stored) | set(rebuilt))
        if key != "events_digest" and stored.get(key) != rebuilt.get(key)
    ]


def receipt_differences(stored: Mapping[str, Any], rebuilt: Mapping[str, Any]) -> list[Difference]:
    """The differing leaves under each mismatching top-level field (§ 7 step 7).

    Same equality as § 7 (Python's, so ``1 == 1.0`` is no difference); a top-level key
    missing on one side reads as null there, as § 7 says, while a nested one is absent.
    """
    return [
        d
        for key in _compared_keys(stored, rebuilt)
        for d in _leaf_differences(_key_path("", key), stored.get(key), rebuilt.get(key))
    ]


def _leaf_differences(path: str, a: Any, b: Any) -> list[Difference]:
    if a == b:
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d
            for k in sorted(set(a) | set(b), key=str)
            for d in _leaf_differences(_key_path(path, k), a.get(k, ABSENT), b.get(k, ABSENT))
        ]
    if isinstance(a, list) and isinstance(b, list):
        # pairwise by index: a changed item is named at its own index, an extra one absent
        return [
            d
            for i in range(max(len(a), len(b)))
            for d in _leaf_differences(
                f"{path}[{i}]",
                a[i] if i < len(a) else ABSENT,
                b[i] if i < len(b) else ABSENT,
            )
        ]
    return [Difference(path, a, b)]


def _key_path(path: str, key: Any) -> str:
    text = str(key)
    if text.isidentifier():
        return f"{path}.{text}" if path else text
    return f"{path}[{json.dumps(text)}]"


def receipt_bytes(receipt: Mapping[str, Any]) -> bytes:
    """§ 4: how verdict-core writes ``receipt.json`` (for the stricter byte check)."""
    return (json.dumps(receipt, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode()
