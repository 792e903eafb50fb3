"""The stat fast path in front of ingest's content keys: an unchanged bundle is not read,
a rewritten one is, even with its size kept and its mtime set back, and a racily clean one
(not older than the index's own write time) is hashed again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ledger.app.ingest_inputs as ingest_inputs
import ledger.app.ingest_key as ingest_key
import ledger.app.ingest_known as ingest_known
from ledger.app.ingest import ingest_into
from ledger.app.ingest_known import INDEX_NAME
from ledger.app.ingest_stat import Resolver, one_resolver, stat_key
from ledger.log.memory_store import MemoryLedger
from ledger.log.store import open_ledger
from ledger.sources.files import Directory

ROOT = Path(__file__).resolve().parents[1]
NOTES = Path("corpora") / "notes_duplicate_check"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / NOTES, tmp_path / NOTES.name)
    with open_ledger(tmp_path / "lg", create=True):
        pass
    return tmp_path / NOTES.name


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Path]]:
    """The bundle files hashed (read for a content key) and the bundles parsed."""
    seen: dict[str, list[Path]] = {"hashed": [], "parsed": []}
    read, parse = Directory.read_plain, ingest_inputs.read_bundle

    def hashing(folder: Directory, name: str, max_bytes: int) -> Any:
        seen["hashed"].append(Path(name))
        return read(folder, name, max_bytes)

    def parsing(path: Path, *a: Any, **kw: Any) -> Any:
        seen["parsed"].append(path)
        return parse(path, *a, **kw)

    monkeypatch.setattr(Directory, "read_plain", hashing)
    monkeypatch.setattr(ingest_inputs, "read_bundle", parsing)
    return seen


def bundles(corpus: Path) -> list[Path]:
    return sorted(p.parent for p in corpus.rglob("trajectory.yaml"))


def clear(counts: dict[str, list[Path]]) -> None:
    for seen in counts.values():
        seen.clear()


def index(corpus: Path) -> Path:
    return corpus.parent / "lg" / "projections" / INDEX_NAME


def age_files(corpus: Path, index_file: Path) -> None:
    """Every bundle file a second older than the index (not racy however fast the test)."""
    t = index_file.stat().st_mtime_ns - 1_000_000_000
    for f in corpus.rglob("*.yaml"):
        os.utime(f, ns=(t, t))


def newest_time(corpus: Path) -> int:
    return max(max(f.stat().st_mtime_ns, f.stat().st_ctime_ns) for f in corpus.rglob("*"))


def settle(lg: Any, corpus: Path) -> None:
    """Ingest until the index is written after every file's newest time (an index written
    within the same clock tick as a file's ctime leaves that file racy, hashed again)."""
    for _ in range(5):
        ingest_into(lg, [str(corpus)])
        if index(corpus).stat().st_mtime_ns > newest_time(corpus):
            return
    raise AssertionError("the index was never written after the files")


def test_an_unchanged_bundle_is_neither_read_nor_parsed(corpus: Path, counts: dict) -> None:
    with open_ledger(corpus.parent / "lg") as lg:
        ingest_into(lg, [str(corpus)])
        assert len(counts["hashed"]) > 17 and len(counts["parsed"]) == 17
        age_files(corpus, index(corpus))  # utime moves the ctimes: hashed once more
        settle(lg, corpus)
        clear(counts)
        again = ingest_into(lg, [str(corpus)])
    assert counts == {"hashed": [], "parsed": []}
    assert (again.trials_new, again.trials_present) == (0, 17)


