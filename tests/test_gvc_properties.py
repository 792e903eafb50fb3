"""Properties of the GVC derivation over generated declared sets, and pinned examples for
the choices the spec leaves open (each docstring says which clause it resolves)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.verdicts.derive import Oracle, UnitEvidence, derive
from replay.verdicts.evidence import UnitEvent, derive_verdict
from schemas.gvc import RANK_OPS, UNRUN_DECLARED_CAP, Party
from tests.gvc_support import ladder

LADDER = ladder()
TIERS = [*LADDER.grades, "certified"]
CHAINS = ["", "chain-1", "chain-2"]
CONTENT = ["", "sha:a", "sha:b"]

parties = st.builds(
    Party,
    identity=st.sampled_from(["a-1", "a-2", "h-1", "k-1"]),
    kind=st.sampled_from(["human", "agent", "kernel"]),
    chain_id=st.sampled_from(CHAINS),
)


@st.composite
def oracles(draw: st.DrawFn, index: int = 0) -> Oracle:
    ran = draw(st.booleans())
    return Oracle(
        oracle_id=f"o{index}",
        tier=draw(st.sampled_from(TIERS)),
        ran=ran,
        passed=ran and draw(st.booleans()),
        author=draw(parties),
        runner=draw(st.none() | parties),
        content_identity=draw(st.sampled_from(CONTENT)) if ran else "",
    )


@st.composite
def evidences(draw: st.DrawFn) -> UnitEvidence:
    n = draw(st.integers(0, 5))
    declared = tuple(draw(oracles(i)) for i in range(n))
    return UnitEvidence(
        declared=declared,
        work_producer=draw(parties),
        current_content_identity=draw(st.sampled_from(CONTENT)),
        producer_supplied_grade=draw(st.none() | st.sampled_from(TIERS)),
    )


def record(ev: UnitEvidence) -> dict:
    return derive(ev, LADDER).record()


@settings(max_examples=200)
@given(evidences(), st.randoms(use_true_random=False))
def test_declaration_order_never_changes_the_record(ev: UnitEvidence, rnd) -> None:
    """§ 5.1: the same declared set in any order yields byte-identical records."""
    shuffled = list(ev.declared)
    rnd.shuffle(shuffled)
    assert record(replace(ev, declared=tuple(shuffled))) == record(ev)


@settings(max_examples=200)
@given(evidences())
def test_record_invariants(ev: UnitEvidence) -> None:
    adm = derive(ev, LADDER)
    rank = LADDER.rank
    assert LADDER.is_member(adm.evidence_kind) and LADDER.is_member(adm.effective_grade)
    # every op applied lowered the grade by at least one ordinal tier
    assert len(adm.applied_rank_ops) <= rank(adm.evidence_kind) - rank(adm.effective_grade)
    # ops are retained in application order, each at most once
    positions = [RANK_OPS.index(op) for op in adm.applied_rank_ops]
    assert positions == sorted(set(positions))
    c = adm.counters
    assert c["degraded"] == sum(op != UNRUN_DECLARED_CAP for op in adm.applied_rank_ops)
    assert c["unverified_from_unrun_declared"] == (UNRUN_DECLARED_CAP in adm.applied_rank_ops)
    failed = sum(o.ran and not o.passed for o in ev.declared)
    assert c["failed_declared"] == failed and adm.failed_declared_evidence == (failed > 0)
    assert all(v in (0, 1) for k, v in c.items() if k not in ("degraded", "failed_declared"))
    if any(not o.ran for o in ev.declared):
        assert adm.effective_grade == LADDER.floor


@settings(max_examples=200)
@given(evidences(), st.sampled_from(TIERS))
def test_a_failed_judge_off_the_base_tier_only_flags(ev: UnitEvidence, tier: str) -> None:
    """§ 5.1: failed evidence is weaker, not negative — it neither caps nor demotes."""
    before = derive(ev, LADDER)
    if tier == before.evidence_kind:
        return
    failing = Oracle("extra", tier, True, False, Party(identity="x", kind="human"), None, "sha:a")
    after = derive(replace(ev, declared=(*ev.declared, failing)), LADDER)
    assert after.effective_grade == before.effective_grade
    assert after.applied_rank_ops == before.applied_rank_ops
    assert after.failed_declared_evidence is True
    assert after.counters["failed_declared"] == before.counters["failed_declared"] + 1


@settings(max_examples=200)
@given(evidences(), st.none() | st.sampled_from(TIERS))
def test_producer_supplied_grade_never_governs(ev: UnitEvidence, minted: str | None) -> None:
    """§ 6: the derived record governs whatever the producer mints; only disagreement counts."""
    plain = derive(replace(ev, producer_supplied_grade=None), LADDER)
    adm = derive(replace(ev, producer_supplied_grade=minted), LADDER)
    assert adm.effective_grade == plain.effective_grade
    want = int(minted is not None and minted != plain.effective_grade)
    assert adm.counters["producer_mint_rejected"] == want
    assert {**adm.counters, "producer_mint_rejected": 0} == dict(plain.counters)


@settings(max_examples=100)
@given(evidences())
def test_missing_admission_evidence_fails_closed(ev: UnitEvidence) -> None:
    """§ 8: whatever was declared, no admission fact surfaces as the floor, labeled."""
    adm = derive(replace(ev, admission_evidence=False), LADDER)
    assert (adm.effective_grade, adm.evidence_kind, adm.provenance) == (
        "unverified",
        "unverified",
        "missing_admission_fact",
    )
    assert set(adm.counters.values()) == {0} and adm.applied_rank_ops == ()


@settings(max_examples=100)
@given(evidences())
def test_events_and_direct_evidence_derive_the_same(ev: UnitEvidence) -> None:
    """The unit-stream path (declared → produced → ran) reads exactly the evidence."""
    events = [
        UnitEvent(
            "oracle.declared",
            {
                "unit": "u",
                "oracle_id": o.oracle_id,
                "tier": o.tier,
                "author": o.author.model_dump(),
            },
        )
        for o in ev.declared
    ]
    work = {
        "unit": "u",
        "producer": ev.work_producer.model_dump(),
        "content_identity": ev.current_content_identity,
    }
    if ev.producer_supplied_grade is not None:
        work["producer_supplied_grade"] = ev.producer_supplied_grade
    events.append(UnitEvent("work.produced", work))
    for o in ev.declared:
        if o.ran:
            runner = (o.runner or Party(identity="ci", kind="kernel")).model_dump()
            events.append(
                UnitEvent(
                    "oracle.ran",
                    {
                        "unit": "u",
                        "oracle_id": o.oracle_id,
                        "passed": o.passed,
                        "runner": runner,
                        "content_identity": o.content_identity,
                    },
                )
            )
    via_events = derive_verdict(events, LADDER).record()
    direct = record(ev)
    for key in ("oracle_runner",):
        via_events.pop(key), direct.pop(key)
    assert via_events == direct


# ------------------------------------------------------- pinned spec-ambiguity choices

SAME = Party(identity="producer-1", kind="agent", chain_id="chain-1")


def _passing(
    ident: str, chain: str, content: str, tier: str = "interop", kind: str = "agent"
) -> Oracle:
    return Oracle(
        ident, tier, True, True, Party(identity=ident, kind=kind, chain_id=chain), None, content
    )


def test_tied_members_each_run_the_whole_pipeline() -> None:
    """§ 5.1 tied set with two different escapes. A is same-chain (capped) but fresh; B
    is independent but stale. Read per operation, the record would escape both caps
    and claim `interop` although no single oracle earned it; we fold whole outcomes,
    so the record keeps A's `constructed_check` and attributes it to A."""
    ev = UnitEvidence(
        declared=(_passing("agent-a", "chain-1", "sha:b"), _passing("agent-b", "chain-2", "sha:a")),
        work_producer=SAME,
        current_content_identity="sha:b",
    )
    adm = derive(ev, LADDER)
    assert adm.effective_grade == "constructed_check"
    assert adm.applied_rank_ops == ("same_chain_cap",)
    assert adm.oracle_author.identity == "agent-a"
    assert adm.counters["tied_uncap"] == 0  # the surviving record is itself capped


