"""The PostgreSQL sink against a real server the test starts (Debian's PostgreSQL packages; .ci/run
installs them): exactly-once batches, upserts/deletes with NULL keys, the query that wrote the table,
quoted names, bound values, no DSN in repr."""

import itertools

import pyarrow as pa
import pytest
from hypothesis import given, settings
from sink_support import CHANGELOG, SCHEMAS, batches, model, one_row, sort_key

from overwindow.pipeline.sinks import Applied, Bookkeeping, PostgresSink, SinkDriftError


def _rows(dsn, table):
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn) as con:
        got = con.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))).fetchall()
        return sorted(got, key=sort_key)


def test_upserts_deletes_and_replays(postgres_dsn):
    sink = PostgresSink(postgres_dsn, "view one", key=["k", "id"], upsert=True)
    b0 = pa.table(
        {"k": ["a", "a", "b"], "id": [1, 2, 1], "s": [1.0, 2.0, float("nan")], "_change": ["upsert"] * 3}
    )
    assert sink.apply(b0, 0, "q") == 3
    assert sink.apply(b0, 0, "q") is None  # replayed: skipped
    b1 = pa.table({"k": ["a", "b"], "id": [1, 1], "s": [10.0, None], "_change": ["upsert", "delete"]})
    assert sink.apply(b1, 1, "q") == 2
    assert _rows(postgres_dsn, "view one") == [("a", 1, 10.0), ("a", 2, 2.0)]


_tables = itertools.count()


@settings(max_examples=40, deadline=None)
@given(CHANGELOG)
def test_null_keys_match_like_values(postgres_dsn, changelog):
    """NULL in a partition or row-key column: kept under a unique index NULLS NOT DISTINCT, replaced
    by upserts and removed by deletes (a primary key refused them: every run failed)."""
    table = f"nulls {next(_tables)}"
    sink = PostgresSink(postgres_dsn, table, key=["k", "id"], upsert=True)
    for n, batch in enumerate(batches(changelog)):
        sink.apply(batch, n, "q")
    assert _rows(postgres_dsn, table) == model(changelog)


def test_the_table_records_its_query_and_refuses_another(postgres_dsn):
    import psycopg

    sink = PostgresSink(postgres_dsn, "owned", key=["k"], upsert=False)
    assert sink.bookkeeping() == Bookkeeping(False, None)
    b = pa.table({"k": [1], "s": [0.5]})
    sink.apply(b, 0, "query-1")
    assert sink.bookkeeping() == Bookkeeping(True, Applied("query-1", 0))
    with pytest.raises(SinkDriftError, match="written by another query"):
        sink.apply(b, 1, "query-2")
    assert _rows(postgres_dsn, "owned") == [(1, 0.5)]
    with psycopg.connect(postgres_dsn) as con:  # bookkeeping of an earlier version: no query id
        con.execute('UPDATE "_overwindow_batches" SET query_id = NULL WHERE view = %s', ("owned",))
    assert sink.bookkeeping() == Bookkeeping(True, Applied(None, 0))
    assert sink.apply(b, 1, "query-2") == 1
    assert sink.bookkeeping() == Bookkeeping(True, Applied("query-2", 1))


def test_appends_with_quoted_names_and_bound_values(postgres_dsn):
    evil = 'v"; DROP TABLE x; --'
    sink = PostgresSink(postgres_dsn, evil, key=["id"], upsert=False)
    b = pa.table({"id": [1], "weird col": ["'); DROP TABLE x; --"]})
    assert sink.apply(b, 0, "q") == 1 and sink.apply(b, 0, "q") is None
    assert _rows(postgres_dsn, evil) == [(1, "'); DROP TABLE x; --")]
    assert sink.bookkeeping().applied == Applied("q", 0)
    assert "password" not in repr(PostgresSink("host=h password=secret", "t", ["id"], False))


def test_decimal_columns_are_numeric_with_every_digit(postgres_dsn):
    from decimal import Decimal

    sink = PostgresSink(postgres_dsn, "money", key=["id"], upsert=True)
    big = Decimal("12345678901234567890.123456789012345678")
    b = pa.table(
        {
            "id": [1, 2],
            "price": pa.array([Decimal("1.10"), None], pa.decimal128(12, 2)),
            "big": pa.array([big, -big], pa.decimal128(38, 18)),
            "_change": ["upsert", "upsert"],
        }
    )
    assert sink.apply(b, 0, "q") == 2
    assert _rows(postgres_dsn, "money") == [(1, Decimal("1.10"), big), (2, None, -big)]


@settings(max_examples=15, deadline=None)
@given(schema=SCHEMAS)
def test_a_table_fits_the_view_that_made_it(postgres_dsn, schema):
    """Every column type the sink creates reads back (``format_type``) as the type it writes."""
    sink = PostgresSink(postgres_dsn, f"fit {next(_tables)}", key=["k"], upsert=True)
    sink.apply(one_row(schema), 0, "q")
    sink.check_columns(schema)


def test_a_column_of_another_type_is_refused(postgres_dsn):
    """Issue 40, item 4: with the value column changed to bigint, 3.5 and 4.5 were both stored as 4;
    the check at start names the column and both types."""
    import psycopg

    sink = PostgresSink(postgres_dsn, "retyped", key=["k"], upsert=True)
    batch = pa.table({"k": ["a"], "s": [3.5], "_change": ["upsert"]})
    sink.apply(batch, 0, "q")
    with psycopg.connect(postgres_dsn) as con:
        con.execute('ALTER TABLE "retyped" ALTER COLUMN s TYPE bigint')
    with pytest.raises(SinkDriftError) as e:
        sink.check_columns(batch.schema)
    assert str(e.value) == (
        "table retyped: column s is bigint there, the view writes double precision (DOUBLE): values "
        "would be converted to the table's type"
    )
