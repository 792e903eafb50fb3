"""A batch on its way into the log: validation, canonical payloads, idempotency, rows.

Pure (no store, no I/O): both stores append through these, so they share every append rule
(docs/readme/store.md § Guarantees 3 and 4) and differ only in where rows live. A batch is checked
column-wise first (:func:`prepare_batch`); a batch that fails any check is prepared again
event by event (:func:`prepare_event`), which words the error and names its index, so the
two paths cannot disagree on what they accept.
"""

from __future__ import annotations

import hashlib
import math
import operator
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ledger.errors import EventIdConflict, InvalidEvent, StreamVersionConflict
from ledger.log import fast
from schemas.canonical import canonical_json, parse_json
from schemas.envelope import NewEvent
from schemas.events import EXT_PREFIX, PAYLOAD_MODELS, PayloadError, validate_payload
from schemas.payload_check import payload_checker

EXPECTED_WORDS = ("any", "no_stream", "exists")
_EXPECTED_SET = frozenset(EXPECTED_WORDS)


@dataclass(frozen=True, slots=True)
class Duplicate:
    """An event of the batch that was already stored (same ``event_id``, same content)."""

    index: int
    event_id: str
    seq: int


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What one ``append`` did. ``first_seq``/``last_seq`` are ``None`` when nothing was new.

    ``seqs[i]`` is the position of the batch's event ``i``: new, or the original one for a
    duplicate. A tuple; only the result of one part of ``Store.append_parts``, never
    returned, holds a ``range`` when every event of the part was new (an ingest's parts
    held one int per event until its commit: 1 KB a trial).
    """

    first_seq: int | None
    last_seq: int | None
    appended: int
    duplicates: tuple[Duplicate, ...]
    seqs: Sequence[int]


@dataclass(frozen=True, slots=True)
class Prepared:
    """One validated event: canonical payload bytes and its (given or derived) id."""

    stream: str
    type: str
    schema_version: int
    event_id: str
    payload: bytes
    expected: int | str


def derive_event_id(stream: str, type: str, schema_version: int, payload: bytes) -> str:
    """Content-derived idempotency key: sha256 hex of the canonical content tuple."""
    head = canonical_json([stream, type, schema_version])
    return hashlib.sha256(head + b"\n" + payload).hexdigest()


def prepare_event(index: int, ev: NewEvent) -> Prepared:
    """Validate one offered event and canonicalise its payload, or raise InvalidEvent."""
    if not isinstance(ev, NewEvent):
        raise InvalidEvent(index, f"expected a NewEvent, got {type(ev).__name__}")
    if not isinstance(ev.stream, str) or not ev.stream:
        raise InvalidEvent(index, "stream must be a non-empty string (e.g. 'run/<run_id>')")
    if not isinstance(ev.type, str) or not ev.type:
        raise InvalidEvent(index, "type must be a non-empty string")
    if not isinstance(ev.schema_version, int) or not 0 <= ev.schema_version < 2**16:
        raise InvalidEvent(
            index, f"schema_version must be an int in [0, 65535], got {ev.schema_version!r}"
        )
    _check_expected_form(index, ev.expected_version)
    try:
        validate_payload(ev.type, ev.payload)
        payload = bytes(memoryview(canonical_json(ev.payload)))  # exact size, see prepare_batch
    except PayloadError as exc:
        raise InvalidEvent(index, str(exc)) from None
    except TypeError as exc:  # orjson: a value JSON cannot carry
        raise InvalidEvent(index, f"payload is not JSON-serialisable: {exc}") from None
    if b"null" in payload:  # orjson writes NaN/Infinity as null: refuse, never rewrite
        where = _non_finite_path(ev.payload, "payload")
        if where is not None:
            raise InvalidEvent(
                index,
                f"{where} is NaN or Infinity, which JSON cannot carry; store it as a string or null",
            )
    event_id = ev.event_id
    if event_id is None:
        event_id = derive_event_id(ev.stream, ev.type, ev.schema_version, payload)
    elif not isinstance(event_id, str) or not event_id:
        raise InvalidEvent(index, f"event_id must be a non-empty string or None, got {event_id!r}")
    return Prepared(ev.stream, ev.type, ev.schema_version, event_id, payload, ev.expected_version)


@dataclass(slots=True)
class Batch:
    """A prepared batch as columns (the hot path works on lists, not per-event objects);
    the canonical payloads as one binary column, which is what the insert and the leaf
    hasher read (:mod:`ledger.log.rows`)."""

    streams: list[str]
    types: list[str]
    schema_versions: list[int]
    event_ids: list[str]
    payloads: fast.Binary
    expected: list[int | str]

    def __len__(self) -> int:
        return len(self.streams)

    def rows(self) -> list[Prepared]:
        columns = (self.streams, self.types, self.schema_versions, self.event_ids)
        return list(map(Prepared, *columns, self.payloads.to_list(), self.expected))

    @staticmethod
    def of(rows: list[Prepared]) -> Batch:
        return Batch(
            [p.stream for p in rows],
            [p.type for p in rows],
            [p.schema_version for p in rows],
            [p.event_id for p in rows],
            fast.Binary.of([p.payload for p in rows]),
            [p.expected for p in rows],
        )


def prepare_batch(events: Iterable[NewEvent]) -> Batch:
    """:func:`prepare_event` over a batch, column-wise; same results and the same errors.

    Checks run as whole-column comprehensions; if any fails, the batch is re-prepared
    event by event so the error names the first bad index exactly as prepare_event does.
    """
    evs = list(events)
    if set(map(type, evs)) - {NewEvent}:
        return Batch.of([prepare_event(i, e) for i, e in enumerate(evs)])
    cols = [list(map(get, evs)) for get in _COLUMNS]
    done = _prepare_columns(*cols)
    return done if done is not None else Batch.of([prepare_event(i, e) for i, e in enumerate(evs)])


def prepare_decoded(
    streams: list[str],
    types: list[str],
    schema_versions: list[int],
    event_ids: list[str | None],
    payloads: list[Any],
    expected: list[int | str],
) -> Batch:
    """:func:`prepare_batch` of the events these columns hold, every payload decoded from
    JSON text by ``schemas.canonical.parse_json`` (orjson), which refuses NaN and
    Infinity: no float in them can be non-finite, so the walk looking for one (most of
    preparing such payloads, measured) is skipped, and no event object is built."""
    cols = [streams, types, schema_versions, event_ids, payloads, expected]
    done = _prepare_columns(*cols, decoded=True)
    if done is not None:
        return done
    return prepare_batch(NewEvent(s, t, p, i, v, e) for s, t, v, i, p, e in zip(*cols, strict=True))


def _prepare_columns(
    streams: list[Any],
    types: list[Any],
    svs: list[Any],
    ids: list[Any],
    objs: list[Any],
    expected: list[Any],
    *,
    decoded: bool = False,
) -> Batch | None:
    """The batch, or None when an event is refused (:func:`prepare_event` names it)."""
    if not (_envelopes_ok(streams, types, svs, expected) and _payloads_valid(types, objs)):
        return None
    encoded = fast.encode_payloads(objs)
    if encoded is None:  # a value JSON cannot carry
        return None
    payloads, with_null = encoded
    # orjson writes NaN/Infinity as null: look for them where one may hide
    if not decoded and any(_has_non_finite(objs[i]) for i in with_null):
        return None
    if set(map(type, ids)) != {str} or not all(ids):
        ids = list(ids)
        raw = payloads.to_list() if None in ids else []  # one conversion, not one per id
        for i, x in enumerate(ids):
            if x is None:
                ids[i] = derive_event_id(streams[i], types[i], svs[i], raw[i])
            elif type(x) is not str or not x:
                return None
    return Batch(streams, types, svs, ids, payloads, expected)


def as_batch(events: Iterable[NewEvent] | Batch) -> Batch:
    """What an append takes: offered events prepared here, or a :class:`Batch` that
    :func:`prepare_batch` (or :func:`checked_batch`) already made."""
    return events if isinstance(events, Batch) else prepare_batch(events)


def checked_batch(
    streams: Sequence[str],
    types: Sequence[str],
    schema_versions: Sequence[int],
    event_ids: Sequence[str],
    payloads: Sequence[bytes],
    expected: Sequence[int | str],
) -> Batch:
    """A :class:`Batch` of events whose payloads :func:`prepare_batch` already validated
    and canonicalised elsewhere (ingest's reading workers, where the events are made), so
    the writer does not decode, check and re-encode each payload again. Checked here only
    where that is cheap — the envelope columns, whole-column in C, and the payloads being
    bytes; if any of that fails the events are prepared from scratch by
    :func:`prepare_batch`, which words the error exactly as an append of them does."""
    if (
        _envelopes_ok(streams, types, schema_versions, expected)
        and set(map(type, event_ids)) == {str}
        and all(event_ids)
        and set(map(type, payloads)) == {bytes}
    ):
        return Batch(
            list(streams), list(types), list(schema_versions), list(event_ids),
            fast.Binary.of(payloads), list(expected),
        )  # fmt: skip
    return prepare_batch(
        NewEvent(s, t, parse_json(p) if isinstance(p, bytes) else p, i, v, e)
        for s, t, v, i, p, e in zip(
            streams, types, schema_versions, event_ids, payloads, expected, strict=True
        )
    )


def prepare_part(events: Iterable[NewEvent] | Batch, offset: int) -> Batch:
    """One part of ``Ledger.append_parts`` prepared (a :class:`Batch` is taken as it is,
    as :func:`as_batch` takes it); a refused event is named by its index in the whole
    batch, as ``Ledger.append`` names it."""
    if isinstance(events, Batch):
        return events
    try:
        return prepare_batch(events)
    except InvalidEvent as exc:
        raise InvalidEvent(exc.index + offset, exc.detail) from None


def joined_result(results: list[tuple[int, AppendResult]]) -> AppendResult:
    """The parts' results (each with its first index in the batch) as the batch's one."""
    new = [r for _, r in results if r.appended]
    return AppendResult(
        new[0].first_seq if new else None,
        new[-1].last_seq if new else None,
        sum(r.appended for r in new),
        tuple(
            Duplicate(off + d.index, d.event_id, d.seq) for off, r in results for d in r.duplicates
        ),
        tuple(s for _, r in results for s in r.seqs),
    )


_STREAM = operator.attrgetter("stream")
_TYPE = operator.attrgetter("type")
_SCHEMA_VERSION = operator.attrgetter("schema_version")
_EXPECTED = operator.attrgetter("expected_version")
_PAYLOAD = operator.attrgetter("payload")
_EVENT_ID = operator.attrgetter("event_id")
# a NewEvent's fields in the order _prepare_columns takes them
_COLUMNS = (_STREAM, _TYPE, _SCHEMA_VERSION, _EVENT_ID, _PAYLOAD, _EXPECTED)


def _envelopes_ok(
    streams: list[Any], types: list[Any], svs: list[Any], expected: list[Any]
) -> bool:
    """Every event's stream, type, schema_version and expected_version well formed, checked
    as whole columns in C (map, set, min/max), not a Python frame per event."""
    return (
        set(map(type, streams)) == {str}
        and all(streams)
        and set(map(type, types)) == {str}
        and all(types)
        and set(map(type, svs)) == {int}
        and min(svs) >= 0
        and max(svs) < 65536
        and _expected_forms_ok(expected)
    )


def _expected_forms_ok(expected: list[Any]) -> bool:
    """:func:`expected_form_ok` of every value; the common all-words batch in one set test."""
    try:
        if set(expected) <= _EXPECTED_SET:
            return True
    except TypeError:  # an unhashable value: certainly not a version
        return False
    return all(map(expected_form_ok, expected))


def _has_non_finite(value: Any) -> bool:
    """Whether a NaN/Infinity float hides in ``value``: :func:`_non_finite_path`'s answer
    without a call and a path string per node (most payloads hold a JSON null and so are
    scanned: that walk was 6 % of an ingest, measured). Exact types by identity first."""
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        kind = type(v)
        if kind is dict:
            children: Any = v.values()
        elif kind is list or kind is tuple:
            children = v
        elif kind in _LEAVES:
            continue
        elif isinstance(v, float):
            if not math.isfinite(v):
                return True
            continue
        elif isinstance(v, dict):
            children = v.values()
        elif isinstance(v, list | tuple):
            children = v
        else:
            continue
        for x in children:
            if type(x) in _LEAVES:
                continue
            if type(x) is float:
                if not math.isfinite(x):
                    return True
                continue
            push(x)
    return False


_LEAVES = frozenset({str, int, bool, type(None)})


def _non_finite_path(value: Any, path: str) -> str | None:
    """Path of the first NaN/Infinity float inside ``value`` (JSON has no such numbers)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, dict):
        for k, v in value.items():
            found = _non_finite_path(v, f"{path}.{k}")
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = _non_finite_path(v, f"{path}[{i}]")
            if found:
                return found
    return None


