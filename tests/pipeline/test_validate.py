"""``overwindow validate``: every mistake that can be seen without data is refused before Spark
starts, naming the view-file key; no JVM is started (checked by a fixture that fails the test if
PySpark tries to launch one, and, through the command line, by a ``java`` that leaves a mark)."""

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from overwindow.__main__ import main
from overwindow.pipeline.validate import check_views
from overwindow.pipeline.view import ViewFileError, load_view

GOOD = """
[source]
format = "files"
path = "events"
schema = "k STRING, ts TIMESTAMP, id BIGINT, x DOUBLE, op STRING"

[watermark]
column = "ts"
delay = "10 seconds"

[view]
partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"]
emit = "on_window_close"
row_key = ["id"]

[sink]
kind = "sqlite"
path = "out/view.sqlite"
table = "v"
checkpoint = "chk"
"""


@pytest.fixture
def no_jvm(monkeypatch):
    """Fails the test if anything asks PySpark for a JVM."""
    import pyspark.java_gateway
    from pyspark import SparkContext

    def refuse(*args, **kwargs):
        raise AssertionError("a JVM was started")

    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", refuse)
    monkeypatch.setattr(SparkContext, "_ensure_initialized", classmethod(refuse))
    active = SparkContext._active_spark_context
    yield
    assert SparkContext._active_spark_context is active


