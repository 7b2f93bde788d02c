"""Layout.build against Python's stable ``sorted`` on keys wide enough to need several sort words.

test_bounds.py checks the sort on small keys (every key fits one int64 word beside the row number);
here the keys span up to 2**39 or hold int64 extremes, so the folded key needs two or three words
and the permutation comes from several stable passes. Partitions and peer groups are checked against
the runs of equal keys in the brute-force order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values

SETTINGS = dict(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# a column either spans up to 2**39 (codes value - min: a word of its own) or holds int64 extremes
# (dense codes); both with repeats and NULLs
WIDE = st.one_of(st.integers(0, 3), st.integers(0, 2**39), st.none())
EXTREME = st.one_of(st.integers(-3, 3), st.sampled_from([2**63 - 1, -(2**63), None]))


def sql_key(v, descending: bool, nulls_first: bool):
    """Sort key of one int value in SQL order (NULLs first or last, regardless of direction)."""
    if v is None:
        return (0 if nulls_first else 2, 0)
    return (1, -v if descending else v)


@st.composite
def layouts(draw):
    n = draw(st.integers(0, 40))
    n_part = draw(st.integers(0, 2))
    n_order = draw(st.integers(0 if n_part else 1, 3))
    cols = [
        draw(st.lists(draw(st.sampled_from([WIDE, WIDE, EXTREME])), min_size=n, max_size=n))
        for _ in range(n_part + n_order)
    ]
    dirs = [(False, True)] * n_part + [(draw(st.booleans()), draw(st.booleans())) for _ in range(n_order)]
    return n, n_part, cols, dirs


@settings(max_examples=300, **SETTINGS)
@given(layouts())
def test_layout_sorts_stably_with_wide_keys(case):
    n, n_part, cols, dirs = case
    vals = [Values(pa.array(c, pa.int64())) for c in cols]
    order = [(v, d, nf) for v, (d, nf) in zip(vals[n_part:], dirs[n_part:])]
    lay = Layout.build(vals[:n_part], order, n)

    def row_key(i, upto):
        return tuple(sql_key(c[i], d, nf) for c, (d, nf) in list(zip(cols, dirs))[:upto])

    want = sorted(range(n), key=lambda i: row_key(i, len(cols)))
    assert lay.perm.tolist() == want
    for upto, ids, starts in (
        (n_part, lay.part_id, lay.part_bounds[:-1]),
        (len(cols) if order else n_part, lay.group_id, lay.group_start),
    ):
        keys = [row_key(i, upto) for i in want]
        new_run = [i == 0 or keys[i] != keys[i - 1] for i in range(n)]
        assert ids.tolist() == (np.cumsum(new_run) - 1).tolist()
        assert starts.tolist() == [i for i in range(n) if new_run[i]]


@settings(max_examples=50, **SETTINGS)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=30), st.booleans())
def test_stable_order_falls_back_to_argsort_for_words_too_wide_to_pack(rows, wide_minor):
    """A word whose cardinality leaves no room for the row number (only reachable with more than
    2**23 rows and keys spanning 2**40) is sorted by a stable argsort: declared cardinalities force
    that pass here on a few rows, and the result must still be numpy's lexicographic stable order."""
    from overwindow.physical.sorting import _stable_order

    n = len(rows)
    major = np.array([r[0] for r in rows], dtype=np.int64)
    minor = np.array([r[1] for r in rows], dtype=np.int64)
    bits = max(int(n - 1).bit_length(), 1)
    too_wide = 1 << 62
    words = [(major, 6 if wide_minor else too_wide, 1), (minor, too_wide if wide_minor else 6, 1)]
    perm, top, distinct = _stable_order(words, n, bits)
    want = np.lexsort((minor, major))  # lexsort is stable
    assert perm.tolist() == want.tolist()
    assert top.tolist() == major[want].tolist()
    assert distinct == (len(set(minor.tolist())) == n)  # the minor word alone tells the rows apart


@settings(max_examples=200, **SETTINGS)
@given(st.lists(st.integers(0, 4), max_size=30))
def test_in_order_is_the_layout_build_finds_for_sorted_rows(steps):
    """A caller that keeps its rows sorted (a streaming buffer) passes their peer groups; the
    layout is the one Layout.build computes from the key itself."""
    keys = np.cumsum(steps).astype(np.int64)  # sorted, with ties where a step is 0
    groups = np.unique(keys, return_inverse=True)[1].ravel().astype(np.int64)
    got = Layout.in_order(groups)
    want = Layout.build([], [(Values(pa.array(keys)), False, True)], len(keys))
    for field in (
        "perm",
        "part_id",
        "part_start",
        "part_end",
        "group_id",
        "group_start",
        "group_end",
        "part_bounds",
    ):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    assert got.identity and want.identity
