"""Running a view file as the user does (``overwindow run VIEW --once`` in a subprocess) over a
known stream of events, and the batch evaluator's answer for it: shared by the recovery and cluster
tests."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from cdc_history import debezium, history, live_rows
from kafka_support import produce

import overwindow

CALLS = [
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
    "lag(x) OVER (ORDER BY ts) AS p",
]
# the same calls as a query of two window groups: s per key, p over every key's rows
SEVERAL = (
    f"SELECT k, id, ts, x, {CALLS[0].replace('OVER (', 'OVER (PARTITION BY k ')}, {CALLS[1]} FROM source"
)


def write_view(
    tmp_path,
    emit,
    sink="sqlite",
    kafka=None,
    layout="whole",
    shuffled=False,
    buckets=None,
    several=False,
    name="view",
    files=6,
    sink_where=None,
    changes=False,
):
    """Six (``files``) batches of 40 events, as JSON files, or (``kafka`` = bootstrap address) as
    records of a one-partition topic read 40 per micro-batch; returns the view file and the events.
    ``layout``: the state layout of emit on update; ``buckets``: key_buckets (a number or "per key"; None: the
    default). ``shuffled`` (emit on update): event times in random order across the
    batches (so a batch changes rows the sink holds) and no watermark (none is late). ``several``:
    the view is the query ``SEVERAL`` (two window groups, one streaming query). ``name``: the view
    file's name (``<name>.toml``: a job of several views names each by it). ``sink_where``: the
    [sink] keys besides kind and checkpoint (default: the SQLite file and table, or the Delta folder).
    ``changes`` (emit on update): the files hold Debezium change events instead (15 a file, over a
    few ids: cdc_history.history, whose updates move rows between partitions, NULL included, and in
    time; an id changes once a file at most; no watermark); returns the rows they leave instead of
    the events."""
    rng = np.random.default_rng(21)
    n = 40 * files
    if changes:
        moves = history(21, 15 * files, (None, 0, 1, 2), "2024-01-01T00:00:{:02d}".format, once_in=15)
        events = debezium(moves, rng)
        batches = [events[f * 15 : (f + 1) * 15] for f in range(files)]
    else:
        seconds = rng.permutation(n) if shuffled else np.arange(n)
        batches = [
            [
                {
                    "k": int(rng.integers(0, 3)),
                    "id": f * 100 + i,
                    "ts": f"2024-01-01T00:{seconds[f * 40 + i] // 40:02d}:{seconds[f * 40 + i] % 40:02d}",
                    "x": float(rng.integers(0, 50)),
                }
                for i in range(40)
            ]
            for f in range(files)
        ]
    if kafka is None:
        events = tmp_path / "events"
        events.mkdir()
        for f, batch in enumerate(batches):
            (events / f"f{f}.json").write_text("".join(json.dumps(r) + "\n" for r in batch))
            os.utime(events / f"f{f}.json", (1_000 + f, 1_000 + f))
        source = 'format = "files"\npath = "events"\nmax_files_per_trigger = 1'
        source += '\nenvelope = "debezium"' if changes else ""
    else:
        topic = f"recovery-{emit}-{sink}"
        produce(
            kafka, topic, [(str(r["k"]).encode(), json.dumps(r).encode()) for batch in batches for r in batch]
        )
        source = (
            f'format = "kafka"\nbootstrap_servers = "{kafka}"\ntopic = "{topic}"\n'
            'starting_offsets = "earliest"\nmax_offsets_per_trigger = 40'
        )
    view = tmp_path / f"{name}.toml"
    view.write_text(
        textwrap.dedent("""
        [source]
        {source}
        schema = "k INT, id BIGINT, ts TIMESTAMP, x DOUBLE"

        {watermark}

        [view]
        {windows}
        emit = "{emit}"
        row_key = ["id"]
        state_layout = "{layout}"
        {buckets}

        [sink]
        kind = "{sink}"
        {where}
        checkpoint = "chk"
    """).format(
            source=source,
            windows=f"query = {json.dumps(SEVERAL)}"
            if several
            else f'partition_by = ["k"]\n        calls = {json.dumps(CALLS)}',
            emit=emit,
            sink=sink,
            where=sink_where
            if sink_where is not None
            else {
                "delta": 'path = "view.delta"',
                "iceberg": 'catalog = "catalog.db"\n        warehouse = "warehouse"\n        table = "db.v"',
            }.get(sink, f'path = "view.sqlite"\n        table = "v_{emit}"'),
            layout=layout,
            buckets=f"key_buckets = {json.dumps(buckets)}" if buckets else "",
            watermark="" if shuffled or changes else '[watermark]\ncolumn = "ts"\ndelay = "5 seconds"',
        )
    )
    if changes:
        return view, [{c: r[c] for c in ("k", "id", "ts", "x")} for r in live_rows(moves).values()]
    return view, [r for batch in batches for r in batch]


def _progress(line: str) -> bool:
    """A progress line (``batch N: ...``, ``<view>: batch N: ...`` in a job of several views)."""
    return re.match(r"(.+: )?batch \d+:", line) is not None


def run_job(
    view, kill_after_line=None, kill_after_s=None, after_line=None, env=None, kill_when=None, launcher=None
):
    """Runs the view (a list: the views, in one job) with ``--once``; SIGKILLs the job after its n-th
    progress line (between batches),
    after some seconds (possibly inside a batch) or once ``kill_when(lines)`` (polled with the
    progress lines so far) is true; ``after_line(n)`` is called after each progress line. Returns
    the exit code; the job's stderr is printed when it fails (pytest shows it with the failure).
    ``launcher``: a Python script that runs the command line as ``python -m overwindow`` would."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", **(env or {}))
    stderr = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            *([str(launcher)] if launcher else ["-m", "overwindow"]),
            "run",
            *map(str, view if isinstance(view, list) else [view]),
            "--once",
            "--debug",  # on a failure its stderr ends with the whole trace
        ],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
    )
    start = time.time()
    if kill_when is not None:
        lines = []
        reader = threading.Thread(
            target=lambda: lines.extend(line for line in proc.stdout if _progress(line))
        )
        reader.start()
        while proc.poll() is None and not kill_when(lines):
            time.sleep(0.05)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        reader.join()
    elif kill_after_s is None:
        lines = 0
        for line in proc.stdout:
            if _progress(line):
                lines += 1
                if after_line is not None:
                    after_line(lines)
                if lines == kill_after_line:
                    proc.send_signal(signal.SIGKILL)
                    break
    else:
        while proc.poll() is None and time.time() - start < kill_after_s:
            time.sleep(0.2)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=600)
    if proc.returncode not in (0, -signal.SIGKILL):
        stderr.seek(0)
        print(f"the job exited with {proc.returncode}; its stderr ends:\n{stderr.read()[-60000:]}")
    stderr.close()
    return proc.returncode


