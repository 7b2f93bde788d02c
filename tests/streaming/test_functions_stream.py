"""The aggregates added beside the first ones (collections, max_by / min_by, the moments and
regressions, try_sum / try_avg, the bitwise ones, counter_diff, the approximate ones) through both
emit modes, against the
batch evaluator: on update, after every micro-batch the table kept from the changelog equals the
batch result over the live rows; on window close, every row is emitted once, with the batch
result over all rows. Values are NULL, NaN, +-inf, ties and a row key breaking them."""

import math

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.spec import OverWindow
from overwindow.streaming.contract import END_OF_INPUT
from overwindow.streaming.driver import Driver

SCHEMA = pa.schema(
    [
        ("k", pa.int64()),
        ("t", pa.int64()),
        ("rid", pa.int64()),
        ("x", pa.float64()),
        ("i", pa.int64()),
        ("s", pa.string()),
        ("c", pa.int64()),
    ]
)
ROWS = "ROWS BETWEEN 3 PRECEDING AND CURRENT ROW"
AHEAD = "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING"
CALLS = (
    f"collect_list(s) OVER (ORDER BY t {ROWS}) AS cl",
    f"collect_list(s) RESPECT NULLS OVER (ORDER BY t {AHEAD}) AS cn",
    f"collect_set(i) OVER (ORDER BY t {AHEAD}) AS cs",
    f"listagg(s, '|') OVER (ORDER BY t {ROWS}) AS la",
    "max_by(s, x) OVER (ORDER BY t RANGE BETWEEN 4 PRECEDING AND CURRENT ROW) AS mb",
    f"min_by(i, x) OVER (ORDER BY t {AHEAD}) AS nb",
    f"max_by(s, i, 2) OVER (ORDER BY t {ROWS}) AS mk",
    f"corr(x, i) OVER (ORDER BY t {ROWS}) AS co",
    f"covar_samp(x, i) OVER (ORDER BY t {AHEAD}) AS cv",
    f"regr_slope(x, i) OVER (ORDER BY t {ROWS}) AS sl",
    f"regr_intercept(x, i) OVER (ORDER BY t {ROWS}) AS ic",
    f"regr_r2(i, x) OVER (ORDER BY t {AHEAD}) AS r2",
    f"regr_sxy(x, i) OVER (ORDER BY t {ROWS}) AS sxy",
    f"regr_count(x, i) OVER (ORDER BY t {ROWS}) AS rc",
    f"regr_avgx(x, i) OVER (ORDER BY t {ROWS}) AS ax",
    f"skewness(x) OVER (ORDER BY t {ROWS}) AS sk",
    f"kurtosis(i) OVER (ORDER BY t {AHEAD}) AS ku",
    f"try_sum(i) OVER (ORDER BY t {ROWS}) AS ts",
    f"try_avg(x) OVER (ORDER BY t {AHEAD}) AS ta",
    f"bit_xor(i) OVER (ORDER BY t {ROWS}) AS bx",
    f"bit_and(c) OVER (ORDER BY t {AHEAD}) AS ba",
    "bit_or(c) OVER (ORDER BY t GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) AS bo",
    "counter_diff(c) OVER (ORDER BY t) AS cd",
    f"approx_count_distinct(s) OVER (ORDER BY t {AHEAD}) AS ad",
    "approx_count_distinct(i, 0.39) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ar",
    f"percentile_approx(x, array(0.5, 0.1), 2) OVER (ORDER BY t {AHEAD}) AS pa",
    "percentile_approx(i, 0.5, 3) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS pr",
    f"histogram_numeric(i, 2) OVER (ORDER BY t {AHEAD}) AS hn",
    "histogram_numeric(x, 3) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING) AS hr",
)
NAMES = [c.rsplit(" AS ", 1)[1] for c in CALLS]
X = [None, math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.25, 1e3, 7.0, 3.125]
I64 = [None, 0, 1, -3, 5, 2**62, -(2**62), 7]


