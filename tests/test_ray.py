"""The Ray engine (local mode, 2 CPUs) against the local engine: identical results for any
partitioning, bounded retries naming the segment, verified segments, driver-only appends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.data_paths import NARROWED, NOTES, PACKS, PACKS_BASE

ray = pytest.importorskip("ray", reason="the optional [ray] extra is not installed")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import ledger as ledger_api  # noqa: E402
from benchmarks.generate_corpus import generate  # noqa: E402
from ledger.app.ingest import ingest_into as ingest  # noqa: E402
from ledger.app.retrace import RetraceError, recompute_replay, retrace  # noqa: E402
from ledger.engines.ray_engine import RayEngine  # noqa: E402
from ledger.log.segments import load_manifest, segment_dir  # noqa: E402
from ledger.log.store import open_ledger  # noqa: E402
from replay.grading.retrace import retrace_trial  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# The fault injectors below run inside Ray workers: ship this module's code by value so
# the workers need not import the tests package.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A ledger holding a generated corpus (3 grades altered) and the notes corpus."""
    base = tmp_path_factory.mktemp("ray")
    generate(base / "gen", trials=36, seed=5, alter=3)
    with open_ledger(base / "L", create=True) as lg:
        ingest(lg, [str(base / "gen")])
        ingest(lg, [str(NOTES)])
    return base / "L"


