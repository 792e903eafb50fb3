"""``vledger demo``: the guided tour that ``make demo`` runs.

It calls the Python API (docs/readme/api.md) over the corpora the project ships, in the
order a user would type the commands, and prints one line per step plus the next commands
to try. Each step is the API function under the ``vledger`` verb of the same name, so the
demo doubles as an end-to-end smoke test of the API (tests/test_demo.py runs it).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

import ledger
from ledger.cli import main
from ledger.cli.options import resolve_ledger
from ledger.cli.output import fmt_number, json_text

ROOT = Path(__file__).resolve().parents[2]
TRIAL = "native_shared_domain_policy_demo_20260803_063010_trial0"  # the one `grade` suggested
MARKER = "events.duckdb"  # only a directory holding a ledger is ever removed


class DemoStepFailed(ledger.LedgerError):
    """A demo step raised or its result says it failed; names the step."""


def step(title: str, call: Callable[[], Any], summarise: Callable[[dict], str]) -> dict[str, Any]:
    """Print ``title`` and ``summarise`` of ``call()``'s ``to_json()``; a step that raises, or
    whose result says it failed (``ok`` false, or the nonzero ``exit_code`` its command would
    exit with), stops the demo."""
    try:
        result = call()
    except ledger.LedgerError as exc:
        raise DemoStepFailed(f"demo step '{title}' failed: {exc}") from None
    body = result.to_json() if hasattr(result, "to_json") else {}
    if body.get("ok", True) is False or body.get("exit_code", 0) != 0:
        click.echo(json_text(body), err=True)
        raise DemoStepFailed(f"demo step '{title}' failed: {body.get('problems', body)}")
    click.echo(f"  {click.style('✓', fg='green')} {title}: {summarise(body)}")
    return body


@main.command()
@click.option("--ledger", "ledger_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None,
              help=f"Where the demo builds its ledger, removed and rebuilt on every run "
                   f"(default: ./{ledger.DEFAULT_DEMO_LEDGER}; never $VLEDGER_HOME). `vledger --ledger DIR "
                   "demo` means the same.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="Where to write the HTML report (default: report.html beside the ledger).")  # fmt: skip
def demo(ledger_dir: Path | None, report_path: Path | None) -> None:
    """Build a fresh ledger from the shipped corpora and walk through what it proves.

    Ingests the 17 recorded notes trials, their packs and a verdict-core run; records five
    verdict-grade units; signs a checkpoint; retraces the corpus against the narrowed
    constraint; reconciles the declared migration; lists admissions; verifies everything;
    writes the report. Exit 0 when every step did what it should.

    Everything it writes is at or beside its ledger DIR: the ledger in DIR, the checkpoint
    key in DIR.key and DIR.key.pub, the report in report.html of DIR's parent folder.

    Example: make demo   (or: vledger demo --ledger /tmp/demo)
    """
    ledger_dir, report_path = demo_paths(ledger_dir, report_path)
    corpora = ROOT / "corpora"
    if ledger_dir.exists():
        if not (ledger_dir / MARKER).exists() and any(ledger_dir.iterdir()):
            raise click.ClickException(
                f"{ledger_dir} exists and is not a ledger; pass --ledger to a new directory"
            )
        shutil.rmtree(ledger_dir)
    notes = corpora / "notes_duplicate_check"
    packs = corpora / "packs"
    narrowed = packs / "notes_duplicate_check_narrowed" / "grading.yaml"
    at = {"ledger": ledger_dir}

    click.echo(click.style("verdict-ledger demo", bold=True) + f" — ledger {ledger_dir}\n")
    step("init", lambda: ledger.init(ledger_dir).close(), lambda b: "empty ledger created")
    run_dir = corpora / "verdict-core" / "demo-run"
    step("ingest", lambda: ledger.ingest(str(notes), str(packs), str(run_dir), **at), _ingest_line)
    units = corpora / "units" / "demo_units.jsonl"
    step("record units", lambda: ledger.verdict_record(units, **at), _units_line)
    key = demo_key(ledger_dir)
    if key.exists():
        key.unlink()
        key.with_name(key.name + ".pub").unlink(missing_ok=True)
    keyed = f"Ed25519 key at {key} (outside the ledger)"
    step("keygen", lambda: ledger.keygen(out=key, **at), lambda b: keyed)
    step("checkpoint", lambda: ledger.checkpoint(key=key, **at), _checkpoint_line)
    retraced = step(
        "retrace", lambda: ledger.retrace(constraints_file=narrowed, **at), _retrace_line
    )
    step("reconcile", lambda: ledger.reconcile(packs=[packs], base=ROOT, **at), _reconcile_line)
    step("admissions", lambda: ledger.admissions(**at), _admissions_line)
    step("checkpoint", lambda: ledger.checkpoint(key=key, **at), _checkpoint_line)
    pub = key.with_name(key.name + ".pub")
    step("verify", lambda: ledger.verify(deep=True, pub=pub, **at), _verify_line)
    receipt = f"{retraced['replay_id']}:completed"
    step("receipt", lambda: ledger.receipt_verify(receipt, recompute=True, **at),
         lambda b: "the retrace receipt re-verifies and its outputs recompute")  # fmt: skip
    step("report", lambda: ledger.report(out=report_path, **at), lambda b: f"wrote {report_path}")
    click.echo(
        "\n" + _path_hint() + "Next, try:\n"
        f"  vledger log --ledger {ledger_dir} --type grade.replayed --json | head\n"
        f"  vledger sql --ledger {ledger_dir} \"select task_id, model, n, c, pass_at_k from pass_at_k where level = 'task' and basis = 'current' and k = 1\"\n"
        f"  vledger grade --ledger {ledger_dir} {_from_here(notes / 'met' / TRIAL)}\n"
        f"  vledger prove --ledger {ledger_dir} 0\n"
        f"and open the report in a browser: {report_path.resolve().as_uri()}"
    )


def _from_here(path: Path) -> Path:
    """``path`` as a command typed in the working directory can name it: relative below
    it (from the checkout: corpora/…), else whole (a demo run anywhere else)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def demo_paths(ledger_dir: Path | None, report: Path | None) -> tuple[Path, Path]:
    """(ledger, report): ``--ledger`` after or before ``demo``, else ./.vledger-demo; the
    report beside that ledger unless ``--report`` says where. ``$VLEDGER_HOME`` is never
    the default: the demo removes and rebuilds its ledger."""
    where = resolve_ledger(ledger_dir, default=ledger.DEFAULT_DEMO_LEDGER)
    return where, report if report is not None else where.parent / "report.html"


