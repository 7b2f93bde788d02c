"""The SQLite sink applies each micro-batch exactly once, keeps NULL keys as SQL does, records the
query that wrote it, quotes identifiers, binds values, and refuses a table that does not fit the
view (another column type, key or case of its name)."""

import sqlite3

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sink_support import CHANGELOG, SCHEMAS, batches, model, one_row, sort_key

from overwindow.pipeline.checkpoint import CheckpointState
from overwindow.pipeline.sinks import Applied, Bookkeeping, SinkDriftError, SqliteSink, check_pairing


def rows(db, table):
    con = sqlite3.connect(db)
    try:
        quoted = '"' + table.replace('"', '""') + '"'
        return sorted(con.execute(f"SELECT * FROM {quoted}").fetchall(), key=sort_key)
    finally:
        con.close()


def test_upserts_and_deletes_keyed_by_partition_and_row_key(tmp_path):
    db = str(tmp_path / "v.sqlite")
    sink = SqliteSink(db, "v", key=["k", "id"], upsert=True)
    b0 = pa.table({"k": ["a", "a", "b"], "id": [1, 2, 1], "s": [1.0, 2.0, 3.0], "_change": ["upsert"] * 3})
    assert sink.apply(b0, 0, "q") == 3
    b1 = pa.table({"k": ["a", "b"], "id": [1, 1], "s": [10.0, None], "_change": ["upsert", "delete"]})
    assert sink.apply(b1, 1, "q") == 2
    assert rows(db, "v") == [("a", 1, 10.0), ("a", 2, 2.0)]


@settings(max_examples=150, deadline=None)
@given(CHANGELOG)
def test_null_keys_match_like_values(tmp_path_factory, changelog):
    """NULL in a partition or row-key column: an upsert replaces the row with the same NULL key and a
    delete removes it (SQLite's = never matches NULL: rows were duplicated and never deleted)."""
    db = str(tmp_path_factory.mktemp("nulls") / "v.sqlite")
    sink = SqliteSink(db, "v", key=["k", "id"], upsert=True)
    for n, batch in enumerate(batches(changelog)):
        sink.apply(batch, n, "q")
    assert rows(db, "v") == model(changelog)


def test_a_replayed_batch_changes_nothing_and_says_so(tmp_path):
    db = str(tmp_path / "v.sqlite")
    sink = SqliteSink(db, "v", key=["k"], upsert=False)
    b = pa.table({"k": [1, 2], "s": [0.5, 1.5]})
    assert sink.apply(b, 0, "q") == 2
    assert sink.apply(b, 0, "q") is None  # the same batch id again: skipped, not "0 rows"
    assert sink.apply(b.slice(0, 1), 1, "q") == 1
    assert rows(db, "v") == [(1, 0.5), (1, 0.5), (2, 1.5)]


def test_the_table_records_its_query_and_refuses_another(tmp_path):
    db = str(tmp_path / "v.sqlite")
    sink = SqliteSink(db, "v", key=["k"], upsert=False)
    assert sink.bookkeeping() == Bookkeeping(False, None)
    b = pa.table({"k": [1], "s": [0.5]})
    sink.apply(b, 0, "query-1")
    sink.apply(b, 1, "query-1")
    assert sink.bookkeeping() == Bookkeeping(True, Applied("query-1", 1))
    with pytest.raises(SinkDriftError, match="written by another query"):
        sink.apply(b, 0, "query-2")  # a new checkpoint's batch 0 was skipped as applied before
    assert rows(db, "v") == [(1, 0.5), (1, 0.5)]


def test_bookkeeping_of_an_earlier_version_gains_the_query_id(tmp_path):
    db = str(tmp_path / "v.sqlite")
    con = sqlite3.connect(db)
    con.execute('CREATE TABLE "_overwindow_batches" (view TEXT PRIMARY KEY, batch_id INTEGER NOT NULL)')
    con.execute("INSERT INTO \"_overwindow_batches\" VALUES ('v', 3)")
    con.commit()
    con.close()
    sink = SqliteSink(db, "v", key=["k"], upsert=False)
    assert sink.bookkeeping() == Bookkeeping(False, Applied(None, 3))
    assert sink.apply(pa.table({"k": [1]}), 3, "q") is None
    assert sink.apply(pa.table({"k": [1]}), 4, "q") == 1
    assert sink.bookkeeping() == Bookkeeping(True, Applied("q", 4))


NEW = CheckpointState(None, None, None)


