"""Reconcile catches up: ingest does not parse a bundle the ledger holds byte for byte, and
a reconciliation carries forward the observations of trials unchanged since an earlier one.

Every comparison is between two runs over the same log and the same files: the run that
extends, and a ``full=True`` run straight after it (the extension appends only its
``reconcile.completed``, which no trial stream holds)."""

from __future__ import annotations

import copy
import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ledger.app.ingest_inputs as ingest_inputs
from ledger.app.ingest import ingest_into
from ledger.app.ingest_known import INDEX_NAME
from ledger.app.receipts import verify_ledger_receipt
from ledger.app.reconcile import reconcile
from ledger.app.reconcile_kept import MAGIC, KeptBody, KeptWriter, read_records
from ledger.cli import main
from ledger.log.store import open_ledger
from schemas.envelope import NewEvent

ROOT = Path(__file__).resolve().parents[1]
NOTES = Path("corpora") / "notes_duplicate_check"
PACK = Path("corpora") / "packs" / "notes_duplicate_check_narrowed"


def workspace(tmp: Path) -> Path:
    """A copy of the notes corpus and the packs (the packs name it relative to the copy)."""
    for part in (NOTES, Path("corpora") / "packs"):
        shutil.copytree(ROOT / part, tmp / part)
    with open_ledger(tmp / "lg", create=True):
        pass
    return tmp


def bundles(base: Path) -> list[Path]:
    return sorted(p.parent for p in (base / NOTES).rglob("trajectory.yaml"))


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every bundle the importer parses (fewer than 128 inputs are read in this process)."""
    seen: list[Path] = []
    real = ingest_inputs.read_bundle

    def counting(path: Path, *a: Any, **kw: Any) -> Any:
        seen.append(path)
        return real(path, *a, **kw)

    monkeypatch.setattr(ingest_inputs, "read_bundle", counting)
    return seen


# ------------------------------------------------------------------ ingest


def test_a_re_ingest_parses_only_the_bundles_that_changed(tmp_path: Path, parses: list) -> None:
    base = workspace(tmp_path)
    corpus = str(base / NOTES)
    with open_ledger(base / "lg") as lg:
        first = ingest_into(lg, [corpus])
        assert len(parses) == 17
        parses.clear()
        again = ingest_into(lg, [corpus])
        assert parses == []  # every bundle held byte for byte: none parsed
        assert (again.trials_new, again.trials_present) == (0, 17)
        assert again.events_present == first.events_new
        assert again.trial_streams == first.trial_streams
        # the same bytes, written again (a new mtime): hashed, still not parsed
        grade = bundles(base)[0] / "grade.yaml"
        grade.write_bytes(grade.read_bytes())
        # a re-scored bundle is read, and refused as a change as before
        rescored = bundles(base)[1] / "grade.yaml"
        text = rescored.read_text()
        rescored.write_text(text.replace("justification: '", "justification: 'Re-scored. ", 1))
        # bytes that differ but plan the same events: read once, then remembered
        comment = bundles(base)[2] / "task.yaml"
        comment.write_text(comment.read_text() + "\n# saved again\n")
        parses.clear()
        changed = ingest_into(lg, [corpus], skip_bad=True)
        assert sorted(parses) == sorted(p.parent for p in (rescored, comment))
        assert [s["kind"] for s in changed.skipped] == ["bundle"]
        assert "changed since it was ingested" in changed.skipped[0]["reason"]
        assert changed.trials_present == 16
        parses.clear()
        ingest_into(lg, [corpus], skip_bad=True)
        assert parses == [rescored.parent]  # the refused one is never remembered


def test_the_index_is_used_only_by_the_log_it_names(tmp_path: Path, parses: list) -> None:
    base = workspace(tmp_path)
    corpus = str(base / NOTES)
    with open_ledger(base / "lg") as lg:
        ingest_into(lg, [corpus])
    other = base / "other"
    with open_ledger(other, create=True) as lg:
        ingest_into(lg, [str(base / NOTES / "met")], NOTES.name)
    # the first ledger's index, copied beside another log, is not that log's: all parsed
    shutil.copy(base / "lg" / "projections" / INDEX_NAME, other / "projections" / INDEX_NAME)
    parses.clear()
    with open_ledger(other) as lg:
        got = ingest_into(lg, [corpus])
    assert len(parses) == 17 and got.trials_new == 5
    # a stream appended to since the index was written is read again
    with open_ledger(base / "lg") as lg:
        stream = ingest_into(lg, [corpus]).trial_streams[0]
        rescore(lg, stream)
        parses.clear()
        got = ingest_into(lg, [corpus], skip_bad=True)
    assert len(parses) == 1 and got.trials_present == 16 and len(got.skipped) == 1
    # deleting it costs one ingest that parses everything, with the same result
    (base / "lg" / "projections" / INDEX_NAME).unlink()
    parses.clear()
    with open_ledger(base / "lg") as lg:
        again = ingest_into(lg, [corpus], skip_bad=True)  # the skip is recorded once
    assert (again.first_seq, again.last_seq) == (None, None)
    assert {**again.to_json(), "first_seq": 0, "last_seq": 0} == {
        **got.to_json(),
        "first_seq": 0,
        "last_seq": 0,
    }
    assert len(parses) == 17


def rescore(lg: Any, stream: str) -> None:
    """A later grade.recorded on the trial's stream: not the bundle as it is on disk."""
    grade = next(e for e in lg.read(stream=stream) if e.type == "grade.recorded").data()
    grade["grade"] = {**grade["grade"], "score": 0.125}
    lg.append([NewEvent(stream, "grade.recorded", grade, f"{stream}:rescored:{lg.size()}")])


