"""``vledger verdict …``, ``vledger admissions`` and ``vledger receipt …``.

Grades state evidence strength, never correctness (GVC § 1): every surface that shows
a grade also shows the record's ``failed_declared_evidence`` flag.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
from pydantic import ValidationError

from ledger.app import receipts as receipts_mod
from ledger.app import verdicts
from ledger.cli import main
from ledger.cli.options import emit_json, json_option, ledger_option, resolve_ledger
from ledger.errors import LedgerError, exit_code
from ledger.log.keys import load_verifier
from ledger.log.store import open_ledger
from ledger.sources import strict_json
from ledger.sources.files import InputError, read_input
from replay.vcore_receipt import rebuild_from_files
from replay.vcore_run import RebuildError
from replay.vcore_verify import ABSENT
from replay.verdict_cases import case_mismatches, derive_case, derived_view
from schemas.gvc import COUNTER_NAMES, CaseFile, Party

ANTI_CLAIM = "grades state evidence strength, not correctness"
KINDS = click.Choice(["human", "agent", "kernel"])


def _fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    sys.exit(code)


def _open(ledger_dir: Path | None) -> Any:
    try:
        return open_ledger(resolve_ledger(ledger_dir))
    except LedgerError as exc:
        _fail(str(exc), exit_code(exc))


def _write(ledger_dir: Path | None, fn: Any, *args: Any, **kwargs: Any) -> Any:
    with _open(ledger_dir) as lg:
        try:
            return fn(lg, *args, **kwargs)
        except verdicts.UnitRejected as exc:
            _fail(str(exc))
        except LedgerError as exc:
            _fail(str(exc), exit_code(exc))


def _party(identity: str, kind: str, chain: str) -> Party:
    return Party(identity=identity, kind=kind, chain_id=chain)


def _flag(record: dict[str, Any]) -> str:
    return "FAILED-DECLARED-EVIDENCE" if record.get("failed_declared_evidence") else "-"


# --------------------------------------------------------------------------- verdict


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
@click.option("--oracle", "oracle_id", required=True, help="Oracle id, unique in the unit.")
@click.option("--tier", required=True, help="Grade the judge grants when it passes.")
@click.option("--command", default=None, help="How to re-run the judge.")
@click.option("--author", required=True, help="Author identity.")
@click.option("--author-kind", type=KINDS, required=True)
@click.option("--author-chain", default="", help="Author's delegation chain ('' = none).")
@ledger_option
@json_option
def declare_cmd(
    unit: str, oracle_id: str, tier: str, command: str | None, author: str,
    author_kind: str, author_chain: str, ledger_dir: Path | None, as_json: bool,
) -> None:  # fmt: skip
    """Declare a judge for UNIT (before the work is produced)."""
    seq = _write(
        ledger_dir, verdicts.declare, unit, oracle_id, tier,
        _party(author, author_kind, author_chain), command,
    )  # fmt: skip
    _written(as_json, "oracle.declared", unit, seq,
             f"declared oracle {oracle_id!r} for unit {unit!r} at seq {seq}")


@verdict.command("ran")
@click.argument("unit")
@click.option("--oracle", "oracle_id", required=True)
@click.option("--passed/--failed", required=True, help="The observed result.")
@click.option("--runner", required=True, help="Runner identity.")
@click.option("--runner-kind", type=KINDS, required=True)
@click.option("--runner-chain", default="")
@click.option("--content-identity", default="", help="Identity of the content judged.")
@click.option("--exit-code", type=int, default=None)
@click.option("--evidence", default=None, help="Reference to the execution transcript.")
@ledger_option
@json_option
def ran_cmd(
    unit: str, oracle_id: str, passed: bool, runner: str, runner_kind: str,
    runner_chain: str, content_identity: str, exit_code: int | None,
    evidence: str | None, ledger_dir: Path | None, as_json: bool,
) -> None:  # fmt: skip
    """Record an observed run of a declared judge of UNIT."""
    seq = _write(
        ledger_dir, verdicts.ran, unit, oracle_id, passed,
        _party(runner, runner_kind, runner_chain), content_identity, exit_code, evidence,
    )  # fmt: skip
    _written(as_json, "oracle.ran", unit, seq,
             f"recorded {'pass' if passed else 'failure'} of {oracle_id!r} at seq {seq}")


@verdict.command("produced")
@click.argument("unit")
@click.option("--producer", required=True)
@click.option("--producer-kind", type=KINDS, required=True)
@click.option("--producer-chain", default="", help="Admission-populated chain id.")
@click.option("--content-identity", default="", help="Identity of the delivered content.")
@click.option("--grade", default=None, help="A producer-supplied grade (never admitted).")
@ledger_option
@json_option
def produced_cmd(
    unit: str, producer: str, producer_kind: str, producer_chain: str,
    content_identity: str, grade: str | None, ledger_dir: Path | None, as_json: bool,
) -> None:  # fmt: skip
    """Record the work delivered for UNIT."""
    seq = _write(
        ledger_dir, verdicts.produced, unit,
        _party(producer, producer_kind, producer_chain), content_identity, grade,
    )  # fmt: skip
    _written(as_json, "work.produced", unit, seq, f"recorded work for unit {unit!r} at seq {seq}")


def _written(as_json: bool, type_: str, unit: str, seq: int, text: str) -> None:
    """What a recording verb prints: ``{type, unit, seq}`` with --json, else one line."""
    if as_json:
        emit_json({"type": type_, "unit": unit, "seq": seq})
    else:
        click.echo(text)


@verdict.command("admit")
@click.argument("unit")
@ledger_option
@json_option
def admit_cmd(unit: str, ledger_dir: Path | None, as_json: bool) -> None:
    """Derive UNIT's grade from its evidence and record it (once)."""
    admission = _write(ledger_dir, verdicts.admit, unit)
    rec = admission.record()
    if as_json:
        emit_json({"unit": unit, **rec})
        return
    ops = ", ".join(rec["applied_rank_ops"]) or "none"
    click.echo(f"unit {unit}: {rec['effective_grade']} ({ANTI_CLAIM})")
    click.echo(f"  evidence kind {rec['evidence_kind']}; rank ops: {ops}")
    click.echo(f"  failed_declared_evidence: {str(rec['failed_declared_evidence']).lower()}")
    click.echo(f"  conflicting_evidence: {str(rec['conflicting_evidence']).lower()}")
    if rec["provenance"] != "derived":
        click.echo(f"  provenance: {rec['provenance']}")


