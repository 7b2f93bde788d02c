"""PyFlink's side of ``benchmarks/nexmark.py``: the Nexmark window queries (``nexmark_queries.py``)
in Flink SQL over the same bid files, streaming mode, parallelism 2, into ``blackhole`` sinks.

    FLINKENV/bin/python benchmarks/nexmark_flink.py --bids BIDS.json --tiny TINY.json [--queries q18 q19]

Runs in a venv of its own with apache-flink (``benchmarks/flink.py`` says how); imports neither
overwindow nor pyspark. Each query's job runs once on ``--tiny`` and ``--warm`` times on ``--bids``
untimed (warm-up), then, timed as
the wall time of the job (``StatementSet.execute().wait()``), on ``--tiny`` and on ``--bids``: the
job's start-up and teardown are in both, so ``(bids - tiny rows) / (seconds - tiny seconds)`` is
the throughput without them. Each input is one file (Flink reads several files in parallel in no
set order, and a later file's watermark would then drop an earlier file's rows as late). Prints
one JSON object per query on stdout.

``--latency FOLDER`` runs one query (``--queries``) instead as ``nexmark_latency.py`` measures it:
the filesystem source watching ``FOLDER`` for new files every ``--monitor``, each SELECT into a
``print`` sink ``sinkN`` (a row a line on stdout, as Flink commits it), ``READY`` printed once the
job runs; it stops after ``--seconds`` or on SIGTERM, cancelling the job.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nexmark_queries import QUERIES, WATERMARK_S  # noqa: E402

BID_TABLE = (
    "`auction` BIGINT, `bidder` BIGINT, `price` BIGINT, `channel` STRING, `url` STRING, "
    f"`dateTime` TIMESTAMP(3), `extra` STRING, WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL "
    f"'{WATERMARK_S}' SECOND"
)


def table_env():
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "2")
    env.get_config().set("table.exec.resource.default-parallelism", "2")
    return env


def statements(env, path: Path, selects: tuple, connector: str = "blackhole", monitor: str | None = None):
    """One statement set: every SELECT of ``selects`` over the bids of ``path`` (a file, or a folder
    watched every ``monitor``) into a sink ``sinkN`` of ``connector``."""
    from pyflink.table import Schema, TableDescriptor

    watch = f", 'source.monitor-interval' = '{monitor}'" if monitor else ""
    env.execute_sql("DROP TEMPORARY TABLE IF EXISTS bid")
    env.execute_sql(
        f"CREATE TEMPORARY TABLE bid ({BID_TABLE}) WITH ('connector' = 'filesystem', "
        f"'path' = 'file://{path}', 'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601'{watch})"
    )
    out = env.create_statement_set()
    for n, select in enumerate(selects):
        table = env.sql_query(select)
        sink = f"sink{n}"
        env.execute_sql(f"DROP TEMPORARY TABLE IF EXISTS {sink}")
        schema = Schema.new_builder().from_row_data_type(table.get_schema().to_row_data_type()).build()
        descriptor = TableDescriptor.for_connector(connector).schema(schema)
        if connector == "print":
            descriptor = descriptor.option("print-identifier", sink)
        env.create_temporary_table(sink, descriptor.build())
        out.add_insert(sink, table)
    return out


def run_job(env, path: Path, selects: tuple) -> float:
    """Seconds of one job: every SELECT of ``selects`` over the bids of ``path`` into a blackhole."""
    job = statements(env, path, selects)
    started = time.perf_counter()
    job.execute().wait()
    return time.perf_counter() - started


def run_latency(env, folder: Path, selects: tuple, seconds: float, monitor: str) -> None:
    """The job over the files arriving in ``folder`` into print sinks, until ``seconds`` or SIGTERM."""
    # a source reader holding no file (the warm-up's one file goes to one of the two) holds back
    # no watermark after a second, so that OVER aggregates emit the warm-up's row
    env.get_config().set("table.exec.source.idle-timeout", "1 s")
    client = statements(env, folder, selects, "print", monitor).execute().get_job_client()
    while "RUNNING" not in str(client.get_job_status().result()):
        time.sleep(0.1)
    print("READY", flush=True)

    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        time.sleep(seconds)
    except KeyboardInterrupt:
        pass
    finally:
        client.cancel().result()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bids", type=Path, help="one JSON lines file of bids")
    p.add_argument("--tiny", type=Path, help="a few bids, for warm-up and start-up")
    p.add_argument("--warm", type=int, default=0, help="untimed runs of --bids first")
    p.add_argument("--queries", nargs="*", default=[q.name for q in QUERIES])
    p.add_argument("--latency", type=Path, help="a folder to watch: one query into print sinks")
    p.add_argument("--seconds", type=float, default=120.0)
    p.add_argument("--monitor", default="200 ms")
    args = p.parse_args(argv)
    env = table_env()
    if args.latency:
        (query,) = (q for q in QUERIES if q.name in args.queries)
        run_latency(env, args.latency, query.flink, args.seconds, args.monitor)
        return 0
    for query in QUERIES:
        if query.name not in args.queries:
            continue
        try:
            run_job(env, args.tiny, query.flink)
            for _ in range(args.warm):
                run_job(env, args.bids, query.flink)
            tiny = run_job(env, args.tiny, query.flink)
            seconds = run_job(env, args.bids, query.flink)
        except Exception as e:  # one query Flink refuses leaves the others to run
            print(json.dumps({"query": query.name, "error": str(e).splitlines()[0][:500]}), flush=True)
            continue
        print(json.dumps({"query": query.name, "seconds": seconds, "tiny_seconds": tiny}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
