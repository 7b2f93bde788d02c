"""The planner: ask what a call's function can do, pick one kernel. Control flows one way: the
logical call decides, the kernel only executes.

>>> from overwindow.logical.parse import parse_window
>>> plan(parse_window("sum(x) OVER (ORDER BY t ROWS 3 PRECEDING) AS s").calls[0], TypeFamily.FLOAT).name
'exact-prefix-sum'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.logical.call import WindowCall
from overwindow.logical.frame import BoundKind, Exclude
from overwindow.logical.functions import Kind, lookup, user_aggregate_class
from overwindow.physical import decimals
from overwindow.physical.bounds import Frames
from overwindow.physical.kernels import aggregates, holistic, positional, python_aggregate, ranking
from overwindow.physical.sorting import Layout
from overwindow.physical.values import INTERVAL_DAY_TO_SECOND, TypeFamily, Values, kind_of


@dataclass
class CallInput:
    """What a kernel may read: the layout, each row's frame, the sorted argument and its mask."""

    layout: Layout
    frames: Frames | None
    values: Values | None
    mask: np.ndarray | None
    default: pa.Array | None = None


@dataclass(frozen=True)
class KernelChoice:
    name: str
    run: Callable[[CallInput], pa.Array]


_AGG_NAMES = {
    "count": "prefix-count",
    "count_star": "prefix-count",
    "sum": "exact-prefix-sum",
    "avg": "exact-prefix-sum",
    "var_samp": "exact-moments",
    "var_pop": "exact-moments",
    "stddev_samp": "exact-moments",
    "stddev_pop": "exact-moments",
    "bool_and": "prefix-count",
    "bool_or": "prefix-count",
    "min": "sparse-table",
    "max": "sparse-table",
    "median": "wavelet",
    "percentile_cont": "wavelet",
    "percentile_disc": "wavelet",
    "count_distinct": "wavelet",
    "mode": "sliding-counts",
}


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


def check_types(call: WindowCall, kind: TypeFamily | None) -> None:
    info = lookup(call.function)
    got = f"got {_KIND_WORDS.get(kind, kind)} argument, in {call.alias}"
    # Spark sums and averages day-time intervals too
    interval_ok = kind is TypeFamily.INTERVAL and call.function in ("sum", "avg")
    if info.numeric_only and not (kind and kind.is_numeric) and not interval_ok:
        raise WindowSpecError(f"{call.function}({call.args[0]}) needs a numeric argument, {got}")
    if call.function in ("bool_and", "bool_or") and kind is not TypeFamily.BOOL:
        raise WindowSpecError(f"{call.function}({call.args[0]}) needs a BOOLEAN argument, {got}")
    if call.function in ("median", "percentile_cont") and not (
        kind and (kind.is_ordered_number or kind is TypeFamily.INTERVAL)
    ):
        raise WindowSpecError(
            f"{call.function}({call.args[0]}) needs a numeric, DATE, TIMESTAMP or INTERVAL argument, {got}"
        )


_INT_RESULTS = {"row_number", "rank", "dense_rank", "ntile"}
_DOUBLE_RESULTS = {"percent_rank", "cume_dist", "var_samp", "var_pop", "stddev_samp", "stddev_pop"}
_BIGINT_RESULTS = {"count", "count_star", "count_distinct"}
_SAME_TYPE = {"lag", "lead", "first_value", "last_value", "nth_value", "min", "max", "mode"}


def result_type(call: WindowCall, arg: pa.DataType | None) -> pa.DataType | None:
    """Spark's result type of ``call`` over an argument of Arrow type ``arg`` (None: no argument):
    INT for row_number, rank, dense_rank and ntile; BIGINT counts; the argument's type for the
    functions that return one of its values; ``sum`` BIGINT over integers, DOUBLE over floats and
    DECIMAL(min(p + 10, 38), s) over DECIMAL(p, s); ``avg`` DOUBLE, or DECIMAL(min(p + 4, 38), s + 4);
    DOUBLE for variances, percent_rank, cume_dist and the percentiles of numbers (a DATE or
    TIMESTAMP percentile keeps its type); a day-time interval's sum its own type, its average and
    percentiles INTERVAL DAY TO SECOND. None for Python aggregates (their own ``result_type``).

    >>> from overwindow.logical.parse import parse_window
    >>> result_type(parse_window("avg(x) OVER () AS a").calls[0], pa.decimal128(12, 2))
    Decimal128Type(decimal128(16, 6))
    """
    name = call.function
    family = kind_of(arg) if arg is not None else None
    if name in _INT_RESULTS:
        return pa.int32()
    if name in _BIGINT_RESULTS:
        return pa.int64()
    if name in _DOUBLE_RESULTS:
        return pa.float64()
    if name in ("bool_and", "bool_or"):
        return pa.bool_()
    if name in _SAME_TYPE:
        return arg
    if name == "sum":
        if family is TypeFamily.DECIMAL:
            return decimals.sum_type(arg)
        if family is TypeFamily.INTERVAL:
            return arg
        return pa.int64() if family is TypeFamily.INT else pa.float64()
    if name == "avg":
        if family is TypeFamily.INTERVAL:
            return INTERVAL_DAY_TO_SECOND
        return decimals.avg_type(arg) if family is TypeFamily.DECIMAL else pa.float64()
    if name in ("median", "percentile_cont", "percentile_disc"):
        one = pa.float64() if family is not None and family.is_numeric else arg
        if family is TypeFamily.INTERVAL:
            one = INTERVAL_DAY_TO_SECOND
        return pa.list_(one) if call.params and isinstance(call.params[0], tuple) else one
    return None


