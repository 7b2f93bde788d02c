"""Recovery by replay: the job runs in a subprocess, is killed with SIGKILL (after a progress line,
i.e. between batches, and in the first case also on a timer, i.e. possibly inside one), restarts
from the same checkpoints, and every view in the sinks (SQLite, and PostgreSQL on a server the tests
start), fed by files or by a Kafka topic on a broker the tests start, finally equals the batch
result over all input: no row lost, none duplicated. Each job runs several views at once (one Spark
start per run for all of them, which keeps the suite's time): the first, all over files into
SQLite, runs window close with a state per key, emit on update with chunked state
(transformWithStateInPandas, RocksDB, watermark eviction) per key and on two key buckets (one group
per bucket keeping each key's index and chunks as entries of its maps: the three keys share the two
buckets), window close on split state on two key buckets (each key's history an entry, a timer
per bucket) and a view of two window groups (one query, two chained stateful operators) in both emit
modes; the second runs window close into PostgreSQL (the default key buckets) beside emit on update
from Kafka with its keys in two buckets (watermark eviction). A job of four views, both emit modes
into SQLite and into PostgreSQL, is killed five times while every view is inside its sink's
transaction."""

import json
import os
import signal
import sqlite3
import time
import uuid
from pathlib import Path

import pytest
from kafka_support import consume
from replay_support import assert_view_is_exact, expected, run_job, write_view

# (name, emit, sink, source, state layout, key buckets: a number, "per key", None (the default) or
# "several": the view is a query of two window groups)
FILES_INTO_SQLITE = [
    ("per_key", "on_window_close", "sqlite", "files", "whole", "per key"),
    ("chunked", "on_update", "sqlite", "files", "chunked", None),
    ("chunked_bucketed", "on_update", "sqlite", "files", "chunked", 2),
    ("split", "on_window_close", "sqlite", "files", "chunked", 2),
    ("several", "on_window_close", "sqlite", "files", "whole", "several"),
    ("several_on_update", "on_update", "sqlite", "files", "whole", "several"),
]
POSTGRES_AND_KAFKA = [
    ("postgres", "on_window_close", "postgres", "files", "whole", None),
    ("kafka", "on_update", "sqlite", "kafka", "whole", 2),
]


@pytest.mark.parametrize(
    "views", [FILES_INTO_SQLITE, POSTGRES_AND_KAFKA], ids=["files-sqlite", "postgres-kafka"]
)
def test_killed_and_restarted_job_leaves_the_exact_views(tmp_path, no_spark, views, request):
    written, env = [], {}
    if any(sink == "postgres" for _, _, sink, *_ in views):
        env["OVERWINDOW_POSTGRES_DSN"] = request.getfixturevalue("postgres_dsn")
        _fresh_tables(env["OVERWINDOW_POSTGRES_DSN"])
    for name, emit, sink, source, layout, buckets in views:
        folder = tmp_path / name
        folder.mkdir()
        several = buckets == "several"
        kafka = request.getfixturevalue("kafka_bootstrap") if source == "kafka" else None
        view, rows = write_view(
            folder,
            emit,
            sink,
            kafka,
            layout,
            buckets=None if several else buckets,
            several=several,
            name=name,
        )
        written.append((view, rows, folder, emit, sink, several))
    files = [view for view, *_ in written]
    assert run_job(files, kill_after_line=2 * len(files), env=env) == -signal.SIGKILL  # between batches
    if views is FILES_INTO_SQLITE:  # a Spark start each
        run_job(files, kill_after_s=25, env=env)  # on a timer: inside a batch if one is still running
    assert run_job(files, env=env) == 0  # to the end
    for _, rows, folder, emit, sink, several in written:
        assert_view_is_exact(folder, rows, emit, sink, env.get("OVERWINDOW_POSTGRES_DSN"), several)


