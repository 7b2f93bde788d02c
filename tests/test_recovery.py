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
from Kafka with its keys in two buckets (watermark eviction). Emit on update into PostgreSQL (files,
a state per key) is killed twice inside the sink's open transaction."""

import signal

import pytest
from replay_support import assert_view_is_exact, run_job, write_view

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


def test_killed_inside_the_postgres_write_twice_leaves_the_exact_view(tmp_path, no_spark, postgres_dsn):
    """SIGKILL while the sink's transaction is open: after the job's first batch of a run the test
    share-locks the rows the table holds, the next batch (event times out of order, so it updates held
    rows) blocks on them inside its transaction (seen in pg_stat_activity), the job is killed there and
    the lock let go. Twice; then a run to the end leaves the exact view."""
    import psycopg

    view, rows = write_view(tmp_path, "on_update", "postgres", shuffled=True)
    env = {"OVERWINDOW_POSTGRES_DSN": postgres_dsn}
    _fresh_tables(postgres_dsn)
    for _ in range(2):
        with psycopg.connect(postgres_dsn) as locker, psycopg.connect(postgres_dsn, autocommit=True) as watch:
            locked = []

            def blocked_inside_the_write(lines):
                if lines and not locked:
                    locker.execute('SELECT 1 FROM "v_on_update" FOR SHARE')
                    locked.append(locker.info.backend_pid)
                return (
                    bool(locked)
                    and watch.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> %s",
                        (locked[0],),
                    ).fetchone()[0]
                    > 0
                )

            assert run_job(view, kill_when=blocked_inside_the_write, env=env) == -signal.SIGKILL
            locker.rollback()
    assert run_job(view, env=env) == 0
    assert_view_is_exact(tmp_path, rows, "on_update", "postgres", postgres_dsn)


def _fresh_tables(dsn: str) -> None:
    """The session's PostgreSQL server without the views' tables and bookkeeping of earlier tests: a
    new checkpoint over a table another query wrote is refused (the sink's checkpoint pairing)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        for table in ("v_on_update", "v_on_window_close", "_overwindow_batches"):
            db.execute(f'DROP TABLE IF EXISTS "{table}"')
