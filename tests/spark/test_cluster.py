"""A real Spark standalone cluster on this machine (a master and two workers, started from the pyspark
installation) whose workers' Python lacks overwindow (and sqlglot, sortedcontainers): the view job
ships the package itself and runs there with results equal to the batch evaluator (as local mode's
are), and when one worker (with its executor) is killed mid-stream the queries recover on the other
and the views are still exact."""

import os
import signal
import socket
import subprocess
import time

import pytest
from replay_support import assert_view_is_exact, run_job, write_view


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class(*args, log, env):
    import pyspark

    script = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    # a session of its own, so that killing the worker's group takes its executor and Python workers too
    return subprocess.Popen(
        [script, *args], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )


def _starts(python):
    """Python workers the ``bare_python`` launcher started so far (a line each in its ``started``)."""
    path = os.path.join(os.path.dirname(os.path.dirname(python)), "started")
    return len(open(path).read().split()) if os.path.exists(path) else 0


def _wait_for_port(port, proc, log_path, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert proc.poll() is None, open(log_path).read()[-2000:]
        time.sleep(0.5)
    raise AssertionError(f"port {port} did not open; see {log_path}")


@pytest.fixture
def cluster(tmp_path, no_spark, bare_python):
    """spark://127.0.0.1:PORT with two one-core workers; yields (master URL, worker processes)."""
    env = dict(
        os.environ,
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=bare_python,
        # the master drops a worker silent for 10 s (the killed one goes quickly); the workers read
        # the same setting to beat every 2.5 s (the default, 15 s, let the master drop live
        # workers every half minute, their executors with them)
        SPARK_MASTER_OPTS="-Dspark.worker.timeout=10",
        SPARK_WORKER_OPTS="-Dspark.worker.timeout=10",
        SPARK_WORKER_DIR=str(tmp_path / "work"),
    )
    port = _free_port()
    procs = []
    try:
        log = tmp_path / "master.log"
        master = _spark_class(
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(_free_port()),
            log=open(log, "w"),
            env=env,
        )
        procs.append(master)
        _wait_for_port(port, master, log)
        url = f"spark://127.0.0.1:{port}"
        workers = []
        for i in range(2):
            log = tmp_path / f"worker{i}.log"
            wport = _free_port()
            worker = _spark_class(
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--port",
                str(wport),
                "--webui-port",
                str(_free_port()),
                "--cores",
                "1",
                "--memory",
                "1g",
                log=open(log, "w"),
                env=env,
            )
            procs.append(worker)
            workers.append(worker)
            _wait_for_port(wport, worker, log)
        yield url, workers
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


# (name, state layout, key buckets): the default hosting (the whole layout on buckets), and window
# close on split state (transformWithStateInPandas on RocksDB)
VIEWS = [("whole", "whole", None), ("split", "chunked", 2)]


def test_a_view_on_a_cluster_survives_a_killed_worker(tmp_path, cluster, bare_python):
    """Window close: its event-time timeouts and pruned state are what a lost executor could break;
    emit on update's recovery runs on the same adapter and is killed and restarted in test_recovery.
    One job runs the views of ``VIEWS``, each into its own folder."""
    url, workers = cluster
    emit = "on_window_close"
    written = []
    for name, layout, buckets in VIEWS:
        (tmp_path / name).mkdir()
        written.append(write_view(tmp_path / name, emit, layout=layout, buckets=buckets, name=name))
    # the executors start the Python the driver's PYSPARK_PYTHON names: one without overwindow
    env = {"OVERWINDOW_MASTER": url, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": bare_python}
    started = _starts(bare_python)

    def kill_a_worker(lines_done):
        if lines_done == 2 * len(VIEWS):  # mid-stream: about two batches of each view done
            os.killpg(workers[0].pid, signal.SIGKILL)

    assert run_job([view for view, _ in written], after_line=kill_a_worker, env=env) == 0
    assert workers[0].wait(30) == -signal.SIGKILL and workers[1].poll() is None
    for (name, *_), (_, rows) in zip(VIEWS, written):
        assert_view_is_exact(tmp_path / name, rows, emit, "sqlite")
    assert _starts(bare_python) > started  # the Python workers were the ones without overwindow
    assert list((tmp_path / "work").glob("app-*/*/overwindow-*.zip"))  # the package the job shipped
