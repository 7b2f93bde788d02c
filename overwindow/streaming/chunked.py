"""Emit on update over chunked state: a partition's held rows kept as chunks of at most a few hundred
rows, so a micro-batch reads and writes only the chunks its changes reach, not the whole partition.

The whole-state layout (``OnUpdate.step``) keeps one value per key that Spark moves whole every
micro-batch; its cost grows with the rows held (BENCHMARKS.md, "Incremental versus recompute").
Here a partition is:

- an index (one small value): per chunk its id, its row count and its first row, plus the
  partition's meta (horizon, counters, the next chunk id);
- chunks (one value per chunk id): rows sorted as the whole state is, with their results, encoded
  exactly as a whole state (``OnUpdate.encode``);
- with a row key, where each identity is held (identity -> chunk id), so deletes and updates find
  the chunk of a row that may sit anywhere in the partition.

A step places each change (inserts by their position among the chunks' first rows, deletes and
replaced rows by identity), loads the chunks around the changes into stretches (``margin`` rows
either side), and runs ``OnUpdate.apply`` on each stretch; a stretch too narrow for a change's
frames raises ``NeedRows`` and is widened by a chunk on that side. With a watermark, the chunks
around it are loaded and evicted from the same way; chunks wholly behind are dropped unread
(their identities are read once to forget them, with a row key). Changed chunks are written back;
a chunk grown past twice the chunk size is split. Outputs equal the whole-state layout's.

On a bucket of keys (the machine's ``keys``), one state holds many partitions, each with entries of
its own: its index keyed by its partition key (``partitions.key_bytes``), its chunks keyed by (that
key, chunk id), and the identities (hashed with the key, so two keys' rows never collide) in one
map; the bucket's own value records the keyBuckets and key columns. A step groups the bucket's rows
by key and steps each key with rows on its entries, as a partition of its own: keys without rows
are not read, so a step's cost follows the keys it changes, not the keys the bucket holds.

Cost per step: O(changes x frame reach + chunks touched x chunk size), independent of the rows held,
plus one store call per chunk read or written and, with a row key, one per identity looked up or
placed. Needs calls whose frames have bounded reach (``WindowCall.unbounded_reach``, checked by
``OverWindow(stateLayout="chunked")``): ranking functions and unbounded frames depend on every row
to one end of the partition.

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> m = ChunkedOnUpdate(
...     OnUpdate(
...         OverWindow(
...             "sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s", emit="on_update", stateLayout="chunked"
...         ),
...         pa.schema([("t", pa.int64()), ("x", pa.int64())]),
...     ),
...     rows_per_chunk=2,
... )
>>> store = MemoryChunks()
>>> m.step(store, pa.table({"t": [1, 2, 3], "x": [10, 20, 30]})).output.column("s").to_pylist()
[10, 30, 50]
>>> m.step(store, pa.table({"t": [4, 5], "x": [5, 1]})).output.column("s").to_pylist(), len(store.chunks)
([35, 6], 3)

On a bucket of keys, each key with rows steps on its own entries:

>>> call = "sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s"
>>> spec = OverWindow(call, emit="on_update", stateLayout="chunked", keyBuckets=4)
>>> schema = pa.schema([("k", pa.string()), ("t", pa.int64()), ("x", pa.int64())])
>>> b = ChunkedOnUpdate(OnUpdate(spec, schema, keys=("k",)))
>>> bucket = MemoryBucket()
>>> rows = pa.table({"k": ["a", None, "a"], "t": [1, 1, 2], "x": [10, 20, 30]})
>>> b.step(bucket, rows).output.column("s").to_pylist()  # the NULL key's row first
[20, 10, 40]
>>> len(bucket.held()), bucket.rows_held()
(2, 3)
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Protocol

import numpy as np
import pyarrow as pa

from overwindow.evaluator import values_of
from overwindow.physical.key_shift import key_numbers
from overwindow.physical.values import Values
from overwindow.streaming.arrays import member
from overwindow.streaming.aside import Aside
from overwindow.streaming.changes import Changes
from overwindow.streaming.contract import END_OF_INPUT, Counters, Step
from overwindow.streaming.identity import IDENTITY
from overwindow.streaming.on_update import Applied, OnUpdate
from overwindow.streaming.partitions import key_bytes, starts
from overwindow.streaming.reach import NeedRows
from overwindow.streaming.state import ChunkIndexMeta, buckets_changed, decode, encode

INDEX_KIND = "on_update_index"
ROWS_PER_CHUNK = 512
CHUNK, CHUNK_ROWS = "__ow_chunk", "__ow_rows"  # the index's columns: per chunk its id, its rows


class ChunkStore(Protocol):
    """Where one partition's chunked state lives (a key's state variables in Spark)."""

    def read_index(self) -> bytes | None: ...

    def write_index(self, data: bytes) -> None: ...

    def remove_index(self) -> None:
        """The partition holds nothing: no index is kept for it."""

    def read_chunk(self, chunk: int) -> bytes: ...

    def write_chunk(self, chunk: int, data: bytes) -> None: ...

    def drop_chunk(self, chunk: int) -> None: ...

    def find_rows(self, ids: np.ndarray) -> np.ndarray:
        """The chunk id holding each identity, -1 where none does."""

    def place_rows(self, ids: np.ndarray, chunks: np.ndarray) -> None: ...

    def forget_rows(self, ids: np.ndarray) -> None: ...


class BucketStore(Protocol):
    """Where a bucket of keys' chunked state lives (a bucket's state variables in Spark): the
    bucket's own value, and the entries of each partition key."""

    def read_meta(self) -> bytes | None: ...

    def write_meta(self, data: bytes) -> None: ...

    def partition(self, key: bytes) -> ChunkStore:
        """The entries of the partition ``key`` (``partitions.key_bytes``): its index, its chunks
        and the identities it holds."""


