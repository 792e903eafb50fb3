"""Ingest reading in worker processes: the log is the same event for event, seq for seq,
leaf for leaf, for any number of workers, and bad, skipped, changed, re-ingested and
interrupted inputs behave with several workers exactly as with one.

Every corpus here holds more inputs than ``ingest_read.POOL_FROM``, so ``workers > 1``
really reads in a pool (a spy on ``pool_map`` checks that it ran)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ledger
from benchmarks.generate_corpus import generate
from ledger.app import ingest_read
from ledger.app.ingest import IngestError
from ledger.app.ingest_known import INDEX_NAME
from ledger.engines import local
from ledger.log.store import open_ledger
from tests.store_helpers import stored_log

ROOT = Path(__file__).resolve().parents[1]
PACKS = ROOT / "corpora" / "packs"
VCORE = ROOT / "corpora" / "verdict-core"
TRIALS = ingest_read.POOL_FROM + 12


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "gen"
    generate(out, trials=TRIALS, seed=4)
    return out


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many worker processes each pool the ingest started had."""
    started: list[int] = []
    real = local.pool_map

    def spy(fn: Any, items: Any, workers: int) -> Any:
        started.append(workers)
        return real(fn, items, workers)

    monkeypatch.setattr(local, "pool_map", spy)
    return started


def _copy(corpus: Path, dest: Path) -> Path:
    shutil.copytree(corpus, dest)
    return dest


def _bundles(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.iterdir() if p.is_dir())


def test_the_log_is_identical_for_any_number_of_workers(
    corpus: Path, tmp_path: Path, pools: list[int]
) -> None:
    inputs = [corpus, PACKS, VCORE]
    logs = {}
    for n in (1, 2, 4):
        result = ledger.ingest(*inputs, ledger=tmp_path / f"w{n}", workers=n)
        assert result.trials_new == TRIALS and result.packs_new > 0 and result.runs_new > 0
        logs[n] = stored_log(tmp_path / f"w{n}")
    assert pools == [2, 4]  # one worker reads in this process; more read in a pool
    rows, root = logs[1]
    assert len(rows) > TRIALS * 10
    assert logs[2] == logs[1] and logs[4] == logs[1], "the log depends on the worker count"
    assert len({logs[n][1] for n in logs}) == 1 and root


def _break(corpus: Path) -> dict[str, Path]:
    """Three bad bundles spread through the corpus: bad YAML, a wrong shape, too large."""
    bundles = _bundles(corpus)
    bad = {"yaml": bundles[7], "shape": bundles[60], "large": bundles[-3]}
    (bad["yaml"] / "grade.yaml").write_text("binary_pass: [unclosed\n")
    (bad["shape"] / "grade.yaml").write_text("binary_pass: true\nscore: [not, a, number]\n")
    (bad["large"] / "metrics.yaml").write_text("padding: '" + "x" * 300_000 + "'\n")
    return bad


def test_a_bad_input_aborts_with_the_same_error_for_any_workers(
    corpus: Path, tmp_path: Path, pools: list[int]
) -> None:
    broken = _copy(corpus, tmp_path / "broken")
    bad = _break(broken)
    errors = []
    for n in (1, 2):
        target = tmp_path / f"lg{n}"
        with pytest.raises(IngestError) as info:
            ledger.ingest(broken, ledger=target, workers=n, max_file_bytes=200_000)
        assert not target.exists()  # the ledger the call created is removed again
        errors.append((info.value.kind, info.value.source, str(info.value)))
    assert pools == [2]
    assert errors[0] == errors[1]
    assert errors[0][1].endswith(bad["yaml"].name)  # the first bad input in input order


def test_skip_bad_records_the_same_skips_and_log_for_any_workers(
    corpus: Path, tmp_path: Path, pools: list[int]
) -> None:
    broken = _copy(corpus, tmp_path / "broken")
    bad = _break(broken)
    results, logs = [], []
    for n in (1, 2, 4):
        target = tmp_path / f"lg{n}"
        res = ledger.ingest(broken, ledger=target, workers=n, skip_bad=True, max_file_bytes=200_000)
        results.append(res.to_json())
        logs.append(stored_log(target))
    assert pools == [2, 4]
    assert results[0] == results[1] == results[2]
    assert logs[0] == logs[1] == logs[2]
    skipped = results[0]["skipped"]
    assert [Path(s["source"]).name for s in skipped] == [
        bad["yaml"].name, bad["shape"].name, bad["large"].name
    ]  # fmt: skip
    assert "grade.yaml" in skipped[1]["reason"] and "200000-byte limit" in skipped[2]["reason"]
    with open_ledger(tmp_path / "lg2") as lg:  # the skip events carry the file and key
        payloads = [e.data() for e in lg.read(stream="ingest/skipped")]
    assert [p["key"] for p in payloads if "key" in p] == ["score"]
    assert all(p["file"].endswith(".yaml") for p in payloads)


