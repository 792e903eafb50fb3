"""What a small command loads (start-up, benchmarks/startup.py). Over the 17 shipped trials, retrace and
reconcile stay on the store's plain-list paths (ledger.log.rows) and import only the
payload models of the types they append: no pyarrow, numpy or signing stack, and no YAML
parser or backtracking regex engine for a retrace that reads no file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ledger

ROOT = Path(__file__).resolve().parents[1]
NEVER = ("pyarrow", "numpy", "cryptography", "schemas.gvc", "schemas.verdict_events",
         "schemas.curation")  # fmt: skip


@pytest.fixture(scope="module")
def small_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("small") / "ledger"
    ledger.init(home)
    ledger.ingest(
        [ROOT / "corpora" / "notes_duplicate_check", ROOT / "corpora" / "packs"], ledger=home
    )
    return home


def loaded(call: str, home: Path, watch: tuple[str, ...]) -> list[str]:
    """The watched modules a fresh interpreter holds after ``call`` (``lg`` is the path)."""
    code = (
        "import sys, ledger\n"
        f"lg = {str(home)!r}\n"
        f"{call}\n"
        f"print('LOADED:' + ' '.join(sorted(m for m in sys.modules if m.startswith({watch!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return out.stdout.splitlines()[-1].removeprefix("LOADED:").split()


def test_a_small_retrace_loads_no_arrow_yaml_regex_or_foreign_models(small_ledger: Path) -> None:
    """Nor the trace-check evaluator: none of the 17 trials records a trace_checks block."""
    call = "assert ledger.retrace(ledger=lg).appended == 18"
    evaluator = ("replay.trace_checks.evaluate", "replay.trace_checks.matching")
    assert loaded(call, small_ledger, (*NEVER, "yaml", "regex", *evaluator)) == []


def test_a_small_reconcile_loads_no_arrow_or_foreign_models(small_ledger: Path) -> None:
    call = f"assert ledger.reconcile(ledger=lg, packs=[{str(ROOT / 'corpora' / 'packs')!r}])"
    assert loaded(call, small_ledger, NEVER) == []


def test_a_large_append_takes_the_arrow_path() -> None:
    """The other side of the split: from ARROW_FROM_ROWS events, Arrow does the insert."""
    code = (
        "import sys, tempfile\n"
        "from ledger.log.rows import ARROW_FROM_ROWS\n"
        "from ledger.log.store import init_ledger\n"
        "from schemas.envelope import NewEvent\n"
        "with init_ledger(tempfile.mkdtemp() + '/l') as lg:\n"
        "    lg.append([NewEvent('run/a', 'ext.x', {'i': i}) for i in range(ARROW_FROM_ROWS - 1)])\n"
        "    before = 'pyarrow' in sys.modules\n"
        "    lg.append([NewEvent('run/b', 'ext.x', {'i': i}) for i in range(ARROW_FROM_ROWS)])\n"
        "    print(before, 'pyarrow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_a_small_command_never_stops_for_the_cyclic_collector(small_ledger: Path) -> None:
    """Start-up allocates ~100,000 long-lived objects and no cycles: at the default gen-0
    threshold the collector ran ~75 times during a 17-trial retrace (11-13 ms, measured).
    The command line collects every ledger.cli.GC_EVERY allocations, so none runs once it
    is loaded; the Python API leaves the caller's thresholds as they were."""
    lg = str(small_ledger)
    api = (
        "import gc, ledger\n"
        "default = gc.get_threshold()\n"
        f"assert len(ledger.retrace(ledger={lg!r}, dry_run=True).report['trials']) == 17\n"
        "print(gc.get_threshold() == default)"
    )
    cli = (
        "import gc\n"
        "from ledger.cli import main\n"
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(info) if phase == 'start' else None)\n"
        "try:\n"
        f"    main(['retrace', '--ledger', {lg!r}, '--dry-run'])\n"
        "finally:\n"
        "    print('COLLECTIONS:', len(runs))"
    )
    out = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
        for code in (api, cli)
    ]
    assert [o.stdout.splitlines()[-1] for o in out] == ["True", "COLLECTIONS: 0"], out


def test_the_command_line_spares_its_exit_the_final_collections() -> None:
    """Tearing the interpreter down ran full collections over every object start-up built:
    35-45 ms of a small command (measured). ledger.cli freezes them at exit, after every
    other exit handler; a handler registered before it runs after it and sees them frozen.
    The Python API leaves the caller's exit alone."""
    probe = "import atexit, gc; atexit.register(lambda: print('FROZEN', gc.get_freeze_count() > 0))"
    runs = {
        name: subprocess.run(
            [sys.executable, "-c", f"{probe}\n{body}"], capture_output=True, text=True, cwd=ROOT
        ).stdout.split()
        for name, body in {"cli": "import ledger.cli", "api": "import ledger; ledger.events"}.items()
    }
    assert runs == {"cli": ["FROZEN", "True"], "api": ["FROZEN", "False"]}
