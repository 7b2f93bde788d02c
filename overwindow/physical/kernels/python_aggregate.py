"""Kernels for aggregates written in Python (overwindow.udaf.Aggregate): naive, sliding, segment tree.

* naive: a fresh state per frame, updated with the whole frame; O(sum of frame sizes). Works for any
  aggregate and is the reference the fast built-in kernels are tested against.
* sliding: one state slid over the frames with update/retract; O(n) calls.
* segment tree (fanout 16) of partial states, combined with merge: O(n) merges to build, O(16 log16 n)
  per frame.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

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
