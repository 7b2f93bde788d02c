"""Emit on update: every micro-batch of inserts, deletes and updates yields a changelog of exactly the
rows whose window results changed (upserts) and the rows that went away (deletes).

Per partition the state holds the live rows, sorted by (ORDER BY keys, row key or all columns,
row identity), each with its 64-bit identity hash and its current results. A step:

1. applies the changes (an update that moves the ORDER BY key is a delete plus an insert of the same
   identity): the sorted inserts are merged into the kept rows by binary search on ORDER BY codes
   (no re-sort), noting each change's position, in the old rows and in the new;
2. for every change position c, walks symmetrically: back to ``first_curr_row``, the first row whose
   frame (of any call) can reach c, and forward to ``last_curr_row``, the last such row. ROWS frames
   of all calls merge into one super-frame by offsets; RANGE frames are found by value
   (``searchsorted``), GROUPS frames by peer-group numbers. Ranking functions reach to the end of
   the partition (row_number, rank, dense_rank) or all of it (ntile, percent_rank, cume_dist);
3. merges overlapping ranges, recomputes only the rows in them with the batch kernels on the slice
   ``[first_frame_start, last_frame_end)`` of the new rows, and emits the rows whose values differ
   from the results the state holds for them (the last emitted), plus deletes;
4. with a watermark on an ascending ORDER BY column, evicts rows no frame of a row at or above the
   watermark can reach; later changes below that horizon are dropped as late.

Recomputed rows: O(changes x frame reach) for bounded frames. The frame finder works on a window
around the changes (the whole partition when a call reaches one of its ends). The rest of the
bookkeeping is a few vectorised O(partition) passes with no sort and no Python per row (decoding
and rewriting the state, one membership test of the held identities, ORDER BY codes and peer groups)
plus O(changes log partition) searches.

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
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.evaluate import evaluate_calls, project
from overwindow.logical.frame import BoundKind, FrameUnit
from overwindow.logical.functions import Kind
from overwindow.physical.bounds import frame_bounds, key_numbers, shift_key
from overwindow.physical.expressions import evaluate_expr, resolve_column
from overwindow.physical.sorting import Layout, sort_codes
from overwindow.physical.values import TypeFamily, Values
from overwindow.spec import OverWindow
from overwindow.streaming.state import decode, encode
from overwindow.streaming.window_close import peer_groups

STATE_KIND = "on_update"
CHANGE = "_change"
ROW_ID = "_row_id"
_ID = "__ow_id"  # 64-bit row identity kept in the state
_RESULT = "__ow_result."  # prefix of the held results' columns in the state
_WHOLE = {"ntile", "percent_rank", "cume_dist"}
_TO_END = {"row_number", "rank", "dense_rank"}
OPS = {
    "insert": "insert",
    "i": "insert",
    "+i": "insert",
    "c": "insert",
    "create": "insert",
    "r": "insert",
    "delete": "delete",
    "d": "delete",
    "-d": "delete",
    "update": "update",
    "u": "update",
    "+u": "update",
    "-u": "skip",
}
_OP_CODES = {"insert": 0, "delete": 1, "update": 2, "skip": 3, "bad": 4}


class NeedRows(Exception):
    """A stretch of a partition was too narrow for a change's frames: more rows are needed before it
    (``before``) and/or after it (``after``)."""

    def __init__(self, before: bool, after: bool):
        super().__init__(f"frames reach past the rows given (before: {before}, after: {after})")
        self.before, self.after = before, after


@dataclass
class Applied:
    """What ``OnUpdate.apply`` made of a stretch of held rows: the rows and results now held (sorted),
    the meta, the changelog, each held row's position before (-1: inserted), the positions whose
    results were recomputed, how many rows were evicted from the front, rows recomputed."""

    rows: pa.Table
    results: pa.Table
    meta: dict
    output: pa.Table
    from_old: np.ndarray
    recomputed_at: np.ndarray
    evicted: int
    recomputed: int


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
            raise WindowSpecError(
                "emit on update needs every call to share one ORDER BY; split calls with different "
                "ORDER BY into separate overWindow views"
            )
        (self.order_by,) = orders
        self.order_cols = [
            resolve_column(empty, k.expr.columns()[0]) if len(k.expr.columns()) == 1 else None
            for k in self.order_by
        ]
        self.expressions = list(spec.expressions)
        data = self.schema.empty_table()
        results = project(data, self.expressions, evaluate_calls(data, self.expressions))
        extra = [] if self.row_key else [pa.field(ROW_ID, pa.int64())]
        self.output_schema = pa.schema(list(results.schema) + extra + [pa.field(CHANGE, pa.string())])
        # each held row's results as last emitted, so a step compares without recomputing the old rows
        self.results_schema = pa.schema([results.schema.field(e.alias) for e in self.expressions])
        self.margin = _margin(spec.calls)
        # with a watermark on the single ascending ORDER BY column, rows far enough behind it are
        # evicted; functions of the whole partition (ntile, ...) keep every row
        self.evicts = (
            watermarked
            and len(self.order_by) == 1
            and not self.order_by[0].descending
            and self.order_cols[0] is not None
            and not any(c.function in _WHOLE for c in spec.calls)
        )

    # -- identity and order --------------------------------------------------------------------

    def _ids(self, rows: pa.Table) -> np.ndarray:
        """A deterministic 64-bit identity per row: of the row key, else of the whole row plus its
        ordinal among identical rows of this batch."""
        h = _row_hash(rows, self.row_key or tuple(self.schema.names))
        if not self.row_key:
            h = h ^ (_ordinals(h).astype(np.uint64) * _GOLDEN)
        return h.view(np.int64)

    def order_codes(self, *tables: pa.Table) -> list[np.ndarray]:
        """Per table, one int64 per row that orders as the calls' ORDER BY and is equal exactly
        between peers; computed over the tables together, so codes of different tables compare.
        O(rows) for integer and time keys, a sort of the distinct values otherwise."""
        sizes = [t.num_rows for t in tables]
        keys = []
        for k in self.order_by:
            arrays = [evaluate_expr(k.expr, t) for t in tables]
            keys.append(
                sort_codes(Values(pa.chunked_array(arrays, type=arrays[0].type)), k.descending, k.nulls_first)
            )
        codes = _fold(keys, sum(sizes))
        ends = np.cumsum(sizes).tolist()
        return [codes[e - n : e] for e, n in zip(ends, sizes)]

    def _full_order(self, table: pa.Table, codes: np.ndarray) -> np.ndarray:
        """The permutation sorting (a few) rows by ORDER BY codes, then the row key (else all
        columns), then identity: the state's order."""
        ties = [
            sort_codes(Values(table.column(c)), False, True)[0] for c in (self.row_key or self.schema.names)
        ]
        return np.lexsort([table.column(_ID).to_numpy()] + ties[::-1] + [codes])

    def merge(
        self, old: pa.Table, old_codes: np.ndarray, kept: np.ndarray, ins: pa.Table, ins_codes: np.ndarray
    ):
        """Inserts sorted, and for each the number of kept old rows (``old`` at positions ``kept``,
        in order) sorting before it. Binary searches on the ORDER BY codes; only rows tied with an
        insert on ORDER BY are compared further. O(m log n + ties) for m inserts."""
        order = self._full_order(ins, ins_codes)
        if (np.diff(order) != 1).any():  # batches often arrive in order
            ins, ins_codes = ins.take(pa.array(order)), ins_codes[order]
        kept_codes = old_codes[kept]
        lo = np.searchsorted(kept_codes, ins_codes, "left")
        hi = np.searchsorted(kept_codes, ins_codes, "right")
        before = lo.copy()
        tied = np.flatnonzero(hi > lo)
        if len(tied):
            near = _in_ranges(lo[tied], hi[tied])  # kept rows sharing an ORDER BY value with an insert
            sub = pa.concat_tables([old.take(pa.array(kept[near])), ins.take(pa.array(tied))])
            perm = self._full_order(sub, np.concatenate([kept_codes[near], ins_codes[tied]]))
            is_kept = perm < len(near)
            kept_ahead = np.cumsum(is_kept) - is_kept  # tied kept rows before each sorted row
            at = np.flatnonzero(~is_kept)
            which = tied[perm[at] - len(near)]
            # minus the tied kept rows of smaller ORDER BY values, already counted in lo
            before[which] = (
                lo[which] + kept_ahead[at] - np.searchsorted(kept_codes[near], ins_codes[which], "left")
            )
        return ins, ins_codes, before

    # -- state ---------------------------------------------------------------------------------

    def load(self, state):
        """(rows, their stored results, meta) of a partition's state (or of one chunk of it)."""
        if state is None:
            return (
                self.empty_rows(),
                self.results_schema.empty_table(),
                {"evicted_rows": 0, "evicted_groups": 0, "horizon": None, "late_rows": 0},
            )
        tables, meta = decode(state, STATE_KIND)
        held = tables["rows"].combine_chunks()
        n_data = len(self.schema) + 1
        results = pa.Table.from_arrays(held.columns[n_data:], schema=self.results_schema)
        return held.select(list(range(n_data))), results, meta

    def encode(self, rows: pa.Table, results: pa.Table, meta: dict) -> bytes:
        """State bytes of held rows and their results: one table (one IPC stream), the rows, then the
        results under a prefix. ``load`` reads them back."""
        held = pa.Table.from_arrays(
            rows.columns + results.columns,
            names=rows.column_names + [_RESULT + n for n in results.column_names],
        )
        return encode({"rows": held}, meta, STATE_KIND)

    def empty_rows(self) -> pa.Table:
        """No held rows: the input columns (without the op column) and the identity."""
        return pa.schema(list(self.schema) + [pa.field(_ID, pa.int64())]).empty_table()

    # -- the step ------------------------------------------------------------------------------

    def step(self, state: bytes | None, rows: pa.Table | None, watermark=None) -> Step:
        """Apply one batch of changes to a partition's state (None: empty); the changelog it causes.
        Kernel work O(changes x frame reach), bookkeeping O(partition) vectorised (module docstring)."""
        old, old_res, meta = self.load(state)
        ins, deletes, late, bad = self.changes(rows, meta)
        meta["late_rows"] += late
        done = self.apply(old, old_res, meta, ins, deletes, watermark)
        return Step(
            self.encode(done.rows, done.results, done.meta),
            done.output,
            None,
            late,
            {
                "recomputed_rows": done.recomputed,
                "state_rows": done.rows.num_rows,
                "bad_rows": bad,
                "late_rows_total": done.meta["late_rows"],
            },
        )

    def apply(
        self,
        old: pa.Table,
        old_res: pa.Table,
        meta: dict,
        ins: pa.Table,
        deletes: np.ndarray,
        watermark=None,
        edges: tuple[bool, bool] = (False, False),
        elsewhere: np.ndarray | None = None,
    ) -> Applied:
        """Apply inserts (rows with identities, from ``changes``) and deletes (identities) to the held
        rows ``old`` (sorted, with ``old_res``), then evict behind the watermark.

        ``old`` is the whole partition, or with ``edges`` = (rows before, rows after) a stretch of it
        (the chunked layout): then ``NeedRows`` is raised when a change's frames reach past a side
        that goes on. ``elsewhere``: identities inserted in another stretch in the same batch; their
        rows here moved rather than went, so they emit no delete."""
        old_ids = old.column(_ID).to_numpy()
        ins_ids = ins.column(_ID).to_numpy()
        # the one pass over every held identity: which rows this batch deletes or replaces
        gone = _member(old_ids, np.concatenate([deletes, ins_ids]))
        pos_old = np.flatnonzero(gone)
        old_codes, ins_codes = self.order_codes(old, ins)
        kept = np.flatnonzero(~gone)
        new, new_res, new_codes = old, old_res, old_codes
        from_old = np.arange(old.num_rows)  # each new row's old position, -1 for an insert
        pos_new = before = np.zeros(0, dtype=np.int64)
        if len(pos_old) or ins.num_rows:
            ins, ins_codes, before = self.merge(old, old_codes, kept, ins, ins_codes)
            src, pos_new = _interleave(len(kept), before)
            from_old = np.append(kept, -1)[np.minimum(src, len(kept))]
            take = np.where(from_old >= 0, from_old, old.num_rows + src - len(kept))
            new = pa.concat_tables([old, ins]).take(pa.array(take)).combine_chunks()
            new_res = old_res.take(pa.array(from_old, mask=from_old < 0))
            new_codes = np.concatenate([old_codes, ins_codes])[take]
        replaced = pos_old[_member(old_ids[pos_old], ins_ids)]
        removed = np.setdiff1d(pos_old, replaced, assume_unique=True)
        if elsewhere is not None and len(removed):
            removed = removed[~_member(old_ids[removed], elsewhere)]
        out_parts = []
        recomputed = 0
        new_reach = None
        new_rows = np.zeros(0, dtype=np.int64)
        if len(pos_old) or len(pos_new):
            moved = np.zeros(0, dtype=np.int64)
            if len(pos_old):  # rows whose old frame held a row that moved or went
                was = _in_ranges(*self._frames(old, old_codes, pos_old, edges).affected(pos_old))
                was = was[~gone[was]]
                rank = was - np.searchsorted(pos_old, was)  # among the kept rows
                moved = rank + np.searchsorted(before, rank, "right")
            new_reach = self._frames(new, new_codes, np.union1d(pos_new, moved), edges)
            new_rows = np.union1d(_in_ranges(*new_reach.affected(pos_new)), moved)
        if len(new_rows):
            new_vals, recomputed = self._recompute(new, new_reach, _runs(new_rows), meta)
            # compared with what the state held for the same identity: its old row, or the row an
            # update replaced
            prev = from_old[new_rows]
            fresh = np.flatnonzero(prev < 0)
            moved = np.zeros(len(prev), dtype=bool)
            if len(fresh) and len(replaced):
                at = _find(old_ids[replaced], new_vals.column(_ID).to_numpy()[fresh])
                prev[fresh[at >= 0]] = replaced[at[at >= 0]]
                moved[fresh[at >= 0]] = True
            out_parts.append(self._diff(new_vals, old, old_res, prev, moved))
            vals = new_vals.select(self.results_schema.names)
            new_res = _scatter(
                new_res,
                new_rows,
                vals if vals.schema.equals(self.results_schema) else vals.cast(self.results_schema),
            )
        if len(removed):
            out_parts.append(self._deleted(old.take(pa.array(removed))))
        new, new_res, meta, evicted = self._evict(new, new_res, new_codes, meta, watermark, new_reach, edges)
        outputs = [p for p in out_parts if p is not None and p.num_rows]
        output = pa.concat_tables(outputs) if outputs else self.output_schema.empty_table()
        return Applied(
            new,
            new_res,
            meta,
            output,
            from_old[evicted:],
            new_rows[new_rows >= evicted] - evicted,
            evicted,
            recomputed,
        )

    def changes(self, rows: pa.Table | None, meta):
        """(rows to insert with their identities, identities to delete, late rows, bad rows) from one
        batch of input (None: no rows); the last change of an identity in the batch wins."""
        if rows is None or rows.num_rows == 0:
            return self.empty_rows(), np.zeros(0, dtype=np.int64), 0, 0
        insert, delete, bad_op, skip = (
            _OP_CODES["insert"],
            _OP_CODES["delete"],
            _OP_CODES["bad"],
            _OP_CODES["skip"],
        )
        ops = np.full(rows.num_rows, insert, dtype=np.int8)
        bad = 0
        if self.op is not None:
            raw = rows.column(self.op).to_pylist()
            ops = np.array(
                [_OP_CODES[OPS.get(str(o).lower(), "bad")] if o is not None else bad_op for o in raw],
                dtype=np.int8,
            )
            bad = int((ops == bad_op).sum())
        data = rows.select(self.schema.names)
        if not data.schema.equals(self.schema):
            data = data.cast(self.schema)
        ids = self._ids(data)
        late = np.zeros(rows.num_rows, dtype=bool)
        if self.evicts:
            keys = Values(evaluate_expr(self.order_by[0].expr, data))
            if data.column(
                self.order_cols[0]
            ).null_count:  # a NULL event time has no place relative to the watermark
                null_key = ~keys.valid
                bad += int((null_key & (ops != bad_op)).sum())
                ops = np.where(null_key, bad_op, ops)
            if meta["horizon"] is not None:
                late = keys.valid & (key_numbers(keys) < meta["horizon"])
        keep = (ops != bad_op) & (ops != skip) & ~late
        # the last change of an identity in a batch wins
        last = np.zeros(rows.num_rows, dtype=bool)
        idx = np.flatnonzero(keep)
        kept = np.sort(ids[idx])
        if (kept[1:] == kept[:-1]).any():  # some identity changes twice (a plain sort finds out fastest)
            _, first_from_end = np.unique(ids[idx][::-1], return_index=True)
            last[idx[::-1][first_from_end]] = True
        else:
            last[idx] = True
        ins = last & (ops != delete)
        dels = last & (ops != insert)
        inserts = (data if ins.all() else data.filter(pa.array(ins))).append_column(_ID, pa.array(ids[ins]))
        return inserts, ids[dels], int(late.sum()), bad

    # -- the symmetric frame finder --------------------------------------------------------------

    def _frames(
        self,
        table: pa.Table,
        codes: np.ndarray,
        around: np.ndarray,
        edges: tuple[bool, bool] = (False, False),
    ) -> _Reach:
        """The frame finder over a window around the positions ``around`` (sorted) wide enough for
        them (``_Reach.holds``): first ``_margin`` rows either side, four times wider on each miss;
        all of ``table`` when frames are unbounded. With ``edges`` (the partition goes on before /
        after ``table``) and not even all of ``table`` wide enough: ``NeedRows``. O(window) plus one
        O(n) pass for the peer groups."""
        groups = peer_groups(codes)
        n, margin = len(groups), self.margin
        while margin is not None and len(around) and margin < n:
            lo = max(0, int(around[0]) - margin)
            hi = min(n, int(around[-1]) + margin + 1)
            lo = int(np.searchsorted(groups, groups[lo], "left"))  # whole peer groups
            hi = int(np.searchsorted(groups, groups[hi - 1], "right"))
            reach = _Reach(table, self.spec.calls, self.order_by, groups, lo, hi, edges)
            if reach.holds(around):
                return reach
            margin *= 4
        reach = _Reach(table, self.spec.calls, self.order_by, groups, edges=edges)
        short = reach.gaps(around)
        if any(short):
            raise NeedRows(*short)
        return reach

    def _recompute(self, table: pa.Table, reach: _Reach, ranges, meta) -> tuple[pa.Table | None, int]:
        """Results of the rows in ``ranges``, computed on the slices ``[first_frame_start,
        last_frame_end)`` their frames need; ranges whose slices overlap or lie within ``_GAP``
        rows of each other share one slice (one kernel call costs more than a few more rows)."""
        if not ranges:
            return None, 0
        spans = [reach.span(lo, hi) for lo, hi in ranges]
        batches = [[0]]
        for i in range(1, len(ranges)):
            if spans[i][0] <= max(spans[j][1] for j in batches[-1]) + _GAP:
                batches[-1].append(i)
            else:
                batches.append([i])
        pieces, count = [], 0
        for batch in batches:
            fs = min(spans[i][0] for i in batch)
            fe = max(spans[i][1] for i in batch)
            part = table.slice(fs, fe - fs)
            # the rows are sorted by the calls' ORDER BY and reach.groups are its peer groups: no sort
            groups = reach.groups[fs:fe]
            layout = Layout.in_order(groups - groups[0] if len(groups) else groups)
            results = evaluate_calls(part, self.expressions, layout=layout)
            for call in self.spec.calls:
                if call.function in _TO_END:  # positions count from the partition's first row
                    add = (
                        fs + meta["evicted_rows"]
                        if call.function != "dense_rank"
                        else int(reach.groups[fs]) + meta["evicted_groups"]
                    )
                    results[call.alias] = pc.add(
                        results[call.alias], pa.scalar(add, results[call.alias].type)
                    )
            done = project(part, self.expressions, results)
            if len(batch) == 1:  # one run: a zero-copy slice
                lo, hi = ranges[batch[0]]
                pieces.append(done.slice(lo - fs, hi - lo))
            else:
                pieces.append(
                    done.take(pa.array(np.concatenate([np.arange(*ranges[i]) for i in batch]) - fs))
                )
            count += sum(ranges[i][1] - ranges[i][0] for i in batch)
        return pa.concat_tables(pieces), count

    def _diff(
        self, new_vals: pa.Table, old: pa.Table, old_res: pa.Table, prev: np.ndarray, moved: np.ndarray
    ) -> pa.Table:
        """Upserts of the recomputed rows whose results differ from what the state held for their
        identity (``prev``: its old position, -1 for a new identity), or whose own columns an update
        changed (``moved``: the rows an update replaced; other held rows are unchanged copies)."""
        changed = prev < 0
        if not changed.all():
            at = pa.array(np.maximum(prev, 0))
            same = ~changed
            for name in self.results_schema.names:
                same &= _equal(new_vals.column(name), old_res.column(name).take(at))
            if moved.any():
                at = pa.array(np.maximum(prev[moved], 0))
                for name in self.schema.names:
                    same[moved] &= _equal(
                        new_vals.column(name).take(pa.array(np.flatnonzero(moved))), old.column(name).take(at)
                    )
            changed = ~same
        return self._finish(new_vals if changed.all() else new_vals.filter(pa.array(changed)), "upsert")

    def _deleted(self, rows: pa.Table) -> pa.Table:
        for e in self.expressions:
            rows = rows.append_column(
                e.alias, pa.nulls(rows.num_rows, self.output_schema.field(e.alias).type)
            )
        return self._finish(rows, "delete")

    def _finish(self, rows: pa.Table, change: str) -> pa.Table:
        if not self.row_key:
            rows = rows.append_column(ROW_ID, rows.column(_ID))
        rows = rows.append_column(CHANGE, pa.repeat(pa.scalar(change, pa.string()), rows.num_rows))
        rows = rows.select(self.output_schema.names)
        return rows if rows.schema.equals(self.output_schema) else rows.cast(self.output_schema)

    # -- eviction ----------------------------------------------------------------------------

    def _evict(
        self,
        table: pa.Table,
        results: pa.Table,
        codes: np.ndarray,
        meta: dict,
        watermark,
        reach: _Reach | None = None,
        edges: tuple[bool, bool] = (False, False),
    ):
        """Drop rows (and their results) that no later change can need: once rows are evicted, changes
        below the watermark are late, so every change lands at or after the first row at or above it
        (``first_live``); the rows such a change can affect start at the first row whose frame reaches
        ``first_live`` or, for RANGE frames, the watermark's key; kept are the frames of those rows (from
        the first, as frame starts never decrease), widened to whole peer groups. Returns (rows,
        results, meta, rows dropped from the front)."""
        if watermark is None or not self.evicts or table.num_rows == 0:
            return table, results, meta, 0
        keys = Values(evaluate_expr(self.order_by[0].expr, table))
        knum = key_numbers(keys)
        n = table.num_rows
        first_live = int(np.searchsorted(knum, watermark, "left"))  # ascending, no NULLs (refused as bad)
        at = min(first_live, n - 1)
        # by key: rows whose RANGE frame reaches up to a change at the watermark
        by_key = [int(np.searchsorted(knum, t, "left")) for t in self._range_reach(watermark, keys.kind)]
        around = np.unique([at] + [min(p, n - 1) for p in by_key])
        if reach is None or not reach.holds(around):
            reach = self._frames(table, codes, around, edges)
        first = min([int(reach.affected(np.array([at]))[0][0]), at] + by_key)
        keep_from = min(first_live, reach.span(first, first + 1)[0]) if first < n else first_live
        if keep_from <= 0:
            return table, results, meta, 0
        meta = dict(
            meta,
            evicted_rows=meta["evicted_rows"] + keep_from,
            evicted_groups=meta["evicted_groups"] + int(reach.groups[keep_from - 1]) + 1,
        )
        # later changes below the watermark are late: the frames they would need are gone
        horizon = int(watermark) if keys.kind is not TypeFamily.FLOAT else float(watermark)
        meta["horizon"] = max(horizon, meta["horizon"] if meta["horizon"] is not None else horizon)
        return (
            table.slice(keep_from).combine_chunks(),
            results.slice(keep_from).combine_chunks(),
            meta,
            keep_from,
        )

    def _range_reach(self, watermark, kind: TypeFamily) -> list:
        """Per RANGE call, the smallest key whose frame reaches a row at the ``watermark`` key (the
        watermark minus the frame's end offset; minus infinity for UNBOUNDED FOLLOWING)."""
        out = []
        w = np.array([watermark], dtype=np.float64 if kind is TypeFamily.FLOAT else np.int64)
        for call in self.spec.calls:
            if call.info.kind is Kind.OFFSET or call.frame.unit is not FrameUnit.RANGE or not call.order_by:
                continue
            end = call.frame.end
            if end.kind is BoundKind.UNBOUNDED_FOLLOWING:
                out.append(-np.inf)
            elif end.has_offset:
                out.append(shift_key(w, kind, end.offset, -1 if end.kind is BoundKind.FOLLOWING else 1)[0])
            else:
                out.append(w[0])
        return out


