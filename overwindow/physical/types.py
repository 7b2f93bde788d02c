"""A call's argument and result types, from its catalog entry (``FunctionInfo.args`` and
``FunctionInfo.result``): which Arrow types each argument may have, refused in SQL words otherwise,
and Spark's result type over the arguments' types. O(1) per call.

>>> from overwindow.logical.parse import parse_window
>>> result_type(parse_window("avg(x) OVER () AS a").calls[0], pa.decimal128(12, 2))
Decimal128Type(decimal128(16, 6))
>>> result_type(parse_window("max_by(s, x, 2) OVER () AS a").calls[0], pa.string(), pa.float64())
ListType(list<item: string>)
"""

from __future__ import annotations

import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.logical.call import WindowCall
from overwindow.logical.functions import Accepts, Result
from overwindow.physical import decimals
from overwindow.physical.values import INTERVAL_DAY_TO_SECOND, TypeFamily, kind_of

# a type family (physical.values.kind_of) in SQL words, for errors
_KIND_WORDS = {
    TypeFamily.INT: "an integer",
    TypeFamily.FLOAT: "a floating-point",
    TypeFamily.DECIMAL: "a DECIMAL",
    TypeFamily.BOOL: "a BOOLEAN",
    TypeFamily.DATE: "a DATE",
    TypeFamily.TIMESTAMP: "a TIMESTAMP",
    TypeFamily.STRING: "a STRING",
    TypeFamily.INTERVAL: "an INTERVAL",
    TypeFamily.OTHER: "a BINARY or nested",
    None: "a NULL",
}


def is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def is_nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t) or pa.types.is_map(t)


def _accepted(accepts: Accepts, t: pa.DataType | None) -> bool:
    if t is None or pa.types.is_null(t):  # a NULL literal: Spark types it as the function wants
        return accepts is not Accepts.ARRAY
    family = kind_of(t)
    if accepts is Accepts.ANY:
        return True
    if accepts is Accepts.NUMERIC:
        return family.is_numeric
    if accepts is Accepts.SUMMABLE:
        return family.is_numeric or family is TypeFamily.INTERVAL
    if accepts is Accepts.BOOLEAN:
        return family is TypeFamily.BOOL
    if accepts is Accepts.INTEGRAL:
        return family is TypeFamily.INT
    if accepts is Accepts.ORDERED:
        return family.is_ordered_number or family is TypeFamily.INTERVAL
    if accepts is Accepts.TEXT:
        return not is_nested(t)
    if accepts is Accepts.ARRAY:
        return pa.types.is_list(t) or pa.types.is_large_list(t)
    if accepts is Accepts.TIMESTAMP:
        return family is TypeFamily.TIMESTAMP
    if accepts is Accepts.SETTABLE:  # Spark's hashes are reproduced for these only
        return not is_nested(t)
    return not pa.types.is_map(t)  # ORDERABLE


def check_arguments(call: WindowCall, *types: pa.DataType | None) -> None:
    """Refuse, in SQL words, an argument whose type the function does not take (Spark's type
    checks: ``sum(s)`` of a STRING, ``bit_and(x)`` of a DOUBLE, ``collect_set`` of a MAP)."""
    for expr, accepts, t in zip(call.args, call.info.args, types):
        if not _accepted(accepts, t):
            family = kind_of(t) if t is not None else None
            got = f"got {_KIND_WORDS.get(family, family)} argument, in {call.alias}"
            raise WindowSpecError(f"{call.function}({expr}) needs {accepts.value} argument, {got}")


def _sum_type(t: pa.DataType) -> pa.DataType:
    family = kind_of(t)
    if family is TypeFamily.DECIMAL:
        return decimals.sum_type(t)
    if family is TypeFamily.INTERVAL:
        return t
    return pa.int64() if family is TypeFamily.INT else pa.float64()


def _avg_type(t: pa.DataType) -> pa.DataType:
    family = kind_of(t)
    if family is TypeFamily.INTERVAL:
        return INTERVAL_DAY_TO_SECOND
    return decimals.avg_type(t) if family is TypeFamily.DECIMAL else pa.float64()


def _percentile_type(t: pa.DataType) -> pa.DataType:
    family = kind_of(t)
    if family is TypeFamily.INTERVAL:
        return INTERVAL_DAY_TO_SECOND
    return pa.float64() if family.is_numeric else t


def _many(call: WindowCall) -> bool:
    """Whether the call's first parameter is a list (of fractions, percentages): one result each."""
    return bool(call.params) and isinstance(call.params[0], tuple)


_FIXED = {
    Result.INT: pa.int32(),
    Result.BIGINT: pa.int64(),
    Result.DOUBLE: pa.float64(),
    Result.BOOLEAN: pa.bool_(),
}


def result_type(call: WindowCall, *types: pa.DataType | None) -> pa.DataType | None:
    """Spark's result type of ``call`` over arguments of Arrow types ``types`` (the catalog's
    ``Result``): INT for row_number, rank, dense_rank and ntile; BIGINT counts; the argument's type
    for the functions that return one of its values; ``sum`` BIGINT over integers, DOUBLE over floats
    and DECIMAL(min(p + 10, 38), s) over DECIMAL(p, s); ``avg`` DOUBLE, or DECIMAL(min(p + 4, 38),
    s + 4); DOUBLE for the moments, percent_rank, cume_dist and the percentiles of numbers (a DATE
    or TIMESTAMP percentile keeps its type); a day-time interval's sum its own type, its average and
    percentiles INTERVAL DAY TO SECOND; ARRAYs of the argument for collect_list, collect_set and
    max_by(x, y, k); STRING (BINARY of BINARY) for listagg. None for Python aggregates (their own
    ``result_type``)."""
    rule = call.info.result
    if rule in _FIXED:
        return _FIXED[rule]
    if rule is Result.USER:
        return None
    arg = types[call.info.result_of] if types else None
    if rule is Result.ARG:
        return arg
    if arg is None or pa.types.is_null(arg):
        arg = pa.float64() if rule in (Result.SUM, Result.AVG, Result.PERCENTILE) else pa.null()
    if rule is Result.SUM:
        return _sum_type(arg)
    if rule is Result.AVG:
        return _avg_type(arg)
    if rule is Result.PERCENTILE:
        one = _percentile_type(arg)
        return pa.list_(one) if _many(call) else one
    if rule is Result.ARRAY:
        return pa.list_(arg)
    if rule is Result.ARG_OR_ARRAY:
        return pa.list_(arg) if call.params else arg
    if rule is Result.ARG_OR_ARRAYS:
        return pa.list_(arg) if _many(call) else arg
    if rule is Result.TEXT:
        return pa.binary() if is_binary(arg) else pa.string()
    if rule is Result.HISTOGRAM:
        return pa.list_(pa.struct([("x", arg), ("y", pa.float64())]))
    raise AssertionError(rule)
