"""Eviction of emit on update, through the machine: the rows at or above the watermark keep exact
results while the state drops what no later change can need."""

import numpy as np
import pyarrow as pa
from cdc_support import WIDE, WIDE_CALLS
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.spec import OverWindow
from overwindow.streaming.on_update import OnUpdate


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), calls=st.sampled_from(WIDE_CALLS[:2]))
def test_eviction_keeps_live_rows_exact(seed, calls):
    """With a watermark (rows arrive at most 20 behind it: none late), the rows at or above the
    watermark, whose frames the state still holds, carry the batch result over every row."""
    rng = np.random.default_rng(seed)
    spec = OverWindow(*calls, emit="on_update", rowKey="id")
    machine = OnUpdate(spec, WIDE, watermarked=True)
    state, everything, view, watermark = None, {}, {}, None
    for b in range(6):
        rows = [
            {
                "k": 0,
                "id": b * 300 + i,
                "t": b * 300 + i + int(rng.integers(0, 20)),
                "u": int(rng.integers(0, 100)),
                "op": None,
            }
            for i in range(300)
        ]
        everything.update((r["id"], r) for r in rows)
        step = machine.step(state, pa.Table.from_pylist(rows, schema=WIDE), watermark)
        assert step.late_rows == 0
        state = step.state
        view.update((r["id"], r) for r in step.output.to_pylist())
        watermark = max(r["t"] for r in rows) - 20
    spec_all = {k: v for k, v in view.items()}
    import overwindow

    table = pa.Table.from_pylist(list(everything.values()), schema=WIDE).drop_columns(["op"])
    batch = overwindow.evaluate(table, *spec.partitioned(("k",)))
    checked = 0
    for r in batch.to_pylist():
        if r["t"] >= watermark:
            assert all(spec_all[r["id"]][a] == r[a] for a in spec.aliases), (r, spec_all[r["id"]])
            checked += 1
    assert checked > 0 and step.counters.state_rows < len(everything)
