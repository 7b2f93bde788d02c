"""The batch evaluator: window calls over a pandas DataFrame or a pyarrow Table.

Calls sharing (PARTITION BY, ORDER BY) share one sort. Each call: evaluate its argument, FILTER and
default expressions, compute frames, run the planned kernel on the sorted rows, un-sort.

>>> import pandas as pd
>>> df = pd.DataFrame({"k": [1, 1, 2], "t": [2, 1, 1], "x": [10, 20, 30]})
>>> evaluate(df, "sum(x) OVER (PARTITION BY k ORDER BY t) AS s")["s"].tolist()
[30, 20, 30]
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from overwindow.errors import FrameErrors, WindowRuntimeError, WindowSpecError
from overwindow.logical.bind import is_plain
from overwindow.logical.call import WindowCall, WindowExpression
from overwindow.logical.frame import FrameUnit
from overwindow.logical.functions import Kind
from overwindow.logical.parse import parse_window
from overwindow.physical.bounds import frame_bounds
from overwindow.physical.casts import CastError, cast, implicit_default
from overwindow.physical.columns import NotPlainColumn, read_column
from overwindow.physical.planner import CallInput, plan, result_type
from overwindow.physical.range_offsets import check_range_frame
from overwindow.physical.sessions import session_bounds
from overwindow.physical.sorting import Layout
from overwindow.physical.values import TypeFamily, Values, sql_type

CallLike = str | WindowCall | WindowExpression


def as_window_expression(c: CallLike) -> WindowExpression:
    if isinstance(c, WindowExpression):
        return c
    if isinstance(c, WindowCall):
        return WindowExpression(c.alias, (c,))
    if isinstance(c, str):
        return parse_window(c)
    raise TypeError(f"expected SQL text or a WindowCall, got {type(c).__name__}")


def evaluate(data: pd.DataFrame | pa.Table, *calls: CallLike):
    """Every input column, in input order, plus one column per call named by its alias.

    Returns the input's type. pandas input is read as Arrow (a NaN in a numpy float64 column is NULL,
    as pandas means it; pass Arrow, or pandas columns of ``pd.ArrowDtype`` or ``Float64``, to keep NaN
    apart from NULL); pandas results keep their values (``pandas_column``).
    """
    if isinstance(data, pd.DataFrame):
        table = pa.Table.from_pandas(data, preserve_index=False)
        out = evaluate_table(table, [as_window_expression(c) for c in calls])
        result = data.copy()
        arrow_backed = any(isinstance(t, pd.ArrowDtype) for t in data.dtypes)
        for name in out.column_names[table.num_columns :]:
            # by position: the input's index may be anything
            result[name] = pandas_column(out.column(name), arrow_backed).set_axis(data.index)
        return result
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        table = pa.table(data) if isinstance(data, pa.RecordBatch) else data
        return evaluate_table(table, [as_window_expression(c) for c in calls])
    raise TypeError(f"evaluate() takes a pandas DataFrame or a pyarrow Table, got {type(data).__name__}")


_MASKED = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}


def pandas_column(column: pa.ChunkedArray | pa.Array, arrow_backed: bool) -> pd.Series:
    """A result column for pandas output, without losing values: Arrow-backed (``pd.ArrowDtype``)
    when the input frame has such columns, which keeps NULL and NaN apart; else numpy dtypes where
    they hold every value, and pandas' nullable ``Int64``/``Int32``/``boolean`` for integers and
    booleans with NULLs (pandas' default float64 would round integers past 2**53: ``lag`` of
    9007199254740993 came back 9007199254740992.0). O(rows).

    >>> pandas_column(pa.array([9007199254740993, None]), False).tolist()
    [9007199254740993, <NA>]
    """
    if arrow_backed:
        return column.to_pandas(types_mapper=pd.ArrowDtype)
    if column.null_count and column.type in _MASKED:
        return column.to_pandas(types_mapper=_MASKED.get)
    return column.to_pandas()


def values_of(expr, table: pa.Table) -> pa.Array:
    """``expr``'s value on every row of ``table``: a plain column or constant read as it is
    (``overwindow.physical.columns``), any other expression computed by the batch interpreter
    (``overwindow.physical.expressions``), loaded on first use. A stream's bind step has Spark
    compute every expression but plain columns and constants before the windows, so a Spark stream
    never loads the interpreter for its calls. O(rows) per expression.

    >>> from overwindow.logical.expr import Expr
    >>> values_of(Expr.of("x * 2"), pa.table({"x": [1, 2]})).to_pylist()
    [2, 4]
    """
    if is_plain(expr):
        try:
            return read_column(expr, table)
        except NotPlainColumn:  # a constant the interpreter types (``1e400``): not folded
            pass
    from overwindow.physical.expressions import evaluate_expr

    return evaluate_expr(expr, table)


def evaluate_table(table: pa.Table, exprs: list[WindowExpression]) -> pa.Table:
    """``table`` plus one column per window expression."""
    return project(table, exprs, evaluate_calls(table, exprs))


def evaluate_calls(
    table: pa.Table, exprs: list[WindowExpression], layout: Layout | None = None
) -> dict[str, pa.Array]:
    """Every window call's result, by call alias, in input row order.

    ``layout``: the rows' layout when the caller already knows it (every call's PARTITION BY and
    ORDER BY order the rows so, as in a streaming buffer kept sorted); skips the sort."""
    names = [e.alias for e in exprs]
    for name in names:
        if name in table.column_names:
            raise WindowSpecError(f"output column `{name}` already exists in the input; choose another alias")
        if names.count(name) > 1:
            raise WindowSpecError(f"two window calls are named `{name}`; aliases must be unique")
    layouts: dict[tuple, tuple[Layout, np.ndarray]] = {}
    if layout is not None:
        known = _with_inverse(layout)
        layouts.update(((call.partition_by, call.order_by), known) for e in exprs for call in e.calls)
    columns: dict[tuple, Values] = {}  # calls over the same argument share its numpy views
    results = {}
    for e in exprs:
        for call in e.calls:
            try:
                results[call.alias] = _evaluate_call(table, call, layouts, columns)
            except FrameErrors as failed:  # a pandas_udf raised on some frames: project raises
                results[call.alias] = failed.result
                results[frames_failed(call.alias)] = pa.array(failed.reasons, pa.string())
    return results


def frames_failed(alias: str) -> str:
    """The key, among ``evaluate_calls``' results, of why the call ``alias`` failed on each row's
    frame (NULL where it did not), present only where it did (a pandas_udf raised); ``project``
    raises the reason of a row holding one, so ``overwindow.streaming.aside`` finds such rows as it
    finds those an expression fails on, and sets them aside."""
    return f"__ow_frame_failed_{alias}"


def project(table: pa.Table, exprs: list[WindowExpression], results: dict[str, pa.Array]) -> pa.Table:
    """``table`` plus each window expression's column, computed from the calls' results. Raises
    WindowRuntimeError where a call failed on a row's frame (``frames_failed``)."""
    for e in exprs:
        for call in e.calls:
            why = results.get(frames_failed(call.alias))
            if why is not None and why.null_count < len(why):
                raise WindowRuntimeError(why.drop_null()[0].as_py())
    out = table
    for e in exprs:
        if e.expr is None:
            col = results[e.calls[0].alias]
        else:
            scope = table
            for call in e.calls:
                scope = scope.append_column(call.alias, results[call.alias])
            col = values_of(e.expr, scope)
        out = out.append_column(e.alias, col)
    return out