def _copy(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    return dest


def _appended(lg, since: int) -> list[tuple[str, str, str, bytes]]:
    return [(e.stream, e.type, e.event_id, e.payload) for e in lg.read(from_seq=since)]


def _local_run(template: Path, dest: Path, **kw):
    with open_ledger(_copy(template, dest)) as lg:
        size = lg.size()
        res = retrace(ledger=lg, **kw)
        return res, _appended(lg, size)


@pytest.mark.parametrize(
    ("segment_rows", "task_rows"), [(None, None), (97, None), (11, None), (11, 120)]
)
def test_ray_equals_local_for_any_partitioning(ray_session, template, tmp_path, segment_rows, task_rows):
    local, local_events = _local_run(template, tmp_path / "local", workers=1)
    eng = RayEngine(workers=2, segment_rows=segment_rows, task_rows=task_rows)
    with open_ledger(_copy(template, tmp_path / "ray")) as lg:
        size = lg.size()
        res = retrace(ledger=lg, engine=eng)
        ray_events = _appended(lg, size)
        # the receipt a Ray run appended re-verifies by the local recomputation
        (done,) = list(lg.read(type="replay.completed"))
        assert recompute_replay(lg, done) == res.report["receipt"]["outputs_digest"]
        segs = load_manifest(lg.path).segments
        where = defaultdict(set)
        for s in segs:
            for stream in pq.read_table(segment_dir(lg.path) / s.file).column("stream").to_pylist():
                if stream.startswith("trial/"):
                    where[stream].add(s.file)
    assert res.report == local.report  # same receipt: checkpoint, config and outputs digests
    assert ray_events == local_events  # byte-identical grade.replayed / replay.completed
    assert sum(t["status"] == "disagreed" for t in res.report["trials"]) == 3
    assert all(len(files) == 1 for files in where.values())  # no trial spans two segments
    if segment_rows is not None:
        assert len(segs) > 1 and max(s.rows for s in segs) <= max(segment_rows, 200)
        assert eng.timings["tasks"] == (len(segs) if task_rows is None else len(eng_units(segs, task_rows)))


def eng_units(segs, task_rows):
    from ledger.engines.ray_engine import plan_units

    return plan_units(segs, task_rows)


def test_replays_of_sealed_trials_stay_whole_and_match_local(ray_session, template, tmp_path):
    """A second Ray replay after the first one's outputs were sealed: every trial stream
    still lies in one segment, and the result equals the local engine's on the same log."""
    with open_ledger(_copy(template, tmp_path / "ray")) as lg:
        first = retrace(ledger=lg, engine=RayEngine(workers=2, segment_rows=50))
        # the first replay's outputs (its own replay/ stream) are the only unsealed events
        assert {e.stream for e in lg.read(from_seq=lg.sealed_upto())} == {
            f"replay/{first.report['replay_id']}"
        }
        lg.seal(max_rows=50)
        local = retrace(ledger=lg, constraints_file=NARROWED, dry_run=True)  # local engine, same log
        second = retrace(ledger=lg, engine=RayEngine(workers=2, segment_rows=50), constraints_file=NARROWED)
        where = defaultdict(set)
        for s in load_manifest(lg.path).segments:
            for stream in pq.read_table(segment_dir(lg.path) / s.file).column("stream").to_pylist():
                where[stream].add(s.file)
    assert first.report["replay_id"] != second.report["replay_id"]
    assert all(len(f) == 1 for s, f in where.items() if s.startswith("trial/"))
    assert len(where[f"replay/{first.report['replay_id']}"]) > 1  # other streams may span
    assert {k: v for k, v in second.report.items() if k != "dry_run"} == {
        k: v for k, v in local.report.items() if k != "dry_run"
    }


class Faulty:
    """The projection, failing on one trial: once (raise or kill the worker) or always."""

    def __init__(self, log: Path, mode: str, target: str) -> None:
        self.log, self.mode, self.target = str(log), mode, target

    def __call__(self, events, params):
        if events[0].stream == self.target:
            with open(self.log, "a") as f:
                f.write("attempt\n")
            attempts = Path(self.log).read_text().count("attempt")
            if self.mode == "always" or attempts == 1:
                if self.mode == "crash_once":
                    os._exit(1)  # the worker process dies mid-task
                raise RuntimeError(f"injected failure on {self.target}")
        return retrace_trial(events, params)


class FaultyRay(RayEngine):
    def __init__(self, faulty: Faulty, **kw) -> None:
        super().__init__(**kw)
        self.faulty = faulty

    def map_trials(self, lg, select, fn, params, **kw):
        return super().map_trials(lg, select, self.faulty, params, **kw)


def _target(template: Path) -> str:
    with open_ledger(template) as lg:
        return sorted(lg.streams(prefix="trial/"))[7]


@pytest.mark.parametrize("mode", ["raise_once", "crash_once"])
def test_transient_failure_is_retried_and_the_result_is_unchanged(ray_session, template, tmp_path, mode):
    local, local_events = _local_run(template, tmp_path / "local")
    log = tmp_path / "attempts.log"
    eng = FaultyRay(Faulty(log, mode, _target(template)), workers=2, segment_rows=60, max_retries=2)
    with open_ledger(_copy(template, tmp_path / "ray")) as lg:
        size = lg.size()
        res = retrace(ledger=lg, engine=eng)
        events = _appended(lg, size)
    assert log.read_text().count("attempt") == 2  # failed once, succeeded on the retry
    assert res.report == local.report and events == local_events


def test_persistent_failure_names_the_segment_and_appends_nothing(ray_session, template, tmp_path):
    log = tmp_path / "attempts.log"
    target = _target(template)
    eng = FaultyRay(Faulty(log, "always", target), workers=2, segment_rows=60, max_retries=2)
    with open_ledger(_copy(template, tmp_path / "ray")) as lg:
        size = lg.size()
        with pytest.raises(RetraceError) as info:
            retrace(ledger=lg, engine=eng)
        assert lg.size() == size  # nothing appended (sealing appends no event)
        holder = next(
            s.file for s in load_manifest(lg.path).segments
            if target in pq.read_table(segment_dir(lg.path) / s.file).column("stream").to_pylist()
        )
    msg = str(info.value)
    assert f"segment {holder} failed after 3 attempt(s)" in msg
    assert f"injected failure on {target}" in msg and "nothing was appended" in msg
    assert log.read_text().count("attempt") == 3


def _seal_copy(template: Path, dest: Path, rows: int) -> list:
    with open_ledger(_copy(template, dest)) as lg:
        return lg.seal(max_rows=rows)


def test_a_corrupted_segment_fails_the_job_naming_it(ray_session, template, tmp_path):
    segs = _seal_copy(template, tmp_path / "L", 80)
    victim = segs[2]
    path = segment_dir(tmp_path / "L") / victim.file
    table = pq.read_table(path)
    payloads = table.column("payload").to_pylist()
    payloads[3] = payloads[3].replace(b'"', b"'", 1) if b'"' in payloads[3] else payloads[3] + b" "
    i = table.schema.get_field_index("payload")
    pq.write_table(table.set_column(i, table.schema.field(i), pa.array(payloads, pa.binary())), path)
    with open_ledger(tmp_path / "L") as lg:
        size = lg.size()
        with pytest.raises(RetraceError) as info:
            retrace(ledger=lg, engine=RayEngine(workers=2))
        assert lg.size() == size
    assert f"segment {victim.file} failed verification" in str(info.value)
    assert "Merkle root" in str(info.value)


def test_a_swapped_segment_fails_the_job_naming_it(ray_session, template, tmp_path):
    segs = _seal_copy(template, tmp_path / "L", 80)
    folder = segment_dir(tmp_path / "L")
    shutil.copyfile(folder / segs[0].file, folder / segs[1].file)
    with open_ledger(tmp_path / "L") as lg, pytest.raises(RetraceError) as info:
        retrace(ledger=lg, engine=RayEngine(workers=2))
    assert f"segment {segs[1].file} failed verification" in str(info.value)


def test_dry_run_refuses_to_seal_and_names_the_way_out(template, tmp_path):
    with open_ledger(_copy(template, tmp_path / "L")) as lg, pytest.raises(RetraceError) as info:
        retrace(ledger=lg, engine=RayEngine(workers=2, seal=False), dry_run=True)
    assert "vledger seal" in str(info.value)
    assert load_manifest(tmp_path / "L").segments == []


def test_cli_retrace_engine_ray(ray_session, template, tmp_path):
    """The CLI path (joins the module's running Ray), JSON identical to --engine local."""
    import json

    from click.testing import CliRunner

    from ledger.cli import main

    runner = CliRunner()
    a, b = _copy(template, tmp_path / "a"), _copy(template, tmp_path / "b")
    out_local = runner.invoke(main, ["retrace", "--ledger", str(a), "--json"])
    out_ray = runner.invoke(
        main, ["retrace", "--ledger", str(b), "--json", "--engine", "ray", "--workers", "2",
               "--segment-rows", "64"],
    )
    assert out_local.exit_code == out_ray.exit_code, out_ray.output  # 1: two trials not re-checkable
    assert json.loads(out_ray.stdout) == json.loads(out_local.stdout)
    assert len(load_manifest(b).segments) > 1


def test_core_cli_import_does_not_import_ray():
    code = (
        "import sys, ledger.cli, ledger.engines, ledger.app.retrace, ledger.app.ingest; "
        "print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "False"


def _log_rows(path: Path) -> tuple[list[tuple], str]:
    with open_ledger(path) as lg:
        rows = [(e.seq, e.stream, e.stream_version, e.event_id, e.type, e.payload, e.leaf_hash)
                for e in lg.read()]  # fmt: skip
        return rows, lg.root(lg.size()).hex()


def test_ingest_engine_ray_appends_the_local_log(ray_session, tmp_path, monkeypatch):
    """Ray tasks read and bound the bundles, the driver appends: the log (every event, leaf
    and the root) is the one a local one-worker ingest writes, bad inputs skipped alike."""
    import json

    from click.testing import CliRunner

    from ledger.app import ingest_read
    from ledger.cli import main

    gen = tmp_path / "gen"
    generate(gen, trials=ingest_read.POOL_FROM + 8, seed=6)
    bad = sorted(p for p in gen.iterdir() if p.is_dir())[40]
    (bad / "grade.yaml").write_text("binary_pass: true\nscore: [not, a, number]\n")
    calls = []
    real = RayEngine.map_inputs
    monkeypatch.setattr(RayEngine, "map_inputs", lambda self, fn, items: calls.append(
        self.workers) or real(self, fn, items))  # fmt: skip
    local = ledger_api.ingest(gen, ledger=tmp_path / "local", workers=1, skip_bad=True)
    out = CliRunner().invoke(main, ["ingest", str(gen), "--ledger", str(tmp_path / "ray"),
                                    "--engine", "ray", "--workers", "2", "--skip-bad", "--json"])
    assert out.exit_code == 0, out.output
    assert calls == [2]  # the reading went to Ray (the running instance, joined)
    assert json.loads(out.stdout) == local.to_json()
    assert local.skipped and local.skipped[0]["source"].endswith(bad.name)
    assert _log_rows(tmp_path / "ray") == _log_rows(tmp_path / "local")
    with pytest.raises(ledger_api.LedgerError) as info:  # a bad input aborts as locally
        ledger_api.ingest(gen, ledger=tmp_path / "strict", engine="ray", workers=2)
    assert bad.name in str(info.value) and not (tmp_path / "strict").exists()


def test_reconcile_engine_ray_matches_local(ray_session, tmp_path):
    """The packs' migrations over the shipped notes corpus: the whole JSON document (verdicts,
    kappa, receipt digests and checkpoint) is the same with the candidates computed on Ray."""
    import json

    from click.testing import CliRunner

    from ledger.app.reconcile import ReconcileRequest as Invocation
    from ledger.cli import main
    from ledger.engines.reconcile_ray import engine_evaluator
    from ledger.log.store import init_ledger

    packs = PACKS
    docs = {}
    for engine in ("local", "ray"):
        init_ledger(tmp_path / engine).close()
        r = CliRunner().invoke(main, ["reconcile", "--packs", str(packs), "--base", str(PACKS_BASE),
                                      "--json", "--ledger", str(tmp_path / engine),
                                      "--engine", engine, "--workers", "2"])
        assert r.exit_code in (0, 1), r.output
        docs[engine] = json.loads(r.stdout)
    assert docs["ray"] == docs["local"]
    assert load_manifest(tmp_path / "ray").segments and not load_manifest(tmp_path / "local").segments
    with open_ledger(tmp_path / "ray") as lg:  # the candidates really came from the tasks
        ev = engine_evaluator(Invocation(packs=[packs], base=PACKS_BASE), lg, RayEngine(workers=2))
        assert len(ev.computed) == 17


def test_reconcile_engine_ray_ingests_each_corpus_once(ray_session, tmp_path, monkeypatch):
    """The engine ingests the corpora before its tasks run; the read that follows uses what
    that ingest planned instead of keying every bundle of the corpus again."""
    from ledger.app import ingest as ingest_module
    from ledger.log.store import init_ledger

    calls = []
    real = ingest_module.ingest_into

    def spy(*args, **kwargs):
        calls.append(tuple(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest_module, "ingest_into", spy)
    init_ledger(tmp_path / "l").close()
    res = ledger_api.reconcile(
        packs=[PACKS], base=PACKS_BASE, ledger=tmp_path / "l", engine="ray", workers=2
    )
    assert len(calls) == 1  # one corpus, ingested once
    assert res.document["entries"] and res.document["receipt"]


def test_reconcile_from_the_ledger_on_ray_ingests_nothing_and_matches_local(
    ray_session, tmp_path, monkeypatch
):
    """--from-ledger on Ray: the corpus is read as the ledger holds it (no ingest), the
    candidates are computed by the tasks, and the document is the local one."""
    from ledger.app import ingest as ingest_module
    from ledger.log.store import init_ledger

    init_ledger(tmp_path / "l").close()
    ledger_api.ingest(PACKS_BASE / "corpora" / "notes_duplicate_check", ledger=tmp_path / "l")
    calls = []
    monkeypatch.setattr(ingest_module, "ingest_into", lambda *a, **k: calls.append(a))
    docs = {}
    for engine in ("local", "ray"):
        res = ledger_api.reconcile(packs=[PACKS], base=PACKS_BASE, ledger=tmp_path / "l",
                                   engine=engine, workers=2, from_ledger=True, full=True)  # fmt: skip
        docs[engine] = {k: v for k, v in res.document.items() if k != "receipt"}
    assert calls == [] and docs["ray"] == docs["local"] and docs["local"]["entries"]


def test_source_restricts_the_ray_job_to_the_source_streams(ray_session, template, tmp_path):
    """--source on a ledger holding other trials: only the source's 17 trials, as local."""
    import json

    from click.testing import CliRunner

    from ledger.cli import main

    out = {}
    for engine in ("local", "ray"):
        r = CliRunner().invoke(main, ["retrace", "--ledger", str(_copy(template, tmp_path / engine)),
                                      "--source", str(NOTES), "--json", "--engine", engine])
        assert r.exit_code == 0, r.output
        out[engine] = json.loads(r.stdout)
    assert len(out["ray"]["trials"]) == 17
    assert out["ray"] == out["local"]
