"""``GroupedData.overWindow(spec)``: a thin adapter from Spark's ``applyInPandasWithState`` to the
pure state machines in overwindow.streaming.

Output: the input columns (those the spec carries, ``OverWindow.carrying``) plus one column per
window expression. Emit on window close runs in ``append`` mode with
``GroupStateTimeout.EventTimeTimeout``, so keys without new rows still emit
when the watermark passes their pending rows. With ``keyBuckets=B`` it groups by
``pmod(xxhash64(keys), B)`` instead of by the key: one call, one state and one timeout per bucket
serve all its keys (the machine tells them apart by the key columns), so a micro-batch costs B
calls however many keys it holds. Emit on update runs in ``update`` mode and adds
``_change`` (``upsert`` or ``delete``; and ``_row_id`` when no rowKey is declared): a sink keeps a
table keyed by (group key, row key). State is one binary value per key (Arrow IPC); with
``stateLayout="chunked"`` emit on update runs on ``transformWithStateInPandas`` instead, a key's
state being an index value, a map of chunks and (with a row key) a map of row identities
(``overwindow.streaming.chunked``), so a micro-batch moves only the chunks its changes reach; with
``keyBuckets`` too, one group per bucket keeps each key's index and chunks as entries of its maps,
and a call reads only the keys with rows. Emit on window close with ``stateLayout="chunked"`` (on
buckets) runs there too: a bucket's pending rows in its value, each key's history an entry of a map
(``overwindow.streaming.window_close_split``), one event-time timer per bucket at its wakeup.

Timestamps reach pandas UDFs as wall-clock times of the session time zone; the watermark Spark
reports is UTC milliseconds. The adapter converts the watermark into the key's wall-clock
microseconds and wakeups back. Those wall-clock times are instants only in UTC (elsewhere an
hour repeats where the offset falls back), so a stream with TIMESTAMP columns is refused in any other
session zone (``check_session_time_zone``), and the conversion is a change of unit.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator

import pandas as pd
import pyarrow as pa
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.bind import ERROR, bind, source_columns
from overwindow.physical.columns import check_fields, resolve_column
from overwindow.physical.values import kind_of
from overwindow.spark import compat, executors
from overwindow.spark.bind import results_in_spark, with_computed, with_filter, with_results
from overwindow.spark.boundary import (
    Companion,
    arrow_schema,
    check_session_time_zone,
    companions_of,
    output_struct,
    to_arrow,
    with_interval_days,
)
from overwindow.spark.counts import WINDOWS, MachineCounts, Stage, aside_origin, key_text
from overwindow.spark.grouping import (
    bucket_grouping,
    bucket_of,
    key_grouping,
    named_column,
    named_keys,
    per_key_grouping,
    regrouped,
    shuffle_partitions,
    with_key_columns,
)
from overwindow.spark.handback import RECORDS, Handback, handback_struct, handed_back
from overwindow.spark.processor import chunked_processor
from overwindow.spark.transport import from_spark, to_spark
from overwindow.spark.workers import freeze_imports
from overwindow.spec import OverWindow
from overwindow.streaming.contract import CHANGE, END_OF_INPUT, ROW_ID, check_row_bound
from overwindow.streaming.machines import machine_for

# PySpark's applyInPandasWithState pads its output with empty rows through pd.concat, which warns on
# every call under pandas 2.x: noise, not a problem of the query. Sessions that run overWindow set
# this on their workers (spark.executorEnv.PYTHONWARNINGS).
WORKER_WARNINGS = (
    "spark.executorEnv.PYTHONWARNINGS",
    "ignore:The behavior of DataFrame concatenation:FutureWarning",
)

log = logging.getLogger("overwindow")
# Spark knows no end of input: a key whose rows wait for later rows (wakeup END_OF_INPUT) sets its
# event-time timeout here, and a watermark at or past it is the end of input (a job ending its input
# moves the watermark past it, e.g. with a marker row near Spark's last TIMESTAMP, 9999-12-31, so
# every key with a timeout times out and emits what it holds)
END_OF_INPUT_MS = 221_845_392_000_000  # 9000-01-01T00:00:00Z
_ALL = "__overwindow_all"  # the single group of df.overWindow(spec) without groupBy


def _input_columns(df, spec: OverWindow) -> pa.Table:
    """``df``'s columns (no rows), once ``spec`` is checked to read none of their fields (``s.a``,
    ``check_fields``), before any column is looked up by the last part of its name, and no
    TIMESTAMP_NTZ value as a call's argument (it would come back as TIMESTAMP)."""
    from pyspark.sql.types import TimestampNTZType

    empty = arrow_schema(df.schema).empty_table()
    check_fields([e for c in spec.calls for e in c.exprs()], empty)
    for call in spec.calls:  # a stream's naive timestamps are TIMESTAMP: NTZ values would change type
        if call.function in ("count", "count_distinct"):  # a BIGINT, whatever it counts
            continue
        for arg in [*call.args, *([call.default] if call.default is not None else [])]:
            types = {n: df.schema[resolve_column(empty, n)].dataType for n in arg.columns()}
            ntz = [n for n, t in types.items() if isinstance(t, TimestampNTZType)]
            casts = any(c.to.this == exp.DataType.Type.TIMESTAMPNTZ for c in arg.node.find_all(exp.Cast))
            if (ntz or casts) and _timestamp_value(df, arg):
                column = f" (`{ntz[0]}`)" if ntz and ntz[0] not in spec.written else ""
                raise WindowSpecError(
                    f"{call.function}({spec.as_written(str(arg))}) reads a TIMESTAMP_NTZ value{column}: "
                    "on a stream overwindow's timestamps are Spark's TIMESTAMP, so it would come back "
                    "as TIMESTAMP; TIMESTAMP_NTZ is not supported on streams yet: CAST it AS TIMESTAMP"
                )
    return empty


