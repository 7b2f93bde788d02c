"""A driver that slides one incremental structure over every frame, for aggregates that can add and
remove values but not combine partial results (mode, distinct counts under EXCLUDE, Python
aggregates with ``retract``).

Frame starts and ends only move forward within a partition, so each row enters and leaves the
structure once: O(n) add/remove calls in all. EXCLUDE holes are removed before the result is read
and added back after, O(hole size) per row.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from overwindow.physical.bounds import Frames


def slide(
    frames: Frames,
    add: Callable[[int, int], None],
    remove: Callable[[int, int], None],
    result: Callable[[], object],
    reset: Callable[[], None],
) -> list:
    """Call ``add(lo, hi)``/``remove(lo, hi)`` on sorted row ranges so that before each
    ``result()`` the structure holds exactly that row's frame; ``reset()`` empties it."""
    starts = frames.start.tolist()
    ends = frames.end.tolist()
    holes = [
        (frames.parts[j][1].tolist(), frames.parts[j + 1][0].tolist()) for j in range(len(frames.parts) - 1)
    ]
    out = []
    cs = ce = 0
    for r in range(len(starts)):
        s, e = starts[r], ends[r]
        if s >= ce or s < cs or e < ce:
            reset()
            cs = ce = s
        if e > ce:
            add(ce, e)
            ce = e
        if s > cs:
            remove(cs, s)
            cs = s
        cut = [(hs[r], he[r]) for hs, he in holes if he[r] > hs[r]]
        for lo, hi in cut:
            remove(lo, hi)
        out.append(result())
        for lo, hi in cut:
            add(lo, hi)
    return out


def frame_values(values: np.ndarray, frames: Frames, row: int) -> np.ndarray:
    """The values of one row's frame, its parts concatenated."""
    pieces = [values[s[row] : e[row]] for s, e in frames.parts]
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