MAX_RECORD_BYTES = 256 << 20  # verdict JSONL and case files: far above any real one


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
    source = "<stdin>" if str(jsonl) == "-" else str(jsonl)
    try:  # the one bounded reader: a regular file, or a pipe only when named as -
        data = read_input(jsonl, max_bytes=MAX_RECORD_BYTES, name=source, allow_stdin=True)
        text = data.decode("utf-8")
    except InputError as exc:
        _fail(str(exc))
    except UnicodeDecodeError as exc:
        _fail(f"{source}: not UTF-8 text ({exc.reason})")
    with _open(ledger_dir) as lg:
        try:
            done = verdicts.record_jsonl(lg, text, source)
        except verdicts.LineRejected as exc:
            _fail(str(exc))
        except LedgerError as exc:
            _fail(str(exc), exit_code(exc))
    if as_json:
        emit_json({"recorded": [
            {"type": w.type, "unit": w.unit, "seq": w.seq, "duplicate": w.duplicate,
             "effective_grade": w.admission.effective_grade if w.admission else None}
            for w in done
        ]})  # fmt: skip
        return
    for w in done:
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
def derive_cmd(cases_file: Path, registration: Path | None, check: bool, as_json: bool) -> None:
    """Run every case of a gvc-derivation-cases/v1 file through the derivation."""
    try:
        raw = read_input(cases_file, max_bytes=MAX_RECORD_BYTES)
        cases = CaseFile.model_validate(strict_json.loads(raw, str(cases_file)))
    except (ValueError, ValidationError) as exc:
        _fail(f"{cases_file}: not a gvc-derivation-cases/v1 file: {exc}")
    ladder = verdicts.load_ladder(registration)
    results = [(c, derive_case(c, ladder)) for c in cases.cases]
    misses = {c.name: case_mismatches(c, a) for c, a in results}
    if as_json:
        emit_json({"cases": [{"name": c.name, "derived": derived_view(a)} for c, a in results]})
    else:
        _print_cases(results, misses)
    failing = [n for n, m in misses.items() if m]
    if check and failing:
        click.echo(
            f"{len(failing)} case(s) differ from their expectation: {', '.join(failing)}", err=True
        )
        sys.exit(1)