def _timestamp_value(df, arg) -> bool:
    """Whether the call argument ``arg`` has a TIMESTAMP value, by Spark's analysis of it over
    ``df`` (no job runs), that is not cast AS TIMESTAMP last (``n``, ``coalesce(n, ...)``; not
    ``CAST(n AS TIMESTAMP)``, ``n IS NULL``)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql.types import TimestampNTZType, TimestampType

    node = arg.node.unnest()
    if isinstance(node, exp.Cast) and node.to.this in _TIMESTAMP_TYPES:
        return False
    try:
        kind = df.select(compat.functions(df).expr(arg.sql)).schema.fields[0].dataType
    except AnalysisException:  # Spark's analysis refuses it: the machine's check names what is wrong
        return False
    return isinstance(kind, (TimestampType, TimestampNTZType))


_TIMESTAMP_TYPES = (
    exp.DataType.Type.TIMESTAMP,
    exp.DataType.Type.TIMESTAMPTZ,
    exp.DataType.Type.TIMESTAMPLTZ,
)


def is_watermarked(df, spec: OverWindow) -> bool:
    """Whether ``spec``'s ORDER BY column carries a watermark in ``df`` (emit on update evicts then)."""
    empty, order = _input_columns(df, spec), spec.order_column
    return bool(order) and "spark.watermarkDelayMs" in df.schema[resolve_column(empty, order)].metadata


def check_watermark(df, spec: OverWindow) -> str:
    """The ORDER BY column's name in ``df``; refuses a missing column or missing watermark."""
    col = resolve_column(_input_columns(df, spec), spec.order_column)
    field = df.schema[col]
    if "spark.watermarkDelayMs" not in field.metadata and "timestamp" not in field.dataType.simpleString():
        raise WindowSpecError(  # withWatermark would refuse it: the way on is the other emit mode
            f"emit on window close needs a watermark on the ORDER BY column `{col}`, and Spark puts "
            f"one only on a TIMESTAMP column (`{col}` is {field.dataType.simpleString().upper()}): use "
            'emit="on_update", which needs none'
        )
    if "spark.watermarkDelayMs" not in field.metadata:
        raise WindowSpecError(
            f"emit on window close needs a watermark on the ORDER BY column `{col}`: "
            f"call df.withWatermark('{col}', '<delay>') before groupBy(...).overWindow(...)"
        )
    return col


