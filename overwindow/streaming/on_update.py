"""Emit on update: every micro-batch of inserts, deletes and updates yields a changelog of exactly the
rows whose window results changed (upserts) and the rows that went away (deletes).

Per partition the state holds the live rows, sorted by (ORDER BY keys, row identity). A step:

1. applies the changes (an update that moves the ORDER BY key is a delete plus an insert of the same
   identity) and notes each change's position, in the old rows and in the new;
2. for every change position c, walks symmetrically: back to ``first_curr_row``, the first row whose
   frame (of any call) can reach c, and forward to ``last_curr_row``, the last such row. ROWS frames
   of all calls merge into one super-frame by offsets; RANGE frames are found by value
   (``searchsorted``), GROUPS frames by peer-group numbers. Ranking functions reach to the end of
   the partition (row_number, rank, dense_rank) or all of it (ntile, percent_rank, cume_dist);
3. merges overlapping ranges, recomputes only the rows in them with the batch kernels on the slice
   ``[first_frame_start, last_frame_end)`` of the old rows and of the new rows, and emits the rows
   whose values differ, plus deletes;
4. with a watermark on an ascending ORDER BY column, evicts rows no frame of a row at or above the
   watermark can reach; later changes below that horizon are dropped as late.

Recomputed rows: O(changes x frame reach) for bounded frames. The bookkeeping around them (decoding
the state, matching identities) is vectorised O(partition).

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> m = OnUpdate(OverWindow("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s", emit="on_update", rowKey="id"),
...              pa.schema([("id", pa.int64()), ("t", pa.int64()), ("x", pa.int64())]))
>>> r = m.step(None, pa.table({"id": [1, 2], "t": [1, 2], "x": [10, 20]}))
>>> r.output.select(["id", "s", "_change"]).to_pylist()
[{'id': 1, 's': 10, '_change': 'upsert'}, {'id': 2, 's': 30, '_change': 'upsert'}]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.evaluate import evaluate_calls, project
from overwindow.logical.frame import FrameUnit
from overwindow.logical.functions import Kind
from overwindow.physical.bounds import frame_bounds, key_numbers
from overwindow.physical.expressions import evaluate_expr, resolve_column
from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values
from overwindow.spec import OverWindow
from overwindow.streaming.state import decode, encode

STATE_KIND = "on_update"
CHANGE = "_change"
ROW_ID = "_row_id"
_ID = "__ow_id"  # 64-bit row identity kept in the state
_WHOLE = {"ntile", "percent_rank", "cume_dist"}
_TO_END = {"row_number", "rank", "dense_rank"}
OPS = {"insert": "insert", "i": "insert", "+i": "insert", "c": "insert", "create": "insert", "r": "insert",
       "delete": "delete", "d": "delete", "-d": "delete",
       "update": "update", "u": "update", "+u": "update", "-u": "skip"}


@dataclass
class Step:
    state: bytes
    output: pa.Table
    wakeup: object = None
    late_rows: int = 0
    counters: dict = field(default_factory=dict)


class OnUpdate:
    """The emit-on-update machine for one spec and input schema; stateless between calls."""

    def __init__(self, spec: OverWindow, schema: pa.Schema, watermarked: bool = False):
        if spec.emit != "on_update":
            raise WindowSpecError("OnUpdate runs specs with emit='on_update'")
        self.spec = spec
        empty = schema.empty_table()
        self.op = resolve_column(empty, spec.op_column) if spec.op_column else None
        self.schema = pa.schema([f for f in schema if f.name != self.op])
        self.row_key = tuple(resolve_column(empty, c) for c in spec.row_key) if spec.row_key else None
        orders = {c.order_by for c in spec.calls}
        if len(orders) > 1:
            raise WindowSpecError("emit on update needs every call to share one ORDER BY; split calls with different "
                                  "ORDER BY into separate overWindow views")
        (self.order_by,) = orders
        self.order_cols = [resolve_column(empty, k.expr.columns()[0]) if len(k.expr.columns()) == 1 else None
                           for k in self.order_by]
        self.expressions = list(spec.expressions)
        data = self.schema.empty_table()
        results = project(data, self.expressions, evaluate_calls(data, self.expressions))
        extra = [] if self.row_key else [pa.field(ROW_ID, pa.int64())]
        self.output_schema = pa.schema(list(results.schema) + extra + [pa.field(CHANGE, pa.string())])
        # with a watermark on the single ascending ORDER BY column, rows far enough behind it are
        # evicted; functions of the whole partition (ntile, ...) keep every row
        self.evicts = watermarked and len(self.order_by) == 1 and not self.order_by[0].descending \
            and self.order_cols[0] is not None and not any(c.function in _WHOLE for c in spec.calls)

    # -- identity and order --------------------------------------------------------------------

    def _ids(self, rows: pa.Table) -> np.ndarray:
        """A deterministic 64-bit identity per row: of the row key, else of the whole row plus its
        ordinal among identical rows of this batch."""
        import pandas as pd

        cols = self.row_key or tuple(self.schema.names)
        frame = rows.select(list(cols)).to_pandas()
        h = pd.util.hash_pandas_object(frame, index=False).to_numpy().astype(np.int64)
        if not self.row_key:
            h = h ^ (pd.Series(h).groupby(h).cumcount().to_numpy().astype(np.int64) * np.int64(0x9E3779B97F4A7C15 - 2**64))
        return h

    def _sorted(self, rows: pa.Table) -> pa.Table:
        """Rows in SQL order of the calls' ORDER BY, ties broken by the row key (else all columns),
        with the batch evaluator's sort, so NaN and NULL order the same way."""
        if rows.num_rows <= 1:
            return rows
        keys = [(Values(evaluate_expr(k.expr, rows)), k.descending, k.nulls_first) for k in self.order_by]
        keys += [(Values(rows.column(c)), False, True) for c in (self.row_key or self.schema.names)]
        keys.append((Values(rows.column(_ID)), False, True))
        return rows.take(pa.array(Layout.build([], keys, rows.num_rows).perm))

    # -- state ---------------------------------------------------------------------------------

    def _load(self, state):
        if state is None:
            return pa.schema(list(self.schema) + [pa.field(_ID, pa.int64())]).empty_table(), \
                {"evicted_rows": 0, "evicted_groups": 0, "horizon": None, "late_rows": 0}
        tables, meta = decode(state, STATE_KIND)
        return tables["rows"], meta

    # -- the step ------------------------------------------------------------------------------

    def step(self, state: bytes | None, rows: pa.Table | None, watermark=None) -> Step:
        old, meta = self._load(state)
        late = bad = 0
        deletes = np.zeros(0, dtype=np.int64)
        inserts = old.slice(0, 0)
        if rows is not None and rows.num_rows:
            inserts, deletes, late, bad = self._changes(rows, meta)
        old_ids = old.column(_ID).to_numpy()
        gone = np.isin(old_ids, np.concatenate([deletes, inserts.column(_ID).to_numpy()]))
        new = self._sorted(pa.concat_tables([old.filter(pa.array(~gone)), inserts]).combine_chunks())
        removed_ids = np.setdiff1d(deletes, inserts.column(_ID).to_numpy())
        removed_ids = removed_ids[np.isin(removed_ids, old_ids)]
        # change positions: where each touched identity sits (or sat) in the old and new orders
        touched = np.concatenate([old_ids[gone], inserts.column(_ID).to_numpy()])
        new_ids = new.column(_ID).to_numpy()
        pos_new = _positions_of(new_ids, touched)
        pos_old = _positions_of(old_ids, touched)
        out_parts = []
        recomputed = 0
        new_reach = None
        if len(touched):
            old_reach, new_reach = self._frames(old), self._frames(new)
            # every row whose frame (old or new) reaches a change, as identities still alive
            hit = np.concatenate([old_ids[_in_ranges(old_reach.affected(pos_old), old.num_rows)],
                                  new_ids[_in_ranges(new_reach.affected(pos_new), new.num_rows)]])
            new_rows = np.flatnonzero(np.isin(new_ids, hit))
            old_rows = np.flatnonzero(np.isin(old_ids, new_ids[new_rows]))
            new_vals, n_new = self._recompute(new, new_reach, _runs(new_rows), meta)
            old_vals, n_old = self._recompute(old, old_reach, _runs(old_rows), meta)
            recomputed = n_new + n_old
            out_parts.append(self._diff(new_vals, old_vals))
        if len(removed_ids):
            out_parts.append(self._deleted(old, removed_ids))
        meta["late_rows"] += late
        new, meta = self._evict(new, meta, watermark, new_reach)
        outputs = [p for p in out_parts if p is not None and p.num_rows]
        output = pa.concat_tables(outputs) if outputs else self.output_schema.empty_table()
        data = encode({"rows": new}, meta, STATE_KIND)
        return Step(data, output, None, late,
                    {"recomputed_rows": recomputed, "state_rows": new.num_rows, "bad_rows": bad,
                     "late_rows_total": meta["late_rows"]})

    def _changes(self, rows: pa.Table, meta):
        """(rows to insert, identities to delete, late rows, bad rows) from one batch of input."""
        ops = np.full(rows.num_rows, "insert", dtype=object)
        bad = 0
        if self.op is not None:
            raw = rows.column(self.op).to_pylist()
            ops = np.array([OPS.get(str(o).lower(), "bad") if o is not None else "bad" for o in raw], dtype=object)
            bad = int((ops == "bad").sum())
        data = rows.select(self.schema.names).cast(self.schema)
        ids = self._ids(data)
        late = np.zeros(rows.num_rows, dtype=bool)
        if self.evicts:
            keys = Values(evaluate_expr(self.order_by[0].expr, data))
            null_key = ~keys.valid  # a NULL event time has no place relative to the watermark
            bad += int((null_key & (ops != "bad")).sum())
            ops = np.where(null_key, "bad", ops)
            if meta["horizon"] is not None:
                late = keys.valid & (key_numbers(keys) < meta["horizon"])
        keep = (ops != "bad") & (ops != "skip") & ~late
        # the last change of an identity in a batch wins
        last = np.zeros(rows.num_rows, dtype=bool)
        idx = np.flatnonzero(keep)
        if len(idx):
            _, first_from_end = np.unique(ids[idx][::-1], return_index=True)
            last[idx[::-1][first_from_end]] = True
        ins = last & (ops != "delete")
        dels = last & (ops != "insert")
        inserts = data.filter(pa.array(ins)).append_column(_ID, pa.array(ids[ins]))
        return inserts, ids[dels], int(late.sum()), bad

    # -- the symmetric frame finder --------------------------------------------------------------

    def _frames(self, table: pa.Table) -> "_Reach":
        return _Reach(table, self.spec.calls, self.order_by)

    def _recompute(self, table: pa.Table, reach: "_Reach", ranges, meta) -> tuple[pa.Table | None, int]:
        """Results of the rows in ``ranges``, computed on the slices ``[first_frame_start,
        last_frame_end)`` their frames need."""
        if not ranges:
            return None, 0
        pieces, count = [], 0
        for lo, hi in ranges:
            fs, fe = reach.span(lo, hi)
            part = table.slice(fs, fe - fs)
            results = evaluate_calls(part, self.expressions)
            for call in self.spec.calls:
                if call.function in _TO_END:  # positions count from the partition's first row
                    add = fs + meta["evicted_rows"] if call.function != "dense_rank" else \
                        int(reach.groups[fs]) + meta["evicted_groups"]
                    results[call.alias] = pc.add(results[call.alias], add)
            pieces.append(project(part, self.expressions, results).slice(lo - fs, hi - lo))
            count += hi - lo
        return pa.concat_tables(pieces), count

    def _diff(self, new_vals: pa.Table | None, old_vals: pa.Table | None) -> pa.Table | None:
        if new_vals is None:
            return None
        names = list(self.spec.aliases)
        new_ids = new_vals.column(_ID).to_numpy()
        changed = np.ones(len(new_ids), dtype=bool)
        if old_vals is not None and old_vals.num_rows:
            old_ids = old_vals.column(_ID).to_numpy()
            order = np.argsort(old_ids)
            at = np.searchsorted(old_ids[order], new_ids)
            at = np.minimum(at, len(old_ids) - 1)
            found = old_ids[order][at] == new_ids
            match = order[at]
            same = found.copy()
            for name in names:
                a = new_vals.column(name)
                b = old_vals.column(name).take(pa.array(match))
                same &= _equal(a, b)
            # the row's own columns may have changed too (an update that keeps the key)
            for name in self.schema.names:
                same &= _equal(new_vals.column(name), old_vals.column(name).take(pa.array(match)))
            changed = ~same
        out = new_vals.filter(pa.array(changed))
        return self._finish(out, "upsert")

    def _deleted(self, old: pa.Table, ids: np.ndarray) -> pa.Table:
        rows = old.filter(pa.array(np.isin(old.column(_ID).to_numpy(), ids)))
        for e in self.expressions:
            rows = rows.append_column(e.alias, pa.nulls(rows.num_rows, self.output_schema.field(e.alias).type))
        return self._finish(rows, "delete")

    def _finish(self, rows: pa.Table, change: str) -> pa.Table:
        if not self.row_key:
            rows = rows.append_column(ROW_ID, rows.column(_ID))
        rows = rows.append_column(CHANGE, pa.array([change] * rows.num_rows, pa.string()))
        return rows.select(self.output_schema.names).cast(self.output_schema)

    # -- eviction ----------------------------------------------------------------------------

    def _evict(self, table: pa.Table, meta: dict, watermark, reach: "_Reach | None" = None):
        """Drop rows that no frame of a row at or above the watermark can reach."""
        if watermark is None or not self.evicts or table.num_rows == 0:
            return table, meta
        keys = Values(evaluate_expr(self.order_by[0].expr, table))
        knum = key_numbers(keys)
        valid = keys.valid
        n = table.num_rows
        # rows at or above the watermark (NULL keys sort first ascending and stay with them)
        live = np.flatnonzero(valid & (knum >= watermark))
        first_live = int(live[0]) if len(live) else n
        reach = reach or self._frames(table)
        keep_from = min(first_live, reach.span(first_live, n)[0]) if first_live < n else \
            min(n, reach.span(n - 1, n)[0] if n else 0)
        if keep_from <= 0:
            return table, meta
        meta = dict(meta, evicted_rows=meta["evicted_rows"] + keep_from,
                    evicted_groups=meta["evicted_groups"] + int(reach.groups[keep_from - 1]) + 1)
        # later changes below the first kept key are late: their frames are gone
        horizon = knum[keep_from] if keep_from < n else watermark
        meta["horizon"] = max(int(horizon) if keys.kind != "float" else float(horizon), meta["horizon"] or horizon)
        return table.slice(keep_from).combine_chunks(), meta


