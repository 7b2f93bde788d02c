"""The PostgreSQL sink against a real server the test starts (Debian's PostgreSQL packages; .ci/run
installs them): exactly-once batches, upserts/deletes, quoted names, bound values, no DSN in repr."""

import pyarrow as pa

from overwindow.pipeline.sinks import PostgresSink


def _rows(dsn, table):
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn) as con:
        return sorted(con.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))).fetchall())


def test_upserts_deletes_and_replays(postgres_dsn):
    sink = PostgresSink(postgres_dsn, "view one", key=["k", "id"], upsert=True)
    b0 = pa.table(
        {"k": ["a", "a", "b"], "id": [1, 2, 1], "s": [1.0, 2.0, float("nan")], "_change": ["upsert"] * 3}
    )
    assert sink.apply(b0, 0) == 3
    assert sink.apply(b0, 0) == 0  # replayed: skipped
    b1 = pa.table({"k": ["a", "b"], "id": [1, 1], "s": [10.0, None], "_change": ["upsert", "delete"]})
    assert sink.apply(b1, 1) == 2
    assert _rows(postgres_dsn, "view one") == [("a", 1, 10.0), ("a", 2, 2.0)]


def test_appends_with_quoted_names_and_bound_values(postgres_dsn):
    evil = 'v"; DROP TABLE x; --'
    sink = PostgresSink(postgres_dsn, evil, key=["id"], upsert=False)
    b = pa.table({"id": [1], "weird col": ["'); DROP TABLE x; --"]})
    assert sink.apply(b, 0) == 1 and sink.apply(b, 0) == 0
    assert _rows(postgres_dsn, evil) == [(1, "'); DROP TABLE x; --")]
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
    assert sink.apply(b, 0) == 2
    assert _rows(postgres_dsn, "money") == [(1, Decimal("1.10"), big), (2, None, -big)]