def _payloads_valid(types: list[str], payloads: list[Any]) -> bool:
    """True when every payload passes ``validate_payload`` (grouped by type, no raising)."""
    if set(map(type, payloads)) != {dict}:
        return False
    # one bound validator per distinct type, looked up once per batch (None: ext.* is any object)
    validators = {}
    for t in set(types):
        if t.startswith(EXT_PREFIX) and len(t) > len(EXT_PREFIX):
            validators[t] = None
        elif t in PAYLOAD_MODELS:
            validators[t] = payload_checker(PAYLOAD_MODELS[t])
        else:
            return False
    try:
        if len(validators) == 1:
            only = next(iter(validators.values()))
            if only is not None:  # map drained by a zero-length deque: the loop runs in C
                deque(map(only, payloads), maxlen=0)
        else:
            for t, p in zip(types, payloads, strict=True):
                v = validators[t]
                if v is not None:
                    v(p)
    except ValidationError:
        return False
    return True


def expected_form_ok(expected: Any) -> bool:
    """An expected_version is one of :data:`EXPECTED_WORDS` or an int >= 0 (not a bool)."""
    if isinstance(expected, str):
        return expected in _EXPECTED_SET
    return isinstance(expected, int) and not isinstance(expected, bool) and expected >= 0


def _check_expected_form(index: int, expected: Any) -> None:
    if expected_form_ok(expected):
        return
    raise InvalidEvent(
        index,
        f"expected_version {expected!r} is not one of 'any', 'no_stream', 'exists' "
        "or an int >= 0 (the version of the stream's last event)",
    )


