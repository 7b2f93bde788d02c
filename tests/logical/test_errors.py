"""Validation errors are worded in SQL and name the problem (docs/design/design.md, Validation).

Spec errors are ``WindowSpecError`` (raised while parsing/building a call, or at evaluate time when
they depend on the data's types: an INTERVAL offset over a numeric key, an unknown column);
arithmetic failures on the data are ``WindowRuntimeError``.
"""

from __future__ import annotations

import datetime as dt
import re

import pyarrow as pa
import pytest

from overwindow import (
    Bound,
    Exclude,
    Expr,
    Frame,
    FrameUnit,
    Interval,
    SortKey,
    WindowCall,
    WindowRuntimeError,
    WindowSpecError,
    evaluate,
    parse_window,
)

TABLE = pa.table(
    {
        "k": [1, 1, 2],
        "t": [1, 2, 3],
        "x": [1.0, 2.0, 3.0],
        "d": pa.array([dt.date(2020, 1, 1), dt.date(2020, 1, 2), dt.date(2020, 1, 5)]),
        "ts": pa.array([dt.datetime(2020, 1, 1, h) for h in (0, 1, 5)], pa.timestamp("us")),
        "s": ["a", "b", "c"],
        "b": [True, False, None],
        "big": pa.array([2**62, 2**62, 1], pa.int64()),
    }
)


def spec_error(text: str, *, at_evaluate: bool = False) -> str:
    """The message of the WindowSpecError ``text`` raises, checking *when* it is raised."""
    if at_evaluate:
        call = parse_window(text)  # parses fine: the problem depends on the data
        with pytest.raises(WindowSpecError) as info:
            evaluate(TABLE, call)
    else:
        with pytest.raises(WindowSpecError) as info:
            parse_window(text)
    return str(info.value)


def has(message: str, *words: str) -> bool:
    return all(w.lower() in message.lower() for w in words)


# --- the cases of the brief ---------------------------------------------------------------------


def test_unknown_function():
    msg = spec_error("frobnicate(x) OVER (ORDER BY t) AS r")
    assert has(msg, "unknown window function", "frobnicate")
    assert has(msg, "register_aggregate")  # tells how to add one
    assert has(msg, "row_number", "sum", "percentile_cont")  # lists what exists


def test_range_offset_needs_exactly_one_order_by_key():
    msg = spec_error("sum(x) OVER (ORDER BY t, k RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS r")
    assert has(msg, "RANGE", "ORDER BY", "exactly one", "got 2")
    msg = spec_error("sum(x) OVER (PARTITION BY k RANGE BETWEEN CURRENT ROW AND 2 FOLLOWING) AS r")
    assert has(msg, "RANGE", "ORDER BY", "got 0")


def test_range_without_offset_takes_any_number_of_keys():
    out = evaluate(
        TABLE, "count(*) OVER (ORDER BY k, t RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS r"
    )
    assert out.column("r").to_pylist() == [1, 2, 3]


def test_interval_offset_on_a_double_key_fails_at_evaluate():
    """Spark casts an INTERVAL to an integer or DECIMAL key's type, and refuses it over a DOUBLE
    key (RANGE_FRAME_INVALID_TYPE)."""
    msg = spec_error(
        "sum(x) OVER (ORDER BY x RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND CURRENT ROW) AS r",
        at_evaluate=True,
    )
    assert has(msg, "INTERVAL", "DATE", "TIMESTAMP") and has(msg, "DOUBLE")


def test_numeric_offset_on_a_timestamp_key():
    msg = spec_error(
        "sum(x) OVER (ORDER BY ts RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS r", at_evaluate=True
    )
    assert has(msg, "RANGE", "timestamp", "INTERVAL")


def test_fractional_offset_on_a_date_key():
    msg = spec_error(
        "sum(x) OVER (ORDER BY d RANGE BETWEEN 1.5 PRECEDING AND CURRENT ROW) AS r", at_evaluate=True
    )
    assert has(msg, "RANGE", "date", "INTERVAL", "1.5")


