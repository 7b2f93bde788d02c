"""Parity with Spark for the aggregates beyond the first ones: random calls of collect_list,
collect_set, listagg, max_by / min_by (with k too), the moments and regressions, try_sum / try_avg,
bit_and / bit_or / bit_xor, counter_diff, percentile_approx, approx_count_distinct and
histogram_numeric over random frames (ROWS and RANGE with offsets, the SQL default, the whole
partition) on the random tables of test_parity.py (NULL, NaN, +-inf, -0.0, DECIMALs of 30 digits,
ties, NULL partition keys) plus a counter column and BIGINTs near 2**62. Each seed's calls run as
a few Spark SELECTs and one ``overwindow.evaluate``; every row must agree in value and type.

Where the order of the rows inside a frame decides the answer (collections, max_by, try_sum's
overflow, the approximate states), the calls order by a unique key so Spark's order is known.
The oracles: Spark's own answer, except for the moments, where Spark's one-pass DOUBLE updates are
less exact than overwindow's (docs/semantics.md, "Differences from Spark"): there the oracle is the frame's
values as Spark collects them (``collect_list`` of the pairs over the same window) and exact
rational arithmetic, and Spark's NULLs and NaNs must be met exactly.

``OVERWINDOW_FUNCTION_CALLS`` (default 240) calls over ``TABLES`` tables.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import sys

import numpy as np
import pyarrow as pa
import pytest
from test_parity import make_table, run_overwindow, run_spark_view

import overwindow
from overwindow.errors import WindowSpecError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "physical"))
from reference_kernels import Pairs, Shape  # noqa: E402 - exact moments of a frame's values

CALLS = int(os.environ.get("OVERWINDOW_FUNCTION_CALLS", "240"))
SEED = int(os.environ.get("OVERWINDOW_PARITY_SEED", "0"))
TABLES = 4
NUMBERS = ("i", "l", "f", "m", "w")
ORDERED_FRAMES = [
    "",
    "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW",
    "ROWS BETWEEN 1 PRECEDING AND 3 FOLLOWING",
    "ROWS BETWEEN 5 PRECEDING AND 1 PRECEDING",
    "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND 2 FOLLOWING",
    "RANGE BETWEEN 3 PRECEDING AND 2 FOLLOWING",  # over the unique rid
    "RANGE BETWEEN CURRENT ROW AND 4 FOLLOWING",
]
PARTITIONS = ["", "PARTITION BY p", "PARTITION BY q", "PARTITION BY p, b"]


def with_columns(table: pa.Table, seed: int) -> pa.Table:
    """test_parity's table plus a counter ``c`` (rising with rid, resets, NULLs) and BIGINTs ``g``
    near 2**62 (try_sum's overflows)."""
    rng = np.random.default_rng([seed, 7])
    n = table.num_rows
    order = np.argsort(table.column("rid").to_numpy())
    steps = rng.integers(0, 5, n)
    counter = np.cumsum(steps)
    counter = np.where(rng.random(n) < 0.1, rng.integers(0, 3, n), counter)  # resets
    c = np.empty(n, dtype=np.int64)
    c[order] = counter
    g_pool = [2**62, -(2**62), 2**62 + 3, 7, -1, 0, 2**61]
    g = [None if rng.random() < 0.15 else g_pool[int(rng.integers(len(g_pool)))] for _ in range(n)]
    c_masked = pa.array(c, mask=rng.random(n) < 0.1)
    return table.append_column("c", c_masked).append_column("g", pa.array(g, pa.int64()))


class Call:
    def __init__(self, alias: str, sql: str, oracle: str = "plain", extra: dict | None = None, fn: str = ""):
        self.alias, self.sql, self.oracle, self.extra, self.fn = alias, sql, oracle, extra or {}, fn


def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def _window(rng, unique: bool) -> str:
    """PARTITION BY, ORDER BY and a frame; rid the last key where the order inside a frame matters
    (``unique``) or a ROWS frame's edges can fall between peers."""
    partition = _pick(rng, PARTITIONS)
    frame = _pick(rng, ORDERED_FRAMES)
    if frame.startswith(("RANGE", "ROWS")) or unique:
        order = (
            "ORDER BY rid" if frame.startswith("RANGE") else f"ORDER BY {_pick(rng, ['i', 'd', 's'])}, rid"
        )
    else:
        order = f"ORDER BY {_pick(rng, ['i', 'd', 's', 'f'])}"
    if rng.random() < 0.1:  # the whole partition (in rid order where the order inside it matters)
        whole = "ORDER BY rid ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING" if unique else ""
        return f"OVER ({' '.join(x for x in (partition, whole) if x)})"
    return f"OVER ({' '.join(x for x in (partition, order, frame) if x)})"


MOMENTS = ["skewness", "kurtosis"]
PAIRS = [
    "covar_pop",
    "covar_samp",
    "corr",
    "regr_sxx",
    "regr_syy",
    "regr_sxy",
    "regr_slope",
    "regr_intercept",
    "regr_r2",
]


def random_call(rng, alias: str) -> Call:
    kind = _pick(
        rng,
        ["collect", "collect", "listagg", "by", "by", "moment", "pair", "pair", "regr", "try", "bits"]
        + ["counter", "approx", "approx", "histogram"],
    )
    if kind == "collect":
        fn = _pick(rng, ["collect_list", "collect_set", "array_agg"])
        arg = _pick(rng, ["i", "l", "f", "m", "w", "s", "b", "d", "t"])
        nulls = " RESPECT NULLS" if rng.random() < 0.2 else ""
        return Call(alias, f"{fn}({arg}){nulls} {_window(rng, True)}")
    if kind == "listagg":
        fn, arg = _pick(rng, ["listagg", "string_agg"]), _pick(rng, ["s", "i", "d", "q"])
        sep = _pick(rng, ["", ", ','", ", '-|-'", ", NULL"])
        return Call(alias, f"{fn}({arg}{sep}) {_window(rng, True)}")
    if kind == "by":
        fn = _pick(rng, ["max_by", "min_by"])
        x, y = _pick(rng, ["i", "s", "m", "d", "rid"]), _pick(rng, ["i", "f", "m", "s", "d", "b"])
        k = f", {int(rng.integers(1, 4))}" if rng.random() < 0.4 else ""
        return Call(alias, f"{fn}({x}, {y}{k}) {_window(rng, True)}")
    if kind == "moment":
        fn, arg = _pick(rng, MOMENTS), _pick(rng, NUMBERS)
        over = _window(rng, True)
        return Call(alias, f"{fn}({arg}) {over}", "shape", {f"{alias}__v": f"collect_list({arg}) {over}"}, fn)
    # (the moments of frames holding NaN or an infinity are Spark's DOUBLE updates in frame
    # order, so those windows order by a unique key too)
    if kind in ("pair", "regr"):
        fn = _pick(rng, PAIRS) if kind == "pair" else _pick(rng, ["regr_count", "regr_avgx", "regr_avgy"])
        y, x = _pick(rng, NUMBERS), _pick(rng, NUMBERS)
        over = _window(rng, kind == "pair")
        if fn == "regr_count":
            return Call(alias, f"{fn}({y}, {x}) {over}")
        # regr_avgx/regr_avgy average a DOUBLE as avg does: exactly here, in DOUBLE adds in Spark
        # (docs/semantics.md, "More exact sums": 1e20, -1e20, 1e20, 4.85546875, -1e20 average
        # 0.97109375 here, 0.0 in Spark), so they are held to the exact average as the pairs are
        pairs = f"collect_list(named_struct('0', {y}, '1', {x})) {over}"
        return Call(alias, f"{fn}({y}, {x}) {over}", "pairs", {f"{alias}__v": pairs}, fn)
    if kind == "try":
        # g: BIGINTs near 2**62, whose running sums overflow (try_sum's NULLs); Spark averages
        # BIGINTs through DOUBLE sums, which lose them (overwindow's are exact: docs/semantics.md)
        fn = _pick(rng, ["try_sum", "try_avg"])
        arg = _pick(
            rng, ["i", "l", "g", "m", "w", "d - d"] if fn == "try_sum" else ["i", "l", "m", "w", "d - d"]
        )
        return Call(alias, f"{fn}({arg}) {_window(rng, True)}")
    if kind == "bits":
        fn, arg = (
            _pick(rng, ["bit_and", "bit_or", "bit_xor"]),
            _pick(rng, ["i", "l", "g", "CAST(i AS TINYINT)"]),
        )
        return Call(alias, f"{fn}({arg}) {_window(rng, False)}")
    if kind == "counter":
        partition = _pick(rng, PARTITIONS)
        return Call(alias, f"counter_diff(c) OVER ({partition} ORDER BY rid)".replace("(  ", "("))
    if kind == "approx":
        arg = _pick(rng, ["i", "l", "f", "m", "d", "t", "s", "w"])
        if arg in ("s",) or rng.random() < 0.5:
            sd = _pick(rng, ["", ", 0.05", ", 0.2", ", 0.01"])
            return Call(alias, f"approx_count_distinct({arg}{sd}) {_window(rng, True)}")
        if arg == "s":
            arg = "i"
        p = _pick(rng, ["0.5", "0.0", "1.0", "0.25", "array(0.1, 0.5, 0.99)", "0.00001"])
        acc = _pick(rng, ["", ", 100", ", 4", ", 10000"])
        return Call(alias, f"percentile_approx({arg}, {p}{acc}) {_window(rng, True)}")
    arg = _pick(rng, ["i", "l", "f", "d", "t", "m"])
    return Call(alias, f"histogram_numeric({arg}, {int(rng.integers(2, 6))}) {_window(rng, True)}")


def random_calls(seed: int, count: int) -> list[Call]:
    rng = np.random.default_rng([seed, 39])
    return [random_call(rng, f"c{j}") for j in range(count)]


class _Named:
    """What the exact oracles read of a call."""

    def __init__(self, function: str):
        self.function, self.params, self.args = function, (), ()


def expected(call: Call, spark_cols: dict) -> list:
    plain = spark_cols[call.alias]
    if call.oracle == "plain":
        return plain
    frames = spark_cols[f"{call.alias}__v"]
    out = []
    for v, frame in zip(plain, frames):
        if v is None or not math.isfinite(v):
            out.append(v)  # Spark's NULLs and NaNs are the answer
        elif call.oracle == "shape":
            out.append(Shape(_Named(call.fn)).final([x for x in frame if x is not None]))
        else:
            pairs = [{"0": p["0"], "1": p["1"]} for p in frame if p["0"] is not None and p["1"] is not None]
            out.append(Pairs(_Named(call.fn)).final(pairs))
    return out


def same(a, b) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same(a[k], b[k]) for k in a)
        )
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    if isinstance(a, float) or isinstance(b, float):
        return False
    return type(a) is type(b) and a == b


