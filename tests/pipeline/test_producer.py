"""`overwindow produce` against a real Kafka-protocol broker: every row of the bundled CSV arrives
once as a JSON record equal to the row, keyed and kept in order per key, on a topic with the
requested partitions. What arrived is read back by consuming every partition from offset 0 until
the broker has nothing more (the test broker's high watermark lags its log, so offsets can't tell)."""

import csv
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from overwindow.__main__ import main  # noqa: E402
from overwindow.pipeline.producer import produce  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "overwindow", "data")
# The samples' columns as JSON should carry them: numbers as numbers, dates and times as text.
COLUMN_TYPES = {
    "stock_ticks": {"symbol": str, "ts": str, "trade_id": int, "price": float, "volume": int},
    "plant_daily": {"plant": str, "date": str, "mwh": float},
}
KEY = {"stock_ticks": "symbol", "plant_daily": "plant"}


def csv_rows(sample):
    types = COLUMN_TYPES[sample]
    with open(os.path.join(DATA, f"{sample}.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(types), "the CSV header changed; update COLUMN_TYPES"
    return [{c: types[c](v) for c, v in row.items()} for row in rows]


def fresh_topic():
    return f"t-{uuid.uuid4().hex[:12]}"


def partition_count(bootstrap, topic):
    return len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics[topic].partitions)


def consume_all(bootstrap, topic, quiet_polls=3):
    """Every message on the topic as (partition, key, record), each partition in offset order."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    try:
        consumer.assign(
            [confluent_kafka.TopicPartition(topic, p, 0) for p in range(partition_count(bootstrap, topic))]
        )
        out, empty, deadline = [], 0, time.monotonic() + 120
        while empty < quiet_polls and time.monotonic() < deadline:
            batch = consumer.consume(1000, timeout=1.0)
            empty = 0 if batch else empty + 1
            for message in batch:
                assert message.error() is None, message.error()
                out.append((message.partition(), message.key().decode(), json.loads(message.value())))
        return out
    finally:
        consumer.close()


def by_partition(messages):
    parts = defaultdict(list)
    for partition, _key, record in messages:
        parts[partition].append(record)
    return parts


@pytest.mark.parametrize("sample, partitions", [("stock_ticks", 3), ("plant_daily", 2)])
def test_every_row_arrives_once_keyed_in_order_on_the_requested_partitions(
    kafka_bootstrap, sample, partitions
):
    topic = fresh_topic()
    rows = csv_rows(sample)
    assert produce(kafka_bootstrap, topic, sample=sample, partitions=partitions) == len(rows)
    assert partition_count(kafka_bootstrap, topic) == partitions
    messages = consume_all(kafka_bootstrap, topic)
    key = KEY[sample]
    assert sorted(map(json.dumps, (r for _, _, r in messages))) == sorted(map(json.dumps, rows))
    assert all(k == record[key] for _, k, record in messages)
    partitions_of = defaultdict(set)
    for partition, _k, record in messages:
        partitions_of[record[key]].add(partition)
    assert all(len(p) == 1 for p in partitions_of.values()), partitions_of
    for records in by_partition(messages).values():
        for name in {r[key] for r in records}:
            assert [r for r in records if r[key] == name] == [r for r in rows if r[key] == name]


def test_later_passes_move_the_day_on_and_renumber_the_trades(kafka_bootstrap):
    topic = fresh_topic()
    rows = csv_rows("stock_ticks")
    assert produce(kafka_bootstrap, topic, passes=3, partitions=2) == 3 * len(rows)
    messages = consume_all(kafka_bootstrap, topic)
    assert len({r["trade_id"] for _, _, r in messages}) == 3 * len(rows)
    for records in by_partition(messages).values():
        for symbol in {r["symbol"] for r in records}:
            mine = [r for r in records if r["symbol"] == symbol]
            original = [r for r in rows if r["symbol"] == symbol]
            assert len(mine) == 3 * len(original)
            for n in range(3):
                replay = mine[n * len(original) : (n + 1) * len(original)]
                # One trading day per pass: 2024-03-15, then the 16th, then the 17th, same times of day.
                shifted = [{**r, "ts": r["ts"].replace("2024-03-15", f"2024-03-{15 + n}")} for r in original]
                assert [{**r, "trade_id": None} for r in replay] == [{**r, "trade_id": None} for r in shifted]


def test_a_pass_over_daily_output_starts_after_the_previous_one_ends(kafka_bootstrap):
    topic = fresh_topic()
    produce(kafka_bootstrap, topic, sample="plant_daily", passes=2, partitions=1)
    records = [r for _, _, r in consume_all(kafka_bootstrap, topic)]
    days = [dt.date.fromisoformat(r["date"]) for r in records if r["plant"] == "Boston"]
    first, second = days[: len(days) // 2], days[len(days) // 2 :]
    assert first[0] == dt.date(2019, 1, 2) and first[-1] == dt.date(2019, 12, 31)
    assert second[0] == dt.date(2020, 1, 1) and second == [d + dt.timedelta(days=364) for d in first]


def test_a_resumed_replay_goes_on_after_the_passes_on_the_topic(kafka_bootstrap):
    topic = fresh_topic()
    produce(kafka_bootstrap, topic, passes=1, resume=True, partitions=2)  # nothing there yet: the file's day
    produce(kafka_bootstrap, topic, passes=1, partitions=2)  # the file again, as it is
    produce(kafka_bootstrap, topic, passes=1, resume=True, partitions=2)
    records = [r for _, _, r in consume_all(kafka_bootstrap, topic)]
    rows = len(csv_rows("stock_ticks"))
    assert Counter(r["ts"][:10] for r in records) == {"2024-03-15": 2 * rows, "2024-03-16": rows}
    ids = defaultdict(set)
    for record in records:
        ids[record["ts"][:10]].add(record["trade_id"])
    assert len(ids["2024-03-16"]) == rows and not ids["2024-03-16"] & ids["2024-03-15"]


def test_rate_limits_messages_per_second(kafka_bootstrap):
    rows = len(csv_rows("plant_daily"))
    start = time.monotonic()
    produce(kafka_bootstrap, fresh_topic(), sample="plant_daily", rate=1000)
    assert time.monotonic() - start >= 0.95 * rows / 1000


def test_an_existing_topic_keeps_its_partitions(kafka_bootstrap):
    topic = fresh_topic()
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})  # kept: its futures die with it
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result()
    produce(kafka_bootstrap, topic, sample="plant_daily", partitions=5)
    assert partition_count(kafka_bootstrap, topic) == 2
    assert len(consume_all(kafka_bootstrap, topic)) == len(csv_rows("plant_daily"))


def test_the_command_line_produces_and_reports(kafka_bootstrap, capsys):
    topic = fresh_topic()
    argv = [
        "produce",
        "--bootstrap-servers",
        kafka_bootstrap,
        "--topic",
        topic,
        "--data",
        "plant_daily",
        "--partitions",
        "2",
    ]
    assert main(argv) == 0
    rows = len(csv_rows("plant_daily"))
    out = capsys.readouterr().out
    assert f"topic {topic} (2 partitions)" in out and f"{rows} messages delivered" in out
    assert partition_count(kafka_bootstrap, topic) == 2 and len(consume_all(kafka_bootstrap, topic)) == rows


def test_the_command_line_loops_until_ctrl_c(kafka_bootstrap):
    topic = fresh_topic()
    loop = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "overwindow",
            "produce",
            "--bootstrap-servers",
            kafka_bootstrap,
            "--topic",
            topic,
            "--rate",
            "5000",
            "--loop",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [loop.stdout.readline()]
        while not lines[-1].startswith("overwindow produce: pass 2:"):
            assert lines[-1], f"the producer stopped: {lines}"
            lines.append(loop.stdout.readline())
        loop.send_signal(signal.SIGINT)
        out, _ = loop.communicate(timeout=60)
    finally:
        loop.kill()
    assert loop.returncode == 0 and "stopped." in out
    days = Counter(r["ts"][:10] for _, _, r in consume_all(kafka_bootstrap, topic))
    rows = len(csv_rows("stock_ticks"))
    assert days["2024-03-15"] == days["2024-03-16"] == rows  # both passes reported whole, Ctrl-C flushed


@pytest.mark.parametrize("after", [0.3, 0.9, 1.7])
def test_ctrl_c_at_a_low_rate_stops_cleanly(kafka_bootstrap, after):
    """Issue 45: at --rate 50 the producer spends its time waiting in confluent-kafka's poll, where a
    Ctrl-C used to end in "SystemError: <method 'poll' of 'cimpl.Producer' objects> returned NULL
    without setting an exception" and exit code 1."""
    topic = fresh_topic()
    command = ["produce", "--bootstrap-servers", kafka_bootstrap, "--topic", topic, "--rate", "50", "--loop"]
    loop = subprocess.Popen(
        [sys.executable, "-m", "overwindow", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert loop.stdout.readline().startswith(f"overwindow produce: topic {topic}")
        time.sleep(after)
        loop.send_signal(signal.SIGINT)
        out, err = loop.communicate(timeout=60)
    finally:
        loop.kill()
    assert loop.returncode == 0 and out.strip().endswith("stopped.") and err == ""
    assert 0 < len(consume_all(kafka_bootstrap, topic)) <= 50 * (after + 1)


def test_without_confluent_kafka_the_error_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    assert main(["produce", "--bootstrap-servers", "127.0.0.1:1", "--topic", "t"]) == 2
    assert "pip install 'overwindow[kafka]'" in capsys.readouterr().err


def test_an_unreachable_broker_is_named_in_the_error(capsys):
    assert main(["produce", "--bootstrap-servers", "127.0.0.1:1", "--topic", "t"]) == 1
    assert "no Kafka broker answers at 127.0.0.1:1" in capsys.readouterr().err
