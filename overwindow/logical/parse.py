"""SQL text to window calls, with sqlglot's Spark dialect: the text is first checked token by token
by Spark's grammar (``syntax``), then read into sqlglot's tree, whose calls, frames and bounds are
read here (INTERVAL literals by ``intervals``).

>>> w = parse_window(
...     "avg(x) OVER (PARTITION BY k ORDER BY d RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND CURRENT ROW) AS a"
... )
>>> w.calls[0].frame.start.offset
Interval(months=0, days=3, micros=0, fields='DAY')
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re

import sqlglot
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.call import SortKey, WindowCall, WindowExpression
from overwindow.logical.expr import (
    DIALECT,
    Expr,
    literal_value,
    read_sql,
    spark_tokens,
    sql_literal,
    syntax_error,
)
from overwindow.logical.frame import Bound, BoundKind, Exclude, Frame, FrameUnit, Interval
from overwindow.logical.functions import lookup, lookup_refused
from overwindow.logical.intervals import interval_literal
from overwindow.logical.syntax import check_over_clauses, flagged_value_functions, groups_without_order_by

_REGRESSIONS = ("Avgx", "Avgy", "Count", "Intercept", "R2", "Slope", "Sxx", "Sxy", "Syy")
# sqlglot node class -> catalog name, for the functions sqlglot knows by class.
_NODE_NAMES = {
    exp.RowNumber: "row_number",
    exp.Rank: "rank",
    exp.DenseRank: "dense_rank",
    exp.PercentRank: "percent_rank",
    exp.CumeDist: "cume_dist",
    exp.Ntile: "ntile",
    exp.Lag: "lag",
    exp.Lead: "lead",
    exp.FirstValue: "first_value",
    exp.LastValue: "last_value",
    exp.NthValue: "nth_value",
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
    exp.Stddev: "stddev_samp",
    exp.StddevSamp: "stddev_samp",
    exp.StddevPop: "stddev_pop",
    exp.Variance: "var_samp",
    exp.VariancePop: "var_pop",
    exp.LogicalAnd: "bool_and",
    exp.LogicalOr: "bool_or",
    exp.Median: "median",
    exp.Mode: "mode",
    exp.PercentileCont: "percentile_cont",
    exp.PercentileDisc: "percentile_disc",
    exp.Quantile: "percentile_cont",
    exp.CountIf: "count_if",
    exp.Any: "bool_or",
    exp.First: "first_value",
    exp.Last: "last_value",
    exp.AnyValue: "first_value",
    exp.ArrayAgg: "collect_list",
    exp.ArrayUniqueAgg: "collect_set",
    exp.GroupConcat: "listagg",
    exp.ArgMax: "max_by",
    exp.ArgMin: "min_by",
    exp.Corr: "corr",
    exp.CovarPop: "covar_pop",
    exp.CovarSamp: "covar_samp",
    exp.Skewness: "skewness",
    exp.Kurtosis: "kurtosis",
    exp.BitwiseAndAgg: "bit_and",
    exp.BitwiseOrAgg: "bit_or",
    exp.BitwiseXorAgg: "bit_xor",
    exp.ApproxQuantile: "percentile_approx",
    exp.ApproxDistinct: "approx_count_distinct",
    **{getattr(exp, f"Regr{part}"): f"regr_{part.lower()}" for part in _REGRESSIONS},
}


def parse_window(text: str) -> WindowExpression:
    """Parse one select item ``<expr with window calls> AS alias`` into a WindowExpression."""
    try:
        tokens = spark_tokens(text)
        check_over_clauses(tokens, text)
        node = read_sql(flagged_value_functions(text, tokens))
    except sqlglot.errors.ParseError as e:
        if groups_without_order_by(text):
            # sqlglot cannot read a GROUPS frame without ORDER BY at all; say what SQL says
            raise WindowSpecError(f"GROUPS frames require ORDER BY, in {text!r}") from None
        raise WindowSpecError(f"cannot parse window call {text!r}: {syntax_error(e)}") from None
    if not isinstance(node, exp.Alias):
        raise WindowSpecError(f"window call needs an output name: add AS <name> to {text!r}")
    alias = node.alias
    body = node.this
    windows = list(body.find_all(exp.Window))
    if not windows:
        raise WindowSpecError(f"no window function (... OVER (...)) in {text!r}")
    for w in windows:
        if w.find_ancestor(exp.Window) is not None:
            raise WindowSpecError(f"window functions cannot be nested, in {text!r}")
    if body is windows[0]:
        return WindowExpression(alias, (_call(body, alias),), None, text)
    calls = []
    body = body.copy()
    for i, w in enumerate(list(body.find_all(exp.Window))):
        name = f"__{alias}_w{i}"
        calls.append(_call(w, name))
        w.replace(exp.column(name, quoted=True))
    return WindowExpression(alias, tuple(calls), Expr.of(body), text)


def _call(w: exp.Window, alias: str) -> WindowCall:
    if w.args.get("alias") is not None and not w.args.get("partition_by") and not w.args.get("order"):
        raise WindowSpecError(
            f"named windows (OVER {w.args['alias']}) are not supported; write the window inline"
        )
    f = w.this
    filt = ignore_nulls = None
    respect = False
    while True:
        if isinstance(f, exp.Filter):
            filt = Expr.of(f.expression.this)
            f = f.this
        elif isinstance(f, (exp.IgnoreNulls, exp.RespectNulls)):
            ignore_nulls = isinstance(f, exp.IgnoreNulls)
            respect = not ignore_nulls
            f = f.this
        else:
            break
    f, ignored = _ignored_arguments(f)
    function, args, params, default = _function(f, alias)
    if function == "nth_value" and len(params) == 2:  # nth_value(x, n, ignoreNulls)
        params, ignore_nulls = params[:1], bool(params[1]) or bool(ignore_nulls)
    if function == "count_if":
        cond = args[0]
        function, args = "count_star", ()
        filt = cond if filt is None else Expr.of(exp.and_(filt.node.copy(), cond.node.copy()))
    order = tuple(_sort_key(o) for o in (w.args.get("order").expressions if w.args.get("order") else ()))
    spec = w.args.get("spec")
    frame = _frame(spec, bool(order), f"in window call AS {alias}") if spec is not None else None
    return WindowCall(
        function=function,
        alias=alias,
        args=args,
        params=params,
        default=default,
        filter=filt,
        ignore_nulls=bool(ignore_nulls),
        # RESPECT NULLS is every function's default but collect_list's and collect_set's
        respect_nulls=respect and lookup(function).respect_nulls,
        partition_by=tuple(Expr.of(e) for e in w.args.get("partition_by") or ()),
        order_by=order,
        frame=frame,
        frame_given=spec is not None,
        ignored=ignored,
    )


# Spark's rank, dense_rank and percent_rank take arguments and replace them by the ORDER BY keys
# (its analyser's ResolveWindowOrder); cume_dist, row_number and ntile do not (WRONG_NUM_ARGS)
_ORDER_FUNCTIONS = (exp.Rank, exp.DenseRank, exp.PercentRank)


def _ignored_arguments(f: exp.Expression) -> tuple[exp.Expression, tuple[Expr, ...]]:
    """(the call without them, the arguments) of ``rank(x)``, ``dense_rank(x)`` or
    ``percent_rank(x)``, whose arguments Spark ignores (the ranks follow the ORDER BY); they are
    kept for the columns they name, which must exist, as in Spark. Other calls: (f, ()).

    >>> n = sqlglot.parse_one("rank(x, s) OVER (ORDER BY t)", read=DIALECT).this
    >>> bare, ignored = _ignored_arguments(n)
    >>> bare.sql(dialect=DIALECT), [str(e) for e in ignored]
    ('RANK()', ['x', 's'])
    """
    if not isinstance(f, _ORDER_FUNCTIONS) or not f.expressions:
        return f, ()
    items = list(f.expressions)
    if any(isinstance(i, exp.Distinct) for i in items):
        return f, ()  # refused with DISTINCT's own message (_function)
    bare = f.copy()
    bare.set("expressions", [])
    return bare, tuple(Expr.of(i) for i in items)


def _sort_key(o: exp.Expression) -> SortKey:
    if isinstance(o, exp.Ordered):
        desc = bool(o.args.get("desc"))
        nf = o.args.get("nulls_first")
        return SortKey(Expr.of(o.this), desc, bool(nf) if nf is not None else None)
    return SortKey(Expr.of(o))


def _function(f: exp.Expression, alias: str):
    """(catalog name, value args, constant params, default) for the function node."""
    ctx = f"in window call AS {alias}"
    if isinstance(f, exp.WithinGroup):
        return _within_group(f, ctx)
    if isinstance(f, exp.Anonymous):
        name = f.name.lower()
        items = list(f.expressions)
    elif type(f) in _NODE_NAMES:
        name = _NODE_NAMES[type(f)]
        items = [v for k, v in f.args.items() if v is not None and k not in ("big_int",)]
        flat = []
        for v in items:
            flat.extend(v if isinstance(v, list) else [v])
        items = [v for v in flat if isinstance(v, exp.Expression)]  # not flags (ArrayAgg's nulls_excluded)
        if isinstance(f, exp.GroupConcat) and isinstance(f.this, exp.Order):
            raise WindowSpecError(
                f"listagg(...) WITHIN GROUP (ORDER BY ...) is not supported over a window; Spark allows it "
                f"only without ORDER BY and frame in the window {ctx}"
            )
    else:
        lookup_refused(f.sql_name() if isinstance(f, exp.Func) else f.key)  # grouping(x), ...: by name
        raise WindowSpecError(f"{f.sql(dialect=DIALECT)} is not a window function {ctx}")
    if name == "count":
        if items and isinstance(items[0], exp.Star):
            return "count_star", (), (), None
        if items and isinstance(items[0], exp.Distinct):
            cols = items[0].expressions
            if len(cols) != 1:
                raise WindowSpecError(f"count(DISTINCT ...) takes one expression {ctx}")
            return "count_distinct", (Expr.of(cols[0]),), (), None
        if len(items) > 1:  # count(a, b, ...): the rows where every argument is non-NULL (Spark)
            return (
                "count_if",
                (
                    Expr.of(
                        exp.and_(*(exp.Not(this=exp.Is(this=i.copy(), expression=exp.Null())) for i in items))
                    ),
                ),
                (),
                None,
            )
    if any(isinstance(i, exp.Distinct) for i in items):
        raise WindowSpecError(f"DISTINCT is only supported in count(DISTINCT x) {ctx}")
    if name == "count_if":
        if len(items) != 1:
            raise WindowSpecError(f"count_if() takes one argument, got {len(items)} {ctx}")
        return "count_if", (Expr.of(items[0]),), (), None
    info = lookup(name)
    name = info.name
    if name in ("lag", "lead") and not items:
        items = [exp.Null()]  # Spark's lag() is lag(NULL): NULL of type VOID in every row
    if len(items) < info.least_args:
        raise WindowSpecError(f"{name}() takes {info.n_args} argument column(s), got {len(items)} {ctx}")
    args = tuple(Expr.of(i) for i in items[: info.n_args])
    rest = items[info.n_args :]
    if name == "mode":
        # mode(x [, deterministic]): ties go to the smallest value (Spark's deterministic choice)
        if len(rest) > 1 or (rest and not isinstance(literal_value(rest[0], f"mode {ctx}"), bool)):
            raise WindowSpecError(f"mode(x [, deterministic]) takes a BOOLEAN constant second argument {ctx}")
        return name, args, (False,), None
    if name == "nth_value" and len(rest) == 2 and isinstance(rest[1], exp.Boolean):
        return name, args, (_integral(literal_value(rest[0], f"nth_value offset {ctx}")), rest[1].this), None
    if name == "nth_value" and rest:
        return name, args, (_integral(literal_value(rest[0], f"nth_value offset {ctx}")),), None
    if name == "ntile" and not rest:
        return name, args, (1,), None  # Spark's ntile() is one bucket
    if len(rest) > len(info.params):
        raise WindowSpecError(f"{name}() takes at most {info.n_args + len(info.params)} arguments {ctx}")
    if name in ("lag", "lead") and rest:
        _require_int(rest[0], f"{name}() offset", ctx)
    if name == "ntile" and rest:
        _require_int(rest[0], "ntile(n)", ctx)
    if name in ("lag", "lead"):
        params = (literal_value(rest[0], f"{name} offset {ctx}"),) if rest else (1,)
        default = Expr.of(rest[1]) if len(rest) > 1 else None
        return name, args, params, default
    params = tuple(literal_value(r, f"{name} parameter {ctx}") for r in rest)
    if info.params and len(params) < len(info.params) - info.optional:
        raise WindowSpecError(f"{name}() needs its {', '.join(info.params)} argument {ctx}")
    if name in ("percentile_cont", "percentile_disc"):
        params += (False,)  # ascending
    return name, args, params, None


_INTEGERS = ["TINYINT", "SMALLINT", "INT", "BIGINT"]


def _integer_type(node: exp.Expression) -> str | None:
    """Spark's integer type of a constant integer expression (a literal INT when it fits, a CAST's
    target, the wider operand's of arithmetic), or None when it is not one."""
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    if isinstance(node, exp.Cast):
        name = node.to.this.name if hasattr(node.to.this, "name") else str(node.to.this).upper()
        return {"INTEGER": "INT", "LONG": "BIGINT"}.get(name, name) if name != "DECIMAL" else None
    if isinstance(node, exp.Literal) and not node.is_string and node.this.lstrip("-").isdigit():
        return "INT" if -(2**31) <= int(node.this) < 2**31 else "BIGINT"
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        types = [_integer_type(node.this), _integer_type(node.expression)]
        if all(t in _INTEGERS for t in types):
            return max(types, key=_INTEGERS.index)
    return None