# ------------------------------------------------------------------ reconcile


def comparable(result: Any) -> str:
    """The --json document without its receipt (an extension's names what it extended)."""
    return json.dumps({k: v for k, v in result.document.items() if k != "receipt"}, default=list)


def extend_then_full(base: Path) -> tuple[Any, Any]:
    """Reconcile as it comes (extending when it can), then in full over the same log."""
    kw: dict[str, Any] = {"packs": [base / "corpora" / "packs"], "base": base,
                          "ledger": base / "lg"}  # fmt: skip
    got = reconcile(**kw)
    full = reconcile(**kw, full=True)
    assert comparable(got) == comparable(full)  # byte for byte
    rc, rc_full = got.document["receipt"], full.document["receipt"]
    assert rc["outputs_digest"] == rc_full["outputs_digest"]
    assert rc["inputs_digest"] == rc_full["inputs_digest"]
    assert rc["config_digest"] == rc_full["config_digest"]
    assert "extends" not in rc_full
    return got, full


def kept_lines(base: Path) -> dict[str, bytes]:
    """The records of the (one) kept reconcile file, by trial, as written."""
    (path,) = (base / "lg" / "projections").glob("reconcile-*.results")
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[-8:])
    lines = data[len(MAGIC) : len(data) - 8 - n].split(b"\n")[:-1]
    return {json.loads(line)["trial"]: line for line in lines if line.startswith(b'{"source"')}


@pytest.mark.parametrize("spill", [False, True])
def test_an_extension_keeps_each_carried_trials_line_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spill: bool
) -> None:
    """The file an extension keeps holds each carried trial's line as the file it extended
    held it (the part numbers they name still hold), and the trials it read anew after
    them (``spill``: held back in a file beside it, not in memory); read back, its records
    are those a full run keeps."""
    if spill:
        monkeypatch.setattr("ledger.app.reconcile_kept._PENDING_IN_MEMORY", 1)
    base = workspace(tmp_path)
    kw: dict[str, Any] = {"packs": [base / "corpora" / "packs"], "base": base,
                          "ledger": base / "lg"}  # fmt: skip
    extend_then_full(base)
    before = kept_lines(base)
    OPS["add"](base, 0, 1)
    OPS["rescore_on_disk"](base, 5, 2)
    got = reconcile(**kw)
    assert (got.document["receipt"]["carried"], got.document["receipt"]["evaluated"]) == (16, 2)
    after = kept_lines(base)
    # the one re-scored on disk is no longer the bundle the ledger holds: unreadable, not kept
    rescored = {t for t in before if after.get(t) != before[t]}
    assert len(rescored) == 1 and rescored.isdisjoint(after) and len(after) == 17
    trials = list(after)  # in file order: the 16 carried ones first, as written; the new one
    assert set(trials[:16]) == set(before) - rescored and trials[16] not in before
    (path,) = (base / "lg" / "projections").glob("reconcile-*.results")
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[-8:])
    extended, _ = read_records(KeptBody.of(data, len(data) - 8 - n))
    reconcile(**kw, full=True)
    (path,) = (base / "lg" / "projections").glob("reconcile-*.results")
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[-8:])
    full, _ = read_records(KeptBody.of(data, len(data) - 8 - n))
    assert extended == full