def _key(expr, table: pa.Table, clause: str, call: WindowCall) -> Values:
    """A PARTITION BY or ORDER BY key's values; refused, in SQL words, where they cannot be
    compared: MAP and calendar INTERVAL (months, days and nanoseconds) values, as Spark refuses them
    (EXPRESSION_TYPE_IS_NOT_ORDERABLE, INVALID_ORDERING_TYPE), and STRUCT and ARRAY values, which
    overwindow does not compare."""
    values = values_of(expr, table)
    t = values.type
    if pa.types.is_map(t) or t == pa.month_day_nano_interval():
        spark = "EXPRESSION_TYPE_IS_NOT_ORDERABLE" if clause == "PARTITION BY" else "INVALID_ORDERING_TYPE"
        why = f"its values cannot be compared (Spark: {spark})"
    elif pa.types.is_nested(t):
        why = "overwindow does not partition or order by nested values; use their fields"
    else:
        return Values(values)
    calendar = t == pa.month_day_nano_interval()
    kind = "a calendar INTERVAL (months, days, nanoseconds)" if calendar else sql_type(t)
    raise WindowSpecError(f"{clause} {expr} is of type {kind}: {why}, in {call.alias}")


def _layout(table: pa.Table, call: WindowCall, layouts: dict) -> tuple[Layout, np.ndarray]:
    key = (call.partition_by, call.order_by)
    if key not in layouts:
        part = [_key(p, table, "PARTITION BY", call) for p in call.partition_by]
        order = [(_key(k.expr, table, "ORDER BY", call), k.descending, k.nulls_first) for k in call.order_by]
        layouts[key] = _with_inverse(Layout.build(part, order, table.num_rows))
    return layouts[key]