def _require_int(node: exp.Expression, what: str, ctx: str) -> None:
    """Spark wants an INT for a ROWS frame's offsets, lag/lead's offset and ntile's n: a constant
    it types BIGINT, SMALLINT or TINYINT (``CAST(1 AS BIGINT)``, ``1L``) is refused, as Spark
    refuses it (DATATYPE_MISMATCH); a BIGINT literal past INT is refused later, for its size."""
    typ = _integer_type(node)
    if typ in ("BIGINT", "SMALLINT", "TINYINT") and isinstance(node.find(exp.Cast), exp.Cast):
        raise WindowSpecError(
            f"{what} {node.sql(dialect=DIALECT)} is a {typ}; Spark requires an INT there: write "
            f"an integer constant such as 1 {ctx}"
        )


def _integral(n):
    """An nth_value offset: Spark casts a DECIMAL or DOUBLE to INT, dropping the fraction
    (``nth_value(x, 1.5)`` is ``nth_value(x, 1)``), and a string of an integer to it (``'2'``, with
    spaces around it); NaN, the infinities and other strings stay as they are, for the check that
    refuses them."""
    if isinstance(n, str) and re.fullmatch(r"\s*[+-]?\d+\s*", n):
        return int(n)
    finite = (isinstance(n, float) and math.isfinite(n)) or (isinstance(n, decimal.Decimal) and n.is_finite())
    return int(n) if finite else n


