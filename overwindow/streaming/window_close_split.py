"""Emit on window close over a bucket of keys whose state is split: the bucket's pending rows (every
row the watermark has not released yet, of all its keys) in the bucket's own value, and each key's
history (its released rows that future frames still reach, and its counters) in an entry of its
own, keyed by the key (``partitions.key_bytes``). ``OverWindow(stateLayout="chunked",
keyBuckets=B)`` on window close runs it.

With the whole layout (``WindowClose`` over one value per bucket) every micro-batch that reaches a
bucket reads and writes all its keys' histories, so where a few keys out of very many get rows the
cost grows with every key held. Here a step reads the entries of the keys that release rows, whose
``RANGE x FOLLOWING`` frames the watermark completes, or that get a row at or below the watermark
(late, or the first rows of a key); at the end of input, every entry. A key that only receives rows
is not read: its rows join the pending rows. So a step costs what the keys it releases hold plus
the bucket's pending rows (what arrives within the watermark delay), whatever the keys held.

The step is ``WindowClose.advance`` itself over the histories read, with the pending rows fed back
as new rows: the same machine, so the outputs are the whole layout's. The keys with pending rows
whose history is not read are held too, with no rows and no counters, so that a row of theirs at
or below the watermark is late as it is in the whole layout. Afterwards each key that released rows
or counts on from pruned rows gets its entry written; an entry left with nothing is removed.

The bucket's value also keeps the keys whose first unemitted row waits for the watermark alone
(``RANGE x FOLLOWING``) with that watermark, which wakes them, and how many entries it holds (the
end of input reads them all).

Cost per step: O(p log p + h) for the bucket's p pending rows and the h rows the stepped keys hold,
plus one store read and one write per key stepped; nothing per key the step does not read.

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> from overwindow.streaming.window_close import WindowClose
>>> spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", stateLayout="chunked", keyBuckets=2)
>>> schema = pa.schema([("k", pa.string()), ("t", pa.int64()), ("x", pa.int64())])
>>> m = SplitWindowClose(WindowClose(spec, schema, keys=("k",)))
>>> bucket = MemoryHistories()
>>> rows = pa.table({"k": ["a", "b", "a"], "t": [1, 5, 2], "x": [10, 20, 30]})
>>> m.step(bucket, rows, watermark=1).output.to_pydict()
{'k': ['a'], 't': [1], 'x': [10], 'p': [None]}
>>> sorted(bucket.entries), bucket.pending_rows()  # a's history; b's and a's later rows pending
([b'\\x01\\x01\\x00\\x00\\x00a'], 2)
>>> m.step(bucket, None, watermark=2).output.to_pydict()  # b's entry is not read
{'k': ['a'], 't': [2], 'x': [30], 'p': [10]}
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import numpy as np
import pyarrow as pa

from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values
from overwindow.streaming.contract import END_OF_INPUT, Counters, Step
from overwindow.streaming.partitions import key_bytes
from overwindow.streaming.state import (
    StateFormatError,
    WindowCloseMeta,
    WindowCloseSplitMeta,
    buckets_changed,
    decode,
    encode,
)
from overwindow.streaming.window_close import WindowClose

STATE_KIND = "window_close_split"
# a key's entry: this tag (the entry format's version), its rows' count, the length of its
# counters' message, its counters (one row of ``WindowClose.parts_schema``) and its rows
# (``WindowClose.schema``), each one Arrow IPC record-batch message: the schemas are the
# machine's, so an entry carries none. Version 2 holds the rows already emitted with the columns
# no later step reads NULL (``WindowClose.emitted_read_only``, as the whole layout's format 6);
# an older overwindow refuses it by its tag, version 1 entries read as they are
ENTRY_TAG = b"owwch\x00\x00\x02"
ENTRY_TAGS_READ = (b"owwch\x00\x00\x01", ENTRY_TAG)


class HistoryStore(Protocol):
    """Where a bucket's split state lives (a bucket's state variables in Spark): the bucket's own
    value and one entry per key."""

    def read_meta(self) -> bytes | None: ...

    def write_meta(self, data: bytes) -> None: ...

    def remove_meta(self) -> None: ...

    def read_histories(self, keys: list[bytes]) -> list[bytes | None]:
        """The entry of each key (``partitions.key_bytes``), None where it has none."""

    def write_history(self, key: bytes, data: bytes) -> None: ...

    def remove_history(self, key: bytes) -> None: ...

    def histories(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, entry) the bucket holds."""


