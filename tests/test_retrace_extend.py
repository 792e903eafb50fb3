"""A retrace that extends an earlier replay: the same result as a full one, from less work.

Every comparison is between two runs over the same log: a full replay (``full=True``,
dry so it appends nothing) and the run that extends the earlier replay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ledger.app.retrace as retrace_mod
import ledger.app.retrace_extend as retrace_extend
from ledger.app.ingest import ingest_into
from ledger.app.receipts import verify_ledger_receipt
from ledger.app.retrace import retrace
from ledger.cli import main
from ledger.log.memory_store import MemoryLedger
from ledger.log.store import open_ledger
from schemas.envelope import NewEvent

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "corpora" / "notes_duplicate_check"
NARROWED = ROOT / "corpora" / "packs" / "notes_duplicate_check_narrowed" / "grading.yaml"
BUNDLES = sorted(p for half in ("met", "not_met") for p in (NOTES / half).iterdir() if p.is_dir())


def comparable(result: Any) -> dict[str, Any]:
    """The --json document without the receipt (an extension's names what it extended)
    and the dry-run flag (the full replay compared with is dry, to append nothing)."""
    doc = result.to_json()
    doc.pop("receipt")
    doc.pop("dry_run")
    return doc


def rescore(lg: Any, stream: str, n: int) -> None:
    """A re-scored trial: a later grade.recorded on its own stream, its score changed."""
    grade = next(e for e in lg.read(stream=stream) if e.type == "grade.recorded").data()
    grade["grade"] = {**grade["grade"], "score": round(0.01 * n, 2)}
    lg.append([NewEvent(stream, "grade.recorded", grade, f"{stream}:rescored:{n}")])


def assert_extends_like_full(lg: Any, **kw: Any) -> Any:
    """Retrace ``lg`` twice over the same log — full and dry, then as it comes (extending
    when it can) — and check the report, the digest and the appended grades agree."""
    full = retrace(ledger=lg, full=True, dry_run=True, **kw)
    size = lg.size()
    got = retrace(ledger=lg, **kw)
    assert comparable(got) == comparable(full)
    assert json.dumps(comparable(got)) == json.dumps(comparable(full))  # byte for byte
    assert got.report["receipt"]["outputs_digest"] == full.report["receipt"]["outputs_digest"]
    assert got.report["receipt"]["checkpoint"] == full.report["receipt"]["checkpoint"]
    appended = [e for e in lg.read(from_seq=size) if e.type == "grade.replayed"]
    by_trial = {t["trial"]: t for t in full.to_json()["trials"]}
    for ev in appended:  # each event as the full replay's for that trial: same replay id
        row = by_trial[ev.data()["trial"]]
        assert ev.data()["replay_id"] == full.report["replay_id"]
        assert ev.event_id == f"{full.report['replay_id']}:{row['trial']}"
        assert (ev.data()["status"], ev.data()["grade"]) == (row["status"], row["replayed"])
        assert ev.data()["differences"] == row["differences"]
    link = got.report["receipt"].get("extends")
    if link is None:  # a full replay appends every re-derived trial
        assert len(appended) == sum(t["replayed"] is not None for t in by_trial.values())
    else:  # an extension appends exactly the trials it evaluated
        assert len(appended) == got.report["receipt"]["evaluated"]
        assert got.report["receipt"]["carried"] + got.report["receipt"]["evaluated"] == len(
            by_trial
        )
    return got


@pytest.mark.parametrize("many", [0, 64])  # re-scored streams read in one pass / one by one
def test_an_extension_carries_unchanged_trials_and_evaluates_new_and_rescored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, many: int
) -> None:
    monkeypatch.setattr(retrace_extend, "MANY_RESCORED", many)
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest_into(lg, [str(b) for b in BUNDLES[:10]], "notes")
        first = retrace(ledger=lg)
        assert "extends" not in first.report["receipt"]
        ingest_into(lg, [str(b) for b in BUNDLES[10:]], "more")  # a new corpus
        rescore(lg, first.to_json()["trials"][3]["trial"], 1)
        rescore(lg, first.to_json()["trials"][7]["trial"], 2)
        got = assert_extends_like_full(lg)
        rc = got.report["receipt"]
        assert rc["extends"]["replay_id"] == first.report["replay_id"]
        assert rc["extends"]["checkpoint"] == first.report["receipt"]["checkpoint"]
        assert (rc["carried"], rc["evaluated"]) == (8, len(BUNDLES) - 8)
        # the receipt re-checks: the link (both tree heads consistent), and recomputed
        check = verify_ledger_receipt(lg, f"{got.report['replay_id']}:completed", recompute=True)
        assert check.ok, check.problems
        assert any(c.startswith("extends the replay receipt") for c in check.checked)
        assert any(c.startswith("outputs_digest recomputed") for c in check.checked)


def test_pages_let_go_while_reading_kept_results_read_back_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept results are read through a mapping whose pages are dropped behind the
    reader (so resident memory does not grow with the file); with a window of one page,
    pages are dropped after nearly every record, and the extension is still the full run."""
    import mmap  # noqa: PLC0415

    from ledger.app import replay_results  # noqa: PLC0415

    monkeypatch.setattr(replay_results._Release, "WINDOW", mmap.PAGESIZE)
    released: list[int] = []
    real = replay_results._Release.__call__

    def spy(self: Any, pos: int) -> None:
        before = self.done
        real(self, pos)
        if self.done != before:
            released.append(self.done)

    monkeypatch.setattr(replay_results._Release, "__call__", spy)
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest_into(lg, [str(b) for b in BUNDLES[:12]], "notes")
        retrace(ledger=lg)
        ingest_into(lg, [str(b) for b in BUNDLES[12:]], "more")
        got = assert_extends_like_full(lg)
        assert got.report["receipt"]["carried"] == 12
    assert released, "no page was let go: the file is smaller than one page?"


def test_a_chain_of_extensions_recomputes_through_every_link(tmp_path: Path) -> None:
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest_into(lg, [str(b) for b in BUNDLES[:6]], "notes")
        retrace(ledger=lg, constraints_file=NARROWED)
        ingest_into(lg, [str(b) for b in BUNDLES[6:12]], "notes")
        assert_extends_like_full(lg, constraints_file=NARROWED)
        ingest_into(lg, [str(b) for b in BUNDLES[12:]], "notes")
        last = assert_extends_like_full(lg, constraints_file=NARROWED)
        assert last.report["receipt"]["carried"] == 12
        check = verify_ledger_receipt(lg, f"{last.report['replay_id']}:completed", recompute=True)
        assert check.ok, check.problems


def test_full_and_other_inputs_never_extend(tmp_path: Path) -> None:
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest_into(lg, [str(b) for b in BUNDLES], "notes")
        retrace(ledger=lg)
        assert "extends" not in retrace(ledger=lg, full=True).report["receipt"]
        # another replacement config is other inputs: a full replay, then extensible itself
        assert "extends" not in assert_extends_like_full(lg, constraints_file=NARROWED).report[
            "receipt"
        ]
        assert "extends" in retrace(ledger=lg, constraints_file=NARROWED).report["receipt"]
        # the recorded-snapshot replay is older than a replay with other inputs over the same
        # trials: carrying it forward would leave those trials' current grade the other one's
        assert "extends" not in assert_extends_like_full(lg).report["receipt"]


def test_a_new_grading_projection_version_carries_nothing_across(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest_into(lg, [str(b) for b in BUNDLES], "notes")
        retrace(ledger=lg)
        monkeypatch.setattr(
            retrace_mod, "PROJECTION_VERSION", retrace_mod.PROJECTION_VERSION + " rules changed"
        )
        size = lg.size()
        bumped = retrace(ledger=lg)
        assert "extends" not in bumped.report["receipt"]
        assert len([e for e in lg.read(from_seq=size) if e.type == "grade.replayed"]) == len(
            BUNDLES
        )
        assert "extends" in retrace(ledger=lg).report["receipt"]  # the new version extends itself


@pytest.mark.parametrize("where", ["fold", "row"])
def test_results_that_do_not_check_against_the_receipt_are_not_used(
    tmp_path: Path, where: str
) -> None:
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest_into(lg, [str(b) for b in BUNDLES[:12]], "notes")
        retrace(ledger=lg)
        (kept,) = (tmp_path / "L" / "projections").glob("retrace-*.results")
        body = bytearray(kept.read_bytes())
        mark = b'"status":"agreed"'  # in a record's folded fields first, its row last
        at = body.index(mark) if where == "fold" else body.rindex(mark)
        body[at + 10 : at + 16] = b"AGREED"
        kept.write_bytes(bytes(body))
        ingest_into(lg, [str(b) for b in BUNDLES[12:]], "notes")
        assert "extends" not in assert_extends_like_full(lg).report["receipt"]
        # that full replay kept its own results, which the next run extends
        assert "extends" in assert_extends_like_full(lg).report["receipt"]
        kept.write_bytes(b"not a results file")
        assert "extends" not in assert_extends_like_full(lg).report["receipt"]


def test_a_kept_record_changed_outside_what_the_receipt_binds_is_not_used(
    tmp_path: Path,
) -> None:
    """A record's folded fields (evidence marks, per-constraint verdicts) are not in the
    outputs digest; the CRC of the file's records covers them, so a damaged one makes the next
    run full, with the full replay's report (carried as read, this flag would have counted a
    trial as regex_refused in the evidence line)."""
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest_into(lg, [str(b) for b in BUNDLES[:12]], "notes")
        retrace(ledger=lg)
        (kept,) = (tmp_path / "L" / "projections").glob("retrace-*.results")
        body = bytearray(kept.read_bytes())
        mark = b'"regex_refused":false'
        at = body.index(mark)
        body[at : at + len(mark)] = b'"regex_refused":true '  # valid JSON, the same length
        kept.write_bytes(bytes(body))
        ingest_into(lg, [str(b) for b in BUNDLES[12:]], "notes")
        assert "extends" not in assert_extends_like_full(lg).report["receipt"]


def test_results_of_another_ledger_are_not_used(tmp_path: Path) -> None:
    for name in ("A", "B"):
        with open_ledger(tmp_path / name, create=True) as lg:
            ingest_into(lg, [str(b) for b in BUNDLES[: 8 if name == "A" else 9]], "notes")
            retrace(ledger=lg)
    shutil.rmtree(tmp_path / "B" / "projections")
    shutil.copytree(tmp_path / "A" / "projections", tmp_path / "B" / "projections")
    with open_ledger(tmp_path / "B") as lg:
        ingest_into(lg, [str(BUNDLES[-1])], "notes")
        assert "extends" not in assert_extends_like_full(lg).report["receipt"]


def test_a_receipt_naming_a_wrong_tree_head_fails_verify(tmp_path: Path) -> None:
    lg = MemoryLedger()
    ingest_into(lg, [str(b) for b in BUNDLES[:8]], "notes")
    retrace(ledger=lg)
    ingest_into(lg, [str(b) for b in BUNDLES[8:]], "notes")
    got = retrace(ledger=lg)
    ev = next(e for e in lg.read(type="replay.completed", from_seq=lg.size() - 1))
    forged = ev.data()
    forged["receipt"]["extends"]["checkpoint"]["size"] -= 1
    lg.append([NewEvent(ev.stream, "replay.completed", forged, "forged:completed")])
    check = verify_ledger_receipt(lg, str(lg.size() - 1), recompute=True)
    assert any("binds another tree head" in p for p in check.problems), check.problems
    assert any(p.startswith("cannot recompute") for p in check.problems)
    assert verify_ledger_receipt(lg, f"{got.report['replay_id']}:completed").ok


def test_the_command_line_says_what_it_extended_and_full_forces_a_whole_replay(
    tmp_path: Path,
) -> None:
    led = tmp_path / "L"
    with open_ledger(led, create=True) as lg:
        ingest_into(lg, [str(b) for b in BUNDLES[:12]], "notes")
        retrace(ledger=lg)
        ingest_into(lg, [str(b) for b in BUNDLES[12:]], "notes")
    run = CliRunner().invoke(main, ["retrace", "--ledger", str(led), "--dry-run"])
    assert run.exit_code == 0, run.output
    assert f"12 trials carried forward, {len(BUNDLES) - 12} trials new or changed" in run.output
    run = CliRunner().invoke(main, ["retrace", "--ledger", str(led), "--full", "--json"])
    assert run.exit_code == 0, run.output
    assert "extends" not in json.loads(run.stdout)["receipt"]


def test_the_text_summary_of_an_extension_names_the_same_trials_as_a_full_replay(
    tmp_path: Path,
) -> None:
    """The summary counts statuses and names only disagreeing and not-re-checked trials
    without reading every row back; carried trials (whose differences are kept apart from
    their folded fields) are named with their differences, as the full replay names them."""
    led = tmp_path / "L"
    with open_ledger(led, create=True) as lg:
        ingest_into(lg, [str(b) for b in BUNDLES[:12]], "notes")
        for n, row in enumerate(retrace(ledger=lg, dry_run=True).to_json()["trials"][2:5]):
            rescore(lg, row["trial"], n)  # recorded grades the replay will disagree with
        retrace(ledger=lg)
        ingest_into(lg, [str(b) for b in BUNDLES[12:]], "more")
    args = ["retrace", "--ledger", str(led), "--dry-run"]
    extended = CliRunner().invoke(main, args)
    full = CliRunner().invoke(main, [*args, "--full"])
    assert "carried forward" in extended.output and "carried forward" not in full.output

    def named(output: str) -> list[str]:  # the headline and one line per named trial
        return [ln for ln in output.splitlines() if ln.startswith(("retrace ", "disagreed", "not_rechecked"))]

    lines = named(extended.output)
    assert sum(ln.startswith("disagreed") for ln in lines) >= 3, extended.output
    assert [ln.split(" — ", 1)[-1] for ln in lines] == [ln.split(" — ", 1)[-1] for ln in named(full.output)]
    assert extended.exit_code == full.exit_code
