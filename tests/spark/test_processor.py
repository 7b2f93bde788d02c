"""The chunked layout's hosting on transformWithStateInPandas, without Spark: a stand-in for Spark's
state handle keeps the value and map state variables in dicts, and ``chunked_processor`` runs emit on
update on them per key and on buckets of keys, with a row key (its map of row identities), deletes
and updates moving rows. After every micro-batch the view its changelog maintains equals the batch
evaluator over the live rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from handback_support import handed_back

import overwindow
from overwindow.spark.adapter import Runner
from overwindow.spark.processor import chunked_processor
from overwindow.spec import OverWindow
from overwindow.streaming.machines import machine_for

CALLS = (
    "sum(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
    "lag(x) OVER (ORDER BY t) AS p",
)
SCHEMA = pa.schema(
    [("k", pa.string()), ("id", pa.int64()), ("t", pa.int64()), ("x", pa.int64()), ("op", pa.string())]
)


class _Value:
    """Spark's ValueState: ``get`` gives a row tuple or None."""

    def __init__(self):
        self.row = None

    def get(self):
        return self.row

    def update(self, row):
        self.row = tuple(row)

    def clear(self):
        self.row = None


class _Map:
    """Spark's MapState, keyed by the key row's tuple."""

    def __init__(self):
        self.entries = {}

    def getValue(self, key):
        return self.entries.get(tuple(key))

    def updateValue(self, key, value):
        self.entries[tuple(key)] = tuple(value)

    def removeKey(self, key):
        self.entries.pop(tuple(key), None)

    def iterator(self):
        return iter(list(self.entries.items()))


class _Handle:
    """The state variables of one grouping key, by name (a fresh processor per key, as Spark scopes
    them)."""

    def __init__(self, store: dict):
        self.store = store

    def getValueState(self, name, schema):
        return self.store.setdefault(name, _Value())

    def getMapState(self, name, key_schema, value_schema):
        return self.store.setdefault(name, _Map())


class _Timers:
    def getCurrentWatermarkInMs(self):
        return 0


def _batches(seed: int):
    """Five micro-batches of inserts, updates (a row's time or key moved) and deletes of rows with
    ids 0..39 over keys a, b, c and NULL, in random order."""
    rng = np.random.default_rng(seed)
    live, out = {}, []
    for _ in range(5):
        rows = []
        for i in rng.choice(40, size=16, replace=False).tolist():
            if i in live and rng.random() < 0.3:
                rows.append({**live.pop(i), "op": "d"})
            else:
                row = {"k": [None, "a", "b", "c"][int(rng.integers(4))], "id": i, "t": int(rng.integers(20))}
                op = "u" if i in live else "c"
                if i in live and live[i]["k"] != row["k"]:  # a key move: delete under the old key first
                    rows.append({**live[i], "op": "d"})
                    op = "c"
                live[i] = {**row, "x": int(rng.integers(-5, 9))}
                rows.append({**live[i], "op": op})
        out.append((rows, {i: dict(r) for i, r in live.items()}))
    return out


def _step(runner, stores, rows, group_of):
    """One micro-batch: the rows grouped as Spark groups them, each group's processor called on its
    state variables; the changelog."""
    frame = pd.DataFrame(rows, columns=SCHEMA.names)
    outputs = []
    for group, part in frame.groupby(frame.apply(group_of, axis=1), dropna=False, sort=False):
        processor = chunked_processor(runner)
        processor.init(_Handle(stores.setdefault(group, {})))
        outputs += list(processor.handleInputRows((group,), iter([part.reset_index(drop=True)]), _Timers()))
    return handed_back(outputs)


@pytest.mark.parametrize("buckets", [None, 2])
@pytest.mark.parametrize("seed", range(3))
def test_the_chunked_processor_keeps_the_view_the_batch_after_every_micro_batch(buckets, seed):
    spec = OverWindow(
        *CALLS,
        emit="on_update",
        rowKey="id",
        opColumn="op",
        stateLayout="chunked",
        keyBuckets="per key" if buckets is None else buckets,
    )
    keys = () if buckets is None else ("k",)
    runner = Runner(spec, SCHEMA, False, keys=keys)
    # chunks of 3 rows (not 512), so that changes reach across chunks and split and empty them
    runner._machine = machine_for(spec, SCHEMA, False, rows_per_chunk=3, keys=keys)
    # a NULL key is a group of its own ("" here: pandas would group it as NaN, never equal to itself)
    group_of = (lambda r: r["k"] or "") if buckets is None else (lambda r: hash(r["k"]) % buckets)
    stores, view = {}, {}
    for rows, live in _batches(seed):
        changelog = _step(runner, stores, rows, group_of)
        # keyed as a sink keys the view: by (partition key, row key)
        for r in [] if changelog is None else changelog.to_pylist():
            if r["_change"] == "delete":
                view.pop((r["k"], r["id"]), None)
            else:
                view[r["k"], r["id"]] = (r["s"], r["p"])
        table = pa.Table.from_pylist(list(live.values()), schema=SCHEMA.remove(SCHEMA.get_field_index("op")))
        table = table.sort_by([("t", "ascending"), ("id", "ascending")])  # peers in row key order, as held
        batch = overwindow.evaluate(table, *OverWindow(*CALLS, rowKey="id").partitioned(("k",)))
        assert view == {(r["k"], r["id"]): (r["s"], r["p"]) for r in batch.to_pylist()}
    assert any("chunks" in s or "key_chunks" in s for s in stores.values())