def demo_key(ledger_dir: Path) -> Path:
    """The demo's signing key: beside its ledger, never inside it."""
    return ledger_dir.with_name(ledger_dir.name + ".key")


def _path_hint() -> str:
    """Where ``vledger`` is, when the shell would not find it (``make demo`` runs it from
    ``.venv/bin``, which is not on PATH until activated)."""
    found = shutil.which("vledger")
    here = Path(sys.executable).parent
    if found and Path(found).parent == here:
        return ""
    return (
        f"vledger is {here / 'vledger'}; put it on PATH with: "
        f'source {here / "activate"}   (or export PATH="{here}:$PATH")\n'
    )


def _checkpoint_line(body: dict[str, Any]) -> str:
    """A C2SP checkpoint note: origin, tree size, base64 root, blank line, signatures."""
    lines = body["note"].strip().splitlines()
    return (
        f"signed note over tree size {lines[1]}, root {lines[2][:12]}…"
        if len(lines) > 2
        else "signed"
    )


def _ingest_line(r: dict[str, Any]) -> str:
    new = {kind: r[kind]["new"] for kind in ("events", "trials", "packs", "runs")}
    return (
        f"{new['events']} events appended: {new['trials']} recorded trials, "
        f"{new['packs']} task packs, {new['runs']} verdict-core run"
    )


def _units_line(r: dict[str, Any]) -> str:
    admitted = sum(1 for w in r["recorded"] if w["type"] == "admit")
    return f"{admitted} units admitted from their oracle evidence"


def _retrace_line(r: dict[str, Any]) -> str:
    from ledger.cli.retrace import status_counts  # noqa: PLC0415 - `--help` loads no retrace

    classes = sorted({f"{c['task_id']}: {c['class']}" for c in r.get("constraints", [])})
    return "; ".join([f"{status_counts(r.get('trials', []))} trials", *classes])


def _reconcile_line(r: dict[str, Any]) -> str:
    parts = [
        f"{e.get('criterion')} ({e.get('mode')}): {e.get('verdict')}, κ {fmt_number(e.get('kappa'))}, "
        f"{e.get('observations')} observations"
        for e in r.get("entries", [])
    ]
    return "; ".join(parts) or "no migration declared"


def _admissions_line(r: dict[str, Any]) -> str:
    grades = [row.get("effective_grade") for row in r["admissions"]]
    return f"{len(grades)} units, weakest first: {', '.join(map(str, grades))}"


def _verify_line(r: dict[str, Any]) -> str:  # a verify with problems stopped the demo (step)
    return f"{r['events']} events, {r['checkpoints']} signed checkpoints: clean"
