"""The released rows of one emit-on-window-close step (``WindowClose.advance``), every partition
of a state at once: the rows the watermark has released (a prefix of each partition's rows, sorted
by (partition, ORDER BY key, identity)), their positions within their partitions, their peer groups
and per-partition counts, the array views the emit and prune steps share; and per window call, the
first position whose frame is not complete yet (``complete_upto``: what the emit step may emit) and
the earliest position its frames still reach back to (``reach_back``: what the prune step keeps).
Each is a few array operations over all partitions, no Python per partition or row: O(b) for the b
rows held (``first_false``: O(b log b) at most).

>>> import numpy as np, pyarrow as pa
>>> keys, part = np.array([1, 2, 2, 5, 3]), np.array([0, 0, 0, 0, 1])
>>> ended = np.zeros(2, dtype=bool)
>>> b = Released(pa.table({"t": keys}), keys, part, {"n": np.array([4, 1])}, 2, ended)
>>> b.n_released.tolist(), b.pos.tolist(), b.local_groups.tolist()  # t <= 2 released: 1, 2, 2
([3, 0], [0, 1, 2], [0, 1, 1])
>>> b.group_start(np.array([2, 0])).tolist()[0]  # the peer group of partition 0's position 2
1
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from overwindow.evaluator import values_of
from overwindow.logical.call import WindowCall
from overwindow.logical.frame import BoundKind, FrameUnit
from overwindow.physical.key_shift import shift_key
from overwindow.streaming.stretch import peer_groups


class Released:
    """One step's rows of every partition, sorted by (partition, ORDER BY key, identity), and the
    array views of the released ones the emit and prune steps share; positions are per partition.
    ``WindowClose.advance`` builds one per step and sets ``upto``, ``live``, ``newest`` and
    ``forgotten`` on it as the step finds them."""

    def __init__(self, table, keys, part, count, watermark, ended):
        self.table, self.keys, self.part, self.count = table, keys, part, count
        # per partition: at its end (the end of input; forgotten by stateTtl): all its rows are
        # released, emitted with frames cut at its last row, and pruned
        self.watermark, self.ended, self.final = watermark, ended, bool(ended.all())
        self.upto = self.live = self.newest = self.forgotten = None
        self.valid: dict[str, np.ndarray] = {}  # per IGNORE NULLS call: its argument is not NULL
        p = len(count["n"])
        if self.final:
            released = np.ones(len(keys), dtype=bool)
        elif watermark is None:
            released = np.zeros(len(keys), dtype=bool)
        else:
            released = keys <= watermark  # a prefix of each partition: its keys are sorted
            if ended.any():
                released |= ended[part]
        self.released_mask = released
        idx = np.flatnonzero(released)
        self.released = table.take(pa.array(idx)) if len(idx) < len(keys) else table
        self.rel_part = part[idx]
        self.rel_keys = keys[idx]
        self.n_released = np.bincount(self.rel_part, minlength=p).astype(np.int64)
        self.rel_start = np.concatenate(([0], np.cumsum(self.n_released)[:-1])).astype(np.int64)
        self.pos = np.arange(len(idx)) - self.rel_start[self.rel_part]
        # peer groups numbered across the partitions; each partition's from 0 in ``local_groups``
        self.groups = peer_groups(self.rel_keys, self.rel_part)
        first = np.ones(len(idx), dtype=bool)
        np.not_equal(self.groups[1:], self.groups[:-1], out=first[1:])
        self.group_first = np.flatnonzero(first)
        self.local_groups = self.groups - self.groups[self.at(0)][self.rel_part] if len(idx) else self.groups
        last = np.maximum(self.rel_start + self.n_released - 1, 0)
        self.last_group = self.local_groups[last] if len(idx) else np.zeros(p, dtype=np.int64)

    def at(self, u: np.ndarray) -> np.ndarray:
        """The index among the released rows of each partition's position ``u`` (clipped into the
        released rows: read only where ``u`` is inside its partition)."""
        return np.clip(self.rel_start + u, 0, max(len(self.rel_part) - 1, 0))

    def group_start(self, u: np.ndarray) -> np.ndarray:
        """Per partition, the position of the first row of the peer group of position ``u`` (read
        only where ``u`` is inside its partition's released rows)."""
        return self.group_first[self.groups[self.at(u)]] - self.rel_start

    def part_total(self, flags: np.ndarray) -> np.ndarray:
        """Per partition, how many of its released rows are flagged."""
        return np.bincount(self.rel_part, weights=flags, minlength=len(self.n_released)).astype(np.int64)

    def part_cumsum(self, flags: np.ndarray) -> np.ndarray:
        """Per released row, how many flagged rows come before it in its partition."""
        run = np.cumsum(flags) - flags
        return run - run[self.at(0)][self.rel_part] if len(run) else run

    def first_false(self, ok: np.ndarray, start: np.ndarray) -> np.ndarray:
        """Per partition, the first released position at or after ``start`` where ``ok`` is False
        (the partition's released count if none)."""
        out = self.n_released.copy()
        bad = np.flatnonzero(~ok & (self.pos >= start[self.rel_part]))
        parts, first = np.unique(self.rel_part[bad], return_index=True)
        out[parts] = self.pos[bad[first]]
        return out

    def not_null(self, call: WindowCall) -> np.ndarray:
        """Whether each released row's argument of ``call`` is not NULL (evaluated once per step:
        completeness and pruning both read it)."""
        if call.alias not in self.valid:
            self.valid[call.alias] = (
                values_of(call.args[0], self.released).is_valid().to_numpy(zero_copy_only=False)
            )
        return self.valid[call.alias]

    def complete_upto(self, call: WindowCall, start: np.ndarray, key_type: pa.DataType) -> np.ndarray:
        """Per partition, the first released position (>= start) whose frame is not complete yet for
        this call: the rows it reads (``WindowCall.reads``) end n rows, n peer groups or x past its
        key ahead."""
        n = self.n_released
        back = call.rows_back
        if call.skips_nulls and back is not None:  # lag/lead IGNORE NULLS, counter_diff: non-NULL rows
            if back >= 0:
                return n
            valid = self.not_null(call)
            # non-NULL rows after
            after = self.part_total(valid)[self.rel_part] - self.part_cumsum(valid) - valid
            return self.first_false(after >= -back, start)
        end = call.reads.end
        if end.kind is not BoundKind.FOLLOWING:
            return n
        if call.reads.unit is FrameUnit.ROWS:
            return np.maximum(start, n - end.offset)
        if call.reads.unit is FrameUnit.GROUPS:
            return self.first_false(self.local_groups + end.offset <= self.last_group[self.rel_part], start)
        reach = shift_key(self.rel_keys, key_type, end.offset, +1)
        return self.first_false(reach <= self.watermark, start)

    def reach_back(self, call: WindowCall, u: np.ndarray, key_type: pa.DataType) -> np.ndarray:
        """Per partition, the earliest released position the rows read (``WindowCall.reads``) by any
        row at or after its position u can reach."""
        n = self.n_released
        inside = u < n
        back = call.rows_back
        if call.skips_nulls and back is not None:  # lag/lead IGNORE NULLS, counter_diff: non-NULL rows
            if back <= 0:
                return u
            valid = self.not_null(call)
            before = self.part_cumsum(valid)  # non-NULL rows before each released row
            # the back-th non-NULL row before u: the one with (non-NULL rows before u) - back before it
            target = np.where(inside, before[self.at(u)], self.part_total(valid)) - back
            hit = np.flatnonzero(valid & (before == target[self.rel_part]))
            out = np.zeros_like(u)
            out[self.rel_part[hit]] = self.pos[hit]
            return np.where(target >= 0, out, 0)
        start, unit = call.reads.start, call.reads.unit
        if start.kind is BoundKind.UNBOUNDED_PRECEDING:
            return np.zeros_like(u)
        if start.kind is not BoundKind.PRECEDING:
            if unit is FrameUnit.ROWS:
                return u
            return np.where(inside, self.group_start(u), u)
        if unit is FrameUnit.ROWS:
            return u - start.offset
        if unit is FrameUnit.GROUPS:
            g = np.where(inside, self.local_groups[self.at(u)], self.last_group + 1)
            return self.part_total(self.local_groups < (g - start.offset)[self.rel_part])
        # a future row's key is above the watermark
        anchor = np.where(inside, self.rel_keys[self.at(u)], self.watermark)
        lowest = shift_key(anchor, key_type, start.offset, -1)
        return self.part_total(self.rel_keys < lowest[self.rel_part])
