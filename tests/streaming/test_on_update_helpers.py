"""Property tests of the on-update machine's bookkeeping helpers against simple oracles (np.sort,
Python sets, a full sort of the state with the batch evaluator's Layout)."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values
from overwindow.spec import OverWindow
from overwindow.streaming import on_update
from overwindow.streaming.on_update import OnUpdate, _in_ranges, _interleave, _ordinals, _row_hash
from overwindow.streaming.state import decode

ints = st.lists(st.integers(-5, 5), max_size=30)


@given(kept=ints, ins=ints)
def test_interleave_merges_like_a_sort(kept, ins):
    kept, ins = np.sort(np.array(kept, dtype=np.int64)), np.sort(np.array(ins, dtype=np.int64))
    src, at = _interleave(len(kept), np.searchsorted(kept, ins, "right"))
    merged = np.concatenate([kept, ins])[src]
    assert merged.tolist() == np.sort(np.concatenate([kept, ins])).tolist()
    assert (src[at] == len(kept) + np.arange(len(ins))).all()


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15)), max_size=12))
def test_in_ranges_is_the_union_of_the_ranges(pairs):
    lo = np.array([a for a, _ in pairs], dtype=np.int64)
    hi = np.array([a + b for a, b in pairs], dtype=np.int64)
    want = sorted({p for a, b in zip(lo, hi) for p in range(a, b)})
    assert _in_ranges(lo, hi).tolist() == want


@given(st.lists(st.integers(0, 4), max_size=40))
def test_ordinals_count_equal_values_before(values):
    h = np.array(values, dtype=np.uint64)
    want = [values[:i].count(v) for i, v in enumerate(values)]
    assert _ordinals(h).tolist() == want


@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-3, 3)),
            st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, float("nan")])),
            st.one_of(st.none(), st.sampled_from(["a", "b", ""])),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_row_hash_is_equal_exactly_for_equal_rows(rows):
    t = pa.table(
        {
            "i": pa.array([r[0] for r in rows], pa.int64()),
            "f": pa.array([r[1] for r in rows], pa.float64()),
            "s": pa.array([r[2] for r in rows], pa.string()),
        }
    )
    h = _row_hash(t, ["i", "f", "s"])
    # SQL equality of keys, NULL equal to NULL, NaN to NaN, -0.0 to 0.0
    norm = [(r[0], None if r[1] is None else ("nan" if r[1] != r[1] else r[1] + 0.0), r[2]) for r in rows]
    for a in range(len(rows)):
        for b in range(len(rows)):
            assert (h[a] == h[b]) == (norm[a] == norm[b])
    # the same in a fresh call (it lives in the state)
    assert (_row_hash(t.slice(1), ["i", "f", "s"]) == h[1:]).all()


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
        rows = decode(state, on_update.STATE_KIND)[0]["rows"]
        kinds = [(Values(rows.column("t")), desc, nulls_first), (Values(rows.column("u")), False, True)]
        ties = [(Values(rows.column(c)), False, True) for c in (["id"] if row_key else schema.names)]
        perm = Layout.build(
            [], kinds + ties + [(Values(rows.column("__ow_id")), False, True)], rows.num_rows
        ).perm
        assert perm.tolist() == list(range(rows.num_rows))
        if row_key:
            for r in batch:
                live.pop(r["id"], None) if r["op"] == "delete" else live.__setitem__(r["id"], r)


def test_format_1_state_is_refused_with_a_clear_error():
    """Format 1 hashed identities with pandas; its identities cannot match new rows' any more."""
    import pytest

    from overwindow.streaming.state import FORMAT_VERSION, StateFormatError

    spec = OverWindow("lag(u) OVER (ORDER BY t) AS p", emit="on_update", rowKey="id")
    machine = OnUpdate(spec, SCHEMA)
    state = machine.step(
        None, pa.Table.from_pylist([{"k": 0, "id": 1, "t": 1.0, "u": 1}], schema=SCHEMA)
    ).state
    old = state.replace(f'"version": {FORMAT_VERSION}'.encode(), b'"version": 1')
    with pytest.raises(
        StateFormatError,
        match="format 1, this overwindow reads 'on_update' format 2; start the query from a new checkpoint",
    ):
        machine.step(old, None)