def over_window(grouped, spec: OverWindow, keep=None, append: bool = False):
    """``grouped.applyInPandasWithState`` running ``spec``'s machine; returns the streaming DataFrame.
    ``keep``: where the rows the machines set aside go besides the count and the log (the main
    job's dead letter: an accumulator of ``{(batch, origin, position): (origin, reason, record)}``);
    ``append``: emit on update's changelog in Spark's ``append`` output mode (each change appended
    once), as a stateful operator after another must run (``overwindow.spark.grouped``)."""
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark.sql.types import BinaryType, StructField, StructType

    if not isinstance(spec, OverWindow):
        raise TypeError(f"overWindow() takes an overwindow.OverWindow, got {type(spec).__name__}")
    df = grouped._df
    if compat.is_connect(df):  # before anything is asked of the DataFrame
        compat.require("overWindow on Spark Connect")
    if not append:  # a GROUP BY's changelog (overwindow.spark.grouped) names its own columns
        spec.check_columns([n for n in source_columns(df.columns) if n != _ALL])
    # Spark computes what the calls read beyond plain columns; the machine reads those columns
    bound = bind(spec.expressions, start=len(df.columns) - len(source_columns(df.columns)))
    if bound.pre:
        df = with_computed(df, bound.pre)
        grouped, spec = regrouped(grouped, df), spec.over(bound.expressions, bound.pre)
    # ... and what the windows' results go into: the machine computes the calls alone
    aliases = [*source_columns(df.columns), *spec.aliases]
    spec, post, condition = results_in_spark(spec)
    if spec.state_layout == "chunked":
        compat.require_transform_with_state(df, "stateLayout='chunked'")
    executors.use_running_python(df.sparkSession)
    if spec.emit == "on_window_close":
        check_watermark(df, spec)
        watermarked, mode, timeout = True, "append", GroupStateTimeout.EventTimeTimeout
    else:
        watermarked = is_watermarked(df, spec)
        mode, timeout = "append" if append else "update", GroupStateTimeout.NoTimeout
    input_struct = StructType([f for f in df.schema.fields if f.name != _ALL])
    input_schema = arrow_schema(input_struct)
    keys, stage = (), WINDOWS
    if _ALL not in df.columns:  # groupBy(...): keyBuckets as given, or chosen (OverWindow.hosted)
        named = named_keys(grouped, input_struct.names)
        spec = spec.hosted(watermarked, named is not None, shuffle_partitions(df.sparkSession))
        # the machine tells keys apart by their columns on buckets and, per key, in the chunked
        # layout on update (see per_key_grouping): a computed key becomes a hidden input column
        if named is None and (spec.key_buckets or spec.state_layout == "chunked"):
            df, named, shown = with_key_columns(df, grouped, input_struct.names)
            stage = Stage(WINDOWS.words, shown)
            input_struct = StructType([f for f in df.schema.fields if f.name != _ALL])
            input_schema = arrow_schema(input_struct)
        if spec.key_buckets:
            keys, buckets = named, spec.key_buckets
            grouped = bucket_grouping(df, bucket_of(keys, buckets), buckets, spec.buckets_chosen)
        elif spec.state_layout == "chunked":
            keys, grouped = named, per_key_grouping(df, named)
        else:
            grouped = key_grouping(df, grouped, input_struct.names)
    # built here to check the spec against the schema; each worker builds its own from the same parts
    machine = machine_for(spec, input_schema, watermarked, keys=keys)
    out_struct = output_struct(input_struct, visible(machine.output_schema))
    check_session_time_zone(df)
    companions = companions_of(input_schema)
    grouped = with_companions(grouped, companions)
    counts = MachineCounts.of(df.sparkSession, keep)
    back = Handback.of(out_struct, stream_rows(df.sparkSession))
    run = Runner(spec, input_schema, watermarked, counts, companions, keys, stage, back)
    if spec.state_layout == "chunked":
        check_rocksdb(df.sparkSession, "stateLayout='chunked'")
        out = grouped.transformWithStateInPandas(
            chunked_processor(run),
            handback_struct(),
            "Append" if spec.emit == "on_window_close" or append else "Update",
            "EventTime" if watermarked else "None",
        )
    else:
        state_struct = StructType([StructField("state", BinaryType(), False)])
        out = grouped.applyInPandasWithState(run, handback_struct(), state_struct, mode, timeout)
    out = with_interval_days(handed_back(out, out_struct), visible(machine.output_schema))
    counts = run.counts
    if post or condition:
        out = with_results(out, post, spec.emit, keep_errors=keep is not None)
        if condition:
            out = with_filter(out, condition, spec.emit, keep_errors=keep is not None)
        extra = [c for c in (CHANGE, ROW_ID, ERROR) if c in out.columns]
        kept = [c for c in aliases if c != _ALL and c in out.columns]  # the op column is not out
        out = out.select(*(named_column(c) for c in kept), *(named_column(c) for c in extra))
    out.overwindow_counts = counts  # what the machines drop, for the job's progress line
    return out


ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def use_rocksdb(session) -> None:
    """Queries the session starts from now on keep state in RocksDB (which the chunked layout needs),
    committing changelogs rather than snapshots of every key's state. A checkpoint keeps the store it
    was started with."""
    session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
    session.conf.set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")


