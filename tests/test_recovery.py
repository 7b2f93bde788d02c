"""Recovery by replay: a job of several views runs in a subprocess (one Spark start per run for all
of them, which keeps the suite's time), is killed with SIGKILL again and again, mostly once every
view has stopped at a stage of its sink's commit (tests/sink_pauses.py): before its sink writes,
after its commit (the next run replays the batch and must skip it) or inside it; it restarts from
the same checkpoints each time, then runs to the end, and every view's table equals the batch result
over all input, read back by a reader of its own: no row lost, none duplicated. The job holds both
emit modes into each sink, SQLite, PostgreSQL (on a server the tests start), Delta Lake, Iceberg
and a Kafka changelog (on a broker the tests start), each view on a state layout and key buckets
of its own (over files, and a Kafka topic)."""

import json
import os
import signal
import sqlite3
import time
import uuid
from pathlib import Path
from typing import NamedTuple

import pytest
from kafka_support import consume
from replay_support import assert_view_is_exact, expected, run_job, write_view

# the views, each sink kind in both emit modes, each with a state layout of its own: (sink, emit,
# state layout, key buckets: a number, "per key", None (the default) or "several": the view is a
# query of two window groups; source). Tables (SQLite, PostgreSQL) on update read events in random
# time order, the other sinks on update Debezium change events. One job of ten views, not a job of
# the seven layouts into SQLite beside the ten sinks': each run's work a third less
VIEWS = [
    ("sqlite", "on_window_close", "whole", "per key", "files"),
    ("sqlite", "on_update", "whole", 2, "kafka"),
    ("postgres", "on_window_close", "chunked", 2, "files"),  # split: each key's history an entry
    ("postgres", "on_update", "chunked", 2, "files"),
    ("delta", "on_window_close", "whole", "several", "files"),
    ("delta", "on_update", "whole", "several", "files"),
    ("iceberg", "on_window_close", "whole", None, "files"),
    ("iceberg", "on_update", "chunked", None, "files"),
    ("kafka", "on_window_close", "whole", None, "files"),
    ("kafka", "on_update", "whole", None, "files"),
]
STAGES = ("before", "after", "inside")  # where tests/sink_pauses.py stops a view's second apply
# the job's kills: the stages the views are stopped at, turning from view to view and run to run
# (so each view is stopped at each), or None: killed wherever they are. One job of all the views:
# as two jobs (the state layouts', then the sinks' without the last kill) the test took 473 s of
# the suite's Spark lane, as one 367 s (five Spark starts, not nine)
KILLS = [STAGES] * 3 + [None]
# the batch a sink's bookkeeping may hold when the job is killed with batch b stopped there: Delta
# kills itself inside delta-rs's write and commit (one call), the others stop in the commit
ALLOWED = {
    "before": lambda sink, b: {b - 1},
    "after": lambda sink, b: {b},
    "inside": lambda sink, b: {b - 1, b} if sink == "delta" else {b - 1},
}


