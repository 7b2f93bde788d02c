"""A Kafka source for Structured Streaming on PySpark's Python data source API, with confluent-kafka.

Spark's own Kafka connector is a jar (``spark-sql-kafka-0-10``) that a pip-installed PySpark does not
have; where it is missing (or unreachable, as on machines without Maven Central) this source reads
the same topics with the same columns: ``key``, ``value`` (binary), ``topic``, ``partition``,
``offset``, ``timestamp``, ``timestampType``. Register it once per session and use it like the
connector, with the connector's option names::

    >>> from overwindow.pipeline.kafka import KafkaDataSource, FORMAT
    >>> FORMAT
    'overwindow_kafka'

    spark.dataSource.register(KafkaDataSource)
    df = (spark.readStream.format(FORMAT)
          .option("kafka.bootstrap.servers", "broker:9092").option("subscribe", "ticks")
          .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 10000).load())

Exactly-once input: an offset is ``{"topic": ..., "partitions": {"0": next_offset, ...}}`` (with
``"newest": {"0": micros, ...}``, each partition's newest event time read, when the partitions are
aligned); Spark writes each micro-batch's end offsets to the checkpoint before the batch runs, and a
restart replays the same ranges, so no record is lost or read twice. Admission control:
``maxOffsetsPerTrigger`` caps the records per micro-batch; ``availableNow`` reads what exists when
the query starts and stops.

Partitions kept together in event time: with the option ``eventTimeColumn`` (the view's watermark
column; ``eventTimeEnvelope = "debezium"`` for change events), the driver reads each new record's
event time from its value once (``kafka_alignment.event_time``) and ends every micro-batch where
``kafka_alignment.plan`` says, so that a partition read further than another never makes the other's
records late; ``idleTimeoutMs`` (default 30 s) is how long a partition without new records holds
the others back. Without it, the read limit is shared in proportion to each partition's backlog.

The end of each partition's log is the broker's high watermark, checked by reading from it: a
broker whose high watermark lags its log (Tansu reports the base offset of the last record batch)
would otherwise make a ``--once`` run stop short. Other ``kafka.*`` options go to the client
unchanged (``kafka.security.protocol``, ``kafka.sasl.*``, ...).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterator

import numpy as np

from overwindow.pipeline.kafka_alignment import Pending, event_time, plan, share_limit
from overwindow.spark import compat

compat.require_python_kafka_reader()  # PySpark 3.5 has no pyspark.sql.datasource

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition  # noqa: E402
from pyspark.sql.streaming.datasource import (  # noqa: E402
    ReadAllAvailable,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

FORMAT = "overwindow_kafka"
SCHEMA = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, "
    "timestampType INT"
)
_READ_TIMEOUT_S = 60.0
_BATCH_ROWS = 10_000
DEFAULT_IDLE_TIMEOUT_MS = 30_000
_SCAN_AHEAD = 1_000_000  # records a partition's scan looks ahead without a read limit


def _client_config(options: dict) -> dict:
    """confluent-kafka settings from the source's ``kafka.*`` options."""
    config = {k[len("kafka.") :]: v for k, v in options.items() if k.startswith("kafka.")}
    if "bootstrap.servers" not in config:
        raise ValueError(f"the {FORMAT} source needs the option kafka.bootstrap.servers")
    return config


