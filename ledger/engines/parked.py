"""An engine's per-trial results parked on disk and read back in stream order.

Engines return ``(stream, result)`` pairs in stream order, so a report and its digests do
not depend on the engine or the partitioning; the local engine computes them in seq order.
Sorting them in memory held every result at once — the part of retrace's peak that grew
with the corpus (about 6 KiB a trial, benchmarks/memory_flat.py). :class:`Parked` pickles each result to an
anonymous temporary file as it arrives and keeps only its offset; iterating reads them
back one at a time, in stream order, as often as a caller needs (report, digest, events).
"""

from __future__ import annotations

import pickle
import tempfile
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload


class Parked(Sequence[Any]):
    """``pairs``' results, parked as they come and ordered by stream (streams are unique),
    then the few ``tail`` items (kept in memory) after them."""

    def __init__(self, pairs: Iterable[tuple[str, Any]], tail: Sequence[Any] = ()) -> None:
        self._file = tempfile.TemporaryFile(prefix="vledger-results-")  # noqa: SIM115
        # closed with this object, not by a with-block (nor by the file's own finaliser,
        # which warns): the results are read back after the constructor returns
        weakref.finalize(self, self._file.close)
        index: list[tuple[str, int]] = []
        for stream, result in pairs:
            index.append((stream, self._file.tell()))
            pickle.dump(result, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        index.sort()
        self._offsets = array("q", (offset for _, offset in index))
        self._tail = list(tail)
        self.parked = len(self._offsets)  # how many came from ``pairs``

    def __len__(self) -> int:
        return self.parked + len(self._tail)

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError("parked result index out of range")
        i %= len(self)
        if i >= self.parked:
            return self._tail[i - self.parked]
        self._file.seek(self._offsets[i])
        return pickle.load(self._file)  # noqa: S301 - written by this object

    def __iter__(self) -> Iterator[Any]:
        for offset in self._offsets:
            self._file.seek(offset)
            yield pickle.load(self._file)  # noqa: S301 - written by this object
        yield from self._tail