def test_a_second_run_carries_every_unchanged_trial(tmp_path: Path, parses: list) -> None:
    base = workspace(tmp_path)
    first, _ = extend_then_full(base)
    assert "extends" not in first.document["receipt"]
    parses.clear()
    got, full = extend_then_full(base)
    rc = got.document["receipt"]
    assert (rc["carried"], rc["evaluated"]) == (17, 0) and parses == []
    # it extends the run just before it (the full one), by name and tree head
    assert rc["extends"]["run_id"] == full_run_id(base, rc["extends"]["seq"])
    # a new trial and a re-scored one: only they are read again
    new = bundles(base)[0].with_name(bundles(base)[0].name + "_again")
    shutil.copytree(bundles(base)[0], new)
    with open_ledger(base / "lg") as lg:
        stream = next(
            e.stream for e in lg.read(type="trial.registered") if bundles(base)[3].name in e.stream
        )
        rescore(lg, stream)
    got, _ = extend_then_full(base)
    rc = got.document["receipt"]
    assert (rc["carried"], rc["evaluated"]) == (16, 2)
    assert any("holds" in u["reason"] for s in got.document["sources"]
               for u in s.get("unreadable_trials", []))  # fmt: skip
    with open_ledger(base / "lg") as lg:  # its event follows the log it read
        check = verify_ledger_receipt(lg, str(rc["checkpoint"]["size"]), recompute=True)
    assert check.ok, check.problems
    assert any(c.startswith("extends the reconcile receipt") for c in check.checked)
    assert any(c.startswith("outputs_digest recomputed") for c in check.checked)