def test_whole_number_offset_on_a_date_key_counts_days():
    """As in Spark and DuckDB, ``RANGE 3 PRECEDING`` over a DATE means 3 days."""
    a = evaluate(TABLE, "count(*) OVER (ORDER BY d RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) AS r")
    b = evaluate(
        TABLE, "count(*) OVER (ORDER BY d RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND CURRENT ROW) AS r"
    )
    assert a.column("r").to_pylist() == b.column("r").to_pylist() == [1, 2, 2]  # Jan 5 reaches Jan 2


def test_range_offset_on_a_string_key():
    msg = spec_error(
        "sum(x) OVER (ORDER BY s RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS r", at_evaluate=True
    )
    assert has(msg, "RANGE", "numeric", "DATE", "TIMESTAMP", "string")


def test_missing_alias():
    msg = spec_error("sum(x) OVER (ORDER BY t)")
    assert has(msg, "AS <name>", "output name")


@pytest.mark.parametrize(
    "frame,read",
    [
        ("ROWS BETWEEN -1 PRECEDING AND CURRENT ROW", "ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW"),
        ("ROWS BETWEEN CURRENT ROW AND -2 FOLLOWING", "ROWS BETWEEN CURRENT ROW AND 2 PRECEDING"),
        ("RANGE BETWEEN -0.5 PRECEDING AND CURRENT ROW", "RANGE BETWEEN 0.5 FOLLOWING AND CURRENT ROW"),
        ("GROUPS BETWEEN -1 PRECEDING AND CURRENT ROW", "GROUPS BETWEEN 1 FOLLOWING AND CURRENT ROW"),
        (
            "RANGE BETWEEN INTERVAL -1 DAY PRECEDING AND CURRENT ROW",
            "RANGE BETWEEN INTERVAL '1' DAY FOLLOWING AND CURRENT ROW",
        ),
    ],
)
def test_negative_offset_reads_as_the_other_side(frame, read):
    """Spark accepts negative offsets: the bound is value - offset, so -1 PRECEDING is 1 FOLLOWING."""
    assert str(parse_window(f"sum(x) OVER (ORDER BY t {frame}) AS r").calls[0].frame) == read


def test_negative_rows_lower_bound_past_upper_bound():
    msg = spec_error("sum(x) OVER (ORDER BY t ROWS BETWEEN -2 PRECEDING AND 1 FOLLOWING) AS r")
    assert has(msg, "lower bound", "upper bound")


@pytest.mark.parametrize(
    "frame,words",
    [
        ("ROWS BETWEEN 1.5 PRECEDING AND CURRENT ROW", ("ROWS", "INT", "1.5")),
        ("GROUPS BETWEEN 0.5 PRECEDING AND CURRENT ROW", ("GROUPS", "INT")),
        ("ROWS BETWEEN 2147483648 PRECEDING AND CURRENT ROW", ("ROWS", "INT", "2147483648")),
        ("ROWS BETWEEN INTERVAL 1 DAY PRECEDING AND CURRENT ROW", ("INTERVAL", "ROWS", "INT")),
        ("ROWS BETWEEN x PRECEDING AND CURRENT ROW", ("constant",)),
    ],
)
def test_bad_offset_kinds(frame, words):
    msg = spec_error(f"sum(x) OVER (ORDER BY t {frame}) AS r")
    assert has(msg, *words)


@pytest.mark.parametrize("n", ["0", "-2", "2.5", "x"])
def test_ntile_needs_a_positive_integer(n):
    msg = spec_error(f"ntile({n}) OVER (ORDER BY t) AS r")
    assert has(msg, "ntile")
    if n != "x":
        assert has(msg, "positive INT", n)
    else:
        assert has(msg, "constant", "x")


@pytest.mark.parametrize("n", ["0", "-1", "0.5", "-1e0"])
def test_nth_value_needs_a_positive_integer(n):
    msg = spec_error(f"nth_value(x, {n}) OVER (ORDER BY t) AS r")
    assert has(msg, "nth_value", "positive INT")


@pytest.mark.parametrize("n", ["1.5", "1.9", "2e0"])
def test_nth_value_casts_a_fractional_offset_to_int(n):
    """Spark casts nth_value's offset to INT, dropping the fraction: nth_value(x, 1.5) is
    nth_value(x, 1) (it was refused)."""
    assert parse_window(f"nth_value(x, {n}) OVER (ORDER BY t) AS r").calls[0].params == (int(float(n)),)


