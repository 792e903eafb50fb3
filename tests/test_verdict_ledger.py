"""Verdict grades over the ledger: recording units, admitting them, listing and verifying.

State is built through the Python API (ledger.app.verdicts) or, for streams the API would
refuse, through the store's raw ``append``; then the API, ``verify_admissions`` or the
CLI is checked against expectations taken from the GVC spec.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.app import units as vd
from ledger.cli import main
from ledger.errors import InvalidEvent
from ledger.log.store import Ledger, init_ledger, open_ledger
from schemas.envelope import NewEvent
from schemas.gvc import COUNTER_NAMES, Party

HUMAN = Party(identity="operator-1", kind="human", chain_id="")
AGENT = Party(identity="agent-2", kind="agent", chain_id="chain-1")
PRODUCER = Party(identity="producer-1", kind="agent", chain_id="chain-1")
CI = Party(identity="ci", kind="kernel", chain_id="ci-chain")


@pytest.fixture
def lg(tmp_path: Path):
    ledger = init_ledger(tmp_path / "lg")
    yield ledger
    ledger.close()


def _unit(
    lg: Ledger, unit: str, *, tier: str = "interop", author: Party = HUMAN, passed: bool = True
) -> None:
    vd.declare(lg, unit, "judge", tier, author, command="pytest -q")
    vd.produced(lg, unit, PRODUCER, "sha:a")
    vd.ran(lg, unit, "judge", passed, CI, "sha:a", exit_code=0 if passed else 1)


def test_record_and_admit_a_unit(lg: Ledger) -> None:
    _unit(lg, "u1")
    adm = vd.admit(lg, "u1")
    assert (adm.effective_grade, adm.evidence_kind, adm.applied_rank_ops) == (
        "interop",
        "interop",
        (),
    )
    assert adm.oracle_author == HUMAN and adm.oracle_runner == CI
    assert adm.counters["author_chain_unbound"] == 1  # chainless human author, counted
    stored = list(lg.read(stream="unit/u1"))
    assert [e.type for e in stored] == [
        "oracle.declared",
        "work.produced",
        "oracle.ran",
        "verdict.admitted",
    ]
    payload = stored[-1].data()
    assert (
        payload["through_version"] == 2
        and payload["registration"] == "verdict-grade-registration/v1"
    )
    assert set(payload["counters"]) == set(COUNTER_NAMES)
    assert vd.verify_admissions(lg) == []


def test_same_chain_judge_is_capped_and_recorded(lg: Ledger) -> None:
    _unit(lg, "u2", author=AGENT)
    adm = vd.admit(lg, "u2")
    assert adm.effective_grade == "constructed_check" and adm.applied_rank_ops == (
        "same_chain_cap",
    )


def test_undeclared_oracle_is_refused_by_name(lg: Ledger) -> None:
    vd.declare(lg, "u", "judge", "interop", HUMAN)
    size = lg.size()
    with pytest.raises(vd.UnitRejected, match="oracle 'ghost' ran but was never declared"):
        vd.ran(lg, "u", "ghost", True, CI, "sha:a")
    assert lg.size() == size  # nothing was appended


def test_late_declaration_is_refused(lg: Ledger) -> None:
    vd.produced(lg, "u", PRODUCER, "sha:a")
    with pytest.raises(vd.UnitRejected, match="declared after the work was produced"):
        vd.declare(lg, "u", "judge", "interop", HUMAN)


def test_events_after_admission_are_refused(lg: Ledger) -> None:
    _unit(lg, "u")
    vd.admit(lg, "u")
    with pytest.raises(vd.UnitRejected, match="arrives after the unit's admission"):
        vd.ran(lg, "u", "judge", False, CI, "sha:a")
    size = lg.size()
    again = vd.admit(lg, "u")  # an idempotent retry: the same record, nothing appended
    assert again == vd.admit(lg, "u") and lg.size() == size


def test_malformed_payload_is_refused_at_the_append_seam(lg: Ledger) -> None:
    """The unit-event payloads are closed: a misspelt key never reaches the log."""
    bad = {
        "unit": "u",
        "oracle_id": "j",
        "tier": "interop",
        "author": HUMAN.model_dump(),
        "teir": "x",
    }
    with pytest.raises(InvalidEvent, match="teir"):
        lg.append([NewEvent("unit/u", "oracle.declared", bad)])


def test_unit_without_work_is_admitted_fail_closed(lg: Ledger) -> None:
    """GVC § 8: no admission fact surfaces as unverified, labeled, never dropped."""
    vd.declare(lg, "u", "judge", "proof", HUMAN)
    adm = vd.admit(lg, "u")
    assert (adm.effective_grade, adm.provenance) == ("unverified", "missing_admission_fact")


def test_verify_names_units_with_broken_streams(lg: Ledger) -> None:
    """Raw appends bypass the API's checks; verify still names each offending unit."""
    _unit(lg, "late")
    vd.admit(lg, "late")
    ran = {
        "unit": "late",
        "oracle_id": "judge",
        "passed": False,
        "runner": CI.model_dump(),
        "content_identity": "sha:b",
    }
    lg.append([NewEvent("unit/late", "oracle.ran", ran)])
    ghost = {"unit": "ghosted", "oracle_id": "ghost", "passed": True, "runner": CI.model_dump()}
    lg.append([NewEvent("unit/ghosted", "oracle.ran", ghost)])
    problems = vd.verify_admissions(lg)
    assert len(problems) == 2
    assert problems[0].startswith("unit 'ghosted': oracle.ran at seq ")
    assert "oracle 'ghost' ran but was never declared" in problems[0]
    assert problems[1].startswith(
        "unit 'late': oracle.ran at seq 4 arrives after the unit's admission"
    )


