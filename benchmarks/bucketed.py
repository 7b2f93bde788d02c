"""Prototype (issue 19, phase 1): many keys per Python call, on Spark, emit on window close.

    python benchmarks/bucketed.py check                 # in-process, then on Spark: output = batch query
    python benchmarks/bucketed.py bench                 # 1k / 100k dense, 100k / 1M sparse
    python benchmarks/bucketed.py harness               # the Python side alone (no Spark)

Not product code: it shows the mechanism the design note (docs/design/many-keys.md) proposes, for one emit
mode and two calls, ``lag(x) OVER (PARTITION BY k ORDER BY ts, rid)`` and
``sum(x) OVER (PARTITION BY k ORDER BY ts, rid ROWS BETWEEN 9 PRECEDING AND CURRENT ROW)``:

- the stream is grouped by a stable bucket of the key, ``pmod(xxhash64(k), B)`` (B recorded in
  each bucket's state and checked on every call), and ``transformWithStateInPandas`` calls the
  processor once per bucket and micro-batch, with every row of the bucket's keys;
- per-key state entries: a MapState ``k -> (tail)`` where the tail is the key's rows a future frame
  can reach (the last 9 emitted rows: ``ROWS 9 PRECEDING`` and ``lag``) plus its rows not yet
  released, one Arrow IPC record-batch message per key against a schema kept once per bucket with a
  format version (``meta`` ValueState); a call reads and writes only the entries of the keys it steps;
- a pending-wakeup index per bucket (ValueState, Arrow IPC: key, lowest pending event time) and one
  event-time timer per bucket at its earliest wakeup: a call steps the keys with rows plus the keys
  whose wakeup the watermark has passed, found in the index (no scan of the bucket's keys); a bucket
  with no rows is called by its timer (``handleExpiredTimer``);
- the step is vectorised over all stepped keys at once: their tails and new rows are concatenated,
  the two calls evaluated by ``overwindow.evaluate`` with ``PARTITION BY k`` in one pass, rows at or
  below the watermark not yet emitted are emitted, and each key keeps its new tail.

Variants (``--variants``; ``check`` runs each against the batch query):

- ``bucketed``: the above (``transformWithStateInPandas``, per-key MapState entries, the index);
- ``bucketed_whole``: every key's tail in one ValueState per bucket (one IPC stream, read and
  written whole): one state call per bucket, but all the bucket's state moves every call;
- ``bucketed_split`` (``step_split``): the bucket's unreleased rows of every key in one value, which is
  also the wakeup index, and per key only its history, read and written for keys releasing rows;
- ``bucketed_aipws``: ``step`` hosted by ``applyInPandasWithState`` grouped by bucket, the whole
  bucket in its one state value, an event-time timeout per bucket;
- floors: ``passthrough`` (the per-key no-op ``groupBy(k).applyInPandasWithState``, append,
  event-time timeouts: the floor of any per-key function), ``bucketed_noop`` and
  ``bucketed_aipws_noop`` (the two operators grouped by the same buckets, rows passed through).

``bench`` runs the variants in one Spark session after an untimed warm-up, on the same rows. At the
sparse points the per-key pass-through skips the micro-batch that fills the keys (a million calls at
1M): its state holds only the keys touched so far.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FORMAT = 1
HISTORY = 9  # rows before the current one that ROWS 9 PRECEDING and lag reach
CALLS = (
    "lag(x) OVER (PARTITION BY k ORDER BY ts, rid) AS prev_x",
    f"sum(x) OVER (PARTITION BY k ORDER BY ts, rid ROWS BETWEEN {HISTORY} PRECEDING AND CURRENT ROW) AS s10",
)
TAIL = pa.schema([("ts", pa.int64()), ("rid", pa.int64()), ("x", pa.float64()), ("emitted", pa.bool_())])
INDEX = pa.schema([("k", pa.int64()), ("wakeup", pa.int64())])
PENDING = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("rid", pa.int64()), ("x", pa.float64())])
T0_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z


# -- the vectorised step over a bucket's keys (no Spark) -------------------------------------------


def encode_tail(batch: pa.RecordBatch) -> bytes:
    """A key's tail as one IPC record-batch message (its schema, TAIL, is kept once per bucket)."""
    return batch.serialize().to_pybytes()


def decode_tail(data: bytes) -> pa.RecordBatch:
    return pa.ipc.read_record_batch(pa.py_buffer(data), TAIL)


def ipc_table(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema.with_metadata({"format": str(FORMAT)})) as w:
        w.write_table(table.combine_chunks())
    return sink.getvalue().to_pybytes()


def read_ipc(data: bytes) -> pa.Table:
    t = pa.ipc.open_stream(data).read_all()
    if t.schema.metadata.get(b"format") != str(FORMAT).encode():
        raise ValueError("state written by another format: start from a new checkpoint")
    return t.replace_schema_metadata(None)


