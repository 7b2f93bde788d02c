"""Recovery by replay: the job runs in a subprocess, is killed with SIGKILL (after a progress line,
i.e. between batches, and on a timer, i.e. possibly inside one), restarts from the same checkpoint,
and the view in the sink (SQLite, and PostgreSQL on a server the tests start), fed by files or by a
Kafka topic on a broker the tests start, finally equals the batch result over all input: no row
lost, none duplicated. Files run every (mode, sink) pair, and emit on update with chunked state
(transformWithStateInPandas, RocksDB, watermark eviction); Kafka runs both modes and both sinks in
two pairs, to keep the suite's time in bounds (each run starts a Spark)."""

import signal

import pytest
from replay_support import assert_view_is_exact, run_job, write_view


@pytest.mark.parametrize(
    "emit, sink, source, layout",
    [
        *[
            (emit, sink, "files", "whole")
            for emit in ("on_window_close", "on_update")
            for sink in ("sqlite", "postgres")
        ],
        ("on_update", "sqlite", "files", "chunked"),
        ("on_window_close", "sqlite", "kafka", "whole"),
        ("on_update", "postgres", "kafka", "whole"),
    ],
)
def test_killed_and_restarted_job_leaves_the_exact_view(
    tmp_path, no_spark, emit, sink, source, layout, request
):
    view, rows = write_view(
        tmp_path,
        emit,
        sink,
        request.getfixturevalue("kafka_bootstrap") if source == "kafka" else None,
        layout,
    )
    env = {"OVERWINDOW_POSTGRES_DSN": request.getfixturevalue("postgres_dsn")} if sink == "postgres" else {}
    assert run_job(view, kill_after_line=2, env=env) == -signal.SIGKILL  # between batches
    run_job(view, kill_after_s=12, env=env)  # on a timer: inside a batch if it is still running
    assert run_job(view, env=env) == 0  # to the end
    assert_view_is_exact(tmp_path, rows, emit, sink, env.get("OVERWINDOW_POSTGRES_DSN"))