def test_reingest_and_a_changed_input_behave_as_with_one_worker(
    corpus: Path, tmp_path: Path, pools: list[int]
) -> None:
    src = _copy(corpus, tmp_path / "src")
    lg_dir = tmp_path / "lg"
    # without the index of held bundles, every ingest below reads all of them (in the pool)
    index = lg_dir / "projections" / INDEX_NAME
    first = ledger.ingest(src, ledger=lg_dir, workers=2)
    index.unlink()
    again = ledger.ingest(src, ledger=lg_dir, workers=2)
    assert (again.events_new, again.trials_present) == (0, TRIALS)
    assert again.events_present == first.events_new
    changed = _bundles(src)[90] / "trajectory.yaml"
    changed.write_text(changed.read_text().replace("end_ts: '2026", "end_ts: '2027", 1))
    size = len(stored_log(lg_dir)[0])
    messages = []
    for n in (1, 2):
        index.unlink(missing_ok=True)
        with pytest.raises(IngestError) as info:
            ledger.ingest(src, ledger=lg_dir, workers=n)
        messages.append((info.value.kind, str(info.value)))
    assert messages[0] == messages[1] and messages[0][0] == "changed"
    assert len(stored_log(lg_dir)[0]) == size
    index.unlink(missing_ok=True)
    skipped = ledger.ingest(src, ledger=lg_dir, workers=2, skip_bad=True)
    assert len(skipped.skipped) == 1 and skipped.events_new == 0
    assert skipped.first_seq == skipped.last_seq == size  # the skip event alone
    assert pools == [2, 2, 2, 2]


_KILLED = """
import sys
from ledger.app import ingest_spool
ingest_spool.BATCH_BYTES = 1 << 14  # many commits, so a kill can land between them
from ledger.cli import main
sys.argv = ["vledger", *sys.argv[1:]]
main()
"""


