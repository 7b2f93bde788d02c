"""Top-N pruning (``overwindow.streaming.topn``): over insert-only input, emit on update keeps only
the rows a Top-N ``qualify`` can still let in. Oracle: the batch evaluator over the live rows with
the condition applied in plain Python, after every micro-batch; the state holds exactly the rows
within the bound (with the peers of the last one when a call reads its peers), fewer when a
watermark evicts from the front."""

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.spec import OverWindow
from overwindow.streaming.contract import CHANGE, DELETE, ROW_ID
from overwindow.streaming.driver import Driver

SCHEMA = pa.schema([("k", pa.int64()), ("t", pa.int64()), ("x", pa.int64())])

# (calls over ORDER BY {o}; the condition, N written {n}; the same in Python (NULL is not true); the
# largest r it lets through, given N; whether a call's reach takes the current row's peers, so a cut
# keeps whole peer groups)
CASES = [
    (  # row_number over ROWS frames and lag: N rows per partition
        (
            "row_number() OVER (ORDER BY {o}) AS r",
            "sum(x) OVER (ORDER BY {o} ROWS 2 PRECEDING) AS s",
            "lag(x) OVER (ORDER BY {o}) AS p",
        ),
        "r <= {n}",
        lambda row, n: row["r"] <= n,
        lambda n: n,
        False,
    ),
    (  # row_number alone: eviction keeps only the peer group it reads, so it meets the pruning
        ("row_number() OVER (ORDER BY {o}) AS r",),
        "r < {n} + 1",
        lambda row, n: row["r"] <= n,
        lambda n: n,
        False,
    ),
    (  # one row per key
        ("row_number() OVER (ORDER BY {o}) AS r", "x - lag(x) OVER (ORDER BY {o}) AS p"),
        "r = 1",
        lambda row, n: row["r"] == 1,
        lambda n: 1,
        False,
    ),
    (  # row_number beside a RANGE frame: the last kept row's peers stay
        ("row_number() OVER (ORDER BY {o}) AS r", "sum(x) OVER (ORDER BY {o}) AS s"),
        "{n} >= r",
        lambda row, n: row["r"] <= n,
        lambda n: n,
        True,
    ),
    (  # rank, another conjunct
        (
            "rank() OVER (ORDER BY {o}) AS r",
            "min(x) OVER (ORDER BY {o} RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS s",
        ),
        "x IS NOT NULL AND r < {n} + 1",
        lambda row, n: row["x"] is not None and row["r"] < n + 1,
        lambda n: n,
        True,
    ),
    (  # dense_rank, a GROUPS frame
        (
            "dense_rank() OVER (ORDER BY {o}) AS r",
            "max(x) OVER (ORDER BY {o} GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s",
        ),
        "r BETWEEN 1 AND {n}",
        lambda row, n: 1 <= row["r"] <= n,
        lambda n: n,
        True,
    ),
]


def _null_first(row: tuple) -> tuple:
    return tuple((v is not None, v if v is not None else 0) for v in row)