# -- helpers ---------------------------------------------------------------------------------------

_GAP = 4096
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_NULL = np.uint64(0x6A09E667F3BCC908)  # the bits a NULL hashes from


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (uint64 in, uint64 out): every input bit flips about half the output."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def _column_bits(a: pa.Array) -> np.ndarray:
    """64 bits per value (uint64), equal for equal values: the value's own bits for numbers, booleans
    and times (floats with -0.0 as 0.0 and one NaN), pandas' SipHash (fixed key) of anything else;
    NULL as ``_NULL``. O(n), no Python objects except for strings and nested types."""
    t = a.type
    if pa.types.is_floating(t):
        v = a.cast(pa.float64())
        v = np.asarray((v.fill_null(0.0) if v.null_count else v).to_numpy(zero_copy_only=False))
        bits = np.where(np.isnan(v), np.nan, v + 0.0).view(np.uint64)
    elif pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_temporal(t):
        if pa.types.is_temporal(t):  # a time's integer count of its unit
            a = a.view(pa.int64() if t.bit_width == 64 else pa.int32())
        elif pa.types.is_unsigned_integer(t) and t.bit_width == 64:
            a = a.view(pa.int64())
        v = a.cast(pa.int64())
        bits = np.asarray((v.fill_null(0) if v.null_count else v).to_numpy(zero_copy_only=False)).view(
            np.uint64
        )
    else:
        import pandas as pd

        bits = pd.util.hash_array(np.asarray(a.to_pandas(), dtype=object))
    if a.null_count:
        bits = np.where(a.is_valid().to_numpy(zero_copy_only=False), bits, _NULL)
    return bits


