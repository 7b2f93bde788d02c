"""Emit on update: every micro-batch of inserts, deletes and updates yields a changelog of exactly the
rows whose window results changed (upserts) and the rows that went away (deletes).

Per partition the state holds the live rows, sorted by (ORDER BY keys, row key or all columns,
row identity), each with its 64-bit identity hash (``identity``) and its results as last emitted.
A step:

1. reads the batch's changes (``changes``: CDC ops, the last change of an identity wins, late and
   bad rows counted) and applies them (``merge``): an update is a delete plus an insert of the same
   identity, the sorted inserts merged into the kept rows by binary search on ORDER BY codes (no
   re-sort), noting each change's position, in the old rows and in the new;
2. for every change position c, walks symmetrically (``reach``): back to ``first_curr_row``, the first
   row whose reach (of any call: ``WindowCall.reach``) holds c, and forward to ``last_curr_row``, the
   last such row: in the old rows for rows that went or moved, in the new rows for inserts;
3. recomputes only the rows in those ranges with the batch kernels on the slices their frames read,
   and emits the rows whose values differ from the results the state holds for them, plus deletes
   (``recompute``);
4. with a watermark on an ascending ORDER BY column, evicts rows no change at or above the
   watermark can need; later changes below that horizon are dropped as late (``eviction``);
5. over insert-only input with a Top-N ``qualify`` (``r <= N`` on a row_number, rank or dense_rank),
   drops the rows past N from the back of each partition: they can never enter the result again
   (``topn``, which lists the conditions).

A state may hold a bucket of keys (``keys``): the partitions' rows one after another, sorted by
(key, ORDER BY, ...), so one step merges, walks, recomputes (one kernel pass per slice, the slices
spanning partitions) and evicts for all of them at once, frames stopping at the partitions' edges.

Recomputed rows: O(changes x frame reach) for bounded frames. The frame finder works on windows
around the changes, within their partitions (the whole partition when a call reaches one of its
ends), and eviction looks only at the partitions that changed or that the watermark moved past a
row of since the last (``OnUpdateMeta.evicted_at``). The rest of the
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

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.evaluator import evaluate_calls, project
from overwindow.logical.bind import source_columns
from overwindow.logical.functions import Reach, user_aggregate_class
from overwindow.physical.columns import resolve_column
from overwindow.physical.key_shift import key_numbers
from overwindow.physical.values import Values
from overwindow.spec import OverWindow
from overwindow.streaming.arrays import in_ranges, member, scatter, union
from overwindow.streaming.aside import Aside, Qualify, RowChecks
from overwindow.streaming.changes import Changes, Op, in_source_order, last_changes, ops_of
from overwindow.streaming.contract import (
    CHANGE,
    DELETE,
    END_OF_INPUT,
    ROW_ID,
    UPSERT,
    Counters,
    Step,
    held_schema,
    keys_of,
)
from overwindow.streaming.eviction import Eviction
from overwindow.streaming.identity import IDENTITY, row_ids
from overwindow.streaming.merge import Merged, RowOrder, merge_changes
from overwindow.streaming.partitions import EvictedCounts, touched
from overwindow.streaming.reach import FrameReach, ReachFinder
from overwindow.streaming.recompute import FAILED, changed, held_before, recompute
from overwindow.streaming.state import OnUpdateMeta, buckets_changed, decode, encode, held_columns
from overwindow.streaming.topn import TopN

STATE_KIND = "on_update"
_RESULT = "__ow_result."  # prefix of the held results' columns in the state
# beside the held results of a spec with expressions over window results: the row is out of the
# view, set aside because such an expression failed on it when it was last recomputed
_ASIDE = "__ow_aside"


@dataclass
class Applied:
    """What ``OnUpdate.apply`` made of a stretch of held rows: the rows and results now held (sorted),
    the meta, the changelog, each held row's position before (-1: inserted), the positions whose
    results were recomputed, how many rows were evicted (from the front of each partition), rows
    recomputed, how many rows were dropped past a Top-N (from the back: ``topn``)."""

    rows: pa.Table
    results: pa.Table
    meta: OnUpdateMeta
    output: pa.Table
    from_old: np.ndarray
    recomputed_at: np.ndarray
    evicted: int
    recomputed: int
    aside: Aside | None = None  # recomputed rows newly set aside (an expression over results failed)
    counts: EvictedCounts | None = None  # of a bucket of keys: what each partition has evicted
    parts: np.ndarray | None = None  # of a bucket of keys: each held row's partition number
    pruned: int = 0


class OnUpdate:
    """The emit-on-update machine for one spec and input schema; stateless between calls.

    ``keys``: the columns that tell partitions apart when one state holds many (a bucket of
    ``groupBy`` keys, ``spec.key_buckets`` buckets; NULLs are one partition, as in PARTITION BY):
    every step then serves all the bucket's partitions at once, their rows one after another in one
    table, sorted by (key, ORDER BY, ...), the frames stopping at the partitions' edges."""

    def __init__(
        self, spec: OverWindow, schema: pa.Schema, watermarked: bool = False, keys: tuple[str, ...] = ()
    ):
        if spec.emit != "on_update":
            raise WindowSpecError("OnUpdate runs specs with emit='on_update'")
        self.spec = spec
        empty = schema.empty_table()
        self.op = resolve_column(empty, spec.op_column) if spec.op_column else None
        # where each change stands in its source (sourceOrder): a key's changes apply in that order
        self.source_order = tuple(resolve_column(empty, c) for c in spec.source_order)
        # the input rows' columns (a row without a row key is all of them), and those held and
        # emitted: the ones the result carries (``OverWindow.carrying``) and the calls read
        self.input = pa.schema([f for f in schema if f.name != self.op and f.name not in self.source_order])
        self.row_key = tuple(resolve_column(empty, c) for c in spec.row_key) if spec.row_key else None
        self.keys = tuple(keys)
        self.schema = held_schema(spec, self.input, self.keys + (self.row_key or ()))
        self.buckets = spec.key_buckets if self.keys else None
        # a row key tells rows apart within a partition: in a bucket, with the partition's key
        self.identity = self.keys + self.row_key if self.row_key and self.keys else self.row_key
        orders = {c.order_by for c in spec.calls}
        if len(orders) > 1:
            raise WindowSpecError(
                "emit on update needs every call to share one ORDER BY; split calls with different "
                "ORDER BY into separate overWindow views"
            )
        (self.order_by,) = orders
        self.order = RowOrder(self.order_by, self.row_key or source_columns(self.schema.names), self.keys)
        self.finder = ReachFinder(spec.calls, self.order_by)
        self.expressions = list(spec.expressions)
        data = self.schema.empty_table()
        results = project(data, self.expressions, evaluate_calls(data, self.expressions))
        extra = [] if self.row_key else [pa.field(ROW_ID, pa.int64())]
        self.output_schema = pa.schema(list(results.schema) + extra + [pa.field(CHANGE, pa.string())])
        # each held row's results as last emitted, so a step compares without recomputing the old rows
        # (whether a row can be set aside when computed: an expression over results, or a Python
        # aggregate such as a pandas_udf, which may raise on a frame)
        self.flags = any(e.expr is not None for e in self.expressions) or any(
            user_aggregate_class(c.function) is not None for c in spec.calls
        )
        self.qualify = spec.qualify and Qualify(spec.qualify, results, self.schema.names)
        self.top_n = TopN.of(spec, results)  # None: every live row stays (no pruning is sound)
        self.results_schema = pa.schema(
            [results.schema.field(e.alias) for e in self.expressions]
            + ([pa.field(_ASIDE, pa.bool_())] if self.flags else [])
        )
        # with a watermark on the single ascending ORDER BY key (over one column), rows far enough
        # behind it are evicted; functions of the whole partition (ntile, ...) keep every row
        order_col = self.order_by[0].expr.columns() if len(self.order_by) == 1 else ()
        self.event_time = resolve_column(empty, order_col[0]) if len(order_col) == 1 else None
        # with a watermark on it, every change below the watermark is late, evicting or not
        self.watermarked = watermarked and self.event_time is not None
        evicts = (
            self.watermarked
            and not self.order_by[0].descending
            and not any(c.info.reach is Reach.WHOLE for c in spec.calls)
        )
        self.eviction = Eviction(self.finder) if evicts else None
        self.counts = any(c.info.counts is not None for c in spec.calls)  # row_number, rank, ...
        self.checks = RowChecks(spec.calls, schema.names)

    # -- state ---------------------------------------------------------------------------------

    def load(self, state: bytes | None) -> tuple[pa.Table, pa.Table, OnUpdateMeta]:
        """(rows, their stored results, meta) of one chunk of the chunked layout (its meta is empty;
        the chunk's index holds the counters and the keyBuckets it was written with)."""
        return self._load(state)[:3]

    def _load(self, state: bytes | None) -> tuple[pa.Table, pa.Table, OnUpdateMeta, EvictedCounts | None]:
        """``load``, and for a bucket of keys the evicted counts of its partitions (else None)."""
        if state is None:
            counts = EvictedCounts.none(self.schema, self.keys) if self.keys else None
            return self.empty_rows(), self.results_schema.empty_table(), OnUpdateMeta(), counts
        tables, meta = decode(state, STATE_KIND, OnUpdateMeta)
        counts = EvictedCounts(tables["parts"], self.keys) if "parts" in tables else None
        held = tables["rows"].combine_chunks()
        names = held.column_names
        rows = held_columns(held, self.schema.names)
        if IDENTITY in names:
            rows = rows.append_column(IDENTITY, held.column(IDENTITY))
        else:  # format 3 leaves out what the row key hashes to (``encode``)
            rows = rows.append_column(IDENTITY, pa.array(row_ids(rows, self.identity)))
        stored = [held.column(n) for n in names if n.startswith(_RESULT)]
        columns = [_held_as(c, f.type) for c, f in zip(stored, self.results_schema)]
        if len(columns) < len(self.results_schema):  # written before rows were set aside: none is
            columns.append(pa.array(np.zeros(held.num_rows, dtype=bool)))
        results = pa.Table.from_arrays(columns, schema=self.results_schema)
        return rows, results, meta, counts

    def encode(
        self,
        rows: pa.Table,
        results: pa.Table,
        meta: OnUpdateMeta | None,
        counts: EvictedCounts | None = None,
    ) -> bytes:
        """State bytes of held rows and their results: one table (one IPC stream), the rows, then the
        results under a prefix (``meta`` None: a chunk's, whose counters its index keeps); for a
        bucket of keys also its partitions' evicted ``counts``. ``load`` reads them back.

        Where a row key names rows, their identities are left out: ``load`` hashes the row key
        again (0.2 ms a 10,000 rows), where the identities, random 64-bit hashes that no
        compression shrinks, were a third of a bucket's compressed state at 1,000,000 sparse keys.

        >>> from overwindow.spec import OverWindow
        >>> spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", emit="on_update", rowKey="id")
        >>> rows = pa.table({"id": [1, 2], "t": [1, 2], "x": [5, 6]})
        >>> m = OnUpdate(spec, rows.schema)
        >>> state = m.step(None, rows).state
        >>> decode(state, STATE_KIND, OnUpdateMeta)[0]["rows"].column_names
        ['id', 't', 'x', '__ow_result.p']
        >>> m.load(state)[0].column(IDENTITY).equals(m.changes(rows, None).inserts.column(IDENTITY))
        True
        """
        if self.identity:
            rows = rows.drop_columns([IDENTITY])
        held = pa.Table.from_arrays(
            rows.columns + results.columns,
            names=rows.column_names + [_RESULT + n for n in results.column_names],
        )
        tables = {"rows": held} if counts is None else {"rows": held, "parts": counts.table}
        if meta is not None:
            meta.buckets = self.buckets
        return encode(tables, STATE_KIND, meta, OnUpdateMeta.NEWEST)

    def empty_rows(self) -> pa.Table:
        """No held rows: the input columns (without the op column) and the identity."""
        return pa.schema(list(self.schema) + [pa.field(IDENTITY, pa.int64())]).empty_table()

    # -- the step ------------------------------------------------------------------------------

    def step(self, state: bytes | None, rows: pa.Table | None, watermark=None) -> Step:
        """Apply one batch of changes to a partition's state (None: empty); the changelog it causes.
        Kernel work O(changes x frame reach), bookkeeping O(partition) vectorised (module docstring).
        ``END_OF_INPUT`` changes nothing: every change was emitted when it came."""
        watermark = None if watermark == END_OF_INPUT else watermark
        old, old_res, meta, counts = self._load(state)
        if state is not None:  # a state of other buckets (or per key) holds other keys' rows
            written = counts.table.column_names[:-2] if counts is not None else ()
            if meta.buckets != self.buckets or tuple(written) != self.keys:
                raise buckets_changed(meta.buckets, written, self.buckets, self.keys)
        changes = self.late_by_held(self.changes(rows, meta.horizon, watermark), old, meta.horizon, watermark)
        meta.late_rows += changes.late
        held_ids = old.column(IDENTITY).to_numpy()
        held = int(member(held_ids, changes.updates).sum())
        done = self.apply(old, old_res, meta, changes.inserts, changes.deletes, watermark, counts=counts)
        aside = Aside.join(changes.aside, changes.deletes_not_held(held_ids), done.aside)
        counters = Counters(
            done.rows.num_rows,
            done.meta.late_rows,
            done.recomputed,
            len(aside) if aside else 0,
            len(changes.updates) - held,
            done.pruned,
        )
        evicted = len(done.counts) if done.counts is not None else done.meta.evicted_rows
        empty = done.rows.num_rows == 0 and (evicted == 0 or not self.counts)
        return Step(
            self.encode(done.rows, done.results, done.meta, done.counts),
            done.output,
            None,
            changes.late,
            counters,
            empty,
            self._largest(done.rows, done.parts) if self.keys else None,
            aside,
            changes.late_keys,
        )

    def _largest(self, rows: pa.Table, parts: np.ndarray) -> tuple[int, tuple] | None:
        """(rows, key) of the partition holding the most ``rows`` (``parts``: each row's partition
        number; None: none held). O(rows)."""
        if rows.num_rows == 0:
            return None
        sizes = np.bincount(parts)
        at = int(np.searchsorted(parts, int(np.argmax(sizes))))
        return int(sizes.max()), tuple(rows.column(k)[at].as_py() for k in self.keys)

    def changes(self, rows: pa.Table | None, horizon, watermark=None) -> Changes:
        """One batch of input (None: no rows) as changes to apply: rows with an unknown op, (with a
        watermark on the event time) a NULL event time, or values a row expression fails on
        (``RowChecks``) are bad and set aside; changes whose event time is below the ``watermark``
        or the eviction ``horizon`` are late (the docs' rule, docs/concepts.md, whether or not eviction has
        begun); of the rest, the last change of an identity wins, the last in source order with a
        ``sourceOrder`` (``in_source_order``), else the last to come."""
        if rows is None or rows.num_rows == 0:
            return Changes(self.empty_rows(), np.zeros(0, dtype=np.int64))
        rows = in_source_order(rows, self.source_order)
        ops, reasons = ops_of(rows, self.op)
        data = rows.select(self.input.names)
        if not data.schema.equals(self.input):
            data = data.cast(self.input)
        ids = row_ids(data, self.identity)
        if len(self.schema) < len(self.input):
            data = data.select(self.schema.names)
        late = np.zeros(rows.num_rows, dtype=bool)
        if self.watermarked:
            times = Values(data.column(self.event_time))
            if times.array.null_count:  # NULL has no place relative to the watermark
                null_time = ~times.valid & (ops != Op.BAD)
                reasons.update(
                    (int(i), f"NULL event time ({self.event_time})") for i in np.flatnonzero(null_time)
                )
                ops = np.where(null_time, Op.BAD, ops)
            below = [w for w in (watermark, horizon) if w is not None]
            if below:
                late = times.valid & (key_numbers(times) < max(below)) & (ops != Op.BAD)
        if self.checks.active:  # the new images' expressions: a row they fail on is bad
            entering = np.flatnonzero((ops != Op.BAD) & (ops != Op.DELETE) & ~late)
            at, why = self.checks.failing(data.take(pa.array(entering)) if len(entering) < len(ops) else data)
            reasons.update(zip(entering[at].tolist(), why))
            ops[entering[at]] = Op.BAD
        valid = (ops != Op.BAD) & ~late
        last = last_changes(ids, valid)
        ins = last & (ops != Op.DELETE)
        dels = last & (ops != Op.INSERT)
        inserts = (data if ins.all() else data.filter(pa.array(ins))).append_column(
            IDENTITY, pa.array(ids[ins])
        )
        aside = None
        if reasons:
            bad = sorted(reasons)
            aside = Aside(rows.take(pa.array(bad)), [reasons[i] for i in bad])
        lone = _alone(ids, ops, valid, last, Op.DELETE)
        return Changes(
            inserts,
            ids[dels],
            int(late.sum()),
            len(reasons),
            ids[_alone(ids, ops, valid, last, Op.UPDATE)],
            aside,
            keys_of(rows, self.keys, late) if late.any() else (),
            ids[lone],
            rows.filter(pa.array(lone)) if lone.any() else None,
            ids[valid],
        )

    def late_by_held(self, changes: Changes, held: pa.Table, horizon, watermark=None) -> Changes:
        """``changes`` less those of rows ``held`` below the ``watermark`` or the eviction ``horizon``:
        an update, delete or replacement of such a row is late whatever its new image's event time,
        as its removal would change frames the watermark has passed, whose rows may be gone (a
        single-image update moving a row from below the watermark to above it). A row evicted
        already is not held: its update is an update of an unknown row. O(held + changes).

        >>> spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", emit="on_update", rowKey="id", opColumn="op")
        >>> schema = pa.schema([("id", pa.int64()), ("t", pa.int64()), ("x", pa.int64()),
        ...                     ("op", pa.string())])
        >>> m = OnUpdate(spec, schema, watermarked=True)
        >>> held = m.step(None, pa.table({"id": [1, 2], "t": [1, 5], "x": [10, 20], "op": ["c", "c"]}))
        >>> move = pa.table({"id": [1], "t": [9], "x": [11], "op": ["u"]})  # t=1 to t=9, watermark 3
        >>> m.late_by_held(m.changes(move, None, 3), m.load(held.state)[0], None, 3).late
        1
        """
        below = [w for w in (watermark, horizon) if w is not None]
        if not self.watermarked or not below or not held.num_rows:
            return changes
        held_ids = held.column(IDENTITY).to_numpy()
        changed = np.concatenate([changes.deletes, changes.inserts.column(IDENTITY).to_numpy()])
        hit = np.flatnonzero(member(held_ids, changed))
        if not len(hit):
            return changes
        rows = held.take(pa.array(hit))
        old = key_numbers(Values(rows.column(self.event_time))) < max(below)
        if not old.any():
            return changes
        return changes.made_late(held_ids[hit[old]], keys_of(rows, self.keys, old))

    def apply(
        self,
        old: pa.Table,
        old_res: pa.Table,
        meta: OnUpdateMeta,
        ins: pa.Table,
        deletes: np.ndarray,
        watermark=None,
        edges: tuple[bool, bool] = (False, False),
        elsewhere: np.ndarray | None = None,
        counts: EvictedCounts | None = None,
    ) -> Applied:
        """Apply inserts (rows with identities, from ``changes``) and deletes (identities) to the held
        rows ``old`` (sorted, with ``old_res``), then evict behind the watermark and drop the rows
        past a Top-N (``topn``).

        ``old`` is the whole partition (for a bucket of keys: every partition's rows, and ``counts``
        what each evicted), or with ``edges`` = (rows before, rows after) a stretch of it (the
        chunked layout): then ``NeedRows`` is raised when a change's frames reach past a side that
        goes on. ``elsewhere``: identities inserted in another stretch in the same batch; their
        rows here moved rather than went, so they emit no delete."""
        old_codes, ins_codes = self.order.codes(old, ins)
        merged = merge_changes(self.order, old, old_res, old_codes, ins, ins_codes, deletes, elsewhere)
        parts = self.order.partitions(merged.rows)
        parts = parts[0] if parts is not None else None
        gone = np.flatnonzero(merged.gone_old)
        old_parts = self.order.partitions(old)[0] if parts is not None and len(gone) else None
        at, reach = self._affected(old, old_codes, merged, gone, edges, parts, old_parts)
        results, outputs, recomputed, aside = merged.results, [], 0, None
        if len(at):
            if counts is not None:
                before = counts.per_row(self.order, merged.rows)
            elif parts is not None:  # one partition of a bucket's keys (the chunked layout's stretch)
                n = merged.rows.num_rows
                before = np.full(n, meta.evicted_rows), np.full(n, meta.evicted_groups)
            else:
                before = meta.evicted_rows, meta.evicted_groups
            new, recomputed = recompute(merged.rows, reach, at, self.expressions, *before, parts), len(at)
            why = new.column(FAILED)
            new = new.drop_columns([FAILED])
            failed = why.is_valid().to_numpy(zero_copy_only=False) if why.null_count < len(why) else None
            if self.flags:
                new = new.append_column(
                    _ASIDE, pa.array(failed if failed is not None else np.zeros(len(at), bool))
                )
            changes, aside = self._upserts(new, old, old_res, merged, at, failed, why)
            outputs += changes
            fresh = new.select(self.results_schema.names)
            if not fresh.schema.equals(self.results_schema):
                fresh = fresh.cast(self.results_schema)
            results = scatter(results, at, fresh)
        if len(merged.removed_old):
            gone = old.take(pa.array(merged.removed_old))
            if self.qualify is not None:  # only rows in the result leave it
                gone = gone.filter(pa.array(self._held_in(old, old_res, merged.removed_old)))
            outputs.append(self._deletes(gone))
        rows, from_old, evicted, pruned = merged.rows, merged.from_old, 0, 0
        keep = np.ones(rows.num_rows, dtype=bool)
        if self.eviction is not None and watermark is not None:
            since = meta.evicted_at if counts is not None else None
            moved = touched(parts, old_parts, from_old, merged.gone_old) if since is not None else None
            ev = self.eviction.evict(rows, merged.codes, watermark, reach, edges, parts, since, moved)
            if counts is not None:
                meta = replace(meta, evicted_at=ev.horizon)
            evicted = ev.total
            if evicted:
                meta = ev.raised(meta)
                if counts is None:
                    meta = replace(
                        meta,
                        evicted_rows=meta.evicted_rows + evicted,
                        evicted_groups=meta.evicted_groups + int(ev.groups.sum()),
                    )
                elif self.counts:
                    some = np.flatnonzero(ev.rows)
                    counts = counts.add(self.order, rows, ev.starts[some], ev.rows[some], ev.groups[some])
                keep = ev.kept(rows.num_rows)
        if self.top_n is not None:  # a row both evicted and past N counts as evicted: numbering needs it
            past = self.top_n.dropped(results, merged.codes, parts) & keep
            pruned = int(past.sum())
            keep &= ~past
        if counts is not None and (pruned or (watermark is None and (len(merged.inserted_new) or len(gone)))):
            meta = replace(meta, evicted_at=None)  # rows changed after (or without) eviction
        if not keep.all():
            now_at = np.cumsum(keep) - 1
            rows, results, from_old = rows.filter(keep), results.filter(keep), from_old[keep]
            at = now_at[at[keep[at]]]
            parts = parts[keep] if parts is not None else None
        outputs = [p for p in outputs if p.num_rows]
        output = pa.concat_tables(outputs) if outputs else self.output_schema.empty_table()
        return Applied(
            rows, results, meta, output, from_old, at, evicted, recomputed, aside, counts, parts, pruned
        )

    def _affected(
        self,
        old: pa.Table,
        old_codes: np.ndarray,
        merged: Merged,
        gone: np.ndarray,
        edges: tuple[bool, bool],
        parts,
        old_parts,
    ) -> tuple[np.ndarray, FrameReach | None]:
        """(new positions of the rows whose values the changes can alter, the frame reach over the
        new rows around them): the rows whose reach holds an insert, and the rows whose old reach
        held a row that went or moved (``gone``: their old positions). ``parts`` / ``old_parts``:
        each new / old row's partition (None: one)."""
        inserted = merged.inserted_new
        if not len(gone) and not len(inserted):
            return np.zeros(0, dtype=np.int64), None
        moved = np.zeros(0, dtype=np.int64)
        if len(gone):
            was = in_ranges(*self.finder.around(old, old_codes, gone, edges, old_parts).affected(gone))
            was = was[~merged.gone_old[was]]
            moved = merged.kept_to_new(was - np.searchsorted(gone, was))  # by rank among the kept rows
        reach = self.finder.around(merged.rows, merged.codes, union(inserted, moved), edges, parts)
        return union(in_ranges(*reach.affected(inserted)), moved), reach

    # -- the changelog ---------------------------------------------------------------------------

    def _upserts(
        self, new: pa.Table, old: pa.Table, old_res: pa.Table, merged: Merged, at, failed, why
    ) -> tuple[list[pa.Table], Aside | None]:
        """(the changelog of the recomputed rows ``new`` (at new positions ``at``), and the rows set
        aside). A row is in the result unless an expression over its window results fails on it
        (``failed``, with the reasons ``why``: set aside unless it already was) or it fails the
        spec's ``qualify``; upserts of rows in it whose results differ from what the state held for
        their identity, whose own columns an update changed, or which were not in it before;
        deletes of rows that were in it and are not now."""
        old_ids = old.column(IDENTITY).to_numpy()
        prev, moved = held_before(merged, at, old_ids, new.column(IDENTITY).to_numpy())
        diff = changed(new, old, old_res, prev, moved, self.results_schema.names, self.schema.names)
        if failed is None and self.qualify is None:
            return [self._changelog(new if diff.all() else new.filter(pa.array(diff)), UPSERT)], None
        held = prev >= 0
        was_in, aside = np.zeros(len(prev), dtype=bool), None
        if held.any():
            was_in[held] = self._held_in(old, old_res, prev[held])
        now_in = np.ones(len(prev), dtype=bool) if failed is None else ~failed
        if failed is not None:  # set aside now, and not already when last computed
            was_aside = np.zeros(len(prev), dtype=bool)
            was_aside[held] = self._flagged(old_res, prev[held])
            newly = pa.array(failed & ~was_aside)
            aside = Aside.join(
                aside, Aside(new.filter(newly).select(self.schema.names), why.filter(newly).to_pylist())
            )
        if self.qualify is not None:
            passes, unsure = self.qualify.holds(new)
            now_in &= passes
            aside = Aside.join(aside, unsure)
        changes = [
            self._changelog(new.filter(pa.array(now_in & (diff | ~was_in))), UPSERT),
            self._deletes(new.filter(pa.array(was_in & ~now_in)).select(self.empty_rows().column_names)),
        ]
        return changes, aside

    def _held_in(self, old: pa.Table, old_res: pa.Table, at: np.ndarray) -> np.ndarray:
        """Whether each held row at ``at`` is in the result by what the state last emitted: not
        set aside, and passing ``qualify`` on its held results (a failure there was set aside when
        the row was computed)."""
        ok = np.ones(len(at), dtype=bool)
        if self.flags:
            ok &= ~self._flagged(old_res, at)
        if self.qualify is None:
            return ok
        image = old.take(pa.array(at))
        for name in old_res.column_names:
            image = image.append_column(name, old_res.column(name).take(pa.array(at)))
        return ok & self.qualify.holds(image)[0]

    @staticmethod
    def _flagged(old_res: pa.Table, at: np.ndarray) -> np.ndarray:
        """Whether each held row at ``at`` was set aside when last computed."""
        return old_res.column(_ASIDE).take(pa.array(at)).to_numpy(zero_copy_only=False)

    def _deletes(self, rows: pa.Table) -> pa.Table:
        """Deletes of held rows, their results NULL."""
        for e in self.expressions:
            rows = rows.append_column(
                e.alias, pa.nulls(rows.num_rows, self.output_schema.field(e.alias).type)
            )
        return self._changelog(rows, DELETE)

    def _changelog(self, rows: pa.Table, change: str) -> pa.Table:
        if not self.row_key:
            rows = rows.append_column(ROW_ID, rows.column(IDENTITY))
        rows = rows.append_column(CHANGE, pa.repeat(pa.scalar(change, pa.string()), rows.num_rows))
        rows = rows.select(self.output_schema.names)
        return rows if rows.schema.equals(self.output_schema) else rows.cast(self.output_schema)


