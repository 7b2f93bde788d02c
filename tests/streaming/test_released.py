"""A step's released rows (streaming/released.py) against plain Python per partition: which rows the
watermark releases (all of a partition at its end), their positions and peer groups counted from
each partition's start, and the per-partition counts and searches the emit and prune steps read.
Where frames are complete and how far back they reach, the machine's emitted rows and held state
check: tests/streaming/test_window_close.py."""

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from overwindow.streaming.released import Released

parts = st.lists(st.lists(st.integers(0, 6), max_size=8), min_size=1, max_size=5)


def _released(partitions, watermark, ended):
    keys = np.array([k for p in partitions for k in sorted(p)], dtype=np.int64)
    part = np.repeat(np.arange(len(partitions)), [len(p) for p in partitions])
    count = {"n": np.array([len(p) for p in partitions], dtype=np.int64)}
    ended = np.array((ended + [False] * len(partitions))[: len(partitions)], dtype=bool)
    b = Released(pa.table({"t": keys}), keys, part, count, watermark, ended)
    # per partition, its released keys, in order
    want = [
        sorted(p) if e or ended.all() else [k for k in sorted(p) if watermark is not None and k <= watermark]
        for p, e in zip(partitions, ended)
    ]
    return b, want


@given(partitions=parts, watermark=st.none() | st.integers(-1, 7), ended=st.lists(st.booleans(), max_size=5))
def test_the_views_count_each_partition_from_its_start(partitions, watermark, ended):
    # a partition ends (stateTtl forgets it, or the end of input) only under a watermark
    b, want = _released(partitions, watermark, ended if watermark is not None else [])
    assert b.n_released.tolist() == [len(w) for w in want]
    assert b.rel_keys.tolist() == [k for w in want for k in w]
    assert b.released.column("t").to_pylist() == b.rel_keys.tolist()
    assert b.pos.tolist() == [i for w in want for i in range(len(w))]
    local = [[sorted(set(w)).index(k) for k in w] for w in want]
    assert b.local_groups.tolist() == [g for gs in local for g in gs]
    assert [g for g, w in zip(b.last_group.tolist(), want) if w] == [gs[-1] for gs in local if gs]
    for u in range(max(map(len, want))):
        got = b.group_start(np.full(len(want), u))
        assert [int(s) for s, w in zip(got, want) if u < len(w)] == [
            w.index(w[u]) for w in want if u < len(w)
        ]


@given(
    partitions=parts,
    watermark=st.integers(-1, 7),
    flags=st.lists(st.booleans(), max_size=40),
    start=st.integers(0, 8),
)
def test_totals_running_counts_and_first_false_per_partition(partitions, watermark, flags, start):
    b, want = _released(partitions, watermark, [])
    n = len(b.rel_keys)
    flags = np.array((flags + [True] * n)[:n], dtype=bool)
    per = np.split(flags, np.cumsum([len(w) for w in want])[:-1])
    assert b.part_total(flags).tolist() == [int(f.sum()) for f in per]
    assert b.part_cumsum(flags).tolist() == [int(f[:i].sum()) for f in per for i in range(len(f))]
    firsts = b.first_false(flags, np.full(len(want), start)).tolist()
    assert firsts == [next((i for i in range(start, len(f)) if not f[i]), len(f)) for f in per]