def test_a_job_killed_around_and_inside_each_sinks_commit_leaves_the_exact_views(
    tmp_path, no_spark, postgres_dsn, kafka_bootstrap
):
    """Issues 40 and 41, "Must show": a job of several views is killed with SIGKILL again and again,
    then runs to the end; each table, read back with an independent reader (SQLite's, PostgreSQL's,
    deltalake's, pyiceberg's scan of a catalog of its own, a read_committed consumer replaying the
    topic by key), equals the batch evaluator over all input: no row lost, none twice.

    The views: both emit modes into each sink, SQLite, PostgreSQL, Delta Lake, Iceberg and a Kafka
    changelog, each on a state layout of its own (VIEWS): window close with a state per key, on
    split state on two key buckets (each key's history an entry, a timer per bucket) and on a
    bucket's whole state; emit on update with chunked state (transformWithStateInPandas, RocksDB)
    per key and on two key buckets (one group per bucket keeping each key's index and chunks as
    entries of its maps: the three keys share the two buckets), and with a bucket's whole state,
    from files and from a Kafka topic; and a view of two window groups (one query, two chained
    stateful operators) in both emit modes. The SQLite and PostgreSQL views on update read events in
    random time order, the other views on update Debezium change events whose updates move rows
    between partitions (NULL included) and in time, so batches change and move rows the tables hold
    (the changelog keyed by the row key alone).

    In each run every view applies one batch (or skips the one it had applied), and its next one is
    stopped (tests/sink_pauses.py; the stage turns from view to view and run to run, so each view
    is stopped at each stage): before it writes, once its commit is in the table but not in Spark's
    checkpoint (the next run replays the batch and must skip it), or inside its commit (SQLite and
    PostgreSQL: the rows and the bookkeeping written, the transaction open, which the test sees
    from outside: the database's write lock held, the server's backend idle in a transaction; Kafka:
    the batch's records on the broker in an open transaction; Iceberg: the snapshot's files written,
    the catalog not moved; Delta: the job kills itself 0 to 60 ms into delta-rs's write). Then the
    job is killed, and the batch each sink's own bookkeeping holds is checked against the stage. The
    job is killed three times so, then once more wherever its views are (between or inside
    micro-batches), after two progress lines a view."""
    _fresh_tables(postgres_dsn)
    views = _views(tmp_path, kafka_bootstrap)
    files = [v.view for v in views.values()]
    launcher = Path(__file__).with_name("sink_pauses.py")
    dsn = {"OVERWINDOW_POSTGRES_DSN": postgres_dsn}
    start = time.time()
    for kill, at in enumerate(KILLS):
        stages = {label: at[(kill + i) % len(at)] for i, label in enumerate(views)} if at else {}
        paused = tmp_path / f"paused-{kill}"
        paused.mkdir()
        env = dict(dsn, SINK_PAUSES=json.dumps(stages), SINK_PAUSED=str(paused))
        self_killed = any(
            stage == "inside" and views[label].sink == "delta" for label, stage in stages.items()
        )
        held = []  # the open transactions seen from outside, once every view has stopped

        def all_stopped(lines):
            if not stages:  # killed wherever the views are
                return len(lines) >= 2 * len(views)
            if len(os.listdir(paused)) < len(stages):
                return False
            if not held:
                held.append(_transactions_held(views, stages, postgres_dsn))
                (tmp_path / f"paused-{kill}.go").touch()  # Delta inside: the job kills itself now
            return not self_killed

        assert run_job(files, kill_when=all_stopped, env=env, launcher=launcher) == -signal.SIGKILL, (
            f"kill {kill + 1}"
        )
        assert not stages or (held and all(held[0].values())), (kill + 1, held)
        stopped = dict(name.rsplit("-", 1) for name in os.listdir(paused))
        for label, stage in stages.items():
            batch = int(stopped[label])  # every view was stopped
            kept = _bookkeeping(views[label], postgres_dsn, kafka_bootstrap).applied.batch_id
            print(f"kill {kill + 1}, {time.time() - start:.0f} s: {label} {stage} {batch}: holds {kept}")
            assert kept in ALLOWED[stage](views[label].sink, batch), (kill + 1, label, stage, batch, kept)
    assert run_job(files, env=dsn) == 0
    for v in views.values():
        if v.sink in ("sqlite", "postgres"):
            assert_view_is_exact(v.folder, v.rows, v.emit, v.sink, postgres_dsn, v.several)
            continue
        got = _read_back(v.sink, v.folder, kafka_bootstrap, v.topic, v.format)
        want = expected(v.rows, v.emit, v.several)
        ks = {r["id"]: r["k"] for r in v.rows}
        assert set(got) == set(want), (v.sink, v.emit)
        for i, (s, p) in want.items():
            assert got[i] == (ks[i], pytest.approx(s), p), (v.sink, v.emit, i)


def _views(tmp_path, bootstrap) -> dict:
    """label (tests/sink_pauses.py) -> Killed: the VIEWS."""
    run = uuid.uuid4().hex[:8]  # the broker lives as long as the session
    views = {}
    for sink, emit, layout, buckets, source in VIEWS:
        folder = tmp_path / f"{sink}-{emit}"
        folder.mkdir()
        topic, format = f"{sink}-{emit}-{run}", "upsert" if emit == "on_update" else "debezium"
        tables = sink in ("sqlite", "postgres")
        where = f'bootstrap_servers = "{bootstrap}"\ntopic = "{topic}"\nformat = "{format}"'
        several = buckets == "several"
        view, rows = write_view(
            folder,
            emit,
            sink,
            bootstrap if source == "kafka" else None,
            layout,
            name=f"{sink}-{emit}",
            buckets=None if several else buckets,
            several=several,
            # input past the fifth stop: a Delta view killed inside its commit is a batch ahead when
            # its checkpoint committed the batch before the kill
            files=9,
            shuffled=tables and emit == "on_update",
            changes=not tables and emit == "on_update",
            sink_where=where if sink == "kafka" else None,
        )
        label = {"kafka": topic, "postgres": f"v_{emit}"}.get(sink, folder.name)
        views[label] = Killed(view, rows, folder, sink, emit, several, topic, format)
    return views


