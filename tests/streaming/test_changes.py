"""CDC input: every documented spelling of an operation decodes to it in any case (docs/cdc.md: insert,
delete, update; Debezium's c/r/u/d; Flink's +I/+U/-U/-D), anything else is counted as bad, the
last change of an identity in a batch wins, and a delete that finds no row is set aside."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.spec import OverWindow
from overwindow.streaming.changes import NOT_HELD, Op, decode_ops, last_changes
from overwindow.streaming.driver import Driver

SPELLINGS = {
    Op.INSERT: ["insert", "c", "r", "+I", "i", "create"],
    # Flink's before image -U deletes the row where it lands: in the row's old group when the update
    # moved it to another partition; in its own group the +U after it wins (the last change wins)
    Op.DELETE: ["delete", "d", "-D", "-U"],
    Op.UPDATE: ["update", "u", "+U"],
}


def test_every_spelling_in_any_case():
    for op, words in SPELLINGS.items():
        for word in words:
            for spelled in (word, word.upper(), word.lower(), word.capitalize()):
                assert decode_ops(pa.array([spelled])).tolist() == [op], spelled


def test_unknown_and_null_ops_are_bad():
    ops = decode_ops(pa.chunked_array([["upsert", None], ["", "x", "insert"]]))
    assert ops.tolist() == [Op.BAD, Op.BAD, Op.BAD, Op.BAD, Op.INSERT]


@given(st.lists(st.tuples(st.integers(0, 4), st.booleans()), max_size=30))
def test_the_last_kept_change_of_an_identity_wins(rows):
    ids = np.array([i for i, _ in rows], dtype=np.int64)
    keep = np.array([k for _, k in rows], dtype=bool)
    last_at = {i: at for at, (i, k) in enumerate(rows) if k}  # later rows overwrite earlier ones
    assert last_changes(ids, keep).tolist() == [last_at.get(i) == at for at, (i, _) in enumerate(rows)]


_CHANGE = st.tuples(
    st.sampled_from(["insert", "update", "delete"]), st.sampled_from(["a", "b"]), st.integers(0, 3)
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    batches=st.lists(st.lists(_CHANGE, max_size=6), min_size=1, max_size=5),
    layout=st.sampled_from([("whole", None), ("whole", 2), ("chunked", None), ("chunked", 2)]),
)
def test_a_delete_of_a_row_its_partition_does_not_hold_is_set_aside(batches, layout):
    """Issue 40, item 3: a delete that finds no row in its partition (a before image with another
    partition key than the row had, a delete delivered twice) deleted nothing, silently; it is set
    aside with its reason, once, and every other change applies. Model: the rows each partition holds
    before the batch; a delete that is its row's only change in the batch and finds none is set
    aside (after an insert in the same batch it deletes that row)."""
    schema = pa.schema([("k", pa.string()), ("id", pa.int64()), ("t", pa.int64()), ("op", pa.string())])
    state_layout, buckets = layout
    spec = OverWindow(
        "count(*) OVER (ORDER BY t ROWS 1 PRECEDING) AS n",
        emit="on_update",
        rowKey="id",
        opColumn="op",
        stateLayout=state_layout,
        keyBuckets=buckets,
    )
    driver = Driver(spec, schema, ["k"], rows_per_chunk=2 if state_layout == "chunked" else None)
    held, view, want_aside = set(), set(), []
    for n, batch in enumerate(batches):
        rows = [{"k": k, "id": i, "t": n * 10 + j, "op": op} for j, (op, k, i) in enumerate(batch)]
        changes = {}
        for r in rows:
            changes.setdefault((r["k"], r["id"]), []).append(r["op"])
        for row, ops in changes.items():
            if ops == ["delete"] and row not in held:
                want_aside.append(row)
            if ops[-1] == "delete":
                held.discard(row)
            else:
                held.add(row)
        out = driver.feed(pa.Table.from_pylist(rows, schema=schema))
        for r in out.to_pylist():
            (view.discard if r["_change"] == "delete" else view.add)((r["k"], r["id"]))
        assert view == held, f"after batch {n}"
    aside = [(r["k"], r["id"]) for a in driver.aside for r in a.rows.to_pylist()]
    reasons = [why for a in driver.aside for why in a.reasons]
    assert sorted(aside) == sorted(want_aside)
    assert set(reasons) <= {NOT_HELD}