def _row_hash(table: pa.Table, columns) -> np.ndarray:
    """A 64-bit hash (uint64) of each row's values in ``columns``, the same in every process and
    version of this format (state holds it). O(rows x columns).

    >>> t = pa.table({"a": [1, 2, 1], "b": ["x", "y", "x"]})
    >>> h = _row_hash(t, ["a", "b"]); bool(h[0] == h[2]), bool(h[0] == h[1])
    (True, False)
    """
    h = np.zeros(table.num_rows, dtype=np.uint64)
    for c in columns:
        h = _mix(h * _GOLDEN + _column_bits(table.column(c).combine_chunks()))
    return h


def _ordinals(h: np.ndarray) -> np.ndarray:
    """Each value's ordinal among the equal values before it: [7, 3, 7, 7] -> [0, 0, 1, 2]. O(n log n)."""
    order = np.argsort(h, kind="stable")
    first = np.ones(len(h), dtype=bool)
    first[1:] = h[order][1:] != h[order][:-1]
    starts = np.maximum.accumulate(np.where(first, np.arange(len(h)), 0))
    out = np.empty(len(h), dtype=np.int64)
    out[order] = np.arange(len(h)) - starts
    return out


def _fold(keys: list[tuple[np.ndarray, int]], n: int) -> np.ndarray:
    """One int64 ordering as the (codes, cardinality) keys do, major first: a mixed-radix number
    while it fits, else dense ranks of the pairs (one lexsort)."""
    if not keys:
        return np.zeros(n, dtype=np.int64)
    out, card = keys[0][0].astype(np.int64), keys[0][1]
    for codes, k in keys[1:]:
        if card * k < 2**62:
            out, card = out * k + codes, card * k
        else:
            order = np.lexsort((codes, out))
            change = np.ones(n, dtype=bool)
            change[1:] = (out[order][1:] != out[order][:-1]) | (codes[order][1:] != codes[order][:-1])
            out = np.empty(n, dtype=np.int64)
            out[order] = np.cumsum(change) - 1
            card = int(out.max()) + 1 if n else 1
    return out