def _consumer(config: dict):
    try:
        from confluent_kafka import Consumer
    except ImportError:  # pragma: no cover - the extra is part of the test set-up
        raise ImportError("the Kafka source needs confluent-kafka: pip install 'overwindow[kafka]'") from None
    return Consumer(
        {
            # the consumer reads up to ends it knows and then stops: a broker holding an empty fetch
            # for its default half second made every micro-batch's planning wait for it
            "fetch.wait.max.ms": 10,
            **config,
            "group.id": config.get("group.id", "overwindow"),
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )


class _Range(InputPartition):
    """Offsets [start, end) of one Kafka partition: one Spark task."""

    def __init__(self, topic: str, partition: int, start: int, end: int):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


class _Scanned:
    """A partition's records the planning has read past the last micro-batch's end: offsets, event
    times (NO_TIME where unknown), the next offset to scan from, and where the log ended when the
    last scan reached it (None: it stopped before the end)."""

    def __init__(self, start: int):
        self.offsets, self.times = array("q"), array("q")
        self.next, self.log_end = start, None

    def drop_before(self, start: int) -> None:
        cut = int(np.searchsorted(np.frombuffer(self.offsets, np.int64), start))
        if cut:
            del self.offsets[:cut], self.times[:cut]

    def pending(self, start: int, newest: int | None, live: bool) -> Pending:
        return Pending(
            start,
            np.frombuffer(self.offsets, np.int64).copy(),
            np.frombuffer(self.times, np.int64).copy(),
            self.log_end,
            newest,
            live,
        )


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches as per-partition offset ranges and reads them (see the module docstring)."""

    def __init__(self, options: dict):
        # Spark hands options over with their names lower-cased (option names are case-insensitive)
        self.options = {k.lower(): v for k, v in options.items()}
        self.config = _client_config(self.options)
        self.topic = self.options.get("subscribe")
        if not self.topic or "," in self.topic:
            raise ValueError(f"the {FORMAT} source needs the option subscribe = one topic name")
        self.starting = self.options.get("startingoffsets", "latest")
        if self.starting not in ("earliest", "latest"):
            raise ValueError(f"startingOffsets must be earliest or latest, got {self.starting!r}")
        limit = self.options.get("maxoffsetspertrigger")
        self.max_offsets = int(limit) if limit else None
        self.event_time = self.options.get("eventtimecolumn") or None
        self.envelope = self.options.get("eventtimeenvelope", "none")
        self.idle_s = float(self.options.get("idletimeoutms", DEFAULT_IDLE_TIMEOUT_MS)) / 1000
        self._driver = None
        self._target = None
        self._scanned: dict[str, _Scanned] = {}  # planning: records read past the last batch's end
        self._active: dict[str, float] = {}  # planning: when records last waited in each partition
        self._born = time.monotonic()

    def __getstate__(self):
        # Spark ships the reader to its workers for read(); what the driver holds stays behind.
        return {**self.__dict__, "_driver": None, "_scanned": {}, "_active": {}}

    # --- planning (runs in Spark's driver-side Python process) ---
    def _client(self):
        if self._driver is None:
            self._driver = _consumer(self.config)
        return self._driver

    def _partitions(self) -> list[int]:
        meta = self._client().list_topics(self.topic, timeout=30)
        topic = meta.topics.get(self.topic)
        if topic is None or topic.error is not None or not topic.partitions:
            raise RuntimeError(f"Kafka topic {self.topic!r} not found on {self.config['bootstrap.servers']}")
        return sorted(topic.partitions)

    def _log_ends(self, start: dict[str, int], cap: int | None) -> dict[str, int]:
        """Each partition's end offset: the high watermark, then read on from it until the broker has
        nothing more (at most ``cap`` records past ``start`` when a read limit applies)."""
        from confluent_kafka import TopicPartition

        client = self._client()
        ends = {}
        for p in self._partitions():
            low, high = client.get_watermark_offsets(TopicPartition(self.topic, p), timeout=30, cached=False)
            ends[str(p)] = max(high, start.get(str(p), low))
        scans = {p: _Scanned(e) for p, e in ends.items() if cap is None or e - start.get(p, 0) < cap}
        self._scan(scans, {p: start.get(p, 0) + cap for p in scans} if cap is not None else None)
        return {p: scans[p].next if p in scans else e for p, e in ends.items()}

    def _scan(self, scans: dict[str, _Scanned], stops: dict[str, int] | None, times: bool = False) -> None:
        """Reads each partition of ``scans`` on from its ``next`` offset until the end of its log (then
        sets ``log_end``) or its offset in ``stops``, keeping offsets (and, with ``times``, event
        times) as it goes. O(records read)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.error import KafkaError

        if not scans:
            return
        client = self._client()
        open_ = {p for p, s in scans.items() if stops is None or s.next < stops[p]}
        for p in scans:
            scans[p].log_end = None
        client.assign([TopicPartition(self.topic, int(p), scans[p].next) for p in sorted(open_)])
        try:
            deadline = time.monotonic() + _READ_TIMEOUT_S
            while open_ and time.monotonic() < deadline:
                # consume waits for all it asks for or its timeout: short waits, so the ends are soon seen
                for msg in client.consume(1000, timeout=0.05):
                    p = str(msg.partition())
                    if p not in open_:
                        continue
                    s = scans[p]
                    if msg.error() is not None:
                        if msg.error().code() != KafkaError._PARTITION_EOF:
                            raise RuntimeError(f"Kafka error on {self.topic}[{p}]: {msg.error()}")
                        s.log_end = s.next  # past the records read (a broker's end may lag its log)
                        open_.discard(p)
                        continue
                    if msg.offset() < s.next:
                        continue
                    if stops is not None and msg.offset() >= stops[p]:
                        open_.discard(p)
                        continue
                    s.offsets.append(msg.offset())
                    if times:
                        s.times.append(event_time(msg.value(), self.event_time, self.envelope))
                    s.next = msg.offset() + 1
                    if stops is not None and s.next >= stops[p]:
                        open_.discard(p)
        finally:
            client.unassign()

    def initialOffset(self) -> dict:
        from confluent_kafka import TopicPartition

        if self.starting == "latest":
            return {"topic": self.topic, "partitions": self._log_ends({}, None)}
        lows = {
            str(p): self._client().get_watermark_offsets(TopicPartition(self.topic, p), timeout=30)[0]
            for p in self._partitions()
        }
        return {"topic": self.topic, "partitions": lows}

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_offsets) if self.max_offsets else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._log_ends({}, None)

    def latestOffset(self, start: dict, limit) -> dict:
        begin = self._starts(start)
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if self.event_time is not None:
            return self._aligned(begin, _newest(start), cap)
        ends = self._target if self._target is not None else self._log_ends(begin, cap)
        # a partition added since the last batch starts at its beginning
        ends = {p: max(e, begin.get(p, 0)) for p, e in ends.items()}
        if cap is not None:
            ends = share_limit(begin, ends, cap)
        return {"topic": self.topic, "partitions": ends}

    def _aligned(self, begin: dict[str, int], newest: dict[str, int], cap: int | None) -> dict:
        """The end offsets ``kafka_alignment.plan`` chooses over the records scanned past ``begin``
        (at most ``cap`` per partition, or the availableNow target), and the newest event times."""
        now = time.monotonic()
        ahead = cap or _SCAN_AHEAD
        for p in map(str, self._partitions()):
            start = begin.get(p, 0)  # a partition added since the last batch starts at its beginning
            s = self._scanned.get(p)
            if s is None or s.next < start or (len(s.offsets) and s.offsets[0] > start):
                s = self._scanned[p] = _Scanned(start)
            s.drop_before(start)
        stops = {p: s.next + max(0, ahead - len(s.offsets)) for p, s in self._scanned.items()}
        if self._target is not None:
            stops = {p: min(stop, self._target.get(p, 0)) for p, stop in stops.items()}
        self._scan(self._scanned, stops, times=True)
        pending = {}
        for p in sorted(self._scanned, key=int):
            s = self._scanned[p]
            if len(s.offsets):
                self._active[p] = now
            # availableNow: a partition that reached its target has nothing more to wait for
            live = self._target is None and now - self._active.get(p, self._born) < self.idle_s
            pending[p] = s.pending(begin.get(p, 0), newest.get(p), live)
        ends, read = plan(pending, cap)
        return {"topic": self.topic, "partitions": ends, "newest": read}

    def _starts(self, offset: dict) -> dict[str, int]:
        if offset.get("topic") != self.topic:
            raise RuntimeError(
                f"the checkpoint holds offsets of topic {offset.get('topic')!r}, not {self.topic!r}: "
                "use a new checkpoint (and a new or dropped table) to read another topic"
            )
        return {p: int(o) for p, o in offset["partitions"].items()}

    def partitions(self, start: dict, end: dict):
        begin, stop = self._starts(start), self._starts(end)
        return [
            _Range(self.topic, int(p), begin.get(p, 0), e)
            for p, e in sorted(stop.items(), key=lambda i: int(i[0]))
            if e > begin.get(p, 0)
        ]

    def commit(self, end: dict) -> None:
        """Offsets live in Spark's checkpoint; nothing is committed to the broker."""

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    # --- reading (runs in a Spark task) ---
    def read(self, partition: _Range) -> Iterator:
        """Every record of [start, end) of one partition, once, in offset order, as Arrow batches.
        O(records); raises if the range cannot be read in full (deleted by retention, say)."""
        import pyarrow as pa
        from confluent_kafka import TopicPartition
        from confluent_kafka.error import KafkaError

        consumer = _consumer(self.config)
        try:
            consumer.assign([TopicPartition(partition.topic, partition.partition, partition.start)])
            columns = {name: [] for name in ("key", "value", "offset", "timestamp", "timestampType")}
            position, deadline = partition.start, time.monotonic() + _READ_TIMEOUT_S
            while position < partition.end:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"could not read offsets {position}..{partition.end - 1} of Kafka topic "
                        f"{partition.topic} partition {partition.partition} within {_READ_TIMEOUT_S:.0f} s "
                        "(deleted by retention?)"
                    )
                for msg in consumer.consume(1000, timeout=1.0):
                    if msg.error() is not None:
                        if msg.error().code() == KafkaError._PARTITION_EOF:
                            # the log ends here: offsets up to `end` that never came were markers or compacted
                            if msg.offset() >= partition.end:
                                position = partition.end
                            continue
                        raise RuntimeError(
                            f"Kafka error on {partition.topic}[{partition.partition}]: {msg.error()}"
                        )
                    if msg.offset() < position or msg.offset() >= partition.end:
                        continue
                    position = msg.offset() + 1
                    kind, ms = msg.timestamp()
                    # librdkafka counts timestamp types from "not available" = 0; Kafka (and Spark) from -1
                    for name, value in (
                        ("key", msg.key()),
                        ("value", msg.value()),
                        ("offset", msg.offset()),
                        ("timestamp", ms * 1000 if kind else None),
                        ("timestampType", kind - 1),
                    ):
                        columns[name].append(value)
                if len(columns["offset"]) >= _BATCH_ROWS or (position >= partition.end and columns["offset"]):
                    yield _record_batch(pa, partition, columns)
                    columns = {name: [] for name in columns}
        finally:
            consumer.close()


def _newest(offset: dict) -> dict[str, int]:
    """The newest event time read of each partition an offset records (none before alignment)."""
    return {p: int(t) for p, t in offset.get("newest", {}).items()}


def _record_batch(pa, partition: _Range, columns: dict):
    n = len(columns["offset"])
    return pa.RecordBatch.from_arrays(
        [
            pa.array(columns["key"], pa.binary()),
            pa.array(columns["value"], pa.binary()),
            pa.array([partition.topic] * n, pa.string()),
            pa.array([partition.partition] * n, pa.int32()),
            pa.array(columns["offset"], pa.int64()),
            pa.array(columns["timestamp"], pa.timestamp("us", tz="UTC")),
            pa.array(columns["timestampType"], pa.int32()),
        ],
        names=["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"],
    )


class KafkaDataSource(DataSource):
    """``spark.readStream.format("overwindow_kafka")``: Kafka records with the Spark connector's columns."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema) -> KafkaStreamReader:
        return KafkaStreamReader(self.options)