def with_companions(grouped, companions: tuple[Companion, ...]):
    """``grouped`` with each companion column added to its rows (``isnan`` of a DOUBLE column,
    ``coalesce(x, 0)`` of a BIGINT one: what Spark's pandas conversion loses of them), grouped by the
    same expressions."""
    from pyspark.sql import functions as F

    if not companions:
        return grouped
    df = grouped._df.withColumns(
        {
            c.name: F.isnan(named_column(c.column))
            if c.kind == "nan"
            else F.coalesce(named_column(c.column), F.lit(0).cast("bigint"))
            for c in companions
        }
    )
    return regrouped(grouped, df)


def check_rocksdb(session, what: str) -> None:
    """``what`` runs on transformWithStateInPandas, which Spark allows only on RocksDB (and which
    needs protobuf)."""
    provider = session.conf.get("spark.sql.streaming.stateStore.providerClass", None) or ""
    if not provider.endswith("RocksDBStateStoreProvider"):
        raise WindowSpecError(
            f"{what} runs on Spark's transformWithStateInPandas, which needs the RocksDB state "
            f"store: spark.conf.set('spark.sql.streaming.stateStore.providerClass', '{ROCKSDB}') before "
            f"starting the query (this session uses {provider or 'the default HDFS-backed store'})"
        )
    if importlib.util.find_spec("google.protobuf") is None:
        raise WindowSpecError(
            f"{what} runs on Spark's transformWithStateInPandas, which needs the "
            "'protobuf' package: pip install protobuf"
        )