def test_another_spelling_of_the_packs_still_extends(
    tmp_path: Path, parses: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config digest binds the packs searched as the files they name: ``--packs`` given
    absolutely, then relatively from the base, carries every trial and parses no bundle,
    and prints what a full run with the second spelling prints."""
    base = workspace(tmp_path)
    reconcile(packs=[(base / "corpora" / "packs").resolve()], base=base, ledger=base / "lg")
    parses.clear()
    monkeypatch.chdir(base)
    kw: dict[str, Any] = {"packs": [Path("corpora") / "packs"], "base": base, "ledger": base / "lg"}
    got = reconcile(**kw)
    rc = got.document["receipt"]
    assert (rc.get("carried"), rc.get("evaluated")) == (17, 0) and parses == []
    assert comparable(got) == comparable(reconcile(**kw, full=True))


def test_another_spelling_of_the_base_still_extends(
    tmp_path: Path, parses: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus a pack declares is bound as the directory it resolves to: ``--base``
    given absolutely, then relatively from its parent, carries every trial and parses no
    bundle (the joined spelling ``<base>/<corpus>`` once made a second run a full one)."""
    base = workspace(tmp_path / "w")
    reconcile(packs=[base / "corpora" / "packs"], base=base, ledger=base / "lg")
    parses.clear()
    monkeypatch.chdir(tmp_path)
    rel = Path("w")
    kw: dict[str, Any] = {"packs": [rel / "corpora" / "packs"], "base": rel, "ledger": rel / "lg"}
    got = reconcile(**kw)
    rc = got.document["receipt"]
    assert (rc.get("carried"), rc.get("evaluated")) == (17, 0) and parses == []
    assert comparable(got) == comparable(reconcile(**kw, full=True))


def full_run_id(base: Path, seq: int) -> str:
    with open_ledger(base / "lg") as lg:
        ev = next(iter(lg.read(from_seq=seq, to_seq=seq)))
    assert ev.type == "reconcile.completed"
    return str(ev.data()["run_id"])


def test_a_kept_file_that_does_not_check_is_ignored(tmp_path: Path) -> None:
    base = workspace(tmp_path)
    extend_then_full(base)
    kept = next((base / "lg" / "projections").glob("reconcile-*.results"))
    body = bytearray(kept.read_bytes())
    at = body.index(b'"task_id":"') + len(b'"task_id":"')
    body[at] = ord("X")  # one observation's task, altered
    kept.write_bytes(bytes(body))
    got, _ = extend_then_full(base)
    assert "extends" not in got.document["receipt"]


def test_the_cli_says_what_it_extended_on_stderr(tmp_path: Path) -> None:
    base = workspace(tmp_path)
    args = ["reconcile", "--packs", str(base / "corpora" / "packs"), "--base", str(base),
            "--ledger", str(base / "lg")]  # fmt: skip
    runner = CliRunner()
    first = runner.invoke(main, args)
    again = runner.invoke(main, args)
    full = runner.invoke(main, [*args, "--full"])
    assert first.exit_code == again.exit_code == full.exit_code == 0, first.output
    assert first.stdout == again.stdout == full.stdout
    assert "17 bundle(s) carried forward, 0 new or changed read" in again.stderr
    assert "carried" not in full.stderr


# ------------------------------------------------------------------ the property


def _op_add(base: Path, i: int, k: int) -> None:
    src = bundles(base)[i % len(bundles(base))]
    shutil.copytree(src, src.with_name(f"{src.name}_copy{k}"))


def _op_rescore_on_disk(base: Path, i: int, k: int) -> None:
    grade = bundles(base)[i % len(bundles(base))] / "grade.yaml"
    text = grade.read_text()
    grade.write_text(text.replace("justification: '", f"justification: 'Re-scored {k}. ", 1))


def _op_resave(base: Path, i: int, k: int) -> None:
    task = bundles(base)[i % len(bundles(base))] / "task.yaml"
    task.write_text(task.read_text() + f"\n# saved again {k}\n")


def _op_rescore_in_ledger(base: Path, i: int, k: int) -> None:
    with open_ledger(base / "lg") as lg:
        streams = sorted({e.stream for e in lg.read(type="trial.registered")})
        if streams:
            rescore(lg, streams[i % len(streams)])


def _op_new_corpus(base: Path, i: int, k: int) -> None:
    shutil.copytree(base / NOTES / "not_met", base / NOTES / f"more_{k}")


def _op_pack(base: Path, i: int, k: int) -> None:
    """Other declared combine weights (in both packs that pool the claim): another config."""
    weights = ["{ llm_judge: 0.5, trace_checks: 0.5 }", "{ llm_judge: 0.6, trace_checks: 0.4 }"]
    for migration in sorted((base / "corpora" / "packs").glob("*/migration.yaml")):
        text = migration.read_text()
        old, new = weights if weights[0] in text else weights[::-1]
        migration.write_text(text.replace(old, new))


OPS = {
    "add": _op_add, "rescore_on_disk": _op_rescore_on_disk, "resave": _op_resave,
    "rescore_in_ledger": _op_rescore_in_ledger, "new_corpus": _op_new_corpus, "pack": _op_pack,
}  # fmt: skip
# every step, and a pack changed back
EVERY_STEP = [("add", 1), ("reconcile", 0), ("rescore_on_disk", 2), ("resave", 3),
              ("rescore_in_ledger", 4), ("reconcile", 0), ("new_corpus", 0), ("pack", 0),
              ("reconcile", 0), ("pack", 0)]  # fmt: skip
STEPS = st.lists(
    st.one_of(st.just(("reconcile", 0)), st.tuples(st.sampled_from(sorted(OPS)), st.integers(0, 40))),
    min_size=1, max_size=4,
)  # fmt: skip


@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(steps=STEPS)
@example(steps=EVERY_STEP)
def test_incremental_reconcile_equals_a_full_one(tmp_path_factory: Any, steps: list) -> None:
    """Random interleavings of ingest (new trials, re-scored ones on disk and in the ledger,
    new corpora), pack changes and reconciles: each run as it comes equals a full run over
    the same log; a run extends exactly when an earlier one had its packs (a pack change
    carries nothing across it)."""
    base = workspace(tmp_path_factory.mktemp("prop"))
    extend_then_full(base)
    migration = base / PACK / "migration.yaml"
    reconciled = {migration.read_text()}
    for k, (name, i) in enumerate([*steps, ("reconcile", 0)]):
        if name != "reconcile":
            OPS[name](base, i, k)
            continue
        got, _ = extend_then_full(base)
        assert ("extends" in got.document["receipt"]) is (migration.read_text() in reconciled)
        reconciled.add(migration.read_text())


def test_a_new_code_version_of_the_reading_carries_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release whose per-trial reading changed never reuses observations made by the old."""
    import ledger.app.reconcile_extend as extend

    base = workspace(tmp_path)
    extend_then_full(base)
    monkeypatch.setattr(extend, "RECONCILE_PROJECTION", extend.RECONCILE_PROJECTION + "+next")
    got, _ = extend_then_full(base)
    assert "extends" not in got.document["receipt"]
    again, _ = extend_then_full(base)
    assert again.document["receipt"]["carried"] == 17


def test_kept_observations_read_back_share_equal_parts_and_equal_what_was_kept(
    tmp_path: Path,
) -> None:
    """Each distinct part is written once and read back as one object every record naming
    it holds; written again from copies sharing nothing, the records read back are equal."""
    base = workspace(tmp_path)
    extend_then_full(base)
    data = next((base / "lg" / "projections").glob("reconcile-*.results")).read_bytes()
    (n,) = struct.unpack("<Q", data[-8:])
    kept_lines = data[len(MAGIC) : len(data) - 8 - n].split(b"\n")[:-1]
    records, _ = read_records(KeptBody.of(data, len(data) - 8 - n))
    assert len(records) == 17
    by_task: dict[str, set[int]] = {}
    for c in records.values():
        if c.grading is not None:
            by_task.setdefault(c.task_id, set()).add(id(c.grading))
    assert all(len(ids) == 1 for ids in by_task.values())  # one object per task's grading
    assert sum(c.grading is not None for c in records.values()) > len(by_task)
    writer = KeptWriter(object())  # no ledger directory: in memory
    for (source, trial), c in records.items():
        writer.add(source, trial, copy.deepcopy(c))
    lines = writer.file.getvalue().split(b"\n")[1:-1]
    again, reader = read_records(KeptBody.of(writer.file.getvalue()))
    assert again == records and reader.hasher.digest() == writer.hasher.digest()
    parts = sum(line.startswith(b'{"part"') for line in lines)  # equal in value: written once
    assert parts == sum(line.startswith(b'{"part"') for line in kept_lines) < 4 * 17


def test_a_carried_trials_candidate_computed_on_demand_is_kept() -> None:
    """A carried trial's candidate is read from the ledger only if a claim asks for it;
    once it has been, the run's kept record holds it (``evaluated``), so the next run
    does not read the stream again; before, nothing is kept for it."""
    from ledger.app.reconcile_extend import evaluated, lazy_from_ledger
    from reconcile.inputs import TrialObservation, Unavailable

    reads: list[str] = []

    class Log:
        def read(self, stream: str) -> list[str]:
            reads.append(stream)
            return [f"event of {stream}"]

    lazy = lazy_from_ledger(Log(), "trial/x", lambda events: Unavailable(events[0]))
    obs = TrialObservation("x", "t", None, None, lazy)  # type: ignore[arg-type]
    assert evaluated(obs) is None and reads == []
    assert obs.evaluate() == Unavailable("event of trial/x")
    assert evaluated(obs) == Unavailable("event of trial/x")
    obs.evaluate()
    assert reads == ["trial/x"]  # computed once