def _within_group(f: exp.WithinGroup, ctx: str):
    """``percentile_cont(p) | percentile_disc(p) | mode() WITHIN GROUP (ORDER BY x [ASC | DESC])``.
    The direction is kept as the last parameter: a descending percentile counts from the largest
    value, a descending mode breaks ties by the largest value (Spark)."""
    inner, order = f.this, f.expression
    name = _NODE_NAMES.get(type(inner))
    if name not in ("percentile_cont", "percentile_disc", "mode"):
        raise WindowSpecError(
            f"WITHIN GROUP is only supported with percentile_cont, percentile_disc and mode {ctx}"
        )
    keys = order.expressions
    if len(keys) != 1:
        raise WindowSpecError(f"{name} WITHIN GROUP needs exactly one ORDER BY expression {ctx}")
    key, descending = keys[0], False
    if isinstance(key, exp.Ordered):
        key, descending = key.this, bool(key.args.get("desc"))
    if name == "mode":
        if inner.this is not None:
            raise WindowSpecError(f"mode() WITHIN GROUP (ORDER BY x) takes no argument of its own {ctx}")
        return name, (Expr.of(key),), (descending,), None
    p = literal_value(inner.this, f"{name} fraction {ctx}")
    return name, (Expr.of(key),), (p, descending), None