def _alone(ids: np.ndarray, ops: np.ndarray, valid: np.ndarray, last: np.ndarray, op: int) -> np.ndarray:
    """Where a change of kind ``op`` (a single-image update, a delete) is the only change of its
    identity in the batch (an insert then an update, or a delete, of a new row in one batch needs no
    held row). O(n log n) with such changes.

    >>> ops = np.array([Op.INSERT, Op.UPDATE, Op.UPDATE], dtype=np.int8)
    >>> ok = np.ones(3, dtype=bool)
    >>> _alone(np.array([1, 1, 2]), ops, ok, np.array([False, True, True]), Op.UPDATE).tolist()
    [False, False, True]
    """
    found = last & (ops == op)
    if not found.any():
        return found
    _, inverse, counts = np.unique(ids[valid], return_inverse=True, return_counts=True)
    once = np.zeros(len(ids), dtype=bool)
    once[valid] = counts[inverse] == 1
    return found & once


def _held_as(column: pa.ChunkedArray, type: pa.DataType) -> pa.ChunkedArray:
    """A held result in today's result type. States written before results took Spark's types hold
    BIGINT ranks (now INT) and DOUBLE sums and averages of DECIMALs (now DECIMAL): cast, or NULL
    where a value does not cast, which only makes its row count as changed (emitted again). O(rows).

    >>> _held_as(pa.chunked_array([[1, 2]], pa.int64()), pa.int32()).type
    DataType(int32)
    """
    if column.type == type:
        return column
    try:
        return column.cast(type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.chunked_array([pa.nulls(len(column), type)])
