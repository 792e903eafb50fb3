"""Constraints a trial's recorder cannot measure: they read a field it never recorded.

An importer such as ledger.sources.inspect_log fills fields the recorder never wrote with a
default (inspect records no executor, so every call says ``agent``) and lists them under
``trajectory_meta.unrecorded_fields``. A constraint reading one would measure that default,
so retrace reports it ``not_measured`` over such trials, naming the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from replay.trace_checks.addresses import iter_constraints, iter_matchers
from schemas.trace_checks import Constraint, TraceChecksConfig


def unrecorded_fields(registered: Mapping[str, Any]) -> frozenset[str]:
    """The fields a trial's ``trial.registered`` payload says were not recorded."""
    meta = registered.get("trajectory_meta")
    fields = meta.get("unrecorded_fields") if isinstance(meta, Mapping) else None
    return frozenset(f for f in fields or () if isinstance(f, str))


def fields_read(constraint: Constraint) -> Iterator[str]:
    """Every timeline field a constraint's matchers (require tree and binder) read."""
    matchers = [m for _, m in iter_matchers(constraint.require, "require")]
    if constraint.bind is not None:
        matchers.append(constraint.bind.match)
        yield from (v.field.partition(".")[0] for v in constraint.bind.values.values())
    for m in matchers:
        for label, _pred in m.predicates():
            yield label.partition(".")[0]


def unmeasured_constraints(
    block: TraceChecksConfig | None, unrecorded: frozenset[str]
) -> dict[str, tuple[str, ...]]:
    """Constraint id → the unrecorded fields it reads (only constraints that read any)."""
    if block is None or not unrecorded:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for _address, constraint in iter_constraints(block):
        hit = sorted(set(fields_read(constraint)) & unrecorded)
        if hit:
            out[constraint.id] = tuple(hit)
    return out


def not_measured_reason(fields: tuple[str, ...], recorder: str | None) -> str:
    who = recorder or "this trial's recorder"
    names = ", ".join(fields)
    return f"reads {names}, which {who} does not record"