def _interleave(n_kept: int, before: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge kept rows 0..n_kept-1 with sorted inserts, insert j after ``before[j]`` kept rows (non-
    decreasing): (the merged sequence as kept index, or n_kept + insert index; the insert positions).
    O(n_kept + inserts).

    >>> src, at = _interleave(3, np.array([0, 2, 2])); src.tolist(), at.tolist()
    ([3, 0, 1, 4, 5, 2], [0, 3, 4])
    """
    m = len(before)
    at = before + np.arange(m)
    is_ins = np.zeros(n_kept + m, dtype=bool)
    is_ins[at] = True
    src = np.empty(n_kept + m, dtype=np.int64)
    src[~is_ins] = np.arange(n_kept)
    src[at] = n_kept + np.arange(m)
    return src, at


def _margin(calls) -> int | None:
    """A first guess at how many rows around a change the frame finder needs (twice the largest
    ROWS or lag/lead offset, at least 32; RANGE and GROUPS frames are found wider as needed); None
    when some call reaches the whole partition or one end of it."""
    m = 16
    for call in calls:
        if call.unbounded_reach:
            return None
        if call.info.kind is Kind.OFFSET:
            m = max(m, abs(call.params[0] if call.params else 1))
            continue
        for bound in (call.frame.start, call.frame.end):
            if call.frame.unit is FrameUnit.ROWS and bound.has_offset:
                m = max(m, int(bound.offset))
    return 2 * m


class _Reach:
    """Every row's frame over one partition's sorted rows (all calls' frames united), for the
    symmetric walk: ``affected(c)`` gives [first_curr_row, last_curr_row + 1) for changes at c;
    ``span(lo, hi)`` gives [first_frame_start, last_frame_end) for rows [lo, hi). Frame starts and
    ends never decrease along the rows, so both are binary searches. Built without sorting (the
    rows are in order) over the window [lo, hi) of whole peer groups only, frames clipped to it:
    O(window); ``holds`` says whether the window was wide enough. Positions are the partition's.

    >>> from overwindow.spec import OverWindow
    >>> calls = OverWindow("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s").calls
    >>> t = pa.table({"t": [1, 2, 3, 4, 5], "x": [1, 1, 1, 1, 1]})
    >>> r = _Reach(t, calls, calls[0].order_by, np.arange(5), 1, 5)
    >>> [a.tolist() for a in r.affected(np.array([3]))], r.span(3, 5), r.holds(np.array([3]))
    ([[3], [5]], (2, 5), True)
    """

    def __init__(
        self,
        table: pa.Table,
        calls,
        order_by,
        groups: np.ndarray,
        lo: int = 0,
        hi: int | None = None,
        edges: tuple[bool, bool] = (False, False),
    ):
        self.n = len(groups)
        self.lo, self.hi = lo, self.n if hi is None else hi
        # whether rows go on before / after the window (of this table, or of the partition past it)
        self.open_lo, self.open_hi = self.lo > 0 or edges[0], self.hi < self.n or edges[1]
        self.groups = groups
        n = self.hi - lo  # window size: every array below is indexed from lo
        local = groups[lo : self.hi] - (groups[lo] if n else 0)
        i = np.arange(n, dtype=np.int64)
        layout = Layout.in_order(local)
        g_start = layout.group_start[local]
        self.start, self.end = i.copy(), i + 1  # rows whose value reaches a change at c (reach)
        self.read_lo, self.read_hi = i.copy(), i + 1  # rows a row reads (span)
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
                elif back >= 0:  # lag: the row back, lead: the row ahead (clipped to the window)
                    s, e = np.maximum(i - back, 0), i + 1
                else:
                    s, e = i, np.minimum(i - back + 1, n)
                self._widen(s, e, s, e)
            else:
                if call.frame.unit is FrameUnit.RANGE and (
                    call.frame.start.has_offset or call.frame.end.has_offset
                ):
                    k = order_by[0]
                    key = Values(evaluate_expr(k.expr, table.slice(lo, n)))
                    frames = frame_bounds(layout, call.frame, key, k.descending, k.nulls_first)
                else:
                    frames = frame_bounds(layout, call.frame)
                s, e = frames.start, np.maximum(frames.end, frames.start)
                self._widen(s, e, s, e)

    def _widen(self, s, e, read_s, read_e):
        np.minimum(self.start, s, out=self.start)
        np.maximum(self.end, e, out=self.end)
        np.minimum(self.read_lo, read_s, out=self.read_lo)
        np.maximum(self.read_hi, read_e, out=self.read_hi)

    @cached_property
    def _start_mono(self) -> np.ndarray:
        return np.minimum.accumulate(self.start[::-1])[::-1]  # smallest start from i on

    @cached_property
    def _end_mono(self) -> np.ndarray:
        return np.maximum.accumulate(self.end)  # largest end up to i

    @cached_property
    def _read_lo_mono(self) -> np.ndarray:
        return np.minimum.accumulate(self.read_lo[::-1])[::-1]  # earliest row read from i on

    @cached_property
    def _read_hi_mono(self) -> np.ndarray:
        return np.maximum.accumulate(self.read_hi)  # last row read (exclusive) up to i

    def affected(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Merged [first_curr_row, last_curr_row + 1) ranges (as lo and hi arrays) for changes at
        positions c (inside the window): the rows whose frame [start, end) holds c."""
        w = self.hi - self.lo
        if w == 0 or len(c) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        first = np.searchsorted(self._end_mono, c - self.lo, side="right")  # both in [0, w]
        last = np.searchsorted(self._start_mono, c - self.lo, side="right")
        return first + self.lo, last + self.lo

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """[first_frame_start, last_frame_end) of rows [lo, hi) (inside the window), widened to
        whole peer groups."""
        fs = int(self.read_lo[lo - self.lo : hi - self.lo].min()) + self.lo
        fe = int(self.read_hi[lo - self.lo : hi - self.lo].max()) + self.lo
        g = self.groups
        if fs < self.n:
            fs = int(np.searchsorted(g, g[fs], side="left"))
        if fe > 0:
            fe = int(np.searchsorted(g, g[fe - 1], side="right"))
        return fs, fe

    def holds(self, c: np.ndarray) -> bool:
        """Whether the window is wide enough for positions c (sorted): they, the rows whose frames
        reach them, and the frames of both lie inside it, away from any edge the rows go on past
        (frames there may be clipped)."""
        return not any(self.gaps(c))

    def gaps(self, c: np.ndarray) -> tuple[bool, bool]:
        """(too narrow before, too narrow after) for positions c (sorted); see ``holds``. Starts and
        ends never decrease, so a reach that went past the window shows as a range touching its edge."""
        if len(c) == 0:
            return False, False
        if c[0] < self.lo or c[-1] >= self.hi:
            return bool(c[0] < self.lo), bool(c[-1] >= self.hi)
        a, b = self.affected(c)
        before = self.open_lo and a.min() <= self.lo
        after = self.open_hi and b.max() >= self.hi
        # the rows involved are c and the (non-empty) affected ranges: what they read starts no
        # earlier than what any row from the first of them on reads, and ends no later than what any
        # row up to the last reads (the envelopes; exact, as frames do not move back along the rows)
        full = b > a
        first = min(int(c[0]), int(a[full].min(initial=c[0]))) - self.lo
        last = max(int(c[-1]), int(b[full].max(initial=c[-1] + 1)) - 1) - self.lo
        before = before or (self.open_lo and self._read_lo_mono[first] <= 0)
        after = after or (self.open_hi and self._read_hi_mono[last] >= self.hi - self.lo)
        return bool(before), bool(after)


def _member(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Whether each of ``ids`` is among ``wanted``: one comparison pass per wanted identity when they
    are few, else a sort of them and one binary search per id. O(n min(m, log m) + m log m).

    >>> _member(np.array([4, 1, 9]), np.array([9, 4])).tolist()
    [True, False, True]
    """
    if len(wanted) == 0 or len(ids) == 0:
        return np.zeros(len(ids), dtype=bool)
    if len(wanted) <= 16:  # a few vectorised comparisons beat the binary search's scattered reads
        out = ids == wanted[0]
        for w in wanted[1:]:
            out |= ids == w
        return out
    wanted = np.sort(wanted)
    return wanted[np.minimum(np.searchsorted(wanted, ids), len(wanted) - 1)] == ids


def _find(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Index in ``ids`` (distinct) of each wanted identity, -1 where absent. O((n + m) log n).

    >>> _find(np.array([30, 10, 20]), np.array([20, 5, 30])).tolist()
    [2, -1, 0]
    """
    if len(ids) == 0:
        return np.full(len(wanted), -1, dtype=np.int64)
    order = np.argsort(ids)
    at = np.minimum(np.searchsorted(ids[order], wanted), len(ids) - 1)
    return np.where(ids[order][at] == wanted, order[at], -1)


def _scatter(table: pa.Table, at: np.ndarray, rows: pa.Table) -> pa.Table:
    """``table`` with its rows at positions ``at`` (sorted, distinct) replaced by ``rows``. O(n).

    >>> _scatter(
    ...     pa.table({"a": [1, 2, 3]}), np.array([0, 2]), pa.table({"a": [7, 9]})
    ... ).column("a").to_pylist()
    [7, 2, 9]
    """
    idx = np.arange(table.num_rows)
    idx[at] = table.num_rows + np.arange(len(at))
    return pa.concat_tables([table, rows]).take(pa.array(idx)).combine_chunks()


def _runs(rows: np.ndarray) -> list[tuple[int, int]]:
    """Sorted row positions as maximal [lo, hi) runs of consecutive positions."""
    if len(rows) == 0:
        return []
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    return [(int(a[0]), int(a[-1]) + 1) for a in np.split(rows, breaks)]


def _in_ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The sorted distinct positions in the union of the ranges [lo, hi). O(positions + ranges log ranges).

    >>> _in_ranges(np.array([5, 0, 1]), np.array([7, 2, 3])).tolist()
    [0, 1, 2, 5, 6]
    """
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if len(lo) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order])
    lo = np.maximum(lo, np.concatenate(([lo[0]], hi[:-1])))  # clip each range to start after those before
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    sizes = hi - lo
    # lo repeated per position plus the offset within its range
    offsets = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.repeat(lo, sizes) + offsets


def _equal(a, b) -> np.ndarray:
    """Per-row equality where NULL equals NULL and NaN equals NaN."""
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    b = b.combine_chunks() if isinstance(b, pa.ChunkedArray) else b
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    eq = pc.fill_null(pc.equal(a, b), False)
    if pa.types.is_floating(a.type):
        eq = pc.or_(eq, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
    return pc.or_(eq, both_null).to_numpy(zero_copy_only=False)
