"""Support for the emit-on-update tests: random CDC micro-batches (inserts, deletes and updates, which
may move a row in time) over a dict of the live rows the test keeps as its oracle's input, and calls
whose frames reach far (many rows, wide RANGE and GROUPS frames) for large partitions."""

import numpy as np
import pyarrow as pa

from overwindow.streaming.assemble import PART


def apply_changelog(view: dict, changelog: pa.Table) -> None:
    """A machine's changelog applied to ``view`` as a sink keyed by (partition key ``k``, row key
    ``id``) applies it: an upsert keeps its row, a delete removes it."""
    for r in changelog.to_pylist():
        if r["_change"] == "delete":
            view.pop((r["k"], r["id"]), None)
        else:
            view[(r["k"], r["id"])] = r


def random_cdc_batch(
    rng,
    live: dict,
    next_id: int,
    size: int,
    t_hi: int = 15,
    keys: int = 3,
    value: str = "x",
    null_key: bool = False,
):
    """``size`` changes: 60% inserts (new ids), 20% deletes and 20% updates of live rows; ``live``
    ((k, id) -> row) is updated to match. ``keys``: partition keys 0 to keys - 1 (``null_key``: NULL
    in place of 0); ``value``: the value column, ``x`` (a float, 15% NULL) or ``u`` (an integer in
    [0, 100)). Returns (the rows with their ``op``, the next free id)."""
    batch = []
    for _ in range(size):
        choice = rng.random()
        if value == "x":
            x = None if rng.random() < 0.15 else float(rng.integers(-20, 20))
        else:
            x = int(rng.integers(0, 100))
        if choice < 0.6 or not live:
            k = int(rng.integers(0, keys))
            row = {
                "k": None if null_key and k == 0 else k,
                "id": next_id,
                "t": int(rng.integers(0, t_hi)),
                value: x,
                "op": "insert",
            }
            next_id += 1
        else:
            old = live[list(live)[int(rng.integers(0, len(live)))]]
            row = (
                dict(old, op="delete")
                if choice < 0.8
                else dict(old, t=int(rng.integers(0, t_hi)), **{value: x}, op="update")
            )
        batch.append(row)
        key = (row["k"], row["id"])
        if row["op"] == "delete":
            live.pop(key, None)
        else:
            live[key] = {c: row[c] for c in ("k", "id", "t", value)}
    return batch, next_id


WIDE_CALLS = [
    (
        "sum(u) OVER (ORDER BY t ROWS BETWEEN 3 PRECEDING AND 2 FOLLOWING) AS s",
        "lag(u, 40) OVER (ORDER BY t) AS l",
        "lead(u, 2) OVER (ORDER BY t) AS ld",
    ),
    (
        "count(*) OVER (ORDER BY t RANGE BETWEEN 30 PRECEDING AND 5 FOLLOWING) AS c",
        "max(u) OVER (ORDER BY t GROUPS BETWEEN 20 PRECEDING AND CURRENT ROW EXCLUDE TIES) AS m",
    ),
    (
        "min(u) OVER (ORDER BY t DESC RANGE BETWEEN 3 PRECEDING AND 60 FOLLOWING EXCLUDE GROUP) AS mn",
        "first_value(u) OVER (ORDER BY t DESC ROWS BETWEEN 1 FOLLOWING AND 50 FOLLOWING) AS fv",
    ),
]
WIDE = pa.schema(
    [("k", pa.int64()), ("id", pa.int64()), ("t", pa.int64()), ("u", pa.int64()), ("op", pa.string())]
)


def parts_of(outputs, results, names, extra=()):
    """Several window groups' outputs (one table per group, from its machine) as the Assembler's
    parts, as the Spark hosting sends them: the input columns ``names``, every group's window columns
    (``results``, one schema per group; NULL but the part's own group's), the ``extra`` columns of
    the outputs (``_change``), and ``PART``."""
    tables = []
    for g, out in enumerate(outputs):
        columns = {n: out.column(n) for n in names}
        for h, r in enumerate(results):
            for f in r:
                columns[f.name] = out.column(f.name) if h == g else pa.nulls(out.num_rows, f.type)
        for name in extra:
            columns[name] = out.column(name)
        columns[PART] = pa.array(np.full(out.num_rows, g, dtype=np.int32))
        tables.append(pa.table(columns))
    return pa.concat_tables(tables)
