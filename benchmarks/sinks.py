"""Sink benchmark: rows per second into each sink of the main job, same view, same input, no Spark.

    python benchmarks/sinks.py            # SQLite, Delta Lake, Iceberg (a SQLite catalog)
    OVERWINDOW_POSTGRES_DSN=... OVERWINDOW_KAFKA_BOOTSTRAP=host:port python benchmarks/sinks.py --write
                                          # and PostgreSQL and Kafka (upsert format); into its page,
                                          # docs/benchmarks/sinks.md

The view: ``sum(x) OVER (ORDER BY ts ROWS BETWEEN 9 PRECEDING AND CURRENT ROW)`` and ``lag(x) OVER
(ORDER BY ts)`` per key ``k`` (100 keys), row key ``rid``, over ``--rows`` rows in ``--batches``
micro-batches, driven by the in-memory driver (``overwindow.streaming.driver``) as Spark hosts the
machines. Emit on update: event times in random order, so a batch upserts rows the table holds
(each batch's changelog is what the sink gets); emit on window close: event times in order, a
watermark 10 s behind the newest, every row appended once. Each sink applies the same batches, in
order, each in its own transaction or commit with its batch id (the job's exactly-once protocol),
into a new table (Kafka: a new topic, one transaction a batch); the time is the sum of the sinks'
``apply`` calls (wall time), best of ``--repeat``. The machine's load average is printed with the
figures: others may share it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pyarrow as pa
from common import publish, section_head

from overwindow.pipeline.delta import DeltaSink
from overwindow.pipeline.iceberg import IcebergSink
from overwindow.pipeline.sinks import PostgresSink, SqliteSink
from overwindow.spec import OverWindow
from overwindow.streaming.driver import Driver

BEGIN, END = "<!-- sinks: begin -->", "<!-- sinks: end -->"
CALLS = (
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS s",
    "lag(x) OVER (ORDER BY ts) AS p",
)
SCHEMA = pa.schema([("k", pa.int64()), ("rid", pa.int64()), ("ts", pa.int64()), ("x", pa.float64())])


def changelogs(rows: int, batches: int, emit: str) -> list[pa.Table]:
    """What the view emits per micro-batch over ``rows`` rows of 100 keys."""
    rng = np.random.default_rng(41)
    ts = np.arange(rows) * 10 if emit == "on_window_close" else rng.permutation(rows) * 10
    data = pa.table(
        {"k": rng.integers(0, 100, rows), "rid": np.arange(rows), "ts": ts, "x": rng.normal(size=rows)},
        schema=SCHEMA,
    )
    watermarked = emit == "on_window_close"
    driver = Driver(OverWindow(*CALLS, emit=emit, rowKey="rid"), SCHEMA, ["k"], watermarked)
    out, size = [], rows // batches
    for b in range(batches):
        part = data.slice(b * size, size)
        out.append(driver.feed(part, int(part["ts"][-1].as_py()) - 10_000 if watermarked else None))
    return out


def timed(make, logs: list[pa.Table], repeat: int) -> float:
    """Best of ``repeat``: seconds in ``apply`` over every batch, into a new table each time."""
    best = float("inf")
    for _ in range(repeat):
        sink, spent = make(), 0.0
        for b, log in enumerate(logs):
            start = time.perf_counter()
            sink.apply(log, b, "bench")
            spent += time.perf_counter() - start
        best = min(best, spent)
    return best


def sinks(emit: str, folder: str, dsn: str | None, kafka: str | None) -> dict:
    upsert, key = emit == "on_update", ["k", "rid"]
    n = iter(range(10**6))
    catalog, warehouse = os.path.join(folder, "catalog.db"), os.path.join(folder, "warehouse")
    made = {
        "SQLite": lambda: SqliteSink(os.path.join(folder, f"v{next(n)}.sqlite"), "v", key, upsert),
        "Delta Lake": lambda: DeltaSink(os.path.join(folder, f"v{next(n)}.delta"), ["rid"], upsert),
        "Iceberg": lambda: IcebergSink(catalog, warehouse, f"bench.v{next(n)}", ["rid"], upsert),
    }
    if kafka:
        from overwindow.pipeline.kafka_sink import KafkaSink

        stamp = int(time.time())
        made["Kafka"] = lambda: KafkaSink(
            {"bootstrap.servers": kafka}, f"bench-{emit}-{stamp}-{next(n)}", ["rid"], upsert, "bench"
        )
    if dsn:

        def postgres():
            import psycopg

            table = f"bench_{emit}_{next(n)}"
            with psycopg.connect(dsn, autocommit=True) as con:
                con.execute(f'DROP TABLE IF EXISTS "{table}"')
                con.execute('DROP TABLE IF EXISTS "_overwindow_batches"')
            return PostgresSink(dsn, table, key, upsert)

        made["PostgreSQL"] = postgres
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="put the section into docs/benchmarks/sinks.md")
    parser.add_argument("--kafka-broker", default="", help="what the Kafka broker is, for the text")
    args = parser.parse_args()
    started = time.perf_counter()
    dsn, kafka = os.environ.get("OVERWINDOW_POSTGRES_DSN"), os.environ.get("OVERWINDOW_KAFKA_BOOTSTRAP")
    load = os.getloadavg()
    table = [
        "| emit | sink | changes applied | seconds in apply | changes per second |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for emit in ("on_window_close", "on_update"):
        logs = changelogs(args.rows, args.batches, emit)
        changes = sum(t.num_rows for t in logs)
        with tempfile.TemporaryDirectory() as folder:
            for name, make in sinks(emit, folder, dsn, kafka).items():
                seconds = timed(make, logs, args.repeat)
                table.append(f"| {emit} | {name} | {changes:,} | {seconds:.2f} | {changes / seconds:,.0f} |")
                print(table[-1], flush=True)
    command = "python benchmarks/sinks.py" + (" --write" if args.write else "")
    if args.kafka_broker:
        command += f" --kafka-broker '{args.kafka_broker}'"
    if kafka:
        command = "OVERWINDOW_KAFKA_BOOTSTRAP=... " + command
    if dsn:
        command = "OVERWINDOW_POSTGRES_DSN=... " + command
    load = [max(a, b) for a, b in zip(load, os.getloadavg())]
    section = "\n".join(
        [
            *section_head(
                BEGIN,
                "Sinks: rows per second into SQLite, PostgreSQL, Delta Lake, Iceberg and Kafka",
                "benchmarks/sinks.py",
                command,
                time.perf_counter() - started,
                "pyarrow",
                "deltalake",
                "pyiceberg",
                *(["psycopg"] if dsn else []),
                *(["confluent-kafka"] if kafka else []),
            ),
            f"- Machine load (load average over 1, 5, 15 minutes, the higher of start and end): "
            f"{load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} on 2 cores: others' jobs shared the machine.",
            f"- Input: {args.rows:,} rows, 100 keys, {args.batches} micro-batches; the view and protocol: "
            "the script's docstring. Best of "
            f"{args.repeat}. On update a change is an upsert or a delete (the changelog, netted per batch "
            "by each sink); on window close every row once.",
            "- Iceberg: pyiceberg's SQL catalog over an SQLite file, the warehouse a local folder; on "
            "update each batch deletes its keys' rows (rewriting the data files holding them) and "
            "appends its upserts. Kafka: the upsert format, one transaction a batch (its records, then "
            "the record of the batch), to a broker on the same machine"
            + (f" ({args.kafka_broker})" if args.kafka_broker else "")
            + ".",
            *([] if dsn else ["- PostgreSQL: not measured (no OVERWINDOW_POSTGRES_DSN)."]),
            *([] if kafka else ["- Kafka: not measured (no OVERWINDOW_KAFKA_BOOTSTRAP)."]),
            "",
            *table,
            END,
        ]
    )
    publish(section, BEGIN, END, args.write)


if __name__ == "__main__":
    main()
