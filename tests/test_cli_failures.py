"""Failures of `overwindow run` that say their cause in one line, naming the file or setting behind
it, with no Spark internals (issue 40, items 10 to 17). Tests that end before Spark starts make
starting it fail the test."""

import os
import subprocess
import sys
import textwrap

import pytest

from overwindow.__main__ import main
from overwindow.pipeline import job

CSV_VIEW = """
[source]
format = "files"
path = "events"
file_format = "csv"
schema = "k STRING, ts TIMESTAMP, x BIGINT"

[view]
partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s"]
emit = "on_update"
row_key = ["ts"]

[sink]
kind = "sqlite"
path = "view.sqlite"
table = "v"
checkpoint = "chk"
"""


def _view(folder, text=CSV_VIEW) -> str:
    (folder / "events").mkdir(parents=True, exist_ok=True)
    path = folder / "view.toml"
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.fixture
def without_spark(monkeypatch):
    """Starting Spark fails the test: what it checks is refused before."""

    def refuse(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(job, "local_spark", refuse)


def test_a_csv_header_in_another_order_is_one_line_naming_the_file_and_both_orders(spark, tmp_path, capsys):
    view = _view(tmp_path)
    events = tmp_path / "events"
    (events / "a.csv").write_text("k,ts,x\na,2024-01-01 00:00:00,1\n")
    os.utime(events / "a.csv", (1_000, 1_000))
    assert main(["run", view, "--once", "--quiet"]) == 0
    (events / "b.csv").write_text("ts,k,x\n2024-01-01 00:00:01,a,2\n")
    assert main(["run", view, "--once", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"overwindow: {view}: [source] schema (line 6): the CSV file {events / 'b.csv'} has the header "
        "ts, k, x where the schema reads k, ts, x (first difference: ts where the schema has k); Spark "
        "reads CSV columns by their place: write the schema in the header's order, or fix the file"
    ]


def _csv_events(folder, files: int) -> None:
    for f in range(files):
        path = folder / "events" / f"f{f}.csv"
        path.write_text("k,ts,x\n" + "".join(f"a,2024-01-01 00:{f:02d}:{i:02d},{i}\n" for i in range(5)))
        os.utime(path, (1_000 + f, 1_000 + f))


def test_garbled_checkpoint_offsets_are_one_line_naming_the_file_before_spark(
    spark, tmp_path, capsys, monkeypatch
):
    view = _view(tmp_path, CSV_VIEW.replace('schema = "', 'max_files_per_trigger = 1\nschema = "'))
    _csv_events(tmp_path, 2)
    assert main(["run", view, "--once", "--quiet"]) == 0
    offsets = tmp_path / "chk" / "offsets"
    last = offsets / max((n for n in os.listdir(offsets) if n.isdigit()), key=int)
    kept = last.read_bytes()
    monkeypatch.setattr(job, "local_spark", lambda *a, **k: pytest.fail("Spark was started"))
    lead = f"overwindow: {view}: [sink] checkpoint (line 19): the checkpoint file {last} is not as Spark"
    way = "it was changed or cut short. Put back the file from a copy of the checkpoint, or start from a new"
    for garbled, why in [
        (
            kept[:20] + b"\x00\xff garbled" + kept[30:],
            f"(its checksum in {offsets / ('.' + last.name + '.crc')}",
        ),
        (kept[: len(kept) // 2], "(not JSON: "),  # cut short, and Hadoop's checksum gone with it
    ]:
        last.write_bytes(garbled)
        if why.startswith("(not JSON"):
            (offsets / f".{last.name}.crc").unlink()
        for command in (["run", view, "--once"], ["validate", view]):
            assert main(command) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and err[0].startswith(f"{lead} writes it {why}") and way in err[0], err


def test_a_pyspark_python_without_the_libraries_is_refused_before_spark(
    no_spark, tmp_path, capsys, monkeypatch
):
    """Issue 40, item 13: the run failed on ModuleNotFoundError after minutes in Spark."""
    from pyspark.sql import SparkSession

    bare = tmp_path / "bare"  # a Python of this version with none of the libraries
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    monkeypatch.setenv("PYSPARK_PYTHON", str(bare / "bin" / "python"))
    monkeypatch.chdir(tmp_path)  # (a source tree's overwindow would be found from there)
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda self: pytest.fail("Spark was started"))
    view = _view(tmp_path)
    _csv_events(tmp_path, 1)
    assert main(["run", view, "--once"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"overwindow: PYSPARK_PYTHON={bare / 'bin' / 'python'} cannot run overwindow's Python workers: it "
        f"lacks numpy, pandas, pyarrow, overwindow. Point PYSPARK_PYTHON at a Python with overwindow "
        f"installed (this command runs {sys.executable}), or unset it to use that one"
    ]
    monkeypatch.setenv("PYSPARK_PYTHON", str(tmp_path / "no-python"))
    assert main(["run", view, "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"overwindow: PYSPARK_PYTHON={tmp_path / 'no-python'} cannot run overwindow's")
    assert "FileNotFoundError" in err and len(err.splitlines()) == 1


def test_run_says_the_warnings_validate_says_once_before_spark(tmp_path, capsys, without_spark):
    """Issue 40, item 17: validate warned that the watermark is not on the ORDER BY column (the state
    keeps every row); run said nothing. Each warning comes once (validate said its file's twice)."""
    text = CSV_VIEW.replace("ts TIMESTAMP,", "ts TIMESTAMP, seen TIMESTAMP,").replace(
        "[view]", '[watermark]\ncolumn = "seen"\ndelay = "1 minute"\n\n[view]'
    )
    view = _view(tmp_path, text.replace("[sink]", '[sink]\ndsn_env = "X"'))
    warning = (
        f"overwindow: warning: {view}: [watermark] column (line 9): the watermark is on `seen`, not on "
        "the ORDER BY column `ts`: no row is ever late and the state keeps every row"
    )
    unused = "[sink] dsn_env (line 19): not used when [sink] kind = 'sqlite'"
    assert main(["validate", view]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err.count(warning) == 1 and sum(unused in line for line in err) == 1, err
    assert main(["run", view, "--once"]) == 1  # Spark would start here
    err = capsys.readouterr().err.splitlines()
    assert err.count(warning) == 1 and sum(unused in line for line in err) == 1, err
    assert err[-2:] == ["overwindow: Spark was started", "overwindow: (run with --debug for the trace)"]


def test_a_view_past_max_rows_per_key_is_told_of_the_first_batch_and_the_others_go_on(
    spark, tmp_path, capsys
):
    """Issue 40, item 14: on the first micro-batch (no watermark yet) the bound's message advised
    adding the watermark the view has; and the failing view stopped the other view of the run."""
    import sqlite3

    import pyarrow as pa

    import overwindow

    watermarked = CSV_VIEW.replace("[view]", '[watermark]\ncolumn = "ts"\ndelay = "1 minute"\n\n[view]')
    bounded = _view(tmp_path / "a", watermarked.replace("[sink]", "max_rows_per_key = 3\n\n[sink]"))
    free = _view(tmp_path / "b", watermarked.replace('path = "events"', 'path = "../a/events"'))
    _csv_events(tmp_path / "a", 2)  # 5 rows of key a per file
    assert main(["run", bounded, free, "--once", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"overwindow: {bounded}: [view] max_rows_per_key (line "), err
    assert (
        "holds 10 rows in state, more than max_rows_per_key = 3; rows leave the state as the watermark "
        in err[0]
    )
    assert (
        "but Spark sets none before the first micro-batch ends" in err[0] and "add a watermark" not in err[0]
    )
    # the other view ran to its end: its table is the batch evaluator's over every row
    rows = [{"k": "a", "ts": f"2024-01-01 00:{f:02d}:{i:02d}", "x": i} for f in range(2) for i in range(5)]
    table = pa.Table.from_pylist(rows)
    table = table.set_column(1, "ts", table["ts"].cast(pa.timestamp("us")))
    want = overwindow.evaluate(table, "sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING) AS s")
    with sqlite3.connect(tmp_path / "b" / "view.sqlite") as con:
        got = sorted(con.execute('SELECT x, s FROM "v" ORDER BY ts').fetchall())
    assert got == sorted(zip(want["x"].to_pylist(), want["s"].to_pylist()))


def test_a_view_whose_python_worker_starts_too_slowly_for_spark_starts_again_and_loses_nothing(
    spark, tmp_path, capsys, monkeypatch
):
    """Spark gives the Python worker transformWithStateInPandas starts for a query's state schema 10
    seconds to connect back; a busy machine (a job of many views on two cores) made one miss that and
    the view failed. Here the first such worker starts 11 seconds late (a PYSPARK_PYTHON that waits
    once): the job says so, starts the view again from its checkpoint, and the table is exact."""
    from replay_support import assert_view_is_exact, write_view

    late = tmp_path / "late"
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        'case "$*" in *transform_with_state_driver_worker*)\n'
        f'  if mkdir "{late}" 2>/dev/null; then sleep 11; fi ;;\n'
        "esac\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    python.chmod(0o755)
    view, rows = write_view(tmp_path, "on_update", "sqlite", layout="chunked", files=2)
    monkeypatch.setenv("PYSPARK_PYTHON", str(python))
    monkeypatch.setattr(spark.sparkContext, "pythonExec", str(python))
    assert main(["run", str(view), "--once", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert late.exists()  # the slow start happened
    assert (
        f"overwindow: {view}: Spark's Python worker did not connect back in time (started on a busy "
        "machine); the view starts again from its checkpoint (1 of 3)"
    ) in err, err
    assert_view_is_exact(tmp_path, rows, "on_update", "sqlite")
