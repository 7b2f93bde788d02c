"""Kernels for aggregates written in Python (overwindow.udaf.Aggregate): naive, sliding, segment tree.

* naive: a fresh state per frame, updated with the whole frame; O(sum of frame sizes). Works for any
  aggregate and is the reference the fast built-in kernels are tested against.
* sliding: one state slid over the frames with update/retract; O(n) calls.
* segment tree (fanout 16) of partial states, combined with merge: O(n) merges to build, O(16 log16 n)
  per frame.
* per frame: an aggregate of whole frames (``inputs``, ``frame``, ``results``: a pandas_udf, see
  overwindow.spark.pandas_udf) called once per row on its frame's slice of every argument, as Spark
  calls a pandas_udf over a window; O(sum of frame sizes) plus one call per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from overwindow.errors import FrameErrors
from overwindow.physical.bounds import Frames
from overwindow.physical.kernels.holistic import _compact
from overwindow.physical.kernels.sliding import frame_values, slide
from overwindow.physical.values import Values

FANOUT = 16


def has(agg, method: str) -> bool:
    return callable(getattr(agg, method, None))


def _inputs(values: Values, mask: np.ndarray, frames: Frames):
    taken = values.array.filter(pa.array(mask))
    if taken.null_count or pa.types.is_struct(taken.type):
        # NULLs taking part (RESPECT NULLS, a pair's x) stay None, integers exact, not NaN floats
        vals = np.array(taken.to_pylist() + [None], dtype=object)[:-1]
    else:
        vals = np.asarray(taken.to_numpy(zero_copy_only=False))
    parts, _ = _compact(mask, frames)
    return vals, Frames(parts)


def _result(agg, out: list) -> pa.Array:
    return pa.array(out, type=getattr(agg, "result_type", None))


def naive(agg, values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    vals, compact = _inputs(values, mask, frames)
    out = [
        agg.evaluate(agg.update(agg.create(), frame_values(vals, compact, r)))
        for r in range(len(compact.start))
    ]
    return _result(agg, out)


def sliding(agg, values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    vals, compact = _inputs(values, mask, frames)
    box = [agg.create()]

    def add(lo, hi):
        box[0] = agg.update(box[0], vals[lo:hi])

    def remove(lo, hi):
        box[0] = agg.retract(box[0], vals[lo:hi])

    def reset():
        box[0] = agg.create()

    return _result(agg, slide(compact, add, remove, lambda: agg.evaluate(box[0]), reset))


def segment_tree(agg, values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    vals, compact = _inputs(values, mask, frames)
    levels = [[agg.update(agg.create(), vals[i : i + 1]) for i in range(len(vals))]]
    while len(levels[-1]) > 1:
        below = levels[-1]
        up = []
        for j in range(0, len(below), FANOUT):
            state = below[j]
            for other in below[j + 1 : j + FANOUT]:
                state = agg.merge(state, other)
            up.append(state)
        levels.append(up)

    def query(s: int, e: int):
        left, right = agg.create(), agg.create()
        level = 0
        while s < e:
            nodes = levels[level]
            while s < e and s % FANOUT:
                left = agg.merge(left, nodes[s])
                s += 1
            while s < e and e % FANOUT:
                e -= 1
                right = agg.merge(nodes[e], right)
            s //= FANOUT
            e //= FANOUT
            level += 1
        return agg.merge(left, right)

    out = []
    for r in range(len(compact.start)):
        state = agg.create()
        for s, e in compact.parts:
            if e[r] > s[r]:
                state = agg.merge(state, query(int(s[r]), int(e[r])))
        out.append(agg.evaluate(state))
    return _result(agg, out)


def per_frame(agg, args: tuple[Values, ...], frames: Frames) -> pa.Array:
    """``agg.frame(inputs, lo, hi)`` for each row's frame ``[lo, hi)`` of the sorted arguments, an
    empty frame too (``inputs``: ``agg.inputs`` of the argument arrays, made once), the values made
    an array by ``agg.results``. A row whose call raises gets NULL and its reason, and the kernel
    raises ``FrameErrors`` with every row's value and reason once all are done; so does a row whose
    value ``agg.results`` cannot make (each value is then tried on its own). O(n) calls.

    >>> class Length:
    ...     def inputs(self, arrays): return [a.to_pylist() for a in arrays]
    ...     def frame(self, inputs, lo, hi): return len(inputs[0][lo:hi]) // (hi - lo - 1)
    ...     def results(self, values): return pa.array(values, pa.int64())
    >>> f = Frames([(np.array([0, 0, 1]), np.array([1, 2, 3]))])
    >>> try:
    ...     per_frame(Length(), (Values(pa.array([5, 6, 7])),), f)
    ... except FrameErrors as e:
    ...     print(e.result.to_pylist(), e.reasons)
    [None, 2, 2] ['ZeroDivisionError: integer division or modulo by zero', None, None]
    """
    if len(frames.parts) != 1:
        raise AssertionError("a function of whole frames takes frames of one part (no EXCLUDE)")
    inputs = agg.inputs([a.array for a in args])
    values, reasons = [], []
    for lo, hi in zip(frames.start.tolist(), frames.end.tolist()):
        try:
            values.append(agg.frame(inputs, lo, max(lo, hi)))
            reasons.append(None)
        except Exception as e:  # the user's code: any exception is this row's failure
            values.append(None)
            reasons.append(_reason(e))
    try:
        result = agg.results(values)
    except Exception:  # a value the declared type cannot hold: find which, one by one
        result = _one_by_one(agg, values, reasons)
    if any(r is not None for r in reasons):
        raise FrameErrors(result, reasons)
    return result


def _reason(e: Exception) -> str:
    return f"{type(e).__name__}: {e}"


def _one_by_one(agg, values: list, reasons: list) -> pa.Array:
    """``agg.results`` of ``values``, each value made on its own: NULL and a reason in ``reasons``
    where it cannot be. O(n) calls."""
    kept = []
    for i, v in enumerate(values):
        try:
            agg.results([v])
            kept.append(v)
        except Exception as e:
            kept.append(None)
            reasons[i] = reasons[i] or _reason(e)
    return agg.results(kept)