class Bucket:
    """One bucket's state behind a few operations, over Spark's state variables or dicts:
    ``index()`` / ``set_index(table)`` (the pending-wakeup index), ``tails(keys)`` /
    ``put_tails(keys, tables)`` (the per-key entries), and for ``step_split`` ``pending()`` /
    ``set_pending(table, released_upto)`` (every key's unreleased rows in one value)."""


class DictBucket(Bucket):
    """In-process state of one bucket (for the check without Spark)."""

    def __init__(self):
        self._index, self._tails, self._pending = INDEX.empty_table(), {}, (PENDING.empty_table(), None)

    def pending(self):
        return self._pending

    def set_pending(self, table, released_upto):
        self._pending = (table, released_upto)

    def index(self):
        return self._index

    def set_index(self, table):
        self._index = table

    def tails(self, keys):
        return [self._tails.get(k) for k in keys.tolist()]

    def put_tails(self, keys, blobs):
        self._tails.update(zip(keys.tolist(), blobs))


def step(bucket: Bucket, rows: pa.Table | None, wm_us: int | None) -> tuple[pa.Table, int | None, dict]:
    """Steps every key of the bucket that has rows or a wakeup at or below the watermark; returns
    (rows emitted, the bucket's next wakeup in microseconds or None, counters). ``rows``: k, ts (int64
    microseconds), rid, x. Cost: O(rows + stepped keys' tails), a state read and write per stepped
    key, one index read and write."""
    index = bucket.index()
    ik, iw = index.column("k").to_numpy(), index.column("wakeup").to_numpy()
    due = ik[iw <= wm_us] if wm_us is not None else ik[:0]
    new_k = rows.column("k").to_numpy().astype(np.int64) if rows is not None else np.zeros(0, np.int64)
    keys = np.union1d(np.unique(new_k), due)
    counters = {"stepped": len(keys), "due": len(due), "late": 0}
    if not len(keys):
        return None, (int(iw.min()) if len(iw) else None), counters
    # old tails of the stepped keys, one table with the key column
    blobs = bucket.tails(keys)
    batches, lengths = [], np.zeros(len(keys), np.int64)
    for i, b in enumerate(blobs):
        if b is not None:
            rb = decode_tail(b)
            batches.append(rb)
            lengths[i] = rb.num_rows
    old = pa.Table.from_batches(batches, TAIL) if batches else TAIL.empty_table()
    old_k = np.repeat(keys, lengths)
    # late rows: at or before the last row the key emitted
    if rows is not None and rows.num_rows:
        emitted = old.column("emitted").to_numpy(zero_copy_only=False)
        last = np.full(len(keys), np.iinfo(np.int64).min)
        ets = old.column("ts").to_numpy()[emitted]
        np.maximum.at(last, np.searchsorted(keys, old_k[emitted]), ets)
        new_ts = rows.column("ts").to_numpy()
        ok = new_ts > last[np.searchsorted(keys, new_k)]
        counters["late"] = int(len(ok) - ok.sum())
        new = rows.filter(pa.array(ok)) if not ok.all() else rows
        new_k = new_k[ok]
        new = pa.table(
            {
                "ts": new.column("ts"),
                "rid": new.column("rid"),
                "x": new.column("x"),
                "emitted": pa.array(np.zeros(new.num_rows, bool)),
            }
        )
        allk = np.concatenate([old_k, new_k])
        table = pa.concat_tables([old, new])
    else:
        allk, table = old_k, old
    ts = table.column("ts").to_numpy()
    order = np.lexsort((table.column("rid").to_numpy(), ts, allk))
    allk = allk[order]
    table = table.take(pa.array(order)).add_column(0, "k", pa.array(allk))
    ts = ts[order]
    # the two calls over every stepped key's partition in one pass (the batch evaluator's kernels)
    import overwindow

    result = overwindow.evaluate(table.drop_columns(["emitted"]), *CALLS)
    was = table.column("emitted").to_numpy(zero_copy_only=False)
    emit = ~was & (ts <= wm_us) if wm_us is not None else np.zeros(len(ts), bool)
    out = result.filter(pa.array(emit))
    now = was | emit
    # each key keeps its last HISTORY emitted rows and every row not emitted yet
    starts = np.flatnonzero(np.r_[True, allk[1:] != allk[:-1]])
    sizes = np.diff(np.r_[starts, len(allk)])
    group = np.repeat(np.arange(len(starts)), sizes)
    pos = np.arange(len(allk)) - starts[group]
    n_emitted = np.add.reduceat(now.astype(np.int64), starts) if len(starts) else np.zeros(0, np.int64)
    keep = ~now | (pos >= n_emitted[group] - HISTORY)
    kept = pa.table(
        {
            "ts": table.column("ts"),
            "rid": table.column("rid"),
            "x": table.column("x"),
            "emitted": pa.array(now),
        }
    ).filter(pa.array(keep))
    kk = allk[keep]
    ks = np.flatnonzero(np.r_[True, kk[1:] != kk[:-1]]) if len(kk) else np.zeros(0, np.int64)
    ke = np.r_[ks[1:], len(kk)]
    kept_batch = kept.combine_chunks().to_batches()
    kept_batch = kept_batch[0] if kept_batch else None
    put_keys = kk[ks]
    bucket.put_tails(
        put_keys, [encode_tail(kept_batch.slice(s, e - s)) for s, e in zip(ks.tolist(), ke.tolist())]
    )
    # the index: keys with rows still pending, at their lowest pending event time
    pend = ~now[keep]
    pk, pts = kk[pend], kept.column("ts").to_numpy()[pend]
    if len(pk):
        ps = np.flatnonzero(np.r_[True, pk[1:] != pk[:-1]])
        pk, pw = pk[ps], np.minimum.reduceat(pts, ps)
    else:
        pw = pts
    stay = ~np.isin(ik, keys)
    nk = np.concatenate([ik[stay], pk])
    nw = np.concatenate([iw[stay], pw])
    bucket.set_index(pa.table({"k": nk, "wakeup": nw}, schema=INDEX))
    counters["pending_keys"] = len(nk)
    return out, (int(nw.min()) if len(nw) else None), counters


