"""``overwindow produce``: replay a bundled sample as JSON messages on a Kafka topic.

Each CSV row becomes one JSON object (keys = the CSV header, numbers as numbers, dates and times as
the file's ISO-8601 text), keyed by the sample's partition column, so one key's records stay in file
order in one Kafka partition. ``passes=None`` (the command's ``--loop``) replays the file forever:
pass n moves every date n times the days the file covers later and renumbers the ids, so a live
view keeps getting new rows; ``resume=True`` (also ``--loop``) goes on after the passes already on
the topic. Needs ``pip install overwindow[kafka]`` (confluent-kafka).

    produce("localhost:9092", "ticks", sample="stock_ticks", partitions=3, rate=50)

>>> tick = {"symbol": "AAPL", "ts": "2024-03-15T13:30:10.492Z", "trade_id": 1000001, "price": 172.7,
...         "volume": 200}
>>> replayed(SAMPLES["stock_ticks"], [tick], pass_number=2)[0]
{'symbol': 'AAPL', 'ts': '2024-03-17T13:30:10.492Z', 'trade_id': 1000003, 'price': 172.7, 'volume': 200}
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import itertools
import json
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources


@dataclass(frozen=True)
class Sample:
    """A bundled CSV file and how to replay it: ``key`` becomes the message key, ``time`` (ISO-8601
    date or timestamp text) moves on with every pass, ``ids`` are renumbered on every pass."""

    file: str
    key: str
    time: str
    types: dict = field(repr=False)
    ids: tuple = ()


SAMPLES = {
    "stock_ticks": Sample(
        "stock_ticks.csv",
        key="symbol",
        time="ts",
        ids=("trade_id",),
        types={"symbol": str, "ts": str, "trade_id": int, "price": float, "volume": int},
    ),
    "plant_daily": Sample(
        "plant_daily.csv", key="plant", time="date", types={"plant": str, "date": str, "mwh": float}
    ),
}


def read_sample(sample: Sample) -> list[dict]:
    """The sample's rows in file order, as JSON-ready dicts (numbers converted, text kept).

    >>> read_sample(SAMPLES["plant_daily"])[0]
    {'plant': 'Boston', 'date': '2019-01-02', 'mwh': 564337.0}
    """
    with resources.files("overwindow").joinpath(f"data/{sample.file}").open(newline="") as f:
        return [
            {column: sample.types[column](text) for column, text in row.items()} for row in csv.DictReader(f)
        ]


def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text[:10])


def _days_covered(sample: Sample, records: list[dict]) -> tuple[dt.date, int]:
    """The first day of the records and how many days they cover: how far each pass moves them."""
    days = [_day(r[sample.time]) for r in records]
    return min(days), (max(days) - min(days)).days + 1


def replayed(sample: Sample, records: list[dict], pass_number: int) -> list[dict]:
    """The records of pass ``pass_number`` (0 = the file as it is): dates moved by whole days, so a
    timestamp keeps its time of day and zone text, and ids moved past every earlier pass's ids."""
    if pass_number == 0:
        return records
    days = dt.timedelta(days=pass_number * _days_covered(sample, records)[1])
    id_steps = {
        c: pass_number * (max(r[c] for r in records) - min(r[c] for r in records) + 1) for c in sample.ids
    }
    out = []
    for record in records:
        moved = dict(record)
        moved[sample.time] = (_day(record[sample.time]) + days).isoformat() + record[sample.time][10:]
        for column, step in id_steps.items():
            moved[column] = record[column] + step
        out.append(moved)
    return out


def _confluent_kafka():
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError:
        raise ImportError("Kafka needs confluent-kafka: pip install 'overwindow[kafka]'") from None
    return confluent_kafka


def ensure_topic(bootstrap_servers: str, topic: str, partitions: int) -> int:
    """Create ``topic`` with ``partitions`` partitions unless it exists; returns its partition count,
    e.g. ``ensure_topic("localhost:9092", "ticks", 3)`` is 3, or 1 if "ticks" had one partition."""
    kafka = _confluent_kafka()
    # Without a broker librdkafka logs every reconnect; the error below says it once.
    admin = kafka.admin.AdminClient({"bootstrap.servers": bootstrap_servers, "log_level": 2})
    try:
        # All topics, not this one: asking a broker about one topic may create it with its defaults.
        existing = admin.list_topics(timeout=10).topics
    except kafka.KafkaException as e:
        raise RuntimeError(f"no Kafka broker answers at {bootstrap_servers}: {e.args[0].str()}") from None
    if topic in existing:
        return len(existing[topic].partitions)
    future = admin.create_topics([kafka.admin.NewTopic(topic, num_partitions=partitions)])[topic]
    try:
        future.result()
    except kafka.KafkaException as e:
        # Another producer may have created it since we listed the topics.
        if e.args[0].code() != kafka.KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    return partitions