SINKS_AND_MODES = [
    (emit, sink) for emit in ("on_window_close", "on_update") for sink in ("sqlite", "postgres")
]
KILLS = 5
# the test's own objects in the views' databases: what keeps a job inside its sink's transaction
SLOW, SLEEP = "overwindow_test_slow", "overwindow_test_sleep"


def test_a_job_killed_inside_its_sinks_transactions_leaves_the_exact_views(tmp_path, no_spark, postgres_dsn):
    """Issue 40, "Must show": one job of four views (both emit modes, into SQLite and into
    PostgreSQL) is killed with SIGKILL five times while every view is inside its sink's transaction,
    then runs to the end: every table equals the batch evaluator over all input. In each run, once
    each view has applied a batch, the test makes the commit of the next one wait: a trigger on the
    sinks' bookkeeping (written last in the transaction, after the rows) counts a large cross join
    (SQLite: the job holds the database's write lock meanwhile) or sleeps (PostgreSQL: its backend
    waits in pg_sleep). When all four wait, the job is killed; then no view's bookkeeping moved
    (the batches in flight did not commit), and the next run starts without the triggers. Emit on
    update reads events in random time order, so its batches update rows the tables hold."""
    import psycopg

    env = {"OVERWINDOW_POSTGRES_DSN": postgres_dsn}
    _fresh_tables(postgres_dsn)
    views = {}
    for emit, sink in SINKS_AND_MODES:
        folder = tmp_path / f"{emit}-{sink}"
        folder.mkdir()
        view, rows = write_view(
            folder, emit, sink, shuffled=emit == "on_update", name=f"{emit}-{sink}", files=12
        )
        views[emit, sink] = (view, rows, folder)
    files = [view for view, _, _ in views.values()]
    for kill in range(KILLS):
        engaged, inside, applied = [], {}, {}

        def all_inside(lines):
            if not engaged:  # every view has applied a batch in this run: make the next one wait
                if not all(any(f"{emit}-{sink}.toml" in line for line in lines) for emit, sink in views):
                    return False
                _slow_commits(views, postgres_dsn)
                engaged.append(True)
            now = time.time()
            for (emit, sink), (_, _, folder) in views.items():
                if sink == "sqlite" and _write_locked(folder / "view.sqlite"):
                    inside.setdefault(emit, now)  # held since then
                elif sink == "sqlite":
                    inside.pop(emit, None)
            with psycopg.connect(postgres_dsn, autocommit=True) as watch:
                sleeping = watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
                ).fetchone()[0]
            # a lock held a second is the trigger's (the sink's other writes take milliseconds)
            waiting = sleeping == 2 and all(
                now - inside.get(emit, now) >= 1.0 for emit in ("on_window_close", "on_update")
            )
            if waiting:
                applied.update(_applied(views, postgres_dsn))
            return waiting

        assert run_job(files, kill_when=all_inside, env=env) == -signal.SIGKILL, f"kill {kill + 1}"
        with psycopg.connect(postgres_dsn, autocommit=True) as db:  # the killed job's backends
            db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")
        assert _applied(views, postgres_dsn) == applied, f"kill {kill + 1}: a batch in flight committed"
        _fast_commits(views, postgres_dsn)
    assert run_job(files, env=env) == 0
    for (emit, sink), (_, rows, folder) in views.items():
        assert_view_is_exact(folder, rows, emit, sink, postgres_dsn)


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