def step_split(bucket: Bucket, rows: pa.Table | None, wm_us: int | None) -> tuple[pa.Table, int | None, dict]:
    """``step`` with the design note's layout: the bucket's unreleased rows of every key in one value
    (which is also its wakeup index), and per key only its history (the last HISTORY emitted rows),
    read and written only for the keys that release rows in this call. Rows at or below the last
    watermark the bucket applied are late (every row at or below it has been released)."""
    pend, upto = bucket.pending()
    counters = {"stepped": 0, "due": 0, "late": 0}
    if rows is not None and rows.num_rows:
        new = rows.select(PENDING.names).cast(PENDING)
        if upto is not None:
            ok = new.column("ts").to_numpy() > upto
            counters["late"] = int(len(ok) - ok.sum())
            new = new.filter(pa.array(ok))
        pend = pa.concat_tables([pend, new])
    out = None
    if wm_us is not None and pend.num_rows:
        due_mask = pend.column("ts").to_numpy() <= wm_us
        if due_mask.any():
            due, pend = pend.filter(pa.array(due_mask)), pend.filter(pa.array(~due_mask))
            dk = due.column("k").to_numpy()
            keys = np.unique(dk)
            counters["stepped"] = counters["due"] = len(keys)
            batches, lengths = [], np.zeros(len(keys), np.int64)
            for i, b in enumerate(bucket.tails(keys)):
                if b is not None:
                    rb = decode_tail(b)
                    batches.append(rb)
                    lengths[i] = rb.num_rows
            old = pa.Table.from_batches(batches, TAIL) if batches else TAIL.empty_table()
            allk = np.concatenate([np.repeat(keys, lengths), dk])
            table = pa.concat_tables(
                [old, due.drop_columns(["k"]).append_column("emitted", pa.array(np.zeros(len(dk), bool)))]
            )
            order = np.lexsort((table.column("rid").to_numpy(), table.column("ts").to_numpy(), allk))
            allk = allk[order]
            table = table.take(pa.array(order)).add_column(0, "k", pa.array(allk))
            import overwindow

            result = overwindow.evaluate(table.drop_columns(["emitted"]), *CALLS)
            was = table.column("emitted").to_numpy(zero_copy_only=False)
            out = result.filter(pa.array(~was))
            starts = np.flatnonzero(np.r_[True, allk[1:] != allk[:-1]])
            sizes = np.diff(np.r_[starts, len(allk)])
            pos = np.arange(len(allk)) - np.repeat(starts, sizes)
            keep = pos >= np.repeat(sizes, sizes) - HISTORY
            kept = (
                table.filter(pa.array(keep))
                .drop_columns(["k"])
                .set_column(3, "emitted", pa.array(np.ones(int(keep.sum()), bool)))
            )
            kk = allk[keep]
            ks = np.flatnonzero(np.r_[True, kk[1:] != kk[:-1]])
            ke = np.r_[ks[1:], len(kk)]
            kb = kept.combine_chunks().to_batches()[0]
            bucket.put_tails(
                kk[ks], [encode_tail(kb.slice(a, e - a)) for a, e in zip(ks.tolist(), ke.tolist())]
            )
        upto = wm_us if upto is None else max(upto, wm_us)
    bucket.set_pending(pend, upto)
    counters["pending_keys"] = len(np.unique(pend.column("k").to_numpy()))
    wakeup = int(pend.column("ts").to_numpy().min()) if pend.num_rows else None
    return out, wakeup, counters


# -- on Spark --------------------------------------------------------------------------------------


