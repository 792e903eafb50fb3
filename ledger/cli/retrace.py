"""``vledger retrace``: a thin shell over :func:`ledger.retrace`."""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

import ledger
from ledger.cli import main
from ledger.cli.options import (
    emit_json,
    json_option,
    ledger_option,
    progress_hooks,
    resolve_ledger,
)
from ledger.cli.output import error, fmt_number, plural, render_table, result, terminal_width


@main.command("retrace")
@click.option("--corpus", default=None, metavar="NAME", help="Only trials of this corpus.")
@click.option("--source", default=None, type=click.Path(exists=True, path_type=Path),
              help="Ingest PATH first (bundle, run dir, corpus…), then retrace what it holds.")
@click.option("--task", default=None, metavar="ID", help="Only trials of this task.")
@click.option("--constraints", "constraints_file", default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Replace every trial's trace_checks block with this one (a grading document "
                   "with trace_checks:, or a bare constraints:/alternatives: block).")
@click.option("--grading", "grading_file", default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Replace every trial's whole grading config with this grading.yaml.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where the projection runs: a local process pool, or one Ray task per "
                   "sealed segment (needs the [ray] extra; seals the tail first).")
@click.option("--address", default=None, metavar="auto|ray://HOST:PORT",
              help="Ray cluster to join (--engine ray); default: a local Ray with --workers CPUs.")
@click.option("--max-retries", type=click.IntRange(min=0), default=ledger.DEFAULT_MAX_RETRIES,
              show_default=True,
              help="Ray: retries of a crashed or failed segment task before the job fails.")
@click.option("--segment-rows", type=click.IntRange(min=1), default=None,
              help="Ray: target rows per segment when sealing the tail (a trial is never split).")
@click.option("--segment-bytes", type=click.IntRange(min=1), default=None,
              help="Ray: target uncompressed bytes per segment when sealing the tail.")
@click.option("--workers", type=click.IntRange(min=1), default=ledger.DEFAULT_WORKERS,
              show_default=True,
              help="Processes for the local engine (CPUs for a local Ray); results are "
                   "identical for any N.")
@click.option("--dry-run", is_flag=True, help="Compute and report, append nothing.")
@click.option("--full", is_flag=True,
              help="Re-derive every trial, even where an earlier replay with the same inputs "
                   "could be extended (only trials new or changed since evaluated).")
@ledger_option
@json_option
def retrace_command(ledger_dir: Path | None, as_json: bool, **flags: Any) -> None:
    """Re-derive every recorded trial's grade from the log and compare it to the record.

    Per trial: agreed, disagreed (which component, both values, both reasons) or not
    re-checkable (why). Per constraint: discriminating / always_true / always_false /
    undecided_in_part / never_decided / not_measured. Appends one grade.replayed per trial
    and a replay.completed receipt; recorded grades are never modified.

    Exit codes: 0 every trial re-checked (disagreements are results, not errors); 1 a
    trial could not be re-checked, a replacement config failed the load-time rules, or
    there was no trial; 3 ledger busy.

    Example: vledger retrace --corpus notes_duplicate_check --constraints grading.yaml
    """
    quiet = as_json or not sys.stderr.isatty()
    say = None if as_json or flags["dry_run"] else lambda s: click.echo(f"ingest: {s}", err=True)
    try:  # the options are the API's keywords, passed through as they are
        with progress_hooks("retrace", quiet) as hooks:
            where = resolve_ledger(ledger_dir)
            result = ledger.retrace(ledger=where, **flags, on_ingest=say, **hooks)
    except ledger.UsageError:
        raise  # click's usage lines (ledger/cli/__init__.py)
    except ledger.LedgerError as exc:  # a RetraceError (exit 1) is also told to a --json reader
        if as_json and isinstance(exc, ledger.RetraceError):
            emit_json({"error": str(exc), "exit_code": exc.exit_code})
        error(exc)
        sys.exit(exc.exit_code)
    if as_json:  # to_json()'s document, its trial rows read from disk as they are written
        emit_json(result.report)
    else:
        _print_summary(result)
    sys.exit(result.exit_code)


