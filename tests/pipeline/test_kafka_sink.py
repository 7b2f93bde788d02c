"""The Kafka changelog sink (issue 41) against the broker the tests start: random changelogs written
batch by batch (every batch twice, the second time a replay) and read back by a consumer of its own
equal a model, in both formats; a new sink carries on where the last one stopped; another query's
topic and a change of format are refused. Then with Spark: the record JSON against Spark's
``to_json``; ``overwindow run`` into Kafka equals the batch evaluator (killed and restarted:
tests/test_recovery.py)."""

import itertools
import json
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from kafka_support import consume
from replay_support import expected, run_job, write_view
from sink_support import CHANGELOG, batches, model, sort_key

pytest.importorskip("confluent_kafka")

from overwindow.pipeline.checkpoint import CheckpointState  # noqa: E402
from overwindow.pipeline.kafka_records import to_json  # noqa: E402
from overwindow.pipeline.kafka_sink import KafkaSink  # noqa: E402
from overwindow.pipeline.sinks import SinkDriftError, check_pairing  # noqa: E402

_topics = itertools.count()


def new_sink(bootstrap, format, upsert=True, key=("k", "id"), topic=None, **kw):
    topic = topic or f"sink-{format}-{next(_topics)}"
    return KafkaSink({"bootstrap.servers": bootstrap}, topic, list(key), upsert, "v", format, **kw)


def _row(value: bytes) -> tuple:
    r = json.loads(value)
    return r["k"], r["id"], r["s"]


def by_key(records) -> list[tuple]:
    """An upsert topic as a compacted topic keeps it: each key's last value, tombstones deleting."""
    table = {}
    for key, value in records:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = _row(value)
    return sorted(table.values(), key=sort_key)


def events_applied(records) -> dict:
    """Debezium events applied in order as a consumer of them does (tombstones skipped): key ->
    row; checks each event's op and before against the table so far."""
    table = {}
    for key, value in records:
        if value is None:
            continue
        event = json.loads(value)
        before, after, op = event["before"], event["after"], event["op"]
        assert op == ("d" if after is None else "u" if key in table else "c"), (key, event)
        if op != "c":
            assert before == table[key], (key, event)
        if after is None:
            del table[key]
        else:
            table[key] = after
    return table


def replayed(records) -> list[tuple]:
    return sorted(((r["k"], r["id"], r["s"]) for r in events_applied(records).values()), key=sort_key)


READERS = {"upsert": by_key, "debezium": replayed}


@pytest.mark.parametrize("format", ["upsert", "debezium"])
@settings(max_examples=5, deadline=None)
@given(changelog=CHANGELOG)
def test_a_changelog_read_back_by_key_equals_the_table_replays_skipped(kafka_bootstrap, format, changelog):
    sink = new_sink(kafka_bootstrap, format)
    for b, batch in enumerate(batches(changelog)):
        assert sink.apply(batch, b, "q") == batch.num_rows
        assert sink.apply(batch, b, "q") is None
    assert READERS[format](consume(kafka_bootstrap, sink.topic)) == model(changelog)
    assert sink.bookkeeping().applied.batch_id == len(changelog) - 1


@pytest.mark.parametrize("transactions", [True, False])
@pytest.mark.parametrize("format", ["upsert", "debezium"])
def test_a_new_sink_carries_on_where_the_last_stopped(kafka_bootstrap, format, transactions):
    """A restart: a new sink (a new producer, fencing the old one) skips the batches the topic
    holds and, for Debezium, writes ``before`` as the topic last had the row."""
    changelog = [
        [("a", 1, 1.0, "upsert"), ("a", 2, 2.0, "upsert"), ("b", 1, None, "upsert")],
        [("a", 1, 1.5, "upsert"), ("a", 2, None, "delete")],
        [("a", 1, None, "delete"), ("b", 1, 3.0, "upsert"), ("a", 2, 4.0, "upsert")],
    ]
    first = new_sink(kafka_bootstrap, format, transactions=transactions)
    todo = list(batches(changelog))
    for b in range(2):
        first.apply(todo[b], b, "q")
    again = new_sink(kafka_bootstrap, format, topic=first.topic, transactions=transactions)
    assert again.apply(todo[1], 1, "q") is None
    assert again.apply(todo[2], 2, "q") == 3
    assert READERS[format](consume(kafka_bootstrap, first.topic)) == model(changelog)