def processor(buckets: int, layout: str):
    """The StatefulProcessor: one call per bucket and micro-batch (and per bucket whose timer fired)."""
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    binary = StructType([StructField("v", BinaryType())])

    class SparkBucket(Bucket):
        def __init__(self, proc):
            self.p = proc

        def index(self):
            v = self.p.index.get()
            return read_ipc(v[0]) if v is not None else INDEX.empty_table()

        def set_index(self, table):
            self.p.index.update((ipc_table(table),))

        def pending(self):
            v = self.p.pending.get()
            if v is None:
                return PENDING.empty_table(), None
            t = read_ipc(v[0])
            return t, (v[1] if v[1] >= 0 else None)

        def set_pending(self, table, released_upto):
            self.p.pending.update((ipc_table(table), -1 if released_upto is None else released_upto))

        def tails(self, keys):
            if layout == "bucket":
                return self._whole_tails(keys)
            get = self.p.tails.getValue
            return [None if (v := get((k,))) is None else v[0] for k in keys.tolist()]

        def put_tails(self, keys, blobs):
            if layout == "bucket":
                return self._put_whole(keys, blobs)
            put = self.p.tails.updateValue
            for k, b in zip(keys.tolist(), blobs):
                put((k,), (b,))

        # --layout bucket: every key's tail in one value per bucket (key -> blob, as an IPC table)
        def _whole(self):
            if self.p._whole is None:
                v = self.p.whole.get()
                t = (
                    read_ipc(v[0])
                    if v is not None
                    else pa.table({"k": pa.array([], pa.int64()), "b": pa.array([], pa.binary())})
                )
                self.p._whole = dict(zip(t.column("k").to_pylist(), t.column("b").to_pylist()))
            return self.p._whole

        def _whole_tails(self, keys):
            w = self._whole()
            return [w.get(k) for k in keys.tolist()]

        def _put_whole(self, keys, blobs):
            w = self._whole()
            w.update(zip(keys.tolist(), blobs))
            self.p.whole.update(
                (
                    ipc_table(
                        pa.table(
                            {"k": pa.array(list(w), pa.int64()), "b": pa.array(list(w.values()), pa.binary())}
                        )
                    ),
                )
            )

    class BucketedWindowClose(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.meta = handle.getValueState(
                "meta",
                StructType(
                    [
                        StructField("buckets", LongType()),
                        StructField("format", LongType()),
                        StructField("timer", LongType()),
                    ]
                ),
            )
            self.index = handle.getValueState("index", binary)
            self.tails = handle.getMapState("tails", StructType([StructField("k", LongType())]), binary)
            self.whole = handle.getValueState("whole", binary)
            self.pending = handle.getValueState(
                "pending", StructType([StructField("v", BinaryType()), StructField("upto", LongType())])
            )
            self._whole = None

        def _run(self, rows, timer_values):
            self._whole = None
            meta = self.meta.get()
            if meta is not None and (meta[0] != buckets or meta[1] != FORMAT):
                raise ValueError(
                    f"checkpoint written with {meta[0]} buckets, format {meta[1]}: start a new one"
                )
            wm_ms = timer_values.getCurrentWatermarkInMs()
            wm_us = wm_ms * 1000 if wm_ms > 0 else None
            out, wakeup, _ = (step_split if layout == "split" else step)(SparkBucket(self), rows, wm_us)
            old_timer = meta[2] if meta is not None else -1
            timer = -(-wakeup // 1000) if wakeup is not None else -1
            if timer != old_timer:
                if old_timer >= 0:
                    self.handle.deleteTimer(old_timer)
                if timer >= 0:
                    self.handle.registerTimer(timer)
            self.meta.update((buckets, FORMAT, timer))
            if out is not None and out.num_rows:
                yield output_frame(out)

        def handleInputRows(self, key, rows, timerValues):
            frames = [f for f in rows if len(f)]
            t = frame_to_table(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])
            # the timer of this bucket may fire later in this batch: it then finds nothing due
            yield from self._run(t, timerValues)

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            meta = self.meta.get()
            if meta is not None and meta[2] == expiredTimerInfo.getExpiryTimeInMs():
                self.meta.update((meta[0], meta[1], -1))  # Spark deletes a fired timer itself
            yield from self._run(None, timerValues)

        def close(self):
            pass

    return BucketedWindowClose()


class BlobBucket(Bucket):
    """A bucket whose whole state is one value (``applyInPandasWithState``'s one state value per
    group): the index and every key's tail, encoded with overwindow's state encoding."""

    KIND = "bucketed_prototype"

    def __init__(self, data: bytes | None):
        from overwindow.streaming.state import decode

        if data is None:
            self._index, self._tails = INDEX.empty_table(), {}
        else:
            tables, _ = decode(data, self.KIND)
            self._index = tables["index"]
            t = tables["tails"]
            self._tails = dict(zip(t.column("k").to_pylist(), t.column("b").to_pylist()))

    def encode(self) -> bytes:
        from overwindow.streaming.state import encode

        tails = pa.table(
            {
                "k": pa.array(list(self._tails), pa.int64()),
                "b": pa.array(list(self._tails.values()), pa.binary()),
            }
        )
        return encode({"index": self._index, "tails": tails}, {}, self.KIND)

    index = DictBucket.index
    set_index = DictBucket.set_index
    tails = DictBucket.tails
    put_tails = DictBucket.put_tails


class AipwsBucketed:
    """The prototype's step hosted by ``applyInPandasWithState`` grouped by bucket: one state value
    per bucket (``BlobBucket``), an event-time timeout per bucket at its earliest wakeup."""

    def __call__(self, key, pdfs, state):
        wm_ms = state.getCurrentWatermarkMs()
        wm_us = wm_ms * 1000 if wm_ms > 0 else None
        bucket = BlobBucket(state.get[0] if state.exists else None)
        rows = None
        if not state.hasTimedOut:
            frames = [f for f in pdfs if len(f)]
            if frames:
                rows = frame_to_table(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])
        out, wakeup, _ = step(bucket, rows, wm_us)
        state.update((bucket.encode(),))
        if wakeup is not None:
            state.setTimeoutTimestamp(max(-(-wakeup // 1000), wm_ms + 1))
        if out is not None and out.num_rows:
            yield output_frame(out)


def bucketed_aipws(events, buckets: int):
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark.sql.types import BinaryType, StructField, StructType

    return (
        events.withColumn("b", F.pmod(F.xxhash64("k"), F.lit(buckets)))
        .groupBy("b")
        .applyInPandasWithState(
            AipwsBucketed(),
            output_struct(),
            StructType([StructField("s", BinaryType(), False)]),
            "append",
            GroupStateTimeout.EventTimeTimeout,
        )
    )


def bucketed_aipws_noop(events, buckets: int):
    """The floor of ``applyInPandasWithState`` grouped by the same buckets: the no-op pass-through."""
    from common import passthrough
    from pyspark.sql import functions as F

    df = events.withColumn("b", F.pmod(F.xxhash64("k"), F.lit(buckets)))
    return passthrough(df.groupBy("b"), df.schema, "append")


def frame_to_table(pdf: pd.DataFrame) -> pa.Table:
    return pa.table(
        {
            "k": pdf["k"].to_numpy().astype(np.int64),
            "ts": pdf["ts"].to_numpy().astype("datetime64[us]").astype(np.int64),
            "rid": pdf["rid"].to_numpy().astype(np.int64),
            "x": pdf["x"].to_numpy().astype(np.float64),
        }
    )


def output_frame(out: pa.Table) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "k": out.column("k").to_numpy().astype(np.int32),
            "ts": out.column("ts").to_numpy().astype("datetime64[us]"),
            "rid": out.column("rid").to_numpy(),
            "x": out.column("x").to_numpy(),
            "prev_x": out.column("prev_x").to_numpy(zero_copy_only=False),
            "s10": out.column("s10").to_numpy(zero_copy_only=False),
        }
    )


def bucketed_noop(events, buckets: int):
    """The floor of a bucketed transformWithStateInPandas: grouped by the same buckets, each call
    yields its rows and touches no state."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StatefulProcessor

    class NoOp(StatefulProcessor):
        def init(self, handle):
            pass

        def handleInputRows(self, key, rows, timerValues):
            for f in rows:
                yield f[["k", "ts", "rid", "x"]]

        def close(self):
            pass

    return (
        events.withColumn("b", F.pmod(F.xxhash64("k"), F.lit(buckets)))
        .groupBy("b")
        .transformWithStateInPandas(NoOp(), events.schema, "Append", "EventTime")
    )


def output_struct():
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StructField, StructType, TimestampType

    return StructType(
        [
            StructField("k", IntegerType()),
            StructField("ts", TimestampType()),
            StructField("rid", LongType()),
            StructField("x", DoubleType()),
            StructField("prev_x", DoubleType()),
            StructField("s10", DoubleType()),
        ]
    )


def bucketed(events, buckets: int, layout: str):
    from pyspark.sql import functions as F

    return (
        events.withColumn("b", F.pmod(F.xxhash64("k"), F.lit(buckets)))
        .groupBy("b")
        .transformWithStateInPandas(processor(buckets, layout), output_struct(), "Append", "EventTime")
    )


# -- data ------------------------------------------------------------------------------------------

POINTS = {  # name: (label, keys, sparse)
    "1k": ("1k dense", 1_000, False),
    "100k": ("100k dense", 100_000, False),
    "100k-sparse": ("100k sparse", 100_000, True),
    "1m-sparse": ("1M sparse", 1_000_000, True),
}

SCHEMA = "k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE"


def make_batches(
    keys: int, batches: int, rows_per_batch: int, touched: int | None, seed: int
) -> list[pa.Table]:
    """Micro-batch b: event times T0 + 10 s x b plus up to 5 s of jitter. Dense (``touched`` None):
    every key gets rows_per_batch / keys rows (at least one). Sparse: a first batch holds one row
    for each of the ``keys`` keys (it fills the state), then two one-row batches move the watermark
    past the fill (its rows are released in the second: a million keys step there, outside the
    measured micro-batches), then each batch gives ``rows_per_batch`` rows to ``touched`` keys drawn
    at random."""
    rng = np.random.default_rng(seed)
    out, rid = [], 0
    plan = [None] * batches if touched is None else ["fill", "advance", "advance"] + [touched] * batches
    for b, t in enumerate(plan):
        if t is None:
            per = max(1, rows_per_batch // keys)
            k = np.tile(np.arange(keys, dtype=np.int32), per)
            rng.shuffle(k)
        elif t == "fill":
            k = rng.permutation(keys).astype(np.int32)
        elif t == "advance":
            k = np.zeros(1, np.int32)
        else:
            chosen = rng.choice(keys, t, replace=False).astype(np.int32)
            k = chosen[rng.integers(0, t, rows_per_batch)]
            k[:t] = chosen  # every chosen key gets a row
        n = len(k)
        ts = T0_US + b * 10_000_000 + rng.integers(0, 5_000, n) * 1000
        out.append(
            pa.table(
                {
                    "k": k,
                    "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
                    "rid": np.arange(rid, rid + n, dtype=np.int64),
                    "x": np.round(rng.normal(size=n), 3),
                }
            )
        )
        rid += n
    # one last row moves the watermark past everything, so the no-data batch after it releases all
    out.append(
        pa.table(
            {
                "k": pa.array([0], pa.int32()),
                "ts": pa.array([T0_US + (len(plan) + 10) * 10_000_000], pa.timestamp("us", tz="UTC")),
                "rid": [rid],
                "x": [0.0],
            }
        )
    )
    return out


def write_batches(folder: Path, tables: list[pa.Table]) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    now = time.time()
    for i, t in enumerate(tables):
        path = folder / f"part-{i:04d}.parquet"
        pq.write_table(t, path)
        os.utime(path, (now - len(tables) + i, now - len(tables) + i))


# -- check: the prototype's output equals the batch query ------------------------------------------


def expected(tables: list[pa.Table]) -> pd.DataFrame:
    import overwindow

    t = pa.concat_tables(tables)
    t = t.set_column(1, "ts", t.column("ts").cast(pa.timestamp("us")).cast(pa.int64()))
    return overwindow.evaluate(t, *CALLS).to_pandas().sort_values("rid").reset_index(drop=True)


def compare(got: pd.DataFrame, want: pd.DataFrame, what: str) -> None:
    got = got.sort_values("rid").reset_index(drop=True)
    # the last row (it only moves the watermark) is released by no later watermark
    want = want[want["rid"].isin(got["rid"])].reset_index(drop=True)
    missing = len(expected_rows := want) - len(got)
    assert len(got) == len(set(got["rid"])), f"{what}: a row emitted twice"
    assert missing == 0, f"{what}: {missing} rows not emitted"
    np.testing.assert_array_equal(got["rid"].to_numpy(), expected_rows["rid"].to_numpy())
    np.testing.assert_allclose(got["s10"].to_numpy(), want["s10"].to_numpy(), rtol=1e-12)
    g, w = got["prev_x"].to_numpy(), want["prev_x"].to_numpy(dtype=float, na_value=np.nan)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    np.testing.assert_array_equal(g[~np.isnan(g)], w[~np.isnan(w)])
    print(f"{what}: {len(got):,} rows emitted, equal to the batch query", flush=True)


def check_in_process(tables: list[pa.Table], buckets: int, fn=step) -> None:
    """Feeds the micro-batches through ``step`` per bucket, as Spark would (watermark: the previous
    batch's largest event time less 5 s; a no-data batch at the end fires due wakeups)."""
    states: dict[int, DictBucket] = {}
    wakeups: dict[int, int | None] = {}
    outs, wm = [], None
    batches = [
        t.set_column(1, "ts", t.column("ts").cast(pa.timestamp("us")).cast(pa.int64())) for t in tables
    ] + [None]
    for t in batches:
        touched = set()
        if t is not None:
            b = t.column("k").to_numpy().astype(np.int64) * 2654435761 % buckets
            for bk in np.unique(b).tolist():
                out, wakeups[bk], _ = fn(states.setdefault(bk, DictBucket()), t.filter(pa.array(b == bk)), wm)
                touched.add(bk)
                if out is not None:
                    outs.append(out)
        for bk, w in list(wakeups.items()):
            if bk not in touched and w is not None and wm is not None and w <= wm:
                out, wakeups[bk], _ = fn(states[bk], None, wm)
                if out is not None:
                    outs.append(out)
        if t is not None:
            wm = max(wm or 0, int(t.column("ts").to_numpy().max()) - 5_000_000)
    compare(
        pa.concat_tables(outs).to_pandas(), expected(tables), f"in process, {buckets} buckets, {fn.__name__}"
    )


def check_spark(tables: list[pa.Table], buckets: int, variant: str) -> None:
    from common import spark_session

    from overwindow.spark.adapter import use_rocksdb

    work = Path(tempfile.mkdtemp(prefix="ow-bucketed-check-"))
    spark = spark_session("bucketed-check", work / "wh", 10_000)
    try:
        use_rocksdb(spark)
        spark.sparkContext.addPyFile(__file__)
        write_batches(work / "src", tables)
        events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(work / "src"))
        df = variant_df(events.withWatermark("ts", "5 seconds"), variant, buckets)
        got = []
        q = (
            df.writeStream.foreachBatch(lambda d, i: got.append(d.toPandas()))
            .option("checkpointLocation", str(work / "chk"))
            .outputMode("append")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        if q.exception():
            raise RuntimeError(str(q.exception()))
        out = pd.concat(got, ignore_index=True)
        out["ts"] = out["ts"].astype("datetime64[us]").astype(np.int64)
        compare(out, expected(tables), f"on Spark, {buckets} buckets, {variant}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


# -- bench -----------------------------------------------------------------------------------------


def run_query(spark, df, mode: str, chk: Path) -> dict:
    shutil.rmtree(chk, ignore_errors=True)
    started = time.perf_counter()
    q = (
        df.writeStream.format("noop")
        .option("checkpointLocation", str(chk))
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    seconds = time.perf_counter() - started
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    prog = q.recentProgress
    return {
        "seconds": seconds,
        "batch_ms": [p.batchDuration for p in prog],
        "input": [p.numInputRows for p in prog],
        "output_rows": sum(p.sink.numOutputRows for p in prog),
        "load": os.getloadavg()[0],
    }


def variant_df(events, variant: str, buckets: int):
    from common import passthrough

    if variant == "passthrough":
        return passthrough(events.groupBy("k"), events.schema, "append")
    if variant == "bucketed_noop":
        return bucketed_noop(events, buckets)
    if variant == "bucketed_aipws":
        return bucketed_aipws(events, buckets)
    if variant == "bucketed_aipws_noop":
        return bucketed_aipws_noop(events, buckets)
    layouts = {"bucketed": "per_key", "bucketed_whole": "bucket", "bucketed_split": "split"}
    return bucketed(events, buckets, layouts[variant])


def bench(args) -> None:
    from common import spark_session

    from overwindow.spark.adapter import use_rocksdb

    work = Path(tempfile.mkdtemp(prefix="ow-bucketed-"))
    spark = spark_session("bucketed-bench", work / "wh", 100_000)
    results = []
    try:
        use_rocksdb(spark)
        spark.sparkContext.addPyFile(__file__)
        # warm-up, untimed: every variant once on a small dense input (JVM code paths, Python workers)
        write_batches(work / "warm", make_batches(1_000, 2, 20_000, None, 3))
        for v in args.variants:
            events = (
                spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(work / "warm"))
            )
            run_query(
                spark,
                variant_df(events.withWatermark("ts", "5 seconds"), v, args.buckets),
                "append",
                work / "chk-warm",
            )
        for point in args.points:
            name, keys, sparse = POINTS[point]
            touched = args.touched if sparse else None
            rows = args.rows_per_batch if touched is None else args.sparse_rows
            tables = make_batches(keys, args.batches, rows, touched, 7)
            write_batches(work / point, tables)
            # sparse: the per-key pass-through skips the fill (a million calls): its state then
            # holds only the keys touched so far, which flatters it
            write_batches(work / f"{point}-nofill", tables[1:] if touched is not None else tables)
            variants = list(args.variants)
            for r in range(args.rounds):
                for v in variants:
                    events = (
                        spark.readStream.schema(SCHEMA)
                        .option("maxFilesPerTrigger", 1)
                        .parquet(str(work / (f"{point}-nofill" if v == "passthrough" else point)))
                    )
                    df = variant_df(events.withWatermark("ts", "5 seconds"), v, args.buckets)
                    res = run_query(spark, df, "append", work / f"chk-{point}-{v}")
                    fed = tables[1:] if v == "passthrough" and touched is not None else tables
                    res.update(point=name, variant=v, round=r, input_rows=sum(t.num_rows for t in fed))
                    results.append(res)
                    print(
                        f"{name} {v} round {r}: {res['seconds']:.1f} s, out {res['output_rows']:,}, batch ms "
                        f"{res['batch_ms']}, input {res['input']}, load {res['load']:.2f}",
                        flush=True,
                    )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    summarize(results, args)


def summarize(results: list[dict], args) -> None:
    print(
        f"\nbuckets {args.buckets}, batches {args.batches}; "
        "per-batch ms exclude the first (state fill for sparse)"
    )
    print(
        "| point | variant | runs s | rows/s (median run) | data batch ms median | p99 "
        "| ratio to passthrough |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    by = {}
    for r in results:
        by.setdefault((r["point"], r["variant"]), []).append(r)
    for (point, v), rs in by.items():
        med = sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2]
        skip = 1 if point.endswith("sparse") and v != "passthrough" else 0
        ms = [b for r in rs for b, n in list(zip(r["batch_ms"], r["input"]))[skip:] if n > 1]
        base = by.get((point, "passthrough"))
        ratio = f"{med['seconds'] / sorted(x['seconds'] for x in base)[len(base) // 2]:.2f}" if base else ""
        runs = ", ".join(f"{r['seconds']:.1f}" for r in rs)
        print(
            f"| {point} | {v} | {runs} | {med['input_rows'] / med['seconds']:,.0f} | "
            f"{statistics.median(ms):.0f} | {np.percentile(ms, 99):.0f} | {ratio} |"
        )


def harness(args) -> None:
    """The Python side alone, no Spark: each point's micro-batches through ``step`` per bucket (state
    bytes in dicts), against overwindow's own per-key window-close machine on the same rows (one
    ``WindowClose.step`` per key and micro-batch, as the per-key hosting calls it); seconds of CPU in
    this one process. Shows what the vectorised step costs per micro-batch, without Spark's share."""
    from overwindow.spec import OverWindow
    from overwindow.streaming.window_close import WindowClose

    spec = OverWindow(
        *(c.replace("PARTITION BY k ", "").replace("ts, rid", "ts") for c in CALLS), rowKey="rid"
    )
    schema = pa.schema([("ts", pa.int64()), ("rid", pa.int64()), ("x", pa.float64())])
    machine = WindowClose(spec, schema)
    for point in args.points:
        _, keys, sparse = POINTS[point]
        touched = args.touched if sparse else None
        rows = args.rows_per_batch if touched is None else args.sparse_rows
        tables = make_batches(keys, args.batches, rows, touched, 7)[:-1]
        tables = [
            t.set_column(1, "ts", t.column("ts").cast(pa.timestamp("us")).cast(pa.int64())) for t in tables
        ]
        for variant in ("bucketed", "bucketed split", "per-key machine"):
            if variant == "per-key machine" and (sparse or keys > 100_000):
                print(
                    f"{point} {variant}: not run (filling the keys through the per-key machine)", flush=True
                )
                continue
            states: dict = {}
            wakeups: dict = {}
            wm, times, stepped = None, [], 0
            for t in tables:
                a = time.process_time()
                k = t.column("k").to_numpy().astype(np.int64)
                if variant.startswith("bucketed"):
                    fn = step_split if variant == "bucketed split" else step
                    b = k * 2654435761 % args.buckets
                    order = np.argsort(b, kind="stable")
                    t, b = t.take(pa.array(order)), b[order]
                    cuts = np.flatnonzero(np.r_[True, b[1:] != b[:-1], True])
                    seen = set()
                    for s_, e_ in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
                        bk = int(b[s_])
                        _, wakeups[bk], c = fn(states.setdefault(bk, DictBucket()), t.slice(s_, e_ - s_), wm)
                        stepped += c["stepped"]
                        seen.add(bk)
                    for bk, w in list(wakeups.items()):  # the buckets whose timer fires
                        if bk not in seen and w is not None and wm is not None and w <= wm:
                            _, wakeups[bk], c = fn(states[bk], None, wm)
                            stepped += c["stepped"]
                else:
                    order = np.argsort(k, kind="stable")
                    t, k = t.take(pa.array(order)), k[order]
                    cuts = np.flatnonzero(np.r_[True, k[1:] != k[:-1], True])
                    part = t.select(["ts", "rid", "x"])
                    for s_, e_ in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
                        key = int(k[s_])
                        states[key] = machine.step(states.get(key), part.slice(s_, e_ - s_), wm).state
                        stepped += 1
                times.append(time.process_time() - a)
                wm = max(wm or 0, int(t.column("ts").to_numpy().max()) - 5_000_000)
            print(
                f"{point} {variant}: CPU s per micro-batch {', '.join(f'{x:.2f}' for x in times)} "
                f"({stepped:,} key steps)",
                flush=True,
            )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["check", "bench", "harness"])
    p.add_argument("--buckets", type=int, default=64)
    p.add_argument(
        "--points", nargs="*", default=["1k", "100k", "100k-sparse", "1m-sparse"], choices=list(POINTS)
    )
    p.add_argument(
        "--variants",
        nargs="*",
        default=["passthrough", "bucketed_noop", "bucketed"],
        choices=[
            "passthrough",
            "bucketed_noop",
            "bucketed",
            "bucketed_whole",
            "bucketed_split",
            "bucketed_aipws_noop",
            "bucketed_aipws",
        ],
    )
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--rows-per-batch", type=int, default=200_000)
    p.add_argument("--touched", type=int, default=10_000)
    p.add_argument("--sparse-rows", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args(argv)
    if args.what == "check":
        tables = make_batches(300, 4, 3_000, None, 1)
        check_in_process(tables, 7)
        sparse = make_batches(2_000, 3, 500, 100, 2)
        check_in_process(sparse, 5)
        check_in_process(tables, 7, step_split)
        check_in_process(sparse, 5, step_split)
        check_spark(tables, 7, "bucketed")
        check_spark(sparse, 5, "bucketed")
        check_spark(tables, 3, "bucketed_whole")
        check_spark(sparse, 5, "bucketed_split")
        check_spark(sparse, 5, "bucketed_aipws")
        return 0
    if args.what == "harness":
        harness(args)
        return 0
    bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