def _print_summary(res: ledger.RetraceResult) -> None:
    """The human-readable result, on stdout (output rules: ledger/cli/output.py).

    Disagreements come first, one line each with the trial id and what differs, so they
    stand out; not-re-checked trials are counted per reason (every one is in ``--json``).
    Only those trials' rows are read: the others are counted (``res.statuses``).
    """
    report, appended = res.report, res.appended
    width = terminal_width()
    total = sum(res.statuses.values())
    result(f"retrace {report['replay_id']} — {plural(total, 'trial')}: {format_counts(res.statuses)}")
    for line in disagreement_lines(res.notable) + not_rechecked_lines(res.notable):
        result(line)
    if report["constraints"]:
        result("constraints:")
        result(render_table(CONSTRAINT_HEADERS, constraint_rows(report["constraints"]), width), nl=False)
    for c in report["constraints"]:  # a field the recorder never wrote, named
        if c.get("not_measured_reason"):
            result(f"constraint {c['task_id']} / {c['id']}: not measured in "
                   f"{plural(c['not_measured_trials'], 'trial')}: {c['not_measured_reason']}")
    for p in report["paths"]:
        result(f"path {p['path']} won {plural(p['won'], 'trial')} of task {p['task_id']}")
    evidence = [f"{k} {', '.join(v) or 'none'}" if isinstance(v, list) else f"{k} {fmt_number(v)}"
                for k, v in report["evidence"].items()]  # fmt: skip
    result("evidence: " + ", ".join(evidence))
    cp = report["receipt"]["checkpoint"]
    if "extends" in report["receipt"]:
        rc = report["receipt"]
        result(f"extends {rc['extends']['replay_id']}: {plural(rc['carried'], 'trial')} carried "
               f"forward, {plural(rc['evaluated'], 'trial')} new or changed evaluated (--full: all)")
    if report.get("dry_run"):
        result("dry run: nothing appended")
    else:
        result(f"appended {appended} event(s); receipt binds tree size {cp['size']} root "
               f"{cp['root'][:16]}…  (check: vledger receipt verify {report['replay_id']}:completed)")


CONSTRAINT_HEADERS = ("task", "constraint", "route", "class", "evaluated", "passed", "failed",
                      "undecided")
# The order statuses are counted in: results first, then what could not be compared.
_S = ledger.RetraceStatus
STATUS_ORDER = (_S.DISAGREED, _S.AGREED, _S.UNGRADED, _S.NOT_RECHECKED)
# Everything from the first of these on is specific to one trial (a call id, a file).
_REASON_DETAIL = re.compile(r"( at |: | \()")


def status_counts(trials: list[dict[str, Any]]) -> str:
    """``3 disagreed, 14 agreed``: each status that occurs, in :data:`STATUS_ORDER`."""
    return format_counts(Counter(t["status"] for t in trials))


def format_counts(counts: Mapping[str, int]) -> str:
    """Each status counted in ``counts`` that occurs, in :data:`STATUS_ORDER`."""
    seen = {s: n for s, n in counts.items() if n}
    order = [s for s in STATUS_ORDER if s in seen] + sorted(set(seen) - set(STATUS_ORDER))
    return ", ".join(f"{seen[s]} {s}" for s in order) or "none"


def disagreement_lines(trials: list[dict[str, Any]]) -> list[str]:
    """One line per differing component: ``disagreed TRIAL COMPONENT: recorded X, replayed Y``."""
    mark = click.style(_S.DISAGREED, fg="red")
    return [
        f"{mark} {t['trial']} {d['component']}: recorded {fmt_number(d['recorded'])}, "
        f"replayed {fmt_number(d['replayed'])}"
        for t in trials
        if t["status"] == _S.DISAGREED
        for d in t["differences"]
    ]


def reason_kind(trial: str, reason: str | None) -> str:
    """The part of a not-re-checked reason that is not about one trial (for counting)."""
    text = (reason or "no reason given").removeprefix(f"{trial}: ")
    m = _REASON_DETAIL.search(text)
    return text[: m.start()] if m else text


def not_rechecked_lines(trials: list[dict[str, Any]]) -> list[str]:
    """One line per kind of reason: how many trials, and the first one's full reason."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for t in trials:
        if t["status"] == _S.NOT_RECHECKED:
            groups.setdefault(reason_kind(t["trial"], t["reason"]), []).append(t)
    mark = click.style(_S.NOT_RECHECKED, fg="yellow")
    lines = []
    for kind, group in groups.items():
        first = group[0]
        more = f" (and {len(group) - 1} more; every one in --json)" if len(group) > 1 else ""
        lines.append(f"{mark} {plural(len(group), 'trial')}: {kind} — e.g. {first['trial']}: "
                     f"{first['reason']}{more}")
    return lines


def constraint_rows(constraints: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [c["task_id"], c["id"], c["route"] or "-", c["class"], c["evaluated"], c["passed"],
         c["failed"], c["undecided"]]
        for c in constraints
    ]
