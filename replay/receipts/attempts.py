"""Each graph node's receipt record: its attempts, route identity and final state (verdict-core FORMAT.md
§ 4.1), folded from the run's events in log order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from replay.receipts.run import VEvent

MECHANICAL = "(mechanical merge)"


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


_PROBE_FIELDS = ("probe_class", "cache_checked_at", "cache_freshness")


def present_text(data: Mapping[str, Any], fields: Sequence[str]) -> dict[str, str]:
    """The ``fields`` of ``data`` *present* in § 4.1's sense, as strings: verdict-core
    leaves a null or empty value off the row rather than writing ``null``."""
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


class NodeState:
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
        if attempt not in self.rows:
            self.rows[attempt] = {
                "attempt": attempt,
                "route_id": "",
                "provider": "",
                "capacity_class": "unknown",
                "outcome": "running",
                "fault_injected": False,
            }
        return self.rows[attempt]

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
        self._attempt_event(ev, self._attempt_of(ev, self.current + 1))

    def _attempt_of(self, ev: VEvent, default: int) -> int:
        """The event's own positive ``attempt``, else ``default``; it becomes the current one."""
        a = ev.data.get("attempt")
        self.current = a if _positive_int(a) else default
        return self.current

    def terminal(self, ev: VEvent) -> None:
        row = self._attempt_event(ev, self._attempt_of(ev, self.current or 1))
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
        row = self._attempt_event(ev, self._attempt_of(ev, self.current or 1))
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
) -> tuple[list[dict[str, Any]], dict[str, NodeState]]:
    states = {n["node_id"]: NodeState(n) for n in nodes}
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
            st.barrier(ev, str(barrier_name(ev)))
    return [states[n["node_id"]].record() for n in nodes], states


def barrier_name(ev: VEvent) -> Any:
    """§ 4.2: a ``barrier`` event's name — its own, else its node's, else ``integration``."""
    return ev.data.get("name") or ev.node_id or "integration"
