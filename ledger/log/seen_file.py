"""The append filters (:class:`ledger.log.fast.Seen`) kept beside the log between processes.

An append checks that its event ids are new and reads its streams' versions. Into a large
log it does so through two Bloom filters, and building them scans every id of the log: at
2.8M events that is 0.4-0.9 s, for a retrace extension appending a thousand events or a
reconcile appending its receipt (measured). So the filters a writer holds after an append
are kept in ``<ledger>/projections/append-filters.bin`` with the tree head they describe,
and the next writer brings them up to date by adding only the rows appended since.

They are derived data, never evidence: used only if this log has the named root at the
named size and the bits hash to the digest the file names (a copy from another ledger, a
log rewritten since or a damaged file is ignored and the filters are built from the log);
deleting the file costs one scan of every id. The layout::

    MAGIC | header JSON line | ids filter bits | streams filter bits
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from ledger.log import fast, merkle
from ledger.log.layout import PROJECTIONS_DIR, replace_derived

# names what the bits mean: a change of fast.PROBES, BITS_PER_KEY or the native hashing
# makes older files unusable, so it bumps this
MAGIC = f"vledger-append-filters/1 k={fast.PROBES}\n".encode()
NAME = "append-filters.bin"
# a header is a few hundred bytes; the filters at most two of fast.MAX_BYTES
MAX_HEADER = 4096
# Kept filters are rewritten once they lag the log by this many rows: the rows since are
# added on reading (a scan of their seq range only, like a read window), while rewriting
# the file is a 17 MB write at 2.9M events
KEEP_LAG = 65_536
# the log size of the filters kept beside each ledger file, as this process last read or
# wrote them
_KEPT: dict[Path, int] = {}


def filters(lg: Any, size: int, frontier: list[bytes]) -> fast.Seen:
    """The id and stream filters of ``lg`` (a ``Ledger``, under its lock) at ``(size,
    frontier)``: :func:`kept`, else built from every id."""
    got = kept(lg, size, frontier)
    return got if got is not None else lg._build_seen(size, frontier)


def kept(lg: Any, size: int, frontier: list[bytes]) -> fast.Seen | None:
    """The filters kept beside ``lg`` with the rows appended since added, when this log has
    the root they name at the size they name (None when there are none such)."""
    loaded = load(lg.path)
    if loaded is None:
        return None
    at, root, ids, names = loaded
    if not 0 < at <= size or lg.root(at) != root:
        return None
    _KEPT[lg._db_key] = at
    for col in lg._ids_from(at, size):
        ids.add_column(fast.string_column(col), len(col))
    if at < size:
        streams = lg._streams_from(at)
        names.add_column(fast.string_column(streams), len(streams))
    seen = fast.Seen((size, b"".join(frontier)), ids, names)
    return None if seen.full else seen


def keep(lg: Any, seen: fast.Seen) -> None:
    """Keep ``seen`` beside ``lg`` (committed filters: they describe a state of this log)
    unless the file holds them within :data:`KEEP_LAG` rows."""
    size, hashes = seen.state
    if (at := _KEPT.get(lg._db_key)) is not None and 0 <= size - at < KEEP_LAG:
        return
    frontier = [hashes[i : i + 32] for i in range(0, len(hashes), 32)]
    save(lg.path, seen, merkle.frontier_root(frontier))
    _KEPT[lg._db_key] = size


def path_of(ledger_dir: Path) -> Path:
    return ledger_dir / PROJECTIONS_DIR / NAME


def save(ledger_dir: Path, seen: fast.Seen, root: bytes) -> None:
    """Keep ``seen`` (the filters of the log at ``seen.state``, whose root is ``root``);
    never an error (``layout.replace_derived``)."""
    ids, names = seen.ids, seen.streams
    header = {
        "size": seen.state[0],
        "root": root.hex(),
        "ids": [ids.capacity, ids.count, len(ids.bits)],
        "streams": [names.capacity, names.count, len(names.bits)],
        "sha256": _digest(ids.bits, names.bits),
    }
    replace_derived(
        path_of(ledger_dir), [MAGIC + orjson.dumps(header) + b"\n", ids.bits, names.bits]
    )


def load(ledger_dir: Path) -> tuple[int, bytes, fast.Bloom, fast.Bloom] | None:
    """The kept filters: (size, root, ids, streams) as saved, or None when there is no
    usable file (absent, another format, malformed, or bits that do not hash as named)."""
    try:
        with open(path_of(ledger_dir), "rb") as f:
            if f.read(len(MAGIC)) != MAGIC:
                return None
            header = orjson.loads(f.readline(MAX_HEADER))
            size, root = int(header["size"]), bytes.fromhex(header["root"])
            (ic, icount, ilen), (sc, scount, slen) = header["ids"], header["streams"]
            if not all(fast.MIN_BYTES <= n <= fast.MAX_BYTES and not n & (n - 1)
                       for n in (ilen, slen)):  # fmt: skip
                return None  # not a size Bloom gives its bits
            id_bits, name_bits = bytearray(ilen), bytearray(slen)  # read in place: no copy
            whole = f.readinto(id_bits) == ilen and f.readinto(name_bits) == slen
            if not whole or f.read(1):
                return None
    except (OSError, ValueError, TypeError, KeyError, orjson.JSONDecodeError):
        return None
    if _digest(id_bits, name_bits) != header["sha256"]:
        return None
    ids = fast.Bloom.of(id_bits, int(ic), int(icount))
    names = fast.Bloom.of(name_bits, int(sc), int(scount))
    return size, root, ids, names


def _digest(ids: bytearray, streams: bytearray) -> str:
    h = hashlib.sha256(ids)
    h.update(streams)
    return h.hexdigest()