class MemoryChunks:
    """A ChunkStore in dicts: the in-memory driver's and the tests'. Counts reads and writes."""

    def __init__(self):
        self.index, self.chunks, self.rows = None, {}, {}
        self.reads = self.writes = 0

    def read_index(self):
        return self.index

    def write_index(self, data):
        self.index = data

    def remove_index(self):
        self.index = None

    def read_chunk(self, chunk):
        self.reads += 1
        return self.chunks[chunk]

    def write_chunk(self, chunk, data):
        self.writes += 1
        self.chunks[chunk] = data

    def drop_chunk(self, chunk):
        del self.chunks[chunk]

    def find_rows(self, ids):
        return np.array([self.rows.get(int(i), -1) for i in ids], dtype=np.int64)

    def place_rows(self, ids, chunks):
        self.rows.update(zip(ids.tolist(), chunks.tolist()))

    def forget_rows(self, ids):
        for i in ids.tolist():
            self.rows.pop(i, None)

    def rows_held(self) -> int:
        """Rows the partition holds, from its index."""
        if self.index is None:
            return 0
        return sum(decode(self.index, INDEX_KIND, ChunkIndexMeta)[0]["index"].column(CHUNK_ROWS).to_pylist())


class MemoryBucket:
    """A BucketStore in dicts: the bucket's value and a MemoryChunks per partition key."""

    def __init__(self):
        self.meta, self.parts = None, {}

    def read_meta(self):
        return self.meta

    def write_meta(self, data):
        self.meta = data

    def partition(self, key):
        return self.parts.setdefault(key, MemoryChunks())

    def held(self) -> dict[bytes, MemoryChunks]:
        """The partitions holding rows, by key."""
        return {k: p for k, p in self.parts.items() if p.index is not None}

    def rows_held(self) -> int:
        return sum(p.rows_held() for p in self.parts.values())


@dataclass
class _Chunk:
    id: int
    n: int
    first: pa.Table  # the chunk's first row (input columns and identity)
    rows: pa.Table | None = None  # loaded or changed content
    results: pa.Table | None = None
    dirty: bool = False