def test_verify_names_an_admission_that_differs_from_its_rederivation(lg: Ledger) -> None:
    _unit(lg, "u", author=AGENT)
    honest = vd.admit(lg, "u")
    assert honest.effective_grade == "constructed_check"
    # A second ledger where someone recorded a flattering admission by hand.
    forged = {
        **vd.admission_payload("u", honest, "verdict-grade-registration/v1", 2),
        "effective_grade": "interop",
        "applied_rank_ops": [],
    }
    lg.append([NewEvent("unit/v", t, {**e.data(), "unit": "v"}) for t, e in _evidence(lg, "u")])
    lg.append([NewEvent("unit/v", "verdict.admitted", {**forged, "unit": "v"})])
    problems = vd.verify_admissions(lg)
    assert problems == [
        f"unit 'v': verdict.admitted at seq {lg.size() - 1} differs from its re-derivation: "
        "applied_rank_ops recorded [], re-derived ['same_chain_cap']; "
        "effective_grade recorded 'interop', re-derived 'constructed_check'"
    ]


def _evidence(lg: Ledger, unit: str):
    return [(e.type, e) for e in lg.read(stream=f"unit/{unit}") if e.type != "verdict.admitted"]


def test_admissions_weakest_first_and_pending_listed(lg: Ledger) -> None:
    _unit(lg, "strong", tier="known_answer")
    _unit(lg, "capped", author=AGENT)
    _unit(lg, "failed", passed=False)
    vd.declare(lg, "waiting", "judge", "interop", HUMAN)
    for unit in ("strong", "capped", "failed"):
        vd.admit(lg, unit)
    rows = vd.admissions(lg)
    assert [(r.unit, r.record["effective_grade"]) for r in rows] == [
        ("failed", "unverified"),
        ("capped", "constructed_check"),
        ("strong", "known_answer"),
    ]
    assert rows[0].record["failed_declared_evidence"] is True
    assert vd.pending_units(lg) == ["waiting"]


# ------------------------------------------------------------------------------- CLI


def _cli(args: list[str]):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_cli_record_admit_and_list(tmp_path: Path) -> None:
    init_ledger(tmp_path / "lg").close()
    led = ["--ledger", str(tmp_path / "lg")]
    steps = [
        ["verdict", "declare", "u1", "--oracle", "t", "--tier", "constructed_check",
         "--author", "op", "--author-kind", "human", "--command", "pytest -q", *led],
        ["verdict", "produced", "u1", "--producer", "p", "--producer-kind", "agent",
         "--producer-chain", "c1", "--content-identity", "sha:a", "--grade", "proof", *led],
        ["verdict", "ran", "u1", "--oracle", "t", "--failed", "--runner", "ci",
         "--runner-kind", "kernel", "--content-identity", "sha:a", *led],
    ]  # fmt: skip
    for args in steps:
        res = _cli(args)
        assert res.exit_code == 0, res.output
    res = _cli(["verdict", "admit", "u1", "--json", *led])
    assert res.exit_code == 0, res.output
    rec = json.loads(res.output)
    assert (rec["effective_grade"], rec["failed_declared_evidence"]) == ("unverified", True)
    assert (
        rec["counters"]["producer_mint_rejected"] == 1 and rec["counters"]["failed_declared"] == 1
    )
    listed = json.loads(_cli(["admissions", "--json", *led]).output)
    assert [a["unit"] for a in listed["admissions"]] == ["u1"] and listed["pending"] == []
    text = _cli(["admissions", *led]).output
    assert "FAILED-DECLARED-EVIDENCE" in text and "not correctness" in text