def _print_cases(results: list[Any], misses: dict[str, list[str]]) -> None:
    click.echo(f"# {len(results)} case(s); {ANTI_CLAIM}")
    for case, adm in results:
        d = derived_view(adm)
        click.echo(f"{case.name}: {d['effective_grade']} (evidence kind {d['evidence_kind']})")
        click.echo(f"  rank ops: {', '.join(d['applied_rank_ops']) or 'none'}")
        click.echo(
            f"  conflicting_evidence={str(d['conflicting_evidence']).lower()} "
            f"failed_declared_evidence={str(d['failed_declared_evidence']).lower()}"
        )
        click.echo("  counters: " + " ".join(f"{k}={d['counters'][k]}" for k in COUNTER_NAMES))
        if case.expect is not None:
            problems = misses[case.name]
            click.echo(
                "  expectation: " + ("met" if not problems else "NOT met: " + "; ".join(problems))
            )


# ------------------------------------------------------------------------ admissions


@main.command("admissions")
@ledger_option
@json_option
def admissions_cmd(ledger_dir: Path | None, as_json: bool) -> None:
    """List admitted units, weakest evidence first, and units still pending admission."""
    with _open(ledger_dir) as lg:
        rows = verdicts.admissions(lg)
        pending = verdicts.pending_units(lg)
    if as_json:
        emit_json(
            {
                "admissions": [{"unit": r.unit, "seq": r.seq, **r.record} for r in rows],
                "pending": pending,
            }
        )
        return
    click.echo(f"# {len(rows)} admitted unit(s), weakest first; {ANTI_CLAIM}")
    width = max([len(r.unit) for r in rows] + [4])
    click.echo(f"{'unit':<{width}}  {'grade':<17}  {'evidence kind':<17}  flags / rank ops")
    for r in rows:
        rec = r.record
        ops = ",".join(rec.get("applied_rank_ops", [])) or "-"
        flags = [_flag(rec)] if rec.get("failed_declared_evidence") else []
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


# -------------------------------------------------------------------------- receipts


@main.group()
def receipt() -> None:
    """Show and verify receipts: ledger receipts by seq/event_id, verdict-core run dirs."""


@receipt.command("verify")
@click.argument("target")
@click.option("--recompute", is_flag=True, help="Re-run the projection; compare outputs digest.")
@click.option("--strict", is_flag=True,
              help="Run dirs: also require receipt.json to be byte-identical to the rebuilt one.")  # fmt: skip
