"""SQL text to window calls, with sqlglot's Spark dialect.

>>> w = parse_window(
...     "avg(x) OVER (PARTITION BY k ORDER BY d RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND CURRENT ROW) AS a"
... )
>>> w.calls[0].frame.start.offset
Interval(months=0, days=3, micros=0)
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.call import SortKey, WindowCall, WindowExpression
from overwindow.logical.expr import DIALECT, Expr, literal_value
from overwindow.logical.frame import Bound, BoundKind, Exclude, Frame, FrameUnit, Interval
from overwindow.logical.functions import lookup

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
}

_UNITS_MICROS = {
    "MICROSECOND": 1,
    "MILLISECOND": 1_000,
    "SECOND": 1_000_000,
    "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
}


def parse_window(text: str) -> WindowExpression:
    """Parse one select item ``<expr with window calls> AS alias`` into a WindowExpression."""
    try:
        node = sqlglot.parse_one(text, read=DIALECT)
    except sqlglot.errors.ParseError as e:
        tokens = {t.token_type.name for t in sqlglot.tokenize(text, read=DIALECT)}
        if (
            "GROUPS" in {t.text.upper() for t in sqlglot.tokenize(text, read=DIALECT)}
            and "ORDER_BY" not in tokens
        ):
            # sqlglot cannot read a GROUPS frame without ORDER BY at all; say what SQL says
            raise WindowSpecError(f"GROUPS frames require ORDER BY, in {text!r}") from None
        raise WindowSpecError(f"cannot parse window call {text!r}: {e}") from None
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
    while True:
        if isinstance(f, exp.Filter):
            filt = Expr.of(f.expression.this)
            f = f.this
        elif isinstance(f, (exp.IgnoreNulls, exp.RespectNulls)):
            ignore_nulls = isinstance(f, exp.IgnoreNulls)
            f = f.this
        else:
            break
    function, args, params, default = _function(f, alias)
    if function == "count_if":
        cond = args[0]
        function, args = "count_star", ()
        filt = cond if filt is None else Expr.of(exp.and_(filt.node.copy(), cond.node.copy()))
    order = tuple(_sort_key(o) for o in (w.args.get("order").expressions if w.args.get("order") else ()))
    spec = w.args.get("spec")
    frame = _frame(spec, bool(order)) if spec is not None else None
    return WindowCall(
        function=function,
        alias=alias,
        args=args,
        params=params,
        default=default,
        filter=filt,
        ignore_nulls=bool(ignore_nulls),
        partition_by=tuple(Expr.of(e) for e in w.args.get("partition_by") or ()),
        order_by=order,
        frame=frame,
        frame_given=spec is not None,
    )


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
        inner, order = f.this, f.expression
        name = _NODE_NAMES.get(type(inner))
        if name not in ("percentile_cont", "percentile_disc"):
            raise WindowSpecError(
                f"WITHIN GROUP is only supported with percentile_cont/percentile_disc {ctx}"
            )
        keys = order.expressions
        if len(keys) != 1:
            raise WindowSpecError(f"{name} WITHIN GROUP needs exactly one ORDER BY expression {ctx}")
        key = keys[0]
        p = literal_value(inner.this, f"{name} fraction {ctx}")
        if isinstance(key, exp.Ordered):
            if key.args.get("desc"):
                if name == "percentile_disc":
                    raise WindowSpecError(
                        f"percentile_disc WITHIN GROUP (ORDER BY ... DESC) is not supported; use ASC {ctx}"
                    )
                # the continuous percentile at p of a descending order is the one at 1 - p ascending
                p = tuple(1 - x for x in p) if isinstance(p, tuple) else 1 - p
            key = key.this
        return name, (Expr.of(key),), (p,), None
    if isinstance(f, exp.Anonymous):
        name = f.name.lower()
        items = list(f.expressions)
    elif type(f) in _NODE_NAMES:
        name = _NODE_NAMES[type(f)]
        items = [v for k, v in f.args.items() if v is not None and k not in ("big_int",)]
        flat = []
        for v in items:
            flat.extend(v if isinstance(v, list) else [v])
        items = flat
    else:
        raise WindowSpecError(f"{f.sql(dialect=DIALECT)} is not a window function {ctx}")
    if name == "count":
        if items and isinstance(items[0], exp.Star):
            return "count_star", (), (), None
        if items and isinstance(items[0], exp.Distinct):
            cols = items[0].expressions
            if len(cols) != 1:
                raise WindowSpecError(f"count(DISTINCT ...) takes one expression {ctx}")
            return "count_distinct", (Expr.of(cols[0]),), (), None
    if any(isinstance(i, exp.Distinct) for i in items):
        raise WindowSpecError(f"DISTINCT is only supported in count(DISTINCT x) {ctx}")
    if name == "count_if":
        return "count_if", (Expr.of(items[0]),), (), None
    info = lookup(name)
    name = info.name
    args = tuple(Expr.of(i) for i in items[: info.n_args])
    rest = items[info.n_args :]
    if len(rest) > len(info.params):
        raise WindowSpecError(f"{name}() takes at most {info.n_args + len(info.params)} arguments {ctx}")
    if name in ("lag", "lead"):
        params = (literal_value(rest[0], f"{name} offset {ctx}"),) if rest else (1,)
        default = Expr.of(rest[1]) if len(rest) > 1 else None
        return name, args, params, default
    params = tuple(literal_value(r, f"{name} parameter {ctx}") for r in rest)
    if info.params and len(params) < len(info.params):
        raise WindowSpecError(f"{name}() needs its {', '.join(info.params)} argument {ctx}")
    return name, args, params, None


def _frame(spec: exp.WindowSpec, has_order: bool) -> Frame:
    unit = FrameUnit(str(spec.args.get("kind")).upper())
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


def _bound(value, side) -> Bound:
    side = (str(side) if side is not None else "").upper()
    if isinstance(value, str):
        v = value.upper()
        if v == "CURRENT ROW":
            return Bound.current_row()
        if v == "UNBOUNDED":
            return Bound.unbounded_preceding() if side == "PRECEDING" else Bound.unbounded_following()
        raise WindowSpecError(f"cannot read frame bound {value} {side}")
    if isinstance(value, exp.Interval):
        offset = _interval(value)
    else:
        offset = literal_value(value, f"frame bound {value.sql(dialect=DIALECT)} {side}")
    kind = BoundKind.PRECEDING if side == "PRECEDING" else BoundKind.FOLLOWING
    return Bound(kind, offset)


def _interval(node: exp.Interval) -> Interval:
    """``INTERVAL 3 DAYS``, ``INTERVAL '3' DAY``, ``INTERVAL '1 month 3 days'`` and
    ``INTERVAL '1 02:03:04' DAY TO SECOND``."""
    amount = literal_value(node.this, "INTERVAL")
    unit = node.args.get("unit")
    if isinstance(unit, exp.IntervalSpan):
        return _day_time(str(amount), unit.this.name.upper(), unit.expression.name.upper())
    unit = unit.name.upper() if unit is not None else ""
    if isinstance(amount, str) and not unit:
        words = amount.split()
        if len(words) % 2 or not words:
            raise WindowSpecError(f"cannot read INTERVAL '{amount}': write INTERVAL '<number> <unit> ...'")
        total = Interval()
        for number, word in zip(words[::2], words[1::2]):
            part = _one_unit(_number(number, amount), word.upper())
            total = Interval(total.months + part.months, total.days + part.days, total.micros + part.micros)
        return total
    return _one_unit(_number(amount, amount), unit)


def _number(text, context):
    try:
        return float(text) if "." in str(text) else int(text)
    except ValueError:
        raise WindowSpecError(f"cannot read the number in INTERVAL {context!r}") from None


def _one_unit(amount, unit: str) -> Interval:
    unit = unit.rstrip("S") if len(unit) > 1 else unit
    if unit in ("YEAR", "MONTH"):
        if amount != int(amount):
            raise WindowSpecError(f"INTERVAL {amount} {unit} must be a whole number")
        return Interval(months=int(amount) * (12 if unit == "YEAR" else 1))
    if unit in ("WEEK", "DAY"):
        if amount != int(amount):
            return Interval(micros=round(amount * 86_400_000_000 * (7 if unit == "WEEK" else 1)))
        return Interval(days=int(amount) * (7 if unit == "WEEK" else 1))
    if unit in _UNITS_MICROS:
        return Interval(micros=round(amount * _UNITS_MICROS[unit]))
    raise WindowSpecError(f"unsupported INTERVAL unit {unit!r} in a RANGE frame (use YEAR..MICROSECOND)")


def _day_time(text: str, first: str, last: str) -> Interval:
    """Spark's day-time literal: ``'D HH:MM:SS.ffffff'`` and its shorter DAY TO HOUR/MINUTE forms."""
    fields = ["DAY", "HOUR", "MINUTE", "SECOND"]
    if first not in fields or last not in fields or fields.index(first) > fields.index(last):
        raise WindowSpecError(f"unsupported INTERVAL ... {first} TO {last}")
    parts = text.replace(" ", ":").split(":")
    names = fields[fields.index(first) : fields.index(last) + 1]
    if len(parts) != len(names):
        raise WindowSpecError(f"cannot read INTERVAL '{text}' {first} TO {last}")
    total = Interval()
    for value, name in zip(parts, names):
        part = _one_unit(_number(value, text), name)
        total = Interval(total.months, total.days + part.days, total.micros + part.micros)
    return total