def test_observability_populations_count_once_over_the_tied_set() -> None:
    """§ 5.1 counts an indeterminate question over a tied set once per derivation; the
    observability populations follow the selected base oracle, so two chainless tied
    authors count 1, not 2. Both chains empty counts both populations: § 5.3.1 makes
    each a MUST on its own condition. (The reference runner in the public GVC
    repository classifies an empty author chain first and then never counts
    same_chain_indeterminate; we follow the spec's two separate MUSTs.)"""
    ev = UnitEvidence(
        declared=(_passing("h-1", "", "sha:a"), _passing("h-2", "", "sha:a")),
        work_producer=Party(identity="p", kind="agent", chain_id=""),
        current_content_identity="sha:a",
    )
    c = derive(ev, LADDER).counters
    assert (c["author_chain_unbound"], c["same_chain_indeterminate"]) == (1, 1)


def test_kernel_exemption_counted_when_it_kept_a_cap_off() -> None:
    """§ 5.3.1 'each kernel-kind proof exemption MUST be counted': an exemption is
    counted when it is what kept the same-chain cap off a proof grade; a kernel proof
    from another chain was never going to be capped, so nothing was exempted."""
    same = UnitEvidence(
        declared=(_passing("lean", "chain-1", "sha:a", tier="proof", kind="kernel"),),
        work_producer=SAME,
        current_content_identity="sha:a",
    )
    other = replace(
        same, declared=(_passing("lean", "chain-9", "sha:a", tier="proof", kind="kernel"),)
    )
    assert derive(same, LADDER).counters["proof_kernel_exempt"] == 1
    adm = derive(other, LADDER)
    assert adm.effective_grade == "proof" and adm.counters["proof_kernel_exempt"] == 0