def _spark_type(t: pa.DataType) -> str:
    from test_parity import _arrow_type_as_spark

    return _arrow_type_as_spark(t).simpleString()


@pytest.mark.parametrize("seed", [SEED + j for j in range(TABLES)])
def test_random_function_calls_agree_with_spark(spark, seed):
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    table = with_columns(make_table(seed), seed)
    calls = random_calls(seed, max(1, math.ceil(CALLS / TABLES)))
    df = spark.createDataFrame(table)
    df = df.withColumn("n", df["n"].cast("timestamp_ntz"))
    df.createOrReplaceTempView("functions")
    values, types, errors = run_spark_view(spark, "functions", calls)
    ours, our_types, our_errors = run_overwindow(table, calls)
    msgs = []
    for c in calls:
        where = f"[seed {seed}] {c.sql}"
        if c.alias in errors or c.alias in our_errors:
            if not (c.alias in errors and c.alias in our_errors):
                theirs, mine = errors.get(c.alias, "ok"), our_errors.get(c.alias, "ok")
                msgs.append(f"{where}: Spark: {theirs}; overwindow: {mine}")
            continue
        if _spark_type(our_types[c.alias]) != types[c.alias].simpleString():
            msgs.append(
                f"{where}: type {_spark_type(our_types[c.alias])}, Spark's {types[c.alias].simpleString()}"
            )
        want, got = expected(c, values), ours[c.alias]
        bad = [j for j in range(len(want)) if not same(got[j], want[j])]
        if bad:
            rows = "; ".join(f"rid {values['rid'][j]}: {got[j]!r} vs Spark {want[j]!r}" for j in bad[:3])
            msgs.append(f"{where}: {len(bad)} rows differ: {rows}")
    assert not msgs, f"{len(msgs)} disagreement(s) with Spark:\n" + "\n".join(msgs)