def _with_inverse(layout: Layout) -> tuple[Layout, np.ndarray]:
    """The layout and, per input row, its sorted position."""
    if layout.identity:
        return layout, layout.perm
    inverse = np.empty(layout.n, dtype=np.int64)
    inverse[layout.perm] = np.arange(layout.n)
    return layout, inverse


def _sorted_column(table: pa.Table, expr, call: WindowCall, layout: Layout, columns: dict) -> Values:
    """``expr`` over ``table`` in the layout's order, once per (layout, expression)."""
    key = (call.partition_by, call.order_by, expr)
    if key not in columns:
        columns[key] = layout.sorted(values_of(expr, table))
    return columns[key]


def _default(
    table: pa.Table, call: WindowCall, layout: Layout, columns: dict, target: pa.DataType
) -> pa.Array:
    """The lag/lead default in sorted order, cast to the column's type as Spark casts it. A constant
    is cast once, so a default Spark refuses (``lag(int_col, 1, 'a')``) is refused however many
    rows there are (none, when a streaming spec is checked against its schema)."""
    where = f"in {call.function_sql()} AS {call.alias}"
    if not call.default.columns():
        one = values_of(call.default, pa.table({"_": [0]}))
        try:
            value = implicit_default(one, target, where)[0]
        except CastError as e:
            raise WindowSpecError(f"{e} {where}") from None
        return pa.repeat(value, layout.n)
    column = _sorted_column(table, call.default, call, layout, columns).array
    try:
        return implicit_default(column, target, where)
    except CastError as e:
        raise WindowRuntimeError(f"{e} {where}") from None


# Spark reads a TIMESTAMP argument of these as its DOUBLE seconds since 1970
_TIMESTAMP_SECONDS = ("sum", "avg", "try_sum", "try_avg")


def _evaluate_call(table: pa.Table, call: WindowCall, layouts: dict, columns: dict) -> pa.Array:
    layout, inverse = _layout(table, call, layouts)
    n = table.num_rows
    info = call.info
    values = mask = default = None
    for ignored in call.ignored:  # rank(x): x is not read, but must name columns, as in Spark
        values_of(ignored, table.slice(0, 0))
    args = tuple(_sorted_column(table, a, call, layout, columns) for a in call.args)
    if args and call.function in _TIMESTAMP_SECONDS and args[0].kind is TypeFamily.TIMESTAMP:
        args = (Values(cast(args[0].array, pa.float64())),)  # Spark's implicit cast: DOUBLE seconds
    if args:
        values = args[0]
        mask = np.ones(n, dtype=bool)
        for i in () if call.respect_nulls else info.skipped()[: len(args)]:
            mask = mask & args[i].valid
    elif info.kind is Kind.AGGREGATE:  # count(*): every row takes part
        values = Values(pa.array(np.ones(n, dtype=bool)))
        mask = np.ones(n, dtype=bool)
    if call.filter is not None:
        cond = _sorted_column(table, call.filter, call, layout, columns)
        if not (pa.types.is_boolean(cond.type) or pa.types.is_null(cond.type)):
            raise WindowSpecError(
                f"FILTER (WHERE {call.filter}) needs a BOOLEAN condition, not {sql_type(cond.type)} "
                f"(count_if(x) too), in {call.alias}"
            )
        mask = mask & cond.valid & cond.numbers.astype(bool)
    if call.default is not None:
        default = _default(table, call, layout, columns, values.type)
    types = tuple(a.type for a in args)
    choice = plan(call, *types)
    frames = None
    if info.uses_frame:
        key = None
        if call.frame.is_session:
            k = call.order_by[0]
            key = _sorted_column(table, k.expr, call, layout, columns)
            frames = session_bounds(layout, call.frame.gap, key, k.descending)
        elif call.frame.unit is FrameUnit.RANGE and (
            call.frame.start.has_offset or call.frame.end.has_offset
        ):
            k = call.order_by[0]
            key = _sorted_column(table, k.expr, call, layout, columns)
            check_range_frame(call.frame, key.type)
            frames = frame_bounds(layout, call.frame, key, k.descending, k.nulls_first)
        else:
            frames = frame_bounds(layout, call.frame)
    reasons = None
    try:
        result = choice.run(CallInput(layout, frames, values, mask, default, args))
    except FrameErrors as e:
        result, reasons = e.result, e.reasons
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    want = result_type(call, *types)
    if want is not None and result.type != want:  # e.g. a Python aggregate's inferred types
        result = result.cast(want, safe=not pa.types.is_floating(want))
    result = result if layout.identity else result.take(pa.array(inverse))
    if reasons is not None:
        where = f"{call.function_sql()} OVER ({call.over_sql()})"
        said = [None if r is None else f"{where} failed on this row's frame: {r}" for r in reasons]
        raise FrameErrors(result, said if layout.identity else [said[i] for i in inverse])
    return result
