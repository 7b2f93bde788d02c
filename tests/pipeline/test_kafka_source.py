"""The Kafka source (overwindow.pipeline.kafka) against a real Kafka-protocol broker the tests start:
every record read once across restarts, admission control, starting offsets, and a whole view from
Kafka equal to the batch evaluator over the records produced."""

import json
import textwrap
import uuid

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka_support import produce

import overwindow
from overwindow.pipeline.kafka import FORMAT, KafkaDataSource, share_limit
from overwindow.pipeline.progress import bad_records, null_event_times
from overwindow.pipeline.view import ViewFileError, load_view


@given(
    st.dictionaries(st.sampled_from("0123"), st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1),
    st.integers(1, 120),
)
def test_share_limit_takes_the_limit_or_everything(ranges, limit):
    start = {p: min(a, b) for p, (a, b) in ranges.items()}
    ends = {p: max(a, b) for p, (a, b) in ranges.items()}
    got = share_limit(start, ends, limit)
    assert set(got) == set(ends)
    assert all(start[p] <= got[p] <= ends[p] for p in ends)
    assert sum(got[p] - start[p] for p in ends) == min(limit, sum(ends[p] - start[p] for p in ends))


def _read_all(spark, bootstrap, topic, checkpoint, **options):
    """One availableNow run of the raw source; returns (rows, input rows per batch)."""
    spark.dataSource.register(KafkaDataSource)
    reader = (
        spark.readStream.format(FORMAT)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
    )
    for name, value in options.items():
        reader = reader.option(name, value)
    rows, sizes = [], []

    def collect(batch, batch_id):
        got = batch.collect()
        rows.extend(got)
        sizes.append(len(got))

    query = (
        reader.load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    return rows, sizes


def test_every_record_once_across_restarts_with_a_read_limit(spark, kafka_bootstrap, tmp_path):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    sent = []
    seen = []
    for round_, limit in enumerate([None, 70, 1000]):
        batch = [(f"k{i % 5}".encode(), json.dumps({"round": round_, "i": i}).encode()) for i in range(150)]
        produce(kafka_bootstrap, topic, batch, partitions=3)
        sent += batch
        options = {"startingOffsets": "earliest", **({"maxOffsetsPerTrigger": limit} if limit else {})}
        rows, sizes = _read_all(spark, kafka_bootstrap, topic, tmp_path / "chk", **options)
        if limit:
            assert max(sizes) <= limit and sum(sizes) == 150 and len(sizes) >= 150 // limit
        seen += rows
    assert sorted((r.key, r.value) for r in seen) == sorted(sent)
    assert len({(r.partition, r.offset) for r in seen}) == len(sent)
    # a key's records keep their order: Kafka's per-partition order, read in offset order
    for key in {k for k, _ in sent}:
        mine = sorted((r for r in seen if r.key == key), key=lambda r: r.offset)
        assert [r.value for r in mine] == [v for k, v in sent if k == key]
    assert {r.topic for r in seen} == {topic} and all(r.timestamp is not None for r in seen)


def test_starting_offsets_latest_skips_what_was_there(spark, kafka_bootstrap, tmp_path):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, [(None, b"old")] * 20, partitions=2)
    first, _ = _read_all(spark, kafka_bootstrap, topic, tmp_path / "chk", startingOffsets="latest")
    produce(kafka_bootstrap, topic, [(None, b"new")] * 7)
    second, _ = _read_all(spark, kafka_bootstrap, topic, tmp_path / "chk", startingOffsets="latest")
    assert first == [] and [r.value for r in second] == [b"new"] * 7


CALLS = [
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
    "avg(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 10 SECONDS PRECEDING AND CURRENT ROW) AS a",
]