@pytest.mark.parametrize(
    "kept, checkpoint, refused",
    [
        (Bookkeeping(False, None), NEW, None),  # a new view
        (Bookkeeping(True, None), NEW, None),  # a table made beforehand, no batches
        (Bookkeeping(True, Applied("q1", 4)), CheckpointState("q1", 4, 4), None),
        (Bookkeeping(True, Applied("q1", 5)), CheckpointState("q1", 4, 5), None),  # killed before commit
        (Bookkeeping(True, Applied("q1", 0)), CheckpointState("q1", None, 0), None),
        (Bookkeeping(True, Applied(None, 4)), CheckpointState("q1", 4, 4), None),  # earlier version
        (Bookkeeping(True, Applied("q1", 4)), NEW, "holds batches 0..4 of another query"),
        (Bookkeeping(True, Applied("q1", 4)), CheckpointState("q2", 7, 7), "of another query"),
        (Bookkeeping(True, Applied(None, 4)), NEW, "of an earlier run, and the checkpoint is new"),
        (
            Bookkeeping(False, None),
            CheckpointState("q1", 4, 4),
            "batches 0..4 were applied but the table of v",
        ),
        (Bookkeeping(False, Applied("q1", 4)), CheckpointState("q1", 4, 4), "the table of v is missing"),
        (Bookkeeping(True, None), CheckpointState("q1", 4, 4), "record of applied batches of v is missing"),
        (
            Bookkeeping(True, Applied("q1", 9)),
            CheckpointState("q1", 4, 5),
            "past the checkpoint's last batch 5",
        ),
        (Bookkeeping(True, Applied("q1", 2)), CheckpointState("q1", 4, 5), "applied batches up to 2 only"),
        (
            Bookkeeping(True, Applied("q1", 2)),
            CheckpointState("q1", None, 0),
            "past the checkpoint's last batch 0",
        ),
    ],
)
def test_check_pairing(kept, checkpoint, refused):
    if refused is None:
        check_pairing("v", kept, checkpoint, " (checkpoint chk)")
    else:
        with pytest.raises(SinkDriftError, match=refused) as e:
            check_pairing("v", kept, checkpoint, " (checkpoint chk)")
        assert "(checkpoint chk)" in str(e.value) and "a new checkpoint and a new (or dropped) table" in str(
            e.value
        )


def test_names_are_quoted_and_values_bound(tmp_path):
    db = str(tmp_path / "v.sqlite")
    evil = 'v"; DROP TABLE x; --'
    sink = SqliteSink(db, evil, key=["id"], upsert=True)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE x (a)")
    con.commit()
    con.close()
    b = pa.table({"id": [1], "weird col": ["'); DROP TABLE x; --"], "_change": ["upsert"]})
    assert sink.apply(b, 0, "q") == 1
    assert rows(db, evil) == [(1, "'); DROP TABLE x; --")]
    assert rows(db, "x") == []  # still there


def test_timestamps_are_text_of_one_format_pandas_reads(tmp_path):
    """Issue 45: whole seconds came out as '2024-03-15 18:00:36+00:00' beside
    '...:36.100000+00:00', which pandas.to_datetime refuses without format="ISO8601"."""
    import datetime as dt

    import pandas as pd

    times = [
        dt.datetime(2024, 3, 15, 18, 0, 36),
        dt.datetime(2024, 3, 15, 18, 0, 36, 100000),
        dt.datetime(1901, 1, 1, 0, 0, 0, 1),
        dt.datetime(2024, 3, 15),
    ]
    db = str(tmp_path / "v.sqlite")
    sink = SqliteSink(db, "v", key=["k"], upsert=True)
    table = pa.table(
        {"k": [0, 1, 2, 3], "utc": pa.array(times, pa.timestamp("us", tz="UTC")), "wall": pa.array(times)}
    )
    sink.apply(table, 0, "q")
    got = rows(db, "v")
    for column, zone in ((1, "+00:00"), (2, "")):
        texts = [r[column] for r in got]
        assert {len(t) for t in texts} == {26 + len(zone)} and all(t.endswith(zone) for t in texts)
        read = pd.to_datetime(pd.Series(texts))
        assert [t.to_pydatetime().replace(tzinfo=None) for t in read] == times


def test_decimal_columns_keep_their_digits(tmp_path):
    """DECIMAL values (sqlite3 binds no Decimal): up to 15 digits in a NUMERIC column (its REALs hold
    them), longer ones as their exact text (a REAL would round them)."""
    from decimal import Decimal

    db = str(tmp_path / "v.sqlite")
    sink = SqliteSink(db, "v", key=["id"], upsert=False)
    big = Decimal("12345678901234567890.123456789012345678")
    b = pa.table(
        {
            "id": [1, 2, 3],
            "price": pa.array([Decimal("1.10"), None, Decimal("-2.50")], pa.decimal128(12, 2)),
            "big": pa.array([big, big, None], pa.decimal128(38, 18)),
        }
    )
    assert sink.apply(b, 0, "q") == 3
    assert rows(db, "v") == [(1, 1.1, str(big)), (2, None, str(big)), (3, -2.5, None)]
    con = sqlite3.connect(db)
    assert [r[2] for r in con.execute('PRAGMA table_info("v")')] == ["INTEGER", "NUMERIC", "TEXT"]
    con.close()