class ChunkedOnUpdate:
    """``OnUpdate`` over a ChunkStore per partition, or over a BucketStore per bucket of keys when the
    machine has ``keys``; ``step`` as ``OnUpdate.step`` with a store in place of state bytes
    (Step.state is None: the store holds it)."""

    def __init__(self, machine: OnUpdate, rows_per_chunk: int = ROWS_PER_CHUNK):
        self.machine = machine
        self.size = rows_per_chunk
        self.output_schema = machine.output_schema
        self.tracks_ids = bool(machine.row_key)
        # rows either side of a change to load at first: the frame finder's own first guess
        self.margin = machine.finder.margin

    # -- index ---------------------------------------------------------------------------------

    def _read(self, store: ChunkStore) -> tuple[list[_Chunk], ChunkIndexMeta]:
        data = store.read_index()
        if data is None:
            return [], ChunkIndexMeta()
        tables, meta = decode(data, INDEX_KIND, ChunkIndexMeta)
        self._check(meta)
        index = tables["index"].combine_chunks()
        firsts = index.drop_columns([CHUNK, CHUNK_ROWS])
        return [
            _Chunk(int(c), int(n), firsts.slice(i, 1))
            for i, (c, n) in enumerate(
                zip(index.column(CHUNK).to_pylist(), index.column(CHUNK_ROWS).to_pylist())
            )
        ], meta

    def _write(self, store: ChunkStore, chunks: list[_Chunk], meta: ChunkIndexMeta) -> None:
        if not chunks:  # every row deleted or evicted: nothing kept, as the whole layout keeps none
            store.remove_index()
            return
        for c in chunks:
            if c.dirty:
                store.write_chunk(c.id, self.machine.encode(c.rows, c.results, None))
        firsts = pa.concat_tables([c.first for c in chunks]) if chunks else self.machine.empty_rows()
        index = firsts.append_column(CHUNK, pa.array([c.id for c in chunks], pa.int64())).append_column(
            CHUNK_ROWS, pa.array([c.n for c in chunks], pa.int64())
        )
        store.write_index(encode({"index": index}, INDEX_KIND, self._stamped(meta)))

    def _stamped(self, meta: ChunkIndexMeta) -> ChunkIndexMeta:
        """``meta`` with the keyBuckets and key columns the machine runs."""
        meta.buckets, meta.keys = self.machine.buckets, list(self.machine.keys) or None
        return meta

    def _check(self, meta: ChunkIndexMeta) -> None:
        """Refuse a state written with other keyBuckets or keys (or per key, or on buckets): its
        keys would land in other states."""
        m = self.machine
        if meta.buckets != m.buckets or tuple(meta.keys or ()) != m.keys:
            raise buckets_changed(meta.buckets, meta.keys or (), m.buckets, m.keys)

    def _load(self, store: ChunkStore, chunk: _Chunk) -> _Chunk:
        if chunk.rows is None:
            chunk.rows, chunk.results, _ = self.machine.load(store.read_chunk(chunk.id))
        return chunk

    def _firsts(self, chunks: list[_Chunk]) -> pa.Table:
        return pa.concat_tables([c.first for c in chunks])

    # -- the step ------------------------------------------------------------------------------

    def step(self, store: ChunkStore | BucketStore, rows: pa.Table | None, watermark=None) -> Step:
        """Apply one batch of changes to the partition in ``store`` (a ChunkStore), or with the
        machine's ``keys`` to the bucket of keys in ``store`` (a BucketStore); the changelog it
        causes."""
        if self.machine.keys:
            return self._step_bucket(store, rows, watermark)
        return self._step(store, rows, watermark)

    def _step_bucket(self, store: BucketStore, rows: pa.Table | None, watermark) -> Step:
        """``step`` over a bucket: its value checked (written on its first step), then each partition
        key with rows stepped on its own entries; keys without rows are not read (with a watermark,
        a key evicts when it gets rows, as the whole layout does). The step's counters are the sums
        over the keys stepped (``state_rows``: the rows they hold) and ``largest`` the one holding
        the most rows. O(rows) to group the rows by key, plus a partition step per key."""
        m = self.machine
        data = store.read_meta()
        if data is None:
            store.write_meta(encode({}, INDEX_KIND, self._stamped(ChunkIndexMeta())))
        else:
            self._check(decode(data, INDEX_KIND, ChunkIndexMeta)[1])
        if rows is None or not rows.num_rows:
            return Step(None, m.output_schema.empty_table())
        (parts,) = m.order.partitions(rows)
        order = np.argsort(parts, kind="stable")
        bounds = np.append(starts(parts[order]), len(order))
        firsts = rows.take(pa.array(order[bounds[:-1]])).select(list(m.keys))
        steps = [
            self._step(store.partition(key), rows.take(pa.array(order[a:b])), watermark)
            for key, a, b in zip(key_bytes(firsts), bounds[:-1], bounds[1:])
        ]
        outputs = [s.output for s in steps if s.output.num_rows]
        held = [s.counters.state_rows for s in steps]
        top = int(np.argmax(held))
        return Step(
            None,
            pa.concat_tables(outputs) if outputs else m.output_schema.empty_table(),
            None,
            sum(s.late_rows for s in steps),
            Counters(*(sum(getattr(s.counters, f.name) for s in steps) for f in fields(Counters))),
            largest=(held[top], tuple(firsts.column(k)[top].as_py() for k in m.keys)),
            aside=Aside.join(*(s.aside for s in steps)),
            late_keys=tuple(dict.fromkeys(k for s in steps for k in s.late_keys)),
        )

    def _step(self, store: ChunkStore, rows: pa.Table | None, watermark) -> Step:
        """``step`` of one partition."""
        m = self.machine
        watermark = None if watermark == END_OF_INPUT else watermark
        chunks, meta = self._read(store)
        stored = {c.id for c in chunks}
        changes = m.changes(rows, meta.horizon, watermark)
        ins, ins_at, changed_ids, held_at = self._place(store, chunks, changes)
        if m.watermarked and (held_at >= 0).any():  # changes of held rows below the watermark are late
            held = [self._load(store, chunks[p]).rows for p in np.unique(held_at[held_at >= 0]).tolist()]
            later = m.late_by_held(changes, pa.concat_tables(held), meta.horizon, watermark)
            if later is not changes:
                changes = later
                ins, ins_at, changed_ids, held_at = self._place(store, chunks, changes)
        meta.late_rows += changes.late
        n_del = len(changes.deletes)
        known = changed_ids[:n_del][held_at[:n_del] >= 0] if len(held_at) else changed_ids[:0]
        unknown = len(changes.updates) - int(member(changes.updates, known).sum())
        if not chunks and ins.num_rows:
            empty = _Chunk(
                self._new_id(meta), 0, ins.slice(0, 1), m.empty_rows(), m.results_schema.empty_table()
            )
            chunks.append(empty)
        outputs, recomputed, forget, place = [], 0, [], []
        asides = [changes.aside, changes.deletes_not_held(known)]
        spans = self._apply_spans(store, chunks, meta, ins, ins_at, changed_ids, held_at, watermark)
        evicted_too = len(spans) == 1 and spans[0][0] == [0, len(chunks) - 1]  # the whole partition
        # apply every stretch's result to the chunk list from the right, so positions stay valid
        for (a, b), done, gone in reversed(spans):
            outputs.append(done.output)
            recomputed += done.recomputed
            asides.append(done.aside)
            forget.append(gone)
            place.append(self._replace(chunks, a, b, done, meta))
        evicted = np.zeros(0, dtype=np.int64)
        if watermark is not None and m.eviction is not None and chunks and not evicted_too:
            evicted = self._evict(store, chunks, meta, watermark)
        if self.tracks_ids:
            self._update_ids(store, forget, place, evicted)
        for cid in stored - {c.id for c in chunks}:
            store.drop_chunk(cid)
        self._write(store, chunks, meta)
        outputs = [o for o in outputs if o.num_rows]
        output = pa.concat_tables(outputs[::-1]) if outputs else m.output_schema.empty_table()
        aside = Aside.join(*asides)
        counters = Counters(
            sum(c.n for c in chunks), meta.late_rows, recomputed, len(aside) if aside else 0, unknown
        )
        return Step(
            None, output, None, changes.late, counters, not chunks, aside=aside, late_keys=changes.late_keys
        )

    def _place(
        self, store: ChunkStore, chunks: list[_Chunk], changes: Changes
    ) -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray]:
        """Where a batch's changes land: (the inserts, sorted; the chunk position each joins, that
        of the last chunk starting before it; the identities deleted or replaced; the chunk position
        holding each, -1 where none does or, without a row key, where the row is found by position
        in its insert's chunk). A binary search per insert, a store lookup per identity."""
        m = self.machine
        ins = changes.inserts
        changed_ids = np.concatenate([changes.deletes, ins.column(IDENTITY).to_numpy()])
        held_at = np.zeros(0, dtype=np.int64)
        if self.tracks_ids and len(changed_ids):
            position = {c.id: p for p, c in enumerate(chunks)}
            held_at = np.array(
                [position.get(c, -1) for c in store.find_rows(changed_ids).tolist()], dtype=np.int64
            )
        ins_at = np.zeros(ins.num_rows, dtype=np.int64)
        if chunks and ins.num_rows:
            firsts = self._firsts(chunks)
            f_codes, i_codes = m.order.codes(firsts, ins)
            ins, _, before = m.order.merge(firsts, f_codes, np.arange(len(chunks)), ins, i_codes)
            ins_at = np.maximum(before - 1, 0)
        return ins, ins_at, changed_ids, held_at

    def _apply_spans(
        self,
        store: ChunkStore,
        chunks: list[_Chunk],
        meta: ChunkIndexMeta,
        ins: pa.Table,
        ins_at: np.ndarray,
        changed_ids: np.ndarray,
        held_at: np.ndarray,
        watermark=None,
    ) -> list[tuple[list[int], Applied, np.ndarray]]:
        """``OnUpdate.apply`` over the stretches of chunks the changes reach (``_spans``), a stretch
        widened by a chunk on each side a change's frames reach past (``NeedRows``), merging with the
        stretches it meets. Per stretch, left to right: its chunk positions [a, b], what ``apply``
        made of it, the identities held there that the batch deletes or replaces or (``watermark``:
        a stretch of the whole partition evicts in the same call, as the whole layout does, and
        ``meta`` takes its counts) evicts."""
        elsewhere = ins.column(IDENTITY).to_numpy()
        spans = self._spans(chunks, np.union1d(ins_at, held_at[held_at >= 0]))
        done_spans: list[tuple[list[int], Applied, np.ndarray]] = []
        while spans:
            a, b = spans[0]
            in_span = (ins_at >= a) & (ins_at <= b)
            # rows held here that the batch deletes or replaces (with a row key; else found by position)
            gone = changed_ids[(held_at >= a) & (held_at <= b)] if len(held_at) else np.zeros(0, np.int64)
            whole = a == 0 and b == len(chunks) - 1
            here = ins.filter(pa.array(in_span))
            try:
                done = self._apply(
                    store, chunks, a, b, meta, here, gone, watermark if whole else None, elsewhere
                )
            except NeedRows as short:
                spans[0] = _widened(a, b, short, len(chunks))
                self._absorb(spans, done_spans)
                continue
            spans.pop(0)
            if done.evicted:
                meta.evicted_rows, meta.evicted_groups = done.meta.evicted_rows, done.meta.evicted_groups
                meta.horizon = done.meta.horizon
                if self.tracks_ids:  # the rows held or inserted here that are gone now
                    before = [c.rows.column(IDENTITY).to_numpy() for c in chunks]
                    before.append(here.column(IDENTITY).to_numpy())
                    after = done.rows.column(IDENTITY).to_numpy()
                    gone = np.union1d(gone, np.setdiff1d(np.concatenate(before), after))
            done_spans.append(([a, b], done, gone))
        return done_spans

    def _spans(self, chunks: list[_Chunk], at: np.ndarray) -> list[list[int]]:
        """[first, last] chunk positions to load for changes in chunks ``at``: each with enough
        neighbours for ``margin`` rows either side, overlapping spans merged."""
        spans: list[list[int]] = []
        for p in at.tolist():
            a, b = p, p
            rows = 0
            while a > 0 and rows < self.margin:
                a -= 1
                rows += chunks[a].n
            rows = 0
            while b < len(chunks) - 1 and rows < self.margin:
                b += 1
                rows += chunks[b].n
            if spans and spans[-1][1] >= a:
                spans[-1][1] = max(spans[-1][1], b)
            else:
                spans.append([a, b])
        return spans

    @staticmethod
    def _absorb(spans: list[list[int]], done_spans: list) -> None:
        """Merge the widened first pending span with the spans it now overlaps (done ones are redone)."""
        a, b = spans[0]
        while done_spans and done_spans[-1][0][1] >= a:
            (da, _), _, _ = done_spans.pop()
            a = min(a, da)
        while len(spans) > 1 and spans[1][0] <= b:
            b = max(b, spans.pop(1)[1])
        spans[0] = [a, b]

    def _apply(self, store, chunks, a, b, meta, ins, gone, watermark, elsewhere) -> Applied:
        """``OnUpdate.apply`` over chunks a..b concatenated."""
        span = [self._load(store, c) for c in chunks[a : b + 1]]
        rows = pa.concat_tables([c.rows for c in span])
        results = pa.concat_tables([c.results for c in span])
        return self.machine.apply(
            rows, results, replace(meta), ins, gone, watermark, (a > 0, b < len(chunks) - 1), elsewhere
        )

    def _replace(self, chunks: list[_Chunk], a: int, b: int, done: Applied, meta: ChunkIndexMeta) -> tuple:
        """Put a span's new rows back as chunks a..b: each row stays in its old chunk, an insert joins
        the chunk of the row before it; chunks left empty go, chunks past twice the size split (new
        ids from ``meta``). Returns (identities, chunk ids) of rows now held in another chunk."""
        sizes = np.array([c.n for c in chunks[a : b + 1]])
        label_of_old = np.repeat(np.arange(b - a + 1), sizes)
        fo = done.from_old
        label = np.zeros(len(fo), dtype=np.int64)
        label[fo >= 0] = label_of_old[fo[fo >= 0]]
        label = np.maximum.accumulate(label) if len(label) else label  # inserts: the chunk before them
        ends = np.searchsorted(label, np.arange(b - a + 1), "right")
        starts = np.concatenate([[0], ends[:-1]])
        # chunks whose rows changed: an insert, a recomputed row, or a row gone
        dirty = np.zeros(b - a + 1, dtype=bool)
        dirty[label[fo < 0]] = True
        dirty[label[done.recomputed_at]] = True
        dirty |= (ends - starts) != sizes
        replacement, moved_ids, moved_to = [], [], []
        ids = done.rows.column(IDENTITY).to_numpy()
        for j, chunk in enumerate(chunks[a : b + 1]):
            s, e = int(starts[j]), int(ends[j])
            if e == s:
                continue
            if not dirty[j]:
                replacement.append(chunk)
                continue
            pieces = max(1, -(-(e - s) // self.size)) if e - s > 2 * self.size else 1
            cuts = np.linspace(s, e, pieces + 1).astype(np.int64)
            for q in range(pieces):
                lo, hi = int(cuts[q]), int(cuts[q + 1])
                cid = chunk.id if q == 0 else self._new_id(meta)
                part = done.rows.slice(lo, hi - lo)
                replacement.append(
                    _Chunk(cid, hi - lo, part.slice(0, 1), part, done.results.slice(lo, hi - lo), True)
                )
                # rows now in this chunk that were not before: inserts, and split-off rows
                new_here = (fo[lo:hi] < 0) | (q > 0)
                moved_ids.append(ids[lo:hi][new_here])
                moved_to.append(np.full(int(new_here.sum()), cid, dtype=np.int64))
        chunks[a : b + 1] = replacement
        return np.concatenate(moved_ids or [np.zeros(0, np.int64)]), np.concatenate(
            moved_to or [np.zeros(0, np.int64)]
        )

    def _evict(self, store: ChunkStore, chunks: list[_Chunk], meta: ChunkIndexMeta, watermark) -> np.ndarray:
        """Evict behind the watermark: ``OnUpdate.apply`` with no changes over the chunks around the
        first row at or above it; every chunk before them goes unread. Returns the identities
        evicted when they are tracked (the dropped chunks are read for them)."""
        m = self.machine
        firsts = self._firsts(chunks)
        keys = key_numbers(Values(values_of(m.order_by[0].expr, firsts)))
        j = int(np.searchsorted(keys, watermark, "left"))  # chunks starting below the watermark
        if j == 0:
            return np.zeros(0, dtype=np.int64)  # the partition's first row is live: nothing goes
        spans = self._spans(chunks, np.array([j - 1]))
        a, b = spans[0][0], min(max(spans[0][1], j), len(chunks) - 1)
        none = m.empty_rows()
        while True:
            try:
                done = self._apply(store, chunks, a, b, meta, none, np.zeros(0, np.int64), watermark, None)
            except NeedRows as short:
                a, b = _widened(a, b, short, len(chunks))
                continue
            if done.evicted or a == 0:
                break
            a -= 1  # what must stay (a frame, its first peer group) starts before these chunks
        if done.evicted == 0:
            return np.zeros(0, dtype=np.int64)
        dropped = sum(c.n for c in chunks[:a])
        gone = np.zeros(0, dtype=np.int64)
        if self.tracks_ids:  # the dropped chunks are read once, for the identities to forget
            gone = np.concatenate(
                [self._load(store, c).rows.column(IDENTITY).to_numpy() for c in chunks[: b + 1]]
            )[: dropped + done.evicted]
        meta.evicted_rows = done.meta.evicted_rows + dropped
        meta.evicted_groups, meta.horizon = done.meta.evicted_groups, done.meta.horizon
        del chunks[:a]
        self._replace(chunks, 0, b - a, done, meta)
        return gone

    @staticmethod
    def _update_ids(
        store: ChunkStore, forget: list[np.ndarray], place: list[tuple], evicted: np.ndarray
    ) -> None:
        """Tell the store where identities now are: rows deleted or evicted are forgotten, rows
        inserted or moved to another chunk placed (one store call per identity)."""
        empty = np.zeros(0, dtype=np.int64)
        placed = np.concatenate([empty] + [p[0] for p in place])
        into = np.concatenate([empty] + [p[1] for p in place])
        stays = ~np.isin(placed, evicted)
        gone = np.union1d(np.setdiff1d(np.concatenate([empty] + forget), placed), evicted)
        if len(gone):
            store.forget_rows(gone)
        if stays.any():
            store.place_rows(placed[stays], into[stays])

    @staticmethod
    def _new_id(meta: ChunkIndexMeta) -> int:
        meta.next_chunk += 1
        return meta.next_chunk - 1


def _widened(a: int, b: int, short: NeedRows, n_chunks: int) -> list[int]:
    """Chunk positions [a, b] grown by one chunk on each side ``short`` asks for, within the partition."""
    return [a - (short.before and a > 0), b + (short.after and b < n_chunks - 1)]
