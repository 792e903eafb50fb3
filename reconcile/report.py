"""The reconcile report: the exit contract, the ``--json`` document and the human text
(FORMATS.md § 8 Console; the JSON document is a contract — extend, never rename).

One :class:`CorpusReport` per corpus read. The exit code is a function of the *blocking*
list alone: every unreadable trial, and every gating entry short of ``no_counter_evidence``.
The document's lists with an item per trial are sequence views (``schemas.views``), and
the text is a stream of lines: both are built as they are written or hashed, not held.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from reconcile.counterfactual import Counterfactual, CounterfactualRow
from reconcile.reconcile import EntryResult, format_kappa
from schemas.canonical import canonical_json
from schemas.errors import FAILED, OK
from schemas.views import Mapped

REFERENCE_LABELLER = "the judge's recorded criterion verdict (reference)"
CANDIDATE_LABELLER = "the recomputed trace-constraint verdict (candidate)"


@dataclass(frozen=True, slots=True)
class CorpusReport:
    source: str
    packs: tuple[str, ...]
    trials_read: int
    entries: tuple[EntryResult, ...]
    unreadable_trials: tuple[tuple[str, str], ...] = ()
    excluded_bundles: tuple[tuple[str, str], ...] = ()

    def blocking(self) -> list[str]:
        out = [f"{trial}: {reason}" for trial, reason in self.unreadable_trials]
        out += [f"{e.criterion} ({e.mode}): {e.verdict}" for e in self.entries if e.blocks]
        return out


def exit_code(reports: Sequence[CorpusReport]) -> int:
    """0 only when nothing blocks in any report."""
    return FAILED if any(r.blocking() for r in reports) else OK


# --- JSON ------------------------------------------------------------------------------------


# a row's scalar fields in declaration order, as ``asdict`` gives them (``asdict`` recurses
# into every value, a cost per trial the flat rows do not need)
_ROW_FIELDS = tuple(f.name for f in fields(CounterfactualRow))


def _counterfactual_json(cf: Counterfactual) -> dict[str, Any]:
    before, after = cf.pass_rate_before, cf.pass_rate_after
    return {
        "weights_declared": dict(cf.weights_declared) if cf.weights_declared is not None else None,
        "trials": _rows_view(cf.rows),
        "unrecomputed_trials": Mapped(cf.unrecomputed, asdict),
        "pass_rate_before": {"passed": before[0], "of": before[1]},
        "pass_rate_after": {"passed": after[0], "of": after[1]},
    }


def _rows_view(rows: Sequence[CounterfactualRow]) -> Mapped:
    """The rows as JSON, a view; over the fold's (trial, shared values) pairs, each row's
    canonical JSON is its values' encoding (once per distinct values) around its trial's
    name, so the outputs digest does not build a row per trial."""
    if not isinstance(rows, Mapped):
        return Mapped(rows, _row_json)
    memo: dict[int, tuple[tuple[Any, ...], bytes, bytes]] = {}
    token = secrets.token_hex(12)  # a name no trial has: where the trial's name goes

    def encode(pair: tuple[str, tuple[Any, ...]]) -> bytes:
        trial, values = pair
        hit = memo.get(id(values))
        if hit is None:
            around = canonical_json(_row_json(CounterfactualRow(token, *values)))
            before, after = around.split(b'"' + token.encode() + b'"')
            hit = memo[id(values)] = (values, before, after)  # (values held: ids stay theirs)
        return hit[1] + canonical_json(trial) + hit[2]

    return rows.then(_row_json, encode)


def _row_json(r: CounterfactualRow) -> dict[str, Any]:
    return {
        **{name: getattr(r, name) for name in _ROW_FIELDS},
        "weights_before": dict(r.weights_before),
        "weights_after": dict(r.weights_after),
        "vetoes_before": list(r.vetoes_before),
        "vetoes_after": list(r.vetoes_after),
    }


def entry_json(e: EntryResult, *, source: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "criterion": e.criterion,
        "task_ids": list(e.task_ids),
        "mode": e.mode,
        "verdict": e.verdict,
        "observations": e.observations,
        "table": e.table.as_dict(),
        "accuracy": e.accuracy,
        "kappa": e.kappa,
        "disagreements": Mapped(e.disagreements, asdict),
        "refusals": [asdict(r) for r in e.refusals],
        "counterfactual": _counterfactual_json(e.counterfactual),
        # extensions beyond the contract
        "by": list(e.by),
        "residual": {"kind": e.residual[0], "reason": e.residual[1]} if e.residual else None,
        "excluded_trials": Mapped(e.exclusions, asdict),
        "tolerated_directions": list(e.tolerated_directions),
        "gates_exit_code": e.gates,
        "declared_evidence": (
            {"observations": e.declared_evidence[0], "kappa": e.declared_evidence[1]}
            if e.declared_evidence
            else None
        ),
    }
    if source is not None:
        out["source"] = source
    return out


def run_json(reports: Sequence[CorpusReport], **extra: Any) -> dict[str, Any]:
    """``{"entries": […], "exit_code": int, …}`` over every report."""
    return {
        "entries": [entry_json(e, source=r.source) for r in reports for e in r.entries],
        "exit_code": exit_code(reports),
        "reference_labeller": REFERENCE_LABELLER,
        "candidate_labeller": CANDIDATE_LABELLER,
        "sources": [
            {
                "source": r.source,
                "packs_searched": list(r.packs),
                "trials_read": r.trials_read,
                "unreadable_trials": [
                    {"trial": t, "reason": why} for t, why in r.unreadable_trials
                ],
                "excluded_bundles": [{"bundle": b, "reason": why} for b, why in r.excluded_bundles],
                "blocking": r.blocking(),
            }
            for r in reports
        ],
        **extra,
    }


# --- human text ------------------------------------------------------------------------------


_num = format_kappa  # every number the console prints: three decimals, or "undefined"


def _weights(weights: Mapping[str, float] | None) -> str:
    if weights is None:
        return "none declared"
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in sorted(weights.items())) + "}"


def render_text(report: CorpusReport, *, report_dir: str | None = None) -> str:
    """The console shape of FORMATS.md § 8, one report."""
    return "".join(f"{line}\n" for line in text_lines(report, report_dir=report_dir))


def text_lines(report: CorpusReport, *, report_dir: str | None = None) -> Iterator[str]:
    """:func:`render_text`'s lines, one at a time."""
    yield (
        f"Reconciled {report.trials_read} trials under {report.source} against "
        f"{', '.join(report.packs)}"
    )
    yield f"  reference: {REFERENCE_LABELLER}"
    yield f"  candidate: {CANDIDATE_LABELLER}"
    for e in report.entries:
        yield ""
        yield from _entry_lines(e)
    if report.unreadable_trials:
        yield ""
        yield from (f"unreadable · {t}: {why}" for t, why in report.unreadable_trials)
    for bundle, why in report.excluded_bundles:
        yield f"excluded bundle · {bundle}: {why}"
    if report_dir is not None:
        yield ""
        yield f"Reconcile report: {report_dir}"