@pytest.mark.parametrize(
    "over",
    [
        "PARTITION BY k RANGE UNBOUNDED PRECEDING",
        "RANGE BETWEEN CURRENT ROW AND CURRENT ROW",
        "PARTITION BY k RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    ],
)
def test_range_frame_without_order_by(over):
    """Spark: "A range window frame cannot be used in an unordered window specification" (it was
    accepted as the whole partition)."""
    msg = spec_error(f"sum(x) OVER ({over}) AS r")
    assert has(msg, "RANGE", "ORDER BY")


def test_range_frame_of_the_whole_partition_without_order_by():
    out = evaluate(TABLE, "count(*) OVER (RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS r")
    assert out.column("r").to_pylist() == [3, 3, 3]


@pytest.mark.parametrize("text", ["sum(x) OVER AS r", "sum(x) OVER"])
def test_over_without_a_window_specification(text):
    """``sum(x) OVER AS r`` was read as ``OVER ()``; Spark refuses it (MISSING_WINDOW_SPECIFICATION)."""
    assert has(spec_error(text), "OVER (...)")


@pytest.mark.parametrize(
    "function",
    [
        "row_number()",
        "rank()",
        "dense_rank()",
        "percent_rank()",
        "cume_dist()",
        "ntile(2)",
        "lag(x)",
        "lead(x, 2)",
    ],
)
def test_ranking_and_offset_functions_take_no_frame(function):
    msg = spec_error(f"{function} OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS r")
    name = function.split("(")[0]
    assert has(msg, f"{name}()", "does not take a window frame")


@pytest.mark.parametrize(
    "function,frame",
    [
        ("row_number()", "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"),
        ("ntile(2)", "ROWS UNBOUNDED PRECEDING"),
        ("cume_dist()", "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"),
    ],
)
def test_ranking_functions_take_their_own_frame_spelled_out(function, frame):
    """Spark accepts the frame a ranking function runs on when it is written out."""
    assert parse_window(f"{function} OVER (ORDER BY t {frame}) AS r").calls[0].function


@pytest.mark.parametrize(
    "function", ["lag(x)", "lead(x)", "row_number()", "rank()", "ntile(3)", "cume_dist()"]
)
def test_order_required(function):
    msg = spec_error(f"{function} OVER (PARTITION BY k) AS r")
    assert has(msg, function.split("(")[0], "ORDER BY")


@pytest.mark.parametrize("function", ["lag(x)", "rank()", "first_value(x)", "nth_value(x, 2)"])
def test_filter_only_on_aggregates(function):
    msg = spec_error(f"{function} FILTER (WHERE x > 0) OVER (ORDER BY t) AS r")
    assert has(msg, "FILTER", "aggregate", function.split("(")[0])


@pytest.mark.parametrize("function", ["sum", "avg", "min", "max", "median", "mode", "stddev"])
def test_distinct_only_in_count(function):
    msg = spec_error(f"{function}(DISTINCT x) OVER () AS r")
    assert has(msg, "DISTINCT", "count(DISTINCT")


@pytest.mark.parametrize(
    "where",
    [
        "sum(nope) OVER () AS r",
        "sum(x) OVER (PARTITION BY nope) AS r",
        "sum(x) OVER (ORDER BY nope) AS r",
        "sum(x) FILTER (WHERE nope > 1) OVER () AS r",
        "lag(x, 1, nope) OVER (ORDER BY t) AS r",
        "nope - lag(x) OVER (ORDER BY t) AS r",
    ],
)
def test_unknown_column(where):
    msg = spec_error(where, at_evaluate=True)
    assert has(msg, "column", "`nope`", "does not exist")
    assert has(msg, "k, t, x")  # lists what exists


def test_column_names_resolve_case_insensitively():
    out = evaluate(TABLE, "sum(X) OVER (ORDER BY T ROWS CURRENT ROW) AS r")
    assert out.column("r").to_pylist() == [1.0, 2.0, 3.0]


# --- more SQL-worded errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "sum(x) OVER (ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) AS r",
            ("lower bound", "UNBOUNDED FOLLOWING"),
        ),
        (
            "sum(x) OVER (ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING) AS r",
            ("upper bound", "UNBOUNDED PRECEDING"),
        ),
        ("sum(x) IGNORE NULLS OVER () AS r", ("IGNORE NULLS", "sum")),
        ("rank() IGNORE NULLS OVER (ORDER BY t) AS r", ("IGNORE NULLS", "rank")),
        (
            "percentile_cont(1.5) WITHIN GROUP (ORDER BY x) OVER () AS r",
            ("percentile_cont", "between 0 and 1", "1.5"),
        ),
        ("quantile_disc(x, -0.1) OVER () AS r", ("percentile_disc", "between 0 and 1")),
        ("quantile_cont(x, [0.5, 2]) OVER () AS r", ("percentile_cont", "between 0 and 1")),
        ("percentile_cont(0.5) WITHIN GROUP (ORDER BY x, t) OVER () AS r", ("exactly one", "ORDER BY")),
        ("sum(x) WITHIN GROUP (ORDER BY x) OVER () AS r", ("WITHIN GROUP", "percentile_cont")),
        ("lag(x, 1.5) OVER (ORDER BY t) AS r", ("lag", "offset", "INT")),
        ("count() OVER () AS r", ("count()", "argument")),
        ("lag(x, 1, 0, 5) OVER (ORDER BY t) AS r", ("arguments",)),
        ("sum(x) AS r", ("no window function", "OVER")),
        ("sum(x) OVER w AS r", ("named windows", "inline")),
        ("sum(sum(x) OVER ()) OVER () AS r", ("cannot be nested",)),
        ("sum(x OVER (", ("syntax error",)),
        ("upper(s) OVER () AS r", ("not a window function",)),
    ],
)
def test_sql_worded_errors(text, words):
    assert has(spec_error(text), *words)