def next_pass(bootstrap_servers: str, topic: str, sample: Sample, records: list[dict]) -> int:
    """The pass after the latest one whose records end the topic's partitions (0 when there is none):
    where a restarted replay goes on, so its event times stay ahead of what a view has seen. E.g. 2
    after ``produce(..., passes=2)`` onto a new topic."""
    kafka = _confluent_kafka()
    consumer = kafka.Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": "overwindow-produce",
            "enable.auto.commit": False,
            "log_level": 2,
        }
    )
    first, span = _days_covered(sample, records)
    latest = -1
    try:
        for partition in consumer.list_topics(timeout=10).topics[topic].partitions:
            low, high = consumer.get_watermark_offsets(kafka.TopicPartition(topic, partition), timeout=10)
            if high <= low:
                continue
            consumer.assign([kafka.TopicPartition(topic, partition, high - 1)])
            message = consumer.poll(10)
            try:
                day = _day(json.loads(message.value())[sample.time])
            except (AttributeError, TypeError, KeyError, ValueError):
                continue  # no message in time, or not one of this sample's records: it decides nothing
            latest = max(latest, (day - first).days // span)
    finally:
        consumer.close()
    return latest + 1


def produce(
    bootstrap_servers: str,
    topic: str,
    sample: str = "stock_ticks",
    partitions: int = 3,
    rate: float | None = None,
    passes: int | None = 1,
    resume: bool = False,
    report: Callable[[str], None] | None = None,
) -> int:
    """Replay a bundled sample onto ``topic`` (created with ``partitions`` if missing) as JSON
    messages, at most ``rate`` messages a second; ``passes=None`` replays until interrupted, and
    ``resume`` starts after the latest pass on the topic (see next_pass). The topic and each
    finished pass are described to ``report``. Returns the number of messages delivered."""
    kafka = _confluent_kafka()
    chosen = SAMPLES[sample]
    records = read_sample(chosen)
    existing = ensure_topic(bootstrap_servers, topic, partitions)
    first = next_pass(bootstrap_servers, topic, chosen, records) if resume else 0
    if report is not None:
        report(f"topic {topic} ({existing} partitions), {sample} from pass {first + 1}")
    producer = kafka.Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            # Retries must not reorder a key's records; murmur2 places keys as Java clients do.
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
            "linger.ms": 20,
        }
    )
    failures: list = []
    delivered = 0

    def on_delivery(error, _message):
        nonlocal delivered
        if error is None:
            delivered += 1
        else:
            failures.append(error)

    start, sent = time.monotonic(), 0
    with _interrupts() as asked:
        try:
            for pass_number in itertools.count(first) if passes is None else range(first, first + passes):
                current = replayed(chosen, records, pass_number)
                for record in current:
                    if rate:
                        _wait(producer, start + sent / rate, asked)
                    _send(producer, topic, record[chosen.key], json.dumps(record), on_delivery, asked)
                    sent += 1
                    if failures:
                        raise RuntimeError(f"Kafka refused a message on topic {topic!r}: {failures[0]}")
                    if asked:
                        raise KeyboardInterrupt
                if report is not None:
                    report(
                        f"pass {pass_number + 1}: {len(current)} {sample} records from "
                        f"{current[0][chosen.time][:10]} sent to {topic} ({sent} in all)"
                    )
        finally:
            undelivered = producer.flush(30)
    if failures or undelivered:
        raise RuntimeError(
            f"{len(failures) + undelivered} messages not delivered to topic {topic!r}"
            + (f": {failures[0]}" if failures else "")
        )
    return delivered


@contextlib.contextmanager
def _interrupts():
    """Ctrl-C (SIGINT) only marks the list it yields, which the sending loop checks between calls to
    confluent-kafka: a KeyboardInterrupt raised inside ``Producer.poll`` (in a delivery callback)
    leaves it returning NULL without an exception, a SystemError instead of a clean stop. Outside
    the main thread (no signal handlers there) it yields a list nothing marks."""
    asked: list = []
    if threading.current_thread() is not threading.main_thread():
        yield asked
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: asked.append(signum))
    try:
        yield asked
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait(producer, until: float, asked: list) -> None:
    """Serve deliveries until the monotonic time ``until``, or until asked to stop (Ctrl-C), in
    short polls so that a stop is seen within a fifth of a second."""
    while not asked and (left := until - time.monotonic()) > 0:
        producer.poll(min(left, 0.2))


def _send(producer, topic: str, key: str, value: str, on_delivery, asked: list) -> None:
    """Queue one message, waiting for deliveries while the local queue is full (unless asked to
    stop: then the message is not sent)."""
    while not asked:
        try:
            producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
            break
        except BufferError:
            producer.poll(0.2)
    producer.poll(0)