def test_a_row_moved_between_partitions_in_one_batch_is_kept(kafka_bootstrap):
    """Its new partition's upsert and its old one's delete in one batch, keyed by the row key
    alone: one record, the upsert."""
    sink = new_sink(kafka_bootstrap, "upsert", key=["id"])
    sink.apply(pa.table({"k": ["a"], "id": [1], "s": [1.0], "_change": ["upsert"]}), 0, "q")
    moved = pa.table({"k": ["b", "a"], "id": [1, 1], "s": [2.0, None], "_change": ["upsert", "delete"]})
    assert sink.apply(moved, 1, "q") == 1
    assert by_key(consume(kafka_bootstrap, sink.topic)) == [("b", 1, 2.0)]


def test_window_close_appends_one_record_per_row(kafka_bootstrap):
    sink = new_sink(kafka_bootstrap, "debezium", upsert=False, key=["id"])
    sink.apply(pa.table({"k": ["a", None], "id": [1, 2], "s": [1.5, None]}), 0, "q")
    events = [json.loads(v) for _, v in consume(kafka_bootstrap, sink.topic)]
    assert [(e["op"], e["before"], e["after"]) for e in events] == [
        ("c", None, {"k": "a", "id": 1, "s": 1.5}),
        ("c", None, {"k": None, "id": 2, "s": None}),
    ]


def test_another_querys_topic_and_another_format_are_refused(kafka_bootstrap):
    sink = new_sink(kafka_bootstrap, "upsert", key=["id"])
    sink.apply(pa.table({"id": [1], "_change": ["upsert"]}), 0, "q1")
    kept = new_sink(kafka_bootstrap, "upsert", key=["id"], topic=sink.topic).bookkeeping()
    assert (kept.table_exists, kept.applied.query_id, kept.applied.batch_id) == (True, "q1", 0)
    with pytest.raises(SinkDriftError, match="another query"):
        check_pairing(sink.topic, kept, CheckpointState("q2", 0, 0), "")
    with pytest.raises(SinkDriftError, match=r"written by another query \(q1\) than this one \(q2\)"):
        new_sink(kafka_bootstrap, "upsert", key=["id"], topic=sink.topic).apply(
            pa.table({"id": [2]}), 1, "q2"
        )
    with pytest.raises(SinkDriftError, match=r"holds upsert records, the view file writes debezium"):
        new_sink(kafka_bootstrap, "debezium", key=["id"], topic=sink.topic).bookkeeping()
    assert len(consume(kafka_bootstrap, sink.topic)) == 1


def test_a_view_without_its_key_or_with_a_nested_column_is_refused(kafka_bootstrap):
    sink = new_sink(kafka_bootstrap, "upsert", key=["id"])
    with pytest.raises(SinkDriftError, match="writes no column id to key"):
        sink.check_columns(pa.schema([("k", pa.string())]))
    with pytest.raises(SinkDriftError, match="no JSON for column xs"):
        sink.check_columns(pa.schema([("id", pa.int64()), ("xs", pa.list_(pa.int64()))]))


# -- with Spark ------------------------------------------------------------------------------------