def test_tied_uncap_counts_an_escaped_staleness_reversion() -> None:
    """Reading (b) (docs/readme/verdict.md). GVC § 5.1 'Tie selection': "A
    derivation in which the tied-set MAX leaves the grade uncapped while at least one
    tied member would have been capped MUST count the tied-uncap population", with
    § 5.1 'Tied top tier': "each rank operation of step 3 whose predicate depends on the
    base oracle is evaluated against every tied oracle". Staleness reversion is such an
    operation (it reads the base oracle's judged content), so 'capped' covers it: two
    tied oracles, one judged stale content, the fresh one carries the record uncapped
    and the pattern is counted. (The public reference runner counts only escaped
    same-chain caps here.)"""
    ev = UnitEvidence(
        declared=(_passing("h-1", "chain-2", "sha:old"), _passing("h-2", "chain-2", "sha:new")),
        work_producer=SAME,
        current_content_identity="sha:new",
    )
    adm = derive(ev, LADDER)
    assert adm.effective_grade == "interop" and adm.oracle_author.identity == "h-2"
    assert adm.counters["tied_uncap"] == 1


def test_both_chains_empty_counts_both_populations() -> None:
    """Reading (a) (docs/readme/verdict.md). GVC § 5.3.1 states two separate
    MUSTs: "if it [the work producer's chain_id] is nonetheless empty, the question is
    undecidable and the derivation MUST count the same-chain-indeterminate population"
    and "A base oracle author with an empty chain_id ... MUST be counted in the
    distinct author_chain_unbound population — never folded into
    same-chain-indeterminate". Both conditions hold, so both populations count (not
    only ``author_chain_unbound``); empty chains are never "byte-equal" non-empty
    chains, so no cap, and nothing is degraded."""
    ev = UnitEvidence(
        declared=(_passing("h-1", "", "sha:a"),),
        work_producer=Party(identity="p", kind="agent", chain_id=""),
        current_content_identity="sha:a",
    )
    adm = derive(ev, LADDER)
    assert (adm.effective_grade, adm.applied_rank_ops) == ("interop", ())
    c = adm.counters
    assert (c["same_chain_indeterminate"], c["author_chain_unbound"], c["degraded"]) == (1, 1, 0)
    # each population on its own condition: only one side empty counts only its own
    author_only = replace(ev, work_producer=SAME)
    producer_only = replace(ev, declared=(_passing("h-1", "chain-2", "sha:a"),))
    c = derive(author_only, LADDER).counters
    assert (c["same_chain_indeterminate"], c["author_chain_unbound"]) == (0, 1)
    c = derive(producer_only, LADDER).counters
    assert (c["same_chain_indeterminate"], c["author_chain_unbound"]) == (1, 0)


def test_same_tier_disagreement_at_base_unverified_sets_the_flag_only() -> None:
    """Reading (c) (docs/readme/verdict.md). GVC § 5.3.2: "A same-tier
    disagreement exists when, among the declared oracles whose tier equals the base
    grade's tier, at least two ran and at least one passed while at least one did not
    pass" — two ``unverified``-tier judges, one passing, one failing, make the base
    ``unverified`` and are such a disagreement. "`unverified` demotes to itself" and
    "A conflict whose effective grade is already `unverified` therefore sets the flag
    while recording no operation and incrementing no counter": the flag is set, no
    ``conflict_demotion`` is recorded, ``degraded`` stays 0 (the failing judge still
    counts in ``failed_declared``, § 5.1)."""
    author = Party(identity="h-1", kind="human", chain_id="")
    ev = UnitEvidence(
        declared=(
            Oracle("pass", "unverified", True, True, author, None, "sha:a"),
            Oracle("fail", "unverified", True, False, author, None, "sha:a"),
        ),
        work_producer=SAME,
        current_content_identity="sha:a",
    )
    adm = derive(ev, LADDER)
    assert (adm.evidence_kind, adm.effective_grade) == ("unverified", "unverified")
    assert adm.conflicting_evidence is True and adm.applied_rank_ops == ()
    assert adm.failed_declared_evidence is True
    assert (adm.counters["degraded"], adm.counters["failed_declared"]) == (0, 1)