@click.option("--pub", "pub_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Public key (.pub) to check signed checkpoint notes with.")  # fmt: skip
@ledger_option
@json_option
def receipt_verify_cmd(
    target: str,
    recompute: bool,
    strict: bool,
    pub_file: Path | None,
    ledger_dir: Path | None,
    as_json: bool,
) -> None:
    """Verify TARGET: a verdict-core run directory, or a ledger receipt's seq / event_id.

    A run directory is rebuilt from events.jsonl + graph.json (+ review.json) and
    compared with its receipt.json (verdict-core FORMAT.md § 7). Exit 1 on any problem.
    """
    if Path(target).is_dir():
        _verify_run_dir(Path(target), as_json, strict)
        return
    with _open(ledger_dir) as lg:
        try:
            pub = load_verifier(pub_file) if pub_file is not None else None
            check = receipts_mod.verify_ledger_receipt(lg, target, recompute=recompute, pub=pub)
        except LedgerError as exc:
            _fail(str(exc), exit_code(exc))
    trust = receipts_mod.LEDGER_RECEIPT_TRUST
    if as_json:
        emit_json(
            {"ok": check.ok, "problems": check.problems, "checked": check.checked, **trust}
        )
    else:
        for line in check.checked:
            click.echo(f"ok: {line}")
        for line in check.problems:
            click.echo(f"problem: {line}")
        click.echo("receipt: OK" if check.ok else "receipt: FAILED")
        for line in receipts_mod.trust_lines(trust):
            click.echo(line)
    if not check.ok:
        sys.exit(1)


def _verify_run_dir(run_dir: Path, as_json: bool, strict: bool) -> None:
    result = receipts_mod.check_run_dir(run_dir, strict=strict)
    problems = result.problems
    trust = receipts_mod.RUN_RECEIPT_TRUST
    if as_json:
        emit_json(
            {
                "ok": not problems,
                "problems": problems,
                "differences": [d.as_json() for d in result.differences],
                **trust,
            }
        )
    else:
        click.echo(_verdict_line(run_dir, result.rebuilt))
        if problems:
            click.echo("integrity: " + "; ".join(problems))
        else:
            click.echo("integrity: OK (events digest verified; receipt unsigned)")
        for line in difference_lines(result.differences):
            click.echo(line)
        for line in receipts_mod.trust_lines(trust):
            click.echo(line)
    if problems:
        sys.exit(1)


def _verdict_line(run_dir: Path, rebuilt: dict[str, Any] | None) -> str:
    """``OUTCOME: reason`` of the evidence (FORMAT.md § 7's CLI), even when verification
    stopped before rebuilding (e.g. no receipt.json to compare with)."""
    try:
        if rebuilt is None:
            rebuilt = rebuild_from_files(receipts_mod.read_run_dir(run_dir))
    except RebuildError as exc:
        return f"UNKNOWN: cannot rebuild receipt: {exc}"
    return f"{rebuilt['outcome']}: {rebuilt['reason']}"


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
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    if len(text) > SHOWN_VALUE_CHARS:
        return text[: SHOWN_VALUE_CHARS - 1] + "…"
    return text


@receipt.command("show")
@click.argument("ident")
@ledger_option
@json_option
def receipt_show_cmd(ident: str, ledger_dir: Path | None, as_json: bool) -> None:
    """Show the receipt carried by the event with seq or event_id IDENT."""
    with _open(ledger_dir) as lg:
        try:
            ev = receipts_mod.find_receipt_event(lg, ident)
            shown = {
                "seq": ev.seq,
                "event_id": ev.event_id,
                "stream": ev.stream,
                "type": ev.type,
                **_receipt_fields(ev),
            }
        except LedgerError as exc:
            _fail(str(exc), exit_code(exc))
        except ValueError as exc:
            _fail(str(exc))
    if as_json:
        emit_json(shown)
        return
    for key, value in shown.items():
        click.echo(f"{key:<15} {value if not isinstance(value, dict) else json.dumps(value)}")


def _receipt_fields(ev: Any) -> dict[str, Any]:
    data = ev.data()
    stored = data.get("receipt")
    if ev.type == "receipt.issued" and isinstance(data.get("events_file"), dict):
        # an imported verdict-core run receipt (verify it with `receipt verify SEQ`)
        stored = stored if isinstance(stored, dict) else {}
        keys = ("run_id", "outcome", "reason", "events_digest", "graph_digest", "event_count")
        return {"verdict_core_receipt": {k: stored.get(k) for k in keys}}
    rc = receipts_mod.parse_ledger_receipt(ev)
    return {
        "checkpoint": {"size": rc.size, "root": rc.root.hex()},
        "config_digest": rc.config_digest,
        "outputs_digest": rc.outputs_digest,
    }
