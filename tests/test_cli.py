"""The command line: the demo (the README's main job) and `run` on a view file, end to end on Spark.
Values come from the batch evaluator and DuckDB over the same sample."""

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pytest

import overwindow
from overwindow.__main__ import main
from overwindow.pipeline import job
from overwindow.pipeline.demo import DATABASE, TABLE, TICK_TABLE, sample_path
from overwindow.spark import compat


def test_demo_keeps_the_plant_and_tick_views_and_draws_the_chart(spark, tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "batch 0:" in printed and "rows in" in printed  # progress lines
    assert re.search(r"\ndemo took \d+ s\n", printed)  # the demo says how long it took
    assert (out / "plant_7day.png").stat().st_size > 10_000
    con = sqlite3.connect(out / DATABASE)
    got = {
        (p, d[:10]): (m, a, q1, q3)
        for p, d, m, a, q1, q3 in con.execute(f'SELECT plant, day, mwh, avg_7d, q1_7d, q3_7d FROM "{TABLE}"')
    }
    sample = pv.read_csv(sample_path())
    duck = duckdb.connect()
    duck.register("s", sample)
    want = {
        (p, str(d)): (a, q1, q3)
        for p, d, a, q1, q3 in duck.execute(
            "SELECT plant, date, avg(mwh) OVER w, quantile_cont(mwh, 0.25) OVER w, "
            "quantile_cont(mwh, 0.75) OVER w FROM s "
            "WINDOW w AS (PARTITION BY plant ORDER BY date "
            "RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING)"
        ).fetchall()
    }
    # the demo ends its input (--once --final): every day of every plant is in the view
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_allclose(got[k][1:], want[k], rtol=1e-9)

    # ticks: DuckDB over the whole file; the view holds every tick
    ticks = pv.read_csv(sample_path("stock_ticks"))  # UTC times, compared as plain timestamps
    duck.register(
        "t", ticks.set_column(1, "ts", ticks["ts"].cast(pa.timestamp("us", "UTC")).cast(pa.timestamp("us")))
    )
    want = {
        i: (c, a, v, m)
        for i, c, a, v, m in duck.execute(
            "SELECT trade_id, price - lag(price) OVER (PARTITION BY symbol ORDER BY ts), avg(price) OVER w, "
            "sum(volume) OVER w, "
            "count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 1 MINUTE PRECEDING AND CURRENT ROW) "
            "FROM t WINDOW w AS (PARTITION BY symbol ORDER BY ts "
            "RANGE BETWEEN INTERVAL 5 MINUTES PRECEDING AND CURRENT ROW)"
        ).fetchall()
    }
    # on PySpark 4 the view also counts every symbol's trades in the minute (a second PARTITION BY)
    market = "market_1m" if compat.version() >= compat.SPARK_4 else "NULL"
    got = {
        i: (c, a, v, m)
        for i, c, a, v, m in con.execute(
            f'SELECT trade_id, change, avg_5m, volume_5m, {market} FROM "{TICK_TABLE}"'
        )
    }
    assert set(got) == set(want) and len(want) > 4000
    for i in want:
        assert got[i][0] == (None if want[i][0] is None else pytest.approx(want[i][0], rel=1e-9, abs=1e-9))
        assert got[i][1:3] == (pytest.approx(want[i][1], rel=1e-9), want[i][2])
        assert got[i][3] == (want[i][3] if market != "NULL" else None)


def test_run_a_view_file_then_resume_with_more_files(spark, tmp_path, capsys):
    events = tmp_path / "events"
    events.mkdir()
    view = tmp_path / "prices.toml"
    view.write_text(
        textwrap.dedent("""
        [source]
        format = "files"
        path = "events"
        file_format = "json"
        schema = "stock STRING, ts TIMESTAMP, id BIGINT, price DOUBLE, op STRING"

        [view]
        partition_by = ["stock"]
        calls = [
            "price - lag(price) OVER (ORDER BY ts) AS diff",
            "avg(price) OVER (ORDER BY ts ROWS 2 PRECEDING) AS avg3",
        ]
        emit = "on_update"
        row_key = ["id"]
        op_column = "op"

        [sink]
        kind = "sqlite"
        path = "prices.sqlite"
        table = "price view"
        checkpoint = "chk"
    """)
    )
    rng = np.random.default_rng(4)
    live = {}
    for b in range(2):
        rows = [
            {
                "stock": f"S{i % 3}",
                "ts": f"2024-01-01T00:{b:02d}:{i:02d}",
                "id": b * 100 + i,
                "price": round(float(rng.normal(100, 3)), 2),
                "op": "insert",
            }
            for i in range(30)
        ]
        if b == 1:
            rows.append(dict(rows[0], op="delete"))
        (events / f"f{b}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(events / f"f{b}.json", (1_000 + b, 1_000 + b))
        for r in rows:
            if r["op"] == "delete":
                live.pop(r["id"], None)
            else:
                live[r["id"]] = r
        assert main(["run", str(view), "--once"]) == 0  # each run resumes from the checkpoint
    assert "rows in" in capsys.readouterr().out
    con = sqlite3.connect(tmp_path / "prices.sqlite")
    got = {r[0]: r[1:] for r in con.execute('SELECT id, diff, avg3 FROM "price view"')}
    table = pa.Table.from_pylist([{k: v for k, v in r.items() if k != "op"} for r in live.values()])
    table = table.set_column(1, "ts", table["ts"].cast(pa.timestamp("us")))
    batch = overwindow.evaluate(
        table.sort_by([("ts", "ascending"), ("id", "ascending")]),
        "price - lag(price) OVER (PARTITION BY stock ORDER BY ts) AS diff",
        "avg(price) OVER (PARTITION BY stock ORDER BY ts ROWS 2 PRECEDING) AS avg3",
    )
    assert set(got) == set(live)
    for r in batch.to_pylist():
        d, a = got[r["id"]]
        assert (d is None and r["diff"] is None) or abs(d - r["diff"]) < 1e-9
        assert abs(a - r["avg3"]) < 1e-9


def test_a_bad_view_file_exits_2_with_the_key(tmp_path, capsys):
    view = tmp_path / "v.toml"
    view.write_text('[source]\nformat = "ftp"\n')
    assert main(["run", str(view)]) == 2
    assert "[source] format (line 2): must be one of files, kafka" in capsys.readouterr().err


# -- operating the job (issue 14, items 3 and 9; issue 18, items 6 and 8) ----------------------------

VIEW = """
[source]
format = "files"
path = "events"
file_format = "json"
schema = "k STRING, ts TIMESTAMP, id BIGINT, x BIGINT"
max_files_per_trigger = 1

[watermark]
column = "ts"
delay = "5 seconds"

[view]
partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s"]
emit = "on_window_close"
row_key = ["id"]

[sink]
kind = "sqlite"
path = "view.sqlite"
table = "v"
checkpoint = "chk"
"""


def _events(folder, files=3, rows=20, x=lambda f, i: f * 100 + i):
    """``files`` JSON files of ``rows`` events each, a minute apart per file, oldest first."""
    events = folder / "events"
    events.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        path = events / f"f{f}.json"
        path.write_text(
            "".join(
                json.dumps(
                    {
                        "k": f"k{i % 2}",
                        "ts": f"2024-01-01T00:{f:02d}:{i:02d}",
                        "id": f * 1000 + i,
                        "x": x(f, i),
                    }
                )
                + "\n"
                for i in range(rows)
            )
        )
        os.utime(path, (1_000 + f, 1_000 + f))
    return files * rows


def _view(folder, text=VIEW):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "view.toml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def _table(path, table="v"):
    with sqlite3.connect(path) as con:
        return sorted(con.execute(f'SELECT * FROM "{table}"').fetchall())


def test_progress_as_json_and_no_watermark_before_the_first(spark, tmp_path, capsys):
    _events(tmp_path)
    view = _view(tmp_path)
    assert main(["run", view, "--once", "--progress", "json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    # a batch per file, then (maybe) one without data that moves the watermark
    assert [r["batch"] for r in records] == list(range(len(records))) and len(records) in (3, 4)
    assert [r["rows_in"] for r in records] == [20, 20, 20, 0][: len(records)]
    assert sum(r["rows_out"] for r in records) == len(_table(tmp_path / "view.sqlite"))
    assert records[0]["watermark"] is None and records[-1]["watermark"] == "2024-01-01T00:02:14.000Z"
    for r in records:
        assert r["view"] is None and r["late"] == 0 and r["bad"] == 0 and r["state_keys"] >= 0
        assert r["state_bytes"] >= 0 and r["batch_ms"] > 0 and "triggerExecution" in r["durations_ms"]
    # the same as lines: batch 0 has no watermark yet
    other = _view(tmp_path / "lines", VIEW.replace('path = "events"', 'path = "../events"'))
    assert main(["run", other, "--once"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("batch 0: 20 rows in, 0 out, watermark none, ")
    assert lines[1].startswith("batch 1: 20 rows in, ") and "watermark 2024-01-01T00:00:14.000Z" in lines[1]


def test_once_final_ends_the_input_and_later_input_is_refused(spark, tmp_path, capsys):
    """Issue 14, item 6: ``--once`` leaves the rows the watermark has not passed in state (a finished
    input never emits its last rows); ``--once --final`` emits them all, with DuckDB's values over the
    whole input. Issue 40, item 6: the checkpoint keeps the ended watermark, so a later file's rows
    would all be late (they were dropped, exit 0): the run stops before reading them, in one line
    saying so and what to do, and stops again the next time; nothing is written."""
    rows = _events(tmp_path)
    view = _view(tmp_path)
    assert main(["run", view, "--once", "--quiet"]) == 0
    assert 0 < len(_table(tmp_path / "view.sqlite")) < rows  # the last 5 seconds wait for the watermark
    assert main(["run", view, "--once", "--final", "--quiet"]) == 0
    duck = duckdb.connect()
    want = duck.execute(
        "SELECT k, ts, id, x, sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING) "
        f"FROM read_json_auto('{tmp_path / 'events'}/*.json') ORDER BY ALL"
    ).fetchall()
    got = _table(tmp_path / "view.sqlite")
    assert [(k, i, x, s) for k, _, i, x, s in got] == [(k, i, x, s) for k, _, i, x, s in want]
    assert main(["run", view, "--once", "--final", "--quiet"]) == 0  # ended already: nothing to do
    assert len(_table(tmp_path / "view.sqlite")) == rows

    later = tmp_path / "events" / "f9.json"
    later.write_text(json.dumps({"k": "k0", "ts": "2024-01-01T00:09:00", "id": 9000, "x": 1}) + "\n")
    os.utime(later, (2_000, 2_000))
    capsys.readouterr()
    for _ in range(2):
        assert main(["run", view, "--once", "--quiet"]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"overwindow: {view}: [sink] checkpoint (line 23): "), err
        assert (
            "new input reached the checkpoint" in err[0] and "after a --final run ended its input" in err[0]
        )
        assert (
            "Run without --final while input goes on" in err[0]
            and "start a new checkpoint and table" in err[0]
        )
        assert len(_table(tmp_path / "view.sqlite")) == rows


def test_once_final_on_update_view_equals_the_whole_input(spark, tmp_path):
    """Issue 14, item 6, the other mode: emit on update holds nothing back, so after ``--once
    --final`` its view is DuckDB's over all input too."""
    _events(tmp_path)
    view = _view(tmp_path, VIEW.replace('emit = "on_window_close"', 'emit = "on_update"'))
    assert main(["run", view, "--once", "--final", "--quiet"]) == 0
    want = (
        duckdb.connect()
        .execute(
            "SELECT id, x, sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING) "
            f"FROM read_json_auto('{tmp_path / 'events'}/*.json') ORDER BY id"
        )
        .fetchall()
    )
    with sqlite3.connect(tmp_path / "view.sqlite") as con:
        assert con.execute('SELECT id, x, s FROM "v" ORDER BY id').fetchall() == want


def test_final_needs_once(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", _view(tmp_path), "--final"])
    assert e.value.code == 2 and "--final needs --once" in capsys.readouterr().err


def test_two_views_run_in_one_job(spark, tmp_path, capsys):
    _events(tmp_path, files=2)
    first = _view(
        tmp_path / "a",
        VIEW.replace('path = "events"', 'path = "../events"').replace(
            'path = "view.sqlite"', 'path = "../views.sqlite"'
        ),
    )
    second = _view(
        tmp_path / "b",
        VIEW.replace('path = "events"', 'path = "../events"')
        .replace('path = "view.sqlite"', 'path = "../views.sqlite"')
        .replace('table = "v"', 'table = "w"')
        .replace("ROWS 2 PRECEDING", "ROWS 5 PRECEDING"),
    )
    assert main(["run", first, second, "--once"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(x.startswith("v: batch 0: 20 rows in") for x in lines)
    assert any(x.startswith("w: batch 0: 20 rows in") for x in lines)
    v, w = _table(tmp_path / "views.sqlite", "v"), _table(tmp_path / "views.sqlite", "w")
    assert len(v) == len(w) > 0 and [r[:4] for r in v] == [r[:4] for r in w]


def test_a_view_changed_or_moved_under_its_checkpoint_is_refused(spark, tmp_path, capsys):
    folder = tmp_path / "before"
    _events(folder, files=2)
    view = _view(folder)
    assert main(["run", view, "--once", "--quiet"]) == 0
    kept = _table(folder / "view.sqlite")
    assert kept
    changes = [
        (
            VIEW.replace('AS s"]', 'AS s", "max(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS max3"]'),
            '[view] calls: added "max(x) OVER (ORDER BY ts ASC NULLS FIRST ROWS BETWEEN 2 PRECEDING AND '
            'CURRENT ROW) AS max3". ',
        ),
        (
            VIEW.replace('emit = "on_window_close"', 'emit = "on_update"'),
            '[view] emit was "on_window_close", is now "on_update"',
        ),
        (
            VIEW.replace('partition_by = ["k"]', "partition_by = []"),
            '[view] partition_by was ["k"], is now []',
        ),
        (
            VIEW.replace("x BIGINT", "x DOUBLE"),
            "[source] schema: column `x` was bigint, is now double. ",
        ),
    ]
    for text, words in changes:
        (folder / "view.toml").write_text(textwrap.dedent(text))
        for command in ("validate", "run"):
            assert main([command, view, "--once"] if command == "run" else [command, view]) == 2
            err = capsys.readouterr().err
            assert words in err, err
            assert "either run this view with a new checkpoint and a new table" in err
            assert "or go back to the view the checkpoint was started with" in err
    assert _table(folder / "view.sqlite") == kept  # nothing ran
    # the whole folder moved: Spark's checkpoint would read every file again
    (folder / "view.toml").write_text(textwrap.dedent(VIEW))
    moved = tmp_path / "after"
    os.rename(folder, moved)
    assert main(["run", str(moved / "view.toml"), "--once"]) == 2
    err = capsys.readouterr().err
    assert f"the view folder moved from {folder} to {moved}" in err and "emitted twice" in err
    assert _table(moved / "view.sqlite") == kept
    # the way on: a new checkpoint and table
    again = VIEW.replace('checkpoint = "chk"', 'checkpoint = "chk2"').replace('table = "v"', 'table = "v2"')
    (moved / "view.toml").write_text(textwrap.dedent(again))
    assert main(["run", str(moved / "view.toml"), "--once", "--quiet"]) == 0
    assert len(_table(moved / "view.sqlite", "v2")) == len(kept)


def test_a_failing_sink_is_one_line_naming_the_key_and_the_trace_comes_with_debug(spark, tmp_path, capsys):
    _events(tmp_path, files=1)
    view = _view(tmp_path)
    with sqlite3.connect(tmp_path / "view.sqlite") as con:  # the table refuses the view's rows
        con.execute('CREATE TABLE "v" (k TEXT, ts TEXT, id INTEGER, x INTEGER CHECK (x < 0), s INTEGER)')
    assert main(["run", view, "--once", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"overwindow: {view}: [sink] path (line 21): writing 'v' failed: IntegrityError: CHECK constraint "
        "failed: x < 0"
    ]
    with pytest.raises(Exception, match="Traceback"):
        main(["run", view, "--once", "--quiet", "--debug"])


def test_a_table_that_does_not_fit_the_view_is_refused_before_it_runs(spark, tmp_path, capsys):
    """Issue 40, item 4: a table whose column has another type than the view writes (SQLite, as
    PostgreSQL, converted the values to it) is refused when the run starts, in one line naming the
    column and both types. Item 5: a second job writing the same SQLite table under another case
    ("V" is "v" to SQLite) with its own checkpoint is refused as another query's table (both exited
    0 and the table held every row twice)."""
    _events(tmp_path, files=1)
    view = _view(tmp_path)
    with sqlite3.connect(tmp_path / "view.sqlite") as con:
        con.execute('CREATE TABLE "v" (k TEXT, ts TEXT, id INTEGER, x REAL, s INTEGER, note TEXT)')
    assert main(["run", view, "--once", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"overwindow: {view}: [sink] table (line 22): table v: column x is REAL there, the view writes "
        "INTEGER (BIGINT): values would be converted to the table's type"
    ]
    assert _table(tmp_path / "view.sqlite") == []
    with sqlite3.connect(tmp_path / "view.sqlite") as con:  # a column the view does not write may stay
        con.execute('DROP TABLE "v"')
        con.execute('CREATE TABLE "v" (k TEXT, ts TEXT, id INTEGER, x INTEGER, s INTEGER, note TEXT)')
    assert main(["run", view, "--once", "--quiet"]) == 0
    kept = _table(tmp_path / "view.sqlite")
    assert kept
    other = _view(
        tmp_path / "other",
        VIEW.replace('path = "events"', 'path = "../events"')
        .replace('path = "view.sqlite"', 'path = "../view.sqlite"')
        .replace('table = "v"', 'table = "V"'),
    )
    assert main(["run", other, "--once", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"overwindow: {other}: [sink] table (line 22): table V holds "
    ), err
    assert "of another query" in err[0]
    assert _table(tmp_path / "view.sqlite") == kept


def test_a_failing_call_is_one_line_naming_the_calls(spark, tmp_path, capsys):
    _events(tmp_path, files=1, x=lambda f, i: 2**62)
    view = _view(tmp_path)
    assert main(["run", view, "--once", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"overwindow: {view}: [view] calls (line 15): sum overflows BIGINT (use a DOUBLE argument for "
        "larger sums)"
    ]


def test_version_help_and_keys(capsys):
    import tomllib

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    with open(os.path.join(os.path.dirname(__file__), "..", "pyproject.toml"), "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert capsys.readouterr().out == f"overwindow {version}\n"
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    said = capsys.readouterr().out.replace("\n", " ")
    assert "`overwindow keys`, or the docs' reference/view-keys.md" in said
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "run the two bundled demo views" in " ".join(capsys.readouterr().out.split())
    assert main(["keys"]) == 0
    assert "| `partition_by` | column name or list of them | `[]` |" in capsys.readouterr().out


GROUPED = VIEW.replace(
    'partition_by = ["k"]\ncalls = ["sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s"]\n'
    'emit = "on_window_close"\nrow_key = ["id"]',
    'query = "SELECT k, sum(x) AS total, avg(sum(x)) OVER (ORDER BY k ROWS 1 PRECEDING) AS a '
    'FROM source GROUP BY k"\nemit = "on_update"',
).replace('table = "v"', 'table = "g"')


@pytest.fixture
def no_second_spark(monkeypatch):
    """A run that gets as far as starting Spark fails the test (one Spark runs: the other job's)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the second job started Spark")

    monkeypatch.setattr(job, "local_spark", refuse)


def test_a_running_job_refuses_a_second_on_its_checkpoint_says_only_its_own_lines_and_stops_at_ctrl_c(
    no_spark, no_second_spark, tmp_path, capsys
):
    """One job, without --once, of two views (one Spark start for three checks):

    - Issue 40, item 12: a second `overwindow run` on a checkpoint the running job holds is refused
      before Spark starts, in one line naming the checkpoint and the other job (``validate``, which
      runs nothing, is not);
    - issue 40, item 20: the job prints on stderr only overwindow's own lines, with a view whose
      query runs on transformWithStateInPandas (a GROUP BY; PySpark 4): not the JVM's start-up
      banner, not PySpark's worker announcing each call with whole function reprs, not pandas'
      warnings (PYTHONWARNINGS unset);
    - Ctrl-C at a terminal signals the whole process group (the JVM and Python workers too), while
      the other view still has input: the job stops with one line."""
    _events(tmp_path / "v", files=6, rows=2000)
    view = _view(tmp_path / "v")
    views = [view]
    grouped = compat.version() >= compat.SPARK_4  # a GROUP BY's windows need PySpark 4
    if grouped:
        assert GROUPED != VIEW
        _events(tmp_path / "g", files=2, rows=5)
        views.append(_view(tmp_path / "g", GROUPED))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "overwindow", "run", *views],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        waiting = {"v: batch 2:", "g: batch 1:"} if grouped else {"batch 2:"}  # one view: no prefix
        for line in proc.stdout:  # the job has run batches: Spark holds the checkpoints
            waiting = {w for w in waiting if not line.startswith(w)}
            if not waiting:
                break
        else:  # it ended without them
            pytest.fail(f"the job ended with {proc.wait()}: {proc.stderr.read()[-3000:]}")
        assert main(["run", view, "--once"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        checkpoint = os.path.join(tmp_path, "v", "chk")
        line = next(i for i, text in enumerate(VIEW.splitlines(), 1) if text.startswith("checkpoint"))
        assert len(err) == 1, err
        assert err[0].startswith(
            f"overwindow: {view}: [sink] checkpoint (line {line}): the checkpoint {checkpoint} is in use by "
            f"another job (pid {proc.pid}, running {' '.join(views)}, since "
        ), err
        assert err[0].endswith("Stop that job first, or give this view its own [sink] checkpoint and table")
        assert main(["validate", view]) == 0  # validate reads, and runs nothing
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert (
        out.strip().splitlines()[-1].startswith("stopped. Run the same command to resume from the checkpoint")
    )
    for word in ("Traceback", "Exception", "ERROR", "py4j", "[Stage"):
        assert word not in err, err
    assert [line for line in err.splitlines() if not line.startswith("overwindow: ")] == []
    if grouped:  # x = 0..4 then 100..104, k0 holding the even i: by hand, 312 and 208, then (312 + 208) / 2
        assert _table(tmp_path / "g" / "view.sqlite", "g") == [("k0", 312, 312.0), ("k1", 208, 260.0)]


def _batch_sums(rows: list[dict]) -> dict:
    """id -> the VIEW's ``s`` over ``rows`` (JSON events), by the batch evaluator."""
    table = pa.Table.from_pylist(rows)
    table = table.set_column(1, "ts", table["ts"].cast(pa.timestamp("us")))
    batch = overwindow.evaluate(
        table.sort_by([("ts", "ascending"), ("id", "ascending")]),
        "sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING) AS s",
    )
    return {r["id"]: r["s"] for r in batch.to_pylist()}


def _forty_keys(folder) -> list[dict]:
    """Three JSON files of 80 events over 40 keys each, a minute apart, oldest first, in ``folder``
    (made); their rows."""
    folder.mkdir(exist_ok=True)
    rows = []
    for f in range(3):
        batch = [
            {"k": f"k{i % 40}", "ts": f"2024-01-01T00:{f:02d}:{i // 2:02d}", "id": f * 1000 + i, "x": f + i}
            for i in range(80)
        ]
        rows += batch
        (folder / f"f{f}.json").write_text("".join(json.dumps(r) + "\n" for r in batch))
        os.utime(folder / f"f{f}.json", (1_000 + f, 1_000 + f))
    return rows


TWO_GROUPS = (
    'query = "SELECT k, ts, id, x, sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING) AS s, '
    'count(*) OVER (ORDER BY ts ROWS 2 PRECEDING) AS c FROM source"'
)


@pytest.mark.parametrize("shape", ["calls", "two window groups"])
def test_a_new_checkpoint_runs_the_buckets_overwindow_chooses_and_keeps_their_count(
    spark, tmp_path, capsys, monkeypatch, shape
):
    """Without key_buckets the job hosts a new local checkpoint on the buckets overWindow chooses: 16
    on the tests' 2 shuffle partitions (at most 16 state rows for 40 keys, where 64 buckets would
    hold about 30; a window without PARTITION BY adds one), and records that they were chosen. Run
    again with 8 partitions set, where 64 would be chosen and the keys hashed anew, Spark refuses
    the other count's grouping key unless the job builds the query with the checkpoint's partitions;
    it does, so the view goes on with 16. A checkpoint whose record is gone runs per key unless
    key_buckets = "chosen" says how it was started. Oracle: the batch evaluator."""
    events = tmp_path / "events"
    rows = _forty_keys(events)
    first = tmp_path / "first"
    first.mkdir()
    os.replace(events / "f2.json", first / "f2.json")  # the second run's
    text = VIEW.replace("max_files_per_trigger = 1", "max_files_per_trigger = 2")
    if shape != "calls":
        text = text.replace('partition_by = ["k"]\n', "").replace(
            'calls = ["sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s"]', TWO_GROUPS
        )
    buckets = 16 if shape == "calls" else 17
    view = _view(tmp_path, text)
    assert main(["run", view, "--once", "--progress", "json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert 0 < max(r["state_keys"] for r in records) <= buckets
    with open(tmp_path / "chk" / "overwindow-view.json") as f:
        assert json.load(f)["key_buckets"] == "chosen"
    os.replace(first / "f2.json", events / "f2.json")
    eight = text + '\n[spark]\n"spark.sql.shuffle.partitions" = "8"\n'
    try:
        if shape == "calls":
            with monkeypatch.context() as m:  # the query built for the session's 8 partitions
                m.setattr(job, "_as_started", lambda spark, view: contextlib.nullcontext())
                assert main(["run", _view(tmp_path, eight), "--once"]) == 1
            assert "was started with other key buckets" in capsys.readouterr().err
            os.remove(tmp_path / "chk" / "overwindow-view.json")  # lost: chosen says how it started
            eight = eight.replace('row_key = ["id"]', 'row_key = ["id"]\nkey_buckets = "chosen"')
        code = main(["run", _view(tmp_path, eight), "--once", "--final", "--progress", "json"])
        assert spark.conf.get("spark.sql.shuffle.partitions") == "8"  # the job's setting, kept
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    out, err = capsys.readouterr()
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert 0 < max(r["state_keys"] for r in records) <= buckets
    got = dict(sqlite3.connect(tmp_path / "view.sqlite").execute('SELECT id, s FROM "v"'))
    assert got == _batch_sums(rows)


def test_a_checkpoint_an_earlier_release_started_on_numbered_buckets_goes_on_numbered(
    spark, tmp_path, capsys, monkeypatch
):
    """The 16 buckets chosen on 2 shuffle partitions group by values Spark's shuffle spreads evenly
    over the partitions; earlier releases grouped by the bucket numbers, and their checkpoints'
    fingerprints say nothing of it. A checkpoint started so (numbered, its fingerprint without
    key_bucket_values) goes on numbered; the spread values on it are refused by Spark (their
    grouping key is another type), in the view's words naming the setting that runs it. Oracle:
    the batch evaluator over every row."""
    from overwindow.pipeline import fingerprint

    events = tmp_path / "events"
    events.mkdir()
    rows = _forty_keys(tmp_path)  # moved into events one file a run
    record = tmp_path / "chk" / "overwindow-view.json"

    def recorded(values):  # the checkpoint's fingerprint, with ``values`` (None: none, as before)
        kept = json.loads(record.read_text())
        kept.pop("key_bucket_values")
        record.write_text(json.dumps(kept if values is None else {**kept, "key_bucket_values": values}))

    def run(f, *final):  # the next file, then the view once
        os.replace(tmp_path / f"f{f}.json", events / f"f{f}.json")
        os.utime(events / f"f{f}.json", (1_000 + f, 1_000 + f))
        code = main(["run", _view(tmp_path), "--once", *final, "--progress", "json"])
        return code, capsys.readouterr()

    with monkeypatch.context() as m:  # started as an earlier release started it
        m.setattr(fingerprint, "started_bucket_values", lambda checkpoint: "numbered")
        code, _ = run(0)
    assert code == 0 and json.loads(record.read_text())["key_bucket_values"] == "numbered"
    recorded("spread")  # said to be spread: Spark refuses the grouping key
    code, (_, err) = run(1)
    assert code == 1 and "was started with other key buckets" in err, err
    assert 'spark.overwindow.keyBucketValues = "numbered"' in err
    recorded(None)  # as an earlier release recorded it: numbered, and it goes on
    code, (out, err) = run(2, "--final")
    assert code == 0, err
    assert "key_bucket_values" not in json.loads(record.read_text())  # kept: it reads as numbered
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert 0 < max(r["state_keys"] for r in records) <= 16
    got = dict(sqlite3.connect(tmp_path / "view.sqlite").execute('SELECT id, s FROM "v"'))
    assert got == _batch_sums(rows)


def test_a_remote_checkpoint_started_per_key_is_refused_not_read_as_new_buckets(spark, tmp_path, capsys):
    """A checkpoint given as a URI is not read (no fingerprint), so the job cannot know how it was
    started. One started per key (by an older overwindow, or with key_buckets = "per key") on BIGINT
    keys none of which is a bucket number would read as 64 empty buckets, every window started
    afresh; the buckets the job chooses there group by a TINYINT, so the run fails instead, and with
    key_buckets = "per key" written out it goes on, equal to the batch evaluator."""
    events = tmp_path / "events"
    events.mkdir()
    text = (
        VIEW.replace("k STRING", "k BIGINT")
        .replace('checkpoint = "chk"', f'checkpoint = "{(tmp_path / "chk").as_uri()}"')
        .replace('row_key = ["id"]', 'row_key = ["id"]\nHOSTING')
    )
    rows = []
    for b, hosting in enumerate(['key_buckets = "per key"', "", 'key_buckets = "per key"']):
        batch = [
            {"k": 1_000_000 + i % 4, "ts": f"2024-01-01T00:{b:02d}:{i:02d}", "id": b * 100 + i, "x": i + b}
            for i in range(12)
        ]
        if b < 2:
            rows += batch
            (events / f"f{b}.json").write_text("".join(json.dumps(r) + "\n" for r in batch))
            os.utime(events / f"f{b}.json", (1_000 + b, 1_000 + b))
        view = _view(tmp_path, text.replace("HOSTING", hosting))
        code = main(["run", view, "--once", "--quiet"])
        err = capsys.readouterr().err
        assert code == (1 if b == 1 else 0), err
        if b == 1:  # Spark's refusal, in the view's words
            assert "was started with other key buckets" in err and "write [view] key_buckets" in err
    got = dict(sqlite3.connect(tmp_path / "view.sqlite").execute('SELECT id, s FROM "v"'))
    want = _batch_sums(rows)
    assert got.keys() <= want.keys() and len(got) >= 16  # the second file's rows past the first's
    assert all(got[i] == want[i] for i in got)
