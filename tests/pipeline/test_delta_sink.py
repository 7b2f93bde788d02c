"""The Delta Lake sink (issue 41), without Spark: random changelogs applied batch by batch (every
batch applied twice, the second time a replay) leave the table a model keeps, read back with
deltalake's own reader; appends; a batch's record in the table's log; a table of another query and
a table drifted from the view refused before anything is written."""

import decimal
import re

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sink_support import CHANGELOG, DRIFTED, SCHEMA, TYPED_ROW, TYPED_SCHEMA, batches, model, sort_key

deltalake = pytest.importorskip("deltalake")

from overwindow.pipeline.checkpoint import CheckpointState  # noqa: E402
from overwindow.pipeline.delta import DeltaSink  # noqa: E402
from overwindow.pipeline.sinks import SinkDriftError, check_pairing  # noqa: E402


def read(path) -> list[tuple]:
    """The table as deltalake reads it: rows (k, id, s), sorted as the model's."""
    t = deltalake.DeltaTable(path).to_pyarrow_table()
    return sorted(zip(*(t.column(c).to_pylist() for c in ("k", "id", "s"))), key=sort_key)


@settings(max_examples=25, deadline=None)
@given(changelog=CHANGELOG)
def test_upserts_and_deletes_by_key_with_nulls_replays_skipped(tmp_path_factory, changelog):
    """Keyed by (k, id) with NULLs in both: a NULL key matches a NULL key. Each batch applied twice:
    the replay is skipped and leaves the table as it was."""
    path = str(tmp_path_factory.mktemp("delta"))
    sink = DeltaSink(path, key=["k", "id"], upsert=True)
    for b, batch in enumerate(batches(changelog)):
        assert sink.apply(batch, b, "q") == batch.num_rows
        before = deltalake.DeltaTable(path).version()
        assert sink.apply(batch, b, "q") is None
        assert deltalake.DeltaTable(path).version() == before
    assert read(path) == model(changelog)
    assert sink.bookkeeping().applied.batch_id == len(changelog) - 1


def test_a_batch_with_two_changes_of_one_key_is_applied_as_its_net_effect(tmp_path):
    """A row moved between partitions: its new partition's upsert and its old one's delete, in that
    order, in one batch of a table keyed by the row key alone: the row is kept (a MERGE would refuse
    two source rows of one key)."""
    sink = DeltaSink(str(tmp_path), key=["id"], upsert=True)
    sink.apply(pa.table({"k": ["a"], "id": [1], "s": [1.0], "_change": ["upsert"]}), 0, "q")
    moved = pa.table({"k": ["b", "a"], "id": [1, 1], "s": [2.0, None], "_change": ["upsert", "delete"]})
    assert sink.apply(moved, 1, "q") == 1
    assert read(str(tmp_path)) == [("b", 1, 2.0)]


def test_appends_with_partitions_and_empty_batches_record_their_batch(tmp_path):
    path = str(tmp_path / "t")
    sink = DeltaSink(path, key=["id"], upsert=False, partition_by=["k"])
    sink.apply(pa.table({"k": ["a", None], "id": [1, 2], "s": [1.5, float("nan")]}), 0, "q")
    empty = pa.table(
        {"k": pa.array([], pa.string()), "id": pa.array([], pa.int64()), "s": pa.array([], pa.float64())}
    )
    assert sink.apply(empty, 1, "q") == 0
    assert sink.apply(empty, 1, "q") is None
    sink.apply(pa.table({"k": ["b"], "id": [3], "s": [None]}, schema=empty.schema), 2, "q")
    table = deltalake.DeltaTable(path)
    assert table.metadata().partition_columns == ["k"]
    assert table.transaction_version("q") == 2
    got = read(path)
    assert [r[:2] for r in got] == [(None, 2), ("a", 1), ("b", 3)]
    assert got[0][2] != got[0][2]  # NaN kept as NaN