# -- helpers ---------------------------------------------------------------------------------------

def _positions_of(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Sorted positions in ``ids`` of the ``wanted`` identities present there (others are skipped:
    a change is found in the old rows or the new ones, and both are searched)."""
    if len(ids) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(ids)
    at = np.minimum(np.searchsorted(ids[order], wanted), len(ids) - 1)
    found = ids[order][at] == wanted
    return np.unique(order[at][found]).astype(np.int64)


class _Reach:
    """Every row's frame over one partition's sorted rows (all calls' frames united), for the
    symmetric walk: ``affected(c)`` gives [first_curr_row, last_curr_row + 1) for changes at c;
    ``span(lo, hi)`` gives [first_frame_start, last_frame_end) for rows [lo, hi). Frame starts and
    ends never decrease along the rows, so both are binary searches."""

    def __init__(self, table: pa.Table, calls, order_by):
        n = self.n = table.num_rows
        self.groups = _group_ids(table, order_by) if order_by else np.zeros(n, dtype=np.int64)
        i = np.arange(n, dtype=np.int64)
        g_start = np.searchsorted(self.groups, self.groups, side="left")
        self.start, self.end = i.copy(), i + 1  # rows whose value reaches a change at c (reach)
        self.read_lo, self.read_hi = i.copy(), i + 1  # rows a row reads (span)
        layout = None
        for call in calls:
            info = call.info
            if call.function in _WHOLE or (not call.order_by and info.kind is not Kind.OFFSET):
                s, e = np.zeros(n, np.int64), np.full(n, n, np.int64)
                self._widen(s, e, s, e)
            elif call.function in _TO_END:  # a change at or before a row moves its position
                self._widen(np.zeros(n, np.int64), i + 1, g_start, i + 1)
            elif info.kind is Kind.OFFSET:
                off = call.params[0] if call.params else 1
                back = off if call.function == "lag" else -off
                if call.ignore_nulls:
                    s = np.zeros(n, np.int64) if back > 0 else i
                    e = i + 1 if back > 0 else np.full(n, n, np.int64)
                else:
                    s, e = np.clip(np.minimum(i, i - back), 0, n), np.clip(np.maximum(i, i - back) + 1, 0, n)
                self._widen(s, e, s, e)
            else:
                if layout is None:
                    order = [(Values(evaluate_expr(k.expr, table)), k.descending, k.nulls_first) for k in order_by]
                    layout = Layout.build([], order, n)
                key = None
                if call.frame.unit is FrameUnit.RANGE and (call.frame.start.has_offset or call.frame.end.has_offset):
                    k = order_by[0]
                    key = Values(evaluate_expr(k.expr, table).take(pa.array(layout.perm)))
                    frames = frame_bounds(layout, call.frame, key, k.descending, k.nulls_first)
                else:
                    frames = frame_bounds(layout, call.frame)
                # the table is already in sort order, so the layout's permutation is the identity
                s, e = frames.start, np.maximum(frames.end, frames.start)
                self._widen(s, e, s, e)

    def _widen(self, s, e, read_s, read_e):
        np.minimum(self.start, s, out=self.start)
        np.maximum(self.end, e, out=self.end)
        np.minimum(self.read_lo, read_s, out=self.read_lo)
        np.maximum(self.read_hi, read_e, out=self.read_hi)

    def affected(self, c: np.ndarray) -> list[tuple[int, int]]:
        """Merged [first_curr_row, last_curr_row + 1) ranges for changes at positions c: the rows
        whose frame [start, end) holds c."""
        if self.n == 0 or len(c) == 0:
            return []
        start_mono = np.minimum.accumulate(self.start[::-1])[::-1]  # smallest start from i on
        end_mono = np.maximum.accumulate(self.end)  # largest end up to i
        first = np.searchsorted(end_mono, c, side="right")
        last = np.searchsorted(start_mono, c, side="right")
        return _merge(np.clip(first, 0, self.n), np.clip(last, 0, self.n))

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """[first_frame_start, last_frame_end) of rows [lo, hi), widened to whole peer groups."""
        fs = int(self.read_lo[lo:hi].min())
        fe = int(self.read_hi[lo:hi].max())
        g = self.groups
        if fs < self.n:
            fs = int(np.searchsorted(g, g[fs], side="left"))
        if fe > 0:
            fe = int(np.searchsorted(g, g[fe - 1], side="right"))
        return fs, fe


def _group_ids(table: pa.Table, order_by) -> np.ndarray:
    n = table.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    for k in order_by:
        codes = Values(evaluate_expr(k.expr, table)).codes
        change[1:] |= codes[1:] != codes[:-1]
    return np.cumsum(change)


def _runs(rows: np.ndarray) -> list[tuple[int, int]]:
    """Sorted row positions as maximal [lo, hi) runs of consecutive positions."""
    if len(rows) == 0:
        return []
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    return [(int(a[0]), int(a[-1]) + 1) for a in np.split(rows, breaks)]


def _in_ranges(ranges, n) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    for lo, hi in ranges:
        mask[lo:hi] = True
    return mask


def _merge(lo: np.ndarray, hi: np.ndarray) -> list[tuple[int, int]]:
    order = np.argsort(lo, kind="stable")
    out: list[list[int]] = []
    for a, b in zip(lo[order].tolist(), hi[order].tolist()):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _equal(a, b) -> np.ndarray:
    """Per-row equality where NULL equals NULL and NaN equals NaN."""
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    b = b.combine_chunks() if isinstance(b, pa.ChunkedArray) else b
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    eq = pc.fill_null(pc.equal(a, b), False)
    if pa.types.is_floating(a.type):
        eq = pc.or_(eq, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
    return pc.or_(eq, both_null).to_numpy(zero_copy_only=False)