def _view_file(
    tmp_path, bootstrap, topic, emit="on_update", reader="auto", limit="max_offsets_per_trigger = 100"
):
    path = tmp_path / "view.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "kafka"
        bootstrap_servers = "{bootstrap}"
        topic = "{topic}"
        schema = "k STRING, id BIGINT, ts TIMESTAMP, x DOUBLE"
        starting_offsets = "earliest"
        {limit}
        reader = "{reader}"
        dead_letter = "bad"

        [watermark]
        column = "ts"
        delay = "1 hour"

        [view]
        partition_by = ["k"]
        calls = {json.dumps(CALLS)}
        emit = "{emit}"
        row_key = ["id"]

        [sink]
        kind = "sqlite"
        path = "view.sqlite"
        table = "v"
        checkpoint = "chk"
    """)
    )
    return path


def test_a_view_from_kafka_equals_the_batch_result_and_counts_bad_records(spark, kafka_bootstrap, tmp_path):
    """Values that are not records of the schema (not JSON, no column of it, a wrong type, a NULL
    event time) are counted and kept in the dead-letter folder with the topic, partition and offset."""
    import sqlite3

    from overwindow.pipeline.job import start_view

    topic = f"t-{uuid.uuid4().hex[:8]}"
    rows = [
        {"k": f"s{i % 3}", "id": i, "ts": f"2024-05-01T10:{i // 60:02d}:{i % 60:02d}", "x": float(i * 7 % 23)}
        for i in range(400)
    ]
    records = [(r["k"].encode(), json.dumps(r).encode()) for r in rows]
    bad = {
        b"not json": "not a JSON record",
        b'{"unrelated": 1}': "no column of the schema",
        b'{"k": "s0", "id": 999, "ts": "2024-05-01T10:00:00", "x": "seven"}': "wrong type: x (DOUBLE)",
        b'{"k": "s1", "id": 998, "ts": null, "x": 7.0}': "NULL event time (ts)",
    }
    records[50:50] = [(b"s0", value) for value in bad]
    produce(kafka_bootstrap, topic, records, partitions=2)
    view = load_view(str(_view_file(tmp_path, kafka_bootstrap, topic)))
    query, _ = start_view(spark, view, once=True, quiet=True)
    query.awaitTermination()
    assert query.exception() is None
    assert sum(bad_records(p) for p in query.recentProgress) == len(bad)
    assert sum(null_event_times(p) for p in query.recentProgress) == 1
    kept = [
        json.loads(line) for f in sorted((tmp_path / "bad").iterdir()) for line in f.read_text().splitlines()
    ]
    assert sorted((r["record"].encode(), r["reason"]) for r in kept) == sorted(bad.items())
    assert all(r["origin"].startswith(f"topic {topic} partition ") for r in kept)
    table = pa.Table.from_pylist(rows)
    table = table.set_column(2, "ts", pa.compute.strptime(table["ts"], "%Y-%m-%dT%H:%M:%S", "us"))
    spec = overwindow.OverWindow(*CALLS, emit="on_update", rowKey="id")
    want = {
        r["id"]: (r["s"], r["a"]) for r in overwindow.evaluate(table, *spec.partitioned(("k",))).to_pylist()
    }
    con = sqlite3.connect(tmp_path / "view.sqlite")
    got = {i: (s, a) for i, s, a in con.execute('SELECT id, s, a FROM "v"')}
    assert set(got) == set(want)
    for i, (s, a) in want.items():
        assert got[i] == (pytest.approx(s), pytest.approx(a))


def test_reader_spark_without_the_connector_says_how_to_get_it(spark, kafka_bootstrap, tmp_path):
    from overwindow.pipeline.sources import open_source

    view = load_view(str(_view_file(tmp_path, kafka_bootstrap, "t", reader="spark")))
    with pytest.raises(
        ViewFileError, match="OVERWINDOW_SPARK_PACKAGES=org.apache.spark:spark-sql-kafka-0-10"
    ):
        open_source(spark, view)


@pytest.mark.parametrize(
    "key, value, message",
    [
        (
            "starting_offsets",
            '"first"',
            r"\[source\] starting_offsets \(line \d+\): must be one of earliest, latest",
        ),
        ("reader", '"java"', r"\[source\] reader \(line \d+\): must be one of auto, spark, python"),
        (
            "max_offsets_per_trigger",
            "0",
            r"\[source\] max_offsets_per_trigger \(line \d+\): a positive whole number",
        ),
        ("options", '"ssl"', r"\[source\] options \(line \d+\): a table of Kafka client settings"),
    ],
)
def test_bad_kafka_keys_are_named_with_their_line(tmp_path, key, value, message):
    path = _view_file(tmp_path, "localhost:9092", "t")
    text = path.read_text()
    lines = [line for line in text.splitlines() if not line.strip().startswith(f"{key} =")]
    at = lines.index('format = "kafka"') + 1
    path.write_text("\n".join(lines[:at] + [f"{key} = {value}"] + lines[at:]))
    with pytest.raises(ViewFileError, match=message):
        load_view(str(path))


def test_client_secrets_come_from_the_environment_and_a_missing_one_is_named(tmp_path, monkeypatch):
    from overwindow.pipeline.sources import kafka_options

    path = _view_file(tmp_path, "localhost:9092", "t")
    path.write_text(
        path.read_text().replace(
            'reader = "auto"',
            'reader = "auto"\noptions = { "sasl.password" = '
            '"env:OW_TEST_SECRET", "security.protocol" = "SASL_SSL" }',
        )
    )
    view = load_view(str(path))
    monkeypatch.delenv("OW_TEST_SECRET", raising=False)
    with pytest.raises(
        ViewFileError, match="options.sasl.password reads the environment variable OW_TEST_SECRET"
    ):
        kafka_options(view)
    monkeypatch.setenv("OW_TEST_SECRET", "s3cret")
    options = kafka_options(view)
    assert options["kafka.sasl.password"] == "s3cret" and options["kafka.security.protocol"] == "SASL_SSL"


def test_micro_batches_are_bounded_by_default(spark, kafka_bootstrap, tmp_path, monkeypatch):
    """Without max_offsets_per_trigger a micro-batch takes at most DEFAULT_MAX_OFFSETS_PER_TRIGGER
    records (made small here), so a backlog cannot make one unbounded batch."""
    from overwindow.pipeline import sources
    from overwindow.pipeline.job import start_view

    monkeypatch.setattr(sources, "DEFAULT_MAX_OFFSETS_PER_TRIGGER", 30)
    topic = f"t-{uuid.uuid4().hex[:8]}"
    rows = [{"k": "s", "id": i, "ts": f"2024-05-01T10:00:{i:02d}", "x": 1.0} for i in range(50)]
    produce(kafka_bootstrap, topic, [(b"s", json.dumps(r).encode()) for r in rows])
    view = load_view(str(_view_file(tmp_path, kafka_bootstrap, topic, limit="")))
    query, _ = start_view(spark, view, once=True, quiet=True)
    query.awaitTermination()
    assert query.exception() is None
    assert [p.numInputRows for p in query.recentProgress if p.numInputRows] == [30, 20]
