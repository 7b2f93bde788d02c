"""Spark's approximate aggregates over windows, against Spark's batch window functions on tables
large enough for their approximations to act: approx_count_distinct past linear counting (the raw
estimate less HLL++'s bias, and the raw estimate itself), percentile_approx with summaries that
compress (accuracy down to 1), histogram_numeric trimming to nb bins (ties broken by Spark's seeded
random). Random tables (hypothesis draws the seed; numpy builds the rows) hold NULL, NaN, +-inf,
-0.0, ties, negative and large values, DECIMALs of 30 digits, STRINGs, DATEs and TIMESTAMPs. Every
call orders its frame by the unique ``rid`` (the approximate states depend on the rows' order); the
answers must be Spark's exactly, and so must the result types.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_parity_functions import Call, disagreements

from overwindow.physical.kernels.hyperloglog import bias_tables

FRAMES = [
    "ROWS BETWEEN 40 PRECEDING AND 40 FOLLOWING",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
    "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    "ROWS BETWEEN 300 PRECEDING AND 1 PRECEDING",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND 3 FOLLOWING",
    "RANGE BETWEEN 150 PRECEDING AND 5 FOLLOWING",
]
PARTITIONS = ["", "PARTITION BY p "]
COUNTED = ["x", "l", "s", "w", "m", "t", "d", "b", "r", "i"]  # r: FLOAT
ORDERED = ["x", "l", "w", "m", "t", "d", "r", "i"]
SPECIALS = [math.nan, math.inf, -math.inf, -0.0, 0.0, None, 1e308, -1e308, 5e-324]


def approx_table(seed: int) -> pa.Table:
    """Up to 900 rows of ``seed``: a cardinality regime (5 to 5,000 distinct values), the same base
    values in every type, specials among the DOUBLEs, NULLs everywhere."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 900))
    distinct = int(rng.choice([5, 60, 400, 5000]))
    base = rng.integers(-distinct, distinct, n)
    scale = float(rng.choice([1.0, 0.37, 1e-3, 1e12]))
    null = rng.random(n) < 0.05

    def masked(values, t):
        return pa.array(values, t, mask=null | (rng.random(n) < 0.03))

    x = [
        SPECIALS[int(rng.integers(len(SPECIALS)))] if rng.random() < 0.06 else float(v) * scale for v in base
    ]
    t0 = dt.datetime(1969, 12, 30, tzinfo=dt.timezone.utc)
    return pa.table(
        {
            "rid": pa.array(np.arange(n, dtype=np.int64)),
            "p": pa.array(rng.integers(0, 3, n).astype(np.int32), mask=rng.random(n) < 0.05),
            "x": pa.array(x, pa.float64()),
            "r": masked(np.array([v * scale for v in base], dtype=np.float32), pa.float32()),
            "i": masked(base.astype(np.int32), pa.int32()),
            "l": masked(base * 1_000_000_007, pa.int64()),
            "s": masked([f"v{v}" if v % 7 else "é" * int(abs(v) % 5) + str(v) for v in base], pa.string()),
            "w": masked([Decimal(int(v) * 10**20 + 7) / 10**5 for v in base], pa.decimal128(30, 5)),
            "m": masked([Decimal(int(v)) / 100 for v in base], pa.decimal128(12, 2)),
            "t": masked([t0 + dt.timedelta(minutes=int(v) * 17) for v in base], pa.timestamp("us", "UTC")),
            "d": masked([dt.date(1970, 1, 1) + dt.timedelta(days=int(v)) for v in base], pa.date32()),
            "b": masked((base % 2 == 0).tolist(), pa.bool_()),
        }
    )


def approx_calls(seed: int) -> list[Call]:
    rng = np.random.default_rng([seed, 11])

    def pick(seq):
        return seq[int(rng.integers(len(seq)))]

    def over() -> str:
        return f"OVER ({pick(PARTITIONS)}ORDER BY rid {pick(FRAMES)})"

    calls = []
    for j in range(12):
        kind = j % 3
        if kind == 0:
            sd = pick(["", ", 0.05", ", 0.39", ", 0.2", ", 0.1", ", 0.01"])
            calls.append(Call(f"c{j}", f"approx_count_distinct({pick(COUNTED)}{sd}) {over()}"))
        elif kind == 1:
            p = pick(["0.5", "0.0", "1.0", "0.25", "array(0.1, 0.5, 0.99)", "array(0.9, 0.1)", "0.001"])
            acc = pick(["", ", 1", ", 5", ", 30", ", 100", ", 10000"])
            calls.append(Call(f"c{j}", f"percentile_approx({pick(ORDERED)}, {p}{acc}) {over()}"))
        else:
            nb = int(rng.choice([2, 3, 5, 8, 20]))
            calls.append(Call(f"c{j}", f"histogram_numeric({pick(ORDERED)}, {nb}) {over()}"))
    return calls


def identical(a, b, java17: bool = False) -> bool:
    """Equal values of equal Python types (NaN equals NaN, -0.0 is not 0.0), lists and dicts deeply.
    With ``java17``, also a DECIMAL Spark reads from a DOUBLE's text with more digits than the
    shortest, which reads back as the same DOUBLE: Java 17's Double.toString does so for a few
    values (docs/semantics.md, "Differences from Spark"; histogram_numeric's DECIMAL bins)."""
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(identical(x, y, java17) for x, y in zip(a, b))
        )
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(identical(a[k], b[k], java17) for k in a)
        )
    if java17 and isinstance(a, Decimal) and isinstance(b, Decimal) and a != b:
        digits = [len(v.normalize().as_tuple().digits) for v in (a, b)]
        return float(a) == float(b) and digits[1] > digits[0]
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return type(a) is type(b) and a == b


def test_the_bias_tables_are_the_running_sparks(spark):
    helper = spark._jvm.org.apache.spark.sql.catalyst.util.HyperLogLogPlusPlusHelper
    raw, bias = helper.RAW_ESTIMATE_DATA(), helper.BIAS_DATA()
    ours = bias_tables()
    assert sorted(ours) == list(range(4, 4 + len(raw)))
    for j, p in enumerate(sorted(ours)):
        assert list(ours[p][0]) == list(raw[j]), p
        assert list(ours[p][1]) == list(bias[j]), p


# no shrinking: each example is a Spark query over a table the seed builds (the message names it)
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
)
@given(seed=st.integers(0, 2**32 - 1))
def test_approximate_functions_agree_with_spark(spark, seed):
    table = approx_table(seed)
    calls = approx_calls(seed)
    java17 = spark._jvm.java.lang.System.getProperty("java.version").startswith("17")
    msgs = disagreements(spark, table, calls, "approximate", equal=lambda a, b: identical(a, b, java17))
    assert not msgs, (
        f"[seed {seed}, {table.num_rows} rows] {len(msgs)} disagreement(s) with Spark:\n" + "\n".join(msgs)
    )