def _run_ingest(src: Path, lg_dir: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", _KILLED, "ingest", str(src), "--ledger", str(lg_dir),
         "--workers", "2"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip


def test_a_killed_parallel_ingest_leaves_whole_streams_and_a_rerun_completes(
    corpus: Path, tmp_path: Path
) -> None:
    reference = tmp_path / "reference"
    ledger.ingest(corpus, ledger=reference, workers=1)
    want, root = stored_log(reference)
    by_stream: dict[str, list[tuple]] = {}
    for row in want:
        by_stream.setdefault(row[1], []).append(row[2:])
    start = time.perf_counter()  # how long a whole run takes here, to kill inside one
    assert _run_ingest(corpus, tmp_path / "timed").wait(timeout=300) == 0
    whole = time.perf_counter() - start
    rng = random.Random(33)
    lg_dir = tmp_path / "lg"
    ledger.init(lg_dir).close()
    for low, high in ((0.3, 0.6), (0.6, 0.9), (0.8, 1.0)):  # reading, then appending
        proc = _run_ingest(corpus, lg_dir)
        time.sleep(whole * rng.uniform(low, high))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        got, _ = stored_log(lg_dir)
        assert [r[0] for r in got] == list(range(len(got)))
        held: dict[str, list[tuple]] = {}
        for row in got:
            held.setdefault(row[1], []).append(row[2:])
        for stream, events in held.items():  # every stream there is whole, as planned
            assert events == by_stream[stream], f"{stream} is half-written"
        assert got == want[: len(got)]  # a prefix of the one plan, in its order
    proc = _run_ingest(corpus, lg_dir)
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode() if proc.stderr else ""
    assert stored_log(lg_dir) == (want, root)  # the rest went in, once, in the plan's order


def test_retrace_source_reads_in_workers_with_the_same_report_and_log(
    corpus: Path, tmp_path: Path, pools: list[int]
) -> None:
    runs = []
    for n in (1, 2):
        lg_dir = tmp_path / f"lg{n}"
        result = ledger.retrace(ledger=lg_dir, source=corpus, read_workers=n)
        runs.append((result.to_json(), stored_log(lg_dir)))
    assert pools == [2]
    assert runs[0] == runs[1]
    assert runs[0][0]["evidence"] and len(runs[0][0]["trials"]) == TRIALS


def test_curate_reads_run_directories_in_workers_with_the_same_corpus(
    corpus: Path, tmp_path: Path, pools: list[int]
) -> None:
    from benchmarks.generate_corpus import CRITERION

    seen = []
    for n in (1, 2):
        into = tmp_path / f"c{n}"
        res = ledger.curate(
            criterion=CRITERION, into=into, sources=[corpus], workers=n, ledger=tmp_path / f"l{n}"
        ).to_json()
        files = {
            p.relative_to(into).as_posix(): p.read_bytes()
            for p in sorted(into.rglob("*"))
            if p.is_file() and p.name != "corpus.yaml"  # it carries the curation time
        }
        seen.append((res["admitted"], res["rejected"], files))
    assert pools == [2]
    assert seen[0] == seen[1] and seen[0][0] and seen[0][2]
    broken = _copy(corpus, tmp_path / "broken")
    (_bundles(broken)[100] / "trajectory.yaml").write_text("task_id: [unclosed\n")
    errors = []
    for n in (1, 2):
        with pytest.raises(ledger.LedgerError) as info:
            ledger.curate(criterion=CRITERION, into=tmp_path / f"b{n}", sources=[broken],
                          workers=n, ledger=tmp_path / f"bl{n}")  # fmt: skip
        errors.append(str(info.value))
    assert errors[0] == errors[1] and _bundles(broken)[100].name in errors[0]


def test_reconcile_reads_its_corpus_in_workers_with_the_same_verdict_and_log(
    corpus: Path, tmp_path: Path, pools: list[int]
) -> None:
    """reconcile ingests the corpora it reads as ``vledger ingest`` does: ``workers`` reading
    processes (default: the cores available), the same document and log for any number."""
    from benchmarks.reconcile import write_packs

    base = tmp_path / "base"
    _copy(corpus, base / "corpus")
    write_packs(base, base / "corpus")
    runs = []
    for n in (1, 2):
        lg_dir = tmp_path / f"lg{n}"
        with open_ledger(lg_dir, create=True):
            pass
        result = ledger.reconcile(packs=[base / "packs"], base=base, ledger=lg_dir, workers=n)
        document = {k: v for k, v in result.to_json().items() if k != "receipt"}
        rows, _ = stored_log(lg_dir)
        # the receipt, last, names the run's time; every event before it is the ingest's
        assert rows[-1][4] == "reconcile.completed"
        with open_ledger(lg_dir) as lg:
            root = lg.root(len(rows) - 1).hex()
        runs.append((document, rows[:-1], root, result.to_json()["receipt"]["checkpoint"]))
    assert pools == [2]  # one worker reads in this process
    assert runs[0] == runs[1]
    assert runs[0][0]["entries"] and len(runs[0][1]) > TRIALS * 10


def _dies_on_five(x: int) -> int:
    if x == 5:
        os._exit(3)  # a worker killed mid-read (the OOM killer, a signal)
    return x


def test_a_worker_that_dies_is_a_named_error_not_a_traceback() -> None:
    from ledger.engines.base import EngineError
    from ledger.engines.ordered import pool_map

    assert list(pool_map(_dies_on_five, [1, 2, 3], 2)) == [1, 2, 3]
    with pytest.raises(EngineError, match="a worker process died while reading"):
        list(pool_map(_dies_on_five, range(10), 2))


def _big_result(job: tuple[str, int]) -> bytes:
    """A worker's result larger than a pipe holds; the worker's pid left in ``job[0]``."""
    Path(job[0], str(os.getpid())).touch()
    return b"x" * (1 << 20)


_STALLED_DRIVER = """
import sys, time
from ledger.engines.ordered import pool_map
from tests.test_ingest_parallel import _big_result
for i, _ in enumerate(pool_map(_big_result, [(sys.argv[1], n) for n in range(64)], 2)):
    print("reading", flush=True)
    time.sleep(600)  # stops consuming: the workers fill the result pipe and block
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_workers_exit_when_their_driver_is_killed(tmp_path: Path) -> None:
    """A driver killed outright (SIGKILL: the OOM killer) leaves no worker behind, though
    each was blocked writing a result nobody will read (``ordered.exit_with``)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _STALLED_DRIVER, str(tmp_path)], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == b"reading\n"
    deadline = time.monotonic() + 30
    while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [int(p.name) for p in tmp_path.iterdir()]
    assert len(pids) == 2 and not any(map(_gone, pids))  # both workers, alive
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 20
    while not all(map(_gone, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(map(_gone, pids)), f"workers {pids} outlived their driver"


@given(
    items=st.lists(st.integers(), max_size=60),
    window=st.integers(min_value=1, max_value=8),
    order=st.randoms(use_true_random=False),
)
def test_in_order_yields_input_order_with_a_bounded_window(items, window, order) -> None:
    """Whatever order the submitted work completes in, results come back in input order,
    and never more than ``window`` items are submitted and not yet consumed."""
    from ledger.engines.ordered import in_order

    pending: list[list[Any]] = []  # [item, done?] per submission, finished at random
    high = [0]

    def submit(item: int) -> list[Any]:
        job = [item, False]
        pending.append(job)
        high[0] = max(high[0], sum(1 for j in pending if j is not None))
        return job

    def result(job: list[Any]) -> int:
        while not job[1]:  # finish random submitted jobs until this one is done
            open_jobs = [j for j in pending if j is not None and not j[1]]
            order.choice(open_jobs)[1] = True
        pending[pending.index(job)] = None
        return job[0] * 2

    assert list(in_order(submit, result, items, window)) == [x * 2 for x in items]
    assert high[0] <= window


@given(n=st.integers(min_value=0, max_value=5000), workers=st.integers(min_value=1, max_value=16))
def test_worker_calls_cover_the_tasks_in_order_and_shrink_toward_the_end(n, workers) -> None:
    """The calls the reading is cut into are the tasks, in order (the log's order rests
    on it), at most LARGEST_CHUNK each (CHUNK read in-process), never growing, and the
    last is short: the workers finish together."""
    tasks = list(range(n))
    calls = [list(c) for c in ingest_read.chunks(tasks, workers)]  # type: ignore[arg-type]
    assert [t for c in calls for t in c] == tasks
    sizes = [len(c) for c in calls]
    largest = ingest_read.LARGEST_CHUNK if workers > 1 else ingest_read.CHUNK
    assert all(0 < s <= largest for s in sizes)
    assert sizes == sorted(sizes, reverse=True)
    assert not sizes or sizes[-1] <= ingest_read.CHUNK // 4


NARROWED = ROOT / "corpora" / "packs" / "notes_duplicate_check_narrowed" / "grading.yaml"


@pytest.mark.parametrize(
    "options", [{}, {"task": "orders_refund_verified"}, {"constraints_file": NARROWED}]
)
def test_retrace_source_projecting_as_it_reads_equals_reading_back_from_the_log(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict
) -> None:
    """Trials the source adds are projected in the reading workers; trials already in
    the log are read back from it. Report, receipt and appended events equal a retrace
    that reads every trial back from the log (an engine object turns the overlap off)."""
    from ledger.app import retrace_source
    from ledger.engines.local import LocalEngine

    settled: list[str] = []
    real_add = retrace_source.SourceOutcomes.add
    monkeypatch.setattr(retrace_source.SourceOutcomes, "add", lambda self, s, v: (
        settled.append(s) if v is not None else None, real_add(self, s, v))[1])  # fmt: skip
    early = _bundles(corpus)[:5]
    runs = []
    for name, engine in (("overlapped", "local"), ("from_log", LocalEngine(workers=1))):
        lg_dir = tmp_path / name
        ledger.ingest(*early, ledger=lg_dir, workers=1)  # already present: read back
        result = ledger.retrace(
            ledger=lg_dir, source=corpus, engine=engine, read_workers=2, **options
        )
        runs.append((result.to_json(), stored_log(lg_dir)))
    assert len(settled) == TRIALS - len(early)  # all but the five, in the overlapped run only
    assert runs[0] == runs[1]
    assert runs[0][0]["trials"]


def test_a_script_without_a_main_guard_ingests_with_workers(corpus: Path, tmp_path: Path) -> None:
    """Worker processes never run the caller's ``__main__`` again: a script calling
    ``ledger.ingest`` at top level, with no ``if __name__ == "__main__":``, works."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import ledger\n"
        f"result = ledger.ingest({str(corpus)!r}, ledger={str(tmp_path / 'lg')!r}, workers=2)\n"
        "print('trials', result.trials_new)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"trials {TRIALS}"
