"""Command line: ``overwindow demo`` (and ``python -m overwindow demo``).

``demo`` evaluates window queries over the bundled sample data (daily plant output, after DuckDB's
window-function article) and prints the result: a 7-day moving average and interquartile range per plant.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources

import pyarrow.csv as pv

from overwindow.evaluate import evaluate

DEMO_CALLS = (
    "avg(mwh) OVER (PARTITION BY plant ORDER BY date "
    "RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING) AS mwh_7day_avg",
    "percentile_cont(0.25) WITHIN GROUP (ORDER BY mwh) OVER (PARTITION BY plant ORDER BY date "
    "RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING) AS mwh_7day_q1",
    "percentile_cont(0.75) WITHIN GROUP (ORDER BY mwh) OVER (PARTITION BY plant ORDER BY date "
    "RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING) AS mwh_7day_q3",
    "mwh - lag(mwh) OVER (PARTITION BY plant ORDER BY date) AS change",
    "rank() OVER (PARTITION BY plant ORDER BY mwh DESC) AS output_rank",
)


def sample_table():
    """The bundled plant-output sample as an Arrow table (plant, date, mwh)."""
    path = resources.files("overwindow").joinpath("data/plant_generation.csv")
    with resources.as_file(path) as p:
        return pv.read_csv(p)


def demo(args) -> int:
    table = sample_table()
    print(f"overwindow demo: {table.num_rows} rows of daily plant output (overwindow/data/plant_generation.csv)")
    for call in DEMO_CALLS:
        print("  " + call)
    out = evaluate(table, *DEMO_CALLS).to_pandas().sort_values(["plant", "date"])
    with_pd_options(lambda: print(out.to_string(index=False)))
    return 0


def with_pd_options(fn):
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:,.2f}".format):
        fn()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="overwindow", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="evaluate window queries over the bundled sample data and print them")
    args = parser.parse_args(argv)
    return {"demo": demo}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