def test_random_calls_reach_every_function():
    """The generator reaches every function this file checks (so a typo cannot drop one)."""
    text = " ".join(
        c.sql for seed in range(TABLES) for c in random_calls(SEED + seed, math.ceil(CALLS / TABLES))
    )
    for fn in [
        "collect_list",
        "collect_set",
        "array_agg",
        "listagg",
        "string_agg",
        "max_by",
        "min_by",
        *MOMENTS,
        *PAIRS,
        "regr_count",
        "regr_avgx",
        "regr_avgy",
        "try_sum",
        "try_avg",
        "bit_and",
        "bit_or",
        "bit_xor",
        "counter_diff",
        "percentile_approx",
        "approx_count_distinct",
        "histogram_numeric",
    ]:
        assert f"{fn}(" in text, fn


def disagreements(
    spark, table: pa.Table, calls: list[Call], view: str, equal=same, spark_may_refuse: bool = False
) -> list[str]:
    """Each call whose values (``equal`` row by row) or result type over ``table`` differ from
    Spark's, or that one side refuses, in words. With ``spark_may_refuse`` the calls Spark refuses
    are left out (overwindow may compute more of SQL there)."""
    spark.createDataFrame(table).createOrReplaceTempView(view)
    return differences(
        calls, run_spark_view(spark, view, calls), run_overwindow(table, calls), equal, spark_may_refuse
    )


