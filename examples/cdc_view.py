"""A CDC stream (inserts, updates, deletes) kept as a view in emit-on-update mode: the changelog is
applied to a dict keyed by (account, id), as a table sink would.

    python examples/cdc_view.py [WORKDIR]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import workdir, write_json  # noqa: E402

import overwindow  # noqa: E402
from overwindow.pipeline.session import local_spark  # noqa: E402

CHANGES = [
    [
        {"account": "A", "id": 1, "ts": 1, "amount": 100.0, "op": "c"},
        {"account": "A", "id": 2, "ts": 2, "amount": 50.0, "op": "c"},
        {"account": "B", "id": 3, "ts": 1, "amount": 10.0, "op": "c"},
        {"account": "A", "id": 4, "ts": 3, "amount": 25.0, "op": "c"},
    ],
    [
        {"account": "A", "id": 2, "ts": 2, "amount": 55.0, "op": "u"},
        {"account": "B", "id": 5, "ts": 2, "amount": 5.0, "op": "c"},
    ],
    [
        {"account": "A", "id": 1, "ts": 1, "amount": 100.0, "op": "d"},
        {"account": "A", "id": 4, "ts": 0, "amount": 25.0, "op": "u"},
    ],
]


def run(spark, work: str) -> dict:
    view: dict = {}

    def apply(df, batch_id):
        for r in df.toPandas().to_dict("records"):
            key = (r["account"], r["id"])
            if r["_change"] == "delete":
                view.pop(key, None)
            else:
                view[key] = r

    spec = overwindow.OverWindow(
        "sum(amount) OVER (ORDER BY ts) AS balance",
        "row_number() OVER (ORDER BY ts) AS nth",
        emit="on_update",
        rowKey="id",
        opColumn="op",
    )
    for n, batch in enumerate(CHANGES):
        write_json(os.path.join(work, "cdc"), f"{n}.json", batch, n)
        stream = spark.readStream.schema(
            "account STRING, id BIGINT, ts BIGINT, amount DOUBLE, op STRING"
        ).json(os.path.join(work, "cdc"))
        q = (
            stream.groupBy("account")
            .overWindow(spec)
            .writeStream.foreachBatch(apply)
            .option("checkpointLocation", os.path.join(work, "chk"))
            .outputMode("update")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
    return view


if __name__ == "__main__":
    for key, row in sorted(run(local_spark(), workdir(sys.argv)).items()):
        print(key, row["ts"], row["amount"], row["balance"], row["nth"])