class MemoryHistories:
    """A HistoryStore in a dict: the in-memory driver's and the tests'. Counts the entries read."""

    def __init__(self):
        self.meta: bytes | None = None
        self.entries: dict[bytes, bytes] = {}
        self.reads = 0

    def read_meta(self):
        return self.meta

    def write_meta(self, data):
        self.meta = data

    def remove_meta(self):
        self.meta = None

    def read_histories(self, keys):
        self.reads += len(keys)
        return [self.entries.get(k) for k in keys]

    def write_history(self, key, data):
        self.entries[key] = data

    def remove_history(self, key):
        del self.entries[key]

    def histories(self):
        self.reads += len(self.entries)
        return iter(list(self.entries.items()))

    def pending_rows(self) -> int:
        """Rows the bucket's value holds (not released yet)."""
        return (
            0
            if self.meta is None
            else decode(self.meta, STATE_KIND, WindowCloseSplitMeta)[0]["pending"].num_rows
        )

    def rows_held(self) -> int:
        """Rows held in all: pending, and in every key's history."""
        return self.pending_rows() + sum(int.from_bytes(e[8:16], "little") for e in self.entries.values())


class SplitWindowClose:
    """``machine`` (a ``WindowClose`` with key columns) over split state in a ``HistoryStore``;
    stateless between calls, like the machine."""

    def __init__(self, machine: WindowClose):
        if not machine.keys:
            raise ValueError("the split state of window close holds a bucket of keys: give the key columns")
        self.machine = machine
        self.output_schema = machine.output_schema
        m = machine
        self.waits_schema = pa.schema(
            [m.schema.field(k) for k in m.keys] + [pa.field("wake", pa.from_numpy_dtype(type(m.no_wait)))]
        )
        self.no_rows = pa.RecordBatch.from_pylist([], schema=m.schema)

    # -- state -------------------------------------------------------------------------------

    def _read(self, store: HistoryStore) -> tuple[pa.Table, pa.Table, WindowCloseSplitMeta]:
        """(pending rows, waiting keys, meta) of the bucket; empty for a new one."""
        m = self.machine
        data = store.read_meta()
        if data is None:
            return m.schema.empty_table(), self.waits_schema.empty_table(), WindowCloseSplitMeta()
        tables, meta = decode(data, STATE_KIND, WindowCloseSplitMeta)
        if meta.buckets != m.buckets or meta.keys != list(m.keys):
            raise buckets_changed(meta.buckets, meta.keys or (), m.buckets, m.keys)
        pending, waits = tables["pending"], tables["waits"]
        if not pending.schema.equals(m.schema) or not waits.schema.equals(self.waits_schema):
            raise StateFormatError(
                "this state was written for other input columns than the query now has "
                f"({pending.schema} against {m.schema}); start the query from a new checkpoint"
            )
        return pending, waits, meta

    def _read_entries(self, data: list[bytes]) -> tuple[pa.Table, pa.Table]:
        """(counters, rows) of the entries ``data``, one table each, in their order."""
        m = self.machine
        if not data:
            return m.parts_schema.empty_table(), m.schema.empty_table()
        parts, rows = [], []
        try:
            for entry in data:
                if entry[:8] not in ENTRY_TAGS_READ:
                    raise ValueError("not a key's history of window close (format 1 or 2)")
                size = int.from_bytes(entry[16:24], "little")
                buffer = pa.py_buffer(entry)
                parts.append(pa.ipc.read_record_batch(buffer.slice(24, size), m.parts_schema))
                rows.append(pa.ipc.read_record_batch(buffer.slice(24 + size), m.schema))
        except (ValueError, pa.ArrowException) as e:
            raise StateFormatError(
                f"a key's history cannot be decoded ({type(e).__name__}: {e}); start the query from "
                "a new checkpoint"
            ) from None
        return pa.Table.from_batches(parts, m.parts_schema), pa.Table.from_batches(rows, m.schema)

    # -- the step ----------------------------------------------------------------------------

    def step(self, store: HistoryStore, rows: pa.Table | None, watermark=None) -> Step:
        """``WindowClose.step`` for the bucket in ``store``: reads the entries of the keys that
        step, writes theirs and the bucket's value back. The step's ``state_rows`` counts the rows
        of the keys stepped and the pending rows; ``largest`` is among those keys."""
        m = self.machine
        pending, waits, meta = self._read(store)
        existed = meta.keys is not None  # only a stored value records the key columns
        upto = meta.released_upto
        if watermark is not None and (upto is None or watermark > upto):
            upto = watermark
        feed = pending if rows is None or not rows.num_rows else pa.concat_tables([pending, m.conform(rows)])
        keys, (fed, waiting) = self._numbered(feed, waits)
        if upto == END_OF_INPUT:
            entries = list(store.histories())
            stepping, allowed = np.arange(keys.num_rows), None
        else:
            due = np.zeros(feed.num_rows, dtype=bool)
            woken = np.zeros(waits.num_rows, dtype=bool)
            if upto is not None:
                due = Values(feed.column(m.order)).valid & (m._keys(feed) <= upto)
                woken = waits.column("wake").to_numpy() <= upto
            stepping = np.unique(np.concatenate([fed[due], waiting[woken]]))
            names = key_bytes(keys.take(pa.array(stepping)))
            allowed = set(names)
            entries = [(k, e) for k, e in zip(names, store.read_histories(names)) if e is not None]
        held, table = self._read_entries([e for _, e in entries])
        # keys with pending rows and no history read are held too, with no rows and no counters
        pending_keys = np.unique(fed[: pending.num_rows])
        bare = keys.take(pa.array(pending_keys))
        _, (bare_in, held_in) = self._numbered(bare, held)
        bare = bare.filter(pa.array(~np.isin(bare_in, held_in)))
        held = pa.concat_tables([held, self._no_history(bare)])
        before = WindowCloseMeta(meta.released_upto, meta.late_rows, m.buckets)
        done = m.advance(table, held, before, feed if feed.num_rows else None, watermark, pending.num_rows)
        n_entries, written, waits = self._write(
            store, done, {k for k, _ in entries}, allowed, waits, waiting, stepping
        )
        meta = WindowCloseSplitMeta(
            done.meta.released_upto, done.meta.late_rows, m.buckets, list(m.keys), meta.entries + n_entries
        )
        pending = done.table.filter(pa.array(~written))
        if pending.num_rows or waits.num_rows or meta.entries:
            store.write_meta(encode({"pending": pending, "waits": waits}, STATE_KIND, meta))
        elif existed:
            store.remove_meta()
        times = [t for t in (done.step.wakeup,) if t is not None]
        if waits.num_rows:
            times.append(waits.column("wake").to_numpy().min().item())
        if meta.entries:  # a history may wait for later rows: the end of input emits them
            times.append(END_OF_INPUT)
        s = done.step
        return Step(
            None,
            s.output,
            min(times) if times else None,
            s.late_rows,
            Counters(done.table.num_rows, meta.late_rows, bad_rows=s.counters.bad_rows),
            False,
            s.largest,
            s.aside,
            s.late_keys,
        )

    def _write(self, store: HistoryStore, done, read: set[bytes], allowed, waits, waiting, stepping):
        """Writes the entries of the keys ``done`` leaves with released rows or counts to continue,
        removes the other ``read`` ones (``allowed``: the keys stepped, None: all); returns
        (entries added less removed, per row of ``done.table`` whether it went to an entry, the
        waiting keys after the step)."""
        m = self.machine
        table, parts = done.table, done.parts
        n = parts.column("n").to_numpy()
        part = np.repeat(np.arange(parts.num_rows), n)
        released = np.zeros(table.num_rows, dtype=bool)
        upto = done.meta.released_upto
        if upto is not None:
            released = Values(table.column(m.order)).valid & (m._keys(table) <= upto)
        count = np.bincount(part[released], minlength=parts.num_rows)
        counts_on = (parts.column("pruned_rows").to_numpy() > 0) & m.counts
        keep = np.flatnonzero((count > 0) | counts_on)
        kept = parts.take(pa.array(keep))
        names = key_bytes(kept.select(m.keys))
        if allowed is not None and not allowed.issuperset(names):  # would overwrite a history unread
            raise AssertionError(
                f"window close wrote the history of keys it did not step: {set(names) - allowed}"
            )
        kept = kept.set_column(kept.schema.get_field_index("n"), "n", pa.array(count[keep], pa.int64()))
        counters = kept.combine_chunks().to_batches()
        # the released rows are each partition's first, its emitted rows among them
        history = m.emitted_read_only(table.filter(pa.array(released)), kept).combine_chunks()
        history = history.to_batches()[0] if history.num_rows else None
        starts = np.concatenate(([0], np.cumsum(count)))
        for i, (name, p) in enumerate(zip(names, keep.tolist())):
            mine = self.no_rows if history is None else history.slice(int(starts[p]), int(count[p]))
            store.write_history(name, _entry(counters[0].slice(i, 1), mine))
        gone = read - set(names)
        for name in gone:
            store.remove_history(name)
        # the waiting keys: those not stepped keep theirs, those stepped wait as they now do
        old = waits.filter(pa.array(~np.isin(waiting, stepping)))
        wake = done.waits[keep]
        now = kept.select(m.keys).append_column("wake", pa.array(wake)).filter(pa.array(wake != m.no_wait))
        return (
            len(set(names) - read) - len(gone),
            released,
            pa.concat_tables([old, now.cast(self.waits_schema)]),
        )

    def _numbered(self, *tables: pa.Table) -> tuple[pa.Table, list[np.ndarray]]:
        """(the distinct keys of ``tables``' key columns, in key order; per table each row's number
        among them). One sort of all their keys; NULLs are one key."""
        m = self.machine
        both = pa.concat_tables([t.select(m.keys).cast(tables[0].select(m.keys).schema) for t in tables])
        if not both.num_rows:
            return both, [np.zeros(0, dtype=np.int64) for _ in tables]
        layout = Layout.build([Values(both.column(k).combine_chunks()) for k in m.keys], [], both.num_rows)
        number = np.empty(both.num_rows, dtype=np.int64)
        number[layout.perm] = layout.part_id
        bounds = np.cumsum([0] + [t.num_rows for t in tables])
        return both.take(pa.array(layout.perm[layout.part_bounds[:-1]])), [
            number[a:b] for a, b in zip(bounds[:-1], bounds[1:])
        ]

    def _no_history(self, keys: pa.Table) -> pa.Table:
        """Partitions of ``keys`` with no rows and no counters."""
        m = self.machine
        zeros = pa.array(np.zeros(keys.num_rows, dtype=np.int64))
        columns = {k: keys.column(k) for k in m.keys}
        counters = {f.name: zeros for f in m.parts_schema if f.name not in m.keys and f.name != "newest"}
        newest = pa.array(m._no_key(keys.num_rows))
        return pa.table({**columns, **counters, "newest": newest}).cast(m.parts_schema)


def _entry(counters: pa.RecordBatch, rows: pa.RecordBatch) -> bytes:
    """A key's entry: ``ENTRY_TAG``, its rows' count, its counters' message length, its counters,
    its rows."""
    head = counters.serialize()
    return b"".join(
        (
            ENTRY_TAG,
            rows.num_rows.to_bytes(8, "little"),
            head.size.to_bytes(8, "little"),
            head,
            rows.serialize(),
        )
    )