def test_cli_refusal_names_the_oracle(tmp_path: Path) -> None:
    init_ledger(tmp_path / "lg").close()
    res = CliRunner().invoke(
        main,
        ["verdict", "ran", "u", "--oracle", "nope", "--passed", "--runner", "ci",
         "--runner-kind", "kernel", "--ledger", str(tmp_path / "lg")],
    )  # fmt: skip
    assert res.exit_code == 1
    assert "oracle 'nope' ran but was never declared" in res.output


def test_cli_an_empty_or_multiline_unit_id_is_refused_by_name(tmp_path: Path) -> None:
    """`Error:` and exit 1 on every verb (a ValueError traceback reached the user)."""
    init_ledger(tmp_path / "lg").close()
    led = ["--ledger", str(tmp_path / "lg")]
    for unit in ("", "a\nb"):
        for args in (
            ["verdict", "declare", unit, "--oracle", "t", "--tier", "interop", "--author", "op",
             "--author-kind", "human", *led],
            ["verdict", "admit", unit, *led],
        ):  # fmt: skip
            res = CliRunner().invoke(main, args)
            assert isinstance(res.exception, SystemExit) and res.exit_code == 1, res.exception
            assert "a unit id must be a non-empty single line" in res.stderr


def test_cli_derive_json_shape_on_the_fixtures() -> None:
    from tests.gvc_support import CASES_PATH

    res = _cli(["verdict", "derive", str(CASES_PATH), "--json", "--check"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert list(out) == ["cases"] and len(out["cases"]) == 28
    raw = json.loads(CASES_PATH.read_text())["cases"]
    for case, want in zip(out["cases"], raw, strict=True):
        assert set(case) == {"name", "derived"} and case["name"] == want["name"]
        derived = case["derived"]
        assert list(derived) == [
            "effective_grade", "evidence_kind", "applied_rank_ops", "conflicting_evidence",
            "failed_declared_evidence", "provenance", "oracle_author", "oracle_runner",
            "work_producer", "counters",
        ]  # fmt: skip
        assert list(derived["counters"]) == list(COUNTER_NAMES)
        assert derived["effective_grade"] == want["expect"]["effective_grade"]
        assert derived["applied_rank_ops"] == want["expect"]["applied_rank_ops"]


def test_cli_derive_json_carries_provenance_and_custody_as_the_fixtures_expect() -> None:
    """``derived`` carries ``provenance`` and the three custody triples (GVC
    § 3: "A custody record MUST carry three role triples"); in every one of the 28 cases
    that names one of them, it equals the fixture's value, read from the raw file."""
    from tests.gvc_support import CASES_PATH

    res = _cli(["verdict", "derive", str(CASES_PATH), "--json"])
    raw = json.loads(CASES_PATH.read_text())["cases"]
    named = 0
    for case, want in zip(json.loads(res.output)["cases"], raw, strict=True):
        derived = case["derived"]
        assert derived["provenance"] in ("derived", "missing_admission_fact")
        producer = want["input"]["work_producer"]
        assert derived["work_producer"] == producer  # always the admitted work's producer
        for key in ("provenance", "oracle_author", "oracle_runner", "work_producer"):
            if key in want["expect"]:
                named += 1
                assert derived[key] == want["expect"][key], (case["name"], key)
        for role in ("oracle_author", "oracle_runner"):
            triple = derived[role]
            assert triple is None or set(triple) == {"identity", "kind", "chain_id"}
    assert named == 10  # 5 oracle_author, 2 oracle_runner, 2 work_producer, 1 provenance


def test_cli_derive_check_fails_on_a_wrong_expectation(tmp_path: Path) -> None:
    from tests.gvc_support import CASES_PATH

    raw = json.loads(CASES_PATH.read_text())
    raw["cases"] = raw["cases"][:1]
    raw["cases"][0]["expect"]["effective_grade"] = "proof"
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(raw))
    res = CliRunner().invoke(main, ["verdict", "derive", str(path), "--check"])
    assert res.exit_code == 1
    assert "effective_grade: got 'unverified', want 'proof'" in res.output


def test_jsonl_append_path_is_atomic_and_idempotent(tmp_path: Path) -> None:
    init_ledger(tmp_path / "lg").close()
    author = {"identity": "op", "kind": "human", "chain_id": ""}
    runner = {"identity": "ci", "kind": "kernel", "chain_id": "ci"}
    lines = [
        {
            "type": "oracle.declared",
            "unit": "u1",
            "oracle_id": "t",
            "tier": "interop",
            "author": author,
        },
        {
            "type": "work.produced",
            "unit": "u1",
            "producer": author | {"kind": "agent"},
            "content_identity": "sha:a",
        },
        {
            "type": "oracle.ran",
            "unit": "u1",
            "oracle_id": "t",
            "passed": True,
            "runner": runner,
            "content_identity": "sha:a",
        },
        {"type": "admit", "unit": "u1"},
        {"type": "oracle.ran", "unit": "u1", "oracle_id": "t", "passed": False, "runner": runner},
    ]
    path = tmp_path / "units.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = CliRunner().invoke(
        main, ["verdict", "record", str(path), "--ledger", str(tmp_path / "lg")]
    )
    assert res.exit_code == 1
    assert f"{path}:5: unit 'u1': oracle.ran arrives after the unit's admission" in res.output
    with open_ledger(tmp_path / "lg") as lg:
        assert lg.size() == 0  # all or nothing
    path.write_text("\n".join(json.dumps(x) for x in lines[:4]) + "\n")
    for attempt in range(2):  # the second run is an idempotent no-op
        res = CliRunner().invoke(
            main, ["verdict", "record", str(path), "--ledger", str(tmp_path / "lg")]
        )
        assert res.exit_code == 0, res.output
        assert res.output.splitlines()[-1].startswith("admitted u1: interop at seq 3")
        assert ("(already recorded)" in res.output) == (attempt == 1)
    with open_ledger(tmp_path / "lg") as lg:
        assert [r.record["effective_grade"] for r in vd.admissions(lg)] == ["interop"]
        assert lg.size() == 4 and vd.verify_admissions(lg) == []