def _frame(spec: exp.WindowSpec, has_order: bool, ctx: str = "") -> Frame:
    unit = FrameUnit(str(spec.args.get("kind")).upper())
    if unit is FrameUnit.SESSION:
        return Frame.session(_session_gap(spec.args["start"], ctx))
    if unit is FrameUnit.ROWS:
        for key in ("start", "end"):
            bound = spec.args.get(key)
            if isinstance(bound, exp.Expression):
                which = "lower" if key == "start" else "upper"
                _require_int(bound, f"the {which} bound of a ROWS frame", ctx)
    start = _bound(spec.args.get("start"), spec.args.get("start_side"))
    end_node = spec.args.get("end")
    end = _bound(end_node, spec.args.get("end_side")) if end_node is not None else Bound.current_row()
    exclude = spec.args.get("exclude")
    ex = (
        Exclude(str(exclude.this if isinstance(exclude, exp.Expression) else exclude).upper())
        if exclude
        else Exclude.NO_OTHERS
    )
    return Frame(unit, start, end, ex)


def _session_gap(node: exp.Expression, ctx: str):
    """The gap of ``SESSION WITH GAP <gap>``: a positive number or a positive INTERVAL constant
    (whether it fits the ORDER BY column's type is checked once that type is known:
    ``physical/sessions.check_session_gap``). O(1)."""
    text = node.sql(dialect=DIALECT)
    if isinstance(node, (exp.Interval, exp.Add)) and node.find(exp.Interval):
        gap = interval_literal(node)
    else:
        gap = literal_value(node, f"SESSION WITH GAP {text}")
    if isinstance(gap, Interval) and gap.year_month:
        raise WindowSpecError(
            f"SESSION WITH GAP {text} is a year-month INTERVAL, which has no fixed length: give the gap "
            f"as a day-time INTERVAL (DAY, HOUR, MINUTE, SECOND) {ctx}"
        )
    if isinstance(gap, Interval):
        positive = gap.months > 0 or (gap.months == 0 and gap.days * 86_400_000_000 + gap.micros > 0)
    else:
        number = isinstance(gap, (int, float, decimal.Decimal)) and not isinstance(gap, bool)
        positive = number and gap > 0 and not (isinstance(gap, float) and math.isnan(gap))
    if not positive:
        raise WindowSpecError(
            f"SESSION WITH GAP needs a positive number or INTERVAL constant, got {text} {ctx}"
        )
    return gap