def differences(
    calls: list[Call], spark_run, our_run, equal=same, spark_may_refuse: bool = False
) -> list[str]:
    """``disagreements`` between the two runs of ``calls`` as given: Spark's (``run_spark_view``) and
    overwindow's (``run_overwindow``)."""
    values, types, errors = spark_run
    ours, our_types, our_errors = our_run
    msgs = []
    for c in calls:
        if c.alias in errors and spark_may_refuse:
            continue
        if c.alias in errors or c.alias in our_errors:
            theirs, mine = errors.get(c.alias, "ok"), our_errors.get(c.alias, "ok")
            msgs.append(f"{c.sql}: overwindow: {mine}; Spark: {theirs}")
            continue
        mine, theirs = _spark_type(our_types[c.alias]), types[c.alias].simpleString()
        if mine != theirs:
            msgs.append(f"{c.sql}: type {mine}, Spark's {theirs}")
            continue
        want, got = values[c.alias], ours[c.alias]
        bad = [j for j in range(len(want)) if not equal(got[j], want[j])]
        if bad:
            rows = "; ".join(f"rid {values['rid'][j]}: {got[j]!r} vs Spark {want[j]!r}" for j in bad[:2])
            msgs.append(f"{c.sql}: {len(bad)} of {len(want)} rows differ: {rows}")
    return msgs


def test_lag_and_lead_defaults_are_cast_to_the_column_type_as_spark_casts_them(spark):
    table = pa.table(
        {
            "rid": pa.array([1, 2, 3, 4], pa.int64()),
            "c": pa.array([5, None, 7, 8], pa.int32()),
            "b": pa.array([1, 2, None, 4], pa.int8()),
            "g": pa.array([10, 20, 30, None], pa.int64()),
        }
    )
    defaults = ["0.5", "-0.5", "0.99", "-1.99", "CAST(0.5 AS DECIMAL(38, 38))", "2.5e0", "1e0", "7"]
    texts = [
        f"{fn}({col}, {k}, {d}) OVER (ORDER BY rid)"
        for fn in ("lag", "lead")
        for col in ("c", "b", "g")
        for k in (1, 2)
        for d in defaults
    ]
    calls = [Call(f"c{j}", text) for j, text in enumerate(texts)]
    msgs = disagreements(spark, table, calls, "defaults", spark_may_refuse=True)
    assert not msgs, "\n".join(msgs)


INF = "CAST('Infinity' AS DOUBLE)"


def test_range_frames_with_infinite_offsets_over_infinite_and_nan_keys_are_sparks(spark):
    """A DOUBLE key holding -inf, finite values, +inf and NaN (and a NULL), RANGE bounds of
    infinite offsets: an infinite key's bound is then NaN (inf - inf), and Spark's frames move their
    edges forward only, row by row."""
    keys = [-math.inf, -math.inf, -3.0, 0.0, 0.0, 1.5, math.inf, math.inf, math.nan, math.nan, None]
    order = [3, 9, 0, 7, 5, 10, 1, 8, 4, 2, 6]  # the rows arrive out of key order
    table = pa.table(
        {
            "rid": pa.array([j + 1 for j in order], pa.int64()),
            "f": pa.array([keys[j] for j in order], pa.float64()),
            "p": pa.array([j % 2 for j in order], pa.int32()),
        }
    )
    bounds = [f"{INF} PRECEDING", "1 PRECEDING", "CURRENT ROW", "1 FOLLOWING", f"{INF} FOLLOWING"]
    starts, ends = ["UNBOUNDED PRECEDING", *bounds], [*bounds, "UNBOUNDED FOLLOWING"]
    frames = [f"{a} AND {b}" for a in starts for b in ends if INF in a + b]
    texts = [
        f"{fn}(rid) OVER ({part}ORDER BY f{desc} RANGE BETWEEN {frame})"
        for frame in frames
        for desc in ("", " DESC")
        for part in ("", "PARTITION BY p ")
        for fn in ("first_value", "last_value", "count")
    ]
    calls = [Call(f"c{j}", text) for j, text in enumerate(texts)]
    msgs = disagreements(spark, table, calls, "infinite_keys", spark_may_refuse=True)
    assert not msgs, f"{len(msgs)} of {len(calls)} calls differ:\n" + "\n".join(msgs)


