"""Emit on window close: each row is emitted once, final, when the watermark has released it and its
whole frame is known; rows no future frame can reach are dropped.

Per partition (one ``groupBy`` key) the state holds rows sorted by (ORDER BY key, row identity):
first the ``released`` ones — the history future frames still reach plus released rows waiting for
their FOLLOWING rows — then the ``pending`` ones the watermark has not released yet (every pending key
is above every released one). A step:

1. drops late rows (key at or below the watermark already released; NULL keys) and counts them, and
   merges the others into the pending rows, in order (the sort buffer);
2. releases the pending rows whose key is at or below the watermark: a prefix of them;
3. finds the released rows whose frames are complete — ``n FOLLOWING`` rows and ``lead`` need n rows
   after them, ``GROUPS n FOLLOWING`` n peer groups, ``RANGE x FOLLOWING`` a watermark at or past
   key + x — evaluates every call on the buffer with the batch kernels and emits those rows;
4. prunes the rows before the earliest position any future frame reaches (ROWS/GROUPS/RANGE
   ``PRECEDING`` distances, ``lag`` offsets; ``UNBOUNDED PRECEDING`` keeps everything), at a peer-group
   boundary, counting pruned rows and peer groups so row_number/rank/dense_rank continue.

Cost per step: O(b log b) for a buffer of b rows (frame reach plus unemitted rows).

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> m = WindowClose(
...     OverWindow("lag(x) OVER (ORDER BY t) AS p"), pa.schema([("t", pa.int64()), ("x", pa.int64())])
... )
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
from overwindow.physical.sorting import Layout
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
        if not kind.is_ordered_number:
            raise WindowSpecError(
                f"ORDER BY {self.order} must be a TIMESTAMP, DATE or number to follow a watermark, "
                f"not {schema.field(self.order).type}"
            )
        self.key_kind = kind
        identity = spec.row_key or tuple(schema.names)
        self.sort_keys = [(self.order, "ascending")] + [
            (resolve_column(empty, c), "ascending") for c in identity if c != self.order
        ]
        self.expressions = list(spec.expressions)
        self.output_schema = project(empty, self.expressions, evaluate_calls(empty, self.expressions)).schema

    # -- state -------------------------------------------------------------------------------

    def _load(self, state: bytes | None):
        """(rows, their ORDER BY key numbers, meta) of a partition's state."""
        if state is None:
            meta = {
                "n_released": 0,
                "emitted": 0,
                "pruned_rows": 0,
                "pruned_groups": 0,
                "released_upto": None,
                "late_rows": 0,
                "pending_sorted": True,
            }
            empty = self.schema.empty_table()
            return empty, self._keys(empty), meta
        tables, meta = decode(state, STATE_KIND, oldest=1)  # formats 1 and 2 hold the same tables
        rows = tables["rows"]
        keys = self._keys(rows)
        if not meta.get("pending_sorted"):  # written before pending rows were kept in order
            n = meta["n_released"]
            rows, keys = self._insert(rows.slice(0, n), keys[:n], n, rows.slice(n), keys[n:])
            meta["pending_sorted"] = True
        return rows, keys, meta

    def _save(self, rows: pa.Table, meta: dict) -> bytes:
        return encode({"rows": rows}, meta, STATE_KIND)

    # -- the step ----------------------------------------------------------------------------

    def step(self, state: bytes | None, rows: pa.Table | None, watermark=None) -> Step:
        """Feed new rows and the current watermark (in the ORDER BY key's numbers: microseconds
        since the epoch for TIMESTAMP/DATE keys). Returns the rows whose windows closed."""
        # the ORDER BY key as numbers, computed once per step and carried beside the rows
        table, keys, meta = self._load(state)
        late = 0
        if rows is not None and rows.num_rows:
            if rows.schema.names != self.schema.names:
                rows = rows.select(self.schema.names)
            if not rows.schema.equals(self.schema):
                rows = rows.cast(self.schema)
            new = Values(rows.column(self.order))
            new_k = key_numbers(new)
            ok = new.valid.copy() if new.array.null_count else new.valid
            if meta["released_upto"] is not None:
                ok &= new_k > meta["released_upto"]
            late = len(ok) - int(np.count_nonzero(ok))
            if late:
                rows, new_k = rows.filter(pa.array(ok)), new_k[ok]
            table, keys = self._insert(table, keys, meta["n_released"], rows, new_k)
        meta["late_rows"] += late
        if watermark is not None and (meta["released_upto"] is None or watermark > meta["released_upto"]):
            # pending keys are sorted: the rows at or below the watermark are a prefix of them
            meta["n_released"] = int(np.searchsorted(keys, watermark, side="right"))
            meta["released_upto"] = watermark
        n = meta["n_released"]
        groups = peer_groups(keys[:n])
        out, upto = self._emit(table.slice(0, n), keys[:n], groups, meta)
        table, keys, meta = self._prune(table, keys, groups, meta, upto)
        return Step(
            self._save(table, meta),
            out,
            self._wakeup(keys, meta),
            late,
            {"state_rows": table.num_rows, "late_rows_total": meta["late_rows"]},
        )

    def _keys(self, table: pa.Table) -> np.ndarray:
        return key_numbers(Values(table.column(self.order)))

    def _insert(self, table, keys, n_released, rows, new_k):
        """``rows`` (keys ``new_k``, all above the released keys) merged into the pending rows of
        ``table`` (those from ``n_released`` on), in (ORDER BY key, row identity) order."""
        if not len(new_k):
            return table, keys
        pend_k = np.concatenate([keys[n_released:], new_k])
        if _increasing(pend_k):  # in order already, as most streams mostly are: append
            return pa.concat_tables([table, rows]), np.concatenate([keys, new_k])
        pending = pa.concat_tables([table.slice(n_released), rows])
        # the keys alone decide the order when they are distinct (key_numbers keeps the ORDER BY
        # order, so keys strictly increasing after the sort are distinct values); ties (or NaN) go
        # to the full sort by (ORDER BY key, row identity)
        order = np.argsort(pend_k, kind="stable")
        if not _increasing(pend_k[order]):
            order = pc.sort_indices(pending, sort_keys=self.sort_keys).to_numpy()
        return (
            pa.concat_tables([table.slice(0, n_released), pending.take(order)]),
            np.concatenate([keys[:n_released], pend_k[order]]),
        )

    def _emit(
        self, released: pa.Table, keys: np.ndarray, groups: np.ndarray, meta: dict
    ) -> tuple[pa.Table, int]:
        start = meta["emitted"]
        n = released.num_rows
        if start >= n:
            return self.output_schema.empty_table(), start
        upto = n
        for call in self.spec.calls:
            upto = min(upto, self._complete_upto(call, released, keys, groups, start, meta["released_upto"]))
        if upto <= start:
            return self.output_schema.empty_table(), start
        # the released rows are one partition sorted by the ORDER BY key (and identity): no sort
        results = evaluate_calls(released, self.expressions, layout=Layout.in_order(groups))
        window = slice(start, upto)
        for call in self.spec.calls:
            shift = _RANK_OFFSETS.get(call.function)
            if shift is not None:  # positions counted before the pruned rows
                add = meta["pruned_rows"] if shift == "rows" else meta["pruned_groups"]
                results[call.alias] = pc.add(results[call.alias], pa.scalar(add, results[call.alias].type))
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

    def _prune(self, table: pa.Table, keys: np.ndarray, groups: np.ndarray, meta: dict, upto: int):
        """Drop the released rows before the earliest one a future frame reaches."""
        n = meta["n_released"]
        if n == 0:
            return table, keys, meta
        released = table.slice(0, n)
        keep = upto
        for call in self.spec.calls:
            keep = min(keep, self._reach_back(call, released, keys[:n], groups, upto, meta["released_upto"]))
        keep = max(keep, 0)
        if keep < n:  # never split a peer group: RANGE peers and rank counters need it whole
            keep = int(np.searchsorted(groups, groups[keep], side="left"))
        if keep == 0:
            return table, keys, meta
        meta = dict(
            meta,
            n_released=n - keep,
            emitted=meta["emitted"] - keep,
            pruned_rows=meta["pruned_rows"] + keep,
            pruned_groups=meta["pruned_groups"] + int(groups[keep - 1]) + 1,
        )
        return table.slice(keep), keys[keep:], meta

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

    def _wakeup(self, keys, meta):
        """The smallest watermark at which this partition can emit again without new rows."""
        times = []
        n = meta["n_released"]
        if n < len(keys):
            times.append(keys[n])  # the lowest pending key
        start = meta["emitted"]
        if start < n:
            key = keys[start : start + 1]
            for call in self.spec.calls:
                end = call.frame.end
                if (
                    call.info.kind in (Kind.VALUE, Kind.AGGREGATE)
                    and call.frame.unit is FrameUnit.RANGE
                    and end.kind is BoundKind.FOLLOWING
                ):
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
