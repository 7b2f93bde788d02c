"""The planner: ask what a call's function can do, pick one kernel. Control flows one way: the
logical call decides, the kernel only executes.

>>> from overwindow.logical.parse import parse_window
>>> plan(parse_window("sum(x) OVER (ORDER BY t ROWS 3 PRECEDING) AS s").calls[0], pa.float64()).name
'exact-prefix-sum'

The kernels live in physical/registry.py (one per catalog name); argument and result types in
physical/types.py; this module adds what depends on the call's shape: a whole-partition frame is
computed once per partition and broadcast, and Python aggregates (overwindow.Aggregate) pick the
sliding, segment-tree or naive path from the methods they define (a pandas_udf: per frame).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from overwindow.errors import FrameErrors
from overwindow.logical.call import WindowCall
from overwindow.logical.frame import BoundKind, Exclude
from overwindow.logical.functions import Kind, user_aggregate_class
from overwindow.physical.kernels import python_aggregate
from overwindow.physical.registry import KERNELS, CallInput
from overwindow.physical.types import check_arguments, result_type
from overwindow.physical.values import Values

__all__ = ["CallInput", "KernelChoice", "plan", "result_type"]


@dataclass(frozen=True)
class KernelChoice:
    name: str
    run: Callable[[CallInput], pa.Array]


# The test seam of the fast aggregate kernels: None in the product; the tests set it (through
# tests/physical/reference_kernels.py) to a function giving each built-in aggregate call a plain Python
# aggregate, which the naive kernel runs frame by frame in place of the fast kernel under test.
REFERENCE_AGGREGATE: Callable[[WindowCall], object] | None = None


def plan(call: WindowCall, *types: pa.DataType | None) -> KernelChoice:
    """Pick the kernel for ``call`` whose arguments have the Arrow types ``types`` (none for
    count(*) and ranking), refusing in SQL words an argument type the function does not take.

    >>> from overwindow.logical.parse import parse_window
    >>> plan(parse_window("sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS s").calls[0], pa.int64()).name
    'exact-prefix-sum'
    """
    check_arguments(call, *types)
    info = call.info
    user = user_aggregate_class(call.function)
    reference = REFERENCE_AGGREGATE
    if info.kind is Kind.AGGREGATE and (user is not None or reference is not None):
        agg = user() if user is not None else reference(call)
        return _framed(call, _python_kernel(call, agg, force_naive=reference is not None))
    kernel = KERNELS[call.function]
    choice = KernelChoice(kernel.name, kernel.build(call))
    return _framed(call, choice) if info.uses_frame else choice


def _python_kernel(call: WindowCall, agg, force_naive: bool) -> KernelChoice:
    # a running frame (UNBOUNDED PRECEDING, nothing excluded) only ever adds rows: it slides
    # without retract
    running = (
        call.frame.start.kind is BoundKind.UNBOUNDED_PRECEDING and call.frame.exclude is Exclude.NO_OTHERS
    )
    if python_aggregate.has(agg, "frame"):  # a function of whole frames (a pandas_udf)
        return KernelChoice("per-frame", lambda inp: python_aggregate.per_frame(agg, inp.args, inp.frames))
    if force_naive:
        kernel, name = python_aggregate.naive, "naive"
    elif python_aggregate.has(agg, "retract") or running:
        kernel, name = python_aggregate.sliding, "sliding"
    elif python_aggregate.has(agg, "merge"):
        kernel, name = python_aggregate.segment_tree, "segment-tree"
    else:
        kernel, name = python_aggregate.naive, "naive"
    return KernelChoice(name, lambda inp: kernel(agg, _python_values(inp), inp.mask, inp.frames))


def _python_values(inp: CallInput) -> Values:
    """A Python aggregate's values: its argument, or a struct of its arguments (fields "0", "1", ...)
    where the function takes several (the reference aggregates of corr, max_by, ...)."""
    if len(inp.args) <= 1:
        return inp.values
    arrays = [a.array for a in inp.args]
    return Values(pa.StructArray.from_arrays(arrays, names=[str(i) for i in range(len(arrays))]))


def _framed(call: WindowCall, choice: KernelChoice) -> KernelChoice:
    """A frame that is the whole partition: compute once per partition and broadcast."""
    if not call.frame.is_whole_partition:
        return choice

    def run(inp: CallInput) -> pa.Array:
        firsts = inp.layout.part_bounds[:-1]
        once = CallInput(inp.layout, inp.frames.take(firsts), inp.values, inp.mask, inp.default, inp.args)
        spread = pa.array(inp.layout.part_id)
        try:
            return choice.run(once).take(spread)
        except FrameErrors as e:  # each partition's failure is every one of its rows'
            raise FrameErrors(e.result.take(spread), [e.reasons[p] for p in inp.layout.part_id]) from None

    return KernelChoice("broadcast+" + choice.name, run)
