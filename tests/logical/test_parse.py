"""Parsing SQL text into window calls (logical/parse.py) and printing them back (logical/call.py).

* every function of docs/design/design.md, Semantics, and every frame form parses, to the call we expect;
* round trips: ``str(call)`` parses back to an equal call, for hand-written texts and for random
  calls built from the logical objects (hypothesis).
"""

from __future__ import annotations

from decimal import Decimal as D

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from overwindow import (
    Bound,
    Exclude,
    Expr,
    Frame,
    FrameUnit,
    Interval,
    SortKey,
    WindowCall,
    WindowExpression,
    WindowSpecError,
    parse_window,
)
from overwindow.logical.functions import BUILTINS, Kind

SETTINGS = dict(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def one(text: str) -> WindowCall:
    w = parse_window(text)
    assert isinstance(w, WindowExpression) and w.expr is None and len(w.calls) == 1
    return w.calls[0]


def round_trips(call: WindowCall) -> bool:
    again = one(str(call))
    return again == call and str(again) == str(call)


# --- every function ----------------------------------------------------------------------------

W = "OVER (PARTITION BY k ORDER BY t)"

FUNCTIONS = [
    # text, catalog name, args, params
    (f"row_number() {W} AS r", "row_number", (), ()),
    (f"rank() {W} AS r", "rank", (), ()),
    (f"dense_rank() {W} AS r", "dense_rank", (), ()),
    (f"percent_rank() {W} AS r", "percent_rank", (), ()),
    (f"cume_dist() {W} AS r", "cume_dist", (), ()),
    (f"ntile(4) {W} AS r", "ntile", (), (4,)),
    (f"lag(x) {W} AS r", "lag", ("x",), (1,)),
    (f"lag(x, 3) {W} AS r", "lag", ("x",), (3,)),
    (f"lag(x, -1) {W} AS r", "lag", ("x",), (-1,)),
    (f"lead(x, 2, 0) {W} AS r", "lead", ("x",), (2,)),
    (f"first_value(x) {W} AS r", "first_value", ("x",), ()),
    (f"last_value(x) {W} AS r", "last_value", ("x",), ()),
    (f"nth_value(x, 2) {W} AS r", "nth_value", ("x",), (2,)),
    (f"count(x) {W} AS r", "count", ("x",), ()),
    (f"count(*) {W} AS r", "count_star", (), ()),
    (f"count(DISTINCT x) {W} AS r", "count_distinct", ("x",), ()),
    (f"sum(x) {W} AS r", "sum", ("x",), ()),
    (f"avg(x) {W} AS r", "avg", ("x",), ()),
    (f"mean(x) {W} AS r", "avg", ("x",), ()),
    (f"min(x) {W} AS r", "min", ("x",), ()),
    (f"max(x) {W} AS r", "max", ("x",), ()),
    (f"stddev(x) {W} AS r", "stddev_samp", ("x",), ()),
    (f"std(x) {W} AS r", "stddev_samp", ("x",), ()),
    (f"stddev_samp(x) {W} AS r", "stddev_samp", ("x",), ()),
    (f"stddev_pop(x) {W} AS r", "stddev_pop", ("x",), ()),
    (f"variance(x) {W} AS r", "var_samp", ("x",), ()),
    (f"var_samp(x) {W} AS r", "var_samp", ("x",), ()),
    (f"var_pop(x) {W} AS r", "var_pop", ("x",), ()),
    (f"bool_and(b) {W} AS r", "bool_and", ("b",), ()),
    (f"bool_or(b) {W} AS r", "bool_or", ("b",), ()),
    (f"every(b) {W} AS r", "bool_and", ("b",), ()),
    (f"some(b) {W} AS r", "bool_or", ("b",), ()),
    (f"median(x) {W} AS r", "median", ("x",), ()),
    (
        f"percentile_cont(0.5) WITHIN GROUP (ORDER BY x) {W} AS r",
        "percentile_cont",
        ("x",),
        (D("0.5"), False),
    ),
    (
        f"percentile_disc(0.25) WITHIN GROUP (ORDER BY x) {W} AS r",
        "percentile_disc",
        ("x",),
        (D("0.25"), False),
    ),
    (
        f"percentile_cont(0.25) WITHIN GROUP (ORDER BY x DESC) {W} AS r",
        "percentile_cont",
        ("x",),
        (D("0.25"), True),
    ),
    (
        f"percentile_disc(0.25) WITHIN GROUP (ORDER BY x DESC) {W} AS r",
        "percentile_disc",
        ("x",),
        (D("0.25"), True),
    ),
    (f"quantile_cont(x, 0.5) {W} AS r", "percentile_cont", ("x",), (D("0.5"), False)),
    (f"quantile_disc(x, 0.1) {W} AS r", "percentile_disc", ("x",), (D("0.1"), False)),
    (
        f"quantile_cont(x, [0.25, 0.5, 0.75]) {W} AS r",
        "percentile_cont",
        ("x",),
        ((D("0.25"), D("0.5"), D("0.75")), False),
    ),
    (f"percentile(x, 0.5) {W} AS r", "percentile_cont", ("x",), (D("0.5"), False)),
    (f"percentile(x, array(0.1, 0.9)) {W} AS r", "percentile_cont", ("x",), ((D("0.1"), D("0.9")), False)),
    (f"mode(x) {W} AS r", "mode", ("x",), (False,)),
    (f"mode(x, true) {W} AS r", "mode", ("x",), (False,)),
    (f"mode() WITHIN GROUP (ORDER BY x DESC) {W} AS r", "mode", ("x",), (True,)),
    (f"first(x) {W} AS r", "first_value", ("x",), ()),
    (f"any_value(x) {W} AS r", "first_value", ("x",), ()),
]


@pytest.mark.parametrize("text,name,args,params", FUNCTIONS, ids=[f[0].split(" OVER")[0] for f in FUNCTIONS])
def test_every_function_parses(text, name, args, params):
    call = one(text)
    assert call.function == name
    assert tuple(str(a) for a in call.args) == args
    assert call.params == params
    assert call.alias == "r"
    assert call.partition_by == (Expr.of("k"),)
    assert call.order_by == (SortKey(Expr.of("t"), False, True),)
    assert round_trips(call)


def test_function_names_are_case_insensitive():
    assert one("SUM(x) over (ORDER BY t) as r") == one("sum(x) OVER (ORDER BY t) AS r")
    assert one("Row_Number() OVER (ORDER BY t) AS r").function == "row_number"


def test_lag_default_and_ignore_nulls():
    call = one("lead(x, 2, y * 2) IGNORE NULLS OVER (ORDER BY t) AS r")
    assert (call.params, str(call.default), call.ignore_nulls) == ((2,), "y * 2", True)
    assert one("lead(x IGNORE NULLS, 2, y * 2) OVER (ORDER BY t) AS r") == call
    assert one("lag(x) RESPECT NULLS OVER (ORDER BY t) AS r").ignore_nulls is False
    for f in ("first_value(x)", "last_value(x)", "nth_value(x, 3)"):
        assert one(f"{f} IGNORE NULLS OVER (ORDER BY t) AS r").ignore_nulls
    assert round_trips(call)


def test_filter_and_count_if():
    call = one("sum(x) FILTER (WHERE x > 0 AND b) OVER (ORDER BY t) AS r")
    assert str(call.filter) == "x > 0 AND b"
    c = one("count_if(x > 0) OVER () AS r")
    assert (c.function, str(c.filter)) == ("count_star", "x > 0")
    c = one("count_if(x > 0) FILTER (WHERE b) OVER () AS r")
    assert (c.function, str(c.filter)) == ("count_star", "b AND x > 0")
    assert round_trips(call) and round_trips(c)


def test_expressions_over_window_calls():
    w = parse_window("price - lag(price) OVER (PARTITION BY s ORDER BY t) AS price_diff")
    assert w.alias == "price_diff" and len(w.calls) == 1 and w.expr is not None
    assert w.calls[0].function == "lag" and w.calls[0].alias != "price_diff"
    assert w.calls[0].alias in str(w.expr) and "price" in w.expr.columns()
    w = parse_window("sum(x) OVER (ORDER BY t) / count(*) OVER (ORDER BY t) AS mean")
    assert [c.function for c in w.calls] == ["sum", "count_star"]
    assert len({c.alias for c in w.calls}) == 2


def test_arguments_are_expressions():
    call = one("sum(x * 2 + 1) OVER (PARTITION BY a, b % 4 ORDER BY CAST(t AS DATE) DESC) AS r")
    assert str(call.args[0]) == "x * 2 + 1"
    assert [str(p) for p in call.partition_by] == ["a", "b % 4"]
    assert call.columns() == ("x", "a", "b", "t")
    call = one("sum(CASE WHEN x > 0 THEN x ELSE 0 END) OVER () AS r")
    assert call.columns() == ("x",)
    assert round_trips(call)


def test_quoted_identifiers():
    call = one("sum(`my col`) OVER (PARTITION BY `p q` ORDER BY `select`) AS r")
    assert call.columns() == ("my col", "p q", "select")
    assert round_trips(call)


# --- every frame form --------------------------------------------------------------------------

P, F, C = Bound.preceding, Bound.following, Bound.current_row()
UP, UF = Bound.unbounded_preceding(), Bound.unbounded_following()


FRAMES = [
    ("ORDER BY t", Frame(FrameUnit.RANGE, UP, C)),
    ("", Frame(FrameUnit.ROWS, UP, UF)),
    ("PARTITION BY k", Frame(FrameUnit.ROWS, UP, UF)),
    ("ORDER BY t ROWS 3 PRECEDING", Frame(FrameUnit.ROWS, P(3), C)),
    ("ORDER BY t ROWS UNBOUNDED PRECEDING", Frame(FrameUnit.ROWS, UP, C)),
    ("ORDER BY t ROWS CURRENT ROW", Frame(FrameUnit.ROWS, C, C)),
    ("ORDER BY t RANGE 2 PRECEDING", Frame(FrameUnit.RANGE, P(2), C)),
    ("ORDER BY t ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING", Frame(FrameUnit.ROWS, P(10), P(1))),
    ("ORDER BY t ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING", Frame(FrameUnit.ROWS, C, F(1))),
    ("ORDER BY t ROWS BETWEEN 2 FOLLOWING AND UNBOUNDED FOLLOWING", Frame(FrameUnit.ROWS, F(2), UF)),
    ("ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING", Frame(FrameUnit.ROWS, UP, UF)),
    ("ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", Frame(FrameUnit.ROWS, UP, C)),
    ("ORDER BY t RANGE BETWEEN 1.5 PRECEDING AND 2 FOLLOWING", Frame(FrameUnit.RANGE, P(1.5), F(2))),
    ("ORDER BY t RANGE BETWEEN CURRENT ROW AND CURRENT ROW", Frame(FrameUnit.RANGE, C, C)),
    ("ORDER BY t GROUPS BETWEEN 1 PRECEDING AND 2 FOLLOWING", Frame(FrameUnit.GROUPS, P(1), F(2))),
    ("ORDER BY t GROUPS 1 PRECEDING", Frame(FrameUnit.GROUPS, P(1), C)),
    (
        "ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE NO OTHERS",
        Frame(FrameUnit.ROWS, P(1), F(1)),
    ),
    (
        "ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW",
        Frame(FrameUnit.ROWS, P(1), F(1), Exclude.CURRENT_ROW),
    ),
    (
        "ORDER BY t RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE GROUP",
        Frame(FrameUnit.RANGE, UP, UF, Exclude.GROUP),
    ),
    (
        "ORDER BY t GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE TIES",
        Frame(FrameUnit.GROUPS, P(1), F(1), Exclude.TIES),
    ),
    (
        "ORDER BY d RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING",
        Frame(FrameUnit.RANGE, P(Interval(days=3)), F(Interval(days=3))),
    ),
    (
        "ORDER BY d RANGE BETWEEN INTERVAL '3' DAY PRECEDING AND CURRENT ROW",
        Frame(FrameUnit.RANGE, P(Interval(days=3)), C),
    ),
    (
        "ORDER BY d RANGE BETWEEN INTERVAL '1 hour' PRECEDING AND CURRENT ROW",
        Frame(FrameUnit.RANGE, P(Interval(micros=3_600_000_000)), C),
    ),
    (
        "ORDER BY d RANGE BETWEEN INTERVAL 2 MONTHS PRECEDING AND INTERVAL 12 MONTHS FOLLOWING",
        Frame(FrameUnit.RANGE, P(Interval(months=2)), F(Interval(months=12))),
    ),
    (
        "ORDER BY d RANGE BETWEEN INTERVAL '1-1' YEAR TO MONTH PRECEDING AND CURRENT ROW",
        Frame(FrameUnit.RANGE, P(Interval(months=13)), C),
    ),
    (
        "ORDER BY d RANGE BETWEEN INTERVAL 1 WEEK PRECEDING AND INTERVAL 2 DAYS FOLLOWING",
        Frame(FrameUnit.RANGE, P(Interval(days=7)), F(Interval(days=2))),
    ),
    (
        "ORDER BY d RANGE BETWEEN INTERVAL 1 DAY 2 HOURS PRECEDING AND INTERVAL '0 03' DAY TO HOUR FOLLOWING",
        Frame(FrameUnit.RANGE, P(Interval(days=1, micros=7_200_000_000)), F(Interval(micros=10_800_000_000))),
    ),
    (
        "ORDER BY d RANGE BETWEEN INTERVAL 10 SECONDS PRECEDING AND INTERVAL 100 MILLISECONDS FOLLOWING",
        Frame(FrameUnit.RANGE, P(Interval(micros=10_000_000)), F(Interval(micros=100_000))),
    ),
    (
        "ORDER BY d RANGE BETWEEN INTERVAL '1 12:00:00' DAY TO SECOND PRECEDING "
        "AND INTERVAL '0 00:00:00.000005' DAY TO SECOND FOLLOWING",
        Frame(FrameUnit.RANGE, P(Interval(days=1, micros=43_200_000_000)), F(Interval(micros=5))),
    ),
]


@pytest.mark.parametrize("over,frame", FRAMES, ids=[f[0] or "empty" for f in FRAMES])
def test_every_frame_form_parses(over, frame):
    call = one(f"sum(x) OVER ({over}) AS r")
    assert call.frame == frame
    assert round_trips(call)


def test_sort_keys():
    call = one("sum(x) OVER (ORDER BY a, b DESC, c ASC NULLS LAST, d DESC NULLS FIRST) AS r")
    assert call.order_by == (
        SortKey(Expr.of("a"), False, True),  # Spark's default: ASC NULLS FIRST
        SortKey(Expr.of("b"), True, False),  # DESC NULLS LAST
        SortKey(Expr.of("c"), False, False),
        SortKey(Expr.of("d"), True, True),
    )
    assert round_trips(call)


def test_default_frame_prints_and_reparses():
    call = one("sum(x) OVER (ORDER BY t) AS r")
    assert call.frame == Frame.default(True) and not call.frame_given
    again = one(str(call))
    assert again == call and again.frame_given  # frame_given is not part of equality


def test_calls_are_hashable_and_frozen():
    a = one("sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS r")
    b = one("sum(x) over (order by t rows between 2 preceding and current row) as r")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    with pytest.raises(AttributeError):
        a.alias = "s"


@pytest.mark.parametrize(
    "text",
    [f[0] for f in FUNCTIONS]
    + [
        "sum(x) FILTER (WHERE x > 0) OVER (ORDER BY t DESC NULLS FIRST "
        "ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING EXCLUDE TIES) AS r",
        "percentile_cont(0.1) WITHIN GROUP (ORDER BY x) FILTER (WHERE x > 0) OVER () AS r",
        "sum(x) OVER (ORDER BY t RANGE BETWEEN 1e300 PRECEDING AND 1e-7 FOLLOWING) AS r",
        "count(*) OVER (PARTITION BY k, j) AS r",
    ],
)
def test_printing_is_a_fixed_point(text):
    call = one(text)
    printed = str(call)
    assert str(one(printed)) == printed
    assert one(printed) == call


# --- random calls ------------------------------------------------------------------------------

COLUMNS = ["x", "y", "t", "`my col`", "x + 1", "CAST(y AS DOUBLE)", "ABS(x)"]


def exprs():
    return st.sampled_from(COLUMNS).map(Expr.of)


DAY_MICROS = 86_400_000_000


def intervals():
    # one unit per interval (compound ones: test_compound_interval_round_trip); a time of a day or
    # more reads back as days and the rest (INTERVAL '1 00:00:00' DAY TO SECOND), so it is drawn so
    return st.one_of(
        st.integers(0, 40).map(lambda d: Interval(days=d)),
        st.integers(1, 24).map(lambda m: Interval(months=m)),
        st.integers(0, 10**12).map(lambda u: Interval(days=u // DAY_MICROS, micros=u % DAY_MICROS)),
    )


@st.composite
def frames(draw, n_order: int):
    unit = draw(st.sampled_from([FrameUnit.ROWS, FrameUnit.RANGE] + ([FrameUnit.GROUPS] if n_order else [])))
    offsets = unit is not FrameUnit.RANGE or n_order == 1

    def offset():
        if unit is FrameUnit.RANGE:
            return draw(
                st.one_of(st.integers(0, 100), st.sampled_from([0.5, 1.25, 1e-3, 1e300]), intervals())
            )
        return draw(st.integers(-(2**31), 2**31 - 1))

    def bound(is_start):
        kinds = ["current", "unbounded"] + (["preceding", "following"] if offsets else [])
        k = draw(st.sampled_from(kinds))
        if k == "current":
            return Bound.current_row()
        if k == "unbounded":
            return Bound.unbounded_preceding() if is_start else Bound.unbounded_following()
        return Bound.preceding(offset()) if k == "preceding" else Bound.following(offset())

    return Frame(unit, bound(True), bound(False), draw(st.sampled_from(list(Exclude))))


@st.composite
def calls(draw):
    name = draw(st.sampled_from(sorted(BUILTINS)))
    info = BUILTINS[name]
    args = tuple(draw(exprs()) for _ in range(info.n_args))
    params, default = (), None
    if name == "ntile":
        params = (draw(st.integers(1, 100)),)
    elif name in ("lag", "lead"):
        params = (draw(st.integers(-5, 5)),)
        default = draw(st.one_of(st.none(), exprs(), st.sampled_from(["0", "-1.5", "NULL"]).map(Expr.of)))
    elif name == "nth_value":
        params = (draw(st.integers(1, 9)),)
    elif name in ("percentile_cont", "percentile_disc"):
        fraction = st.sampled_from([0, 0.1, 0.25, 0.5, 0.75, 1, 1.0])
        params = (
            draw(st.one_of(fraction, st.lists(fraction, min_size=1, max_size=3).map(tuple))),
            draw(st.booleans()),
        )
    elif name == "mode":
        params = (draw(st.booleans()),)
    needs_order = info.kind in (Kind.RANKING, Kind.OFFSET)
    n_order = draw(st.integers(1 if needs_order else 0, 2))
    order = tuple(SortKey(draw(exprs()), draw(st.booleans()), draw(st.booleans())) for _ in range(n_order))
    partition = tuple(draw(exprs()) for _ in range(draw(st.integers(0, 2))))
    framed = info.kind in (Kind.VALUE, Kind.AGGREGATE)
    frame = draw(st.one_of(st.none(), frames(n_order))) if framed else None
    filt = (
        draw(st.one_of(st.none(), st.sampled_from(["x > 0", "b", "x IS NULL OR y <= 2"]).map(Expr.of)))
        if info.kind is Kind.AGGREGATE
        else None
    )
    ignore = draw(st.booleans()) if info.ignore_nulls else False
    alias = draw(st.sampled_from(["r", "out_1", "MixedCase"]))
    try:
        return WindowCall(
            function=name,
            alias=alias,
            args=args,
            params=params,
            default=default,
            filter=filt,
            ignore_nulls=ignore,
            partition_by=partition,
            order_by=order,
            frame=frame,
        )
    except WindowSpecError:
        assume(False)


@settings(max_examples=500, **SETTINGS)
@given(calls())
def test_random_calls_round_trip(call):
    printed = str(call)
    again = one(printed)
    assert again == call, printed
    assert str(again) == printed


# --- printing and parsing corner cases (fixed bugs) ------------------------------------------


@pytest.mark.parametrize("alias", ["`weird name`", "`select`"])
def test_alias_needing_quotes_round_trips(alias):
    call = one(f"sum(x) OVER () AS {alias}")
    assert round_trips(call)


def test_interval_mixing_months_and_days_is_refused():
    """Spark's frames take year-month or day-time intervals; INTERVAL '1 month 3 days' is neither."""
    with pytest.raises(WindowSpecError, match="mixes months with days"):
        WindowCall(
            "sum",
            "r",
            args=(Expr.of("x"),),
            order_by=(SortKey(Expr.of("t")),),
            frame=Frame(FrameUnit.RANGE, Bound.preceding(Interval(months=1, days=3)), Bound.current_row()),
        )
    with pytest.raises(WindowSpecError, match="mixes months with days"):
        one("sum(x) OVER (ORDER BY t RANGE INTERVAL '1 month 3 days' PRECEDING) AS r")


@pytest.mark.parametrize("interval", [Interval(days=1, micros=5), Interval(months=14)])
def test_compound_interval_round_trip(interval):
    call = WindowCall(
        "sum",
        "r",
        args=(Expr.of("x"),),
        order_by=(SortKey(Expr.of("t")),),
        frame=Frame(FrameUnit.RANGE, Bound.preceding(interval), Bound.current_row()),
    )
    assert round_trips(call)


def test_lag_without_offset_round_trips():
    call = WindowCall("lag", "r", args=(Expr.of("x"),), order_by=(SortKey(Expr.of("t")),))
    assert round_trips(call)


def test_any_is_bool_or():
    assert one("any(b) OVER () AS r").function == "bool_or"


# --- string literals, read as Spark reads them (sqlglot reads them as CONCAT calls) -------------


@pytest.mark.parametrize(
    "literal, value",
    [
        ("'it''s'", "it's"),  # a quote doubled inside a literal is one quote
        ('"it""s"', 'it"s'),
        ("''''", "'"),
        ("'\\'' ''", "'"),
        ("'INTERVAL ''3'' DAY'", "INTERVAL '3' DAY"),
        ("'a' 'b'", "ab"),  # literals side by side are one
        ("'a'\"b\"", "ab"),
        ("'a' /* c */ 'b' \"c\"", "abc"),
        ("'it' 's'", "its"),
    ],
)
def test_string_literals_are_read_as_spark_reads_them(literal, value):
    call = one(f"lag(s, 1, {literal}) OVER (ORDER BY t) AS r")
    assert call.default.literal_value() == value
    assert round_trips(call)


def test_literals_side_by_side_fold_wherever_a_literal_stands():
    w = parse_window("lag(s = 'it''s') OVER (ORDER BY t) + CAST('1' '2' AS INT) AS r")
    assert str(w.calls[0].args[0]) == "s = 'it\\'s'"
    assert "CAST('12' AS INT)" in str(w.expr)
    frame = one("count(*) OVER (ORDER BY t RANGE INTERVAL '1' '0' DAY PRECEDING) AS r").frame
    assert frame == one("count(*) OVER (ORDER BY t RANGE INTERVAL '10' DAY PRECEDING) AS r").frame
    assert Expr.of("rn <= 2 OR s IN ('a' 'b', 'it''s')").sql == "rn <= 2 OR s IN ('ab', 'it\\'s')"


def test_concat_and_pipes_are_not_folded():
    """Only literals side by side are one literal; concat(...) and || are read as written."""
    assert Expr.of("concat('a', 'b')").sql == "CONCAT('a', 'b')"
    assert Expr.of("'a' || 'b'").sql == "'a' || 'b'"


@pytest.mark.parametrize(
    "text",
    [
        # after the name of a type Spark takes one literal (PARSE_SYNTAX_ERROR), so does INTERVAL
        # without a unit after its value
        "lag(d, 1, DATE '2024-01-' '01') OVER (ORDER BY t) AS r",
        "lag(ts, 1, TIMESTAMP '2024-01-01' ' 10:00:00') OVER (ORDER BY t) AS r",
        "count(*) OVER (ORDER BY t RANGE INTERVAL '1 ' 'day' PRECEDING) AS r",
        "lag(s, 1, s 'a' 'b') OVER (ORDER BY t) AS r",
    ],
)
def test_literals_side_by_side_after_a_type_name_are_refused(text):
    with pytest.raises(WindowSpecError):
        parse_window(text)
