"""The approximate kernels without Spark (tests/spark/test_parity_approximate.py holds them to
Spark's answers): Spark's XXH64 against the reference implementation (the ``xxhash`` package: Spark's
hashInt and hashLong are XXH64 of the value's little-endian bytes), and where the approximations
provably do not act, their answers against definitions: percentile_approx of a frame its summary
never compresses is the nearest-rank percentile, histogram_numeric of a frame of at most nb distinct
values is their counts, approx_count_distinct of an empty frame is 0 and its estimate never depends
on the order of a frame's rows."""

from __future__ import annotations

import collections
import math
import struct

import numpy as np
import pyarrow as pa
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.physical import spark_hash

SEED = 42  # approx_count_distinct's and xxhash64()'s


@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=20), st.lists(st.integers(-(2**63), 2**63 - 1)))
def test_int_and_long_hashes_are_xxh64_of_their_bytes(ints, longs):
    got = spark_hash.xxhash_int(np.array(ints, dtype=np.int32)).tolist()
    assert got == [xxhash.xxh64_intdigest(struct.pack("<i", v), seed=SEED) for v in ints]
    got = spark_hash.xxhash_long(np.array(longs, dtype=np.int64)).tolist()
    assert got == [xxhash.xxh64_intdigest(struct.pack("<q", v), seed=SEED) for v in longs]


@given(st.binary(max_size=80))
def test_byte_hashes_are_xxh64(data):
    assert spark_hash.xxhash_bytes(data) == xxhash.xxh64_intdigest(data, seed=SEED)


def test_doubles_hash_by_their_bits_with_one_nan_and_one_zero():
    x = pa.array(
        [1.5, -0.0, 0.0, math.nan, struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0], None]
    )
    h = spark_hash.xxhashes(x).tolist()
    bits = [struct.pack("<d", v) for v in (1.5, 0.0, 0.0, math.nan, math.nan)]
    assert h[:5] == [xxhash.xxh64_intdigest(b, seed=SEED) for b in bits]
    assert h[5] == 0


FRAME = "ORDER BY rid ROWS BETWEEN 3 PRECEDING AND 2 FOLLOWING"


def _table(values, t: pa.DataType) -> pa.Table:
    return pa.table({"rid": pa.array(range(len(values)), pa.int64()), "x": pa.array(values, t)})


def _frames(n: int) -> list[range]:
    return [range(max(0, r - 3), min(n, r + 3)) for r in range(n)]


VALUES = st.lists(
    st.one_of(st.none(), st.integers(-5, 5), st.sampled_from([1e300, -1e300, 0.25])), max_size=30
)


def _java_key(v: float):
    return (v, math.copysign(1, v))


@settings(max_examples=60, deadline=None)
@given(VALUES, st.sampled_from([0.0, 0.1, 0.5, 0.75, 1.0]))
def test_percentile_approx_of_an_uncompressed_frame_is_the_nearest_rank(values, p):
    table = _table([None if v is None else float(v) for v in values], pa.float64())
    got = overwindow.evaluate(table, f"percentile_approx(x, {p}, 10000) OVER ({FRAME}) AS r")
    for rows, value in zip(_frames(len(values)), got.column("r").to_pylist()):
        frame = sorted((float(values[j]) for j in rows if values[j] is not None), key=_java_key)
        if not frame:
            assert value is None
            continue
        rank = 1 if p <= 1e-4 else len(frame) if p >= 1 - 1e-4 else math.ceil(p * len(frame))
        assert value == frame[rank - 1]


@settings(max_examples=60, deadline=None)
@given(VALUES, st.integers(2, 8))
def test_histogram_numeric_of_few_distinct_values_counts_them(values, nb):
    table = _table([None if v is None else float(v) for v in values], pa.float64())
    got = overwindow.evaluate(table, f"histogram_numeric(x, {nb}) OVER ({FRAME}) AS r")
    for rows, bins in zip(_frames(len(values)), got.column("r").to_pylist()):
        counts = collections.Counter(float(values[j]) for j in rows if values[j] is not None)
        if not counts:
            assert bins is None
        elif len(counts) <= nb:
            assert bins == [{"x": x, "y": float(c)} for x, c in sorted(counts.items())]
        else:
            assert len(bins) == nb
            assert sum(b["y"] for b in bins) == sum(counts.values())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=3), st.integers(-50, 50).map(str)), max_size=60))
def test_approx_count_distinct_depends_on_the_frame_s_rows_only(values):
    forward = _table(values, pa.string())
    backward = _table(values[::-1], pa.string())
    whole = "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"
    calls = [
        f"approx_count_distinct(x{sd}) OVER (ORDER BY rid {whole}) AS r{j}"
        for j, sd in enumerate(["", ", 0.39"])
    ]
    a, b = overwindow.evaluate(forward, *calls), overwindow.evaluate(backward, *calls)
    for name in ("r0", "r1"):
        assert a.column(name).to_pylist() == b.column(name).to_pylist()
    if not any(v is not None for v in values):
        assert set(a.column("r0").to_pylist()) <= {0}
    running = overwindow.evaluate(
        forward, "approx_count_distinct(x) OVER (ORDER BY rid ROWS UNBOUNDED PRECEDING) AS r"
    )
    expected = [
        overwindow.evaluate(_table(values[: r + 1], pa.string()), calls[0]).column("r0")[0].as_py()
        for r in range(min(len(values), 8))
    ]
    assert running.column("r").to_pylist()[: len(expected)] == expected
