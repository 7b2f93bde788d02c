"""Failures of `overwindow run` that say their cause in one line, naming the file or setting behind
it, with no Spark internals (issue 40, items 10 to 17). Tests that end before Spark starts make
starting it fail the test."""

import os
import textwrap

from overwindow.__main__ import main

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
