"""The held rows' order and the sorted merge: after every batch the state's rows are in the order a
full sort gives (the batch evaluator's Layout over ORDER BY, row key or all columns, identity)."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values
from overwindow.spec import OverWindow
from overwindow.streaming.identity import IDENTITY
from overwindow.streaming.on_update import OnUpdate

SCHEMA = pa.schema(
    [("k", pa.int64()), ("id", pa.int64()), ("t", pa.float64()), ("u", pa.int64()), ("op", pa.string())]
)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), desc=st.booleans(), nulls_first=st.booleans(), row_key=st.booleans())
def test_state_stays_in_full_sort_order(seed, desc, nulls_first, row_key):
    """After every batch the state's rows are in the order a full sort by (ORDER BY, row key or all
    columns, identity) gives: the merge never re-sorts but must agree with a sort."""
    rng = np.random.default_rng(seed)
    order = f"t {'DESC' if desc else 'ASC'} NULLS {'FIRST' if nulls_first else 'LAST'}, u"
    kw = {"rowKey": "id", "opColumn": "op"} if row_key else {}
    spec = OverWindow(f"sum(u) OVER (ORDER BY {order} ROWS 2 PRECEDING) AS s", emit="on_update", **kw)
    schema = SCHEMA if row_key else pa.schema([f for f in SCHEMA if f.name != "op"])
    machine = OnUpdate(spec, schema)
    state, live = None, {}
    for _ in range(int(rng.integers(1, 6))):
        batch = []
        for _ in range(int(rng.integers(1, 15))):
            t = (
                None
                if rng.random() < 0.2
                else float("nan")
                if rng.random() < 0.1
                else float(rng.integers(0, 4))
            )
            row = {
                "k": 0,
                "id": int(rng.integers(0, 12)),
                "t": t,
                "u": int(rng.integers(0, 3)),
                "op": "insert",
            }
            if row_key and row["id"] in live and rng.random() < 0.4:
                row["op"] = "delete"
            batch.append(row if row_key else {c: row[c] for c in schema.names})
        state = machine.step(state, pa.Table.from_pylist(batch, schema=schema)).state
        rows = machine.load(state)[0]
        kinds = [(Values(rows.column("t")), desc, nulls_first), (Values(rows.column("u")), False, True)]
        ties = [(Values(rows.column(c)), False, True) for c in (["id"] if row_key else schema.names)]
        perm = Layout.build(
            [], kinds + ties + [(Values(rows.column(IDENTITY)), False, True)], rows.num_rows
        ).perm
        assert perm.tolist() == list(range(rows.num_rows))
        if row_key:
            for r in batch:
                live.pop(r["id"], None) if r["op"] == "delete" else live.__setitem__(r["id"], r)
