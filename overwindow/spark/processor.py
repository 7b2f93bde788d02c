"""Where the chunked layouts live on Spark: a ``StatefulProcessor`` for ``transformWithStateInPandas``
running a ``overwindow.spark.adapter.Runner``, and the stores the machines read and write through
its state variables (each call one round trip to the JVM). Emit on update keeps a key's index, its
chunks and (with a row key) its row identities (``overwindow.streaming.chunked``), per key or as
entries of a bucket's maps; emit on window close a bucket's pending rows in its value and each key's
history as an entry (``overwindow.streaming.window_close_split``), with one timer per bucket.
"""

from __future__ import annotations

import numpy as np

from overwindow.streaming.contract import check_row_bound


def chunked_processor(runner):
    """A StatefulProcessor running the chunked layout's machine: emit on update per key or (with the
    runner's ``keys``) per bucket of keys; emit on window close per bucket, with its timer (defined
    here so that importing this module does not import PySpark's streaming classes)."""
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    from overwindow.spark.timers import BucketTimer

    binary = StructType([StructField("value", BinaryType())])
    key, chunk = StructField("key", BinaryType()), StructField("chunk", LongType())

    class ChunkedProcessor(StatefulProcessor):
        def init(self, handle):
            # per key the key's index; per bucket the bucket's own value (its keyBuckets and keys;
            # window close: its pending rows): one variable, so a state of another hosting or mode
            # under the same group is read and refused
            self.handle = handle
            self.index = handle.getValueState("index", binary)
            if runner.spec.emit == "on_window_close":  # each key's history is an entry; one timer
                self.histories = handle.getMapState("histories", StructType([key]), binary)
                self.timer = BucketTimer(handle)
                return
            if runner.keys:  # each key's index and chunks are entries of the bucket's maps
                self.indexes = handle.getMapState("indexes", StructType([key]), binary)
                self.chunks = handle.getMapState("key_chunks", StructType([key, chunk]), binary)
            else:
                self.chunks = handle.getMapState("chunks", StructType([chunk]), binary)
            self.rows = (
                handle.getMapState("rows", StructType([StructField("row", LongType())]), StructType([chunk]))
                if runner.spec.row_key
                else None
            )

        def handleInputRows(self, key, rows, timerValues):
            yield from self._step(key, rows, timerValues)

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            self.timer.fired(expiredTimerInfo)  # window close: a bucket's wakeup
            yield from self._step(key, iter(()), timerValues)

        def _step(self, key, rows, timerValues):
            wm_ms = timerValues.getCurrentWatermarkInMs() if runner.watermarked else None
            if runner.spec.emit == "on_window_close":
                store = _HistoryVariables(self)
            else:
                store = _BucketVariables(self) if runner.keys else _StateVariables(self)
            step = runner.step(key, store, rows, wm_ms)
            check_row_bound(step, runner.spec.max_rows_per_key, key)
            if runner.spec.emit == "on_window_close":
                self.timer.move(runner.timeout_ms(step.wakeup, wm_ms))
            yield from runner.emitted(step)

        def close(self):
            pass

    return ChunkedProcessor()


class _StateVariables:
    """``overwindow.streaming.chunked.ChunkStore`` over transformWithStateInPandas state variables:
    a key's own (``entry`` None), or the entries of the partition key ``entry`` (its
    ``partitions.key_bytes``) in its bucket's maps. Every call is one round trip to the JVM (about
    0.1 ms)."""

    def __init__(self, processor, entry: bytes | None = None):
        self.index, self.chunks, self.rows = processor.index, processor.chunks, processor.rows
        self.indexes = processor.indexes if entry is not None else None
        self.entry = () if entry is None else (entry,)  # the maps' key before the chunk id

    def read_index(self):
        found = self.index.get() if self.indexes is None else self.indexes.getValue(self.entry)
        return None if found is None else found[0]

    def write_index(self, data):
        if self.indexes is None:
            self.index.update((data,))
        else:
            self.indexes.updateValue(self.entry, (data,))

    def remove_index(self):
        if self.indexes is None:
            self.index.clear()
        else:
            self.indexes.removeKey(self.entry)

    def read_chunk(self, chunk):
        return self.chunks.getValue(self.entry + (int(chunk),))[0]

    def write_chunk(self, chunk, data):
        self.chunks.updateValue(self.entry + (int(chunk),), (data,))

    def drop_chunk(self, chunk):
        self.chunks.removeKey(self.entry + (int(chunk),))

    def find_rows(self, ids):
        found = [self.rows.getValue((i,)) for i in ids.tolist()]
        return np.array([-1 if f is None else f[0] for f in found], dtype=np.int64)

    def place_rows(self, ids, chunks):
        for i, c in zip(ids.tolist(), chunks.tolist()):
            self.rows.updateValue((i,), (c,))

    def forget_rows(self, ids):
        for i in ids.tolist():
            self.rows.removeKey((i,))


class _BucketVariables:
    """``overwindow.streaming.chunked.BucketStore`` over a bucket's transformWithStateInPandas state
    variables: its own value (``index``), and per partition key its entries (``_StateVariables``);
    the identities (hashed with the key) share one map."""

    def __init__(self, processor):
        self.processor = processor

    def read_meta(self):
        found = self.processor.index.get()
        return None if found is None else found[0]

    def write_meta(self, data):
        self.processor.index.update((data,))

    def partition(self, key):
        return _StateVariables(self.processor, key)


class _HistoryVariables:
    """``overwindow.streaming.window_close_split.HistoryStore`` over a bucket's
    transformWithStateInPandas state variables: its value (``index``) and a map of each key's
    history (``histories``). Every call is one round trip to the JVM."""

    def __init__(self, processor):
        self.index, self.entries = processor.index, processor.histories

    def read_meta(self):
        found = self.index.get()
        return None if found is None else found[0]

    def write_meta(self, data):
        self.index.update((data,))

    def remove_meta(self):
        self.index.clear()

    def read_histories(self, keys):
        get = self.entries.getValue
        return [None if (found := get((k,))) is None else found[0] for k in keys]

    def write_history(self, key, data):
        self.entries.updateValue((key,), (data,))

    def remove_history(self, key):
        self.entries.removeKey((key,))

    def histories(self):
        return ((k[0], v[0]) for k, v in self.entries.iterator())
