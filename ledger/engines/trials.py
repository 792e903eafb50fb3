"""Grouping a log's events into trial streams (shared by every engine)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `import ledger.engines` stays light (no pyarrow)
    from schemas.envelope import StoredEvent


def group_trials(
    events: Iterable[StoredEvent],
    *,
    corpus: str | None = None,
    task: str | None = None,
    streams: frozenset[str] | None = None,
) -> dict[str, list[StoredEvent]]:
    """Trial streams and their events, filtered by the registered corpus and task (and,
    for ``--source``, by exactly the streams that source holds); a stream without
    ``trial.registered`` is not a trial and is dropped."""
    groups: dict[str, list[StoredEvent]] = defaultdict(list)
    for ev in events:
        if streams is None or ev.stream in streams:
            groups[ev.stream].append(ev)
    keep = {}
    for stream, evs in sorted(groups.items()):
        reg = next((e for e in evs if e.type == "trial.registered"), None)
        if reg is None:
            continue
        if corpus is not None or task is not None:
            # Parsed only to filter: a registration carries the task snapshot, and parsing
            # it here (the projection parses it again) was most of a segment task's time.
            data = reg.data()
            if corpus is not None and data.get("corpus") != corpus:
                continue
            if task is not None and data.get("task_id") != task:
                continue
        keep[stream] = evs
    return keep