def test_interval_columns_are_interval_text(tmp_path):
    """INTERVAL DAY and DAY TO SECOND values (``DATE - DATE``, its average; sqlite3 binds no
    timedelta) as PostgreSQL's interval text: days, then the time of day added to them."""
    import datetime as dt

    db = str(tmp_path / "v.sqlite")
    sink = SqliteSink(db, "v", key=["id"], upsert=False)
    b = pa.table(
        {
            "id": [1, 2],
            "days": pa.array([dt.timedelta(days=-2), None], pa.duration("s")),
            "mean": pa.array(
                [dt.timedelta(days=-2, hours=1, microseconds=7), dt.timedelta(0)], pa.duration("us")
            ),
        }
    )
    assert sink.apply(b, 0, "q") == 2
    assert rows(db, "v") == [
        (1, "-2 days 00:00:00.000000", "-2 days 01:00:00.000007"),
        (2, None, "0 days 00:00:00.000000"),
    ]


# -- the table against the view (issue 40, items 4 and 5) ---------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    schema=SCHEMAS,
    other=st.sampled_from(["INTEGER", "REAL", "TEXT", "BLOB", "NUMERIC"]),
    at=st.integers(0, 5),
)
def test_a_table_fits_the_view_that_made_it_and_no_other_column_type(tmp_path_factory, schema, other, at):
    """The table the sink creates passes the check at start; the same table with one column of
    another declared type is refused naming the column and both types (SQLite converted values)."""
    db = str(tmp_path_factory.mktemp("fit") / "v.sqlite")
    sink = SqliteSink(db, "v", key=["k"], upsert=True)
    sink.apply(one_row(schema), 0, "q")
    sink.check_columns(schema)
    column = schema.field(1 + at % (len(schema) - 2))
    with sqlite3.connect(db) as con:
        declared = {r[1]: r[2] for r in con.execute('PRAGMA table_info("v")')}
    if declared[column.name] == other:
        return
    body = ", ".join(
        f'"{n}" {other if n == column.name else t}' + (" PRIMARY KEY" if n == "k" else "")
        for n, t in declared.items()
    )
    with sqlite3.connect(db) as con:
        con.execute('DROP TABLE "v"')
        con.execute(f'CREATE TABLE "v" ({body})')
    with pytest.raises(SinkDriftError) as e:
        sink.check_columns(schema)
    assert str(e.value).startswith(
        f"table v: column {column.name} is {other} there, the view writes {declared[column.name]}"
    )


def test_a_missing_column_or_another_key_is_refused(tmp_path):
    db = str(tmp_path / "v.sqlite")
    schema = pa.schema(
        [("k", pa.string()), ("id", pa.int64()), ("s", pa.float64()), ("_change", pa.string())]
    )
    with sqlite3.connect(db) as con:
        con.execute('CREATE TABLE "v" (k TEXT, id INTEGER, note TEXT, PRIMARY KEY (k, id))')
    with pytest.raises(SinkDriftError, match=r"^table v has no column s \(the view writes REAL, DOUBLE\)$"):
        SqliteSink(db, "v", key=["k", "id"], upsert=True).check_columns(schema)
    with sqlite3.connect(db) as con:
        con.execute('ALTER TABLE "v" ADD COLUMN s REAL')
    SqliteSink(db, "v", key=["k", "id"], upsert=True).check_columns(schema)  # note may stay
    with pytest.raises(SinkDriftError, match=r"keyed by \(k, id\), the view by \(id\): an upsert would add"):
        SqliteSink(db, "v", key=["id"], upsert=True).check_columns(schema)


def test_tables_differing_only_in_case_are_one_table(tmp_path):
    """Issue 40, item 5: SQLite's "Prices" and "prices" are one table; a second view's sink saw none
    (its bookkeeping compared names with case) and added every row again. It now sees the first's
    table and the query that writes it: the pairing check refuses it, and so does a write."""
    db = str(tmp_path / "v.sqlite")
    first = SqliteSink(db, "Prices", key=["k"], upsert=False)
    first.apply(pa.table({"k": [1], "s": [0.5]}), 0, "q1")
    second = SqliteSink(db, "prices", key=["k"], upsert=False)
    kept = second.bookkeeping()
    assert kept == Bookkeeping(True, Applied("q1", 0))
    with pytest.raises(SinkDriftError, match="of another query"):
        check_pairing("prices", kept, CheckpointState(None, None, None), "")
    with pytest.raises(SinkDriftError, match="written by another query"):
        second.apply(pa.table({"k": [1], "s": [0.5]}), 0, "q2")
    assert rows(db, "Prices") == [(1, 0.5)]
