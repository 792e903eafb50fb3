"""What a view is, and the SQL pieces views are built from (over ``_ev``: rows + ``body``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ledger.analytics.payload_paths import PATHS
from schemas.events import PROJECTION_WRITERS


@dataclass(frozen=True)
class View:
    """One documented view: its name, its SQL, what a row is, and each column's meaning."""

    name: str
    sql: str
    doc: str
    columns: tuple[tuple[str, str], ...]
    public: bool = True


def internal(name: str, sql: str) -> View:
    """A view the public ones are built on; ``vledger sql --schema`` does not list it."""
    return View(name, sql, "internal", (), public=False)


def sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def in_list(values: Sequence[str]) -> str:
    return "(" + ", ".join(sql_str(v) for v in values) + ")"


def json_transform(src: str, shape: object) -> str:
    """A typed read of nested payload lists (one parse, no JSON re-serialised)."""
    return f"json_transform({src}, {sql_str(json.dumps(shape))})"


def fields(
    path_key: str, *, as_json: bool = False, src: str = "body"
) -> tuple[str, dict[str, str]]:
    """One extraction for every field of ``PATHS[path_key]`` (one JSON parse per row): the
    select item (``json_extract_string(body, [...]) AS _v``) and, per field, the expression
    choosing its first non-null candidate."""
    by_field = PATHS[path_key]
    flat = [p for paths in by_field.values() for p in paths]
    arr = "[" + ", ".join(sql_str(p) for p in flat) + "]"
    var, fn = ("_j", "json_extract") if as_json else ("_v", "json_extract_string")
    exprs, i = {}, 1
    for name, paths in by_field.items():
        picks = ", ".join(f"{var}[{i + j}]" for j in range(len(paths)))
        exprs[name] = f"coalesce({picks}, NULL)" + ("::JSON" if as_json else "")
        i += len(paths)
    return f"{fn}({src}, {arr}) AS {var}", exprs


def written_by_projection() -> str:
    """SQL predicate over ``_ev`` rows: false for a projection-only type
    (``PROJECTION_WRITERS``) that is not on its projection's own stream, and for a
    ``grade.replayed`` whose stream holds no ``replay.completed`` (retrace appends both in
    one batch). The views that count projection outputs read only rows it keeps."""
    return f"{on_own_stream()} AND {in_replay_batch()}"


def on_own_stream() -> str:
    """The part of :func:`written_by_projection` a row decides alone (materialisable)."""
    reserved = ", ".join(sql_str(t) for t in PROJECTION_WRITERS)
    own = " OR ".join(
        f"(type = {sql_str(t)} AND starts_with(stream, {sql_str(prefix)}))"
        for t, (_, prefix) in PROJECTION_WRITERS.items()
    )
    return f"(type NOT IN ({reserved}) OR {own})"


def in_replay_batch() -> str:
    """The part of :func:`written_by_projection` a later event can change: a
    ``replay.completed`` appended later admits the earlier ``grade.replayed`` of its stream."""
    return (
        "(type <> 'grade.replayed' OR stream IN "
        "(SELECT stream FROM _ev WHERE type = 'replay.completed'))"
    )


def recorded_grade_of(value: str) -> str:
    """Which recorded grade of a trial counts, in SQL: its latest ``grade.recorded`` by seq
    (a later one re-grades and supersedes), as ``replay.grading.recorded_grade.recorded_grade_of``.
    An aggregate over rows carrying ``type`` and ``seq`` (``_ev``, ``_grade_head``), grouped
    by trial: ``value`` of that grade, NULL when the trial records none. Its one SQL
    declaration; ``tests/test_recorded_grade_sql.py`` fails on a second."""
    return f"arg_max({value}, seq) FILTER (WHERE type = 'grade.recorded')"


def typed_view(type_: str, out: Sequence[str], *, where: str = "", extra_json: bool = False) -> str:
    """A view over one event type: the string fields (and JSON fields) extracted in one pass."""
    sv, scols = fields(type_)
    inner_cols = ["seq", "stream", "stream_version", "recorded_at", sv]
    outer = [f"{e} AS {n}" for n, e in scols.items()]
    if extra_json:
        jv, jcols = fields(type_ + "/json", as_json=True)
        inner_cols.append(jv)
        outer += [f"{e} AS {n}" for n, e in jcols.items()]
    cond = f"type = {sql_str(type_)}" + (f" AND ({where})" if where else "")
    return (
        f"SELECT {', '.join(out)} FROM (SELECT seq, stream, stream_version, recorded_at, "
        f"{', '.join(outer)} FROM (SELECT {', '.join(inner_cols)} FROM _ev WHERE {cond}))"
    )
