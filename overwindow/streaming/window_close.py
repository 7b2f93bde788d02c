"""Emit on window close: each row is emitted once, final, when the watermark has released it and its
whole frame is known; rows no future frame can reach are dropped.

Per partition (one ``groupBy`` key) the state holds ``released`` rows, sorted by (ORDER BY key, row
identity) — the history future frames still reach plus released rows waiting for their FOLLOWING
rows — and ``pending`` rows the watermark has not released yet. A step:

1. drops late rows (key at or below the watermark already released; NULL keys) and counts them;
2. releases pending rows whose key is at or below the watermark, in order (the sort buffer);
3. finds the released rows whose frames are complete — ``n FOLLOWING`` rows and ``lead`` need n rows
   after them, ``GROUPS n FOLLOWING`` n peer groups, ``RANGE x FOLLOWING`` a watermark at or past
   key + x — evaluates every call on the buffer with the batch kernels and emits those rows;
4. prunes the rows before the earliest position any future frame reaches (ROWS/GROUPS/RANGE
   ``PRECEDING`` distances, ``lag`` offsets; ``UNBOUNDED PRECEDING`` keeps everything), at a peer-group
   boundary, counting pruned rows and peer groups so row_number/rank/dense_rank continue.

Cost per step: O(b log b) for a buffer of b rows (frame reach plus unemitted rows).

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> m = WindowClose(OverWindow("lag(x) OVER (ORDER BY t) AS p"), pa.schema([("t", pa.int64()), ("x", pa.int64())]))
>>> r = m.step(None, pa.table({"t": [1, 2, 3], "x": [10, 20, 30]}), watermark=2)
>>> r.output.to_pydict()
{'t': [1, 2], 'x': [10, 20], 'p': [None, 10]}
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.evaluate import evaluate_calls, project
from overwindow.logical.call import WindowCall
from overwindow.logical.frame import BoundKind, FrameUnit
from overwindow.logical.functions import Kind
from overwindow.physical.bounds import key_numbers, shift_key
from overwindow.physical.expressions import evaluate_expr, resolve_column
from overwindow.physical.values import Values
from overwindow.spec import OverWindow
from overwindow.streaming.state import decode, encode

STATE_KIND = "window_close"
_RANK_OFFSETS = {"row_number": "rows", "rank": "rows", "dense_rank": "groups"}


@dataclass
class Step:
    """What one step produced: the new state bytes, the emitted rows, the earliest watermark at which
    this partition can emit without new rows (None: only new rows can help), late rows dropped now."""

    state: bytes
    output: pa.Table
    wakeup: float | int | None
    late_rows: int = 0
    counters: dict = field(default_factory=dict)


class WindowClose:
    """The emit-on-window-close machine for one spec and input schema; stateless between calls."""

    def __init__(self, spec: OverWindow, schema: pa.Schema):
        if spec.emit != "on_window_close":
            raise WindowSpecError("WindowClose runs specs with emit='on_window_close'")
        self.spec = spec
        self.schema = schema
        empty = schema.empty_table()
        self.order = resolve_column(empty, spec.order_column)
        kind = Values(empty.column(self.order)).kind
        if kind not in ("int", "float", "date", "timestamp"):
            raise WindowSpecError(f"ORDER BY {self.order} must be a TIMESTAMP, DATE or number to follow a watermark, "
                                  f"not {schema.field(self.order).type}")
        self.key_kind = kind
        identity = spec.row_key or tuple(schema.names)
        self.sort_keys = [(self.order, "ascending")] + [
            (resolve_column(empty, c), "ascending") for c in identity if c != self.order]
        self.expressions = list(spec.expressions)
        self.output_schema = project(empty, self.expressions, evaluate_calls(empty, self.expressions)).schema

    # -- state -------------------------------------------------------------------------------

    def _load(self, state: bytes | None):
        """(released rows, pending rows, their ORDER BY key numbers, meta) of a partition's state."""
        if state is None:
            meta = {"n_released": 0, "emitted": 0, "pruned_rows": 0, "pruned_groups": 0,
                    "released_upto": None, "late_rows": 0}
            empty = self.schema.empty_table()
            return empty, empty, self._keys(empty), self._keys(empty), meta
        tables, meta = decode(state, STATE_KIND, oldest=1)  # formats 1 and 2 hold the same tables
        rows = tables["rows"]
        n = meta["n_released"]
        keys = self._keys(rows)  # one pass for both parts
        return rows.slice(0, n), rows.slice(n), keys[:n], keys[n:], meta

    def _save(self, released: pa.Table, pending: pa.Table, meta: dict) -> bytes:
        meta = dict(meta, n_released=released.num_rows)
        return encode({"rows": pa.concat_tables([released, pending]).combine_chunks()}, meta, STATE_KIND)

    # -- the step ----------------------------------------------------------------------------

    def step(self, state: bytes | None, rows: pa.Table | None, watermark=None) -> Step:
        """Feed new rows and the current watermark (in the ORDER BY key's numbers: microseconds
        since the epoch for TIMESTAMP/DATE keys). Returns the rows whose windows closed."""
        # the ORDER BY key as numbers, computed once per step and carried beside the rows
        released, pending, rel_k, pend_k, meta = self._load(state)
        late = 0
        if rows is not None and rows.num_rows:
            rows = rows.select(self.schema.names)
            if not rows.schema.equals(self.schema):
                rows = rows.cast(self.schema)
            keys = Values(rows.column(self.order))
            new_k = key_numbers(keys)
            ok = keys.valid.copy()
            if meta["released_upto"] is not None:
                ok &= new_k > meta["released_upto"]
            late = int((~ok).sum())
            pending = pa.concat_tables([pending, rows.filter(pa.array(ok)) if late else rows])
            pend_k = np.concatenate([pend_k, new_k[ok]])
        meta["late_rows"] += late
        if watermark is not None and (meta["released_upto"] is None or watermark > meta["released_upto"]):
            released, pending, rel_k, pend_k = self._release(released, pending, rel_k, pend_k, watermark)
            meta["released_upto"] = watermark
        out, upto = self._emit(released, rel_k, meta)
        released, rel_k, meta = self._prune(released, rel_k, meta, upto)
        return Step(self._save(released, pending, meta), out, self._wakeup(rel_k, pend_k, meta), late,
                    {"state_rows": released.num_rows + pending.num_rows, "late_rows_total": meta["late_rows"]})

    def _keys(self, table: pa.Table) -> np.ndarray:
        return key_numbers(Values(table.column(self.order)))

    def _release(self, released, pending, rel_k, pend_k, watermark):
        """Move pending rows at or below the watermark to the end of the released rows, in order."""
        if pending.num_rows == 0:
            return released, pending, rel_k, pend_k
        ready = pend_k <= watermark
        now = np.flatnonzero(ready)  # positions in pending, put in order below, then taken once
        if not len(now):
            return released, pending, rel_k, pend_k
        now_k = pend_k[now]
        if not _increasing(now_k):
            # the keys alone decide the order when they are distinct (key_numbers keeps the
            # ORDER BY order, so keys strictly increasing after the sort are distinct values);
            # ties (or NaN) go to the full sort by (ORDER BY key, row identity)
            order = np.argsort(now_k, kind="stable")
            if not _increasing(now_k[order]):
                order = pc.sort_indices(pending.take(now), sort_keys=self.sort_keys).to_numpy()
            now, now_k = now[order], now_k[order]
        released = pa.concat_tables([released, pending.take(now)]).combine_chunks()
        rest = np.flatnonzero(~ready)
        return released, pending.take(rest), np.concatenate([rel_k, now_k]), pend_k[rest]

    def _emit(self, released: pa.Table, keys: np.ndarray, meta: dict) -> tuple[pa.Table, int]:
        start = meta["emitted"]
        n = released.num_rows
        if start >= n:
            return self.output_schema.empty_table(), start
        groups = peer_groups(keys)
        upto = n
        for call in self.spec.calls:
            upto = min(upto, self._complete_upto(call, released, keys, groups, start, meta["released_upto"]))
        if upto <= start:
            return self.output_schema.empty_table(), start
        results = evaluate_calls(released, self.expressions)
        window = slice(start, upto)
        for call in self.spec.calls:
            shift = _RANK_OFFSETS.get(call.function)
            if shift is not None:  # positions counted before the pruned rows
                add = meta["pruned_rows"] if shift == "rows" else meta["pruned_groups"]
                results[call.alias] = pc.add(results[call.alias], add)
        part = released.slice(window.start, window.stop - window.start)
        results = {k: v.slice(window.start, window.stop - window.start) for k, v in results.items()}
        meta["emitted"] = upto
        return project(part, self.expressions, results), upto

    def _complete_upto(self, call: WindowCall, released, keys, groups, start, watermark) -> int:
        """First released position (>= start) whose frame is not complete yet for this call."""
        n = len(keys)
        ahead_rows = ahead_groups = 0
        range_ahead = None
        if call.function in ("lead", "lag"):
            off = call.params[0] if call.params else 1
            ahead_rows = off if call.function == "lead" else -off
            if call.ignore_nulls and ahead_rows > 0:
                valid = evaluate_expr(call.args[0], released).is_valid().to_numpy(zero_copy_only=False)
                after = np.cumsum(valid[::-1])[::-1] - valid  # non-NULL rows after each position
                ok = after >= ahead_rows
                return _first_false(ok, start)
        elif call.info.kind in (Kind.VALUE, Kind.AGGREGATE):
            end = call.frame.end
            if end.kind is BoundKind.FOLLOWING:
                if call.frame.unit is FrameUnit.ROWS:
                    ahead_rows = end.offset
                elif call.frame.unit is FrameUnit.GROUPS:
                    ahead_groups = end.offset
                else:
                    range_ahead = end.offset
        if ahead_rows > 0:
            return max(start, n - ahead_rows)
        if ahead_groups > 0:
            last_group = groups[-1]
            ok = groups + ahead_groups <= last_group
            return _first_false(ok, start)
        if range_ahead is not None:
            reach = shift_key(keys, self.key_kind, range_ahead, +1)
            ok = reach <= watermark
            return _first_false(ok, start)
        return n

    def _prune(self, released: pa.Table, keys: np.ndarray, meta: dict, upto: int):
        n = released.num_rows
        if n == 0:
            return released, keys, meta
        groups = peer_groups(keys)
        keep = upto
        for call in self.spec.calls:
            keep = min(keep, self._reach_back(call, released, keys, groups, upto, meta["released_upto"]))
        keep = max(keep, 0)
        if keep < n:  # never split a peer group: RANGE peers and rank counters need it whole
            keep = int(np.searchsorted(groups, groups[keep], side="left"))
        if keep == 0:
            return released, keys, meta
        meta = dict(meta, emitted=meta["emitted"] - keep, pruned_rows=meta["pruned_rows"] + keep,
                    pruned_groups=meta["pruned_groups"] + int(groups[keep - 1]) + 1)
        return released.slice(keep).combine_chunks(), keys[keep:], meta

    def _reach_back(self, call: WindowCall, released, keys, groups, u, watermark) -> int:
        """Earliest released position a frame of any row at or after position u can reach."""
        n = len(keys)
        if call.function == "lag":
            off = call.params[0] if call.params else 1
            if off <= 0:
                return u
            if call.ignore_nulls:
                valid = evaluate_expr(call.args[0], released).is_valid().to_numpy(zero_copy_only=False)
                nonnull = np.flatnonzero(valid[:u])
                return int(nonnull[-off]) if len(nonnull) >= off else 0
            return u - off
        if call.info.kind not in (Kind.VALUE, Kind.AGGREGATE):
            return u
        start = call.frame.start
        unit = call.frame.unit
        if start.kind is BoundKind.UNBOUNDED_PRECEDING:
            return 0
        if start.kind is not BoundKind.PRECEDING:
            return u if unit is FrameUnit.ROWS else _group_start(groups, u)
        if unit is FrameUnit.ROWS:
            return u - start.offset
        if unit is FrameUnit.GROUPS:
            g = groups[u] if u < n else groups[-1] + 1
            return int(np.searchsorted(groups, g - start.offset, side="left"))
        anchor = keys[u] if u < n else watermark  # a future row's key is above the watermark
        lowest = shift_key(np.array([anchor]), self.key_kind, start.offset, -1)[0]
        return int(np.searchsorted(keys, lowest, side="left"))

    def _wakeup(self, rel_k, pend_k, meta):
        """The smallest watermark at which this partition can emit again without new rows."""
        times = []
        if len(pend_k):
            times.append(pend_k.min())
        start = meta["emitted"]
        if start < len(rel_k):
            key = rel_k[start:start + 1]
            for call in self.spec.calls:
                end = call.frame.end
                if call.info.kind in (Kind.VALUE, Kind.AGGREGATE) and call.frame.unit is FrameUnit.RANGE \
                        and end.kind is BoundKind.FOLLOWING:
                    times.append(shift_key(key, self.key_kind, end.offset, +1)[0])
        return min(times).item() if times else None


def _increasing(keys: np.ndarray) -> bool:
    """Whether ``keys`` strictly increase (False with a NaN)."""
    return len(keys) < 2 or bool((keys[1:] > keys[:-1]).all())


def _first_false(ok: np.ndarray, start: int) -> int:
    """The first position at or after ``start`` where ``ok`` is False (len(ok) if none)."""
    bad = np.flatnonzero(~ok[start:])
    return start + int(bad[0]) if len(bad) else len(ok)


def peer_groups(keys: np.ndarray) -> np.ndarray:
    """Peer-group number (0, 1, ...) of each row of a sorted key column. O(n).

    >>> peer_groups(np.array([3, 3, 5, 7, 7])).tolist()
    [0, 0, 1, 2, 2]
    """
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.cumsum(keys[1:] != keys[:-1])))


def _group_start(groups: np.ndarray, u: int) -> int:
    if u >= len(groups):
        return u
    return int(np.searchsorted(groups, groups[u], side="left"))
