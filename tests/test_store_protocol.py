"""Both stores satisfy ledger.log.protocol.Store, member by member (signatures included)."""

import inspect
from pathlib import Path

import pytest

from ledger.log.memory_store import MemoryLedger
from ledger.log.protocol import Sealable, SealedStore, SegmentRows, Store
from ledger.log.raw import Sealing
from ledger.log.store import Ledger, init_ledger


def _members(proto: type) -> list[str]:
    names = {n for n in dir(proto) if not n.startswith("_")}
    return sorted(names | set(getattr(proto, "__annotations__", {})))


def _params(fn: object) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def _mismatches(proto: type, impl: type) -> list[str]:
    """Members of ``proto`` that ``impl`` lacks or declares with other parameters."""
    bad = []
    for name in _members(proto):
        want = getattr(proto, name, None)
        if not callable(want):
            continue  # a data attribute: checked on instances below
        got = getattr(impl, name, None)
        if not callable(got) or _params(got) != _params(want):
            bad.append(name)
    return bad


@pytest.mark.parametrize("impl", [Ledger, MemoryLedger])
def test_store_classes_match_the_protocol(impl: type) -> None:
    assert _mismatches(Store, impl) == []


def test_duckdb_store_is_a_sealed_store() -> None:
    assert _mismatches(SealedStore, Ledger) == []
    assert _mismatches(SegmentRows, Ledger) == []
    assert _mismatches(Sealable, Sealing) == []


@pytest.mark.parametrize("proto", [Store, SealedStore, SegmentRows, Sealable])
def test_a_protocol_has_no_private_members(proto: type) -> None:
    """A seam names what its callers may call; a store's private helpers are not on it."""
    own = {n for n, v in vars(proto).items() if callable(v) or n in proto.__annotations__}
    assert [n for n in own if n.startswith("_") and not n.startswith("__")] == []
    assert len(_members(Store)) <= 13  # what the application and the engines call, only


def test_instances_are_stores(tmp_path: Path) -> None:
    with init_ledger(tmp_path / "lg") as lg:
        assert isinstance(lg, Store) and isinstance(lg, SealedStore)
        assert isinstance(Sealing(lg), Sealable) and not isinstance(lg, Sealable)
    mem = MemoryLedger()
    assert isinstance(mem, Store) and not isinstance(mem, SealedStore)


def test_the_check_sees_a_missing_or_different_member() -> None:
    class Partial:
        path = Path("x")

        def size(self) -> int:
            return 0

        def root(self, n: int | None = None) -> bytes:  # renamed parameter
            return b""

    bad = _mismatches(Store, Partial)
    assert "append" in bad and "root" in bad and "size" not in bad
    assert not isinstance(Partial(), Store)