def expected(rows, emit, several=False):
    table = pa.Table.from_pylist(rows)
    table = table.set_column(2, "ts", table["ts"].cast(pa.timestamp("us")))
    spec = overwindow.OverWindow(*CALLS, emit=emit, rowKey="id")
    calls = spec.partitioned(("k",))
    if several:  # p over every key's rows
        calls[1] = overwindow.OverWindow(CALLS[1], emit=emit, rowKey="id").partitioned(())[0]
    batch = overwindow.evaluate(table.sort_by([("ts", "ascending"), ("id", "ascending")]), *calls)
    out = {r["id"]: (r["s"], r["p"]) for r in batch.to_pylist()}
    if emit == "on_window_close":  # closed: at or below the final watermark (last time - 5 s)
        last = max(table["ts"].cast(pa.int64()).to_pylist())
        keep = {r["id"] for r in table.to_pylist() if int(r["ts"].timestamp() * 1e6) <= last - 5_000_000}
        out = {k: v for k, v in out.items() if k in keep}
    return out


def assert_view_is_exact(tmp_path, rows, emit, sink, dsn=None, several=False):
    """The sink's table equals the batch evaluator over ``rows``: no row lost, none duplicated."""
    if sink == "sqlite":
        con = sqlite3.connect(tmp_path / "view.sqlite")
        got = {i: (s, p) for i, s, p in con.execute(f'SELECT id, s, p FROM "v_{emit}"')}
    elif sink == "delta":  # read by deltalake's own reader
        import deltalake

        table = deltalake.DeltaTable(str(tmp_path / "view.delta")).to_pyarrow_table()
        assert table.num_rows == len(set(table.column("id").to_pylist())), "a row twice"
        got = {i: (s, p) for i, s, p in zip(*(table.column(c).to_pylist() for c in ("id", "s", "p")))}
    elif sink == "iceberg":  # read by a catalog of its own
        from pyiceberg.catalog.sql import SqlCatalog

        catalog = SqlCatalog("overwindow", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse="file:///")
        table = catalog.load_table("db.v").scan().to_arrow()
        assert table.num_rows == len(set(table.column("id").to_pylist())), "a row twice"
        got = {i: (s, p) for i, s, p in zip(*(table.column(c).to_pylist() for c in ("id", "s", "p")))}
    else:
        import psycopg

        with psycopg.connect(dsn) as con:
            got = {i: (s, p) for i, s, p in con.execute(f'SELECT id, s, p FROM "v_{emit}"').fetchall()}
    want = expected(rows, emit, several)
    assert set(got) == set(want)
    for i, (s, p) in want.items():
        assert got[i][0] == pytest.approx(s) and (got[i][1] == p or (got[i][1] is None and p is None))