class Killed(NamedTuple):
    """A view of the job: its file, the input it reads, its folder, sink kind and emit mode;
    ``several``: a query of two window groups; ``topic`` and ``format``: its changelog (Kafka sink)."""

    view: Path
    rows: list
    folder: Path
    sink: str
    emit: str
    several: bool = False
    topic: str | None = None
    format: str | None = None


def _bookkeeping(v: Killed, dsn: str, bootstrap: str):
    """What the view's sink's own bookkeeping says (the batch it holds as applied)."""
    from overwindow.pipeline.delta import DeltaSink
    from overwindow.pipeline.iceberg import IcebergSink
    from overwindow.pipeline.kafka_sink import KafkaSink
    from overwindow.pipeline.sinks import PostgresSink, SqliteSink

    upsert = v.emit == "on_update"
    sink = {
        "sqlite": lambda: SqliteSink(str(v.folder / "view.sqlite"), f"v_{v.emit}", ["id"], upsert),
        "postgres": lambda: PostgresSink(dsn, f"v_{v.emit}", ["id"], upsert),
        "delta": lambda: DeltaSink(str(v.folder / "view.delta"), ["id"], False),
        "iceberg": lambda: IcebergSink(
            str(v.folder / "catalog.db"), str(v.folder / "warehouse"), "db.v", ["id"], False
        ),
        "kafka": lambda: KafkaSink({"bootstrap.servers": bootstrap}, v.topic, ["id"], upsert, "v", v.format),
    }[v.sink]()
    return sink.bookkeeping()


def _transactions_held(views, stages, dsn) -> dict:
    """label -> whether the transaction of the SQLite and PostgreSQL views stopped inside their
    commit is open, seen from outside: the SQLite database's write lock held; as many PostgreSQL
    backends idle in a transaction as views stopped there."""
    import psycopg

    inside = [label for label, stage in stages.items() if stage == "inside"]
    held = {
        label: _write_locked(views[label][2] / "view.sqlite")
        for label in inside
        if views[label][3] == "sqlite"
    }
    on_server = [label for label in inside if views[label][3] == "postgres"]
    with psycopg.connect(dsn, autocommit=True) as db:
        idle = db.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'")
        held["postgres"] = idle.fetchone()[0] == len(on_server)
    return held


def _write_locked(db) -> bool:
    """Whether another connection holds the SQLite database's write lock (a transaction is open)."""
    con = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        con.close()


def _fresh_tables(dsn: str) -> None:
    """The session's PostgreSQL server without the views' tables and bookkeeping of earlier tests: a
    new checkpoint over a table another query wrote is refused (the sink's checkpoint pairing)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        for table in ("v_on_update", "v_on_window_close", "_overwindow_batches"):
            db.execute(f'DROP TABLE IF EXISTS "{table}"')


def _read_back(sink, folder, bootstrap, topic, format) -> dict:
    """id -> (k, s, p) as the table holds it, read by a reader of the format's own: deltalake's,
    pyiceberg's scan through a catalog of its own, a read_committed consumer applying the topic by
    key (upsert: a tombstone deletes; Debezium: an event's after image, or its delete)."""
    if sink == "kafka":
        rows = {}
        for key, value in consume(bootstrap, topic):
            if value is None:  # a tombstone: the upsert format's delete, or after Debezium's
                if format == "upsert":
                    rows.pop(key, None)
                continue
            row = json.loads(value)["after"] if format == "debezium" else json.loads(value)
            if row is None:
                rows.pop(key, None)
            else:
                rows[key] = row
        return {r["id"]: (r["k"], r["s"], r["p"]) for r in rows.values()}
    if sink == "delta":
        import deltalake

        table = deltalake.DeltaTable(str(folder / "view.delta")).to_pyarrow_table()
    else:
        from pyiceberg.catalog.sql import SqlCatalog

        catalog = SqlCatalog("overwindow", uri=f"sqlite:///{folder / 'catalog.db'}", warehouse="file:///")
        table = catalog.load_table("db.v").scan().to_arrow()
    got = {i: (k, s, p) for k, i, s, p in zip(*(table.column(c).to_pylist() for c in ("k", "id", "s", "p")))}
    assert len(got) == table.num_rows, f"{sink}: a row twice"
    return got