def _bound(value, side) -> Bound:
    side = (str(side) if side is not None else "").upper()
    if isinstance(value, str):
        v = value.upper()
        if v == "CURRENT ROW":
            return Bound.current_row()
        if v == "UNBOUNDED":
            return Bound.unbounded_preceding() if side == "PRECEDING" else Bound.unbounded_following()
        raise WindowSpecError(f"cannot read frame bound {value} {side}")
    if isinstance(value, (exp.Interval, exp.Add)) and value.find(exp.Interval):
        offset = interval_literal(value)
    else:
        offset = literal_value(value, f"frame bound {value.sql(dialect=DIALECT)} {side}")
        # Spark reads n PRECEDING as -n: a string there is negated as a DOUBLE; a FOLLOWING string
        # stays a string, cast straight to the ORDER BY column's type (physical/range_offsets.py)
        if isinstance(offset, str) and side == "PRECEDING":
            offset = string_offset(offset, f"{value.sql(dialect=DIALECT)} {side}")
        if isinstance(offset, dt.datetime):
            _check_timestamp_offset(value, offset, side)
    kind = BoundKind.PRECEDING if side == "PRECEDING" else BoundKind.FOLLOWING
    return Bound(kind, offset)  # a negative offset flips the side, as Spark reads it


_TIMESTAMP_LITERALS = (exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPLTZ)  # TIMESTAMP '...'


