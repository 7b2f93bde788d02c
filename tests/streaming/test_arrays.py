"""The on-update machine's array helpers against plain Python oracles (sorted lists, sets, dicts)."""

import numpy as np
import pyarrow as pa
from hypothesis import assume, given
from hypothesis import strategies as st

from overwindow.streaming.arrays import find, in_ranges, interleave, member, runs, scatter, union

ints = st.lists(st.integers(-5, 5), max_size=30)


@given(kept=ints, ins=ints)
def test_interleave_merges_like_a_sort(kept, ins):
    kept, ins = np.sort(np.array(kept, dtype=np.int64)), np.sort(np.array(ins, dtype=np.int64))
    src, at = interleave(len(kept), np.searchsorted(kept, ins, "right"))
    merged = np.concatenate([kept, ins])[src]
    assert merged.tolist() == np.sort(np.concatenate([kept, ins])).tolist()
    assert (src[at] == len(kept) + np.arange(len(ins))).all()


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15)), max_size=12))
def test_in_ranges_is_the_union_of_the_ranges(pairs):
    lo = np.array([a for a, _ in pairs], dtype=np.int64)
    hi = np.array([a + b for a, b in pairs], dtype=np.int64)
    want = sorted({p for a, b in zip(lo, hi) for p in range(a, b)})
    assert in_ranges(lo, hi).tolist() == want


@given(st.lists(st.integers(-6, 6), max_size=30), st.lists(st.integers(-6, 6), max_size=30))
def test_member_and_find_agree_with_python_sets(ids, wanted):
    """Both the few-wanted path (<= 16 comparisons) and the sorted path (more)."""
    distinct = list(dict.fromkeys(ids))
    a, w = np.array(ids, dtype=np.int64), np.array(wanted, dtype=np.int64)
    assert member(a, w).tolist() == [i in set(wanted) for i in ids]
    assert member(a, np.concatenate([w, w, w])).tolist() == [i in set(wanted) for i in ids]
    at = find(np.array(distinct, dtype=np.int64), w).tolist()
    assert at == [distinct.index(v) if v in distinct else -1 for v in wanted]


@given(st.sets(st.integers(0, 60), max_size=25))
def test_runs_cover_the_positions_in_maximal_runs(positions):
    assume(positions)
    rows = np.array(sorted(positions), dtype=np.int64)
    got = list(zip(*(a.tolist() for a in runs(rows))))
    assert [p for lo, hi in got for p in range(lo, hi)] == sorted(positions)
    assert all(b[0] > a[1] for a, b in zip(got, got[1:]))  # maximal: a gap between runs


@given(st.lists(st.integers(0, 9), min_size=1, max_size=12), st.data())
def test_scatter_replaces_exactly_the_rows_at(values, data):
    at = sorted(data.draw(st.sets(st.integers(0, len(values) - 1))))
    new = [100 + i for i in range(len(at))]
    got = scatter(
        pa.table({"v": values}), np.array(at, dtype=np.int64), pa.table({"v": pa.array(new, pa.int64())})
    )
    want = list(values)
    for p, v in zip(at, new):
        want[p] = v
    assert got.column("v").to_pylist() == want


@given(st.sets(st.integers(-6, 6), max_size=10), st.sets(st.integers(-6, 6), max_size=10))
def test_union_of_sorted_positions_is_numpys(a, b):
    a, b = (np.array(sorted(x), dtype=np.int64) for x in (a, b))
    got = union(a, b)
    assert got.dtype == np.int64 and got.tolist() == np.union1d(a, b).tolist() == sorted(set(a) | set(b))