def view_file(folder, text=GOOD, name="view.toml", events=True):
    folder.mkdir(parents=True, exist_ok=True)
    if events:
        (folder / "events").mkdir(exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def problems(paths, overrides=None):
    views = [load_view(p, overrides) for p in paths]
    with pytest.raises(ViewFileError) as e:
        check_views(views)
    return str(e.value).splitlines()


def test_a_good_view_passes_and_says_what_it_makes(tmp_path, no_jvm, capsys):
    path = view_file(tmp_path)
    assert main(["validate", path]) == 0
    out = capsys.readouterr().out
    assert "ok: 5 columns in, 6 out (k, ts, id, x, op, s); emit on window close" in out
    assert not (tmp_path / "out").exists()  # validate creates nothing


S = "k STRING, ts TIMESTAMP, id BIGINT, x DOUBLE"  # the schema, to vary below
# the classes of issue 14 item 2: (override, the key named, words of the message)
MISTAKES = [
    ({"source.schema": S.replace("k ", "key ")}, "[view] partition_by", "`k` does not exist"),
    ({"watermark.column": "event_time"}, "[watermark] column", "`event_time` does not exist"),
    ({"watermark.delay": "10 minutez"}, "[watermark] delay", "unknown unit 'minutez'"),
    ({"watermark.delay": "-5 seconds"}, "[watermark] delay", "should not be negative"),
    ({"source.path": "no/such/folder"}, "[source] path", "does not exist"),
    ({"source.schema": "k STRING, ts TIMESTAMP x DOUBLE"}, "[source] schema", "Spark cannot read it"),
    ({"source.schema": S.replace("STRING", "STRNG")}, "[source] schema", "unsupported data type"),
    ({"source.schema": S.replace("TIMESTAMP", "DATE")}, "[watermark] column", "only on a TIMESTAMP"),
    ({"source.schema": S.replace("x ", "y ")}, "[view] calls", "`x` does not exist"),
    ({"view.row_key": ["trade_id"]}, "[view] row_key", "`trade_id` does not exist"),
    ({"view.emit": "on_update", "view.op_column": "kind"}, "[view] op_column", "`kind` does not exist"),
    ({"view.emit": "on_update", "view.op_column": "x"}, "[view] op_column", "must be a STRING"),
    ({"source.schema": S.replace("k STRING", "k MAP<STRING, INT>")}, "[view] partition_by", "cannot group"),
    (
        {"source.schema": S + ", t2 TIMESTAMP", "watermark.column": "t2"},
        "[watermark] column",
        "follows the watermark on the ORDER BY column `ts`",
    ),
    ({"sink.path": "view.sqlite/x.sqlite"}, "[sink] path", "is a file, not a folder"),
    ({"sink.kind": "postgres", "sink.dsn_env": "OW_TEST_UNSET_DSN"}, "[sink] dsn_env", "which is not set"),
    ({"sink.table": "_Overwindow_Batches"}, "[sink] table", "the sinks' own table"),
    ({"sink.checkpoint": "events/chk"}, "[sink] checkpoint", "lies in the source folder"),
    ({"sink.path": "events/view.sqlite"}, "[sink] path", "lies in the source folder"),
    ({"sink.path": "events"}, "[sink] path", "lies in the source folder"),
    ({"view.state_ttl": 3600}, "[view] state_ttl", "state_ttl=3600 does not measure ORDER BY ts"),
    ({"sink.trigger": "1 month"}, "[sink] trigger", "no month or year units"),
    ({"sink.trigger": "-1 second"}, "[sink] trigger", "should not be negative"),
    ({"sink.trigger": "500 ms"}, "[sink] trigger", "unknown unit 'ms'"),
]  # fmt: skip


@pytest.mark.parametrize("overrides, key, words", MISTAKES)
def test_each_mistake_is_named_by_its_key(tmp_path, no_jvm, overrides, key, words):
    path = view_file(tmp_path)
    (tmp_path / "view.sqlite").write_text("")  # a file where a folder is asked for
    os.environ.pop("OW_TEST_UNSET_DSN", None)
    found = problems([path], overrides)
    assert any(f"{key} (" in line and words in line for line in found), found


KAFKA = """
[source]
format = "kafka"
bootstrap_servers = "{servers}"
topic = "{topic}"
schema = "k STRING, ts TIMESTAMP, id BIGINT, x DOUBLE"
options = {options}

[view]
partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"]
emit = "on_update"

[sink]
kind = "console"
checkpoint = "chk"
"""


@pytest.mark.parametrize(
    "servers, topic, options, key, words",
    [
        ("broker", "t", "{}", "[source] bootstrap_servers", "'broker' is not host:port"),
        ("broker:99999", "t", "{}", "[source] bootstrap_servers", "the port is 1 to 65535"),
        ("b:9092", "a,b", "{}", "[source] topic", "is not a Kafka topic name"),
        ("b:9092", "t", '{ "auto.offset.reset" = "x" }', "[source] options", "set [source] starting_offsets"),
        ("b:9092", "t", '{ "sasl.password" = "env:OW_TEST_UNSET" }', "[source] options", "OW_TEST_UNSET,"),
    ],
)  # fmt: skip
def test_kafka_settings_are_checked(tmp_path, no_jvm, servers, topic, options, key, words):
    os.environ.pop("OW_TEST_UNSET", None)
    path = view_file(tmp_path, KAFKA.format(servers=servers, topic=topic, options=options), events=False)
    found = problems([path])
    assert any(key in line and words in line for line in found), found


# -- reserved names and shared tables (issue 18, item 5) -------------------------------------------


def test_an_input_column_named_like_the_outputs_own_columns_is_refused(tmp_path, no_jvm):
    schema = "k STRING, ts TIMESTAMP, id BIGINT, x DOUBLE, _change STRING"
    found = problems([view_file(tmp_path)], {"source.schema": schema})
    assert any("[source] schema (--set): an input column may not be named '_change'" in x for x in found)


def test_two_views_may_not_write_one_table_or_share_a_checkpoint(tmp_path, no_jvm):
    a = view_file(tmp_path / "a", GOOD.replace('path = "out/view.sqlite"', 'path = "../shared.sqlite"'))
    b = view_file(
        tmp_path / "b",
        GOOD.replace('path = "out/view.sqlite"', 'path = "../shared.sqlite"')
        .replace('table = "v"', 'table = "V"')
        .replace('checkpoint = "chk"', 'checkpoint = "../a/chk"'),
    )
    found = problems([a, b])
    assert any("[sink] table (line 20): 'V' is the table 'v' of" in x and "ignores case" in x for x in found)
    assert any("[sink] checkpoint (line 21): the checkpoint of" in x for x in found)


def test_a_view_may_not_write_into_the_source_folder_of_another(tmp_path, no_jvm):
    a = view_file(tmp_path / "a")
    b = view_file(tmp_path / "b", GOOD.replace('path = "out/view.sqlite"', 'path = "../a/events/b.sqlite"'))
    found = problems([a, b])
    assert any("[sink] path (line 19)" in x and "lies in the source folder of" in x for x in found), found


def test_postgres_names_past_63_bytes_are_refused(tmp_path, no_jvm, monkeypatch):
    monkeypatch.setenv("OVERWINDOW_POSTGRES_DSN", "host=localhost dbname=x")
    long = "t" * 60 + "été"  # 64 bytes in UTF-8
    text = GOOD.replace('kind = "sqlite"\npath = "out/view.sqlite"', 'kind = "postgres"')
    found = problems([view_file(tmp_path, text)], {"sink.table": long})
    assert any("PostgreSQL cuts names longer than 63 bytes" in x for x in found), found
    a = view_file(tmp_path / "a", text.replace('table = "v"', f'table = "{"x" * 63}_one"'))
    b = view_file(
        tmp_path / "b", text.replace('table = "v"', f'table = "{"x" * 63}_two"').replace("chk", "chk2")
    )
    found = problems([a, b])
    assert any("keeps the first 63 bytes" in x for x in found), found


# -- through the command line, with a java that leaves a mark ----------------------------------------


def with_keys(text, overrides):
    """The view text with ``section.key`` set (its line replaced, or added under the section)."""
    lines = textwrap.dedent(text).splitlines()
    for dotted, value in overrides.items():
        section, name = dotted.split(".")
        start = lines.index(f"[{section}]")
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
        line = f"{name} = {json.dumps(value)}"
        found = [i for i in range(start, end) if lines[i].startswith(f"{name} =")]
        if found:
            lines[found[0]] = line
        else:
            lines.insert(start + 1, line)
    return "\n".join(lines) + "\n"


def _fake_java(tmp_path):
    home = tmp_path / "fake-java"
    (home / "bin").mkdir(parents=True)
    marker = tmp_path / "java-was-started"
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    java.chmod(0o755)
    env = dict(os.environ, JAVA_HOME=str(home), PATH=f"{home / 'bin'}:{os.environ['PATH']}")
    return env, marker


def _overwindow(args, env):
    return subprocess.run(
        [sys.executable, "-m", "overwindow", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_validate_and_run_refuse_every_class_without_starting_java(tmp_path):
    env, marker = _fake_java(tmp_path)
    # the detector works: asking PySpark for a session runs that java
    probe = subprocess.run(
        [sys.executable, "-c", "from pyspark.sql import SparkSession; SparkSession.builder.getOrCreate()"],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert probe.returncode != 0 and marker.exists()
    marker.unlink()
    (tmp_path / "view.sqlite").write_text("")  # a file where a folder is asked for
    env.pop("OW_TEST_UNSET_DSN", None)
    paths = []
    for i, (overrides, _, _) in enumerate(MISTAKES):
        text = with_keys(GOOD, {"sink.checkpoint": f"chk{i}", "sink.table": f"v{i}", **overrides})
        paths.append(view_file(tmp_path, text, name=f"view{i}.toml"))
    for command in (["validate", *paths], ["run", "--once", *paths]):
        done = _overwindow(command, env)
        assert done.returncode == 2, done.stderr
        for path, (_, key, words) in zip(paths, MISTAKES):
            assert any(
                line.startswith(f"overwindow: {path}: {key} (line ") and words in line
                for line in done.stderr.splitlines()
            ), (key, done.stderr)
        assert "Traceback" not in done.stderr
        assert not marker.exists()


def test_run_creates_the_sink_folder_and_refuses_a_source_holding_spark_scratch(
    tmp_path, no_jvm, monkeypatch
):
    path = view_file(tmp_path)
    check_views([load_view(path)], create=True)  # what run does first
    assert (tmp_path / "out").is_dir() and (tmp_path / "chk").is_dir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(tmp_path / "events" / "scratch"))
    found = problems([path])
    assert any("[source] path (line 4): the source folder" in x and "scratch files" in x for x in found)


def test_run_names_a_kafka_broker_that_does_not_answer_before_spark_starts(tmp_path, no_jvm, capsys):
    """validate cannot know; run connects first and names the key in one line (nothing listens on
    port 1), instead of Spark's connector retrying in the background."""
    path = view_file(tmp_path, KAFKA.format(servers="127.0.0.1:1", topic="t", options="{}"), events=False)
    assert main(["validate", path]) == 0
    capsys.readouterr()
    assert main(["run", path, "--once"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(
        f"overwindow: {path}: [source] bootstrap_servers (line 4): no Kafka broker answers (127.0.0.1:1: "
    ), err


QUERY = GOOD.replace(
    """partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"]""",
    'query = "SELECT k, ts, id, sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 3 PRECEDING) AS s '
    'FROM source WHERE x > 0"',
)


@pytest.mark.parametrize(
    "old, new, words",
    [
        (None, None, None),
        ("WHERE x > 0", "WHERE y > 0", r"\[view\] query \(line 12\): .*`y` does not exist"),
        ("SELECT k, ts", "SELECT k, ts, z + 1 AS z1", r"\[view\] query \(line 12\): .*`z` does not exist"),
        ("sum(x)", "sum(w)", r"\[view\] query \(line 12\): .*`w` does not exist"),
        ("x > 0", "x > 0 QUALIFY s2 > 0", r"\[view\] query \(line 12\): no column `s2` among the query's"),
        ("x > 0", "x > 0 QUALIFY id > 0 AND s > 1", None),
        ("AS s ", "AS x ", r"\[view\] query \(line 12\): output column `x` already exists in the input"),
        # windows over several PARTITION BY: each group's columns checked, the output every window's
        ("AS s ", "AS s, lag(x) OVER (PARTITION BY id ORDER BY ts) AS p ", None),
        (
            "AS s ",
            "AS s, lag(q) OVER (PARTITION BY id ORDER BY ts) AS p ",
            r"query \(line 12\): .*`q` does not exist",
        ),
        (
            "AS s ",
            "AS s, lag(x) OVER (PARTITION BY j ORDER BY ts) AS p ",
            r"query \(line 12\): .*`j` does not exist",
        ),
        (
            "AS s ",
            "AS s, lag(x) OVER (PARTITION BY id ORDER BY x) AS p ",
            r"watermark on the ORDER BY column `x`",
        ),
    ],
)
def test_a_query_view_is_checked_against_the_schema_without_java(tmp_path, no_jvm, old, new, words):
    path = view_file(tmp_path, QUERY if old is None else QUERY.replace(old, new))
    if words is None:
        assert check_views([load_view(path)])
    else:
        assert any(re.search(words, p) for p in problems([path])), problems([path])


def test_validate_names_the_columns_of_a_view_over_several_partitionings(tmp_path, no_jvm, capsys):
    text = QUERY.replace("AS s ", "AS s, rank() OVER (PARTITION BY id ORDER BY ts) AS r ")
    assert main(["validate", view_file(tmp_path, text)]) == 0
    assert "ok: 5 columns in, 5 out (k, ts, id, s, r); emit on window close" in capsys.readouterr().out


def test_validate_names_a_query_views_columns(tmp_path, no_jvm, capsys):
    path = view_file(tmp_path, QUERY.replace("SELECT k, ts, id", "SELECT k, ts, id, x + 1, x * 2 AS x2"))
    assert main(["validate", path]) == 0
    assert (
        "ok: 5 columns in, 6 out (k, ts, id, x + 1, x2, s); emit on window close" in capsys.readouterr().out
    )


def test_window_close_on_split_state_is_checked_with_the_views_keys(tmp_path, no_jvm):
    """state_layout = "chunked" on window close runs on key buckets over the partition columns:
    validated as the adapter builds it, with them; without partition_by it is refused, in the
    view's words, before Spark starts."""
    split = GOOD.replace('emit = "on_window_close"', 'emit = "on_window_close"\nstate_layout = "chunked"')
    assert check_views([load_view(view_file(tmp_path / "a", split))])
    alone = split.replace('partition_by = ["k"]\n', "")
    with pytest.raises(
        ViewFileError, match=r'state_layout = "chunked" on window close .* key_buckets over groupBy'
    ):
        check_views([load_view(view_file(tmp_path / "b", alone))])


def test_a_query_view_reading_a_struct_field_is_refused_in_its_words(tmp_path, no_jvm):
    """``e.x`` is the field ``x`` of the struct ``e`` to Spark, not the column ``x`` beside it."""
    text = QUERY.replace("op STRING", "op STRING, e STRUCT<x: DOUBLE>").replace("sum(x)", "sum(e.x)")
    found = problems([view_file(tmp_path, text)])
    assert any(
        re.search(r"\[view\] query \(line 12\): e\.x reads the field `x` of the struct column `e`", p)
        for p in found
    ), found


def test_a_query_view_may_read_a_struct_field_where_spark_computes_it(tmp_path, no_jvm):
    """Outside the windows (WHERE, a computed column) Spark computes ``e.x`` itself: accepted."""
    text = QUERY.replace("op STRING", "op STRING, e STRUCT<x: DOUBLE>").replace(
        "WHERE x > 0", "WHERE e.x > 0"
    )
    assert check_views([load_view(view_file(tmp_path, text))])


def test_a_debezium_view_validates_with_the_op_column_its_source_adds(tmp_path, no_jvm, capsys):
    """Issue 40, item 2: the Debezium source adds the op column (``_op``) to the row images'
    columns; validate took it for a missing column, and one declared in the schema made Spark's
    columns ambiguous at run: that is refused, naming the schema."""
    text = GOOD.replace('path = "events"', 'path = "events"\nenvelope = "debezium"').replace(
        'emit = "on_window_close"', 'emit = "on_update"'
    )
    path = view_file(tmp_path, text)
    assert main(["validate", path]) == 0, capsys.readouterr().err
    assert "6 columns in, 7 out (k, ts, id, x, op, s, _change); emit on update" in capsys.readouterr().out
    found = problems([path], {"source.schema": "k STRING, ts TIMESTAMP, id BIGINT, x DOUBLE, _op STRING"})
    assert any("[source] schema (--set): `_op` is the op column the Debezium source adds" in x for x in found)


def test_a_delta_sink_partitioned_by_a_column_the_view_does_not_write_is_refused(tmp_path, no_jvm, capsys):
    """Issue 41: [sink] partition_by of a Delta sink names the view's columns, checked before Spark
    starts, with its line; the view's own columns pass."""
    delta = 'kind = "delta"\npath = "out/view.delta"\npartition_by = ["{}"]\ncheckpoint = "chk"'
    sink = 'kind = "sqlite"\npath = "out/view.sqlite"\ntable = "v"\ncheckpoint = "chk"'
    good = view_file(tmp_path / "good", GOOD.replace(sink, delta.format("k")))
    assert main(["validate", good]) == 0, capsys.readouterr().err
    assert "delta" in capsys.readouterr().out
    bad = view_file(tmp_path / "bad", GOOD.replace(sink, delta.format("day")))
    found = problems([bad])
    assert found == [
        f"{tmp_path / 'bad' / 'view.toml'}: [sink] partition_by (line 20): the view writes no column day "
        "(it writes k, ts, id, x, op, s)"
    ]


def test_two_views_of_one_job_may_not_write_one_delta_table(tmp_path, no_jvm):
    delta = 'kind = "delta"\npath = "{}"\ncheckpoint = "{}"'
    sink = 'kind = "sqlite"\npath = "out/view.sqlite"\ntable = "v"\ncheckpoint = "chk"'
    table = str(tmp_path / "view.delta")
    a = view_file(tmp_path / "a", GOOD.replace(sink, delta.format(table, "chk")))
    b = view_file(tmp_path / "b", GOOD.replace(sink, delta.format(table, "chk")))
    assert problems([a, b]) == [f"{b}: [sink] path (line 19): the Delta folder of {a} too"]


def test_a_kafka_sink_is_checked_in_its_keys_words(tmp_path, no_jvm, capsys, monkeypatch):
    """Issue 41: a Kafka sink's brokers, topic, format and env: options are checked before Spark
    starts, each with its key and line; two views may not write one topic."""
    monkeypatch.delenv("OW_TEST_UNSET", raising=False)
    sink = 'kind = "sqlite"\npath = "out/view.sqlite"\ntable = "v"\ncheckpoint = "chk"'
    kafka = (
        'kind = "kafka"\nbootstrap_servers = "{}"\ntopic = "{}"\nformat = "{}"\n'
        'options = {{ "sasl.password" = "{}" }}\ncheckpoint = "chk"'
    )
    good = view_file(tmp_path / "good", GOOD.replace(sink, kafka.format("b:9092", "v", "debezium", "x")))
    assert main(["validate", good]) == 0, capsys.readouterr().err
    bad = view_file(
        tmp_path / "bad", GOOD.replace(sink, kafka.format("b", "a b", "upsert", "env:OW_TEST_UNSET"))
    )
    found = problems([bad])
    assert any("[sink] bootstrap_servers (line 19): 'b' is not host:port" in x for x in found), found
    assert any("[sink] topic (line 20): 'a b' is not a Kafka topic name" in x for x in found), found
    assert any(
        "[sink] options (line 22): options.sasl.password reads the environment variable" in x for x in found
    )
    with pytest.raises(ViewFileError, match=r"\[sink\] format .*debezium"):
        load_view(good, {"sink.format": "json"})
    other = view_file(tmp_path / "other", GOOD.replace(sink, kafka.format("b:9092", "v", "upsert", "x")))
    assert any("[sink] topic (line 20): the Kafka topic v of" in x for x in problems([good, other]))


def test_the_sessions_page_view_is_checked_without_java(tmp_path, no_jvm, capsys):
    """docs/sessions.md's view file (sessionizing clicks) validates as written; its gap given as a
    number over the TIMESTAMP column is refused, naming the view's key, before Spark starts."""
    page = (pathlib.Path(__file__).parents[2] / "docs" / "sessions.md").read_text()
    text = page.split("```toml\n", 1)[1].split("```", 1)[0].replace('path = "clicks"', 'path = "events"')
    assert main(["validate", view_file(tmp_path / "a", text)]) == 0
    assert (
        "8 out (click_id, user, ts, page, clicks, began, ended, _change); emit on update"
        in capsys.readouterr().out
    )
    wrong = text.replace("INTERVAL '30' MINUTE) AS clicks", "30) AS clicks")
    said = problems([view_file(tmp_path / "b", wrong)])
    assert any(
        re.search(r"\[view\] query.*SESSION WITH GAP over a TIMESTAMP .* needs a day-time INTERVAL", p)
        for p in said
    ), said


@pytest.mark.parametrize("admission", ["max_files_per_trigger = 3", "max_bytes_per_trigger = 100000", None])
@pytest.mark.parametrize("change_stream", ["envelope", "op_column"])
def test_a_change_stream_from_files_is_admitted_as_any_and_carries_its_source_order(
    tmp_path, no_jvm, admission, change_stream
):
    """Spark hands a key's rows from the files of one micro-batch to its group in no set order; the
    rows carry where they stand in the source (file, part, position: ``SOURCE_ORDER``) and apply in
    that order, so a change stream read from files takes as many files per micro-batch as any."""
    from overwindow.pipeline.sources import _file_reader
    from overwindow.pipeline.view import source_order

    text = GOOD.replace('emit = "on_window_close"', 'emit = "on_update"')
    if change_stream == "envelope":
        text = text.replace('path = "events"', 'path = "events"\nenvelope = "debezium"')
    else:
        text = text.replace('row_key = ["id"]', 'row_key = ["id"]\nop_column = "op"')
    if admission is not None:
        text = text.replace('path = "events"', f'path = "events"\n{admission}')

    class Reader:  # what the view asks of Spark's reader
        def __init__(self):
            self.options = {}

        def option(self, key, value):
            self.options[key] = value
            return self

    view = load_view(view_file(tmp_path, text))
    assert (
        view.options["sourceOrder"]
        == source_order(view)
        == ("__ow_file_time", "__ow_file_path", "__ow_file_block", "__ow_file_row")
    )
    assert view.spec.source_order == source_order(view)
    spark = type("Spark", (), {"readStream": Reader()})()
    want = {
        "max_files_per_trigger = 3": {"maxFilesPerTrigger": 3},
        "max_bytes_per_trigger = 100000": {"maxBytesPerTrigger": 100000},
        None: {"maxBytesPerTrigger": 32 * 1024 * 1024},
    }[admission]
    assert _file_reader(spark, view).options == want
    plain = load_view(view_file(tmp_path / "plain", GOOD))  # window close: no changes, no source order
    assert plain.options["sourceOrder"] == () and plain.spec.source_order == ()
