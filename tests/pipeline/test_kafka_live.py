"""A live view from Kafka (issue 45), at the command line: the job runs while a producer writes three
partitions at different rates, the slowest far behind the others in event time; it is stopped with
Ctrl-C and started again while the producer goes on, then ended with ``--once --final``. Both emit
modes (two views in one job): nothing is late, and each table is the batch evaluator's over every
record on the topic."""

import datetime as dt
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pyarrow as pa
import pytest

import overwindow

confluent_kafka = pytest.importorskip("confluent_kafka")

CALLS = [
    "x - lag(x) OVER (ORDER BY ts) AS d",
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
    "avg(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 60 SECONDS PRECEDING AND CURRENT ROW) AS a",
]
DELAY_S = 30
SPAN_S = 1800  # every partition's records cover the same half hour of event time
T0 = dt.datetime(2024, 5, 1)
# partition: (its keys, records, seconds of wall clock it is written over): partition 2 is written
# at a third of partition 0's pace in event time, so it falls 20 minutes behind
PARTITIONS = {0: (("a", "b"), 240, 8), 1: (("c",), 120, 14), 2: (("d", "e"), 90, 24)}


def _records():
    """Every partition's records, in the order they are written: event times spread over SPAN_S, every
    fourth one 5 seconds behind the one before (in order within the delay); (partition, wall-clock
    second to send at, record)."""
    out, ids = [], 0
    for p, (keys, n, wall) in PARTITIONS.items():
        for j in range(n):
            at = T0 + dt.timedelta(milliseconds=round(j * SPAN_S * 1000 / n) - (5000 if j % 4 == 3 else 0))
            record = {"k": keys[j % len(keys)], "id": ids, "ts": at, "x": (ids * 7) % 23}
            out.append((p, j * wall / n, record))
            ids += 1
    return sorted(out, key=lambda r: r[1])


def _write(bootstrap, topic, records, sent):
    """Sends ``records`` at their wall-clock times; ``sent`` gets (partition, event time) in order."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    start = time.monotonic()
    for p, at, record in records:
        time.sleep(max(0.0, start + at - time.monotonic()))
        value = json.dumps({**record, "ts": record["ts"].isoformat(timespec="milliseconds")})
        producer.produce(topic, key=record["k"].encode(), value=value.encode(), partition=p)
        producer.poll(0)
        sent.append((p, record["ts"]))
    assert producer.flush(30) == 0


def _view(folder, bootstrap, topic, emit):
    path = folder / f"{emit}.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "kafka"
        bootstrap_servers = "{bootstrap}"
        topic = "{topic}"
        schema = "k STRING, id BIGINT, ts TIMESTAMP, x DOUBLE"
        max_offsets_per_trigger = 100
        idle_timeout = "3 seconds"

        [watermark]
        column = "ts"
        delay = "{DELAY_S} seconds"

        [view]
        partition_by = ["k"]
        calls = {json.dumps(CALLS)}
        emit = "{emit}"
        row_key = ["id"]

        [sink]
        kind = "sqlite"
        path = "{emit}.sqlite"
        table = "{emit}"
        checkpoint = "chk-{emit}"
    """)
    )
    return str(path)


class _Job:
    """``overwindow run VIEWS --progress json`` in its own process group (Ctrl-C at a terminal reaches
    the JVM and the Python workers too), its progress collected as it comes."""

    def __init__(self, views):
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "overwindow", "run", *views, "--progress", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        self.progress, self.lines, self.started = [], [], time.monotonic()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(
                f"{time.monotonic() - self.started:.1f} s: {line}" if line.startswith("{") else line
            )
            if line.startswith("{"):
                self.progress.append(json.loads(line))

    def wait_for(self, done, timeout):
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            assert self.proc.poll() is None, self.proc.stderr.read()
            time.sleep(0.2)
        assert done(), f"not done in {timeout} s: {self.lines[-5:]}"

    def stop(self):
        os.killpg(self.proc.pid, signal.SIGINT)
        self.proc.wait(120)
        self.reader.join(10)
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0, err
        assert self.lines[-1].startswith("stopped. Run the same command to resume"), self.lines[-3:]