WIDE_CALLS = [
    (
        "sum(u) OVER (ORDER BY t ROWS BETWEEN 3 PRECEDING AND 2 FOLLOWING) AS s",
        "lag(u, 40) OVER (ORDER BY t) AS l",
        "lead(u, 2) OVER (ORDER BY t) AS ld",
    ),
    (
        "count(*) OVER (ORDER BY t RANGE BETWEEN 30 PRECEDING AND 5 FOLLOWING) AS c",
        "max(u) OVER (ORDER BY t GROUPS BETWEEN 20 PRECEDING AND CURRENT ROW EXCLUDE TIES) AS m",
    ),
    (
        "min(u) OVER (ORDER BY t DESC RANGE BETWEEN 3 PRECEDING AND 60 FOLLOWING EXCLUDE GROUP) AS mn",
        "first_value(u) OVER (ORDER BY t DESC ROWS BETWEEN 1 FOLLOWING AND 50 FOLLOWING) AS fv",
    ),
]
WIDE = pa.schema(
    [("k", pa.int64()), ("id", pa.int64()), ("t", pa.int64()), ("u", pa.int64()), ("op", pa.string())]
)


def _view_matches_batch(view, live, spec):
    import overwindow

    table = pa.Table.from_pylist(list(live.values()), schema=WIDE).drop_columns(["op"])
    batch = overwindow.evaluate(
        table.sort_by([("t", "ascending"), ("id", "ascending")]), *spec.partitioned(("k",))
    )
    assert set(view) == set(live)
    for r in batch.to_pylist():
        got = view[r["id"]]
        assert all(got[a] == r[a] for a in spec.aliases), (r, got)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), calls=st.sampled_from(WIDE_CALLS), n=st.integers(300, 1500))
def test_frame_finder_windows_in_large_partitions(seed, calls, n):
    """Partitions large enough that the frame finder works on a window around the changes (grown
    for RANGE and GROUPS frames): after every batch the changelog view equals the batch result."""
    rng = np.random.default_rng(seed)
    spec = OverWindow(*calls, emit="on_update", rowKey="id", opColumn="op")
    machine = OnUpdate(spec, WIDE)
    live = {
        i: {"k": 0, "id": i, "t": int(rng.integers(0, n)), "u": int(rng.integers(0, 100)), "op": "insert"}
        for i in range(n)
    }
    step = machine.step(None, pa.Table.from_pylist(list(live.values()), schema=WIDE))
    view = {r["id"]: r for r in step.output.to_pylist()}
    state, next_id = step.state, n
    for _ in range(4):
        batch = []
        for _ in range(int(rng.integers(1, 8))):
            choice = rng.random()
            if choice < 0.4:
                row = {
                    "k": 0,
                    "id": next_id,
                    "t": int(rng.integers(0, n)),
                    "u": int(rng.integers(0, 100)),
                    "op": "insert",
                }
                next_id += 1
            else:
                old = live[list(live)[int(rng.integers(0, len(live)))]]
                row = (
                    dict(old, op="delete")
                    if choice < 0.7
                    else dict(old, t=int(rng.integers(0, n)), u=int(rng.integers(0, 100)), op="update")
                )
            batch.append(row)
            live.pop(row["id"], None) if row["op"] == "delete" else live.__setitem__(
                row["id"], dict(row, op=None)
            )
        step = machine.step(state, pa.Table.from_pylist(batch, schema=WIDE))
        state = step.state
        for r in step.output.to_pylist():
            view.pop(r["id"], None) if r["_change"] == "delete" else view.__setitem__(r["id"], r)
        _view_matches_batch(view, live, spec)


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
    assert checked > 0 and decode(state, on_update.STATE_KIND)[0]["rows"].num_rows < len(everything)