def _slow_commits(views, dsn) -> None:
    """Triggers on the sinks' bookkeeping that keep each transaction open before it commits."""
    import psycopg

    for (_, sink), (_, _, folder) in views.items():
        if sink != "sqlite":
            continue
        with sqlite3.connect(folder / "view.sqlite", timeout=120) as con:
            con.execute(f"CREATE TABLE IF NOT EXISTS {SLOW} (x INTEGER)")
            if not con.execute(f"SELECT count(*) FROM {SLOW}").fetchone()[0]:
                con.executemany(f"INSERT INTO {SLOW} VALUES (?)", [(i,) for i in range(800)])
            for event in ("INSERT", "UPDATE"):
                con.execute(
                    f'CREATE TRIGGER IF NOT EXISTS {SLOW}_{event} AFTER {event} ON "_overwindow_batches" '
                    f"BEGIN SELECT count(*) FROM {SLOW} a, {SLOW} b, {SLOW} c; END"
                )
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(
            f"CREATE OR REPLACE FUNCTION {SLEEP}() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_sleep(300); RETURN NEW; END $$"
        )
        db.execute(f'DROP TRIGGER IF EXISTS {SLEEP} ON "_overwindow_batches"')
        db.execute(
            f'CREATE TRIGGER {SLEEP} AFTER INSERT OR UPDATE ON "_overwindow_batches" '
            f"FOR EACH ROW EXECUTE FUNCTION {SLEEP}()"
        )


def _fast_commits(views, dsn) -> None:
    """The triggers of ``_slow_commits`` dropped."""
    import psycopg

    for (_, sink), (_, _, folder) in views.items():
        if sink == "sqlite":
            with sqlite3.connect(folder / "view.sqlite", timeout=120) as con:
                for event in ("INSERT", "UPDATE"):
                    con.execute(f"DROP TRIGGER IF EXISTS {SLOW}_{event}")
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(f'DROP TRIGGER IF EXISTS {SLEEP} ON "_overwindow_batches"')


def _applied(views, dsn) -> dict:
    """(emit, sink) -> the last batch the view's bookkeeping says was applied (committed)."""
    import psycopg

    found = {}
    for (emit, sink), (_, _, folder) in views.items():
        query = 'SELECT batch_id FROM "_overwindow_batches" WHERE view = '
        if sink == "sqlite":
            with sqlite3.connect(folder / "view.sqlite", timeout=120) as con:
                found[emit, sink] = con.execute(query + "?", (f"v_{emit}",)).fetchone()[0]
        else:
            with psycopg.connect(dsn, autocommit=True) as db:
                found[emit, sink] = db.execute(query + "%s", (f"v_{emit}",)).fetchone()[0]
    return found


