"""The demo command prints the moving average of the bundled plant data; values from DuckDB."""

import duckdb

from overwindow.__main__ import main, sample_table


def test_demo_prints_the_moving_average(capsys):
    assert main(["demo"]) == 0
    printed = capsys.readouterr().out
    con = duckdb.connect()
    con.register("t", sample_table())
    rows = con.execute(
        "SELECT plant, avg(mwh) OVER (PARTITION BY plant ORDER BY date "
        "RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING) FROM t").fetchall()
    assert rows
    for plant, avg in rows:
        assert plant in printed
        assert f"{avg:,.2f}" in printed