@pytest.mark.parametrize(
    "text,words",
    [
        ("sum(s) OVER () AS r", ("sum(s)", "numeric", "string")),
        ("avg(b) OVER () AS r", ("avg(b)", "numeric", "bool")),
        ("var_pop(d) OVER () AS r", ("var_pop(d)", "numeric", "date")),
        ("bool_and(x) OVER () AS r", ("bool_and(x)", "BOOLEAN")),
        ("median(s) OVER () AS r", ("median(s)", "numeric")),
    ],
)
def test_argument_type_errors(text, words):
    assert has(spec_error(text, at_evaluate=True), *words)


def test_alias_errors():
    with pytest.raises(WindowSpecError, match=r"`x` already exists"):
        evaluate(TABLE, "sum(x) OVER () AS x")
    with pytest.raises(WindowSpecError, match=r"two window calls are named `r`"):
        evaluate(TABLE, "sum(x) OVER () AS r", "avg(x) OVER () AS r")


def test_bigint_overflow_is_a_runtime_error():
    with pytest.raises(WindowRuntimeError, match=r"sum overflows BIGINT"):
        evaluate(TABLE, "sum(big) OVER () AS r")
    assert issubclass(WindowSpecError, ValueError) and issubclass(WindowRuntimeError, ArithmeticError)


