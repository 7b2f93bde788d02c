"""The plant 7-day moving average and interquartile range (DuckDB's window article), as a stream.

python examples/plant_moving_average.py [WORKDIR]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import collect, workdir  # noqa: E402

import overwindow  # noqa: E402
from overwindow.pipeline.demo import replay_files  # noqa: E402
from overwindow.pipeline.session import local_spark  # noqa: E402

SEVEN_DAYS = "ORDER BY day RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING"


def run(spark, work: str) -> list[dict]:
    replay_files(os.path.join(work, "incoming"))  # the bundled sample, one CSV file per month
    plants = (
        spark.readStream.schema("plant STRING, day TIMESTAMP, mwh DOUBLE")
        .option("header", "true")
        .option("maxFilesPerTrigger", 3)
        .csv(os.path.join(work, "incoming"))
        .withWatermark("day", "1 day")
    )
    spec = overwindow.OverWindow(
        f"avg(mwh) OVER ({SEVEN_DAYS}) AS avg_7d",
        f"quantile_cont(mwh, [0.25, 0.5, 0.75]) OVER ({SEVEN_DAYS}) AS iqr_7d",
        rowKey=["plant", "day"],
    )
    return collect(plants.groupBy("plant").overWindow(spec), os.path.join(work, "chk"))


if __name__ == "__main__":
    for row in sorted(run(local_spark(), workdir(sys.argv)), key=lambda r: (r["plant"], r["day"]))[-10:]:
        print(
            row["plant"],
            row["day"],
            row["mwh"],
            round(row["avg_7d"], 2),
            [round(q, 1) for q in row["iqr_7d"]],
        )
