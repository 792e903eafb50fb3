"""ingest(): the shipped notes corpus, re-ingest, verdict-core runs, bad inputs, --skip-bad.

Expected counts are taken from the YAML files themselves (read here with PyYAML, not
through the importer), never from a previous run.
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ledger.app.ingest import IngestError
from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import Ledger, open_ledger
from ledger.sources.verdict_core import reassemble_events_file
from ledger.sources.yaml_safe import YamlLimits
from schemas.canonical import parse_json
from tests.data_paths import GRADING_BUNDLES, NOTES, PACKS, VCORE_DEMO_RUN

ROOT = Path(__file__).resolve().parents[1]
DEMO_RUN = VCORE_DEMO_RUN
M0 = "native_shared_domain_policy_demo_20260803_063010_trial0"
N0 = "native_shared_domain_gate_demo_20260625_184817_trial0"


@pytest.fixture
def lg(tmp_path: Path) -> Iterator[Ledger]:
    with open_ledger(tmp_path / "ledger", create=True) as ledger:
        yield ledger


def _load(p: Path):
    return yaml.safe_load(p.read_text())


def _expected(bundle: Path) -> dict[str, int]:
    """Event counts a bundle must give, read straight off its files."""
    traj = _load(bundle / "trajectory.yaml")
    msgs = traj["messages"]
    has_log = (bundle / "tool_log.yaml").is_file()
    log = _load(bundle / "tool_log.yaml") if has_log else []
    conversation = [m for m in msgs if m["role"] in ("user", "assistant")]
    declared = sum(len(m["tool_calls"] or []) for m in msgs)
    answered = len(log) if has_log else sum(m["role"] == "tool" for m in msgs)
    return {
        "trial.registered": 1,
        "trial.message": len(msgs),
        "trial.tool_call": len(log),
        "trial.ended": 1,
        "grade.recorded": int((bundle / "grade.yaml").is_file()),
        # one event per user/assistant message, per declared call, per answered call
        "timeline.event": len(conversation) + declared + answered,
    }


def _by_stream(ledger: Ledger) -> dict[str, list]:
    out: dict[str, list] = {}
    for ev in ledger.read():
        out.setdefault(ev.stream, []).append(ev)
    return out


def test_notes_corpus_counts_match_the_files(lg: Ledger) -> None:
    report = ingest(lg, [NOTES])
    bundles = sorted(p.parent for p in NOTES.glob("*/*/trajectory.yaml"))
    assert len(bundles) == 17
    streams = _by_stream(lg)
    trial_streams = {s: evs for s, evs in streams.items() if s.startswith("trial/")}
    assert len(trial_streams) == 17
    for bundle in bundles:
        task_id = _load(bundle / "trajectory.yaml")["task_id"]
        stream = f"trial/notes_duplicate_check/{task_id}/{bundle.name}"
        evs = trial_streams[stream]
        got = Counter(e.type for e in evs)
        assert {k: got.get(k, 0) for k in _expected(bundle)} == _expected(bundle), bundle.name
        assert [e.stream_version for e in evs] == list(range(len(evs)))
        registered = evs[0].data()
        assert evs[0].type == "trial.registered"
        assert registered["record_view"] is (bundle / "tool_log.yaml").is_file()
        entry = next(
            b
            for b in _load(bundle.parent / "corpus.yaml")["bundles"]
            if b["directory"] == bundle.name
        )
        assert registered["met"] is entry["met"]
        assert registered["bundle_path"] == f"{bundle.parent.name}/{bundle.name}"
        assert registered["task"] == _load(bundle / "task.yaml")
        assert next(e for e in evs if e.type == "grade.recorded").data()["grade"] == _load(
            bundle / "grade.yaml"
        )
        assert Counter(json_type(e) for e in evs) == Counter(_order(evs))
    assert sum(e[0].data()["record_view"] for e in trial_streams.values()) == 12
    assert report.trials_new == 17 and report.trials_present == 0
    assert report.events_new == lg.size()


def json_type(e) -> str:
    return e.type


def _order(evs) -> list[str]:
    """The documented order: registered, messages, tool calls, ended, states, grade, timeline."""
    rank = {
        "trial.registered": 0,
        "trial.message": 1,
        "trial.tool_call": 2,
        "trial.ended": 3,
        "state.recorded": 4,
        "grade.recorded": 5,
        "timeline.event": 6,
    }
    types = [e.type for e in evs]
    assert types == sorted(types, key=rank.__getitem__)
    return types


def test_reingest_appends_nothing_and_says_so(lg: Ledger) -> None:
    first = ingest(lg, [NOTES, PACKS, DEMO_RUN])
    size = lg.size()
    again = ingest(lg, [NOTES, PACKS, DEMO_RUN])
    assert lg.size() == size
    assert again.events_new == 0
    assert again.events_present == first.events_new
    assert (again.trials_present, again.packs_present, again.runs_present) == (17, 2, 1)
    assert again.summary().startswith(f"0 new, {size} already present")


def test_single_bundle_and_part_name_the_same_stream_as_the_part(lg: Ledger) -> None:
    ingest(lg, [NOTES / "met"])
    size = lg.size()
    report = ingest(lg, [NOTES / "met" / M0])
    assert (report.events_new, report.trials_present) == (0, 1)
    assert lg.size() == size


def test_verdict_core_run_keeps_every_byte(lg: Ledger) -> None:
    ingest(lg, [DEMO_RUN])
    evs = list(lg.read(stream="run/demo-run"))
    raw = (DEMO_RUN / "events.jsonl").read_bytes()
    lines = [ln for ln in raw.decode().splitlines() if ln.strip()]
    assert [e.type for e in evs] == ["run.event"] * len(lines) + ["receipt.issued"]
    assert len(lines) == 83
    assert [e.data()["raw"] for e in evs[:-1]] == lines
    receipt = evs[-1].data()
    assert receipt["receipt"] == yaml.safe_load((DEMO_RUN / "receipt.json").read_text())
    rebuilt = reassemble_events_file([e.data() for e in evs[:-1]], receipt["events_file"])
    assert rebuilt == raw
    assert "sha256:" + hashlib.sha256(rebuilt).hexdigest() == receipt["receipt"]["events_digest"]
    size = lg.size()
    assert ingest(lg, [DEMO_RUN]).events_new == 0
    assert lg.size() == size


def test_blank_lines_survive_reassembly(tmp_path: Path, lg: Ledger) -> None:
    run = tmp_path / "run"
    shutil.copytree(DEMO_RUN, run)
    data = (run / "events.jsonl").read_bytes()
    first, rest = data.split(b"\n", 1)
    (run / "events.jsonl").write_bytes(first + b"\n   \n" + rest + b"\n")
    ingest(lg, [run])
    evs = list(lg.read(stream="run/demo-run"))
    rebuilt = reassemble_events_file([e.data() for e in evs[:-1]], evs[-1].data()["events_file"])
    assert rebuilt == (run / "events.jsonl").read_bytes()


# --------------------------------------------------------------------------- bad inputs


def _corpus_copy(tmp_path: Path, *names: tuple[str, str]) -> Path:
    """A flat collection holding copies of the named (part, bundle) dirs."""
    out = tmp_path / "coll"
    for part, name in names:
        shutil.copytree(NOTES / part / name, out / name)
    return out


def _edit_yaml(path: Path, fn) -> None:
    doc = _load(path)
    fn(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def _assert_aborts(lg: Ledger, paths, match: str, kind: str = "bad_input", **kw) -> IngestError:
    ingest(lg, [PACKS])  # so "unchanged" is about a non-empty ledger
    size = lg.size()
    with pytest.raises(IngestError, match=match) as exc:
        ingest(lg, paths, **kw)
    assert lg.size() == size
    assert exc.value.kind == kind
    return exc.value


def test_truncated_tool_log_aborts_naming_the_file(tmp_path: Path, lg: Ledger) -> None:
    """Cut inside the last quoted timestamp: a YAML syntax error, named with its line."""
    coll = _corpus_copy(tmp_path, ("met", M0), ("not_met", N0))
    log = coll / M0 / "tool_log.yaml"
    data = log.read_bytes()
    log.write_bytes(data[: data.rindex(b"timestamp: '") + 20])
    _assert_aborts(lg, [coll], rf"{M0}/tool_log.yaml:\d+: not valid YAML")


def test_tool_log_truncated_between_keys_misses_a_required_key(tmp_path: Path, lg: Ledger) -> None:
    """Cut after the last record's arguments: still YAML, but the record lacks executor."""
    coll = _corpus_copy(tmp_path, ("met", M0))
    log = coll / M0 / "tool_log.yaml"
    data = log.read_bytes()
    log.write_bytes(data[: data.rindex(b"  executor:")])
    _assert_aborts(
        lg, [coll], r"tool_log.yaml: key '\[1\].executor': expected this key to be present"
    )