def test_errors_from_logical_objects():
    """Building calls from objects runs the same checks as SQL text."""
    t = SortKey(Expr.of("t"))
    with pytest.raises(WindowSpecError, match="GROUPS frames require ORDER BY"):
        WindowCall(
            "sum",
            "r",
            args=(Expr.of("x"),),
            frame=Frame(FrameUnit.GROUPS, Bound.preceding(1), Bound.current_row()),
        )
    with pytest.raises(WindowSpecError, match=r"sum\(\) takes 1 argument"):
        WindowCall("sum", "r")
    with pytest.raises(WindowSpecError, match="RANGE with an offset needs exactly one ORDER BY column"):
        WindowCall(
            "sum",
            "r",
            args=(Expr.of("x"),),
            order_by=(t, t),
            frame=Frame(FrameUnit.RANGE, Bound.preceding(1), Bound.current_row()),
        )
    with pytest.raises(WindowSpecError, match="lower bound of a window frame must be less than or equal"):
        WindowCall(
            "sum",
            "r",
            args=(Expr.of("x"),),
            order_by=(t,),
            frame=Frame(FrameUnit.ROWS, Bound.preceding(-2), Bound.preceding(1)),
        )
    # a negative INTERVAL flips side, as in Spark
    assert Bound.preceding(Interval(days=-1)) == Bound.following(Interval(days=1))
    with pytest.raises(WindowSpecError, match="unknown window function"):
        WindowCall("nope", "r")
    with pytest.raises(WindowSpecError, match="does not take a window frame"):
        WindowCall(
            "rank",
            "r",
            order_by=(t,),
            frame=Frame(FrameUnit.ROWS, Bound.current_row(), Bound.current_row()),
            frame_given=True,
        )
    with pytest.raises(WindowSpecError, match="ntile"):
        WindowCall("ntile", "r", order_by=(t,), params=(0,))
    # a valid call with EXCLUDE builds
    WindowCall(
        "sum",
        "r",
        args=(Expr.of("x"),),
        order_by=(t,),
        frame=Frame(FrameUnit.ROWS, Bound.preceding(1), Bound.following(1), Exclude.TIES),
    )


def test_error_messages_name_the_call():
    msg = spec_error("nth_value(x, 0) OVER (ORDER BY t) AS my_output")
    assert "my_output" in msg


# --- error-reporting corner cases (fixed bugs) -------------------------------------------------


def test_groups_without_order_by_in_sql():
    msg = spec_error("sum(x) OVER (GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) AS r")
    assert has(msg, "GROUPS", "ORDER BY") and not has(msg, "Expecting")


def test_day_to_second_interval():
    text = (
        "sum(x) OVER (ORDER BY ts "
        "RANGE BETWEEN INTERVAL '1 02:03:04' DAY TO SECOND PRECEDING AND CURRENT ROW) AS r"
    )
    try:
        call = parse_window(text).calls[0]
    except WindowSpecError as e:
        assert re.search("INTERVAL", str(e))
        return
    assert call.frame.start.offset == Interval(days=1, micros=(2 * 3600 + 3 * 60 + 4) * 1_000_000)


@pytest.mark.parametrize(
    "text,words",
    [
        ("sum() OVER () AS r", ("sum() is missing an argument", "column 5")),
        ("first_value() OVER (ORDER BY t) AS r", ("first_value() is missing an argument",)),
        ("sum(t, 1) OVER () AS r", ("sum() takes at most 1 argument, got 2",)),
        ("count(abs(x, 1)) OVER () AS r", ("abs() takes at most 1 argument, got 2",)),
        ("sum(x OVER (ORDER BY t) AS r", ("syntax error", "expected ')'", "'OVER'")),
        ("sum(x) OVR (ORDER BY t) AS r", ("syntax error", "at or near '('")),
        ("sum(x) OVER (PARTITION BY k, % 2) AS r", ("an operand is missing",)),
    ],
)
def test_syntax_errors_are_worded_in_sql(text, words):
    """What the SQL reader could not read, at or near which token: not its terminal underlining
    (ANSI escapes) nor the names of its classes (``<class 'sqlglot.expressions...Sum'>``)."""
    msg = spec_error(text)
    assert has(msg, *words), msg
    assert "\x1b" not in msg and "<class" not in msg and "sqlglot" not in msg, msg


@pytest.mark.parametrize(
    "n", ["CAST('NaN' AS DOUBLE)", "CAST('Infinity' AS DOUBLE)", "-CAST('Infinity' AS DOUBLE)"]
)
def test_nth_value_offset_that_is_not_a_number_or_infinite(n):
    """It raised Python's ValueError / OverflowError (converting NaN or infinity to an integer)."""
    msg = spec_error(f"nth_value(x, {n}) OVER (ORDER BY t) AS r")
    assert has(msg, "nth_value", "positive INT")


def test_a_double_literal_past_double_s_range_is_refused_as_spark_s_parser_refuses_it():
    """``-1e400`` was read as minus infinity (Spark: INVALID_NUMERIC_LITERAL_RANGE)."""
    msg = spec_error("nth_value(x, -1e400) OVER (ORDER BY t) AS r")
    assert has(msg, "1e400", "DOUBLE"), msg
