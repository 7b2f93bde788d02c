"""A failure after Spark started is one line naming the part of the view it belongs to (issue 18,
item 8). Spark's texts here are shaped as PySpark hands them to the driver (a Java trace holding the
worker's Python traceback); the messages inside are the package's and libpq's own. The whole path
through Spark is in tests/test_cli.py (a failing sink, a failing call)."""

import textwrap

import pytest

from overwindow.pipeline.failures import describe
from overwindow.pipeline.view import load_view
from overwindow.streaming.state import OnUpdateMeta, StateFormatError, decode, encode

VIEW = """
[source]
format = "files"
path = "events"
schema = "k STRING, ts TIMESTAMP, x DOUBLE"

[view]
partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s"]
emit = "on_update"

[sink]
kind = "{kind}"
table = "v"
checkpoint = "chk"
"""


def _view(tmp_path, kind="sqlite"):
    (tmp_path / "events").mkdir(exist_ok=True)
    text = VIEW.format(kind=kind)
    if kind == "sqlite":
        text = text.replace('table = "v"', 'path = "v.sqlite"\ntable = "v"')
    path = tmp_path / "view.toml"
    path.write_text(textwrap.dedent(text))
    return load_view(str(path))


def _spark_text(python_traceback: str) -> str:
    """A StreamingQueryException's text around a worker's Python traceback."""
    return (
        "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted due to stage "
        "failure: Task 0 in stage 3.0 failed 1 times, most recent failure: Lost task 0.0 in stage 3.0 "
        "(TID 7) (localhost executor driver): org.apache.spark.api.python.PythonException: Traceback "
        "(most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/pyspark/worker.py", line 1247, in main\n'
        "    process()\n"
        f"{python_traceback}\n"
        "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(...)\n"
        "\tat org.apache.spark.sql.execution.python.PythonArrowOutput$$anon$1.read(...)\n"
    )


def test_state_that_cannot_be_read_names_the_checkpoint(tmp_path):
    view = _view(tmp_path)
    with pytest.raises(StateFormatError) as e:
        decode(encode({}, "rows")[:-3] + b"\x00", "rows", OnUpdateMeta)
    text = _spark_text(f"overwindow.streaming.state.StateFormatError: {e.value}")
    line = describe(RuntimeError(text), view)
    assert line == (
        f"{view.path}: [sink] checkpoint (line 16): the state in {view.checkpoint} cannot be read: {e.value}"
    )


@pytest.mark.parametrize(
    "text",
    [  # Spark 4's and Spark 3.5's words for a grouping key of another type than the checkpoint's
        "[STREAM_FAILED] Query terminated with exception: [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] "
        "Provided key schema does not match existing state key schema.\nPlease check number and type "
        "of fields.\nExisting key_schema=StructType(StructField(k,LongType,true)) and new "
        "key_schema=StructType(StructField(__overwindow_bucket,ByteType,true)).",
        "Query terminated with exception: org.apache.spark.sql.execution.streaming.state."
        "StateSchemaNotCompatible: Provided schema doesn't match to the schema for existing state! "
        "Please note the number of fields and nullability of fields should be the same, and data type "
        "should also be the same.\n- Existing key schema: StructType(StructField(k,LongType,true))\n"
        "- New key schema: StructType(StructField(__overwindow_bucket,ByteType,true))",
    ],
)
def test_a_checkpoint_of_other_key_buckets_names_the_checkpoint_and_key_buckets(tmp_path, text):
    view = _view(tmp_path)
    assert describe(RuntimeError(text), view) == (
        f"{view.path}: [sink] checkpoint (line 16): {view.checkpoint} was started with other key "
        "buckets than this run hosts: started per key or with key_buckets given, write [view] "
        'key_buckets as it was started ("per key", or the number); started on buckets overwindow chose, '
        'write key_buckets = "chosen" (where its record in the checkpoint is gone), and for a remote '
        "checkpoint, started on 16 buckets up to 4 shuffle partitions or 64 above (an earlier release "
        "chose 64 on any), set spark.sql.shuffle.partitions ([spark] or OVERWINDOW_SPARK_CONF) so that "
        "it chooses that count again, and started by an earlier release on 16 buckets, also "
        'spark.overwindow.keyBucketValues = "numbered" (the bucket numbers it grouped by); or start '
        "from a new checkpoint"
    )


