"""Average amount of each user's 10 previous orders (not counting the current one).

python examples/previous_orders.py [WORKDIR]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import collect, workdir, write_json  # noqa: E402

import overwindow  # noqa: E402
from overwindow.pipeline.session import local_spark  # noqa: E402


def orders():
    out = []
    for n in range(60):
        out.append(
            {
                "user_id": f"u{n % 4}",
                "order_id": n,
                "order_time": f"2024-05-01T10:{n:02d}:00",
                "amount": float((n * 37) % 100 + 1),
            }
        )
    return out


def run(spark, work: str) -> list[dict]:
    rows = orders()
    write_json(os.path.join(work, "orders"), "a.json", rows[:30], 0)
    write_json(os.path.join(work, "orders"), "b.json", rows[30:], 1)
    stream = (
        spark.readStream.schema("user_id STRING, order_id BIGINT, order_time TIMESTAMP, amount DOUBLE")
        .option("maxFilesPerTrigger", 1)
        .json(os.path.join(work, "orders"))
        .withWatermark("order_time", "1 minute")
    )
    spec = overwindow.OverWindow(
        "avg(amount) OVER (ORDER BY order_time ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING) "
        "AS recent_10_orders_avg_amount",
        rowKey="order_id",
    )
    return collect(stream.groupBy("user_id").overWindow(spec), os.path.join(work, "chk"))


if __name__ == "__main__":
    for row in sorted(run(local_spark(), workdir(sys.argv)), key=lambda r: r["order_id"]):
        print(row["user_id"], row["order_id"], row["amount"], row["recent_10_orders_avg_amount"])
