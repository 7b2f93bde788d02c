"""SESSION frames in the logical layer (docs/sessions.md): ``SESSION WITH GAP <gap>`` parses onto
the window (a frame of unit SESSION carrying its gap), prints back as SQL that parses to the same
call, passes through whole queries untouched by the other clauses, and what is not defined is
refused in SQL words."""

from __future__ import annotations

from decimal import Decimal as D

import pyarrow as pa
import pytest

from overwindow import Frame, FrameUnit, Interval, WindowSpecError, parse_window
from overwindow.logical.expr import DIALECT, for_spark, read_sql
from overwindow.physical.sessions import check_session_gap
from overwindow.spark.query import parse_query

MINUTES_30 = Interval(micros=1_800_000_000, fields="MINUTE")


@pytest.mark.parametrize(
    "text, gap",
    [
        ("sum(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP INTERVAL '30' MINUTE) AS s", MINUTES_30),
        ("count(*) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP INTERVAL 30 MINUTES) AS s", MINUTES_30),
        ("avg(x) OVER (ORDER BY ts SESSION WITH GAP INTERVAL '30 minutes') AS s", MINUTES_30),
        ("first_value(ts) OVER (PARTITION BY k ORDER BY t DESC SESSION WITH GAP 2.5) AS s", D("2.5")),
        ("last_value(x) IGNORE NULLS OVER (ORDER BY t NULLS LAST SESSION WITH GAP 3) AS s", 3),
        ("nth_value(x, 2) OVER (ORDER BY t SESSION WITH GAP 1e0) AS s", 1.0),
        ("max(x) FILTER (WHERE x > 0) OVER (ORDER BY session SESSION WITH GAP 4) AS s", 4),
    ],
)
def test_parses_onto_the_frame_and_prints_back(text, gap):
    call = parse_window(text).calls[0]
    assert call.frame == Frame.session(gap)
    assert call.frame.unit is FrameUnit.SESSION and not call.frame.is_whole_partition
    assert f"SESSION WITH GAP {call.frame}".endswith(str(call.frame))
    again = parse_window(str(call)).calls[0]
    assert again == call and str(again) == str(call)


def test_an_expression_over_session_windows_and_other_windows_beside_them():
    w = parse_window(
        "x - avg(x) OVER (PARTITION BY k ORDER BY t SESSION WITH GAP 10) "
        "+ lag(x) OVER (PARTITION BY k ORDER BY t) AS d"
    )
    frames = {c.function: c.frame for c in w.calls}
    assert frames["avg"] == Frame.session(10) and not frames["lag"].is_session


def test_whole_queries_keep_the_clause_and_spark_gets_the_window_without_it():
    q = (
        "SELECT k, ts, count(*) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP INTERVAL '30' MINUTE) AS n "
        "FROM v"
    )
    query = parse_query(q)
    item = query.columns[2].sql(dialect=DIALECT)
    assert item.endswith("SESSION WITH GAP INTERVAL '30' MINUTE) AS n")
    assert parse_window(item).calls[0].frame == Frame.session(MINUTES_30)
    assert for_spark(q) == "SELECT k, ts, COUNT(*) OVER (PARTITION BY k ORDER BY ts) AS n FROM v"
    plain = "SELECT lag(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS p FROM v"
    assert for_spark(plain) == plain
    # other SQL reads as before: a column named session, WITH in a query
    assert read_sql("SELECT session FROM (SELECT 1 AS session)").sql(dialect=DIALECT) == (
        "SELECT session FROM (SELECT 1 AS session)"
    )


@pytest.mark.parametrize(
    "text, said",
    [
        ("sum(x) OVER (PARTITION BY k SESSION WITH GAP 5) AS s", "SESSION WITH GAP needs ORDER BY"),
        ("sum(x) OVER (SESSION WITH GAP 5) AS s", "SESSION WITH GAP needs ORDER BY"),
        ("sum(x) OVER (ORDER BY a, b SESSION WITH GAP 5) AS s", "exactly one ORDER BY column"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP 5 ROWS 2 PRECEDING) AS s", "takes no ROWS bounds"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP 5 RANGE 1 PRECEDING) AS s", "no RANGE"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP 5 GROUPS 1 PRECEDING) AS s", "no GROUPS"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP) AS s", "expected a gap after SESSION WITH GAP"),
        ("sum(x) OVER (ORDER BY a SESSION GAP 5) AS s", "syntax error"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP -5) AS s", "positive number or INTERVAL"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP 0) AS s", "positive number or INTERVAL"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP NULL) AS s", "positive number or INTERVAL"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP 'x') AS s", "positive number or INTERVAL"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP INTERVAL -1 MINUTE) AS s", "positive number or INTERVAL"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP INTERVAL 1 MONTH) AS s", "year-month INTERVAL"),
        ("sum(x) OVER (ORDER BY a SESSION WITH GAP y) AS s", "expected a constant"),
        ("row_number() OVER (ORDER BY a SESSION WITH GAP 5) AS s", "row_number() ignores window frames"),
        ("rank() OVER (ORDER BY a SESSION WITH GAP 5) AS s", "rank() ignores window frames"),
        ("dense_rank() OVER (ORDER BY a SESSION WITH GAP 5) AS s", "ignores window frames"),
        ("ntile(2) OVER (ORDER BY a SESSION WITH GAP 5) AS s", "ntile() ignores window frames"),
        ("cume_dist() OVER (ORDER BY a SESSION WITH GAP 5) AS s", "ignores window frames"),
        ("lag(x) OVER (ORDER BY a SESSION WITH GAP 5) AS s", "lag() ignores window frames"),
        ("lead(x, 2) OVER (ORDER BY a SESSION WITH GAP 5) AS s", "lead() ignores window frames"),
    ],
)
def test_refusals_in_sql_words(text, said):
    with pytest.raises(WindowSpecError, match=said.replace("(", r"\(").replace(")", r"\)")):
        parse_window(text)


@pytest.mark.parametrize(
    "gap, key, ok",
    [
        (MINUTES_30, pa.timestamp("us"), True),
        (Interval(days=2, fields="DAY"), pa.date32(), True),
        (Interval(micros=3_600_000_000, fields="HOUR"), pa.date32(), False),
        (30, pa.timestamp("us"), False),
        (5, pa.int64(), True),
        (D("0.5"), pa.decimal128(38, 10), True),
        (0.5, pa.float64(), True),
        (MINUTES_30, pa.int64(), False),
        (5, pa.string(), False),
        (5, pa.bool_(), False),
    ],
)
def test_the_gap_against_the_order_by_type(gap, key, ok):
    if ok:
        check_session_gap(gap, key)
    else:
        with pytest.raises(WindowSpecError, match="SESSION WITH GAP"):
            check_session_gap(gap, key)