def _fresh_tables(dsn: str) -> None:
    """The session's PostgreSQL server without the views' tables and bookkeeping of earlier tests: a
    new checkpoint over a table another query wrote is refused (the sink's checkpoint pairing)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        for table in ("v_on_update", "v_on_window_close", "_overwindow_batches"):
            db.execute(f'DROP TABLE IF EXISTS "{table}"')


# the views of the table-format and changelog test: (sink, emit); its labels in tests/sink_pauses.py
SINK_VIEWS = [
    (sink, emit) for sink in ("delta", "iceberg", "kafka") for emit in ("on_window_close", "on_update")
]
STAGES = ("before", "after", "inside")  # where tests/sink_pauses.py stops a view's second apply
# the batch each sink's bookkeeping may hold when the job is killed with batch b stopped there: Delta
# kills itself inside delta-rs's write and commit (one call), the others stop in the commit
ALLOWED = {
    "before": lambda sink, b: {b - 1},
    "after": lambda sink, b: {b},
    "inside": lambda sink, b: {b - 1, b} if sink == "delta" else {b - 1},
}


def test_a_job_killed_around_and_inside_each_sinks_commit_leaves_the_exact_tables(
    tmp_path, no_spark, kafka_bootstrap
):
    """Issue 41, "Must show": one job of six views, Delta Lake, Iceberg and a Kafka changelog, each
    on window close and on update, is killed with SIGKILL five times, then runs to the end; each
    table, read back with an independent reader (deltalake's, pyiceberg's scan of a catalog of its
    own, a read_committed consumer replaying the topic by key), equals the batch evaluator over all
    input: no row lost, none twice. The on-update views read Debezium change events whose updates
    move rows between partitions (NULL included) and in time, so batches change and move rows the
    tables hold (the changelog keyed by the row key alone). In each run every view applies one batch
    (or skips the one it had applied), and its next one is stopped (tests/sink_pauses.py; the stage
    turns from view to view and run to run, so each view is stopped at each stage): before it
    writes, once its commit is in the table but not in Spark's checkpoint (the next run replays the
    batch and must skip it), or inside its commit (Kafka: the batch's records on the broker in an
    open transaction; Iceberg: the snapshot's files written, the catalog not moved; Delta: the job
    kills itself 0 to 60 ms into delta-rs's write). Each kill checks the batch each sink's own
    bookkeeping holds against the stage."""
    from overwindow.pipeline.delta import DeltaSink
    from overwindow.pipeline.iceberg import IcebergSink
    from overwindow.pipeline.kafka_sink import KafkaSink

    run = uuid.uuid4().hex[:8]  # the broker lives as long as the session
    views, labels = {}, {}
    for sink, emit in SINK_VIEWS:
        folder = tmp_path / f"{sink}-{emit}"
        folder.mkdir()
        topic, format = f"{sink}-{emit}-{run}", "upsert" if emit == "on_update" else "debezium"
        where = {
            "kafka": f'bootstrap_servers = "{kafka_bootstrap}"\ntopic = "{topic}"\nformat = "{format}"',
        }.get(sink)
        view, rows = write_view(
            folder, emit, sink, name=f"{sink}-{emit}", files=9, sink_where=where, changes=emit == "on_update"
        )
        bookkeeping = {
            "delta": lambda folder=folder: DeltaSink(str(folder / "view.delta"), ["id"], False),
            "iceberg": lambda folder=folder: IcebergSink(
                str(folder / "catalog.db"), str(folder / "warehouse"), "db.v", ["id"], False
            ),
            "kafka": lambda topic=topic, emit=emit, format=format: KafkaSink(
                {"bootstrap.servers": kafka_bootstrap}, topic, ["id"], emit == "on_update", "v", format
            ),
        }[sink]
        views[sink, emit] = (view, rows, folder, topic, format, bookkeeping)
        labels[sink, emit] = topic if sink == "kafka" else folder.name
    files = [view for view, *_ in views.values()]
    launcher = Path(__file__).with_name("sink_pauses.py")
    start = time.time()
    for kill in range(KILLS):
        stages = {key: STAGES[(kill + v) % len(STAGES)] for v, key in enumerate(views)}
        paused = tmp_path / f"paused-{kill}"
        paused.mkdir()
        env = {
            "SINK_PAUSES": json.dumps({labels[key]: stages[key] for key in views}),
            "SINK_PAUSED": str(paused),
        }
        self_killed = any(stage == "inside" and sink == "delta" for (sink, _), stage in stages.items())

        def all_stopped(lines):
            return not self_killed and len(os.listdir(paused)) == len(views)

        assert run_job(files, kill_when=all_stopped, env=env, launcher=launcher) == -signal.SIGKILL, (
            f"kill {kill + 1}"
        )
        stopped = dict(name.rsplit("-", 1) for name in os.listdir(paused))
        for key, (*_, bookkeeping) in views.items():
            batch = int(stopped[labels[key]])  # every view was stopped
            kept = bookkeeping().bookkeeping().applied.batch_id
            print(f"kill {kill + 1}, {time.time() - start:.0f} s: {key} {stages[key]} {batch}: holds {kept}")
            assert kept in ALLOWED[stages[key]](key[0], batch), (kill + 1, key, stages[key], batch, kept)
    assert run_job(files) == 0
    for (sink, emit), (_, rows, folder, topic, format, _) in views.items():
        got = _read_back(sink, folder, kafka_bootstrap, topic, format)
        want = expected(rows, emit)
        ks = {r["id"]: r["k"] for r in rows}
        assert set(got) == set(want), (sink, emit)
        for i, (s, p) in want.items():
            assert got[i] == (ks[i], pytest.approx(s), p), (sink, emit, i)


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
