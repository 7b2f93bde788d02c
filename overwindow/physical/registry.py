"""The kernel of every built-in function, by catalog name: the one place a function's name meets the
code that computes it (its argument types and result type come from the catalog entry,
overwindow/logical/functions.py, through physical/types.py). Each entry names the kernel (the
planner reports it; tests and benchmarks pin it) and builds, for one call, the function that runs
it over a ``CallInput``.

>>> sorted(KERNELS)[:4]
['approx_count_distinct', 'avg', 'bit_and', 'bit_or']
>>> KERNELS["corr"].name
'exact-co-moments'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from overwindow.logical.call import WindowCall
from overwindow.physical.bounds import Frames
from overwindow.physical.kernels import (
    aggregates,
    approximate,
    collections,
    holistic,
    hyperloglog,
    moments,
    positional,
    ranking,
)
from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values


@dataclass
class CallInput:
    """What a kernel may read: the layout, each row's frame, the sorted arguments (``values`` the
    first) and the rows that take part (not NULL where the function skips NULLs, passing FILTER)."""

    layout: Layout
    frames: Frames | None
    values: Values | None
    mask: np.ndarray | None
    default: pa.Array | None = None
    args: tuple[Values, ...] = ()


Run = Callable[[CallInput], pa.Array]


@dataclass(frozen=True)
class Kernel:
    """A function's kernel: its name and, per call, the function running it."""

    name: str
    build: Callable[[WindowCall], Run]


def _values(fn) -> Callable[[WindowCall], Run]:
    """A kernel of (values, mask, frames): the aggregates of one argument."""
    return lambda call: lambda inp: fn(inp.values, inp.mask, inp.frames)


def _args(fn) -> Callable[[WindowCall], Run]:
    """A kernel of (arguments, mask, frames): the aggregates of two arguments."""
    return lambda call: lambda inp: fn(inp.args, inp.mask, inp.frames)


def _nth(index: int) -> Callable[[WindowCall], Run]:
    """``avg`` of the argument ``index`` (regr_avgx reads x, the second)."""
    return lambda call: lambda inp: aggregates.avg(inp.args[index], inp.mask, inp.frames)


def _percentile(call: WindowCall) -> Run:
    fraction, descending = call.params
    continuous = call.function == "percentile_cont"
    return lambda inp: holistic.percentile(inp.values, inp.mask, inp.frames, fraction, continuous, descending)


def _by(largest: bool) -> Callable[[WindowCall], Run]:
    def build(call: WindowCall) -> Run:
        if call.params:
            return lambda inp: collections.extremes_by(
                inp.args, inp.mask, inp.frames, call.params[0], largest
            )
        return lambda inp: collections.extreme_by(inp.args, inp.mask, inp.frames, largest)

    return build


def _ranking(call: WindowCall) -> Run:
    fn = ranking.KERNELS[call.function]
    return lambda inp: fn(inp.layout, call)


_VARIANCES = ("var_samp", "var_pop", "stddev_samp", "stddev_pop")
KERNELS: dict[str, Kernel] = {
    name: Kernel(label, build)
    for name, label, build in [
        *((name, "index-arithmetic", _ranking) for name in ranking.KERNELS),
        *(
            (
                name,
                "index-arithmetic",
                lambda call: lambda inp: positional.lag_lead(inp.values, inp.layout, call, inp.default),
            )
            for name in ("lag", "lead")
        ),
        (
            "counter_diff",
            "index-arithmetic",
            lambda call: lambda inp: positional.counter_diff(inp.args, inp.layout),
        ),
        *(
            (
                name,
                "index-arithmetic",
                lambda call: lambda inp: positional.value_function(inp.values, inp.frames, call),
            )
            for name in ("first_value", "last_value", "nth_value")
        ),
        ("count", "prefix-count", _values(aggregates.count)),
        ("count_star", "prefix-count", _values(aggregates.count)),
        ("regr_count", "prefix-count", _values(aggregates.count)),
        ("bool_and", "prefix-count", _values(aggregates.bool_and)),
        ("bool_or", "prefix-count", _values(aggregates.bool_or)),
        ("sum", "exact-prefix-sum", _values(aggregates.sum_)),
        ("avg", "exact-prefix-sum", _values(aggregates.avg)),
        ("try_sum", "exact-prefix-sum", _values(aggregates.try_sum)),
        ("try_avg", "exact-prefix-sum", _values(aggregates.try_avg)),
        ("regr_avgx", "exact-prefix-sum", _nth(1)),
        ("regr_avgy", "exact-prefix-sum", _nth(0)),
        *((name, "exact-moments", _values(aggregates.KERNELS[name])) for name in _VARIANCES),
        ("skewness", "exact-moments", _args(moments.skewness)),
        ("kurtosis", "exact-moments", _args(moments.kurtosis)),
        *(
            (name, "exact-co-moments", _args(getattr(moments, name)))
            for name in ("covar_pop", "covar_samp", "corr", "regr_sxx", "regr_syy", "regr_sxy")
        ),
        *(
            (name, "exact-co-moments", _args(getattr(moments, name)))
            for name in ("regr_slope", "regr_intercept", "regr_r2")
        ),
        ("min", "sparse-table", _values(aggregates.min_)),
        ("max", "sparse-table", _values(aggregates.max_)),
        ("bit_and", "sparse-table", _values(aggregates.bit_and)),
        ("bit_or", "sparse-table", _values(aggregates.bit_or)),
        ("bit_xor", "prefix-xor", _values(aggregates.bit_xor)),
        ("max_by", "sparse-table", _by(largest=True)),
        ("min_by", "sparse-table", _by(largest=False)),
        ("median", "wavelet", _values(holistic.median)),
        ("percentile_cont", "wavelet", _percentile),
        ("percentile_disc", "wavelet", _percentile),
        ("count_distinct", "wavelet", _values(holistic.count_distinct)),
        (
            "mode",
            "sliding-counts",
            lambda call: lambda inp: holistic.mode(inp.values, inp.mask, inp.frames, call.params[0]),
        ),
        ("collect_list", "gather", _values(collections.collect_list)),
        ("collect_set", "gather+hash-order", _values(collections.collect_set)),
        ("collect_union", "gather+hash-order", _values(collections.collect_union)),
        (
            "listagg",
            "gather",
            lambda call: (
                lambda inp: collections.listagg(
                    inp.values, inp.mask, inp.frames, call.params[0] if call.params else None
                )
            ),
        ),
        ("percentile_approx", "quantile-summaries", approximate.percentile_approx),
        ("approx_count_distinct", "hyperloglog++", hyperloglog.approx_count_distinct),
        ("histogram_numeric", "numeric-histogram", approximate.histogram_numeric),
    ]
}