class Oracle:
    """Runs a spec over a stream of (k, t, x) inserts on the driver and checks, after every
    micro-batch, the table kept from its changelog against the batch evaluator over the live rows
    with the condition (``keep``) applied; without a row key against ``SCHEMA``'s rows, with one
    (``rid``, and an ``op`` column with ``cdc``) against numbered rows."""

    def __init__(self, calls, condition, keep, buckets=None, watermarked=False, row_key=False, cdc=False):
        kw = {"rowKey": "rid"} if row_key else {}
        kw.update({"opColumn": "op"} if cdc else {})
        self.spec = OverWindow(*calls, emit="on_update", qualify=condition, keyBuckets=buckets, **kw)
        self.batch = OverWindow(*calls, emit="on_update").partitioned(("k",))
        self.keep, self.row_key, self.cdc = keep, row_key, cdc
        self.schema = SCHEMA.append(pa.field("rid", pa.int64())) if row_key else SCHEMA
        schema = self.schema.append(pa.field("op", pa.string())) if cdc else self.schema
        self.driver = Driver(self.spec, schema, ["k"], watermarked=watermarked)
        self.live: Counter = Counter()  # the rows held live, as tuples of ``self.schema``
        self.next_id = 0
        self.view: dict = {}

    def feed(self, batch: list[tuple], watermark=None) -> list[dict]:
        """One micro-batch of (k, t, x) inserts (rows below ``watermark`` are late); returns the
        batch result over the live rows, unfiltered."""
        if self.row_key:
            batch = [(*r, self.next_id + i) for i, r in enumerate(batch)]
            self.next_id += len(batch)
        rows = pa.Table.from_pylist([dict(zip(self.schema.names, r)) for r in batch], schema=self.schema)
        if self.cdc:
            rows = rows.append_column("op", pa.array(["insert"] * rows.num_rows))
        for r in self.driver.feed(rows, watermark).to_pylist():
            key = r["rid"] if self.row_key else r[ROW_ID]
            if r[CHANGE] == DELETE:
                assert key in self.view, "a delete of a row the result does not hold"
                del self.view[key]
            else:
                assert self.view.get(key) != r, "an upsert that changes nothing"
                self.view[key] = r
        fresh = Counter(r for r in batch if watermark is None or r[1] >= watermark)
        # without a row key a row repeated in a later batch is the held row again (its identity
        # hashes the whole row and its ordinal among its batch's copies): the machine's rule today
        self.live = self.live + fresh if self.row_key else self.live | fresh
        # held ties fall by the row key, else by all columns (NULLs first): the evaluator's sort is
        # stable, so feed it the rows in that order
        ordered = sorted(self.live.elements(), key=(lambda r: r[-1]) if self.row_key else _null_first)
        table = pa.Table.from_pylist([dict(zip(self.schema.names, r)) for r in ordered], schema=self.schema)
        want = overwindow.evaluate(table, *self.batch).to_pylist()
        names = [c for c in (want[0] if want else ()) if c != "rid"]
        got = Counter(tuple(r[c] for c in names) for r in self.view.values())
        assert got == Counter(tuple(r[c] for c in names) for r in want if self.keep(r))
        return want


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    case=st.sampled_from(CASES),
    order=st.sampled_from(["t", "t DESC", "t DESC NULLS FIRST", "t NULLS LAST"]),
    top=st.integers(1, 3),
    buckets=st.sampled_from([None, 2]),
    watermarked=st.booleans(),
)
def test_insert_only_top_n_holds_only_the_rows_within_the_bound(seed, case, order, top, buckets, watermarked):
    """Random inserts with ties, NULL keys, NULL ORDER BY values (not under a watermark: a bad row
    there), repeated rows, several partitions, a state per key or buckets of keys; with a watermark
    on an ascending ORDER BY, eviction at the front and pruning at the back together."""
    calls, condition, keep, bound, peers = case
    order = "t" if watermarked else order
    bound = bound(top)
    oracle = Oracle(
        [c.format(o=order) for c in calls],
        condition.format(n=top),
        lambda row: keep(row, top),
        buckets,
        watermarked,
    )
    rng = np.random.default_rng(seed)
    high = 0
    for b in range(int(rng.integers(2, 6))):
        batch = [
            (
                None if rng.random() < 0.15 else int(rng.integers(0, 2)),
                None if rng.random() < 0.15 and not watermarked else high + int(rng.integers(-3, 5)),
                None if rng.random() < 0.15 else int(rng.integers(0, 3)),
            )
            for _ in range(int(rng.integers(1, 10)))
        ]
        batch += batch[: int(rng.integers(0, 3))]  # copies of a row in one batch
        watermark = high - 2 if watermarked and b else None
        want = oracle.feed(batch, watermark)
        high = max([high] + [r[1] for r in batch if r[1] is not None])
        # the rows a step may keep: r within the bound, or a peer of such a row when calls read peers
        within = Counter((r["k"], r["t"]) for r in want if r["r"] <= bound)
        kept = sum(1 for r in want if r["r"] <= bound or (peers and within[(r["k"], r["t"])]))
        if watermarked:  # eviction drops more, from the front
            assert oracle.driver.state_rows() <= kept
        else:
            assert oracle.driver.state_rows() == kept
        if not peers:
            assert oracle.driver.state_rows() <= bound * len({r["k"] for r in want})


RN = "row_number() OVER (ORDER BY t) AS r"


@pytest.mark.parametrize(
    "calls, condition, keep, kw",
    [
        # a repeated row key is an update, which may move its row back into the top N
        ((RN,), "r <= 2", lambda row: row["r"] <= 2, {"row_key": True}),
        ((RN,), "r <= 2", lambda row: row["r"] <= 2, {"row_key": True, "cdc": True}),
        # calls whose value reads rows after the current one
        ((RN, "lead(x) OVER (ORDER BY t) AS p"), "r <= 2", lambda row: row["r"] <= 2, {}),
        ((RN, "lag(x, -1) OVER (ORDER BY t) AS p"), "r <= 2", lambda row: row["r"] <= 2, {}),
        ((RN, "ntile(2) OVER (ORDER BY t) AS p"), "r <= 2", lambda row: row["r"] <= 2, {}),
        (
            (RN, "sum(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS p"),
            "r <= 2",
            lambda row: row["r"] <= 2,
            {},
        ),
        # conditions that bound no ranking call
        ((RN, "sum(x) OVER (ORDER BY t) AS s"), "s <= 2", lambda row: row["s"] <= 2, {}),
        ((RN,), "r <= 2 OR x > 1", lambda row: row["r"] <= 2 or row["x"] > 1, {}),
        ((RN,), "r >= 2", lambda row: row["r"] >= 2, {}),
        ((RN,), "NOT r > 2", lambda row: row["r"] <= 2, {}),
        ((RN,), "x <= 1", lambda row: row["x"] <= 1, {}),
        (("row_number() OVER (ORDER BY t) + 0 AS r",), "r <= 2", lambda row: row["r"] <= 2, {}),
    ],
)
def test_no_pruning_unless_every_condition_holds(calls, condition, keep, kw):
    """Where pruning would be unsound (or bounds nothing), every live row stays, as before."""
    oracle = Oracle(calls, condition, keep, **kw)
    assert oracle.driver.machine.top_n is None
    batches = [[(0, 3, 1), (0, 1, 2), (1, 2, 0), (0, 1, 0)], [(0, 0, 2), (1, 5, 1), (1, 1, 1), (0, 2, 0)]]
    for batch in batches:
        oracle.feed(batch)
    assert oracle.driver.state_rows() == 8
    assert oracle.driver.pruned_rows == 0