def test_another_spelling_of_the_path_still_finds_every_bundle_known(
    corpus: Path, counts: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keys bind what the events depend on, not how PATH was spelled: the corpus named
    absolutely, then relatively from its parent, is neither read nor parsed again (a
    nightly job and a run by hand from another directory share the index)."""
    with open_ledger(corpus.parent / "lg") as lg:
        ingest_into(lg, [str(corpus.resolve())])
        age_files(corpus, index(corpus))
        settle(lg, corpus.resolve())
        clear(counts)
        monkeypatch.chdir(corpus.parent)
        again = ingest_into(lg, [corpus.name])
    assert counts == {"hashed": [], "parsed": []}
    assert (again.trials_new, again.trials_present) == (0, 17)


def test_a_same_size_rewrite_with_its_mtime_set_back_is_read(corpus: Path, counts: dict) -> None:
    with open_ledger(corpus.parent / "lg") as lg:
        ingest_into(lg, [str(corpus)])
        age_files(corpus, index(corpus))
        settle(lg, corpus)
        grade = bundles(corpus)[1] / "grade.yaml"
        before = grade.stat()
        text = grade.read_text()
        changed = text.replace("justification: '", "justification: 'X", 1).replace("  ", " ", 1)
        assert len(changed) == len(text) and changed != text
        grade.write_text(changed)  # same size, same inode, mtime set back: only ctime moved
        os.utime(grade, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert (grade.stat().st_size, grade.stat().st_mtime_ns) == (
            before.st_size, before.st_mtime_ns)  # fmt: skip
        clear(counts)
        got = ingest_into(lg, [str(corpus)], skip_bad=True)
    assert counts["parsed"] == [grade.parent]  # read, and refused as a change
    assert [s["kind"] for s in got.skipped] == ["bundle"]
    assert got.trials_present == 16


def test_racily_clean_stamps_are_hashed_again(corpus: Path, counts: dict) -> None:
    with open_ledger(corpus.parent / "lg") as lg:
        ingest_into(lg, [str(corpus)])
        age_files(corpus, index(corpus))
        settle(lg, corpus)
        # the index written no later than any file's time: no bundle may vouch by stat (the
        # files' ctimes differ by however long the ingest took, so the oldest one is taken)
        oldest = min(max(f.stat().st_mtime_ns, f.stat().st_ctime_ns) for f in corpus.rglob("*"))
        os.utime(index(corpus), ns=(oldest, oldest))
        clear(counts)
        ingest_into(lg, [str(corpus)])
        assert {p.parent for p in counts["hashed"]} == {Path(".")}  # names, read per bundle
        every_file = [f for b in bundles(corpus) for f in b.iterdir() if f.suffix == ".yaml"]
        assert len(counts["hashed"]) == len(every_file) and counts["parsed"] == []
        # an index that ingest writes later than every stamp: they vouch again
        settle(lg, corpus)
        clear(counts)
        ingest_into(lg, [str(corpus)])
        assert counts["hashed"] == []


def test_an_index_held_in_memory_never_vouches_by_stat(corpus: Path, counts: dict) -> None:
    lg = MemoryLedger()
    ingest_into(lg, [str(corpus)])
    clear(counts)
    again = ingest_into(lg, [str(corpus)])
    assert len(counts["hashed"]) >= 17 and counts["parsed"] == []
    assert again.trials_present == 17


def test_the_resolver_resolves_as_path_resolve(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "a").mkdir(parents=True)
    (tmp_path / "elsewhere" / "b").mkdir(parents=True)
    (real / "b").symlink_to(tmp_path / "elsewhere" / "b")
    (tmp_path / "link").symlink_to(real)
    paths = (tmp_path / "link" / "a", tmp_path / "link" / "b", real / "a", Path("."),
             tmp_path / "link" / "missing", tmp_path / "link" / ".." / "real",
             Path(os.path.relpath(tmp_path / "link" / "a")))  # fmt: skip
    resolve = Resolver()
    for p in paths:
        assert resolve(p) == p.resolve()
    with one_resolver():  # one resolver for every step: each path resolved once, alike
        shared = Resolver()
        assert shared is Resolver() and shared is not resolve
        for p in paths * 2:
            assert Resolver()(p) == p.resolve()
        with one_resolver():  # a reader's own scope inside reconcile's: the outer serves
            assert Resolver() is shared
    assert Resolver() is not shared


def test_an_index_rewritten_without_rechecking_a_racy_stamp_drops_it(
    corpus: Path, counts: dict
) -> None:
    other = corpus.parent / "other_corpus"
    shutil.copytree(corpus, other)
    with open_ledger(corpus.parent / "lg") as lg:
        ingest_into(lg, [str(corpus)])
        age_files(corpus, index(corpus))
        settle(lg, corpus)
        oldest = min(max(f.stat().st_mtime_ns, f.stat().st_ctime_ns) for f in corpus.rglob("*"))
        os.utime(index(corpus), ns=(oldest, oldest))  # every stamp racy: none may vouch
        ingest_into(lg, [str(other)])  # rewrites the index; this corpus's rows not met
        assert index(corpus).stat().st_mtime_ns > newest_time(corpus)
        clear(counts)
        again = ingest_into(lg, [str(corpus)])
    every_file = [f for b in bundles(corpus) for f in b.iterdir() if f.suffix == ".yaml"]
    assert len(counts["hashed"]) == len(every_file) and counts["parsed"] == []
    assert again.trials_present == 17


def test_a_bundle_changed_between_its_read_and_its_hash_is_not_remembered(
    corpus: Path, counts: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no index, a bundle is keyed by the bytes it was parsed from; one whose files
    changed after its read is read again by the next ingest (its files' stamps and bytes
    are no longer those remembered), while every other bundle is skipped."""
    victim = bundles(corpus)[0]
    real = ingest_known.read_tasks

    def read_then_touch(*a: Any, **kw: Any) -> Any:
        for n, got in enumerate(real(*a, **kw)):
            if n == 0:  # the first bundle's files change once its read is done
                grade = victim / "grade.yaml"
                grade.write_text(grade.read_text() + "\n")
            yield got

    monkeypatch.setattr(ingest_known, "read_tasks", read_then_touch)
    with open_ledger(corpus.parent / "lg") as lg:
        ingest_into(lg, [str(corpus)])
        monkeypatch.setattr(ingest_known, "read_tasks", real)
        clear(counts)
        again = ingest_into(lg, [str(corpus)])  # the others: by their content keys
    assert counts["parsed"] == [victim]
    assert again.trials_new == 0


def test_a_fresh_ingest_keys_each_bundle_by_the_bytes_it_parses(
    corpus: Path, counts: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No index: every file of every bundle is read once, and parsed from those bytes (the
    importer's own file reader is not called), and the next ingest skips every bundle."""
    import ledger.sources.tolokaforge as tolokaforge

    opened: list[str] = []
    real = tolokaforge.load_confined_yaml
    monkeypatch.setattr(tolokaforge, "load_confined_yaml",
                        lambda *a, **kw: opened.append(a[1]) or real(*a, **kw))  # fmt: skip
    files = [f for b in bundles(corpus) for f in b.iterdir() if f.name in ingest_key.FILES]
    with open_ledger(corpus.parent / "lg") as lg:
        ingest_into(lg, [str(corpus)], workers=1)
        assert sorted(counts["hashed"]) == sorted(Path(f.name) for f in files)
        assert len(counts["parsed"]) == 17 and opened == []
        age_files(corpus, index(corpus))
        settle(lg, corpus)
        clear(counts)
        again = ingest_into(lg, [str(corpus)])
    assert counts == {"hashed": [], "parsed": []} and again.trials_present == 17


_FIELD = st.integers(min_value=-(1 << 70), max_value=1 << 70) | st.integers(0, 1 << 20)
_STAMP = st.none() | st.tuples(*[_FIELD] * 6)


@given(a=st.lists(_STAMP, min_size=1, max_size=4), b=st.lists(_STAMP, min_size=1, max_size=4))
def test_stat_keys_differ_exactly_when_the_stamps_do(a: list, b: list) -> None:
    """The packed encoding and the wide one for out-of-range fields (a negative size, an
    inode past 64 bits) never give two different stamp lists one key."""
    assert (stat_key(b"p", tuple(a)) == stat_key(b"p", tuple(b))) == (a == b)
