"""The Kafka changelog sink: a view's changes as records of a Kafka topic, written with
confluent-kafka from the driver (``pip install overwindow[kafka]``).

Each record is keyed by the view's key columns as JSON (``{"id":7}``). Window close writes one record
per output row; on update each micro-batch, netted to one change per key
(``overwindow.streaming.changelog``), is written in one of two formats:

- ``upsert``: the row as JSON, a delete a tombstone (null value): what a compacted topic, ksqlDB's
  tables and Flink's ``upsert-kafka`` read;
- ``debezium``: a change event ``{"before":...,"after":...,"op":"c"|"u"|"d",...}`` (a delete then a
  tombstone, as Debezium writes): ``before`` is the row as the sink last wrote it, kept in memory
  (O(rows of the view)) and read back from the topic when the sink starts.

Each batch is one Kafka transaction (``transactional.id``: ``overwindow-<view>-<topic>``): the batch's
records, then, once the broker has them all, a record of the batch (the query's id, the batch id,
the format) in the topic ``<topic>.overwindow-batches``. A batch whose id that topic holds is
skipped, so a replay (a job killed anywhere and started again) writes nothing twice for
``read_committed`` consumers of a broker that keeps transactions apart (Apache Kafka). A broker
that shows an unfinished transaction's records to every consumer shows a killed batch's records
and, when it is written again, the same keys and values once more: at least once, each key's last
record right. A broker without transactions: an idempotent producer, the same order (at least once).

>>> s = KafkaSink({"bootstrap.servers": "b:9092"}, "t", key=["id"], upsert=True, name="v")
>>> s
KafkaSink(topic='t', format='upsert')
>>> s.records(__import__("pyarrow").table({"id": [1, 2], "x": [1.5, None], "_change": ["upsert", "delete"]}))
[(b'{"id":1}', b'{"id":1,"x":1.5}'), (b'{"id":2}', None)]
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa
import pyarrow.compute as pc

from overwindow.physical.values import sql_type
from overwindow.pipeline.kafka_records import (
    DEBEZIUM_FORMAT,
    UPSERT_FORMAT,
    after_image,
    envelope,
    to_json,
    unwritable,
)
from overwindow.pipeline.sinks import Applied, Bookkeeping, SinkDriftError, _already_applied
from overwindow.streaming.changelog import net_changes
from overwindow.streaming.contract import CHANGE, UPSERT

_TIMEOUT_S = 60.0
_EOF = -191  # confluent_kafka.KafkaError._PARTITION_EOF


class KafkaSink:
    """A view's changelog in the Kafka topic ``topic``. ``config``: confluent-kafka settings
    (``bootstrap.servers``, security settings: secrets are never printed); ``key``: the columns a
    record is keyed by; ``upsert``: emit on update (else append); ``format``: upsert | debezium;
    ``name``: the view's name (in its transactional id and the events' ``source``);
    ``transactions``: False writes with an idempotent producer only (at least once)."""

    def __init__(
        self,
        config: dict,
        topic: str,
        key: list[str],
        upsert: bool,
        name: str,
        format: str = UPSERT_FORMAT,
        transactions: bool = True,
    ):
        self._config, self.topic, self.key, self.upsert = dict(config), topic, list(key), upsert
        self.name, self.format, self.transactions = name, format, transactions
        self.batches_topic, self.group = f"{topic}.overwindow-batches", f"overwindow-sink-{topic}"
        self._producer = None
        self._applied: Applied | None = None  # what the group holds, once apply has read it
        self._images: dict[bytes, bytes] | None = None  # debezium on update: key -> row last written
        self._pending: dict[bytes, bytes | None] = {}  # the open batch's changes to _images

    def __repr__(self) -> str:  # the settings may hold a password
        return f"KafkaSink(topic={self.topic!r}, format={self.format!r})"

    def records(self, changes: pa.Table, source: bytes = b"{}") -> list[tuple[bytes, bytes | None]]:
        """The (key, value) records of a netted batch, in its order; debezium's ``before`` is the
        row the sink last wrote for the key (``_images``; what the batch changes there waits in
        ``_pending`` until the batch is committed)."""
        columns = [c for c in changes.column_names if c != CHANGE]
        keys, rows = to_json(changes, self.key), to_json(changes, columns)
        if CHANGE in changes.column_names:
            upserts = pc.fill_null(pc.equal(changes.column(CHANGE), UPSERT), False).to_pylist()
        else:
            upserts = [True] * changes.num_rows
        if self.format == UPSERT_FORMAT:
            return [(k, r if up else None) for k, r, up in zip(keys, rows, upserts)]
        images, out, self._pending = self._images or {}, [], {}
        for k, r, up in zip(keys, rows, upserts):  # one change per key: the batch is netted
            before = images.get(k)
            if up:
                out.append((k, envelope(before, r, "u" if before is not None else "c", source)))
            elif before is not None or not self.upsert:  # a key never written: nothing to delete
                out += [(k, envelope(before or k, None, "d", source)), (k, None)]
            self._pending[k] = r if up else None
        return out

    def _admin(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient(self._config)

    def bookkeeping(self) -> Bookkeeping:
        """Whether the topic exists, and the last batch committed to it (the newest record of the
        batches topic, read_committed: O(batches written)). Refuses (SinkDriftError) a topic written
        in the other format."""
        if self.topic not in self._admin().list_topics(timeout=_TIMEOUT_S).topics:
            return Bookkeeping(False, None)
        kept = None
        for message in self._read(self.batches_topic):
            if message.key() == self.topic.encode() and message.value() is not None:
                kept = json.loads(message.value())
        if kept is None:
            return Bookkeeping(True, None)
        if kept["format"] != self.format:
            raise SinkDriftError(
                f"Kafka topic {self.topic} holds {kept['format']} records, the view file writes "
                f"{self.format} ([sink] format): its consumers would read both"
            )
        return Bookkeeping(True, Applied(kept["queryId"], kept["batchId"]))

    def check_columns(self, schema: pa.Schema) -> None:
        """Refuses (SinkDriftError), before anything is written, a view the sink cannot write: a
        key column the view does not write, a column of a type it has no JSON for. A topic keeps no
        columns of its own: nothing else to compare."""
        fields = [f for f in schema if f.name != CHANGE]
        names = {f.name for f in fields}
        missing = [c for c in self.key if c not in names]
        if missing:
            raise SinkDriftError(
                f"Kafka topic {self.topic}: the view writes no column {missing[0]} to key the records by "
                f"(it writes {', '.join(sorted(names))})"
            )
        for f in unwritable(pa.schema(fields)):
            raise SinkDriftError(
                f"Kafka topic {self.topic}: no JSON for column {f.name} ({sql_type(f.type)})"
            )

    def _start(self) -> None:
        """The producer (transactional, else idempotent), the topic, and what the topic holds."""
        from confluent_kafka import KafkaError, KafkaException, Producer
        from confluent_kafka.admin import NewTopic

        admin = self._admin()
        have = admin.list_topics(timeout=_TIMEOUT_S).topics
        compact = {"cleanup.policy": "compact"}
        for topic, config in (
            (self.topic, compact if self.format == UPSERT_FORMAT else {}),
            (self.batches_topic, compact),
        ):
            if topic not in have:
                admin.create_topics([NewTopic(topic, 1, config=config)])[topic].result()
        settings = {**self._config, "enable.idempotence": True, "linger.ms": 5}
        if self.transactions:
            producer = Producer({**settings, "transactional.id": f"overwindow-{self.name}-{self.topic}"})
            try:  # fences a producer of an earlier run, and aborts its open transaction
                producer.init_transactions(_TIMEOUT_S)
            except KafkaException as e:
                if e.args[0].code() not in (KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION):
                    raise
                print(
                    f"overwindow: the Kafka broker of topic {self.topic} has no transactions "
                    f"({e.args[0].str()}): writing at least once (docs/sinks.md, Kafka changelog)",
                    file=sys.stderr,
                )
                self.transactions, producer = False, Producer(settings)
        else:
            producer = Producer(settings)
        self._producer = producer
        self._applied = self.bookkeeping().applied
        if self.format == DEBEZIUM_FORMAT and self.upsert:
            self._images = self._read_images()

    def _read(self, topic: str):
        """The records of ``topic`` a read_committed consumer sees, from the start of every
        partition to its end."""
        from confluent_kafka import Consumer, TopicPartition

        reader = Consumer(
            {
                **self._config,
                "group.id": self.group,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
            }
        )
        try:
            partitions = reader.list_topics(topic, timeout=_TIMEOUT_S).topics[topic].partitions
            reader.assign([TopicPartition(topic, p, 0) for p in partitions])
            open_ = set(partitions)
            while open_:
                message = reader.poll(_TIMEOUT_S)
                if message is None:
                    raise TimeoutError(f"Kafka topic {topic}: no answer reading it back")
                if not message.error():
                    yield message
                elif message.error().code() == _EOF:
                    open_.discard(message.partition())
                else:
                    raise RuntimeError(f"Kafka topic {topic}: {message.error()}")
        finally:
            reader.close()

    def _read_images(self) -> dict[bytes, bytes]:
        """Each key's row as the topic's events last wrote it: O(records of the topic)."""
        images = {}
        for message in self._read(self.topic):
            if message.value() is None:
                continue
            try:
                after = after_image(message.value())
            except ValueError:
                raise SinkDriftError(
                    f"Kafka topic {self.topic} holds a record that is not overwindow's Debezium event "
                    f"(partition {message.partition()}, offset {message.offset()})"
                ) from None
            if after is None:
                images.pop(message.key(), None)
            else:
                images[message.key()] = after
        return images

    def apply(self, rows: pa.Table, batch_id: int, query_id: str) -> int | None:
        """Write one micro-batch of the query ``query_id`` (in one transaction); returns the changes
        written (after netting), or None when the topic holds the batch already. Raises
        SinkDriftError when another query wrote the topic."""
        if self._producer is None:
            self._start()
        if self._applied is not None and _already_applied(self.topic, self._applied, batch_id, query_id):
            return None
        changes = net_changes(rows, self.key) if self.upsert else rows
        source = json.dumps({"connector": "overwindow", "name": self.name, "batch": batch_id}).encode()
        self._write(self.records(changes, source), batch_id, query_id)
        if self._images is not None:  # the batch is in the topic: so are its rows
            for k, image in self._pending.items():
                if image is None:
                    self._images.pop(k, None)
                else:
                    self._images[k] = image
        self._applied = Applied(query_id, batch_id)
        return changes.num_rows

    def _write(self, records: list, batch_id: int, query_id: str) -> None:
        """The batch's records, then (once the broker has them all) its record in the batches
        topic, in one transaction where there are transactions."""
        producer = self._producer
        done = json.dumps({"queryId": query_id, "batchId": batch_id, "format": self.format}).encode()
        if self.transactions:
            producer.begin_transaction()
        try:
            for key, value in records:
                producer.produce(self.topic, key=key, value=value)
                producer.poll(0)
            self._flush(batch_id)  # the record of the batch never goes ahead of its rows
            producer.produce(self.batches_topic, key=self.topic.encode(), value=done)
            self._flush(batch_id)
            if self.transactions:
                producer.commit_transaction(_TIMEOUT_S)
        except BaseException:
            if self.transactions:
                try:
                    producer.abort_transaction(_TIMEOUT_S)
                except Exception:  # a fenced or broken producer: a new one starts the next apply
                    self._producer = None
            raise

    def _flush(self, batch_id: int) -> None:
        """Waits until the broker has every record produced (the kill test stops after one)."""
        if self._producer.flush(_TIMEOUT_S):
            raise TimeoutError(f"Kafka topic {self.topic}: the broker did not take batch {batch_id}")