def _check_timestamp_offset(node: exp.Expression, offset: dt.datetime, side: str) -> None:
    """Spark takes a time as a frame bound only as a TIMESTAMP literal before FOLLOWING (cast to a
    numeric ORDER BY column's type: its seconds since 1970, physical/range_offsets.py). ``n PRECEDING`` is
    ``-n`` to Spark, and a TIMESTAMP has no minus (DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE); a
    ``CAST(... AS TIMESTAMP)`` is no literal (INVALID_WINDOW_FRAME_BOUND); a ``TIMESTAMP_NTZ``
    literal is no type a frame bound takes (SPECIFIED_WINDOW_FRAME_UNACCEPTED_TYPE)."""
    inner, text = node.unnest(), f"{node.sql(dialect=DIALECT)} {side}"
    to = inner.to.this if isinstance(inner, exp.Cast) else None
    if type(inner) is not exp.Cast or to not in _TIMESTAMP_LITERALS:
        raise WindowSpecError(f"the frame bound {text} must be a number, an INTERVAL or a TIMESTAMP literal")
    if side == "PRECEDING":
        raise WindowSpecError(
            f"the frame bound {sql_literal(offset)} PRECEDING is the negation of a TIMESTAMP, which "
            "Spark refuses: a TIMESTAMP offset is taken before FOLLOWING only"
        )


_DOUBLE_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?")
_DOUBLE_WORDS = {"nan": math.nan, "infinity": math.inf, "inf": math.inf}


def string_offset(text: str, where: str) -> float:
    """A string RANGE offset read as Spark reads ``'1' PRECEDING`` (and any string over a DOUBLE
    key): a DOUBLE (its string-to-DOUBLE cast: surrounding spaces dropped, ``'1.5'``, ``'1e0'``,
    ``'NaN'``, ``'Infinity'``), which is then cast to the ORDER BY column's type like any number
    (physical/range_offsets.py). Anything else is refused, as Spark fails on it (CAST_INVALID_INPUT).

    >>> string_offset(" 2 ", "' 2 ' PRECEDING"), string_offset("-1.5", "'-1.5' PRECEDING")
    (2.0, -1.5)
    """
    t = text.strip()
    sign = -1.0 if t[:1] == "-" else 1.0
    word = t.lstrip("+-").lower()
    if word in _DOUBLE_WORDS:
        return sign * _DOUBLE_WORDS[word]
    if not _DOUBLE_TEXT.fullmatch(t):
        raise WindowSpecError(
            f"the frame bound {where}: the string {text!r} is not a number (Spark casts it to DOUBLE: "
            "CAST_INVALID_INPUT)"
        )
    return float(t.rstrip("dDfF"))
