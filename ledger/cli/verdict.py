"""``vledger verdict …``, ``vledger admissions`` and ``vledger receipt …``.

Grades state evidence strength, never correctness (GVC § 1): every surface that shows
a grade also shows the record's ``failed_declared_evidence`` flag.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import ledger
from ledger.cli import main
from ledger.cli.options import emit_json, emitted, json_option, ledger_option, resolve_ledger
from ledger.cli.output import cut

if TYPE_CHECKING:
    from ledger import DerivedCase, Recorded

ANTI_CLAIM = "grades state evidence strength, not correctness"
KINDS = click.Choice(["human", "agent", "kernel"])
# A LedgerError a command raises is ``Error: …`` and its exit code: the group's rule
# (ledger/cli/__init__.py), so no command here catches one.


@main.group()
def verdict() -> None:
    """Record a unit's judges and work, admit it, and check derivations (GVC).

    \b
    vledger verdict declare u1 --oracle tests --tier constructed_check \\
        --author ci-owner --author-kind human --command "pytest -q"
    vledger verdict produced u1 --producer agent-7 --producer-kind agent \\
        --producer-chain chain-1 --content-identity sha256:ab12…
    vledger verdict ran u1 --oracle tests --passed --runner ci --runner-kind kernel \\
        --content-identity sha256:ab12…
    vledger verdict admit u1
    """


@verdict.command("declare")
@click.argument("unit")
@click.option("--oracle", required=True, help="Oracle id, unique in the unit.")
@click.option("--tier", required=True, help="Grade the judge grants when it passes.")
@click.option("--command", default=None, help="How to re-run the judge.")
@click.option("--author", required=True, help="Author identity.")
@click.option("--author-kind", type=KINDS, required=True)
@click.option("--author-chain", default="", help="Author's delegation chain ('' = none).")
@ledger_option
@json_option
def declare_cmd(ledger_dir: Path | None, as_json: bool, **kw: Any) -> None:
    """Declare a judge for UNIT (before the work is produced)."""
    res = ledger.verdict_declare(ledger=resolve_ledger(ledger_dir), **kw)
    _written(as_json, res, f"declared oracle {kw['oracle']!r} for unit {res.unit!r} at seq {res.seq}")


@verdict.command("ran")
@click.argument("unit")
@click.option("--oracle", required=True)
@click.option("--passed/--failed", required=True, help="The observed result.")
@click.option("--runner", required=True, help="Runner identity.")
@click.option("--runner-kind", type=KINDS, required=True)
@click.option("--runner-chain", default="")
@click.option("--content-identity", default="", help="Identity of the content judged.")
@click.option("--exit-code", type=int, default=None)
@click.option("--evidence", default=None, help="Reference to the execution transcript.")
@ledger_option
@json_option
def ran_cmd(ledger_dir: Path | None, as_json: bool, **kw: Any) -> None:
    """Record an observed run of a declared judge of UNIT."""
    res = ledger.verdict_ran(ledger=resolve_ledger(ledger_dir), **kw)
    outcome = "pass" if kw["passed"] else "failure"
    _written(as_json, res, f"recorded {outcome} of {kw['oracle']!r} at seq {res.seq}")


@verdict.command("produced")
@click.argument("unit")
@click.option("--producer", required=True)
@click.option("--producer-kind", type=KINDS, required=True)
@click.option("--producer-chain", default="", help="Admission-populated chain id.")
@click.option("--content-identity", default="", help="Identity of the delivered content.")
@click.option("--grade", default=None, help="A producer-supplied grade (never admitted).")
@ledger_option
@json_option
def produced_cmd(ledger_dir: Path | None, as_json: bool, **kw: Any) -> None:
    """Record the work delivered for UNIT."""
    res = ledger.verdict_produced(ledger=resolve_ledger(ledger_dir), **kw)
    _written(as_json, res, f"recorded work for unit {res.unit!r} at seq {res.seq}")


def _written(as_json: bool, res: Recorded, text: str) -> None:
    """What a recording verb prints: ``{type, unit, seq}`` with --json, else one line."""
    if not emitted(as_json, res):
        click.echo(text)


@verdict.command("admit")
@click.argument("unit")
@ledger_option
@json_option
def admit_cmd(unit: str, ledger_dir: Path | None, as_json: bool) -> None:
    """Derive UNIT's grade from its evidence and record it (once)."""
    res = ledger.verdict_admit(unit, ledger=resolve_ledger(ledger_dir))
    if emitted(as_json, res):
        return
    rec = res.admission.record()
    ops = ", ".join(rec["applied_rank_ops"]) or "none"
    click.echo(f"unit {unit}: {rec['effective_grade']} ({ANTI_CLAIM})")
    click.echo(f"  evidence kind {rec['evidence_kind']}; rank ops: {ops}")
    click.echo(f"  failed_declared_evidence: {str(rec['failed_declared_evidence']).lower()}")
    click.echo(f"  conflicting_evidence: {str(rec['conflicting_evidence']).lower()}")
    if rec["provenance"] != "derived":
        click.echo(f"  provenance: {rec['provenance']}")


