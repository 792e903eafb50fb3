"""The local engine's Arrow path: slices cut only at stream boundaries, covering every row."""

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from ledger.engines.local import stream_cuts


@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=60), st.integers(1, 9))
def test_cuts_cover_every_row_and_never_split_a_stream(names: list[str], parts: int) -> None:
    names = sorted(names)
    cuts = stream_cuts(pa.chunked_array([pa.array(names, pa.string())]), parts)
    assert sum(k for _, k in cuts) == len(names)
    offset = 0
    for a, k in cuts:
        assert a == offset and k > 0
        offset += k
        if a > 0:
            assert names[a - 1] != names[a]  # a cut falls only where the stream changes
    assert len(cuts) <= len(set(names))