def check_expected(stream: str, expected: int | str, actual: int | None) -> None:
    """Raise StreamVersionConflict unless ``actual`` satisfies ``expected``."""
    if expected == "any":
        return
    if expected == "no_stream":
        ok = actual is None
    elif expected == "exists":
        ok = actual is not None
    else:
        ok = actual == expected
    if not ok:
        raise StreamVersionConflict(stream, expected, actual)


def content_differences(a: Prepared, stored: tuple[str, str, int, bytes]) -> list[str]:
    """Names of the content fields that differ between an offered and a stored event."""
    stream, type_, schema_version, payload = stored
    out = []
    if a.stream != stream:
        out.append(f"stream ({a.stream!r} vs stored {stream!r})")
    if a.type != type_:
        out.append(f"type ({a.type!r} vs stored {type_!r})")
    if a.schema_version != schema_version:
        out.append(f"schema_version ({a.schema_version} vs stored {schema_version})")
    if a.payload != payload:
        out.append("payload")
    return out


def dedupe(
    batch: list[Prepared], stored: dict[str, tuple[int, tuple[str, str, int, bytes]]], size: int
) -> tuple[list[Prepared], list[int], list[Duplicate]]:
    """Split a batch into new events and duplicates; raise EventIdConflict on a clash.

    ``stored`` maps each already stored id of the batch to ``(seq, (stream, type,
    schema_version, payload))``; new events take seqs from ``size`` on.
    """
    seqs: list[int] = []
    dups: list[Duplicate] = []
    new: list[Prepared] = []
    seen: dict[str, tuple[int | None, tuple[str, str, int, bytes], int]] = {
        k: (seq, content, seq) for k, (seq, content) in stored.items()
    }  # event_id -> (stored seq or None, content, seq it resolves to)
    for i, p in enumerate(batch):
        if p.event_id in seen:
            at, content, seq = seen[p.event_id]
            differs = content_differences(p, content)
            if differs:
                raise EventIdConflict(p.event_id, at, differs)
            dups.append(Duplicate(i, p.event_id, seq))
            seqs.append(seq)
        else:
            seq = size + len(new)
            seen[p.event_id] = (None, (p.stream, p.type, p.schema_version, p.payload), seq)
            seqs.append(seq)
            new.append(p)
    return new, seqs, dups
