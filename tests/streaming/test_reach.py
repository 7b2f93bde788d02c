"""The frame-reach finder on large partitions: it works on a window around the changes, grown for
RANGE and GROUPS frames, and the changelog view still equals the batch result after every batch."""

import numpy as np
import pyarrow as pa
from cdc_support import WIDE, WIDE_CALLS, apply_changelog, random_cdc_batch
from hypothesis import given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.spec import OverWindow
from overwindow.streaming.on_update import OnUpdate


def _view_matches_batch(view, live, spec):
    table = pa.Table.from_pylist(list(live.values()), schema=WIDE.remove(WIDE.get_field_index("op")))
    batch = overwindow.evaluate(
        table.sort_by([("t", "ascending"), ("id", "ascending")]), *spec.partitioned(("k",))
    )
    assert set(view) == set(live)
    for r in batch.to_pylist():
        got = view[(r["k"], r["id"])]
        assert all(got[a] == r[a] for a in spec.aliases), (r, got)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    calls=st.sampled_from(WIDE_CALLS),
    n=st.integers(300, 1500),
    keys=st.sampled_from([1, 4]),
)
def test_frame_finder_windows_in_large_partitions(seed, calls, n, keys):
    """Partitions large enough that the frame finder works on windows around the changes (grown
    for RANGE and GROUPS frames): after every batch the changelog view equals the batch result. With
    several keys in one bucket, each change's window stops at its partition's edges and partitions
    without changes are left out."""
    rng = np.random.default_rng(seed)
    buckets = 1 if keys > 1 else None
    spec = OverWindow(*calls, emit="on_update", rowKey="id", opColumn="op", keyBuckets=buckets)
    machine = OnUpdate(spec, WIDE, keys=("k",) if keys > 1 else ())
    live = {}
    for i in range(n):
        k = int(rng.integers(0, keys))
        live[(k, i)] = {"k": k, "id": i, "t": int(rng.integers(0, n)), "u": int(rng.integers(0, 100))}
    step = machine.step(
        None, pa.Table.from_pylist([dict(r, op="insert") for r in live.values()], schema=WIDE)
    )
    view = {(r["k"], r["id"]): r for r in step.output.to_pylist()}
    state, next_id = step.state, n
    for _ in range(4):
        batch, next_id = random_cdc_batch(
            rng, live, next_id, int(rng.integers(1, 8)), t_hi=n, keys=keys, value="u"
        )
        step = machine.step(state, pa.Table.from_pylist(batch, schema=WIDE))
        state = step.state
        apply_changelog(view, step.output)
        _view_matches_batch(view, live, spec)
