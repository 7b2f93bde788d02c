"""An in-memory driver that runs a streaming machine the way Spark hosts it, for tests and local use.

Each micro-batch: rows are grouped by the partition key and every key with rows steps; then every
other key whose wakeup the watermark has passed steps with no rows (Spark's event-time timeout). A
key whose step leaves its state empty loses it; one past the spec's ``maxRowsPerKey`` fails.

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

import numpy as np
import pyarrow as pa

from overwindow.spec import OverWindow
from overwindow.streaming.chunked import MemoryChunks
from overwindow.streaming.contract import check_row_bound
from overwindow.streaming.machines import machine_for


class Driver:
    """Steps a machine per partition key; states in a dict (whole layout) or one MemoryChunks per
    key (chunked layout)."""

    def __init__(
        self,
        spec: OverWindow,
        schema: pa.Schema,
        keys: list[str],
        watermarked: bool = False,
        rows_per_chunk: int | None = None,
    ):
        self.machine = machine_for(spec, schema, watermarked, rows_per_chunk)
        self.max_rows = spec.max_rows_per_key
        self.chunked = spec.state_layout == "chunked"
        self.recomputed_rows = 0
        self.keys = list(keys)
        self.states: dict[tuple, bytes] = {}
        self.wakeups: dict[tuple, object] = {}
        self.held: dict[tuple, int] = {}  # rows each key's state holds
        self.late_rows = 0
        self.unknown_updates = 0  # single-image updates of rows their partition did not hold
        self.steps = 0

    def feed(self, rows: pa.Table | None, watermark=None) -> pa.Table:
        """One micro-batch; returns what it emitted."""
        outputs = []
        seen = set()
        if rows is not None and rows.num_rows:
            # each key's row numbers in arrival order, in one hash grouping (NULL keys group together)
            index = pa.array(np.arange(rows.num_rows))
            groups = (
                rows.select(self.keys)
                .append_column("__ow_row", index)
                .group_by(self.keys, use_threads=False)
                .aggregate([("__ow_row", "list")])
            )
            members = groups.column("__ow_row_list").combine_chunks()
            for i, key in enumerate(groups.select(self.keys).to_pylist()):
                k = tuple(key[c] for c in self.keys)
                outputs.append(self._step(k, rows.take(members[i].values), watermark))
                seen.add(k)
        if watermark is not None:
            for k, when in list(self.wakeups.items()):
                if k not in seen and when is not None and watermark >= when:
                    outputs.append(self._step(k, None, watermark))
        outputs = [o for o in outputs if o.num_rows]
        if not outputs:
            return self.machine.output_schema.empty_table()
        return pa.concat_tables(outputs)

    def _step(self, key, rows, watermark) -> pa.Table:
        if self.chunked and key not in self.states:
            self.states[key] = MemoryChunks()
        step = self.machine.step(self.states.get(key), rows, watermark)
        self.steps += 1
        check_row_bound(step, self.max_rows, key)
        self.late_rows += step.late_rows
        self.recomputed_rows += step.counters.recomputed_rows
        self.unknown_updates += step.counters.unknown_updates
        if step.empty:  # as the Spark adapter does: no empty state is kept
            for kept in (self.states, self.wakeups, self.held):
                kept.pop(key, None)
            return step.output
        if not self.chunked:
            self.states[key] = step.state
        self.wakeups[key] = step.wakeup
        self.held[key] = step.counters.state_rows
        return step.output

    def state_rows(self) -> int:
        """Rows held in all partitions' state (released and pending)."""
        return sum(self.held.values())