# GVC § 9.3 decidable floor: default surfaces must not phrase a grade as a correctness
# verdict (the class of phrasings the spec's publication gate checks).
CORRECTNESS_CLAIM = re.compile(
    r"(?i)\b(?:verified|proven|graded|guaranteed)\s+correct\b|\bguarantees?\s+correctness\b"
)


def test_default_surfaces_make_no_correctness_claim(tmp_path: Path) -> None:
    from tests.gvc_support import CASES_PATH

    with init_ledger(tmp_path / "lg") as lg:
        _unit(lg, "u", tier="proof", author=Party(identity="k", kind="kernel", chain_id="chain-1"))
    led = ["--ledger", str(tmp_path / "lg")]
    outputs = [
        _cli(["verdict", "admit", "u", *led]).output,
        _cli(["admissions", *led]).output,
        _cli(["verdict", "derive", str(CASES_PATH)]).output,
        _cli(["verdict", "--help"]).output,
        (Path(__file__).resolve().parents[1] / "docs" / "readme" / "verdict.md").read_text(),
    ]
    assert "proof" in outputs[0] and "not correctness" in outputs[0]
    for text in outputs:
        assert CORRECTNESS_CLAIM.search(text) is None
    assert CORRECTNESS_CLAIM.search("the unit is verified correct")  # the predicate bites


def test_identical_repeat_is_a_no_op_and_a_different_one_is_refused(lg: Ledger) -> None:
    first = vd.declare(lg, "u", "judge", "interop", HUMAN)
    assert vd.declare(lg, "u", "judge", "interop", HUMAN) == first and lg.size() == 1
    with pytest.raises(vd.UnitRejected, match="oracle 'judge' declared twice"):
        vd.declare(lg, "u", "judge", "proof", HUMAN)


def test_write_units_is_one_atomic_batch(lg: Ledger) -> None:
    author = HUMAN.model_dump()
    decl = {"oracle_id": "j", "tier": "interop", "author": author}
    items = [
        ("oracle.declared", "a", decl),
        ("oracle.declared", "a", decl),  # repeated inside the batch: one event
        ("work.produced", "a", {"producer": PRODUCER.model_dump(), "content_identity": "sha:a"}),
        ("admit", "a", {}),
        ("oracle.ran", "b", {"oracle_id": "x", "passed": True, "runner": author}),
    ]
    with pytest.raises(vd.ItemRejected) as err:
        vd.write_units(lg, items)
    assert err.value.index == 4 and lg.size() == 0
    written = vd.write_units(lg, items[:4])
    assert [(w.seq, w.duplicate) for w in written] == [
        (0, False),
        (0, True),
        (1, False),
        (2, False),
    ]
    assert written[3].admission.effective_grade == "unverified"  # declared, never ran
    assert vd.verify_admissions(lg) == []


def test_a_unit_with_no_event_is_not_admitted(lg: Ledger) -> None:
    """A misspelt unit name has no event: admitting it is refused, naming the unit, and
    nothing is appended (an admission is for ever). In one batch, a unit declared earlier in
    the same batch may be admitted."""
    vd.declare(lg, "u", "judge", "proof", HUMAN)
    size = lg.size()
    with pytest.raises(vd.UnitRejected, match="'uu'.*no event was recorded"):
        vd.admit(lg, "uu")
    assert lg.size() == size
    declared = {"oracle_id": "judge", "tier": "proof", "author": HUMAN.model_dump()}
    written = vd.write_units(lg, [("oracle.declared", "v", declared), ("admit", "v", {})])
    assert written[-1].admission is not None and lg.size() == size + 2
