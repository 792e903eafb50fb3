"""A declared comparison view: the part of a state the hash compares.

Not in GRADING.md; the semantics are read off the state_checks_comparison_view parity
pack (and its comments): tables a view excludes vanish, records matching an
``exclude_records`` ``where`` vanish, and ``normalize_ids`` keys a table's records by the
declared key fields instead of their id — rewriting every declared reference to them —
so a record re-filed under a new id compares equal to the one it replaces. The view is
applied to both sides of the comparison, so it can never make two states differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schemas.grading import ComparisonRule, ComparisonView


def apply_view(db: Any, view: ComparisonView, id_fields: Mapping[str, str | list[str]]) -> Any:
    if not isinstance(db, Mapping):
        return db
    out: dict[str, Any] = {k: (list(v) if isinstance(v, list) else v) for k, v in db.items()}
    for rule in view.rules:
        _apply(out, rule, id_fields)
    return out


def _apply(
    db: dict[str, Any], rule: ComparisonRule, id_fields: Mapping[str, str | list[str]]
) -> None:
    if rule.kind == "exclude_tables":
        for table in rule.tables or ():
            db.pop(table, None)
    elif rule.kind == "exclude_records":
        rows = db.get(rule.table or "")
        if isinstance(rows, list):
            where = rule.where or {}
            db[rule.table or ""] = [
                r
                for r in rows
                if not (isinstance(r, Mapping) and all(r.get(k) == v for k, v in where.items()))
            ]
    else:
        _normalize_ids(db, rule, id_fields)


def _normalize_ids(
    db: dict[str, Any], rule: ComparisonRule, id_fields: Mapping[str, str | list[str]]
) -> None:
    table = rule.table or ""
    declared = id_fields.get(table, "id")
    id_field = declared if isinstance(declared, str) else declared[0]
    rows = db.get(table)
    if not isinstance(rows, list):
        return
    renamed: dict[Any, list[Any]] = {}
    new_rows = []
    for r in rows:
        if not isinstance(r, Mapping):
            new_rows.append(r)
            continue
        key = [r.get(k) for k in rule.key or ()]
        renamed[r.get(id_field)] = key
        new_rows.append({**r, id_field: key})
    db[table] = new_rows
    for ref in rule.references:
        ref_rows = db.get(ref.table)
        if isinstance(ref_rows, list):
            db[ref.table] = [
                {**r, ref.field: renamed.get(r.get(ref.field), r.get(ref.field))}
                if isinstance(r, Mapping) and ref.field in r
                else r
                for r in ref_rows
            ]