class Runner:
    """The function Spark calls per key and micro-batch (pickled to the workers with its spec)."""

    def __init__(
        self,
        spec: OverWindow,
        schema: pa.Schema,
        watermarked: bool,
        counts=None,
        companions=(),
        keys: tuple[str, ...] = (),
        stage: Stage = WINDOWS,
        back: Handback | None = None,
    ):
        self.spec, self.schema, self.watermarked = spec, schema, watermarked
        self.counts, self.companions, self.keys = counts, tuple(companions), tuple(keys)
        self.stage = stage  # its words and the names of computed keys (``__ow_ekey0``: "(k % 2)")
        self._back = back  # how its rows go back to Spark (None: in the machine's own types)
        self._machine = None
        self._key_cache = None

    @property
    def machine(self):
        if self._machine is None:
            self._machine = machine_for(self.spec, self.schema, self.watermarked, keys=self.keys)
        return self._machine

    def __getstate__(self):
        return {
            "spec": self.spec,
            "schema": self.schema,
            "watermarked": self.watermarked,
            "counts": self.counts,
            "companions": [tuple(c) for c in self.companions],
            "keys": self.keys,
            "stage": self.stage,
            "back": self._back,
        }

    def __setstate__(self, d):
        companions = [Companion(*c) for c in d["companions"]]
        self.__init__(
            d["spec"],
            d["schema"],
            d["watermarked"],
            d["counts"],
            companions,
            d["keys"],
            d["stage"],
            d["back"],
        )
        self.spec.register_user_aggregates()
        freeze_imports()  # unpickled in a worker: its imports are done

    def __call__(self, key, pdfs: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        wm_ms = state.getCurrentWatermarkMs() if self.watermarked else None
        step = self.step(key, from_spark(state.get[0]) if state.exists else None, pdfs, wm_ms)
        check_row_bound(step, self.spec.max_rows_per_key, key)
        if step.empty:
            state.remove()
        else:
            state.update((to_spark(step.state),))
        timeout = self.timeout_ms(step.wakeup, wm_ms)
        if timeout is not None and self.spec.emit == "on_window_close":
            state.setTimeoutTimestamp(timeout)
        yield from self.emitted(step)

    def timeout_ms(self, wakeup, wm_ms) -> int | None:
        """A step's ``wakeup`` as Spark's event-time timeout (UTC ms, past the watermark ``wm_ms``)."""
        if wakeup is None:
            return None
        wake = END_OF_INPUT_MS if wakeup == END_OF_INPUT else self._to_ms(wakeup)
        return max(wake, (wm_ms or 0) + 1)

    @property
    def back(self) -> Handback:
        """How the rows go back to Spark: as given, else in the machine's own types, one stream a
        step."""
        if self._back is None:
            self._back = Handback(visible(self.machine.output_schema))
        return self._back

    def emitted(self, step) -> Iterator[pd.DataFrame]:
        """What Spark takes back of ``step`` (``emitted``)."""
        return emitted(step, self.back)

    def step(self, key, prior, pdfs: Iterator[pd.DataFrame], wm_ms):
        """The machine's step on a key's pandas chunks, with Spark's watermark (UTC ms) in key units."""
        tables = [to_arrow(p, self.schema, self.companions) for p in pdfs if len(p)]
        rows = pa.concat_tables(tables) if tables else None
        watermark = self._to_key(wm_ms) if wm_ms and wm_ms > 0 else None
        if wm_ms is not None and wm_ms >= END_OF_INPUT_MS:
            watermark = END_OF_INPUT
        step = self.machine.step(prior, rows, watermark)
        if self.counts is not None:
            self.counts.add(step, key, self.keys, self.stage)
        where = f"{'key bucket' if self.keys else 'key'} {key_text(key)}"
        if step.late_rows:
            # a bucket's key is its number: the machine names the partition keys of its late rows
            late = step.late_keys if self.keys else (key,)
            shown = tuple(self.stage.label(k) for k in self.keys)
            named = "; ".join(key_text(k, shown) for k in late[:5])
            more = f" and {len(late) - 5} more keys" if len(late) > 5 else ""
            log.warning(
                "overwindow: dropped %d late rows of %s",
                step.late_rows,
                f"key {named}{more}" if named else where,
            )
        if step.counters.unknown_updates:
            log.warning(
                "overwindow: %d updates of unknown rows for %s (inserted; a stream must not move "
                "rows between partitions)",
                step.counters.unknown_updates,
                where,
            )
        if step.aside:
            log.warning(
                "overwindow: set aside %d rows (left out of the view and counted), the first of %s: %s",
                len(step.aside),
                aside_origin(step.aside, 0, key, self.keys, self.stage).removeprefix("overWindow, "),
                step.aside.reasons[0],
            )
        return step

    def _temporal_key(self) -> bool:
        """Whether the ORDER BY column the watermark applies to is a DATE or TIMESTAMP."""
        if self._key_cache is None:
            order = resolve_column(self.schema.empty_table(), self.spec.order_column)
            self._key_cache = kind_of(self.schema.field(order).type).is_temporal
        return self._key_cache

    def _to_key(self, utc_ms: int):
        """A UTC watermark in the ORDER BY key's numbers: microseconds for a DATE or TIMESTAMP key,
        whose wall-clock times are UTC (``check_session_time_zone`` refuses any other session zone
        for a stream with a TIMESTAMP), else as it is."""
        return int(utc_ms) * 1000 if self._temporal_key() else utc_ms

    def _to_ms(self, key_micros) -> int:
        """A wakeup in the ORDER BY key's numbers as Spark's UTC milliseconds, rounded up."""
        return -(-int(key_micros) // 1000) if self._temporal_key() else int(key_micros)


def emitted(step, back: Handback) -> Iterator[pd.DataFrame]:
    """A step's output as Spark takes it (``visible``: without the columns Spark computed ahead of
    the windows for them), handed back as ``back`` says (``overwindow.spark.handback``): no frame at
    all when nothing is emitted. O(rows)."""
    out = step.output
    return back.frames(out.select(visible(out.schema).names))


def stream_rows(session) -> int | None:
    """The rows of each Arrow stream a Runner hands back to Spark: half of Spark's Arrow records a
    batch (``spark.sql.execution.arrow.maxRecordsPerBatch``; None where it sets no bound), so that
    what ``mapInArrow`` reads back comes in batches of Spark's size. O(1).

    >>> class Conf:
    ...     def get(self, key, default=None):
    ...         return "10000"
    >>> class Session:
    ...     conf = Conf()
    >>> stream_rows(Session())
    5000
    """
    records = int(session.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", str(RECORDS)))
    return max(1, records // 2) if records > 0 else None


def visible(schema: pa.Schema) -> pa.Schema:
    """``schema`` without the columns a bind adds ahead of the windows (``source_columns``): what
    an operator hands back to Spark. O(columns)."""
    return pa.schema([schema.field(n) for n in source_columns(schema.names)])


def whole_stream(df, spec: OverWindow, keep=None, append: bool = False):
    """``df.overWindow(spec)`` without groupBy: the whole stream is one partition (``keep``,
    ``append``: as ``over_window``'s)."""
    from pyspark.sql import functions as F

    log.warning(
        "overwindow: a window without PARTITION BY (overWindow without groupBy) puts the whole "
        "stream in one partition on one executor; partition by a key where you can"
    )
    return over_window(df.withColumn(_ALL, F.lit(0)).groupBy(_ALL), spec, keep, append)