def test_types_a_view_writes_read_back_as_written(tmp_path):
    """DECIMAL with 30 digits, dates before 1970, UTC and naive timestamps, binary, booleans, on
    update through a MERGE."""
    schema, row = TYPED_SCHEMA, TYPED_ROW
    sink = DeltaSink(str(tmp_path), key=["id"], upsert=True)
    sink.apply(pa.Table.from_pylist([row], schema=schema), 0, "q")
    sink.check_columns(schema)  # the table it made fits the view
    changed = dict(row, d=decimal.Decimal("-0.0001"), f=None)
    sink.apply(pa.Table.from_pylist([changed, dict(row, id=2)], schema=schema), 1, "q")
    got = sorted(deltalake.DeltaTable(str(tmp_path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    want = [{k: v for k, v in r.items() if k != "_change"} for r in (changed, dict(row, id=2))]
    assert got == want


def test_another_querys_table_is_refused_at_start_and_at_apply(tmp_path):
    path = str(tmp_path)
    DeltaSink(path, key=["id"], upsert=False).apply(pa.table({"id": [1]}), 0, "q1")
    kept = DeltaSink(path, key=["id"], upsert=False).bookkeeping()
    assert (kept.table_exists, kept.applied.query_id, kept.applied.batch_id) == (True, "q1", 0)
    with pytest.raises(SinkDriftError, match="another query"):
        check_pairing(path, kept, CheckpointState("q2", 0, 0), "")
    check_pairing(path, kept, CheckpointState("q1", 0, 1), "")
    version = deltalake.DeltaTable(path).version()
    with pytest.raises(SinkDriftError, match=r"written by another query \(q1\) than this one \(q2\)"):
        DeltaSink(path, key=["id"], upsert=False).apply(pa.table({"id": [2]}), 1, "q2")
    assert deltalake.DeltaTable(path).version() == version


def test_a_table_of_other_writers_commits_keeps_its_record(tmp_path):
    """A commit without overwindow's record (an OPTIMIZE, another writer) after the last batch: the
    record is the newest commit that has one."""
    path = str(tmp_path)
    DeltaSink(path, key=["id"], upsert=False).apply(pa.table({"id": [1]}), 4, "q")
    deltalake.write_deltalake(path, pa.table({"id": [9]}), mode="append")
    assert DeltaSink(path, key=["id"], upsert=False).bookkeeping().applied.batch_id == 4


@pytest.mark.parametrize("table, refusal", DRIFTED)
def test_a_column_dropped_or_retyped_is_refused_in_one_line_before_any_write(tmp_path, table, refusal):
    path = str(tmp_path)
    deltalake.write_deltalake(path, table)
    with pytest.raises(SinkDriftError, match=rf"^Delta table \S+{re.escape(refusal)}$"):
        DeltaSink(path, key=["id"], upsert=True).check_columns(SCHEMA)
    assert deltalake.DeltaTable(path).version() == 0


def test_columns_the_view_does_not_write_may_stay_and_partitions_must_match(tmp_path):
    path = str(tmp_path)
    deltalake.write_deltalake(
        path, pa.table({"k": ["a"], "id": [1], "s": [1.0], "note": ["x"]}), partition_by=["k"]
    )
    DeltaSink(path, key=["id"], upsert=True, partition_by=["k"]).check_columns(SCHEMA)
    with pytest.raises(SinkDriftError, match=r"partitioned by \(k\), the view file by \(id\)"):
        DeltaSink(path, key=["id"], upsert=True, partition_by=["id"]).check_columns(SCHEMA)
    with pytest.raises(SinkDriftError, match="writes no column day to partition"):
        DeltaSink(str(tmp_path / "new"), key=["id"], upsert=True, partition_by=["day"]).check_columns(SCHEMA)


def test_a_column_delta_has_no_type_for_is_refused(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("gap", pa.duration("us"))])
    with pytest.raises(SinkDriftError, match=r"Delta has no type for column gap"):
        DeltaSink(str(tmp_path), key=["id"], upsert=False).check_columns(schema)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2, 3]), st.sampled_from(["upsert", "delete"])), max_size=10))
def test_no_null_keys_merge_with_equality(tmp_path_factory, changes):
    """Keys without NULLs in a batch match with ``=`` (a hash join): same result as the model."""
    path = str(tmp_path_factory.mktemp("eq"))
    sink = DeltaSink(path, key=["k", "id"], upsert=True)
    log = [[("a", i, float(n), c) for n, (i, c) in enumerate(changes)]]
    for b, batch in enumerate(batches(log)):
        sink.apply(batch, b, "q")
    assert (read(path) if deltalake.DeltaTable.is_deltatable(path) else []) == model(log)
