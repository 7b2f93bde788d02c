"""Recovery by replay: the job runs in a subprocess, is killed with SIGKILL (after a progress line,
i.e. between batches, and in the first case also on a timer, i.e. possibly inside one), restarts
from the same checkpoint, and the view in the sink (SQLite, and PostgreSQL on a server the tests
start), fed by files or by a Kafka topic on a broker the tests start, finally equals the batch
result over all input: no row lost, none duplicated. Every (mode, sink) pair runs once (each run
starts a Spark, so the suite's time keeps the matrix to pairs): files run window close into both
sinks (a state per key into SQLite, the default key buckets into PostgreSQL) and emit on update with
chunked state (transformWithStateInPandas, RocksDB, watermark eviction) into SQLite; Kafka runs
emit on update with its keys in two buckets (key_buckets, watermark eviction) into SQLite; emit on
update into PostgreSQL (files, a state per key) is killed three times inside the sink's open
transaction. A view of two window groups (one query, two chained stateful operators) runs window
close into SQLite."""

import signal

import pytest
from replay_support import assert_view_is_exact, run_job, write_view


@pytest.mark.parametrize(
    "emit, sink, source, layout, buckets",
    [
        ("on_window_close", "sqlite", "files", "whole", "per key"),
        ("on_window_close", "postgres", "files", "whole", None),
        ("on_update", "sqlite", "files", "chunked", None),
        ("on_update", "sqlite", "kafka", "whole", 2),
        ("on_window_close", "sqlite", "files", "whole", "several"),  # two window groups, one query
    ],
)
def test_killed_and_restarted_job_leaves_the_exact_view(
    tmp_path, no_spark, emit, sink, source, layout, buckets, request
):
    several = buckets == "several"
    view, rows = write_view(
        tmp_path,
        emit,
        sink,
        request.getfixturevalue("kafka_bootstrap") if source == "kafka" else None,
        layout,
        buckets=None if several else buckets,
        several=several,
    )
    env = {"OVERWINDOW_POSTGRES_DSN": request.getfixturevalue("postgres_dsn")} if sink == "postgres" else {}
    if sink == "postgres":
        _fresh_tables(env["OVERWINDOW_POSTGRES_DSN"])
    assert run_job(view, kill_after_line=2, env=env) == -signal.SIGKILL  # between batches
    if (emit, sink, source, buckets) == (
        "on_window_close",
        "sqlite",
        "files",
        "per key",
    ):  # a Spark start each
        run_job(view, kill_after_s=12, env=env)  # on a timer: inside a batch if it is still running
    assert run_job(view, env=env) == 0  # to the end
    assert_view_is_exact(tmp_path, rows, emit, sink, env.get("OVERWINDOW_POSTGRES_DSN"), several)


def test_killed_inside_the_postgres_write_three_times_leaves_the_exact_view(tmp_path, no_spark, postgres_dsn):
    """SIGKILL while the sink's transaction is open: after the job's first batch of a run the test
    share-locks the rows the table holds, the next batch (event times out of order, so it updates held
    rows) blocks on them inside its transaction (seen in pg_stat_activity), the job is killed there and
    the lock let go. Five times; then a run to the end leaves the exact view."""
    import psycopg

    view, rows = write_view(tmp_path, "on_update", "postgres", shuffled=True)
    env = {"OVERWINDOW_POSTGRES_DSN": postgres_dsn}
    _fresh_tables(postgres_dsn)
    for _ in range(3):
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
