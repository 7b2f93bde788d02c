"""Stock price minus its previous price, per stock, emitted when the watermark closes each tick.

python examples/price_diff.py [WORKDIR]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import collect, workdir, write_json  # noqa: E402

import overwindow  # noqa: E402
from overwindow.pipeline.session import local_spark  # noqa: E402

TICKS = [
    {"stock": s, "ts": f"2024-05-01T09:30:{i:02d}", "tick": n, "price": p}
    for n, (s, i, p) in enumerate(
        [
            ("ACME", 0, 10.0),
            ("INIT", 1, 55.0),
            ("ACME", 2, 10.5),
            ("ACME", 5, 10.25),
            ("INIT", 6, 54.0),
            ("ACME", 9, 11.0),
            ("INIT", 12, 54.5),
            ("ACME", 30, 11.5),
        ]
    )
]


def run(spark, work: str) -> list[dict]:
    write_json(os.path.join(work, "ticks"), "ticks.json", TICKS, 0)
    ticks = (
        spark.readStream.schema("stock STRING, ts TIMESTAMP, tick BIGINT, price DOUBLE")
        .json(os.path.join(work, "ticks"))
        .withWatermark("ts", "5 seconds")
    )
    spec = overwindow.OverWindow("price - lag(price) OVER (ORDER BY ts) AS price_diff", rowKey="tick")
    return collect(ticks.groupBy("stock").overWindow(spec), os.path.join(work, "chk"))


if __name__ == "__main__":
    for row in sorted(run(local_spark(), workdir(sys.argv)), key=lambda r: r["tick"]):
        print(row["stock"], row["ts"], row["price"], row["price_diff"])
