"""Emit on window close: each row is emitted once, final, when the watermark has released it and its
whole frame is known; rows no future frame can reach are dropped.

A state holds one partition (one ``groupBy`` key) or many (a bucket of keys, told apart by the key
columns): per partition its rows sorted by (ORDER BY key, row identity), first the ``released`` ones
— the history future frames still reach plus released rows waiting for their FOLLOWING rows — then
the ``pending`` ones the watermark has not released yet (every pending key is above every released
one), and its counters (a row of the ``parts`` table). A step runs every partition at once, with
array operations over the partitions' boundaries and one kernel call:

1. drops late rows (key at or below the watermark already released; NULL keys) and counts them, and
   merges the others into the pending rows, in order (the sort buffer);
2. releases the pending rows whose key is at or below the watermark: a prefix of them;
3. finds the released rows whose frames are complete — ``n FOLLOWING`` rows and ``lead`` need n rows
   after them, ``GROUPS n FOLLOWING`` n peer groups, ``RANGE x FOLLOWING`` a watermark at or past
   key + x — evaluates every call on the buffer with the batch kernels and emits those rows;
4. prunes the rows before the earliest position any future frame reaches (ROWS/GROUPS/RANGE
   ``PRECEDING`` distances, ``lag`` offsets; ``UNBOUNDED PRECEDING`` keeps everything), at a peer-group
   boundary, counting pruned rows and peer groups so row_number/rank/dense_rank continue.

At the end of input (watermark ``END_OF_INPUT``) every row held is released and emitted, frames cut at
the partition's end, and the state is pruned empty.

Cost per step: O(b log b) for a buffer of b rows over all its partitions (frame reach plus unemitted
rows), whatever the number of partitions.

A step's released rows, and where each call's frames are complete (3) and how far back they reach
(4) in them: ``released.Released``; the rows sorted by (partition, key), new rows merged into the
held ones (1): ``sorted_rows``.

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

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.evaluator import evaluate_calls, project
from overwindow.logical.bind import source_columns
from overwindow.logical.frame import BoundKind, FrameUnit, Interval
from overwindow.physical.columns import resolve_column
from overwindow.physical.key_shift import key_numbers, shift_key
from overwindow.physical.sorting import Layout
from overwindow.physical.values import TypeFamily, Values
from overwindow.spec import OverWindow
from overwindow.streaming.aside import Aside, Qualify, RowChecks, project_failing
from overwindow.streaming.contract import END_OF_INPUT, Counters, Step, held_schema, keys_of
from overwindow.streaming.released import Released
from overwindow.streaming.sorted_rows import in_order, merged, within
from overwindow.streaming.state import (
    StateFormatError,
    WindowCloseMeta,
    buckets_changed,
    decode,
    encode,
    held_columns,
)
from overwindow.streaming.stretch import evaluate_stretch, peer_groups

STATE_KIND = "window_close"
_COUNTERS = ("n", "emitted", "pruned_rows", "pruned_groups")  # per partition, in the ``parts`` table


class WindowClose:
    """The emit-on-window-close machine for one spec and input schema; stateless between calls.

    ``keys``: the columns that tell partitions apart when one state holds many (a bucket of
    ``groupBy`` keys, ``spec.key_buckets`` buckets; NULLs are one partition, as in PARTITION BY);
    none: the state is one partition. Every partition of a state steps in every call, in one pass
    of array operations and one kernel call, so a call's cost follows the rows it holds, not the
    partitions."""

    def __init__(self, spec: OverWindow, schema: pa.Schema, keys: tuple[str, ...] = ()):
        if spec.emit != "on_window_close":
            raise WindowSpecError("WindowClose runs specs with emit='on_window_close'")
        self.spec = spec
        self.input = schema
        empty = schema.empty_table()
        self.order = resolve_column(empty, spec.order_column)
        kind = Values(empty.column(self.order)).kind
        if not kind.is_ordered_number:
            raise WindowSpecError(
                f"ORDER BY {self.order} must be a TIMESTAMP, DATE or number to follow a watermark, "
                f"not {schema.field(self.order).type}"
            )
        self.key_type = schema.field(self.order).type
        self.keys = [resolve_column(empty, k) for k in keys]
        self.buckets = spec.key_buckets if self.keys else None
        # the columns held and emitted (``OverWindow.carrying``); the split layout reads its
        # histories against the columns it wrote them with, so it holds all of them
        row_key = tuple(resolve_column(empty, c) for c in spec.row_key or ())
        whole = spec.state_layout == "whole"
        self.schema = held_schema(spec, schema, (*self.keys, *row_key)) if whole else schema
        identity = spec.row_key or source_columns(self.schema.names)
        self.sort_keys = [(self.order, "ascending")] + [
            (resolve_column(empty, c), "ascending") for c in identity if c != self.order
        ]
        self.expressions = list(spec.expressions)
        # the columns no later step reads from a row once it is emitted (format 6 stores them NULL
        # there): all but the ORDER BY key, the key columns and what the calls read
        read = {self.order, *self.keys}
        read |= {resolve_column(empty, c) for call in spec.calls for c in call.columns()}
        self.unread = [c for c in self.schema.names if c not in read]
        held = self.schema.empty_table()
        self.output_schema = project(held, self.expressions, evaluate_calls(held, self.expressions)).schema
        results = self.output_schema.empty_table()
        self.qualify = spec.qualify and Qualify(spec.qualify, results, self.schema.names)
        self.counts = any(c.info.counts is not None for c in spec.calls)  # row_number, rank, ...
        self.checks = RowChecks(spec.calls, schema.names)
        self.ttl = spec.state_ttl
        if self.ttl is not None and not _measures(self.ttl, kind):
            raise WindowSpecError(
                f"stateTtl={self.ttl} does not measure ORDER BY {self.order} "
                f"({schema.field(self.order).type}): use an interval ('7 days') for a TIMESTAMP key, "
                "an interval or whole days for a DATE, a number for a numeric key"
            )
        # per partition: its key, counters, and the newest ORDER BY key it has seen (stateTtl);
        # before any row, that key is below every key
        newest = key_numbers(Values(empty.column(self.order))).dtype
        self.no_key = -np.inf if newest.kind == "f" else np.iinfo(np.int64).min
        self.no_wait = (
            np.float64(np.inf) if newest.kind == "f" else np.int64(np.iinfo(np.int64).max)
        )  # _range_waits
        self.parts_schema = pa.schema(
            [schema.field(k) for k in self.keys]
            + [pa.field(c, pa.int64()) for c in _COUNTERS]
            + [pa.field("newest", pa.from_numpy_dtype(newest))]
        )

    # -- state -------------------------------------------------------------------------------

    def _load(self, state: bytes | None) -> tuple[pa.Table, pa.Table, WindowCloseMeta]:
        """(rows, parts, meta) of a state: rows sorted by partition then (ORDER BY key, identity),
        released rows first in each partition (pending rows of formats 1-2 may be out of order: the
        step sorts them); the columns format 5 leaves out (``_stored``) filled in."""
        if state is None:
            return self.schema.empty_table(), self.parts_schema.empty_table(), WindowCloseMeta()
        tables, meta = decode(state, STATE_KIND, WindowCloseMeta)
        rows = tables["rows"]
        if meta.one_partition is None:
            stored = tables["parts"]
            names = stored.column_names
            written = [c for c in names if c not in _COUNTERS and c != "newest"]
            if meta.buckets != self.buckets or written != self.keys:
                raise buckets_changed(meta.buckets, written, self.buckets, self.keys)
            zeros = pa.array(np.zeros(stored.num_rows, np.int64))
            counted = self.parts_schema.names[:-1]  # the keys and counters; ``newest`` below
            parts = pa.table({c: stored.column(c) if c in names else zeros for c in counted})
            rows = self.held(self._with_keys(rows, parts))
            if "newest" in names:
                newest = stored.column("newest")
            elif self.ttl is not None:  # format 3, or formats 5-6 written without stateTtl
                newest = self._newest_held(rows, parts, meta.released_upto)
            else:  # read only under stateTtl
                newest = pa.array(self._no_key(parts.num_rows))
            return rows, parts.append_column("newest", newest).cast(self.parts_schema), meta
        if self.keys:
            raise StateFormatError(
                "this state was written for one key per state (formats 1-2); a state of many keys "
                "cannot continue it: start the query from a new checkpoint"
            )
        rows = self.held(rows)
        if not meta.one_partition.get("pending_sorted", False):  # pending rows as they arrived
            rows = self._insert(rows, self._keys(rows), np.zeros(rows.num_rows, dtype=np.int64))[0]
        one = {c: meta.one_partition.get(c, 0) for c in _COUNTERS[1:]}
        parts = pa.table({"n": [rows.num_rows], **{c: [v] for c, v in one.items()}})
        parts = parts.append_column("newest", self._newest_held(rows, parts, meta.released_upto))
        parts = parts.cast(self.parts_schema)
        if not rows.num_rows and not one["pruned_rows"]:
            parts = parts.slice(0, 0)
        meta.one_partition = None
        return rows, parts, meta

    def _stored(self, table: pa.Table, parts: pa.Table) -> dict[str, pa.Table]:
        """The state's tables as format 6 writes them: as format 5, smaller than the step's by what
        can be rebuilt, and without the columns no later step reads of the rows already emitted
        (``emitted_read_only``). Format 5 leaves out of the rows the key columns (each
        partition's row of ``parts`` holds its key; floating keys stay, as -0.0 and 0.0 are one
        partition but two values), stores ``parts`` with each counter as int32 where every value
        fits and left out where every value is 0, and ``newest`` only under ``stateTtl`` (its only
        reader). A bucket's state moves whole through Spark every micro-batch that reaches it and
        is held in the state store: half the bytes at 1,000,000 sparse keys held (the
        micro-batch's time moved within the noise: BENCHMARKS.md).
        O(partitions), and O(rows) for the emitted rows' columns.

        >>> from overwindow.spec import OverWindow
        >>> m = WindowClose(
        ...     OverWindow("lag(x) OVER (ORDER BY t) AS p", keyBuckets=2),
        ...     pa.schema([("k", pa.string()), ("t", pa.int64()), ("x", pa.int64())]),
        ...     keys=("k",),
        ... )
        >>> done = m.advance(*m._load(None), pa.table({"k": ["a", "a"], "t": [1, 2], "x": [5, 6]}), 1)
        >>> stored = m._stored(done.table, done.parts)
        >>> stored["rows"].column_names, stored["parts"].schema.types
        (['t', 'x'], [DataType(string), DataType(int32), DataType(int32)])
        """
        drop = [k for k in self.keys if _rebuilt_exactly(self.schema.field(k).type)]
        columns = {k: parts.column(k) for k in self.keys}
        for c in _COUNTERS:
            values = parts.column(c).to_numpy()
            if values.any():
                narrow = values.min() >= np.iinfo(np.int32).min and values.max() <= np.iinfo(np.int32).max
                columns[c] = pa.array(values.astype(np.int32)) if narrow else parts.column(c)
        if self.ttl is not None:
            columns["newest"] = parts.column("newest")
        return {"rows": self.emitted_read_only(table.drop_columns(drop), parts), "parts": pa.table(columns)}

    def emitted_read_only(self, rows: pa.Table, parts: pa.Table) -> pa.Table:
        """``rows`` with the columns no later step reads (``unread``) NULL in the rows already
        emitted (each partition's first ``emitted``): those stay only as history for later rows'
        frames, which read the ORDER BY key and the calls' columns, and are never emitted again.
        Format 6; ``_insert`` keeps their order without their identities. A row's other columns
        (a wide event's payload) then cost nothing held. O(rows x unread columns).

        >>> from overwindow.spec import OverWindow
        >>> m = WindowClose(
        ...     OverWindow("lag(x) OVER (ORDER BY t) AS p"),
        ...     pa.schema([("t", pa.int64()), ("x", pa.int64()), ("payload", pa.string())]),
        ... )
        >>> done = m.advance(*m._load(None), pa.table({"t": [1, 2], "x": [5, 6], "payload": ["a", "b"]}), 1)
        >>> m._stored(done.table, done.parts)["rows"].to_pydict()  # t=1 emitted, t=2 pending
        {'t': [1, 2], 'x': [5, 6], 'payload': [None, 'b']}
        """
        emitted = parts.column("emitted").to_numpy()
        if not self.unread or not emitted.any():
            return rows
        n = parts.column("n").to_numpy().astype(np.int64)
        part = np.repeat(np.arange(len(n)), n)
        done = within(part, n) < emitted[part]
        # a take through NULL positions writes zeros beneath the NULLs, which compress to nothing
        # (``if_else`` would keep the values there); the field stays as declared, NOT NULL
        # included (Spark declares uuid() and lit() columns so), for the next step's rows to
        # concatenate with it
        nulled = pa.array(np.arange(rows.num_rows), mask=done)
        for c in self.unread:
            if c in rows.column_names:
                at_c = rows.column_names.index(c)
                rows = rows.set_column(at_c, rows.schema.field(at_c), rows.column(c).take(nulled))
        return rows

    def _with_keys(self, rows: pa.Table, parts: pa.Table) -> pa.Table:
        """``rows`` with the key columns ``_stored`` left out taken again from their partitions'
        rows of ``parts``. O(rows)."""
        missing = [k for k in self.keys if k not in rows.column_names]
        if not missing:
            return rows
        n = parts.column("n").to_numpy().astype(np.int64)
        at = pa.array(np.repeat(np.arange(len(n)), n))
        columns = [parts.column(k).take(at) if k in missing else rows.column(k) for k in self.schema.names]
        return pa.Table.from_arrays(columns, schema=self.schema)

    def _newest_held(self, rows: pa.Table, parts: pa.Table, released_upto) -> pa.Array:
        """The newest ORDER BY key per partition of a state that did not keep it (formats 1-3, and
        formats 5-6 written without stateTtl): its newest row's, or, for a partition whose rows were
        all pruned, the watermark it had reached (so ``stateTtl`` forgets it no earlier than it
        would have)."""
        n = parts.column("n").to_numpy().astype(np.int64)
        newest = self._no_key(len(n))
        np.fmax.at(newest, np.repeat(np.arange(len(n)), n), self._keys(rows))
        if released_upto is not None and released_upto != END_OF_INPUT:
            newest[n == 0] = released_upto
        return pa.array(newest)

    def _no_key(self, size: int) -> np.ndarray:
        """``size`` partitions' newest keys before any row."""
        return np.full(size, self.no_key, dtype=self.parts_schema.field("newest").type.to_pandas_dtype())

    # -- the step ----------------------------------------------------------------------------

    def step(self, state: bytes | None, rows: pa.Table | None, watermark=None) -> Step:
        """Feed new rows and the current watermark (in the ORDER BY key's numbers: microseconds
        since the epoch for TIMESTAMP/DATE keys). Returns the rows whose windows closed."""
        done = self.advance(*self._load(state), rows, watermark)
        return replace(done.step, state=encode(self._stored(done.table, done.parts), STATE_KIND, done.meta))

    def advance(
        self,
        table: pa.Table,
        parts: pa.Table,
        meta: WindowCloseMeta,
        rows: pa.Table | None,
        watermark,
        held_rows: int = 0,
    ) -> Advanced:
        """``step`` over decoded state: ``table`` the rows held, sorted by partition then (ORDER BY
        key, identity), ``parts`` one row per partition in that order (its key, counters and newest
        key; ``n`` its rows in ``table``), ``meta`` the watermark applied and the late count (changed
        in place); the first ``held_rows`` of ``rows`` are pending rows held already, fed back (never
        late: a NaN key stays pending until the end of input). Returns the step (without state
        bytes) and the state's tables after it."""
        count = {c: parts.column(c).to_numpy().astype(np.int64) for c in _COUNTERS}
        newest = parts.column("newest").to_numpy(zero_copy_only=False)
        held = parts.select(self.keys)
        part = np.repeat(np.arange(parts.num_rows), count["n"])
        # the ORDER BY key as numbers, computed once per step and carried beside the rows
        keys = self._keys(table)
        late, aside, late_keys = 0, None, ()
        # the watermark after this step (late rows are judged by the one reached before it)
        upto = meta.released_upto
        if watermark is not None and (upto is None or watermark > upto):
            upto = watermark
        # stateTtl: partitions the watermark has passed by more than the TTL before this step's rows
        forgotten = self._forgotten(newest, upto)
        if rows is not None and rows.num_rows:
            rows, aside = self.checks.split(self.conform(rows))
            rows = self.held(rows)
            held, renumber, new_part = self._partitions(held, forgotten, rows)
            count = {c: _spread(v, renumber, np.zeros(held.num_rows, np.int64)) for c, v in count.items()}
            newest = _spread(newest, renumber, self._no_key(held.num_rows))
            forgotten = _spread(forgotten, renumber, np.zeros(held.num_rows, dtype=bool))
            known = np.zeros(held.num_rows, dtype=bool)
            known[renumber] = True
            new = Values(rows.column(self.order))
            new_k = key_numbers(new)
            ok = new.valid.copy() if new.array.null_count else new.valid
            if meta.released_upto is not None:  # rows of partitions already held: at or below it is late
                ok = ok & ((new_k > meta.released_upto) | ~known[new_part] | (np.arange(len(ok)) < held_rows))
            late = len(ok) - int(np.count_nonzero(ok))
            if late:
                late_keys = keys_of(rows, self.keys, ~ok)
                rows, new_k, new_part = rows.filter(pa.array(ok)), new_k[ok], new_part[ok]
            count["n"] += np.bincount(new_part, minlength=held.num_rows)
            np.fmax.at(newest, new_part, new_k)
            table, keys, part = self._insert(
                pa.concat_tables([table, rows]),
                np.concatenate([keys, new_k]),
                np.concatenate([renumber[part], new_part]),
                table.num_rows,
                meta.released_upto,
            )
        meta.late_rows += late
        meta.buckets = self.buckets
        meta.released_upto = upto
        ended = forgotten | (meta.released_upto == END_OF_INPUT)
        b = Released(table, keys, part, count, meta.released_upto, ended)
        b.newest, b.forgotten = newest, forgotten
        out, b.upto, unready = self._emit(b)
        aside = Aside.join(aside, unready)
        keep = self._prune(b, b.upto)
        table, parts = self._after(b, keep, held)
        waits = self._range_waits(b)
        step = Step(
            None,
            out,
            self._wakeup(b, waits),
            late,
            Counters(table.num_rows, meta.late_rows, bad_rows=len(aside) if aside else 0),
            parts.num_rows == 0,
            _largest(parts, self.keys),
            aside,
            late_keys,
        )
        return Advanced(step, table, parts, meta, waits[b.live])

    def conform(self, rows: pa.Table) -> pa.Table:
        """``rows`` with the input schema's columns, in its order and types."""
        if rows.schema.names != self.input.names:
            rows = rows.select(self.input.names)
        return rows if rows.schema.equals(self.input) else rows.cast(self.input)

    def held(self, rows: pa.Table) -> pa.Table:
        """``rows`` (the input's columns, or a state's written holding more) with the columns held
        alone. O(columns)."""
        return held_columns(rows, self.schema.names)

    def _forgotten(self, newest: np.ndarray, now) -> np.ndarray:
        """Per partition, whether ``stateTtl`` forgets it in this step: the watermark ``now`` is
        more than the TTL past its newest key. It ends as at the end of input, and rows of its key
        in this step start a new partition."""
        if self.ttl is None or now is None or now == END_OF_INPUT:
            return np.zeros(len(newest), dtype=bool)
        return shift_key(newest, self.key_type, self.ttl, +1) < now

    def _keys(self, table: pa.Table) -> np.ndarray:
        return key_numbers(Values(table.column(self.order)))

    def _partitions(
        self, held: pa.Table, forgotten: np.ndarray, rows: pa.Table
    ) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """(the keys of the partitions held (``held``; ``forgotten``: those ending now, whose keys'
        rows start new partitions) and of those ``rows`` start, in key order, one row each; each
        held partition's new number; each row's partition). One sort of the keys; without key
        columns the rows join the one partition (or start it anew)."""
        n_held = len(forgotten)
        if not self.keys:
            anew = int(forgotten.any())
            return (
                pa.table({"_": [0] * max(n_held + anew, 1)}).select([]),
                np.zeros(n_held, dtype=np.int64),
                np.full(rows.num_rows, anew, dtype=np.int64),
            )
        both = pa.concat_tables([held, rows.select(self.keys).cast(held.schema)])
        columns = [Values(both.column(k).combine_chunks()) for k in self.keys]
        if forgotten.any():  # a generation apart: a forgotten partition's key starts another
            generation = np.concatenate([~forgotten, np.ones(rows.num_rows, dtype=bool)])
            columns.append(Values(pa.array(generation.astype(np.int8))))
        layout = Layout.build(columns, [], both.num_rows)
        number = np.empty(both.num_rows, dtype=np.int64)
        number[layout.perm] = layout.part_id
        firsts = layout.perm[layout.part_bounds[:-1]]
        return both.take(pa.array(firsts)), number[:n_held], number[n_held:]

    def _insert(self, table: pa.Table, keys: np.ndarray, part: np.ndarray, held: int = 0, released=None):
        """The rows sorted by (partition, ORDER BY key, row identity); the first ``held`` rows come
        sorted (ties among them in identity order) and new ones mostly in order, as streams mostly
        are. Held rows at or below ``released`` (the watermark they were released at) keep their
        order: no other row ties with them (later keys are above it), and emitted ones may have
        NULL identities (``emitted_read_only``)."""
        order = merged(keys, part, held)
        if in_order(part[order], keys[order], order >= held):
            if (order[1:] > order[:-1]).all():
                return table, keys, part
            return table.take(pa.array(order)), keys[order], part[order]
        # the keys alone decide the order where they are distinct within each partition, and the
        # stable sort keeps held rows' ties in their order; ties (or NaN) with a new row go to the
        # full sort by (partition, ORDER BY key, row identity)
        with_part = table.append_column("__ow_part", pa.array(part))
        sort_keys = [("__ow_part", "ascending"), *self.sort_keys]
        if released is not None and held:
            at = np.arange(len(keys))
            kept = (at < held) & (keys <= released)
            with_part = with_part.append_column("__ow_held", pa.array(np.where(kept, at, len(keys))))
            sort_keys.insert(2, ("__ow_held", "ascending"))
        order = pc.sort_indices(with_part, sort_keys=sort_keys).to_numpy()
        return table.take(pa.array(order)), keys[order], part[order]

    def _emit(self, b: Released) -> tuple[pa.Table, np.ndarray, Aside | None]:
        """(the released rows whose frames are complete, emitted now; per partition the position
        emitted up to; the rows among them set aside: an expression over their window results
        fails)."""
        start = b.count["emitted"]
        upto = b.n_released.copy()
        for call in () if b.final else self.spec.calls:
            upto = np.minimum(upto, b.complete_upto(call, start, self.key_type))
        upto = np.where(b.ended, b.n_released, np.maximum(upto, start))
        emitting = upto > start
        if not emitting.any():
            return self.output_schema.empty_table(), upto, None
        # the released rows of the partitions that emit: sorted already, positions count the
        # pruned rows too
        take = emitting[b.rel_part]
        rows = b.released.filter(pa.array(take))
        rel_part, pos = b.rel_part[take], b.pos[take]
        groups = peer_groups(b.groups[take])
        results = evaluate_stretch(
            rows,
            self.expressions,
            groups,
            b.count["pruned_rows"][rel_part],
            b.count["pruned_groups"][rel_part],
            parts=rel_part,
        )
        now = pa.array((pos >= start[rel_part]) & (pos < upto[rel_part]))
        results = {k: v.filter(now) for k, v in results.items()}
        rows = rows.filter(now)
        out, why = project_failing(rows, self.expressions, results)
        aside = None
        if why is not None:
            fine = pc.is_null(why)
            aside = Aside(rows.filter(pc.invert(fine)), why.drop_null().to_pylist())
            out = out.filter(fine)
        if self.qualify is not None:  # rows failing it are not in the result
            passes, unsure = self.qualify.holds(out)
            out, aside = out.filter(pa.array(passes)), Aside.join(aside, unsure)
        return out, upto, aside

    def _prune(self, b: Released, upto: np.ndarray) -> np.ndarray:
        """Per partition, how many of its first released rows no future frame reaches (all of them
        after the end of input): the rows before the earliest one a frame of a row at or after
        ``upto`` (the first not emitted) reads, moved back to its peer group's first row."""
        n = b.n_released
        if b.final or not len(b.groups):
            return n.copy()
        keep = upto.copy()
        for call in self.spec.calls:
            keep = np.minimum(keep, b.reach_back(call, upto, self.key_type))
        keep = np.clip(keep, 0, None)
        # never split a peer group: RANGE peers and rank counters need it whole
        keep = np.where(keep < n, b.group_start(keep), keep)
        return np.where(b.ended, n, keep)

    def _after(self, b: Released, keep: np.ndarray, keys: pa.Table) -> tuple[pa.Table, pa.Table]:
        """(the rows and parts tables left after pruning ``keep`` rows from each partition's start,
        ``keys`` the partitions' keys); a partition that holds nothing a later step reads (no rows,
        no numbering to continue) is dropped."""
        count = dict(b.count)
        pruned = keep > 0
        count["pruned_rows"] = count["pruned_rows"] + keep
        count["emitted"] = b.upto - keep
        count["n"] = count["n"] - keep
        table = b.table
        if pruned.any():
            last = b.local_groups[b.at(keep - 1)]
            count["pruned_groups"] = count["pruned_groups"] + np.where(pruned, last + 1, 0)
            table = table.filter(pa.array(within(b.part, b.count["n"]) >= keep[b.part]))
        columns = {k: keys.column(k) for k in self.keys}
        counters = {c: pa.array(count[c], pa.int64()) for c in _COUNTERS}
        parts = pa.table({**columns, **counters, "newest": pa.array(b.newest)})
        b.live = ((count["n"] > 0) | ((count["pruned_rows"] > 0) & self.counts)) & ~b.forgotten
        if not b.live.all():
            parts = parts.filter(pa.array(b.live))
        return table, parts.cast(self.parts_schema)

    def _wakeup(self, b: Released, waits: np.ndarray):
        """The smallest watermark at which some partition can emit again without new rows
        (``waits``: each partition's ``_range_waits``)."""
        times = []
        pending = b.keys[~b.released_mask]
        pending = pending[~np.isnan(pending)] if pending.dtype.kind == "f" else pending
        if len(pending):
            times.append(pending.min())  # the lowest pending key
        elif not b.released_mask.all():
            times.append(END_OF_INPUT)  # pending keys that are NaN: released at the end of input
        if (b.upto < b.n_released).any():
            times.append(END_OF_INPUT)  # released rows wait for later rows, or at least the end
            if (waits != self.no_wait).any():
                times.append(waits.min())
        if self.ttl is not None and b.live.any():  # the first partition stateTtl forgets
            times.append(shift_key(b.newest[b.live], self.key_type, self.ttl, +1).min())
        wakeup = min(times) if times else None
        return wakeup.item() if isinstance(wakeup, np.generic) else wakeup

    def _range_waits(self, b: Released) -> np.ndarray:
        """Per partition, the watermark at which its first released row not emitted yet has the
        rows of every ``RANGE x FOLLOWING`` frame (``no_wait``: none waits on the watermark alone;
        rows waiting for later rows emit when those are released, or at the end of input)."""
        waits = np.full(len(b.n_released), self.no_wait, dtype=type(self.no_wait))
        waiting = np.flatnonzero(b.upto < b.n_released)
        if not len(waiting):
            return waits
        first = b.rel_keys[(b.rel_start + b.upto)[waiting]]
        for call in self.spec.calls:
            end = call.reads.end
            if call.reads.unit is FrameUnit.RANGE and end.kind is BoundKind.FOLLOWING:
                waits[waiting] = np.minimum(waits[waiting], shift_key(first, self.key_type, end.offset, +1))
        return waits


@dataclass
class Advanced:
    """What ``WindowClose.advance`` leaves: the step (its ``state`` None), the state's rows and
    ``parts`` after it (partitions in the rows' order), its ``meta``, and per partition of ``parts``
    its ``WindowClose._range_waits``."""

    step: Step
    table: pa.Table
    parts: pa.Table
    meta: WindowCloseMeta
    waits: np.ndarray


def _spread(values: np.ndarray, at: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``values`` placed at positions ``at`` of ``out`` (the values of partitions new here)."""
    out[at] = values
    return out


def _largest(parts: pa.Table, keys: list[str]):
    """(rows, key) of the partition holding the most rows, for the bound on rows per key."""
    if not keys or not parts.num_rows:
        return None
    n = parts.column("n").to_numpy()
    i = int(np.argmax(n))
    return int(n[i]), tuple(parts.column(k)[i].as_py() for k in keys)


def _rebuilt_exactly(t: pa.DataType) -> bool:
    """Whether a key column of type ``t`` is rebuilt exactly from its partition's key: every value
    of one partition is the same value (not so for floats: -0.0 and 0.0, NaNs)."""
    return not (pa.types.is_floating(t) or pa.types.is_nested(t))


def _measures(ttl, kind: TypeFamily) -> bool:
    """Whether a ``stateTtl`` offset applies to an ORDER BY key of ``kind`` (as RANGE offsets do)."""
    if kind is TypeFamily.TIMESTAMP:
        return isinstance(ttl, Interval)
    if kind is TypeFamily.DATE:
        return isinstance(ttl, (Interval, int))
    return not isinstance(ttl, Interval)
