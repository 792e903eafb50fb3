"""The verify check for stored timelines: recompute each from its trial's raw events.

Every stored ``timeline.event`` run (ingest's projection) must equal what
``replay.timeline.build`` rebuilds through ``replay.timeline.trial_inputs``, at the running projection
version and with the same recorded view inconsistency; ``vledger verify --deep`` runs it
(:data:`ledger.app.verify.CHECKS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ledger.log.verify_report import Problem
from replay.timeline.build import TIMELINE_VERSION, build_trial_timeline, timeline_to_payloads
from replay.timeline.trial_inputs import TrialInputsError, trial_inputs
from schemas.envelope import StoredEvent
from schemas.timeline import TimelineInconsistencyError

if TYPE_CHECKING:
    from ledger.log.store import Ledger

TRIAL_TYPES = ("trial.registered", "trial.message", "trial.agent_message", "trial.tool_call",
               "trial.ended", "timeline.event")  # fmt: skip


def check_timelines(lg: Ledger) -> list[Problem]:
    """Problems for every trial stream whose stored timeline is not its recomputation."""
    streams: dict[str, list[StoredEvent]] = {}
    for ev in lg.read(types=list(TRIAL_TYPES), stream_prefix="trial/"):
        streams.setdefault(ev.stream, []).append(ev)
    problems: list[Problem] = []
    for stream, evs in streams.items():
        stored = [e for e in evs if e.type == "timeline.event"]
        if stored:
            problems.extend(check_stream(stream, evs, stored))
    return problems


def check_stream(
    stream: str, evs: Iterable[StoredEvent], stored: list[StoredEvent]
) -> list[Problem]:
    payloads = [e.data() for e in stored]
    first = f"seq {stored[0].seq}"
    versions = {p.get("timeline_version") for p in payloads}
    if versions != {TIMELINE_VERSION}:
        return [Problem(first, f"{stream}: timeline stored as {sorted(map(str, versions))}, the "
                f"running projection is {TIMELINE_VERSION!r}; re-derive it (ingest under a new "
                "--corpus)")]  # fmt: skip
    try:
        ti = trial_inputs(list(evs))
    except TrialInputsError as exc:
        return [Problem(first, f"{stream}: cannot read the trial back: {exc}")]
    try:
        rebuilt = timeline_to_payloads(
            build_trial_timeline(ti.timeline_messages, ti.recorded_calls, ti.termination_reason)
        )
    except TimelineInconsistencyError as exc:
        recorded = ti.timeline_inconsistency
        if recorded is not None and recorded.get("message") == str(exc):
            return []
        return [Problem(first, f"{stream}: the raw events' views disagree ({exc}) but the "
                "stored timeline does not record that disagreement")]  # fmt: skip
    if ti.timeline_inconsistency is not None:
        return [Problem(first, f"{stream}: the stored timeline records a view disagreement "
                f"({ti.timeline_inconsistency.get('message')}) that recomputation does not "
                "raise")]  # fmt: skip
    return _compare(stream, stored, payloads, rebuilt)


def _compare(
    stream: str, stored: list[StoredEvent], payloads: list[Any], rebuilt: list[dict]
) -> list[Problem]:
    for i, (got, want) in enumerate(zip(payloads, rebuilt, strict=False)):
        if got != want:
            fields = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            return [Problem(f"seq {stored[i].seq}", f"{stream}: timeline.event position {i} "
                    "differs from the timeline recomputed from the raw events in "
                    f"{', '.join(fields)}")]  # fmt: skip
    if len(payloads) != len(rebuilt):
        return [Problem(f"seq {stored[-1].seq}", f"{stream}: {len(payloads)} timeline.event(s) "
                f"stored, {len(rebuilt)} recomputed from the raw events")]  # fmt: skip
    return []
