"""Prototype (issue 44): overwindow's machines on a hosting that keeps its own state, measured.

    python benchmarks/own_state.py                # throughput of the four queries, both hostings in turns
    python benchmarks/own_state.py --check        # the same changelog as overwindow's, a small input

Not product code. Every Python operator on a Spark stream pays what ``applyInPandasWithState``
costs (pandas both ways, the state padded to the data's rows, the JVM state store): Nexmark's
"hosting" floor, 0.5x-1.2x PyFlink's whole query on this machine. Spark's cheapest Python step
after a shuffle is a stateless ``mapInArrow`` (the "Arrow map" floor, 1.5x-2.3x as fast). This
script measures what overwindow would run at on it, the machine's state kept by the operator itself:

- ``overwindow.sql`` plans the query as usual, but where the adapter would call
  ``GroupedData.applyInPandasWithState`` (``over_window``), the grouped rows are instead shuffled by
  the grouping's own columns (``repartition``: each bucket on the partition Spark's grouping would
  give it) into ``mapInArrow``;
- the companion columns the pandas boundary needs (a nullable BIGINT's exact value, NaN apart from
  NULL) are left aside: Arrow carries the values exactly;
- a task reads its partition's bucket states of the micro-batch before from one Arrow IPC file
  (``<partition>-<batch>.arrow``: bucket, state bytes; the micro-batch's number from the task's
  local property ``streaming.sql.batchId``), steps the machine on each bucket's Arrow rows (no
  pandas), yields the output and writes its states for this micro-batch (a temporary file renamed:
  a retried task writes the same file again from the same input);
- the watermark is Spark's rule rebuilt: the largest event time (in milliseconds) of every
  partition's file of the micro-batch before, less the delay.

Emit on update only (its operator has no timeouts: a bucket is called when rows arrive; emit on
window close needs micro-batches without new rows, which Spark runs only for a stateful operator),
local files for the state (a real hosting would write to the checkpoint's file system and clean old
versions), no late-row counts or rows set aside. A micro-batch costs O(rows log rows) (the sort by
bucket) plus reading and writing the partition's whole state, beside the machine's own step.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nexmark as nm  # noqa: E402
import nexmark_latency as nl  # noqa: E402
from common import ROOT, revision, spark_session  # noqa: E402
from nexmark_queries import QUERIES, WATERMARK_S  # noqa: E402

from overwindow.spark import compat  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "own_state.jsonl"
HOSTINGS = ("own_state", "applyInPandasWithState")
EVENT_TIME = "dateTime"  # the watermarked column of Nexmark's bids


def own_state_operator(grouped, run, out_struct, state_dir: Path):
    """``grouped``'s rows through ``run``'s machine (an adapter ``Runner``) on a shuffle by the
    bucket column and ``mapInArrow``, each partition's bucket states in ``state_dir``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from overwindow.spark.grouping import _BUCKET

    schema, folder = run.schema, str(state_dir)
    # UTC: overwindow refuses a stream with a TIMESTAMP in any other session zone (check_session_time_zone)
    out_schema = to_arrow_schema(out_struct, timezone="UTC")
    delay_ms = WATERMARK_S * 1000
    columns = nl.grouping_columns(grouped._df)  # as Spark's shuffle for the grouping

    def operator(batches):
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyarrow import ipc
        from pyspark import TaskContext

        task = TaskContext.get()
        batch, part = int(task.getLocalProperty("streaming.sql.batchId")), task.partitionId()
        states, seen, watermark = {}, 0, None
        before = Path(folder, f"{part}-{batch - 1}.arrow")
        if before.exists():
            held = ipc.open_file(before).read_all()
            states = dict(zip(held["bucket"].to_pylist(), held["state"].to_pylist()))
            seen = int(held.schema.metadata[b"seen"])
        elif batch > 0:  # every micro-batch runs a task per partition, each writing its file
            raise RuntimeError(f"no state of partition {part} for micro-batch {batch - 1}")
        tops = [
            int(ipc.open_file(f).schema.metadata[b"seen"]) for f in Path(folder).glob(f"*-{batch - 1}.arrow")
        ]
        if run.watermarked and max(tops, default=0) > 0:
            # Spark's: milliseconds of the largest event time, less the delay; the machine's key units
            watermark = (max(tops) // 1000 - delay_ms) * 1000
        batches = [b for b in batches if b.num_rows]
        if batches:
            table = pa.Table.from_batches(batches)
            rows = table.select(schema.names).cast(schema)
            if run.watermarked:
                seen = max(seen, pc.max(rows[EVENT_TIME]).cast(pa.int64()).as_py())
            buckets = table[_BUCKET].to_numpy()
            order = np.argsort(buckets, kind="stable")
            rows, buckets = rows.take(order), buckets[order]
            cuts = np.flatnonzero(np.diff(buckets)) + 1
            for start, end in zip(np.r_[0, cuts], np.r_[cuts, len(buckets)]):
                bucket = int(buckets[start])
                step = run.machine.step(states.get(bucket), rows.slice(start, end - start), watermark)
                if step.empty:
                    states.pop(bucket, None)
                else:
                    states[bucket] = step.state
                if step.output.num_rows:
                    yield from step.output.select(out_schema.names).cast(out_schema).to_batches()
        kept = sorted(states)
        table = pa.table(
            {"bucket": pa.array(kept, pa.int64()), "state": pa.array([states[k] for k in kept], pa.binary())}
        ).replace_schema_metadata({"seen": str(seen)})
        written = Path(folder, f"{part}-{batch}.tmp")
        with ipc.new_file(written, table.schema) as w:
            w.write_table(table)
        os.replace(written, Path(folder, f"{part}-{batch}.arrow"))

    return grouped._df.repartition(*columns).mapInArrow(operator, out_struct)


@contextlib.contextmanager
def hosted_on_own_state(state_dir: Path):
    """While inside, ``over_window``'s ``applyInPandasWithState`` is ``own_state_operator``."""
    from pyspark.sql.group import GroupedData

    original = GroupedData.applyInPandasWithState

    def instead(self, run, out_struct, state_struct, mode, timeout):
        if mode != "update":  # window close, or on update in append mode after another operator
            raise ValueError("the prototype hosts emit on update in update mode only")
        return own_state_operator(self, run, out_struct, state_dir)

    GroupedData.applyInPandasWithState = instead
    try:
        yield
    finally:
        GroupedData.applyInPandasWithState = original


def query_on(spark, query, hosting: str, folder: Path, work: Path):
    """``query`` on update over ``folder``'s bids on ``hosting``, and its output mode."""
    nm.bids_view(spark, folder)
    if hosting == "applyInPandasWithState":
        return nl.overwindow_sql(spark, query, "on_update"), "update"
    with hosted_on_own_state(Path(tempfile.mkdtemp(prefix="state-", dir=work))):
        return nl.overwindow_sql(spark, query, "on_update"), "append"


def check(spark, work: Path) -> int:
    """Each query's changelog on both hostings over a small input (4 files, a micro-batch each: three
    hand-overs of the state), as sorted rows: equal. Returns the exit status."""
    ne = nm.ne
    folder = work / "small"
    ne.write_json_files(ne.bids(ne.events(40_000, 7)), folder, 4)
    failed = 0
    for query in QUERIES:
        rows = {}
        for hosting in HOSTINGS:
            out, mode = query_on(spark, query, hosting, folder, work)
            name = f"own_state_{query.name}_{hosting}"
            q = (
                out.writeStream.format("memory")
                .queryName(name)
                .outputMode(mode)
                .option("checkpointLocation", str(work / f"chk-{name}"))
                .trigger(availableNow=True)
                .start()
            )
            q.awaitTermination()
            rows[hosting] = sorted(map(repr, spark.table(name).collect()))
        same = rows["own_state"] == rows["applyInPandasWithState"]
        failed += not same
        print(f"{query.name}: {len(rows['own_state']):,} rows, {'same' if same else 'DIFFERENT'}", flush=True)
    return 1 if failed else 0


def bench(spark, work: Path, queries: list[str], warm: int, runs: int) -> list[dict]:
    """Throughput on both hostings (``nexmark.stream_rate``, the input of ``nexmark.py``): ``warm``
    untimed runs of each, then ``runs`` timed runs of each, the hostings in turns."""
    counts = nm.write_inputs(work, 1_000_000, 10, 20240601)
    records = []
    for query in (q for q in QUERIES if q.name in queries):
        rates, loads = {h: [] for h in HOSTINGS}, []
        for n in range(warm + runs):
            for hosting in HOSTINGS:
                out, mode = query_on(spark, query, hosting, work / "bids", work)
                r = nm.stream_rate(out, mode, work / f"chk-{query.name}-{hosting}{n}", hosting)
                if n >= warm:
                    rates[hosting].append(r["rate"])
                    loads.append(os.getloadavg()[0])
        for hosting in HOSTINGS:
            said = ", ".join(f"{x:,.0f}" for x in rates[hosting])
            print(f"{query.name} on update, {hosting}: {said} bids/s/core", flush=True)
        records.append(
            {"query": query.name, "rates": rates, "loads": loads, "bids": counts["bids"], "git": revision()}
        )
    return records


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--queries", nargs="*", default=[q.name for q in QUERIES], choices=[q.name for q in QUERIES]
    )
    p.add_argument("--warm", type=int, default=2, help="untimed runs of each hosting first")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--check", action="store_true", help="the changelogs of both hostings, compared")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ow-own-state-"))
    spark = spark_session("overwindow-own-state", work / "warehouse", 100_000)
    compat.use_filesystem_checkpoints(spark)
    started = time.perf_counter()
    try:
        if args.check:
            return check(spark, work)
        records = bench(spark, work, args.queries, args.warm, args.runs)
        command = "python benchmarks/own_state.py" + "".join(f" {a}" for a in (argv or sys.argv[1:]))
        with open(RESULTS, "a") as f:
            for r in records:
                f.write(json.dumps({**r, "command": command, "wall_s": time.perf_counter() - started}) + "\n")
        return 0
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
