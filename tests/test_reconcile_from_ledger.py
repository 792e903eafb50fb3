"""``reconcile --from-ledger``: each declared corpus read as the ledger holds it — its trial
streams, no bundle on disk — and a run that extends an earlier one reading only the streams
with an event since that run's checkpoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ledger
from ledger.app.receipts import verify_ledger_receipt
from ledger.app.reconcile import reconcile
from ledger.app.reconcile_packs import ReconcileError
from ledger.cli import main
from ledger.log.store import open_ledger
from schemas.envelope import NewEvent
from tests.test_reconcile_catchup import (
    EVERY_STEP,
    NOTES,
    OPS,
    STEPS,
    bundles,
    comparable,
    kept_lines,
    rescore,
    workspace,
)


def ingest_notes(base: Path) -> None:
    """The notes corpus as it is on disk into the ledger (as reconcile's own ingest does)."""
    ledger.ingest(base / NOTES, ledger=base / "lg", skip_bad=True, keep_inconsistent=True)


def held(base: Path, **kw: Any) -> Any:
    return reconcile(packs=[base / "corpora" / "packs"], base=base, ledger=base / "lg",
                     from_ledger=True, **kw)  # fmt: skip


def extend_then_full(base: Path) -> tuple[Any, Any]:
    """From the ledger as it comes (extending when it can), then in full over the same log:
    the same document byte for byte, and the same digests."""
    got, full = held(base), held(base, full=True)
    assert comparable(got) == comparable(full)
    rc, rc_full = got.document["receipt"], full.document["receipt"]
    for key in ("outputs_digest", "inputs_digest", "config_digest"):
        assert rc[key] == rc_full[key]
    assert "extends" not in rc_full
    return got, full


def test_the_ledgers_corpus_reads_as_the_one_on_disk(tmp_path: Path) -> None:
    """Over a ledger holding the corpus as it is on disk, the report read from the ledger is
    the one read from disk, byte for byte (trials named by their place in the corpus, its
    parts included), with the same inputs and outputs digests; and it stays so once the
    bundles are gone from disk: nothing but the declared corpus's directory is looked at."""
    base = workspace(tmp_path)
    disk = reconcile(packs=[base / "corpora" / "packs"], base=base, ledger=base / "lg")
    for bundle in bundles(base):
        shutil.rmtree(bundle)
    got = held(base)
    assert comparable(got) == comparable(disk)
    assert "met/" in json.dumps(got.document["entries"], default=list)  # named within their part
    rc, rc_disk = got.document["receipt"], disk.document["receipt"]
    assert rc["outputs_digest"] == rc_disk["outputs_digest"]
    assert rc["inputs_digest"] == rc_disk["inputs_digest"]
    assert rc["config_digest"] != rc_disk["config_digest"]  # another reading: never mixed


def test_a_second_run_reads_only_the_streams_appended_to(tmp_path: Path) -> None:
    base = workspace(tmp_path)
    ingest_notes(base)
    first, _ = extend_then_full(base)
    assert "extends" not in first.document["receipt"]
    got, _ = extend_then_full(base)
    assert (got.document["receipt"]["carried"], got.document["receipt"]["evaluated"]) == (17, 0)
    OPS["add"](base, 0, 1)  # a new bundle, ingested; one trial re-scored in the ledger
    ingest_notes(base)
    OPS["rescore_in_ledger"](base, 3, 2)
    got, _ = extend_then_full(base)
    rc = got.document["receipt"]
    assert (rc["carried"], rc["evaluated"]) == (16, 2)
    # the re-scored stream is read as the ledger holds it (from disk it is unreadable)
    assert not any(s.get("unreadable_trials") for s in got.document["sources"])
    # the receipt names no trial: they are every stream of the corpus in the prefix it read,
    # so trials ingested and re-scored after it do not enter its recomputation
    assert "trials" not in json.dumps(receipt_config(base, rc["checkpoint"]["size"]))
    OPS["add"](base, 1, 3)
    ingest_notes(base)
    OPS["rescore_in_ledger"](base, 5, 4)
    with open_ledger(base / "lg") as lg:
        check = verify_ledger_receipt(lg, str(rc["checkpoint"]["size"]), recompute=True)
    assert check.ok, check.problems
    assert any(c.startswith("extends the reconcile receipt") for c in check.checked)
    assert any(c.startswith("outputs_digest recomputed") for c in check.checked)


def receipt_config(base: Path, seq: int) -> Any:
    with open_ledger(base / "lg") as lg:
        (ev,) = lg.read(from_seq=seq, to_seq=seq)
        return ev.data()["config"]["corpora"]


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(steps=STEPS, uncovered=st.booleans())
@example(steps=EVERY_STEP, uncovered=False)
@example(steps=EVERY_STEP, uncovered=True)
def test_incremental_reconcile_from_the_ledger_equals_a_full_one(
    tmp_path_factory: Any, steps: list, uncovered: bool
) -> None:
    """Random interleavings of ingest (new trials, trials re-scored on disk and in the
    ledger, new corpus parts), pack changes and reconciles from the ledger: each run as it
    comes equals a full one over the same log, and extends exactly when an earlier one had
    its packs. ``uncovered``: one pack declares no migration, so its task's trials are
    only counted (their kept lines carried from file to file as written)."""
    base = workspace(tmp_path_factory.mktemp("held"))
    if uncovered:
        POLICY_MIGRATION(base).unlink()
    ingest_notes(base)
    extend_then_full(base)
    migration = base / "corpora" / "packs" / "notes_duplicate_check_narrowed" / "migration.yaml"
    reconciled = {migration.read_text()}
    for k, (name, i) in enumerate([*steps, ("reconcile", 0)]):
        if name != "reconcile":
            OPS[name](base, i, k)
            ingest_notes(base)
            continue
        got, _ = extend_then_full(base)
        assert ("extends" in got.document["receipt"]) is (migration.read_text() in reconciled)
        reconciled.add(migration.read_text())


def test_the_cli_refuses_what_it_cannot_read_from_the_ledger(tmp_path: Path) -> None:
    base = workspace(tmp_path)
    packs = str(base / "corpora" / "packs")
    run = CliRunner().invoke
    args = ["--ledger", str(base / "lg"), "reconcile", "--packs", packs, "--base", str(base),
            "--from-ledger"]  # fmt: skip
    for extra, flag in (["--dry-run"], "--dry-run"), (["--source", str(base / NOTES)], "--source"):
        res = run(main, [*args, *extra])
        assert res.exit_code == 2 and f"drop {flag}" in res.output, res.output
    res = run(main, args)  # nothing ingested yet
    assert res.exit_code == 5, res.output
    assert "holds no trial of corpus 'notes_duplicate_check'" in res.output
    assert "vledger ingest corpora/notes_duplicate_check" in res.output
    assert "Traceback" not in res.output
    ingest_notes(base)
    res = run(main, args)
    assert res.exit_code == 0, res.output
    res = run(main, args)
    assert "17 bundle(s) carried forward, 0 new or changed read" in res.output


def test_a_corpus_ingested_under_another_name_is_refused_naming_what_the_ledger_holds(
    tmp_path: Path,
) -> None:
    """A corpus is read under its directory's name: one ingested with ``--corpus NAME`` is
    not found, and the refusal names the corpora the ledger does hold (exit 5, no trace)."""
    base = workspace(tmp_path)
    ledger.ingest(base / NOTES, ledger=base / "lg", corpus="nightly", skip_bad=True,
                  keep_inconsistent=True)  # fmt: skip
    args = ["--ledger", str(base / "lg"), "reconcile", "--packs",
            str(base / "corpora" / "packs"), "--base", str(base), "--from-ledger"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 5, res.output
    assert "holds no trial of corpus 'notes_duplicate_check'" in res.output
    assert "it holds trials of 'nightly'" in res.output and "--corpus" in res.output
    assert "Traceback" not in res.output


def test_an_acknowledged_trial_is_still_checked_against_the_corpus_directory(
    tmp_path: Path,
) -> None:
    """The declaration is authored input: read from the ledger, its load-time rules still
    apply, the acknowledged trials included (listed only then)."""
    base = workspace(tmp_path)
    ingest_notes(base)
    migrations = sorted((base / "corpora" / "packs").glob("*/migration.yaml"))  # pooled: both
    texts = [m.read_text() for m in migrations]

    def acknowledge(trial: str) -> None:
        ack = f"    acknowledged:\n      - {{ trial: {trial}, reason: the judge misread it }}\n"
        for migration, text in zip(migrations, texts, strict=True):
            migration.write_text(text.replace("    evidence:\n", ack + "    evidence:\n", 1))

    acknowledge(f"met/{bundles(base)[0].name}")  # a bundle there: the declaration loads
    assert held(base).document["entries"]
    acknowledge("met/nope")
    with pytest.raises(ReconcileError, match="'met/nope' is not a bundle"):
        held(base)


def POLICY_MIGRATION(base: Path) -> Path:  # noqa: N802 - one file, named as a constant
    """The migration of the pack whose task the 12 trials under ``met/`` ran."""
    return base / "corpora" / "packs" / "notes_duplicate_check_policy_narrowed" / "migration.yaml"


def test_trials_of_a_task_no_claim_covers_are_only_counted_and_kept_as_written(
    tmp_path: Path,
) -> None:
    """With one pack's migration gone, its task's 12 trials are in no entry: an extension
    counts them (the report's trials, the inputs digest) without holding them, and the file
    it keeps holds their lines (as every carried trial's) as the one it extended did. One re-scored in the ledger, and
    a new one, are read; the rest still carried; each run equals a full one."""
    base = workspace(tmp_path)
    POLICY_MIGRATION(base).unlink()
    ingest_notes(base)
    extend_then_full(base)
    before = kept_lines(base)
    got, _ = extend_then_full(base)
    assert (got.document["receipt"]["carried"], got.document["receipt"]["evaluated"]) == (17, 0)
    (entry,) = got.document["entries"]
    assert entry["observations"] == 5  # the other task's trials are not this claim's
    assert got.document["sources"][0]["trials_read"] == 17
    assert got.extends is not None and got.extends.counted is not None
    counted = got.extends.counted.sources["corpora/notes_duplicate_check"]
    # the 5 covered ones are held lazily (read back as the report reaches them), none as
    # an object; every carried one's stream digest is kept
    assert (counted.carried, len(counted.lazy_at), counted.stale) == (12, 5, 0)
    assert len(counted.digests) == 17 * 32
    policy = [t for t in before if "/met/" in t]
    assert len(policy) == 12 and kept_lines(base) == before  # every carried line as written
    OPS["add"](base, 0, 1)  # bundles(base)[0]: under met/, a policy trial
    ingest_notes(base)
    with open_ledger(base / "lg") as lg:
        rescore(lg, next(s for s in lg.streams("trial/") if "_policy/" in s))
    got, _ = extend_then_full(base)
    rc = got.document["receipt"]
    assert (rc["carried"], rc["evaluated"]) == (16, 2)
    assert got.extends is not None and got.extends.counted is not None
    counted = got.extends.counted.sources["corpora/notes_duplicate_check"]
    assert (counted.carried, counted.stale) == (11, 1)
    with open_ledger(base / "lg") as lg:  # re-derived from the log, counted trials included
        check = verify_ledger_receipt(lg, str(rc["checkpoint"]["size"]), recompute=True)
    assert check.ok, check.problems
    assert any(c.startswith("outputs_digest recomputed") for c in check.checked)


def test_kept_lines_changed_while_a_run_reads_them_are_not_kept_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counted trials' lines are read again when the next file is written: if the file
    no longer hashes to what the run read, that run keeps nothing (its report stands: it
    was computed from what it read), and the next run is a full one."""
    from ledger.app.reconcile_kept import KeptWriter

    base = workspace(tmp_path)
    POLICY_MIGRATION(base).unlink()
    ingest_notes(base)
    extend_then_full(base)
    (path,) = (base / "lg" / "projections").glob("reconcile-*.results")
    real = KeptWriter.finish
    body = bytearray(path.read_bytes())
    at = body.index(b'"judge_status":"') + len(b'"judge_status":"')
    body[at] = ord("X")

    def altered_first(self: Any, *a: Any, **kw: Any) -> None:
        with open(path, "r+b") as f:  # in place: the run holds the file open
            f.write(body)
        real(self, *a, **kw)

    monkeypatch.setattr(KeptWriter, "finish", altered_first)
    got = held(base)
    assert got.document["receipt"]["carried"] == 17
    # not replaced by this run's file: the one it read, as altered, is all there is
    assert [p.read_bytes() for p in path.parent.glob("reconcile-*")] == [bytes(body)]
    monkeypatch.undo()
    again, _ = extend_then_full(base)
    assert "extends" not in again.document["receipt"]
    assert comparable(again) == comparable(got)


@pytest.mark.parametrize("uncovered", [False, True])
def test_an_extension_lists_only_the_streams_since_unless_one_was_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uncovered: bool
) -> None:
    """A run that kept every stream it read is extended without listing the corpus's
    streams in the log before it (only those with an event since); one that could not keep
    a stream (unreadable) is extended by listing them all, so that stream is read again
    (``uncovered``: and the trials only counted are then carried by name)."""
    from ledger.log.store import Ledger

    base = workspace(tmp_path)
    if uncovered:
        POLICY_MIGRATION(base).unlink()
    ingest_notes(base)
    listed: list[tuple[str | None, Any]] = []
    real = Ledger.streams

    def spy(self: Any, prefix: str | None = None, *a: Any, **kw: Any) -> list[str]:
        listed.append((prefix, kw.get("from_seq")))
        return real(self, prefix, *a, **kw)

    monkeypatch.setattr(Ledger, "streams", spy)
    extend_then_full(base)
    listed.clear()
    got = held(base)
    assert got.document["receipt"]["carried"] == 17
    whole = [p for p, since in listed if p and p.startswith("trial/notes") and since is None]
    assert whole == []  # the corpus was not listed again
    with open_ledger(base / "lg") as lg:  # a stream of the corpus that is not a trial
        ev = next(e for e in lg.read(type="grade.recorded"))
        broken = "trial/notes_duplicate_check/notes_add_note_duplicate_check_gated/broken"
        lg.append([NewEvent(broken, "grade.recorded", ev.data(), "broken-grade")])
    got, _ = extend_then_full(base)  # read, unreadable, not kept
    assert any("broken" in u["trial"] for s in got.document["sources"]
               for u in s.get("unreadable_trials", []))  # fmt: skip
    listed.clear()
    again, _ = extend_then_full(base)
    assert again.document["receipt"]["carried"] == 17
    assert comparable(again) == comparable(got)  # the unreadable stream is still reported
    assert any(p and p.startswith("trial/notes") and since is None for p, since in listed)


def test_progress_counts_the_trials_read_not_those_carried(tmp_path: Path) -> None:
    """``on_total`` / ``on_done`` (the CLI's bar on a terminal): every trial read counts, and
    from disk every bundle the ingest it starts with keys; an extension from the ledger that
    carries every trial reads none."""
    base = workspace(tmp_path)
    kw: dict[str, Any] = {"packs": [base / "corpora" / "packs"], "base": base,
                          "ledger": base / "lg"}  # fmt: skip
    # from disk: 17 bundles ingested and 17 read, then 17 keyed (held) and none read;
    # from the ledger: 17 read, then none
    for mode, wants in (({}, (34, 17)), ({"from_ledger": True}, (17, 0))):
        for want in wants:  # the first run of the mode, then one that extends it
            totals: list[int] = []
            done: list[int] = []
            reconcile(**kw, **mode, on_total=totals.append, on_done=done.append)
            assert (totals[-1] if totals else 0, sum(done)) == (want, want), (mode, want)
            assert totals == sorted(totals)  # the total only grows
    with_bar = {"on_total": lambda n: None, "on_done": lambda n: None}
    assert comparable(held(base, **with_bar)) == comparable(held(base))  # they change nothing


def test_a_kept_line_changed_before_the_report_reads_it_back_appends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A covered trial's line is read back when the report reaches it: changed in place
    after the file was checked, it is refused (exit 5, naming what to do) rather than
    counted, nothing is appended, and the next run reads every trial and equals a full one."""
    from ledger.app import reconcile_extend

    base = workspace(tmp_path)
    ingest_notes(base)
    first = held(base)
    (path,) = (base / "lg" / "projections").glob("reconcile-*.results")
    body = bytearray(path.read_bytes())
    at = body.index(b'"judge_status":"') + len(b'"judge_status":"')
    body[at] = ord("X")
    load = reconcile_extend.load_base

    def loaded_then_altered(*a: Any, **kw: Any) -> Any:
        got = load(*a, **kw)
        with open(path, "r+b") as f:  # in place: the run holds the file open
            f.write(body)
        return got

    monkeypatch.setattr(reconcile_extend, "load_base", loaded_then_altered)
    with open_ledger(base / "lg") as lg:
        size = lg.size()
    with pytest.raises(ReconcileError, match="changed while it read them"):
        held(base)
    with open_ledger(base / "lg") as lg:
        assert lg.size() == size
    monkeypatch.undo()
    again, _ = extend_then_full(base)
    assert "extends" not in again.document["receipt"]
    assert comparable(again) == comparable(first)


def test_the_streams_since_the_base_are_read_before_its_records_are_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An extension reads the streams with an event since the base's checkpoint (never
    carried) before it loads the base's kept records, so the reading and the records are
    not held at once; the report is still the full run's."""
    from ledger.app import reconcile_extend, reconcile_read

    base = workspace(tmp_path)
    ingest_notes(base)
    held(base)
    OPS["add"](base, 0, 1)
    ingest_notes(base)
    OPS["rescore_in_ledger"](base, 3, 2)
    order: list[str] = []
    classify, load = reconcile_read._classify, reconcile_extend.load_base

    def classified(value: str, is_flat: bool, stream: str, *a: Any) -> Any:
        order.append(f"read {stream}")
        return classify(value, is_flat, stream, *a)

    def loaded(*a: Any, **kw: Any) -> Any:
        order.append("records loaded")
        return load(*a, **kw)

    monkeypatch.setattr(reconcile_read, "_classify", classified)
    monkeypatch.setattr(reconcile_extend, "load_base", loaded)
    got, _ = extend_then_full(base)
    first = order[: order.index("records loaded") + 1]  # then the full run reads every stream
    assert (got.document["receipt"]["carried"], got.document["receipt"]["evaluated"]) == (16, 2)
    assert len(first) == 3 and first[-1] == "records loaded"
    assert all(step.startswith("read trial/") for step in first[:2])


@settings(max_examples=200)
@given(value=st.text("ab/", min_size=1, max_size=4), rel=st.text("ab/.", max_size=5),
       other=st.text("ab/.", max_size=8))  # fmt: skip
def test_a_held_trials_spellings_are_its_label_and_its_path_in_the_corpus(
    value: str, rel: str, other: str
) -> None:
    """``HeldKeys`` answers and lists what the tuple it replaces held: the label and the
    label without the corpus value's prefix, sorted, once each."""
    from ledger.app.reconcile_read import HeldKeys

    prefix = f"{value.rstrip('/')}/"
    for label in (f"{prefix}{rel}", other):
        cut = len(prefix) if label.startswith(prefix) else 0
        short = label.removeprefix(prefix)
        want = (label,) if short == label else tuple(sorted({label, short}))
        keys = HeldKeys(label, cut)
        assert tuple(keys) == want and len(keys) == len(want)
        for spelling in (label, short, rel, other, prefix):
            assert (spelling in keys) == (spelling in want)
