"""The run a reconciliation extends: its receipt checked from the tail of its payload, before
the ingest; its kept records read after it, only from the file that was checked; each record
handed over once. And the trials it reads again: from one pass over the log that reads only
as far as the stream asked for needs."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.app import reconcile as reconcile_module
from ledger.app import reconcile_corpus
from ledger.app.reconcile import reconcile
from ledger.app.reconcile_corpus import Ingested
from ledger.app.reconcile_extend import check_base, load_base, receipt_tail
from ledger.log.store import open_ledger
from reconcile.trials import trace_evaluator
from schemas.canonical import canonical_json
from tests.test_reconcile_catchup import (
    _op_add,
    _op_rescore_in_ledger,
    _op_rescore_on_disk,
    bundles,
    comparable,
    extend_then_full,
    workspace,
)

KEY = "observations_digest"
# keys and strings that look like the field: nested, or inside a string, they must not count
tricky = st.sampled_from([KEY, "receipt", "run_id", "a", "zz", f',"{KEY}":', '"}'])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | tricky | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky, inner, max_size=3),
    max_leaves=12,
)
# what follows the field at the top level: never a key of that name (append_receipt's shape)
plain = st.recursive(
    st.none() | st.integers(-(2**63), 2**63 - 1) | tricky,
    lambda inner: st.dictionaries(st.sampled_from(["seq", "size", "root"]), inner, max_size=3),
    max_leaves=6,
)


@given(
    config=json_values, entries=json_values, digest=st.none() | tricky,
    receipt=plain, run_id=plain, has_digest=st.booleans(),
)  # fmt: skip
def test_the_receipt_tail_is_the_payloads_own_top_level_fields(
    config: Any, entries: Any, digest: Any, receipt: Any, run_id: Any, has_digest: bool
) -> None:
    payload = {"config": config, "entries": entries, "receipt": receipt, "run_id": run_id}
    if has_digest:
        payload[KEY] = digest
    tail = receipt_tail(canonical_json(payload))
    if has_digest:
        assert tail == {KEY: digest, "receipt": receipt, "run_id": run_id}
    else:  # a nested key of that name is never taken for the payload's own
        assert tail is None


def _trailer(path: Path) -> tuple[bytes, dict[str, Any]]:
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[-8:])
    return data[: len(data) - 8 - n], orjson.loads(data[len(data) - 8 - n : -8])


def test_a_kept_file_replaced_after_its_check_is_not_loaded(tmp_path: Path) -> None:
    base = workspace(tmp_path)
    reconcile(packs=[base / "corpora" / "packs"], base=base, ledger=base / "lg")
    kept = next((base / "lg" / "projections").glob("reconcile-*.results"))
    body, trailer = _trailer(kept)
    config = trailer["config_digest"]
    with open_ledger(base / "lg") as lg:
        checked = check_base(lg, config)
        assert checked == trailer
        other = orjson.dumps({**trailer, "run_id": "another"})
        kept.write_bytes(body + other + struct.pack("<Q", len(other)))
        assert load_base(lg, config, checked) is None  # not the file that was checked
        assert check_base(lg, config) is None  # nor does it check: its event is not there
        kept.write_bytes(
            body + orjson.dumps(trailer) + struct.pack("<Q", len(orjson.dumps(trailer)))
        )
        got = load_base(lg, config, checked)
    assert got is not None and len(got.records) == trailer["count"] == 17
    (source, trial), one = next(iter(got.records.items()))
    planned = bytes.fromhex(one.planned)
    assert got.carry(source, trial, one.stream, planned) is one
    assert got.carry(source, trial, one.stream, planned) is None  # handed over once
    assert len(got.records) == 16


def test_the_pass_over_many_streams_gives_what_reading_each_alone_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every corpus read in one pass (no stream is few enough to read alone): each stream is
    handed over as soon as the pass has all of it, nothing else held when they are asked
    for in the order they were appended, and the reports are those of reading each alone —
    with a new trial, a re-score on disk and one in the ledger (an event at the log's end)."""
    base = workspace(tmp_path)
    kw: dict[str, Any] = {"packs": [base / "corpora" / "packs"], "base": base,
                          "ledger": base / "lg"}  # fmt: skip
    held: list[int] = []
    take = Ingested._take

    def counting(self: Ingested, stream: str) -> Any:
        got = take(self, stream)
        held.append(len(self.held))
        return got

    monkeypatch.setattr(Ingested, "_take", counting)
    monkeypatch.setattr(reconcile_corpus, "FEW_STREAMS", 0)
    reconcile(**kw)
    assert len(held) == 17 and max(held) == 0
    _op_add(base, 1, 0)
    _op_rescore_on_disk(base, 2, 1)
    _op_rescore_in_ledger(base, 4, 2)
    _, full = extend_then_full(base)  # a pass over the log since the base, then over all
    monkeypatch.setattr(reconcile_corpus, "FEW_STREAMS", 10**9)
    alone = reconcile(**kw, full=True)
    assert comparable(full) == comparable(alone)
    assert full.document["receipt"]["outputs_digest"] == alone.document["receipt"]["outputs_digest"]
    assert any("holds" in u["reason"] for s in alone.document["sources"]
               for u in s.get("unreadable_trials", []))  # fmt: skip


def test_a_real_run_keeps_each_trial_read_as_values_and_leaves_errors_to_the_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a real run every trial read from the ledger is kept as its observation's values,
    not its folded events; a candidate that raises is left to the reports, which raise it
    as a dry run over the same files does."""
    base = workspace(tmp_path)
    kw: dict[str, Any] = {"packs": [base / "corpora" / "packs"], "base": base}
    kinds: list[str] = []
    from ledger.app import reconcile_pass

    observe = reconcile_pass._observations

    def spying(ctx: Any, read: Any, claimed: Any) -> Any:
        kinds.extend(type(inputs).__name__ for _, inputs in read.trials)
        return observe(ctx, read, claimed)

    monkeypatch.setattr(reconcile_pass, "_observations", spying)
    real = reconcile(**kw, ledger=base / "lg", full=True)
    assert kinds and set(kinds) == {"Carried"}
    assert comparable(real) == comparable(reconcile(**kw, dry_run=True))
    evaluate = trace_evaluator()
    victim = sorted(bundles(base))[3].name

    def failing(inputs: Any, pack: Any) -> Any:
        if victim in inputs.registered.stream:
            raise RuntimeError(f"cannot label {victim}")
        return evaluate(inputs, pack)

    monkeypatch.setattr(reconcile_module, "trace_evaluator", lambda: failing)
    with pytest.raises(RuntimeError, match=victim):
        reconcile(**kw, dry_run=True)
    kinds.clear()
    with pytest.raises(RuntimeError, match=victim):
        reconcile(**kw, ledger=base / "lg", full=True)
    assert kinds.count("TrialInputs") == 1
