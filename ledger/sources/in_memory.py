"""A bundle's events without a ledger: what ingest *would* append, folded as it would store it.

``vledger grade BUNDLE`` and ``vledger reconcile --dry-run`` read a bundle through the
project's one importer (bounded YAML, shape checks, the bundle → events mapping) and hand
the result to ``replay.timeline.trial_inputs`` — so a bundle read from disk and the same bundle read
back from the ledger are one reading, never two parsers that can drift apart.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from pathlib import Path

from ledger.sources.corpus import Corpus, read_corpus
from ledger.sources.plan import PlannedEvent
from ledger.sources.tolokaforge import BundlePlan, bundle_context, bundle_events, read_bundle
from schemas.canonical import canonical_json
from schemas.envelope import NewEvent, StoredEvent

_EPOCH = _dt.datetime.fromtimestamp(0, _dt.UTC)


def plan_bundle(
    directory: Path, label: str, corpus: str, manifests: dict[Path, Corpus] | None = None
) -> BundlePlan:
    """The events ``directory`` becomes under corpus name ``corpus`` (raises on a bad shape).

    The context is the one ``ledger.app.ingest`` gives the same bundle — its corpus.yaml row
    included — so the planned event ids are the ids the ledger holds once it is ingested.
    ``manifests`` caches parsed corpus.yaml files across calls.
    """
    manifests = {} if manifests is None else manifests
    raw = read_bundle(directory, label)
    resolved = directory.resolve()
    manifest = None
    if (resolved.parent / "corpus.yaml").is_file():
        if resolved.parent not in manifests:
            manifests[resolved.parent] = read_corpus(resolved.parent, label.rsplit("/", 1)[0])
        manifest = manifests[resolved.parent]
    return bundle_events(raw, bundle_context(directory, corpus, manifest))


def as_stored(events: Sequence[NewEvent | PlannedEvent]) -> list[StoredEvent]:
    """A planned stream as the ledger would hand it back (positions only; nothing written)."""
    return [
        StoredEvent(
            i,
            e.stream,
            i,
            e.event_id or "",
            e.type,
            getattr(e, "schema_version", 1),
            _EPOCH,
            e.body if isinstance(e, PlannedEvent) else canonical_json(e.payload),
            b"",
        )
        for i, e in enumerate(events)
    ]
