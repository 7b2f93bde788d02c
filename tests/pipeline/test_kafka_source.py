"""The Kafka source (overwindow.pipeline.kafka) against a real Kafka-protocol broker the tests start:
every record read once across restarts, admission control, starting offsets, and a whole view from
Kafka equal to the batch evaluator over the records produced."""

import datetime as dt
import json
import re
import textwrap
import uuid

import pyarrow as pa
import pytest
from kafka_support import produce

import overwindow
from overwindow.__main__ import main
from overwindow.pipeline.kafka import FORMAT, KafkaDataSource
from overwindow.pipeline.kafka_alignment import share_limit
from overwindow.pipeline.progress import bad_records, null_event_times
from overwindow.pipeline.view import ViewFileError, load_view


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
    tmp_path,
    bootstrap,
    topic,
    emit="on_update",
    reader="auto",
    limit="max_offsets_per_trigger = 100",
    delay="1 hour",
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
        late_rows = "dead_letter"

        [watermark]
        column = "ts"
        delay = "{delay}"

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
    _assert_view_is_batch(tmp_path / "view.sqlite", rows)


def _assert_view_is_batch(database, rows):
    """The view's table (CALLS over ``rows`` by k, keyed by id) equals the batch evaluator's."""
    import sqlite3

    table = pa.Table.from_pylist(rows)
    table = table.set_column(2, "ts", pa.compute.strptime(table["ts"], "%Y-%m-%dT%H:%M:%S", "us"))
    spec = overwindow.OverWindow(*CALLS, emit="on_update", rowKey="id")
    want = {
        r["id"]: (r["s"], r["a"]) for r in overwindow.evaluate(table, *spec.partitioned(("k",))).to_pylist()
    }
    with sqlite3.connect(database) as con:
        got = {i: (s, a) for i, s, a in con.execute('SELECT id, s, a FROM "v"')}
    assert set(got) == set(want)
    for i, (s, a) in want.items():
        assert got[i] == (pytest.approx(s), pytest.approx(a))


