"""An in-memory driver that runs a streaming machine the way Spark hosts it, for tests and local use.

Each micro-batch: rows are grouped by the partition key and every key with rows steps; then every
other key whose wakeup the watermark has passed steps with no rows (Spark's event-time timeout). A
key whose step leaves its state empty loses it; one past the spec's ``maxRowsPerKey`` fails.

With the spec's ``keyBuckets=B`` the keys are hashed into B buckets and one state and one step serve
all the keys of a bucket, as the bucketed Spark hosting runs them.

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> d = Driver(
...     OverWindow("lag(x) OVER (ORDER BY t) AS p"),
...     pa.schema([("k", pa.int64()), ("t", pa.int64()), ("x", pa.int64())]),
...     ["k"],
... )
>>> d.feed(pa.table({"k": [1, 1], "t": [1, 2], "x": [5, 6]}), watermark=1).to_pydict()
{'k': [1], 't': [1], 'x': [5], 'p': [None]}
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa

from overwindow.spec import OverWindow
from overwindow.streaming.chunked import MemoryBucket, MemoryChunks
from overwindow.streaming.contract import check_row_bound
from overwindow.streaming.machines import machine_for
from overwindow.streaming.window_close_split import MemoryHistories, SplitWindowClose


class Driver:
    """Steps a machine per partition key (or per bucket of keys); states in a dict (whole layout) or
    one MemoryChunks per key or MemoryBucket per bucket (chunked layout; on window close one
    MemoryHistories per bucket)."""

    def __init__(
        self,
        spec: OverWindow,
        schema: pa.Schema,
        keys: list[str],
        watermarked: bool = False,
        rows_per_chunk: int | None = None,
    ):
        self.buckets = spec.key_buckets
        self.machine = machine_for(spec, schema, watermarked, rows_per_chunk, keys if self.buckets else ())
        self.max_rows = spec.max_rows_per_key
        self.chunked = spec.state_layout == "chunked"
        self.recomputed_rows = 0
        self.keys = list(keys)
        self.states: dict[tuple, bytes] = {}
        self.wakeups: dict[tuple, object] = {}
        self.held: dict[tuple, int] = {}  # rows each key's state holds
        self.late_rows = 0
        self.unknown_updates = 0  # single-image updates of rows their partition did not hold
        self.pruned_rows = 0  # emit on update: rows dropped past a Top-N qualify
        self.aside: list = []  # the rows the steps set aside (``overwindow.streaming.aside.Aside``)
        self.steps = 0

    def feed(self, rows: pa.Table | None, watermark=None) -> pa.Table:
        """One micro-batch; returns what it emitted."""
        outputs = []
        seen = set()
        for unit, part in self._units(rows):
            outputs.append(self._step(unit, part, watermark))
            seen.add(unit)
        if watermark is not None:
            for k, when in list(self.wakeups.items()):
                if k not in seen and when is not None and watermark >= when:
                    outputs.append(self._step(k, None, watermark))
        outputs = [o for o in outputs if o.num_rows]
        if not outputs:
            return self.machine.output_schema.empty_table()
        return pa.concat_tables(outputs)

    def _units(self, rows: pa.Table | None) -> list[tuple]:
        """(key or bucket, its rows) of every key or bucket with rows in ``rows``."""
        if rows is None or not rows.num_rows:
            return []
        if not self.keys:  # no PARTITION BY: the whole stream is one partition
            return [(self.unit_of(()), rows)]
        # each key's row numbers in arrival order, in one hash grouping (NULL keys group together)
        index = pa.array(np.arange(rows.num_rows))
        groups = (
            rows.select(self.keys)
            .append_column("__ow_row", index)
            .group_by(self.keys, use_threads=False)
            .aggregate([("__ow_row", "list")])
        )
        members = groups.column("__ow_row_list").combine_chunks()
        units: dict = {}
        for i, key in enumerate(groups.select(self.keys).to_pylist()):
            units.setdefault(self.unit_of(tuple(key[c] for c in self.keys)), []).append(members[i].values)
        return [(u, rows.take(pa.concat_arrays(v))) for u, v in units.items()]

    def unit_of(self, key: tuple):
        """What holds the state of partition ``key``: the key itself, or with keyBuckets its bucket
        (a stable hash of the key, as Spark's xxhash64 is in the Spark hosting)."""
        return key if self.buckets is None else zlib.crc32(repr(key).encode()) % self.buckets

    def _step(self, key, rows, watermark) -> pa.Table:
        if self.chunked and key not in self.states:
            self.states[key] = self._store()
        step = self.machine.step(self.states.get(key), rows, watermark)
        self.steps += 1
        check_row_bound(step, self.max_rows, key)
        self.late_rows += step.late_rows
        self.recomputed_rows += step.counters.recomputed_rows
        self.unknown_updates += step.counters.unknown_updates
        self.pruned_rows += step.counters.pruned_rows
        if step.aside:
            self.aside.append(step.aside)
        if step.empty:  # as the Spark adapter does: no empty state is kept
            for kept in (self.states, self.wakeups, self.held):
                kept.pop(key, None)
            return step.output
        if not self.chunked:
            self.states[key] = step.state
        self.wakeups[key] = step.wakeup
        self.held[key] = step.counters.state_rows
        return step.output

    def _store(self):
        """A new key's or bucket's store of the chunked layout."""
        if isinstance(self.machine, SplitWindowClose):
            return MemoryHistories()
        return MemoryBucket() if self.buckets else MemoryChunks()

    def state_rows(self) -> int:
        """Rows held in all partitions' state (released and pending; the chunked layout's, from its
        stores: a bucket's step counts only the keys it stepped)."""
        if self.chunked:
            return sum(store.rows_held() for store in self.states.values())
        return sum(self.held.values())