def test_a_missing_source_folder_names_the_source_path(tmp_path):
    view = _view(tmp_path)
    text = (
        "[STREAM_FAILED] Query terminated with exception: [PATH_NOT_FOUND] Path does not exist: "
        f"file:{tmp_path}/events.\n"
        "\tat org.apache.spark.sql.errors.QueryCompilationErrors$.dataPathNotExistError"
    )
    line = describe(RuntimeError(text), view)
    assert line.startswith(f"{view.path}: [source] path (line 4): ") and "\n" not in line


def test_a_java_failure_is_its_deepest_cause_in_one_line(tmp_path):
    view = _view(tmp_path)
    text = (
        "[STREAM_FAILED] Query terminated with exception: Job aborted.\n"
        "\tat org.apache.spark.sql.execution.streaming.StreamExecution.runStream(...)\n"
        "Caused by: org.apache.spark.SparkException: Task failed\n"
        "\tat ...\n"
        "Caused by: java.lang.OutOfMemoryError: Java heap space\n"
        "\tat ...\n"
    )
    assert describe(RuntimeError(text), view) == (
        f"{view.path}: the view's query failed: OutOfMemoryError: Java heap space"
    )


def test_a_failing_postgres_sink_never_shows_the_password(tmp_path, monkeypatch):
    view = _view(tmp_path, kind="postgres")
    monkeypatch.setenv("OVERWINDOW_POSTGRES_DSN", "postgresql://ow:Sup3r%25S3cret@db:5432/views")
    error = RuntimeError(
        'connection to server at "db" failed: FATAL: password authentication failed for user "ow" '
        "(postgresql://ow:Sup3r%25S3cret@db:5432/views, password Sup3r%S3cret)"
    )
    line = describe(RuntimeError("query failed"), view, sink_error=error)
    assert line.startswith(f"{view.path}: [sink] table (line 14): writing 'v' failed: RuntimeError: ")
    assert "password authentication failed" in line
    for piece in ("Sup3r", "S3cret"):
        assert piece not in line, line


def test_a_partition_past_max_rows_per_key_names_the_key(tmp_path):
    import pyarrow as pa

    from overwindow.streaming.contract import RowBoundError
    from overwindow.streaming.driver import Driver

    view = _view(tmp_path)
    (tmp_path / "view.toml").write_text(
        (tmp_path / "view.toml")
        .read_text()
        .replace('emit = "on_update"', 'emit = "on_update"\nmax_rows_per_key = 2')
    )
    view = load_view(str(tmp_path / "view.toml"))
    assert view.spec.max_rows_per_key == 2
    schema = pa.schema([("k", pa.string()), ("ts", pa.timestamp("us")), ("x", pa.float64())])
    driver = Driver(view.spec, schema, ["k"])
    with pytest.raises(RowBoundError) as e:
        driver.feed(pa.table({"k": ["a"] * 3, "ts": pa.array([1, 2, 3], pa.timestamp("us")), "x": [1.0] * 3}))
    line = describe(
        RuntimeError(_spark_text(f"overwindow.streaming.contract.RowBoundError: {e.value}")), view
    )
    assert line.startswith(f"{view.path}: [view] max_rows_per_key (line 11): ")
    assert "holds 3 rows in state, more than max_rows_per_key = 2" in line


@pytest.mark.parametrize("value", ["0", "-3", '"many"', "2.5", "true"])
def test_max_rows_per_key_is_a_positive_whole_number(tmp_path, value):
    from overwindow.pipeline.view import ViewFileError

    _view(tmp_path)
    text = (tmp_path / "view.toml").read_text()
    (tmp_path / "view.toml").write_text(
        text.replace('emit = "on_update"', f'emit = "on_update"\nmax_rows_per_key = {value}')
    )
    with pytest.raises(ViewFileError, match=r"\[view\] max_rows_per_key \(line 11\).*positive whole number"):
        load_view(str(tmp_path / "view.toml"))