def test_reader_spark_without_the_connector_is_one_line_naming_the_reader_key(
    spark, kafka_bootstrap, tmp_path, capsys
):
    path = _view_file(tmp_path, kafka_bootstrap, "t", reader="spark")
    assert main(["run", str(path), "--once"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    line = next(
        i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith("reader")
    )
    assert len(err) == 1 and err[0].startswith(f"overwindow: {path}: [source] reader (line {line}): ")
    assert "OVERWINDOW_SPARK_PACKAGES=org.apache.spark:spark-sql-kafka-0-10" in err[0]
    assert err[0].count(str(path)) == 1 and "bootstrap_servers" not in err[0]


def _ticks(partition, count, step_s, key, first_id):
    """``count`` records of ``key`` in one partition, ``step_s`` seconds apart from 2024-05-01."""
    return [
        {"k": key, "id": first_id + i, "ts": (T0 + dt.timedelta(seconds=i * step_s)).isoformat(), "x": i % 7}
        for i in range(count)
    ], partition


T0 = dt.datetime(2024, 5, 1)


def _late_under_backlog_sharing(partitions, limit, delay_s):
    """Rows a reader sharing each micro-batch's limit by backlog alone (as Spark's connector and the
    reader before event-time alignment did) would have made late: the batches it plans over all of
    ``partitions`` (each a list of event times in seconds) under Spark's watermark rule."""
    start, newest, late = {p: 0 for p in partitions}, None, 0
    ends = {p: len(t) for p, t in partitions.items()}
    while start != ends:
        stop = share_limit(start, ends, limit)
        if newest is not None:
            late += sum(t <= newest - delay_s for p, t in partitions.items() for t in t[start[p] : stop[p]])
        newest = max([newest or 0] + [t for p, ts in partitions.items() for t in ts[start[p] : stop[p]]])
        start = stop
    return late


@pytest.mark.parametrize("emit", ["on_update", "on_window_close"])
def test_partitions_far_apart_in_event_time_lose_no_row(spark, kafka_bootstrap, tmp_path, capsys, emit):
    """Issue 45: partition 1 spans 40 times the event time of partition 0 in a tenth of its records;
    read by backlog, every micro-batch would take partition 1 far ahead and drop partition 0's rows
    as late. The Python reader keeps them together: nothing is late, the view is the batch result."""
    dense, p0 = _ticks(0, 400, 1, "a", 0)
    sparse, p1 = _ticks(1, 40, 400, "b", 1000)
    limit, delay = 60, 10
    seconds = {p: [i * step for i in range(n)] for p, n, step in ((p0, 400, 1), (p1, 40, 400))}
    assert _late_under_backlog_sharing(seconds, limit, delay) > 100
    topic = f"t-{uuid.uuid4().hex[:8]}"
    records = [
        (r["k"].encode(), json.dumps(r).encode(), p) for rows, p in ((sparse, p1), (dense, p0)) for r in rows
    ]
    produce(kafka_bootstrap, topic, records, partitions=2)
    path = _view_file(
        tmp_path,
        kafka_bootstrap,
        topic,
        emit,
        limit=f"max_offsets_per_trigger = {limit}",
        delay=f"{delay} seconds",
    )
    assert main(["run", str(path), "--once", "--final", "--progress", "json"]) == 0
    progress = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert (
        sum(r["rows_in"] for r in progress) == len(records) and max(r["rows_in"] for r in progress) <= limit
    )
    assert sum(r["late"] for r in progress) == 0
    assert {r["kafka_reader"] for r in progress} == {"python"}
    _assert_view_is_batch(tmp_path / "view.sqlite", sparse + dense)


@pytest.mark.parametrize("emit", ["on_update", "on_window_close"])
def test_a_row_late_in_its_partition_is_counted_and_its_dead_letter_says_where_and_how_late(
    spark, kafka_bootstrap, tmp_path, capsys, emit
):
    """Issue 45: a row truly late (behind its own partition by more than the delay, after the view
    has moved on) is dropped and counted as before, and kept in the dead letter with its topic,
    partition and offset and how far behind the watermark it was. A row behind the watermark of its
    micro-batch but not of the one before is late on update only (window close drops what Spark's
    watermark for late rows, the previous one, has passed): the dead letter names exactly the rows
    counted."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    path = str(_view_file(tmp_path, kafka_bootstrap, topic, emit, delay="10 seconds"))
    late = []
    at = {5: 999, 150: 998}  # second -> id of the rows written behind the others
    for first in (0, 100, 200):  # three runs, each a micro-batch or more later in event time
        seconds = [*at, 200] if first == 200 else range(first, first + 100)
        rows = [
            {"k": "a", "id": at.get(t, t), "ts": (T0 + dt.timedelta(seconds=t)).isoformat(), "x": 1.0}
            for t in seconds
        ]
        produce(kafka_bootstrap, topic, [(b"a", json.dumps(r).encode(), 1) for r in rows], partitions=2)
        assert main(["run", path, "--once", "--progress", "json"]) == 0
        late += [
            json.loads(line)["late"] for line in capsys.readouterr().out.splitlines() if line.startswith("{")
        ]
    kept = [
        json.loads(line) for f in sorted((tmp_path / "bad").iterdir()) for line in f.read_text().splitlines()
    ]
    ids = {json.loads(r["record"])["id"]: r for r in kept}
    assert sum(late) == len(kept) == len(ids)
    assert set(ids) == {999, 998} if emit == "on_update" else 999 in ids and set(ids) <= {999, 998}
    for second, i in at.items():
        if i in ids:
            assert ids[i]["origin"] == f"topic {topic} partition 1 offset {200 + list(at).index(second)}"
            text = (T0 + dt.timedelta(seconds=second)).isoformat(timespec="milliseconds")
            m = re.fullmatch(
                rf"late: {text}Z is (?:(\d+) min ?)?(?:(\d+) s)? behind the watermark (\S+)Z",
                ids[i]["reason"],
            )
            assert m is not None, ids[i]["reason"]
            behind = dt.timedelta(minutes=int(m[1] or 0), seconds=int(m[2] or 0))
            assert dt.datetime.fromisoformat(m[3]) - (T0 + dt.timedelta(seconds=second)) == behind


def test_the_job_names_its_reader_first_and_says_when_nothing_is_new(
    spark, kafka_bootstrap, tmp_path, capsys
):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    rows, _ = _ticks(0, 10, 1, "a", 0)
    produce(kafka_bootstrap, topic, [(b"a", json.dumps(r).encode()) for r in rows])
    path = str(_view_file(tmp_path, kafka_bootstrap, topic))
    first = f"reading Kafka topic {topic} with overwindow's Python Kafka reader: partitions kept together"
    assert main(["run", path, "--once"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(first) and lines[1].startswith("batch 0: 10 rows in")
    assert main(["run", path, "--once"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(first) and lines[1:] == ["nothing new since the checkpoint"]


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
