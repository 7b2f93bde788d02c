"""The SQLite sink applies each micro-batch exactly once, quotes identifiers, binds values."""

import sqlite3

import pyarrow as pa

from overwindow.pipeline.sinks import SqliteSink


def rows(db, table):
    con = sqlite3.connect(db)
    try:
        quoted = '"' + table.replace('"', '""') + '"'
        return sorted(con.execute(f"SELECT * FROM {quoted}").fetchall())
    finally:
        con.close()


def test_upserts_and_deletes_keyed_by_partition_and_row_key(tmp_path):
    db = str(tmp_path / "v.sqlite")
    sink = SqliteSink(db, "v", key=["k", "id"], upsert=True)
    b0 = pa.table({"k": ["a", "a", "b"], "id": [1, 2, 1], "s": [1.0, 2.0, 3.0], "_change": ["upsert"] * 3})
    assert sink.apply(b0, 0) == 3
    b1 = pa.table({"k": ["a", "b"], "id": [1, 1], "s": [10.0, None], "_change": ["upsert", "delete"]})
    assert sink.apply(b1, 1) == 2
    assert rows(db, "v") == [("a", 1, 10.0), ("a", 2, 2.0)]


def test_a_replayed_batch_changes_nothing(tmp_path):
    db = str(tmp_path / "v.sqlite")
    sink = SqliteSink(db, "v", key=["k"], upsert=False)
    b = pa.table({"k": [1, 2], "s": [0.5, 1.5]})
    assert sink.apply(b, 0) == 2
    assert sink.apply(b, 0) == 0  # the same batch id again: skipped
    assert sink.apply(b.slice(0, 1), 1) == 1
    assert rows(db, "v") == [(1, 0.5), (1, 0.5), (2, 1.5)]


def test_names_are_quoted_and_values_bound(tmp_path):
    db = str(tmp_path / "v.sqlite")
    evil = 'v"; DROP TABLE x; --'
    sink = SqliteSink(db, evil, key=["id"], upsert=True)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE x (a)")
    con.commit()
    con.close()
    b = pa.table({"id": [1], "weird col": ["'); DROP TABLE x; --"], "_change": ["upsert"]})
    assert sink.apply(b, 0) == 1
    assert rows(db, evil) == [(1, "'); DROP TABLE x; --")]
    assert rows(db, "x") == []  # still there


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
    assert sink.apply(b, 0) == 3
    assert rows(db, "v") == [(1, 1.1, str(big)), (2, None, str(big)), (3, -2.5, None)]
    con = sqlite3.connect(db)
    assert [r[2] for r in con.execute('PRAGMA table_info("v")')] == ["INTEGER", "NUMERIC", "TEXT"]
    con.close()
