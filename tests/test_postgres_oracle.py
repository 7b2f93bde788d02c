"""PostgreSQL, the SQL standard's second witness beside DuckDB (tests/test_differential.py), for what
overwindow computes as "more of SQL" where Spark refuses: frames whose start lies past their end on
one side of the row (empty), and RANGE bounds of two interval units. The tables and calls are
test_differential's; a real PostgreSQL server runs them (started by the tests)."""

from __future__ import annotations

import math

import psycopg
import pyarrow as pa
from test_differential import TWO_UNITS, _one_sided_pairs, _one_sided_table, _ours, _two_units_table

PG_TYPES = {pa.int64(): "bigint", pa.float64(): "double precision", pa.string(): "text"}


def _postgres(dsn: str, table: pa.Table, items: list[str]) -> dict[str, list]:
    """``SELECT items FROM t ORDER BY id`` in PostgreSQL over ``table`` (a temporary table)."""

    def sql_type(t):
        if pa.types.is_timestamp(t):
            return "timestamp"
        return "date" if pa.types.is_date(t) else PG_TYPES[t]

    with psycopg.connect(dsn) as con:
        columns = ", ".join(f"{f.name} {sql_type(f.type)}" for f in table.schema)
        con.execute(f"CREATE TEMPORARY TABLE t ({columns})")
        marks = ", ".join(["%s"] * table.num_columns)
        with con.cursor() as cur:
            cur.executemany(f"INSERT INTO t VALUES ({marks})", [tuple(r.values()) for r in table.to_pylist()])
        cur = con.execute(f"SELECT {', '.join(items)} FROM t ORDER BY id")
        names = [d.name for d in cur.description]
        rows = cur.fetchall()
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


def _assert_as_postgres(dsn: str, table: pa.Table, calls: dict[str, str]) -> None:
    items = [f"{call} AS w_{name}" for name, call in calls.items()]
    ours, theirs = _ours(table, items), _postgres(dsn, table, items)
    for name in calls:
        for i, (a, b) in enumerate(zip(ours["w_" + name], theirs["w_" + name])):
            same = a == b or (
                a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-12)
            )
            assert same, f"{name} row {i}: ours={a!r} postgres={b!r}  [{calls[name]}]"


def test_a_frame_starting_past_its_end_on_one_side_is_empty_as_in_postgres(postgres_dsn):
    _assert_as_postgres(postgres_dsn, _one_sided_table(), {a: o for a, (o, _) in _one_sided_pairs().items()})


def test_an_infinite_range_key_reaches_itself_through_an_empty_looking_frame(postgres_dsn):
    """``+inf - 1`` and ``+inf - 3`` are both +inf (PostgreSQL's in_range, and Spark's arithmetic):
    the frame ``1 PRECEDING AND 3 PRECEDING`` of a +inf key holds the +inf rows, not nothing."""
    t = pa.table({"id": [1, 2, 3, 4], "v": [1.0, float("inf"), float("inf"), 5.0], "x": [1.0, 2.0, 3.0, 4.0]})
    frame = "RANGE BETWEEN 1 PRECEDING AND 3 PRECEDING"
    _assert_as_postgres(
        postgres_dsn,
        t,
        {"s": f"sum(x) OVER (ORDER BY v {frame})", "c": f"count(*) OVER (ORDER BY v {frame})"},
    )


def test_range_bounds_of_two_interval_units_as_in_postgres(postgres_dsn):
    calls = {}
    for i, frame in enumerate(TWO_UNITS):
        calls[f"c{i}"] = f"count(*) OVER (ORDER BY ts {frame})"
        calls[f"s{i}"] = f"sum(x) OVER (ORDER BY ts {frame})"
        if "SECOND" not in frame and "MINUTE" not in frame and "HOUR" not in frame:
            calls[f"d{i}"] = f"count(*) OVER (ORDER BY d {frame})"
    _assert_as_postgres(postgres_dsn, _two_units_table(), calls)