def test_record_json_is_sparks_to_json(spark):
    """Spark's own ``to_json`` of the same rows (NULLs written out, timestamps at milliseconds: its
    default keeps no more), compared as JSON with every digit of a number."""
    rows = spark.sql(
        """SELECT * FROM VALUES
        (1L, CAST(NULL AS DOUBLE), CAST(NULL AS DECIMAL(38, 6)), DATE'1901-12-31',
         TIMESTAMP'1969-07-20 20:17:40.123', TIMESTAMP_NTZ'2024-03-15 18:00:36.5', 'a"é\\n', X'00FF',
         true, FLOAT(0.1), INTERVAL '1 02:03:04.5' DAY TO SECOND),
        (-9223372036854775808L, double('NaN'),
         CAST('12345678901234567890123456789012.345678' AS DECIMAL(38, 6)), DATE'0001-01-01',
         TIMESTAMP'1900-01-01 00:00:00',
         TIMESTAMP_NTZ'1969-12-31 23:59:59.999', '',
         X'', false, FLOAT('-Infinity'), INTERVAL '-0 00:00:00.000001' DAY TO SECOND),
        (0L, -0.0D, CAST('-0.000001' AS DECIMAL(38, 6)), DATE'9999-12-31', TIMESTAMP'2024-01-01 00:00:00',
         TIMESTAMP_NTZ'2024-01-01 00:00:00', NULL, NULL, NULL, FLOAT(3.4e38),
         INTERVAL '99 23:59:59' DAY TO SECOND),
        (7L, 1.5e300D, CAST(0 AS DECIMAL(38, 6)), NULL, NULL, NULL, '\\u0001', X'01', true, FLOAT(1e-7),
         NULL)
        AS t(i, f, d, day, ts, ntz, s, b, bo, fl, iv)"""
    )
    from overwindow.spark import compat

    theirs = [r[0] for r in rows.selectExpr("to_json(struct(*), map('ignoreNullFields', 'false'))").collect()]
    ours = [v.decode() for v in to_json(compat.to_arrow(rows), rows.columns)]
    assert len(ours) == 4
    for a, b in zip(ours, theirs):
        assert json.loads(a, parse_float=Decimal) == json.loads(b, parse_float=Decimal), (a, b)


def test_record_json_keeps_microseconds_spark_cuts():
    t = pa.table({"ts": pa.array([1_000_005], pa.timestamp("us", "UTC"))})
    assert to_json(t, ["ts"]) == [b'{"ts":"1970-01-01T00:00:01.000005Z"}']


def kafka_view(tmp_path, bootstrap, emit, format, files):
    topic = f"view-{emit}-{format}-{next(_topics)}"
    view, rows = write_view(
        tmp_path,
        emit,
        sink="kafka",
        shuffled=emit == "on_update",
        files=files,
        sink_where="\n        ".join(
            [f'bootstrap_servers = "{bootstrap}"', f'topic = "{topic}"', f'format = "{format}"']
        ),
    )
    return view, rows, topic


def topic_view(bootstrap, topic, format) -> tuple[dict, int]:
    """The view the topic holds (id -> (s, p)), and how many records were written again (a row's
    record repeated with the same value: a replay's)."""
    records = consume(bootstrap, topic)
    if format == "upsert":
        table, seen, twice = {}, set(), 0
        for key, value in records:
            twice += (key, value) in seen
            seen.add((key, value))
            if value is None:
                table.pop(key, None)
            else:
                table[key] = json.loads(value)
        return {r["id"]: (r["s"], r["p"]) for r in table.values()}, twice
    return {r["id"]: (r["s"], r["p"]) for r in events_applied(records).values()}, 0


def assert_same(got, want):
    assert set(got) == set(want)
    for i, (s, p) in want.items():
        assert got[i][0] == pytest.approx(s) and got[i][1] == p


# window close in Debezium's format and on update in upsert's: tests/test_recovery.py
@pytest.mark.parametrize("emit, format", [("on_window_close", "upsert"), ("on_update", "debezium")])
def test_a_view_into_kafka_equals_the_batch_evaluator(kafka_bootstrap, no_spark, tmp_path, emit, format):
    view, rows, topic = kafka_view(tmp_path, kafka_bootstrap, emit, format, files=4)
    assert run_job(view) == 0
    got, twice = topic_view(kafka_bootstrap, topic, format)
    assert_same(got, expected(rows, emit))
    assert twice == 0
    if emit == "on_window_close":  # one record per row, each once
        assert len(consume(kafka_bootstrap, topic)) == len(got)