def test_tool_log_that_is_not_a_list_is_never_read_as_absent(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    (coll / M0 / "tool_log.yaml").write_text("")
    _assert_aborts(lg, [coll], r"tool_log.yaml: expected a YAML list of recorded tool calls")


def test_record_naming_an_undeclared_call(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    _edit_yaml(
        coll / M0 / "tool_log.yaml", lambda log: log[1].update(call_id="call_nobody_declared")
    )
    err = _assert_aborts(lg, [coll], "call_nobody_declared", kind="inconsistent")
    assert M0 in str(err)


def test_tool_name_mismatch(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    _edit_yaml(coll / M0 / "tool_log.yaml", lambda log: log[0].update(tool_name="delete_note"))
    err = _assert_aborts(lg, [coll], "call_pTuZjSgt8mq5JQgmJdZ8fPRe", kind="inconsistent")
    assert "delete_note" in str(err)


def test_tool_message_answering_nothing(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("not_met", N0))  # no tool_log: the messages are read (G6b)

    def orphan(traj):
        tool = next(m for m in traj["messages"] if m["role"] == "tool")
        tool["tool_call_id"] = "toolu_answers_nothing"

    _edit_yaml(coll / N0 / "trajectory.yaml", orphan)
    _assert_aborts(lg, [coll], "toolu_answers_nothing", kind="inconsistent")


def test_unknown_keys_are_kept_and_named_not_refused(tmp_path: Path, lg: Ledger) -> None:
    """Forward compatibility (README § Compatibility): a key a newer recorder wrote (top level, on a
    message, on a tool_log record) does not make the bundle unreadable. Ingest keeps it
    (top level in trajectory_meta, message/record keys under ``unrecognized``) and names
    each one on trial.registered's ``unknown_keys``; the timeline is built as before."""
    coll = _corpus_copy(tmp_path, ("met", M0))
    _edit_yaml(coll / M0 / "trajectory.yaml", lambda t: t.update(mesages=[]))
    _edit_yaml(coll / M0 / "trajectory.yaml", lambda t: t["messages"][1].update(mood="calm"))
    _edit_yaml(coll / M0 / "tool_log.yaml", lambda r: r[0].update(cost_usd=0.25))
    ingest(lg, [coll])
    (events,) = _by_stream(lg).values()
    typed = [(e.type, parse_json(e.payload)) for e in events]
    registered = next(p for t, p in typed if t == "trial.registered")
    assert registered["unknown_keys"] == [
        "tool_log[0].cost_usd",
        "trajectory.mesages",
        "trajectory.messages[1].mood",
    ]
    assert registered["trajectory_meta"]["mesages"] == []
    message = next(p for t, p in typed if t == "trial.message" and p["index"] == 1)
    assert message["unrecognized"] == {"mood": "calm"}
    record = next(p for t, p in typed if t == "trial.tool_call")
    assert record["unrecognized"] == {"cost_usd": 0.25}
    assert "mood" not in message and "cost_usd" not in record


def test_wrong_type_names_key_and_expectation(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    _edit_yaml(coll / M0 / "trajectory.yaml", lambda t: t["messages"][1].update(role="bot"))
    _assert_aborts(
        lg,
        [coll],
        r"key 'messages\[1\].role': expected one of system, user, assistant, tool, got str 'bot'",
    )


def test_bad_status_in_record(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    _edit_yaml(coll / M0 / "tool_log.yaml", lambda log: log[0].update(status="exploded"))
    _assert_aborts(lg, [coll], r"tool_log.yaml: key '\[0\].status': expected one of success, error")


def test_integer_beyond_64_bits_is_a_named_error(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    _edit_yaml(coll / M0 / "metrics.yaml", lambda m: m.update(turns=2**70))
    # named by file and line where it is written, not later by the encoder
    _assert_aborts(lg, [coll], r"metrics\.yaml:\d+: integer \d+ is outside the signed 64-bit range")


def test_alias_bomb_in_a_bundle_is_refused(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 8) + "]\n" for i in range(1, 9)
    )
    (coll / M0 / "metrics.yaml").write_text(bomb)
    _assert_aborts(lg, [coll], "metrics.yaml: aliases expand")


def test_oversize_file_is_refused_by_name(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    _assert_aborts(
        lg,
        [coll],
        r"trajectory.yaml: file is \d+ bytes, over the 2000-byte limit",
        limits=YamlLimits(max_bytes=2000),
    )


def test_corpus_listing_a_missing_bundle(tmp_path: Path, lg: Ledger) -> None:
    part = tmp_path / "met"
    shutil.copytree(NOTES / "met", part)
    shutil.rmtree(part / M0)
    _assert_aborts(lg, [part], rf"corpus.yaml: key 'bundles\[0\].directory'.*{M0}")


def test_skip_bad_records_each_skip_and_ingests_the_rest(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0), ("not_met", N0))
    _edit_yaml(coll / M0 / "tool_log.yaml", lambda log: log[0].update(status="exploded"))
    report = ingest(lg, [coll], skip_bad=True)
    assert report.trials_new == 1
    assert [s["source"] for s in report.skipped] == [f"{coll}/{M0}"]
    skipped = [e.data() for e in lg.read(type="ingest.skipped")]
    assert len(skipped) == 1
    assert skipped[0]["key"] == "[0].status"
    assert skipped[0]["file"].endswith(f"{M0}/tool_log.yaml")
    assert "success" in skipped[0]["expected"]
    size = lg.size()
    ingest(lg, [coll], skip_bad=True)  # the same skip is recorded once
    assert lg.size() == size


def test_inconsistent_trial_kept_as_data(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    _edit_yaml(coll / M0 / "tool_log.yaml", lambda log: log[0].update(tool_name="delete_note"))
    report = ingest(lg, [coll], keep_inconsistent=True)
    assert report.trials_new == 1 and len(report.inconsistent) == 1
    evs = list(lg.read(stream=report.inconsistent[0]["stream"]))
    timeline = [e.data() for e in evs if e.type == "timeline.event"]
    assert len(timeline) == 1
    assert timeline[0]["inconsistency"]["call_id"] == "call_pTuZjSgt8mq5JQgmJdZ8fPRe"
    assert sum(e.type == "trial.tool_call" for e in evs) == 2  # the raw evidence is intact


def test_changed_bundle_is_reported_not_merged(tmp_path: Path, lg: Ledger) -> None:
    coll = _corpus_copy(tmp_path, ("met", M0))
    ingest(lg, [coll])
    _edit_yaml(coll / M0 / "trajectory.yaml", lambda t: t["messages"][0].update(content="edited"))
    size = lg.size()
    with pytest.raises(
        IngestError, match=rf"{M0} changed since it was ingested.*event 1 \(trial.message\)"
    ) as exc:
        ingest(lg, [coll])
    assert exc.value.kind == "changed"
    assert lg.size() == size
    report = ingest(lg, [coll], skip_bad=True)
    assert report.events_new == 0 and len(report.skipped) == 1
    assert [e.data()["reason"] for e in lg.read(type="ingest.skipped")][0].startswith(
        f"{coll}/{M0} changed"
    )


def test_run_dir_layout_names_trials_like_curate(tmp_path: Path, lg: Ledger) -> None:
    run = tmp_path / "myrun"
    shutil.copytree(
        NOTES / "met" / M0, run / "trials" / "notes_add_note_duplicate_check_policy" / "0"
    )
    report = ingest(lg, [run])
    assert report.trials_new == 1
    assert lg.streams(prefix="trial/") == [
        "trial/myrun/notes_add_note_duplicate_check_policy/myrun_trial0"
    ]


def test_corpus_option_overrides_the_name(lg: Ledger) -> None:
    ingest(lg, [NOTES / "not_met"], corpus="notes_duplicate_check")
    size = lg.size()
    assert ingest(lg, [NOTES]).trials_present == 5
    assert lg.size() > size  # the 12 met/ trials were new
    assert all(s.startswith("trial/notes_duplicate_check/") for s in lg.streams(prefix="trial/"))


def test_nothing_readable_is_an_error(tmp_path: Path, lg: Ledger) -> None:
    with pytest.raises(IngestError, match="no trial bundle"):
        ingest(lg, [tmp_path])


def test_collection_above_corpora_keeps_corpus_rows(tmp_path: Path, lg: Ledger) -> None:
    shutil.copytree(NOTES, tmp_path / "all" / "notes")
    report = ingest(lg, [tmp_path / "all"])
    assert report.paths == [{"path": str(tmp_path / "all"), "kind": "collection"}]
    registered = [e.data() for e in lg.read(type="trial.registered")]
    assert len(registered) == 17
    assert sorted(r["met"] for r in registered) == [False] * 5 + [True] * 12
    assert {r["corpus"] for r in registered} == {"all"}


def test_packs_become_registration_and_migration_events(lg: Ledger) -> None:
    ingest(lg, [PACKS])
    for pack in ("notes_duplicate_check_narrowed", "notes_duplicate_check_policy_narrowed"):
        evs = list(lg.read(stream=f"pack/{pack}"))
        assert [e.type for e in evs] == ["pack.registered", "migration.declared"]
        reg, mig = evs[0].data(), evs[1].data()
        assert reg["task"] == _load(PACKS / pack / "task.yaml")
        assert reg["grading"] == _load(PACKS / pack / "grading.yaml")
        assert reg["grading_source"] == "grading.yaml"
        assert reg["task_id"] == _load(PACKS / pack / "task.yaml")["task_id"]
        assert mig["declaration"] == _load(PACKS / pack / "migration.yaml")


def test_authored_bundle_with_states_and_inline_record(lg: Ledger) -> None:
    """grading_bundles/: bundle.yaml as the task snapshot, env.yaml as the final state,
    an inline ``tool_log: []`` (a record view of a trial that called nothing)."""
    bundle = (
        GRADING_BUNDLES / "expect_initial_state_refusal"
    )
    ingest(lg, [bundle])
    evs = list(lg.read())
    reg = evs[0].data()
    assert reg["task_source"] == "bundle.yaml" and reg["record_view"] is True
    states = {e.data()["which"]: e.data() for e in evs if e.type == "state.recorded"}
    assert states["initial"]["state"] == _load(bundle / "bundle.yaml")["initial_state"]
    assert states["final"]["state"] == _load(bundle / "env.yaml")
    assert sum(e.type == "trial.tool_call" for e in evs) == 0


def test_a_directory_of_everything_ingests_everything_once(tmp_path: Path, lg: Ledger) -> None:
    """corpora/-style: a corpus, a pack set and a run side by side; re-ingesting any part
    afterwards (under the same corpus name) finds it already present."""
    root = tmp_path / "corpora"
    shutil.copytree(NOTES, root / "notes")
    shutil.copytree(PACKS, root / "packs")
    shutil.copytree(DEMO_RUN, root / "verdict-core" / "demo-run")
    (root / "README.md").write_text("shipped corpora\n")
    report = ingest(lg, [root])
    assert (report.trials_new, report.packs_new, report.runs_new) == (17, 2, 1)
    size = lg.size()
    again = ingest(
        lg, [root / "packs", root / "verdict-core" / "demo-run", root / "notes"], corpus="corpora"
    )
    assert (again.trials_present, again.packs_present, again.runs_present) == (17, 2, 1)
    assert lg.size() == size


def test_oversize_run_file_is_refused_by_name(lg: Ledger) -> None:
    with pytest.raises(
        IngestError, match=r"demo-run/events.jsonl: file is 19242 bytes, over the 10000-byte limit"
    ):
        ingest(lg, [DEMO_RUN], limits=YamlLimits(max_bytes=10_000))
    assert lg.size() == 0


def test_events_others_append_to_a_trial_stream_are_not_a_change(lg: Ledger) -> None:
    from schemas.envelope import NewEvent

    ingest(lg, [NOTES / "met" / M0])
    (stream,) = lg.streams(prefix="trial/")
    lg.append([NewEvent(stream, "ext.note", {"by": "a reviewer"})])
    size = lg.size()
    report = ingest(lg, [NOTES / "met" / M0])
    assert (report.trials_present, report.events_new, lg.size()) == (1, 0, size)
