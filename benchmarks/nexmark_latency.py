"""End-to-end latency of the Nexmark window queries at a fixed input rate (``benchmarks/nexmark.py``).

Bids arrive as files: ``stage`` writes them before the run as JSON lines files of ``chunk_s``
seconds of input each (``rate`` bids a second; event times advance at the same rate, so the
watermark follows the wall clock), hidden from the sources; ``Feeder`` renames file ``i`` into the
watched folder ``i * chunk_s`` seconds after it starts (a rename is atomic: a source never sees half a
file). A bid arrives when its file is renamed in. A bid's latency is from its arrival to the first
commit of a row for it in the sink (its ``auction, bidder, price, dateTime`` on the row); bids that
get no row (a bid outside q19's top 10) are counted apart, and for a query with several sinks (PyFlink's
q6: one SELECT per window) a bid counts once every sink has its row. Only bids arriving after the
first ``warmup_s`` seconds and at least ``tail_s`` seconds before the feed ends are measured (start-up
and the window close of the last rows left out).

Start-up is left out of both engines as the throughput leaves it out: the watched folder starts with
two warm-up bids (auction and bidder -1, no bid of the feed's keys: no row of the feed changes; the
second moves the watermark past the first, for emit on window close), and the feed starts once an
engine has committed a row for them: PyFlink's job running and its first row
printed, overwindow's first micro-batch with a row run (Spark's planning, the Python workers'
start and imports, the JVM's first compilations).

overwindow: ``overwindow.sql`` over the folder, ``trigger(processingTime="1 second")`` (what
``overwindow run`` uses without ``[sink] trigger``; another with ``--trigger``), ``foreachBatch``
collecting each micro-batch's row keys; a row commits when Spark writes the micro-batch's entry in
the checkpoint's commit log (that file's modification time).
On update a bid commits with the micro-batch that read its file (``read_commits``; the file source's
log in the checkpoint says which), whether or not a row of its own was written: Spark's update mode
writes a key's last row of a micro-batch.
PyFlink: ``nexmark_flink.py --latency``, the filesystem source watching the folder every 200 ms,
``print`` sinks; a row commits when its line reaches this process (stamped as read).

>>> table = pa.table({"a": list(range(10))})
>>> [(c.start, c.stop, c.due_s) for c in chunks(table, rate=4, chunk_s=0.5)]
[(0, 2, 0.0), (2, 4, 0.5), (4, 6, 1.0), (6, 8, 1.5), (8, 10, 2.0)]
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

KEY = ["auction", "bidder", "price", "t_ms"]
SPARK_KEY = ("auction", "bidder", "price", "dateTime")  # a Spark row's KEY, where it has them
CHUNK_S = 0.25
SPARK_TRIGGER = "1 second"
FLINK_MONITOR = "200 ms"
APPENDED = ("scan", "map")  # Spark alone's floors whose every bid has a row of its own (append mode)


@dataclass(frozen=True)
class Chunk:
    start: int  # first row of the bids
    stop: int  # one past the last
    due_s: float  # seconds after the feed starts


def chunks(table: pa.Table, rate: float, chunk_s: float = CHUNK_S) -> list[Chunk]:
    """``table``'s rows cut into files of ``rate * chunk_s`` rows (at least one), file ``i`` due at
    ``i * chunk_s`` seconds; O(files)."""
    size = max(1, round(rate * chunk_s))
    return [
        Chunk(start, min(start + size, table.num_rows), n * chunk_s)
        for n, start in enumerate(range(0, table.num_rows, size))
    ]


def stage(table: pa.Table, plan: list[Chunk], stage_dir: Path) -> list[Path]:
    """Each chunk of ``plan`` as a JSON lines file in ``stage_dir`` (``nexmark_events``' format)."""
    import nexmark_events as ne

    paths = []
    for n, c in enumerate(plan):
        (path,) = ne.write_json_files(table.slice(c.start, c.stop - c.start), stage_dir, 1, f"part{n:05d}")
        paths.append(path)
    return paths


class Feeder(threading.Thread):
    """Renames the staged files into ``folder`` on their schedule; ``arrived[i]`` is file ``i``'s
    arrival (``time.time()`` after its rename)."""

    def __init__(self, paths: list[Path], plan: list[Chunk], folder: Path):
        super().__init__(daemon=True)
        self.paths, self.plan, self.folder = paths, plan, folder
        self.arrived = [float("nan")] * len(plan)

    def run(self) -> None:
        started = time.perf_counter()
        for n, (path, c) in enumerate(zip(self.paths, self.plan)):
            wait = c.due_s - (time.perf_counter() - started)
            if wait > 0:
                time.sleep(wait)
            os.rename(path, self.folder / path.name)
            self.arrived[n] = time.time()


def _keys(table: pa.Table) -> pd.DataFrame:
    """Each bid's key (``KEY``), in the table's order."""
    return pd.DataFrame(
        {
            "auction": table.column("auction").to_numpy(),
            "bidder": table.column("bidder").to_numpy(),
            "price": table.column("price").to_numpy(),
            "t_ms": table.column("dateTime").cast(pa.int64()).to_numpy(),
        }
    )


def arrivals(table: pa.Table, plan: list[Chunk], arrived: list[float]) -> pd.DataFrame:
    """Each bid's key (``KEY``), its arrival and its due time in the feed (``due_s``)."""
    frame = _keys(table)
    rows = np.array([c.stop - c.start for c in plan])
    frame["arrival"] = np.repeat(np.asarray(arrived, dtype=float), rows)
    frame["due_s"] = np.repeat([c.due_s for c in plan], rows)
    return frame.drop_duplicates(KEY, keep="first")


def latency(arrived: pd.DataFrame, commits: pd.DataFrame, window: tuple[float, float]) -> dict:
    """p50 and p99 seconds from arrival to commit over the bids due within ``window`` (seconds
    after the feed's start) that have a row in every sink; ``commits`` has ``KEY``, ``sink`` and
    ``commit`` (a time), one line per committed row. O(n log n).

    >>> a = pd.DataFrame({"auction": [1, 2, 3], "bidder": 0, "price": 0, "t_ms": [0, 1, 2],
    ...                   "arrival": [10.0, 11.0, 12.0], "due_s": [0.0, 1.0, 2.0]})
    >>> c = pd.DataFrame({"auction": [1, 1, 2, 2], "bidder": 0, "price": 0, "t_ms": [0, 0, 1, 1],
    ...                   "sink": [0, 1, 0, 0], "commit": [10.5, 11.5, 11.25, 19.0]})
    >>> latency(a, c, (0.0, 5.0))
    {'p50': 1.5, 'p99': 1.5, 'measured': 1, 'without_row': 2}
    """
    sinks = commits["sink"].nunique() if len(commits) else 1
    first = commits.groupby([*KEY, "sink"], sort=False)["commit"].min().reset_index()
    per_bid = first.groupby(KEY, sort=False)["commit"].agg(["max", "count"]).reset_index()
    per_bid = per_bid[per_bid["count"] == sinks]
    due = arrived[(arrived["due_s"] >= window[0]) & (arrived["due_s"] < window[1])]
    both = due.merge(per_bid, on=KEY, how="left")
    seconds = (both["max"] - both["arrival"]).dropna().to_numpy()
    if len(seconds) == 0:
        return {"p50": float("nan"), "p99": float("nan"), "measured": 0, "without_row": len(due)}
    p50, p99 = np.percentile(seconds, [50, 99])
    return {
        "p50": float(p50),
        "p99": float(p99),
        "measured": int(len(seconds)),
        "without_row": int(len(due) - len(seconds)),
    }


_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?")


def flink_commits(lines: list[tuple[float, str]]) -> pd.DataFrame:
    """The rows of PyFlink's ``print`` sinks (``sinkN:task> +I[auction, bidder, price, ...]``),
    inserts and the new side of updates only, as ``commits`` for ``latency``.

    >>> flink_commits([(5.0, "sink1:2> +U[1000, 1001, 250, 2024-01-01T00:00, 7.5]"),
    ...                (6.0, "sink1:2> -U[1000, 1001, 250, 2024-01-01T00:00, 7.5]")]).to_dict("records")
    [{'auction': 1000, 'bidder': 1001, 'price': 250, 't_ms': 1704067200000, 'sink': 1, 'commit': 5.0}]
    """
    rows = []
    for stamp, line in lines:
        head, sep, body = line.partition("> ")
        if not sep or not head.startswith("sink") or body[:3] not in ("+I[", "+U["):
            continue
        fields = body[3:].split(", ", 3)
        when = _TIME.search(body)
        rows.append(
            (
                int(fields[0]),
                int(fields[1]),
                int(fields[2]),
                when.group(0),
                int(head[4:].split(":")[0]),
                stamp,
            )
        )
    frame = pd.DataFrame(rows, columns=["auction", "bidder", "price", "when", "sink", "commit"])
    frame["t_ms"] = pd.to_datetime(frame["when"], format="ISO8601").astype("datetime64[ms]").astype(np.int64)
    return frame[[*KEY, "sink", "commit"]]


def spark_commits(batches: list[tuple[int, pa.Table]], checkpoint: Path) -> pd.DataFrame:
    """The rows ``foreachBatch`` saw, each micro-batch's stamped with the modification time of its
    entry in ``checkpoint``'s commit log, as ``commits`` for ``latency``."""
    frames = []
    for batch_id, table in batches:
        entry = checkpoint / "commits" / str(batch_id)
        if table.num_rows == 0 or not entry.exists():
            continue
        frames.append(
            pd.DataFrame(
                {
                    "auction": table.column("auction").to_numpy(),
                    "bidder": table.column("bidder").to_numpy(),
                    "price": table.column("price").to_numpy(),
                    "t_ms": table.column("dateTime")
                    .cast(pa.timestamp("ms", tz="UTC"))
                    .cast(pa.int64())
                    .to_numpy(),
                    "sink": 0,
                    "commit": entry.stat().st_mtime,
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=[*KEY, "sink", "commit"])
    return pd.concat(frames, ignore_index=True)


def read_commits(table: pa.Table, plan: list[Chunk], paths: list[Path], checkpoint: Path) -> pd.DataFrame:
    """Each bid with the commit time of the micro-batch that read its file, as ``commits`` for
    ``latency``: on update, what every bid of a micro-batch changes is in the sink once it commits
    (Spark's update mode writes a key's last row of the micro-batch: a bid overtaken in it by a later
    bid of its key has no row of its own, and counting only the bids with one would count the bids
    that arrived last, which waited least)."""
    when = micro_batch_commits(checkpoint)
    frame = _keys(table)
    rows = np.array([c.stop - c.start for c in plan])
    frame["sink"] = 0
    frame["commit"] = np.repeat([when.get(p.name, np.nan) for p in paths], rows)
    return frame.dropna(subset=["commit"])


def micro_batch_commits(checkpoint: Path) -> dict[str, float]:
    """File name -> the modification time of the commit log entry of the micro-batch that read the
    file. The file source's log in the checkpoint (``sources/0``: after a ``v1`` line, one JSON object
    per file with its ``path`` and ``batchId``; ``N.compact`` holds the batches before) numbers its
    own batches, one per listing that found files; the query's offset log (``offsets/N``: the third
    line, ``{"logOffset": K}``) says up to which of them micro-batch N read. They differ once a
    micro-batch reads no file (Spark runs one when the watermark moves past a stateful operator's
    timeouts or aggregates). O(files + micro-batches)."""
    read = {}
    for log in (checkpoint / "sources" / "0").iterdir():
        if log.name.startswith(".") or log.name.endswith(".crc"):
            continue
        for line in log.read_text().splitlines()[1:]:
            entry = json.loads(line)
            read[entry["path"].rsplit("/", 1)[-1]] = entry["batchId"]
    batches = sorted(int(f.name) for f in (checkpoint / "offsets").iterdir() if f.name.isdigit())
    up_to = [
        json.loads((checkpoint / "offsets" / str(n)).read_text().splitlines()[2])["logOffset"]
        for n in batches
    ]
    commits = {}
    for name, listed in read.items():
        at = int(np.searchsorted(up_to, listed, side="left"))  # the first micro-batch reading that far
        entry = checkpoint / "commits" / str(batches[at]) if at < len(batches) else None
        if entry is not None and entry.exists():
            commits[name] = entry.stat().st_mtime
    return commits


def bids_at(rate: float, seconds: float, seed: int) -> pa.Table:
    """``seconds`` of bids at ``rate`` bids a second, their event times advancing at that rate."""
    import nexmark_events as ne

    event_rate = rate * ne.TOTAL / ne.PROPORTIONS[2]
    return ne.bids(ne.events(int(event_rate * seconds) + ne.TOTAL, seed, rate=event_rate))


def measure_window(seconds: float, warmup_s: float, tail_s: float) -> tuple[float, float]:
    return (warmup_s, max(warmup_s, seconds - tail_s))


def warm_up_bids(table: pa.Table, watermark_s: float) -> pa.Table:
    """The feed's first bid twice under auction and bidder -1 (a key of its own): first ``watermark_s``
    + 2 seconds before the feed's first event time, then at it (no later: the watermark they move
    drops no bid of the feed), so that emit on window close too emits a row for the first.

    >>> at = pa.array([9000, 9500], pa.timestamp("ms"))
    >>> t = pa.table({"auction": [5, 6], "bidder": [7, 8], "dateTime": at})
    >>> [(r["auction"], r["bidder"], r["dateTime"].second) for r in warm_up_bids(t, 4).to_pylist()]
    [(-1, -1, 3), (-1, -1, 9)]
    """
    first = pa.concat_tables([table.slice(0, 1)] * 2)
    for name in ("auction", "bidder"):
        first = first.set_column(first.schema.get_field_index(name), name, pa.array([-1, -1], pa.int64()))
    at = first.column("dateTime")
    unit = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[at.type.unit]
    early = at.cast(pa.int64()).to_numpy() - np.array([int((watermark_s + 2) * unit), 0])
    return first.set_column(
        first.schema.get_field_index("dateTime"), "dateTime", pa.array(early).cast(at.type)
    )


def prepare(run: Path, rate: float, seconds: float, seed: int):
    """A fresh ``run`` folder with the watched ``run/in`` holding the warm-up bids, and the staged
    files: (folder, bids, plan, staged paths)."""
    import nexmark_events as ne
    from nexmark_queries import WATERMARK_S

    shutil.rmtree(run, ignore_errors=True)
    folder = run / "in"
    table = bids_at(rate, seconds, seed)
    ne.write_json_files(warm_up_bids(table, WATERMARK_S), folder, 1, "warmup")
    plan = chunks(table, rate)
    return folder, table, plan, stage(table, plan, run / "stage")


def wait_for(ready, what: str, timeout_s: float = 300) -> None:
    """Waits until ``ready()`` (polled every 0.1 s); RuntimeError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {timeout_s:.0f} s")
        time.sleep(0.1)


def feed(paths: list[Path], plan: list[Chunk], folder: Path, tail_s: float) -> list[float]:
    """Two seconds after the engine started, the files on their schedule, then ``tail_s`` seconds for
    the engine to catch up; the files' arrivals."""
    time.sleep(2)
    feeder = Feeder(paths, plan, folder)
    feeder.start()
    feeder.join()
    time.sleep(tail_s)
    return feeder.arrived


def overwindow_latency(spark, query, emit: str, work: Path, rate: float, seconds: float, seed: int,
                       warmup_s: float, tail_s: float, trigger: str = SPARK_TRIGGER) -> dict:  # fmt: skip
    """One overwindow run of ``query`` in ``emit`` mode fed at ``rate`` bids a second for ``seconds``
    on a processing-time ``trigger`` (see the module's docstring): p50, p99 and the counts."""

    def build(events):
        return overwindow_sql(spark, query, emit)

    timing = (rate, seconds, seed, warmup_s, tail_s, trigger)
    return spark_latency(spark, f"{query.name}-{emit}", build, emit == "on_window_close", work, *timing)


def floor_latency(spark, query, floor: str, work: Path, rate: float, seconds: float, seed: int,
                  warmup_s: float, tail_s: float, trigger: str = SPARK_TRIGGER) -> dict:  # fmt: skip
    """What Spark alone commits the same feed in, as ``overwindow_latency`` measures it (a bid
    commits with the micro-batch that read it): ``floor`` ``"scan"``, the file stream itself (no
    shuffle, no state); ``"hosting"``, its bids grouped by ``KEY_BUCKETS`` buckets of
    ``query.keys`` through an ``applyInPandasWithState`` function that passes them on and keeps a
    count (the hosting every Python operator pays: shuffle, Arrow both ways, the state store);
    ``"map"``, the same shuffle into a stateless ``mapInArrow`` (``map_through``); ``"own"``,
    Spark's own streaming SQL for the query's rows (``query.spark``; no Python)."""

    def build(events):
        return floor_query(spark, query, floor, events)

    timing = (rate, seconds, seed, warmup_s, tail_s, trigger)
    return spark_latency(spark, f"{query.name}-{floor}", build, floor in APPENDED, work, *timing)


def floor_query(spark, query, floor: str, events):
    """Spark alone's ``floor`` over ``events`` (``floor_latency`` says each); the stream's output
    mode is ``append`` for the floors of ``APPENDED``, else ``update``. O(1): builds the plan."""
    if floor == "scan":
        return events
    if floor == "own":
        return spark.sql(query.spark)
    if floor == "map":
        return map_through(events, query.keys, not query.key_buckets)
    return pass_through(events, query.keys, not query.key_buckets)


def overwindow_sql(spark, query, emit: str):
    """``query`` as ``overwindow.sql`` runs it over the view ``bids`` in ``emit`` mode, on the key
    buckets it chooses (16 on 2 shuffle partitions), or ``query.key_buckets`` given."""
    import overwindow

    given = {"keyBuckets": query.key_buckets} if query.key_buckets else {}
    return overwindow.sql(spark, query.overwindow, emit=emit, **given)


def pass_through(events, keys: tuple, chosen: bool):
    """``events`` through ``applyInPandasWithState`` grouped by ``KEY_BUCKETS`` buckets of ``keys``
    as overwindow groups them (``grouping.bucket_grouping``: ``chosen``, or as keyBuckets given),
    each group's rows passed on as they came and their count kept in its state."""
    from nexmark_queries import KEY_BUCKETS
    from pyspark.sql.streaming.state import GroupStateTimeout

    from overwindow.spark.grouping import bucket_grouping, bucket_of

    names = events.columns

    def call(key, frames, state):
        held = state.get[0] if state.exists else 0
        for frame in frames:
            held += len(frame)
            yield frame[names]
        state.update((held,))

    grouped = bucket_grouping(events, bucket_of(keys, KEY_BUCKETS), KEY_BUCKETS, chosen)
    return grouped.applyInPandasWithState(
        call, events.schema, "held long", "update", GroupStateTimeout.NoTimeout
    )


def pass_through_arrow(events, keys: tuple, chosen: bool):
    """``pass_through`` with its rows handed back to Spark as Arrow: each group's rows as Arrow IPC
    streams of at most 5,000 rows, one binary value a stream, through ``applyInPandasWithState``,
    then a ``mapInArrow`` turning each stream back into its rows. It replaces PySpark's
    pandas-to-Arrow output of ``applyInPandasWithState`` and its padding of each output batch's
    states to the batch's rows (one output row a stream, not a row a row) with its own conversion
    of the rows to Arrow, which a hosting whose rows are Arrow already would not pay. O(1): builds
    the plan."""
    import pandas as pd
    import pyarrow as pa
    from nexmark_queries import KEY_BUCKETS
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.streaming.state import GroupStateTimeout

    from overwindow.spark.grouping import bucket_grouping, bucket_of

    names = events.columns
    schema = to_arrow_schema(events.schema, timezone="UTC")

    def call(key, frames, state):
        held = state.get[0] if state.exists else 0
        tables = [pa.Table.from_pandas(frame[names], preserve_index=False) for frame in frames]
        held += sum(t.num_rows for t in tables)
        if tables:
            streams = []
            for batch in pa.concat_tables(tables).cast(schema).to_batches(max_chunksize=5_000):
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, schema) as writer:
                    writer.write_batch(batch)
                streams.append(sink.getvalue().to_pybytes())
            yield pd.DataFrame({"rows": streams})
        state.update((held,))

    def rows(batches):
        for batch in batches:
            for stream in batch.column(0):
                yield from pa.ipc.open_stream(stream.as_buffer())

    grouped = bucket_grouping(events, bucket_of(keys, KEY_BUCKETS), KEY_BUCKETS, chosen)
    streams = grouped.applyInPandasWithState(
        call, "rows binary", "held long", "update", GroupStateTimeout.NoTimeout
    )
    return streams.mapInArrow(rows, events.schema)


def map_through(events, keys: tuple, chosen: bool):
    """``events`` shuffled as ``pass_through`` groups them (the same bucket columns, so each bucket
    lands on the same partition) into a ``mapInArrow`` function passing each Arrow batch on as it
    came: the cheapest Python operator a stream can run after that shuffle (no pandas, no state
    store; what a hosting that kept its state itself would pay at least). O(1): builds the plan."""
    from nexmark_queries import KEY_BUCKETS

    from overwindow.spark.grouping import bucket_grouping, bucket_of

    grouped = bucket_grouping(events, bucket_of(keys, KEY_BUCKETS), KEY_BUCKETS, chosen)._df
    columns = grouping_columns(grouped)

    def call(batches):
        yield from batches

    return grouped.repartition(*columns).drop(*columns).mapInArrow(call, events.schema)


def grouping_columns(df) -> list:
    """The bucket columns overwindow's grouping adds to ``df`` (``grouping.bucket_grouping``): a
    shuffle by them puts each bucket on the partition Spark's grouping would give it. O(columns)."""
    from overwindow.spark.grouping import _BUCKET, _FEW

    return [c for c in (_BUCKET, _FEW) if c in df.columns]


def spark_latency(spark, name: str, build, append: bool, work: Path, rate: float, seconds: float,
                  seed: int, warmup_s: float, tail_s: float, trigger: str) -> dict:  # fmt: skip
    """One Spark run of ``build(events)`` (``events``: the watched folder's bids, watermarked, also
    the view ``bids``) in append mode (``append``: a bid commits with the first micro-batch writing
    its row) or update mode (with the micro-batch that read it), fed at ``rate`` bids a second for
    ``seconds`` on a processing-time ``trigger``: p50, p99, the counts and the micro-batches'
    medians."""
    import nexmark_events as ne
    from nexmark_queries import WATERMARK_S

    run = work / f"lat-{name}"
    folder, table, plan, paths = prepare(run, rate, seconds, seed)
    chk = run / "chk"
    events = (
        spark.readStream.schema(ne.BID_DDL)
        .json(str(folder))
        .withWatermark("dateTime", f"{WATERMARK_S} seconds")
    )
    events.createOrReplaceTempView("bids")
    out = build(events)
    batches = []

    def collect(df, batch_id):
        batches.append((batch_id, df.select(*(c for c in SPARK_KEY if c in df.columns)).toArrow()))

    # every micro-batch's commit log entry kept to the end: its time is the rows' commit (the
    # benchmarks' session keeps the last 5, and older rows would count as never committed)
    retain = spark.conf.get("spark.sql.streaming.minBatchesToRetain")
    spark.conf.set("spark.sql.streaming.minBatchesToRetain", "1000000")
    q = (
        out.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(chk))
        .outputMode("append" if append else "update")
        .trigger(processingTime=trigger)
        .start()
    )
    try:
        # start-up left out: the warm-up bid's micro-batch committed
        wait_for(lambda: any(t.num_rows and (chk / "commits" / str(b)).exists() for b, t in batches),
                 f"{name}: the warm-up bid's row")  # fmt: skip
        arrived = feed(paths, plan, folder, tail_s)
        idle_by = time.monotonic() + 120  # a lagging query catches up: no bid is cut off by stop()
        while time.monotonic() < idle_by and (q.status["isTriggerActive"] or q.status["isDataAvailable"]):
            time.sleep(0.2)
        progress = q.recentProgress
    finally:
        q.stop()
        spark.conf.set("spark.sql.streaming.minBatchesToRetain", retain)
    if q.exception() is not None:
        raise RuntimeError(f"{name}: {q.exception()}")
    rows = sum(t.num_rows for _, t in batches)
    print(f"{name}: {len(batches)} micro-batches, {rows:,} rows", flush=True)
    commits = spark_commits(batches, chk) if append else read_commits(table, plan, paths, chk)
    result = latency(arrivals(table, plan, arrived), commits, measure_window(seconds, warmup_s, tail_s))
    return {
        **result,
        "rate": rate,
        "seconds": seconds,
        "load": os.getloadavg()[0],
        "micro_batch": micro_batch_medians(progress),
    }


def micro_batch_medians(progress: list[dict]) -> dict | None:
    """Where a latency run's micro-batches spent their time: over those that read bids (Spark's
    progress reports, ``recentProgress``), the medians of the bids read, the micro-batch's seconds,
    Spark's ``addBatch`` (running the query's plan: scan, shuffle, the stateful operator, the sink)
    and the stateful operator's own (``allUpdatesTimeMs``, summed over its tasks: the Python calls
    and the state store's updates). None without such a micro-batch. O(micro-batches).

    >>> p = [{"numInputRows": n, "durationMs": {"triggerExecution": t, "addBatch": a},
    ...       "stateOperators": [{"allUpdatesTimeMs": u}]} for n, t, a, u in
    ...      [(0, 90, 10, 0), (100, 1200, 1100, 1500), (300, 1400, 1300, 1900)]]
    >>> micro_batch_medians(p)
    {'bids': 200.0, 's': 1.3, 'add_batch_s': 1.2, 'state_s': 1.7}
    """
    read = [p for p in progress if p["numInputRows"] > 0]
    if not read:
        return None

    def median(values):
        return float(np.median(values))

    return {
        "bids": median([p["numInputRows"] for p in read]),
        "s": median([p["durationMs"].get("triggerExecution", 0) for p in read]) / 1000,
        "add_batch_s": median([p["durationMs"].get("addBatch", 0) for p in read]) / 1000,
        "state_s": median(
            [sum(o.get("allUpdatesTimeMs", 0) for o in p.get("stateOperators") or []) for p in read]
        )
        / 1000,
    }


def flink_latency(flink_python: str, query, work: Path, rate: float, seconds: float, seed: int,
                  warmup_s: float, tail_s: float) -> dict:  # fmt: skip
    """PyFlink's run of ``query`` fed at ``rate`` bids a second (``nexmark_flink.py --latency``)."""
    folder, table, plan, paths = prepare(work / f"lat-flink-{query.name}", rate, seconds, seed)
    script = Path(__file__).with_name("nexmark_flink.py")
    cmd = [flink_python, "-u", str(script), "--latency", str(folder), "--queries", query.name]
    cmd += ["--seconds", str(seconds + tail_s + 60), "--monitor", FLINK_MONITOR]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    lines: list[tuple[float, str]] = []
    ready = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append((time.time(), line.rstrip("\n")))
            if line.startswith("READY"):
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(180):
            raise RuntimeError(f"PyFlink did not start: {lines[-5:]}")
        # start-up left out: the warm-up bid's row printed
        wait_for(lambda: any(line.startswith("sink") for _, line in lines), f"PyFlink {query.name}: a row")
        arrived = feed(paths, plan, folder, tail_s)
    finally:
        proc.terminate()  # the script cancels its job and exits on SIGTERM
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    reader.join(10)
    result = latency(
        arrivals(table, plan, arrived), flink_commits(lines), measure_window(seconds, warmup_s, tail_s)
    )
    return {**result, "rate": rate, "seconds": seconds, "load": os.getloadavg()[0]}