# The test seam of the fast aggregate kernels: None in the product; the tests set it (through
# tests/physical/reference_kernels.py) to a function giving each built-in aggregate call a plain Python
# aggregate, which the naive kernel runs frame by frame in place of the fast kernel under test.
REFERENCE_AGGREGATE: Callable[[WindowCall], object] | None = None


def plan(call: WindowCall, kind: TypeFamily | None) -> KernelChoice:
    """Pick the kernel for ``call`` whose argument has type family ``kind`` (None: no argument).

    >>> from overwindow.logical.parse import parse_window
    >>> plan(parse_window("sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS s").calls[0], TypeFamily.INT).name
    'exact-prefix-sum'
    """
    check_types(call, kind)
    info = lookup(call.function)
    if info.kind is Kind.RANKING:
        fn = ranking.KERNELS[call.function]
        return KernelChoice("index-arithmetic", lambda inp: fn(inp.layout, call))
    if info.kind is Kind.OFFSET:
        return KernelChoice(
            "index-arithmetic", lambda inp: positional.lag_lead(inp.values, inp.layout, call, inp.default)
        )
    if info.kind is Kind.VALUE:
        return _framed(
            call,
            KernelChoice(
                "index-arithmetic", lambda inp: positional.value_function(inp.values, inp.frames, call)
            ),
        )
    user = user_aggregate_class(call.function)
    reference = REFERENCE_AGGREGATE
    if user is not None or reference is not None:
        agg = user() if user is not None else reference(call)
        return _framed(call, _python_kernel(call, agg, force_naive=reference is not None))
    if call.function in ("percentile_cont", "percentile_disc"):
        fn = partial(_percentile, call)
    elif call.function == "mode":
        fn = partial(holistic.mode, largest=call.params[0])
    else:
        fn = aggregates.KERNELS.get(call.function) or holistic.KERNELS[call.function]
    return _framed(
        call, KernelChoice(_AGG_NAMES[call.function], lambda inp: fn(inp.values, inp.mask, inp.frames))
    )


def _percentile(call, values, mask, frames):
    fraction, descending = call.params
    return holistic.percentile(values, mask, frames, fraction, call.function == "percentile_cont", descending)


def _python_kernel(call: WindowCall, agg, force_naive: bool) -> KernelChoice:
    # a running frame (UNBOUNDED PRECEDING, nothing excluded) only ever adds rows: it slides
    # without retract
    running = (
        call.frame.start.kind is BoundKind.UNBOUNDED_PRECEDING and call.frame.exclude is Exclude.NO_OTHERS
    )
    if force_naive:
        kernel, name = python_aggregate.naive, "naive"
    elif python_aggregate.has(agg, "retract") or running:
        kernel, name = python_aggregate.sliding, "sliding"
    elif python_aggregate.has(agg, "merge"):
        kernel, name = python_aggregate.segment_tree, "segment-tree"
    else:
        kernel, name = python_aggregate.naive, "naive"
    return KernelChoice(name, lambda inp: kernel(agg, inp.values, inp.mask, inp.frames))


def _framed(call: WindowCall, choice: KernelChoice) -> KernelChoice:
    """A frame that is the whole partition: compute once per partition and broadcast."""
    if not call.frame.is_whole_partition:
        return choice

    def run(inp: CallInput) -> pa.Array:
        firsts = inp.layout.part_bounds[:-1]
        once = CallInput(inp.layout, inp.frames.take(firsts), inp.values, inp.mask, inp.default)
        return choice.run(once).take(pa.array(inp.layout.part_id))

    return KernelChoice("broadcast+" + choice.name, run)