def _rows(rng, n: int, next_id: int, t0: int) -> list[dict]:
    """n rows after time t0 (ties), two keys and a NULL key, values drawn from the edge cases; the
    counter ``c`` grows with time but for a reset now and then."""
    out = []
    for j in range(n):
        out.append(
            {
                "k": [1, 2, None][int(rng.integers(3))],
                "t": t0 + int(rng.integers(0, 3)),
                "rid": next_id + j,
                "x": X[int(rng.integers(len(X)))],
                "i": I64[int(rng.integers(len(I64)))],
                "s": [None, "a", "b", "ab", ""][int(rng.integers(5))],
                "c": None if rng.random() < 0.1 else int(rng.integers(0, 50)),
            }
        )
    return out


def _same(a, b) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) or isinstance(b, dict):  # histogram_numeric's bins
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and _same(list(a.values()), list(b.values()))
        )
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    return a == b


def _batch(rows: list[dict]) -> dict:
    """The batch evaluator's values over ``rows``, by (key, rid)."""
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    spec = OverWindow(*CALLS, rowKey="rid")
    out = overwindow.evaluate(
        table.sort_by([("t", "ascending"), ("rid", "ascending")]), *spec.partitioned(("k",))
    )
    return {(r["k"], r["rid"]): r for r in out.to_pylist()}


def _check(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for key, row in want.items():
        for name in NAMES:
            assert _same(got[key][name], row[name]), (name, key, got[key][name], row[name])


def _changes(rng, live: dict, next_id: int, size: int) -> tuple[list[dict], int]:
    """``size`` changes: inserts of new rows, deletes and updates (new values and time) of live ones;
    ``live`` ((k, rid) -> row) follows them."""
    batch = []
    for _ in range(size):
        fresh = _rows(rng, 1, next_id, 0)[0]
        choice = rng.random()
        if choice < 0.6 or not live:
            row, next_id = dict(fresh, op="insert"), next_id + 1
        else:
            old = live[list(live)[int(rng.integers(len(live)))]]
            new = {c: fresh[c] for c in ("t", "x", "i", "s", "c")}
            row = dict(old, op="delete") if choice < 0.8 else dict(old, **new, op="update")
        batch.append(row)
        key = (row["k"], row["rid"])
        if row["op"] == "delete":
            live.pop(key, None)
        else:
            live[key] = {c: row[c] for c in SCHEMA.names}
    return batch, next_id


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_batches=st.integers(1, 6), size=st.integers(1, 20))
def test_on_update_equals_batch_after_every_batch(seed, n_batches, size):
    rng = np.random.default_rng(seed)
    cdc = SCHEMA.append(pa.field("op", pa.string()))
    spec = OverWindow(*CALLS, emit="on_update", rowKey="rid", opColumn="op")
    driver = Driver(spec, cdc, ["k"])
    live, view, next_id = {}, {}, 0
    for _ in range(n_batches):
        batch, next_id = _changes(rng, live, next_id, size)
        out = driver.feed(pa.Table.from_pylist(batch, schema=cdc))
        for r in out.to_pylist():
            if r["_change"] == "delete":
                view.pop((r["k"], r["rid"]), None)
            else:
                view[(r["k"], r["rid"])] = r
        _check(view, _batch(list(live.values())) if live else {})


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_batches=st.integers(1, 6), size=st.integers(1, 20))
def test_window_close_equals_batch(seed, n_batches, size):
    rng = np.random.default_rng(seed)
    spec = OverWindow(*CALLS, rowKey="rid")
    driver = Driver(spec, SCHEMA, ["k"])
    rows, outs, next_id, t = [], [], 0, 0
    for _ in range(n_batches):
        batch = _rows(rng, size, next_id, t)
        next_id, t = next_id + size, t + 3
        rows += batch
        outs.append(driver.feed(pa.Table.from_pylist(batch, schema=SCHEMA), t - 4))
    outs.append(driver.feed(None, END_OF_INPUT))
    emitted = pa.concat_tables(outs).to_pylist()
    assert len({r["rid"] for r in emitted}) == len(emitted) == len(rows)
    _check({(r["k"], r["rid"]): r for r in emitted}, _batch(rows))
