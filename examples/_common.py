"""Shared by the examples: write a list of dicts as a JSON file the stream picks up, run a query to the
end."""

import json
import os
import tempfile


def write_json(folder: str, name: str, rows: list[dict], order: int) -> None:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    os.utime(path, (1_000_000 + order, 1_000_000 + order))  # files are read oldest first


def workdir(argv) -> str:
    return argv[1] if len(argv) > 1 else tempfile.mkdtemp(prefix="overwindow-example-")


def collect(query_df, checkpoint: str, mode: str = "append") -> list[dict]:
    """Run a streaming DataFrame with availableNow and return every row it emitted, in order."""
    rows: list[dict] = []
    q = (
        query_df.writeStream.foreachBatch(lambda df, _: rows.extend(df.toPandas().to_dict("records")))
        .option("checkpointLocation", checkpoint)
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return rows