def _read_to(checkpoint, ends):
    """Whether the checkpoint has committed a micro-batch that read every partition to ``ends``."""
    commits = (
        [int(f) for f in os.listdir(checkpoint / "commits") if f.isdigit()] if checkpoint.exists() else []
    )
    if not commits:
        return False
    offsets = json.loads((checkpoint / "offsets" / str(max(commits))).read_text().splitlines()[-1])
    return {int(p): e for p, e in offsets["partitions"].items()} == ends


def _on_topic(bootstrap, topic, ends):
    """Every record on the topic, read back."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False}
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in ends])
    got, deadline = [], time.monotonic() + 60
    while len(got) < sum(ends.values()) and time.monotonic() < deadline:
        got += [json.loads(m.value()) for m in consumer.consume(1000, timeout=1.0) if m.error() is None]
    consumer.close()
    return got


def _batch(records):
    """id -> (d, s, a): the calls over ``records`` by the batch evaluator."""
    table = pa.Table.from_pylist(
        [{**r, "ts": dt.datetime.fromisoformat(r["ts"]), "x": float(r["x"])} for r in records]
    )
    spec = overwindow.OverWindow(*CALLS, emit="on_update", rowKey="id")
    return {
        r["id"]: (r["d"], r["s"], r["a"])
        for r in overwindow.evaluate(table, *spec.partitioned(("k",))).to_pylist()
    }


def test_a_live_view_with_a_partition_behind_loses_nothing_across_a_restart(
    no_spark, kafka_bootstrap, tmp_path
):
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"live-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 3)])[topic].result()
    views = [_view(tmp_path, kafka_bootstrap, topic, emit) for emit in ("on_update", "on_window_close")]
    records = _records()
    ends = {p: n for p, (_, n, _) in PARTITIONS.items()}

    sent: list = []  # written while the job reads, is stopped and starts again
    producer = threading.Thread(target=_write, args=(kafka_bootstrap, topic, records, sent))
    jobs = [_Job(views)]
    try:
        jobs[0].wait_for(lambda: jobs[0].progress, 240)  # up: a first micro-batch, of nothing
        producer.start()
        jobs[0].wait_for(lambda: sum(r["rows_in"] for r in jobs[0].progress) >= 30, 240)
        assert producer.is_alive(), jobs[0].lines
        jobs[0].stop()
        jobs.append(_Job(views))
        producer.join()
        read = lambda: all(_read_to(tmp_path / f"chk-{e}", ends) for e in ("on_update", "on_window_close"))  # noqa: E731
        jobs[1].wait_for(read, 240)
        jobs[1].stop()
    finally:
        for job in jobs:
            if job.proc.poll() is None:
                os.killpg(job.proc.pid, signal.SIGKILL)
        if producer.is_alive():
            producer.join()
    progress = [r for job in jobs for r in job.progress]
    final = subprocess.run(
        [sys.executable, "-m", "overwindow", "run", *views, "--once", "--final", "--progress", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert final.returncode == 0, final.stderr
    progress += [json.loads(line) for line in final.stdout.splitlines() if line.startswith("{")]

    # the slowest partition was far behind in event time while the others were written
    done_0 = next(
        i for i, (p, _) in enumerate(sent) if p == 0 and sum(q == 0 for q, _ in sent[: i + 1]) == ends[0]
    )
    behind = max(t for p, t in sent[:done_0] if p == 2)
    assert (T0 + dt.timedelta(seconds=SPAN_S) - behind).total_seconds() > 10 * DELAY_S

    assert {r["kafka_reader"] for r in progress} == {"python"}
    assert sum(r["late"] for r in progress) == 0 and sum(r["bad"] for r in progress) == 0
    want = _batch(_on_topic(kafka_bootstrap, topic, ends))
    assert len(want) == len(records)
    for emit in ("on_update", "on_window_close"):
        with sqlite3.connect(tmp_path / f"{emit}.sqlite") as con:
            got = {i: (d, s, a) for i, d, s, a in con.execute(f'SELECT id, d, s, a FROM "{emit}"')}
        assert set(got) == set(want), emit
        for i, values in want.items():
            assert [v if v is None else pytest.approx(v) for v in values] == list(got[i]), (emit, i)
