"""``vledger demo``: the guided tour that ``make demo`` runs.

It drives the real commands in-process, in the order a user would type them, over the
corpora the project ships, and prints one line per step plus the next commands to try.
Each step is the same ``vledger`` verb documented in the README, so the demo doubles as an
end-to-end smoke test of the CLI (tests/test_demo.py runs it).
"""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import orjson

from ledger.cli import main
from ledger.cli.output import fmt_number
from ledger.cli.retrace import status_counts

ROOT = Path(__file__).resolve().parents[2]
DEMO_LEDGER = Path(".vledger-demo")
DEMO_KEY = Path(".vledger-demo.key")
MARKER = "events.duckdb"  # only a directory holding a ledger is ever removed


class DemoStepFailed(click.ClickException):
    pass


def _invoke(args: list[str]) -> tuple[int, str]:
    """Run ``vledger ARGS`` in-process; return (exit code, captured stdout)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main.main(args=args, prog_name="vledger", standalone_mode=False)
        except SystemExit as exc:
            code = int(exc.code or 0)
        except click.ClickException as exc:
            exc.show()
            code = exc.exit_code
    return code, out.getvalue() + ("\n" + err.getvalue() if code else "")


def _json(text: str) -> Any:
    start = text.find("{")
    return orjson.loads(text[start:]) if start >= 0 else {}


@main.command()
@click.option(
    "--ledger",
    "ledger_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEMO_LEDGER,
    show_default=True,
    help="Where the demo builds its ledger (removed and rebuilt on every run).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="Where to write the HTML report.",
)
def demo(ledger_dir: Path, report_path: Path) -> None:
    """Build a fresh ledger from the shipped corpora and walk through what it proves.

    Ingests the 17 recorded notes trials, their packs and a verdict-core run; records five
    verdict-grade units; signs a checkpoint; retraces the corpus against the narrowed
    constraint; reconciles the declared migration; lists admissions; verifies everything;
    writes the report. Exit 0 when every step did what it should.

    Example: make demo   (or: vledger demo --ledger /tmp/demo)
    """
    corpora = ROOT / "corpora"
    if ledger_dir.exists():
        if not (ledger_dir / MARKER).exists() and any(ledger_dir.iterdir()):
            raise click.ClickException(
                f"{ledger_dir} exists and is not a ledger; pass --ledger to a new directory"
            )
        shutil.rmtree(ledger_dir)
    key = ledger_dir.with_name(ledger_dir.name + ".key")
    led = ["--ledger", str(ledger_dir)]
    notes = corpora / "notes_duplicate_check"
    packs = corpora / "packs"
    narrowed = packs / "notes_duplicate_check_narrowed" / "grading.yaml"
    facts: dict[str, Any] = {}

    def step(title: str, args: list[str], summarise: Callable[[str], str], ok_codes=(0,)) -> str:
        code, out = _invoke(args)
        if code not in ok_codes:
            click.echo(out, err=True)
            raise DemoStepFailed(
                f"demo step '{title}' failed (exit {code}): vledger {' '.join(args)}"
            )
        line = summarise(out)
        click.echo(f"  {click.style('✓', fg='green')} {title}: {line}")
        return out

    click.echo(click.style("verdict-ledger demo", bold=True) + f" — ledger {ledger_dir}\n")
    step("init", ["init", *led], lambda o: "empty ledger created")
    step(
        "ingest",
        [
            "ingest",
            *led,
            "--json",
            str(notes),
            str(packs),
            str(corpora / "verdict-core" / "demo-run"),
        ],
        lambda o: _ingest_line(_json(o)),
    )
    step(
        "record units",
        ["verdict", "record", *led, str(corpora / "units" / "demo_units.jsonl")],
        lambda o: f"{o.count('admitted')} units admitted from their oracle evidence",
    )
    if key.exists():
        key.unlink()
        key.with_name(key.name + ".pub").unlink(missing_ok=True)
    step(
        "keygen",
        ["keygen", "--out", str(key)],
        lambda o: f"Ed25519 key at {key} (outside the ledger)",
    )
    step("checkpoint", ["checkpoint", *led, "--key", str(key)], _checkpoint_line)
    out = step(
        "retrace",
        ["retrace", *led, "--json", "--constraints", str(narrowed)],
        lambda o: _retrace_line(_json(o)),
    )
    facts["replay_id"] = _json(out).get("replay_id")
    step(
        "reconcile",
        ["reconcile", *led, "--json", "--packs", str(packs), "--base", str(ROOT)],
        lambda o: _reconcile_line(_json(o)),
    )
    step("admissions", ["admissions", *led, "--json"], lambda o: _admissions_line(_json(o)))
    step("checkpoint", ["checkpoint", *led, "--key", str(key)], _checkpoint_line)
    step(
        "verify",
        ["verify", *led, "--deep", "--pub", str(key) + ".pub", "--json"],
        lambda o: _verify_line(_json(o)),
    )
    step(
        "receipt",
        ["receipt", "verify", *led, "--recompute", f"{facts['replay_id']}:completed"],
        lambda o: "the retrace receipt re-verifies and its outputs recompute",
    )
    step("report", ["report", *led, "--out", str(report_path)], lambda o: f"wrote {report_path}")
    click.echo(
        "\n" + _path_hint() + "Next, try:\n"
        f"  vledger log --ledger {ledger_dir} --type grade.replayed --json | head\n"
        f"  vledger sql --ledger {ledger_dir} \"select task_id, model, n, c, pass_at_k from pass_at_k where level = 'task' and basis = 'current' and k = 1\"\n"
        f"  vledger grade --ledger {ledger_dir} corpora/notes_duplicate_check/met/"
        "native_shared_domain_policy_demo_20260803_063010_trial0\n"
        f"  vledger prove --ledger {ledger_dir} 0\n"
        f"and open the report in a browser: {report_path.resolve().as_uri()}"
    )


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


def _checkpoint_line(text: str) -> str:
    """A C2SP checkpoint note: origin, tree size, base64 root, blank line, signatures."""
    lines = text.strip().splitlines()
    return (
        f"signed note over tree size {lines[1]}, root {lines[2][:12]}…"
        if len(lines) > 2
        else "signed"
    )


def _ingest_line(r: dict[str, Any]) -> str:
    def new(kind: str) -> Any:
        return (r.get(kind) or {}).get("new", "?")

    return (
        f"{new('events')} events appended: {new('trials')} recorded trials, "
        f"{new('packs')} task packs, {new('runs')} verdict-core run"
    )


def _retrace_line(r: dict[str, Any]) -> str:
    classes = sorted({f"{c['task_id']}: {c['class']}" for c in r.get("constraints", [])})
    return "; ".join([f"{status_counts(r.get('trials', []))} trials", *classes])


def _reconcile_line(r: dict[str, Any]) -> str:
    parts = [
        f"{e.get('criterion')} ({e.get('mode')}): {e.get('verdict')}, κ {fmt_number(e.get('kappa'))}, "
        f"{e.get('observations')} observations"
        for e in r.get("entries", [])
    ]
    return "; ".join(parts) or "no migration declared"


def _admissions_line(r: Any) -> str:
    rows = r.get("admissions", r) if isinstance(r, dict) else r
    grades = [row.get("effective_grade") for row in rows] if isinstance(rows, list) else []
    return f"{len(grades)} units, weakest first: {', '.join(map(str, grades))}"


def _verify_line(r: dict[str, Any]) -> str:
    state = "clean" if r.get("ok") else f"{len(r.get('problems', []))} problem(s)"
    return f"{r.get('events')} events, {r.get('checkpoints')} signed checkpoints: {state}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