def test_calendar_interval_keys_are_refused_as_spark_refuses_them(spark):
    """Spark's calendar intervals (Arrow's month_day_nano_interval; Spark reads none from Arrow, so
    its view makes them with make_interval) are no PARTITION BY or ORDER BY key."""
    table = pa.table(
        {
            "rid": pa.array([1, 2], pa.int64()),
            "j": pa.array([(12, 0, 0), (24, 0, 0)], pa.month_day_nano_interval()),
            "i": pa.array([1, 2], pa.int64()),
        }
    )
    spark.sql(
        "SELECT rid, make_interval(0, m) AS j, i FROM VALUES (1, 12, 1), (2, 24, 2) AS t(rid, m, i)"
    ).createOrReplaceTempView("interval_keys")
    for over in ["PARTITION BY j", "ORDER BY j", "PARTITION BY i ORDER BY j"]:
        with pytest.raises(Exception, match="EXPRESSION_TYPE_IS_NOT_ORDERABLE|INVALID_ORDERING_TYPE"):
            spark.sql(f"SELECT sum(i) OVER ({over}) FROM interval_keys").collect()
        with pytest.raises(WindowSpecError, match="cannot be compared"):
            overwindow.evaluate(table, f"sum(i) OVER ({over}) AS r")


def test_string_offsets_following_an_interval_key_are_cast_to_its_type_as_spark_casts_them(spark):
    """``'2' FOLLOWING`` over a day-time interval key (``DATE - DATE``, ``TIMESTAMP - TIMESTAMP``)
    is the string cast to the key's type (found by test_parity_refusals at another seed: overwindow
    refused it); what does not cast is refused on both sides, and ``'2' PRECEDING`` (a DOUBLE) too."""
    day = dt.date(2024, 1, 1)
    noon = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    table = pa.table(
        {
            "rid": pa.array(range(1, 7), pa.int64()),
            "d": pa.array([day + dt.timedelta(days=n) for n in (0, 2, 3, 3, 9, 1)], pa.date32()),
            "e": pa.array([day] * 5 + [None], pa.date32()),
            "t": pa.array(
                [noon + dt.timedelta(hours=n) for n in (0, 36, 37, 80, 12, 200)], pa.timestamp("us", "UTC")
            ),
            "u": pa.array([noon] * 6, pa.timestamp("us", "UTC")),
            "x": pa.array([1, -2, 3, None, 5, 6], pa.int32()),
        }
    )
    offsets = ["'1'", "' 2 '", "'-1'", "'+2'", "'1 12:00:00'", "'0 01:00:00.5'", "'1.5'", "'x'"]
    texts = [
        f"{fn} OVER (ORDER BY {key} RANGE BETWEEN {frame})"
        for key in ("d - e", "t - u")
        for off in offsets
        for frame in (f"UNBOUNDED PRECEDING AND {off} FOLLOWING", f"{off} FOLLOWING AND UNBOUNDED FOLLOWING")
        for fn in ("count(*)", "sum(x)")
    ] + [
        f"count(*) OVER (ORDER BY {key} RANGE BETWEEN '1' PRECEDING AND CURRENT ROW)"
        for key in ("d - e", "t - u")
    ]
    calls = [Call(f"c{j}", text) for j, text in enumerate(texts)]
    spark.createDataFrame(table).createOrReplaceTempView("interval_string_offsets")
    theirs, ours = run_spark_view(spark, "interval_string_offsets", calls), run_overwindow(table, calls)
    msgs = differences(calls, theirs, ours, spark_may_refuse=True)
    assert not msgs, f"{len(msgs)} of {len(calls)} calls differ:\n" + "\n".join(msgs)
    refused = theirs[2]
    assert set(ours[2]) == set(refused)  # each side refuses the same calls, and some cast
    assert 0 < len(refused) < len(calls)