@verdict.command("record")
@click.argument("jsonl", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@ledger_option
@json_option
def record_cmd(jsonl: Path, ledger_dir: Path | None, as_json: bool) -> None:
    """Record units from a JSONL file (``-`` for stdin), one event per line.

    \b
    {"type": "oracle.declared", "unit": "u1", "oracle_id": "t", "tier": "interop",
     "author": {"identity": "op", "kind": "human", "chain_id": ""}}
    {"type": "work.produced", "unit": "u1", "producer": {…}, "content_identity": "sha:a"}
    {"type": "oracle.ran", "unit": "u1", "oracle_id": "t", "passed": true,
     "runner": {…}, "content_identity": "sha:a"}
    {"type": "admit", "unit": "u1"}

    All or nothing: the whole file is checked, then appended as one atomic batch; the
    first refused line is named (exit 1) and nothing is recorded.
    """
    res = ledger.verdict_record(jsonl, ledger=resolve_ledger(ledger_dir))
    if emitted(as_json, res):
        return
    for w in res.recorded:
        what = (
            f"admitted {w.unit}: {w.admission.effective_grade}"
            if w.admission
            else f"{w.type} {w.unit}"
        )
        click.echo(f"{what} at seq {w.seq}" + (" (already recorded)" if w.duplicate else ""))


@verdict.command("derive")
@click.argument("cases_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--registration", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Grade registration (default: the shipped v1 copy).")  # fmt: skip
@click.option("--check", is_flag=True, help="Exit 1 if a case's expectation is not met.")
@json_option
def derive_cmd(as_json: bool, **kw: Any) -> None:
    """Run every case of a gvc-derivation-cases/v1 file through the derivation."""
    res = ledger.verdict_derive(**kw)
    if not emitted(as_json, res):
        _print_cases(res.cases)
    if not res.ok:
        click.echo(
            f"{len(res.failing)} case(s) differ from their expectation: {', '.join(res.failing)}",
            err=True,
        )
    sys.exit(res.exit_code)


def _print_cases(cases: tuple[DerivedCase, ...]) -> None:
    click.echo(f"# {len(cases)} case(s); {ANTI_CLAIM}")
    for case in cases:
        d = case.derived
        click.echo(f"{case.name}: {d['effective_grade']} (evidence kind {d['evidence_kind']})")
        click.echo(f"  rank ops: {', '.join(d['applied_rank_ops']) or 'none'}")
        click.echo(
            f"  conflicting_evidence={str(d['conflicting_evidence']).lower()} "
            f"failed_declared_evidence={str(d['failed_declared_evidence']).lower()}"
        )
        counters = " ".join(f"{k}={d['counters'][k]}" for k in ledger.COUNTER_NAMES)
        click.echo("  counters: " + counters)
        if (problems := case.mismatches) is not None:
            click.echo(
                "  expectation: " + ("met" if not problems else "NOT met: " + "; ".join(problems))
            )


@main.command("admissions")
@ledger_option
@json_option
def admissions_cmd(ledger_dir: Path | None, as_json: bool) -> None:
    """List admitted units, weakest evidence first, and units still pending admission."""
    res = ledger.admissions(ledger=resolve_ledger(ledger_dir))
    if emitted(as_json, res):
        return
    rows, pending = res.admissions, res.pending
    click.echo(f"# {len(rows)} admitted unit(s), weakest first; {ANTI_CLAIM}")
    width = max([len(r.unit) for r in rows] + [4])
    click.echo(f"{'unit':<{width}}  {'grade':<17}  {'evidence kind':<17}  flags / rank ops")
    for r in rows:
        rec = r.record
        ops = ",".join(rec.get("applied_rank_ops", [])) or "-"
        flags = ["FAILED-DECLARED-EVIDENCE"] if rec.get("failed_declared_evidence") else []
        if rec.get("conflicting_evidence"):
            flags.append("CONFLICTING")
        if rec.get("provenance") not in (None, "derived"):
            flags.append(str(rec["provenance"]))
        click.echo(
            f"{r.unit:<{width}}  {rec.get('effective_grade', '?'):<17}  "
            f"{rec.get('evidence_kind', '?'):<17}  {' '.join(flags) or '-'} / {ops}"
        )
    if pending:
        click.echo(f"# {len(pending)} unit(s) not admitted yet: {', '.join(pending)}")


@main.group()
def receipt() -> None:
    """Show and verify receipts: ledger receipts by seq/event_id, verdict-core run dirs."""


@receipt.command("verify")
@click.argument("target")
@click.option("--recompute", is_flag=True, help="Re-run the projection; compare outputs digest.")
@click.option("--strict", is_flag=True,
              help="Run dirs: also require receipt.json to be byte-identical to the rebuilt one.")  # fmt: skip
@click.option("--pub", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Public key (.pub) to check signed checkpoint notes with.")  # fmt: skip
@ledger_option
@json_option
def receipt_verify_cmd(ledger_dir: Path | None, as_json: bool, **kw: Any) -> None:
    """Verify TARGET: a verdict-core run directory, or a ledger receipt's seq / event_id.

    A run directory is rebuilt from events.jsonl + graph.json (+ review.json) and
    compared with its receipt.json (verdict-core FORMAT.md § 7). Exit 1 on any problem.
    """
    res = ledger.receipt_verify(ledger=resolve_ledger(ledger_dir), **kw)
    if as_json:
        emit_json(res.to_json())
    elif res.differences is None:  # a ledger receipt
        for line in res.checked or []:
            click.echo(f"ok: {line}")
        for line in res.problems:
            click.echo(f"problem: {line}")
        click.echo("receipt: OK" if res.ok else "receipt: FAILED")
    else:  # a verdict-core run directory
        click.echo(res.verdict)
        if res.problems:
            click.echo("integrity: " + "; ".join(res.problems))
        else:
            click.echo("integrity: OK (events digest verified; receipt unsigned)")
        for line in difference_lines(res.differences):
            click.echo(line)
    if not as_json:
        for line in trust_lines(res.trust):
            click.echo(line)
    sys.exit(res.exit_code)


def trust_lines(trust: dict[str, object]) -> list[str]:
    """The trust note as text lines (the same facts the JSON carries)."""
    return [
        "unsigned: this receipt carries no signature",
        f"  proves: {trust['proves']}",
        f"  does not prove: {trust['does_not_prove']}",
        *(
            [f"  later edits: {trust['detects_later_edits']}"]
            if "detects_later_edits" in trust
            else []
        ),
    ]


SHOWN_DIFFERENCES = 20
SHOWN_VALUE_CHARS = 120


def difference_lines(differences: list[Any]) -> list[str]:
    """``  PATH: stored V, rebuilt W`` per differing leaf, the first SHOWN_DIFFERENCES of
    them: enough to tell a tampered value from a field the reader does not project."""
    lines = [
        f"  {d.path}: stored {_shown(d.stored)}, rebuilt {_shown(d.rebuilt)}"
        for d in differences[:SHOWN_DIFFERENCES]
    ]
    if len(differences) > SHOWN_DIFFERENCES:
        lines.append(
            f"  … and {len(differences) - SHOWN_DIFFERENCES} more difference(s) (--json lists all)"
        )
    return lines


def _shown(value: Any) -> str:
    if value is ledger.ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return cut(text, SHOWN_VALUE_CHARS)


@receipt.command("show")
@click.argument("ident")
@ledger_option
@json_option
def receipt_show_cmd(ident: str, ledger_dir: Path | None, as_json: bool) -> None:
    """Show the receipt carried by the event with seq or event_id IDENT."""
    res = ledger.receipt_show(ident, ledger=resolve_ledger(ledger_dir))
    if emitted(as_json, res):
        return
    for key, value in res.to_json().items():
        click.echo(f"{key:<15} {value if not isinstance(value, dict) else json.dumps(value)}")
