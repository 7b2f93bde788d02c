"""Rows sorted by (partition, key) (streaming/sorted_rows.py) against numpy's stable sort and plain
Python: the merge of new rows into held rows sorted already is the stable sort of all rows, on every
path (integer keys packed into one int64, pairs, NaN keys and held rows out of order sorted whole).
The machine that sorts with them: tests/streaming/test_window_close.py."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from overwindow.streaming.sorted_rows import flat_keys, in_order, merged, within

rows = st.lists(st.tuples(st.integers(0, 3), st.integers(-4, 4)), max_size=40)
KEY_TYPES = st.sampled_from(["int64", "float64", "wide", "nan"])


def _arrays(pairs, kind: str) -> tuple[np.ndarray, np.ndarray]:
    part = np.array([p for p, _ in pairs], dtype=np.int64)
    keys = np.array([k for _, k in pairs], dtype=np.int64)
    if kind == "wide":  # a span times the partitions past 2**62: no single int64 holds the pair
        keys = keys * 2**60
    elif kind != "int64":
        keys = keys.astype(np.float64)
        if kind == "nan" and len(keys):
            keys[::3] = np.nan
    return keys, part


@given(held=rows, new=rows, kind=KEY_TYPES, sort_held=st.booleans())
def test_merged_is_the_stable_sort_of_every_row(held, new, kind, sort_held):
    if sort_held:
        held = sorted(held)
    keys, part = _arrays(held + new, kind)
    assert merged(keys, part, len(held)).tolist() == np.lexsort((keys, part)).tolist()


@given(pairs=rows, kind=st.sampled_from(["int64", "wide", "float64"]))
def test_flat_keys_order_as_the_pairs_where_an_int64_holds_them(pairs, kind):
    keys, part = _arrays(pairs, kind)
    flat = flat_keys(keys, part)
    ks = [int(k) for k in keys] if kind != "float64" else []
    if not ks or (max(ks) - min(ks) + 1) * (max(p for p, _ in pairs) + 1) >= 2**62:
        assert flat is None
        return
    assert np.argsort(flat, kind="stable").tolist() == np.lexsort((keys, part)).tolist()
    same = (part[:, None] == part[None, :]) & (keys[:, None] == keys[None, :])
    assert ((flat[:, None] == flat[None, :]) == same).all()


@given(counts=st.lists(st.integers(0, 5), max_size=8))
def test_within_counts_each_partition_from_0(counts):
    counts = np.array(counts, dtype=np.int64)
    part = np.repeat(np.arange(len(counts)), counts)
    assert within(part, counts).tolist() == [i for c in counts for i in range(c)]


@given(pairs=rows, kind=st.sampled_from(["int64", "nan"]), new=st.lists(st.booleans(), max_size=40))
def test_in_order_is_strict_order_beside_every_new_row(pairs, kind, new):
    pairs = sorted(pairs)
    keys, part = _arrays(pairs, kind)
    order = np.lexsort((keys, part))
    keys, part = keys[order], part[order]
    new = np.array((new + [False] * len(pairs))[: len(pairs)], dtype=bool)
    want = all(
        not (new[i] or new[i + 1]) or part[i] != part[i + 1] or keys[i] < keys[i + 1]
        for i in range(len(pairs) - 1)
    )
    assert in_order(part, keys, new) == want
