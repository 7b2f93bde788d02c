"""Exact sliding sums (physical/exact.py): LimbPrefix against math.fsum and fractions.Fraction, and the
error-free transformations of double-double arithmetic against exact rationals."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overwindow.physical.exact import (
    LimbPrefix,
    SplitPrefix,
    dd_add_d,
    dd_div_d,
    dd_mul,
    dd_sub,
    fast_two_sum,
    two_prod,
    two_sum,
)

SETTINGS = dict(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
I64_MAX, I64_MIN = 2**63 - 1, -(2**63)


def exact(values) -> Fraction:
    return sum((Fraction(v) for v in values), Fraction(0))


def dd_exact(hi, lo) -> Fraction:
    return Fraction(float(hi)) + Fraction(float(lo))


def ieee_double(q: Fraction) -> float:
    """The IEEE round-to-nearest double of an exact rational: Python's correctly rounded int / int,
    or +-inf where that rounding overflows (Python raises OverflowError instead)."""
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


# --- strategies --------------------------------------------------------------------------------


def finite_floats(max_exp: int = 1000):
    """Finite doubles of mixed exponents: small integers, ordinary floats, powers of two and scaled
    mantissas between 2**-(max_exp + 53) and 2**max_exp, subnormals, both signed zeros."""
    mantissa = st.integers(-(2**53) + 1, 2**53 - 1)
    scaled = st.builds(lambda m, e: math.ldexp(m, e), mantissa, st.integers(-max_exp - 53, max_exp - 53))
    return st.one_of(
        st.integers(-100, 100).map(float),
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
        scaled,
        st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e20, -1e20, 0.1, 1e-20]),
    )


@st.composite
def frames(draw, n: int, max_parts: int = 3):
    """Random (start, end) arrays, 1 to 3 ordered disjoint parts per query, for up to 12 queries."""
    m = draw(st.integers(1, 12))
    k = draw(st.integers(1, max_parts))
    cuts = [sorted(draw(st.lists(st.integers(0, n), min_size=2 * k, max_size=2 * k))) for _ in range(m)]
    return [
        (
            np.array([c[2 * j] for c in cuts], dtype=np.int64),
            np.array([c[2 * j + 1] for c in cuts], dtype=np.int64),
        )
        for j in range(k)
    ]


def frame_values(values, parts, q):
    out = []
    for s, e in parts:
        out += list(values[int(s[q]) : int(e[q])])
    return out


# --- LimbPrefix over floats --------------------------------------------------------------------


@settings(max_examples=300, **SETTINGS)
@given(st.data())
def test_float_frame_sums_are_correctly_rounded(data):
    xs = data.draw(st.lists(finite_floats(), min_size=0, max_size=40))
    parts = data.draw(frames(len(xs)))
    p = LimbPrefix.of_floats(np.array(xs, dtype=np.float64))
    got = p.frame_sum(parts)
    hi, lo = p.frame_dd(parts)
    for q in range(len(got)):
        vals = frame_values(xs, parts, q)
        assert got[q] == math.fsum(vals), (vals, got[q])
        assert got[q] == float(exact(vals))
        # the double-double carries the exact sum to ~106 bits
        want = exact(vals)
        assert abs(dd_exact(hi[q], lo[q]) - want) <= abs(want) * Fraction(1, 2**100)


@settings(max_examples=300, **SETTINGS)
@given(st.data())
def test_frame_sums_within_three_limbs_are_correctly_rounded(data):
    """A column whose bits span under ~96 (the usual case: ``_rounded`` then reads every frame's
    limbs from the three highest nonzero rows instead of each frame's own top) or a little more
    (some sums carry into a fourth limb: the per-frame selection), with frames that cancel down to
    sums far below the others' (leading zero limbs). Oracle: exact rationals, rounded by Python."""
    top = data.draw(st.integers(-900, 900))
    width = data.draw(st.integers(0, 50))
    value = st.builds(
        lambda m, e: math.ldexp(m, e), st.integers(-(2**53) + 1, 2**53 - 1), st.integers(top - width, top)
    )
    xs = data.draw(st.lists(value, min_size=1, max_size=40))
    xs += [-v for v in data.draw(st.lists(st.sampled_from(xs), max_size=10))]  # frames that cancel
    parts = data.draw(frames(len(xs)))
    got = LimbPrefix.of_floats(np.array(xs, dtype=np.float64)).frame_sum(parts)
    for q in range(len(got)):
        vals = frame_values(xs, parts, q)
        assert got[q] == ieee_double(exact(vals)), (vals, got[q])


@pytest.mark.parametrize(
    "xs",
    [
        [1.0, 2.0**-60, 3.0, -3.0],  # limbs in three rows; one frame cancels to the lowest limb alone
        [2.0**70, 1.0, 2.0**-40, -(2.0**70)],  # limbs in four rows: the per-frame selection and sticky bit
        [0.1, 0.1, 0.1, -8.323524475844733e-235],
    ],
)
def test_every_prefix_and_suffix_sum_is_correctly_rounded(xs):
    n = len(xs)
    ends = [(np.zeros(n + 1, dtype=np.int64), np.arange(n + 1)), (np.arange(n + 1), np.full(n + 1, n))]
    p = LimbPrefix.of_floats(np.array(xs))
    for s, e in ends:
        got = p.frame_sum([(s, e)])
        for q in range(n + 1):
            assert got[q] == ieee_double(exact(xs[s[q] : e[q]])), (q, xs[s[q] : e[q]])


@settings(max_examples=60, **SETTINGS)
@given(
    seed=st.integers(0, 2**32 - 1),
    scale=st.integers(-800, 800),
    spread=st.integers(0, 100),
    width=st.integers(1, 150),
)
def test_float_digit_limbs_match_the_scatter_path(seed, scale, spread, width):
    """A column spanning under ~1000 bits gets its limbs by float arithmetic (``_of_float_digits``):
    the same prefix table the general path scatters from integer mantissas (forced here by an
    all-zero ``exp_shift``), and sliding sums over thousands of rows, with huge values cancelling
    inside the frames, correctly rounded."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    xs = rng.uniform(-1, 1, n) * np.exp2(rng.integers(-spread, spread + 1, n) + scale)
    cancel = rng.random(n) < 0.1  # pairs like 1e20, -1e20 a few rows apart
    xs[cancel] = np.exp2(scale + spread)
    xs[np.roll(cancel, 3)] = -np.exp2(scale + spread)
    fast = LimbPrefix.of_floats(xs)
    general = LimbPrefix.of_floats(xs, np.zeros(n, dtype=np.int64))
    assert fast.base == general.base
    rows = fast.prefix.shape[0]
    assert np.array_equal(fast.prefix, general.prefix[:rows]) and not general.prefix[rows:].any()
    i = np.arange(n)
    got = fast.frame_sum([(np.maximum(i - width, 0), i + 1)])
    for q in range(n):
        vals = xs[max(q - width, 0) : q + 1].tolist()
        assert got[q] == math.fsum(vals), (q, vals)


# --- SplitPrefix: two float64 prefix columns where the column's bit span allows -------------------


def too_wide_to_split(x: np.ndarray) -> bool:
    """The documented limit: the column's bits (from the largest value's top bit down to the
    smallest nonzero value's last) span more than 106 - 2 * ceil(log2(n + 1)) places, or reach the
    ends of the double range (tiny or huge values, where the scalings would leave it)."""
    nonzero = np.abs(x[x != 0])
    if not len(nonzero):
        return False
    top, low = int(np.frexp(nonzero.max())[1]), int(np.frexp(nonzero.min())[1]) - 53
    room = (len(x) + 1).bit_length()
    return top - low > 106 - 2 * room or low <= -1000 or top + room - 53 <= -1000 or top + room > 1000


@settings(max_examples=400, **SETTINGS)
@given(st.data())
def test_split_prefix_sums_are_correctly_rounded(data):
    """Columns of every width around the split path's limit (106 - 2 * ceil(log2(n + 1)) bits), with
    frames that cancel: where it takes the column, every frame sum is the exact sum correctly rounded
    (oracle: exact rationals rounded by Python), so the same double the limb table gives; where it
    declines, the column is one it could not sum exactly."""
    top = data.draw(st.integers(-1100, 1000))
    width = data.draw(st.integers(0, 110))
    value = st.builds(
        lambda m, e: math.ldexp(m, e),
        st.integers(-(2**53) + 1, 2**53 - 1),
        st.integers(top - width - 53, top - 53),
    )
    xs = data.draw(st.lists(st.one_of(value, st.sampled_from([0.0, -0.0])), min_size=0, max_size=60))
    xs += [-v for v in data.draw(st.lists(st.sampled_from(xs), max_size=10))] if xs else []
    x = np.array(xs, dtype=np.float64)
    split = SplitPrefix.of_floats(x)
    assert (split is None) == too_wide_to_split(x)
    if split is None:
        return
    parts = data.draw(frames(len(xs)))
    got = split.frame_sum(parts)
    assert np.array_equal(got, LimbPrefix.of_floats(x).frame_sum(parts))
    for q in range(len(got)):
        vals = frame_values(xs, parts, q)
        assert got[q] == ieee_double(exact(vals)), (vals, got[q])


@settings(max_examples=40, **SETTINGS)
@given(
    seed=st.integers(0, 2**32 - 1),
    decimals=st.integers(0, 9),
    n=st.integers(1, 5000),
    width=st.integers(1, 200),
)
def test_split_prefix_sliding_sums_of_decimal_data(seed, decimals, n, width):
    """The data streaming steps see: values rounded to a few decimals, sliding frames over a few
    thousand rows. Oracle: math.fsum (correctly rounded) of each frame."""
    rng = np.random.default_rng(seed)
    xs = np.round(rng.normal(size=n) * 10.0 ** rng.integers(-3, 4), decimals)
    split = SplitPrefix.of_floats(xs)
    assert (split is None) == too_wide_to_split(xs)
    if split is None:
        return
    i = np.arange(n)
    got = split.frame_sum([(np.maximum(i - width, 0), i + 1)])
    for q in range(0, n, max(n // 300, 1)):
        assert got[q] == math.fsum(xs[max(q - width, 0) : q + 1].tolist()), q


@pytest.mark.parametrize(
    "xs",
    [
        [2.54205911552021e17, 4.6027599851255906e-14, 4.611686018427388e18],
        [0.1, 0.1, 0.1, -8.323524475844733e-235],  # 3 * 0.1 is a tie; the tiny tail decides it
    ],
)
def test_sum_spanning_more_than_a_double_double_is_correctly_rounded(xs):
    """Was an engine bug: the limbs were rounded through a double-double, which drops the bits of a
    sum spanning more than 106 bits, so a sum just off a rounding tie came out one ulp off."""
    for p in (
        LimbPrefix.of_floats(np.array(xs)),
        LimbPrefix.of_floats(np.array(xs), np.zeros(len(xs), dtype=np.int64)),
    ):
        assert p.frame_sum([(np.array([0]), np.array([len(xs)]))])[0] == math.fsum(xs)


def test_float_drift_cancels():
    p = LimbPrefix.of_floats(np.array([1e20, 1.0, -1e20, 1e20, 1.0, -1e20]))
    starts = np.array([0, 0, 1, 2, 3])
    ends = np.array([3, 2, 4, 6, 6])
    got = p.frame_sum([(starts, ends)]).tolist()
    assert got == [1.0, 1e20, 1.0, -1e20, 1.0]  # [2, 6): -1e20 + 1e20 + 1 - 1e20


def test_mixed_exponents():
    # exponents from 2**500 down to 2**-550: over 1000 binary orders of magnitude in one column
    xs = [2.0**-500, 2.0**500, 1.0, -(2.0**500), 2.0**-500, 3.0 * 2.0**-550]
    p = LimbPrefix.of_floats(np.array(xs))
    s = np.array([0, 0, 2, 3, 0])
    e = np.array([6, 4, 4, 6, 1])
    got = p.frame_sum([(s, e)])
    for q in range(len(s)):
        vals = xs[s[q] : e[q]]
        assert got[q] == math.fsum(vals) == float(exact(vals))
    hi, lo = p.frame_dd([(s, e)])
    # 1 + 2**-499 + 3 * 2**-550 once the big values cancel: lo keeps the tiny part exactly
    assert hi[0] == 1.0 and lo[0] == 2.0**-499 + 3.0 * 2.0**-550


def test_signed_zeros_and_subnormals():
    xs = [-0.0, 5e-324, 5e-324, -5e-324]
    p = LimbPrefix.of_floats(np.array(xs))
    got = p.frame_sum([(np.array([0, 1, 0]), np.array([1, 3, 4]))]).tolist()
    assert got == [0.0, 1e-323, 5e-324]


def test_empty_column_and_empty_frames():
    p = LimbPrefix.of_floats(np.array([], dtype=np.float64))
    assert p.frame_sum([(np.array([0]), np.array([0]))]).tolist() == [0.0]
    p = LimbPrefix.of_floats(np.array([0.0, -0.0]))
    assert p.frame_sum([(np.array([0, 1]), np.array([2, 1]))]).tolist() == [0.0, 0.0]


def test_three_parts_skip_the_holes():
    xs = [1.0, 1e30, 2.0, -1e30, 4.0]
    p = LimbPrefix.of_floats(np.array(xs))
    parts = [(np.array([0]), np.array([1])), (np.array([2]), np.array([3])), (np.array([4]), np.array([5]))]
    assert p.frame_sum(parts).tolist() == [7.0]


def test_tiny_values_far_below_the_largest():
    """Was an engine bug (too few limbs: 1e-300 beside 1e150 summed to 0). Now the whole double range,
    DBL_MAX down to the smallest subnormal, fits in one column."""
    p = LimbPrefix.of_floats(np.array([1e-300, 1e150]))
    assert p.frame_sum([(np.array([0, 1]), np.array([1, 2]))]).tolist() == [1e-300, 1e150]
    xs = [5e-324, 1.7976931348623157e308, -1.7976931348623157e308, 1e-300]
    p = LimbPrefix.of_floats(np.array(xs))
    got = p.frame_sum([(np.array([0, 0, 3, 1]), np.array([1, 3, 4, 4]))]).tolist()
    assert got == [5e-324, 5e-324, 1e-300, 1e-300]


DBL_MAX = 1.7976931348623157e308


@pytest.mark.parametrize(
    "xs,want",
    [
        ([-1e308], -1e308),  # was NaN: a negative sum is rounded from its magnitude
        ([DBL_MAX], DBL_MAX),
        # were NaN (the top limb's term overflowed, then inf - inf): the exact 2e308 rounds to +inf (IEEE)
        ([1e308, 1e308], math.inf),
        ([-1e308, -1e308], -math.inf),
        ([1e308, 1e308, -1e308], 1e308),
        # DBL_MAX + half an ulp is a tie, to even: +inf; anything under it rounds back to DBL_MAX
        ([DBL_MAX, 2.0**970], math.inf),
        ([DBL_MAX, 2.0**970, -5e-324], DBL_MAX),
        ([DBL_MAX, 2.0**969], DBL_MAX),
    ],
)
def test_near_dbl_max(xs, want):
    p = LimbPrefix.of_floats(np.array(xs))
    with np.errstate(all="ignore"):
        got = p.frame_sum([(np.array([0]), np.array([len(xs)]))])[0]
    assert got == want == ieee_double(exact(xs))


@settings(max_examples=200, **SETTINGS)
@given(st.data())
def test_sums_and_means_near_dbl_max(data):
    """Frames of values up to DBL_MAX: the sum is the IEEE rounding of the exact sum (+-inf past
    DBL_MAX), the mean (always finite) within a few ulps of the exact mean, or, below the normal
    range, within half the smallest subnormal (2**-1075), the most rounding to a double can be off
    there (5e-324 / 2 rounds to 0)."""
    huge = st.sampled_from([DBL_MAX, -DBL_MAX, 1e308, -1e308, 2.0**1023, 2.0**970, -(2.0**969)])
    xs = data.draw(st.lists(st.one_of(huge, finite_floats(1024)), min_size=1, max_size=30))
    parts = data.draw(frames(len(xs)))
    p = LimbPrefix.of_floats(np.array(xs, dtype=np.float64))
    count = sum(e - s for s, e in parts)
    got = p.frame_sum(parts)
    mean = p.frame_mean(parts, np.maximum(count, 1))
    for q in range(len(got)):
        vals = frame_values(xs, parts, q)
        assert got[q] == ieee_double(exact(vals)), (vals, got[q])
        if vals:
            want = exact(vals) / len(vals)
            assert math.isfinite(mean[q])
            assert abs(Fraction(mean[q]) - want) <= abs(want) * Fraction(1, 2**50) + Fraction(1, 2**1075), (
                vals,
                mean[q],
            )


# --- LimbPrefix over int64 ---------------------------------------------------------------------

ints = st.one_of(
    st.integers(-1000, 1000),
    st.integers(I64_MIN, I64_MAX),
    st.sampled_from([I64_MAX, I64_MIN, I64_MAX - 1, I64_MIN + 1, 0, -1, 2**62, -(2**62)]),
)


@settings(max_examples=300, **SETTINGS)
@given(st.data())
def test_int_frame_sums_are_exact(data):
    xs = data.draw(st.lists(ints, min_size=0, max_size=40))
    parts = data.draw(frames(len(xs)))
    p = LimbPrefix.of_ints(np.array(xs, dtype=np.int64))
    got, fits = p.frame_int(parts)
    hi, lo = p.frame_dd(parts)
    for q in range(len(got)):
        want = sum(frame_values(xs, parts, q))
        assert bool(fits[q]) == (I64_MIN <= want <= I64_MAX)
        if fits[q]:
            assert int(got[q]) == want
        # as double-double: the exact integer to ~106 bits (what avg divides)
        assert abs(dd_exact(hi[q], lo[q]) - want) <= abs(want) * Fraction(1, 2**100)


def test_int64_extremes():
    xs = [I64_MAX, I64_MAX, I64_MIN, I64_MIN, 1, -1]
    p = LimbPrefix.of_ints(np.array(xs, dtype=np.int64))
    s = np.array([0, 0, 2, 0, 1, 4])
    e = np.array([1, 2, 4, 4, 3, 6])
    got, fits = p.frame_int([(s, e)])
    assert fits.tolist() == [True, False, False, True, True, True]
    assert got[fits].tolist() == [I64_MAX, -2, -1, 0]
    # a frame exactly at int64 min fits
    got, fits = p.frame_int([(np.array([2]), np.array([3]))])
    assert fits.tolist() == [True] and got.tolist() == [I64_MIN]


# --- double-double building blocks ------------------------------------------------------------

moderate = st.floats(-1e150, 1e150, allow_nan=False, allow_infinity=False).filter(
    lambda v: v == 0 or abs(v) > 1e-140
)


@settings(max_examples=300, **SETTINGS)
@given(moderate, moderate)
def test_two_sum_is_error_free(a, b):
    s, e = two_sum(np.float64(a), np.float64(b))
    assert Fraction(float(s)) + Fraction(float(e)) == Fraction(a) + Fraction(b)
    assert float(s) == a + b
    if abs(a) >= abs(b):
        s2, e2 = fast_two_sum(np.float64(a), np.float64(b))
        assert (float(s2), float(e2)) == (float(s), float(e))


@settings(max_examples=300, **SETTINGS)
@given(moderate, moderate)
def test_two_prod_is_error_free(a, b):
    p, e = two_prod(np.float64(a), np.float64(b))
    assert Fraction(float(p)) + Fraction(float(e)) == Fraction(a) * Fraction(b)


@pytest.mark.parametrize("a", [1e300, -1.7e308, 2.0**1000 + 2.0**948])
def test_two_prod_of_huge_values(a):
    """Dekker's split of values above ~1.3e300 (134217729 * a overflows) must stay exact."""
    with np.errstate(all="ignore"):
        p, e = two_prod(np.float64(a), np.float64(0.5))
    assert math.isfinite(float(p)) and math.isfinite(float(e))
    assert Fraction(float(p)) + Fraction(float(e)) == Fraction(a) / 2


def dd_values():
    return st.tuples(
        st.floats(-1e100, 1e100, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-100),
        st.floats(-1, 1, allow_nan=False),
    ).map(lambda t: fast_two_sum(np.float64(t[0]), np.float64(t[1]) * abs(t[0]) * 2.0**-60))


@settings(max_examples=300, **SETTINGS)
@given(dd_values(), dd_values(), st.floats(-1e50, 1e50, allow_nan=False).filter(lambda v: abs(v) > 1e-50))
def test_dd_ops_are_accurate(a, b, d):
    A, B = dd_exact(*a), dd_exact(*b)
    tol = Fraction(1, 2**100)
    s = dd_exact(*dd_add_d(a[0], a[1], np.float64(b[0])))
    assert abs(s - (A + Fraction(float(b[0])))) <= tol * (abs(A) + abs(Fraction(float(b[0])))) + Fraction(0)
    diff = dd_exact(*dd_sub(a[0], a[1], b[0], b[1]))
    assert abs(diff - (A - B)) <= tol * (abs(A) + abs(B))
    prod = dd_exact(*dd_mul(a[0], a[1], b[0], b[1]))
    assert abs(prod - A * B) <= tol * 4 * abs(A * B)
    quot = dd_exact(*dd_div_d(a[0], a[1], np.float64(d)))
    assert abs(quot - A / Fraction(d)) <= tol * 4 * abs(A / Fraction(d))