def _entry_lines(e: EntryResult) -> Iterator[str]:
    t = e.table
    yield (
        f"{e.criterion} ({', '.join(e.task_ids)}) — declared {e.mode}, {e.verdict} over "
        f"{e.observations} observations"
    )
    if e.residual is not None:
        reason = " ".join(e.residual[1].split())
        yield f"  residual ({e.residual[0]}), as the author declared it: {reason}"
    yield "  judge \\ constraint      passed  failed"
    yield f"  met                    {t.met_passed:>6}  {t.met_failed:>6}"
    yield f"  not met                {t.not_met_passed:>6}  {t.not_met_failed:>6}"
    yield f"  accuracy {_num(e.accuracy)}, kappa {format_kappa(e.kappa)}"
    for d in e.disagreements:
        state = "acknowledged" if d.acknowledged_reason is not None else "unacknowledged"
        yield f"  {d.direction} · {d.trial} ({state})"
        yield f"    judge: {d.justification}"
        if d.acknowledged_reason is not None:
            yield f"    waived because: {d.acknowledged_reason}"
    cf = e.counterfactual
    yield f"  counterfactual under the map this entry declares ({_weights(cf.weights_declared)}):"
    for r in cf.rows:
        yield f"    {r.trial}"
        yield (
            f"      judge {_num(r.judge_component_before)} → {_num(r.judge_component_after)} · "
            f"trial {r.score_before:.3f}/{r.binary_pass_before} → "
            f"{r.score_after:.3f}/{r.binary_pass_after}"
        )
        yield (
            f"      weights {_weights(r.weights_before)} → {_weights(r.weights_after)} · "
            f"vetoes {list(r.vetoes_before)} → {list(r.vetoes_after)}"
        )
    for u in cf.unrecomputed:
        yield f"    not recomputed · {u.trial} ({u.gap}): {u.reason}"
    (p, n), (q, _) = cf.pass_rate_before, cf.pass_rate_after
    yield f"    pass rate {p}/{n} → {q}/{n} (evidence, not a gate — nothing here decides the verdict)"
    for x in e.exclusions:
        yield f"  no observation · {x.trial} ({x.exclusion}): {x.reason}"
    for r in e.refusals:
        yield f"  refused ({r.kind}): {r.detail}"
    if not e.gates:
        yield "  a candidate converts nothing, so its verdict gates nothing"
