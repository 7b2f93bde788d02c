"""Exact DECIMAL arithmetic, vectorised over the 128-bit unscaled integers of Arrow's decimal128.

A DECIMAL(p, s) value is an integer (its unscaled value, below 10**38 in magnitude) times 10**-s.
Here such integers are numpy pairs of words (high int64, low uint64), and wider intermediate values
(frame sums) are rows of 32-bit limbs as ``overwindow.physical.exact`` keeps them. Sums and averages
follow Spark: ``sum`` of DECIMAL(p, s) is DECIMAL(min(p + 10, 38), s), ``avg`` is DECIMAL(min(p + 4,
38), min(s + 4, 38)) rounded half up (away from zero), and a result past its precision is an error
(ANSI mode). O(n) per operation, a small constant number of numpy passes per limb. ``+ - * / %``
in expressions (``arithmetic``) have Spark's result types and round the exact value once, half up;
they compute on Python integers (O(n) integer operations, not vectorised).

>>> from decimal import Decimal
>>> a = pa.array([Decimal("1.25"), Decimal("-2.50")], pa.decimal128(12, 2))
>>> hi, lo = words(a)
>>> from_words(hi, lo, np.array([True, True]), pa.decimal128(12, 2)).to_pylist()
[Decimal('1.25'), Decimal('-2.50')]
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pyarrow as pa

from overwindow.errors import WindowRuntimeError
from overwindow.physical.exact import LimbPrefix, W, _normalise

MAX_PRECISION = 38
_LOW = np.uint64(2**32 - 1)


def sum_type(t: pa.Decimal128Type) -> pa.Decimal128Type:
    """Spark's result type of ``sum`` over DECIMAL(p, s): DECIMAL(min(p + 10, 38), s)."""
    return pa.decimal128(min(t.precision + 10, MAX_PRECISION), t.scale)


def avg_type(t: pa.Decimal128Type) -> pa.Decimal128Type:
    """Spark's result type of ``avg`` over DECIMAL(p, s): DECIMAL(min(p + 4, 38), min(s + 4, 38))."""
    return pa.decimal128(min(t.precision + 4, MAX_PRECISION), min(t.scale + 4, MAX_PRECISION))


def words(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) words of every decimal128 value's unscaled integer (NULL slots: their stored
    bits, usually 0). O(n), no copy of the data."""
    if not pa.types.is_decimal128(array.type):
        raise TypeError(f"expected decimal128, got {array.type}")
    data = np.frombuffer(array.buffers()[1], dtype=np.uint64)
    pairs = data[2 * array.offset : 2 * (array.offset + len(array))].reshape(-1, 2)
    return pairs[:, 1].view(np.int64), pairs[:, 0]


def from_words(hi: np.ndarray, lo: np.ndarray, valid: np.ndarray, t: pa.DataType) -> pa.Array:
    """The decimal128 array of type ``t`` holding the unscaled integers (hi, lo); NULL where not
    ``valid``. O(n)."""
    n = len(hi)
    data = np.empty((n, 2), dtype=np.uint64)
    data[:, 0] = lo
    data[:, 1] = hi.view(np.uint64)
    validity = None if valid.all() else pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(data.tobytes())], null_count=-1)


def to_float64(array: pa.Array) -> pa.Array:
    """DECIMAL values as DOUBLE, each correctly rounded (Spark's ``Decimal.toDouble``; Arrow's own
    cast can be an ulp off, 7.1e-17 for 0.000000000000000071). Vectorised where the unscaled
    integer and 10**scale are both exact doubles (one IEEE division rounds correctly), exact
    Python conversion for the rest. O(n).

    >>> from decimal import Decimal
    >>> to_float64(pa.array([Decimal("0.000000000000000071")], pa.decimal128(38, 18))).to_pylist()
    [7.1e-17]
    """
    hi, lo = words(array)
    valid = array.is_valid().to_numpy(zero_copy_only=False) if array.null_count else np.ones(len(array), bool)
    small = (
        (hi == np.where(lo >= np.uint64(2**63), -1, 0))
        & (lo.view(np.int64) < 2**53)
        & (lo.view(np.int64) > -(2**53))
    )
    if array.type.scale <= 22 and bool((small | ~valid).all()):
        return pa.array(lo.view(np.int64).astype(np.float64) / 10.0**array.type.scale, mask=~valid)
    return pa.array([None if v is None else float(v) for v in array.to_pylist()], pa.float64())


def unscaled(value, scale: int) -> Fraction:
    """A constant (int, Decimal, float) times 10**scale, exactly."""
    return Fraction(value) * 10**scale


def pieces(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each 128-bit integer as three signed int64 pieces for ``LimbPrefix``: the low word's two
    32-bit halves (at bits 0 and 32) and the high word (at bit 64), interleaved row by row: row i's
    pieces are entries 3i, 3i + 1, 3i + 2. Returns (mantissas, shifts)."""
    mant = np.empty((len(hi), 3), dtype=np.int64)
    mant[:, 0] = (lo & _LOW).astype(np.int64)
    mant[:, 1] = (lo >> np.uint64(32)).astype(np.int64)
    mant[:, 2] = hi
    shift = np.broadcast_to(np.array([0, 32, 64], dtype=np.int64), (len(hi), 3))
    return mant.ravel(), shift.ravel().copy()


def prefix(hi: np.ndarray, lo: np.ndarray) -> LimbPrefix:
    """Exact prefix sums of 128-bit integers (frames of rows [s, e) are the pieces [3s, 3e))."""
    mant, shift = pieces(hi, lo)
    return LimbPrefix._prefix(mant, shift, 0, 2)


def frame_limbs(p: LimbPrefix, parts) -> np.ndarray:
    """The exact frame sums of ``prefix`` over row ranges ``parts``, as normalised limbs."""
    return p.limbs([(3 * s, 3 * e) for s, e in parts])


def magnitudes(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(limbs of |value|, negative mask) of normalised signed limbs (one column per value)."""
    neg = d[-1] < 0
    if neg.any():
        d = d.copy()
        d[:, neg] = -d[:, neg]
        _normalise(d)
    return d, neg


def scale_up(d: np.ndarray, factor: int) -> np.ndarray:
    """Non-negative limbs times ``factor`` (< 2**31), with a limb of room added. O(limbs)."""
    out = np.zeros((d.shape[0] + 1, d.shape[1]), dtype=np.int64)
    out[:-1] = d * factor
    return _normalise(out)


def divide_half_up(d: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Non-negative limbs divided by ``n`` (positive, < 2**31), rounded half up. O(limbs)."""
    n = n.astype(np.int64)
    q = np.zeros_like(d)
    rem = np.zeros(d.shape[1], dtype=np.int64)
    for j in range(d.shape[0] - 1, -1, -1):
        cur = (rem << W) + d[j]
        q[j], rem = np.divmod(cur, n)
    q[0] += 2 * rem >= n
    return _normalise(q)


def to_words(d: np.ndarray, neg: np.ndarray, precision: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Magnitude limbs and signs as 128-bit (hi, lo) words, and the mask of values whose magnitude
    reaches 10**precision (they do not fit the type). O(limbs)."""
    d = np.vstack([d, np.zeros((max(0, 4 - d.shape[0]), d.shape[1]), dtype=np.int64)])
    wide = (d[4:] != 0).any(axis=0) | (d[3] >= 2**31)
    u = d[:4].astype(np.uint64)
    lo = u[0] | (u[1] << np.uint64(32))
    hi = u[2] | (u[3] << np.uint64(32))
    limit = 10**precision
    lim_hi, lim_lo = np.uint64(limit >> 64), np.uint64(limit & (2**64 - 1))
    over = wide | (hi > lim_hi) | ((hi == lim_hi) & (lo >= lim_lo))
    # two's complement of the negative ones: ~x + 1 over both words
    nlo = ~lo + np.uint64(1)
    nhi = ~hi + (lo == 0).astype(np.uint64)
    lo = np.where(neg, nlo, lo)
    hi = np.where(neg, nhi, hi)
    return hi.view(np.int64), lo, over


def overflow(name: str, t: pa.DataType) -> WindowRuntimeError:
    """The error of a DECIMAL result past its type's precision (Spark's ANSI mode fails the query)."""
    return WindowRuntimeError(
        f"{name} overflows DECIMAL({t.precision}, {t.scale}): a value of more than {t.precision} "
        f"digits (Spark: NUMERIC_VALUE_OUT_OF_RANGE)"
    )


def _fits(
    over: np.ndarray, some: np.ndarray, name: str, t: pa.DataType, null_on_overflow: bool
) -> np.ndarray:
    """The frames whose result is kept: all of them (an overflow raises, as Spark's ANSI mode fails),
    or with ``null_on_overflow`` (try_sum, try_avg) those that fit, the others NULL."""
    if null_on_overflow:
        return some & ~over
    if (over & some).any():
        raise overflow(name, t)
    return some


def frame_sums(hi, lo, mask, frames, n, t: pa.Decimal128Type, name: str, null_on_overflow=False) -> pa.Array:
    """Spark's ``sum`` of DECIMAL values over every frame (``n``: the rows taking part in each):
    exact, NULL for frames without rows; a sum past ``sum_type`` fails, or with ``null_on_overflow``
    is NULL (Spark checks the final sum only: DECIMAL partial sums do not overflow)."""
    p = prefix(np.where(mask, hi, 0), np.where(mask, lo, np.uint64(0)))
    out_t = sum_type(t)
    mags, neg = magnitudes(frame_limbs(p, frames.parts))
    rhi, rlo, over = to_words(mags, neg, out_t.precision)
    return from_words(rhi, rlo, _fits(over, n > 0, name, out_t, null_on_overflow), out_t)


def frame_means(hi, lo, mask, frames, n, t: pa.Decimal128Type, name: str, null_on_overflow=False) -> pa.Array:
    """Spark's ``avg`` of DECIMAL values over every frame (``n``: the rows taking part in each):
    the exact sum (which must fit ``sum``'s type) times 10**(new scale - scale), divided by the
    count, rounded half up; an overflow fails, or is NULL with ``null_on_overflow``."""
    p = prefix(np.where(mask, hi, 0), np.where(mask, lo, np.uint64(0)))
    mags, neg = magnitudes(frame_limbs(p, frames.parts))
    some = _fits(to_words(mags, neg, sum_type(t).precision)[2], n > 0, name, sum_type(t), null_on_overflow)
    out_t = avg_type(t)
    mags = scale_up(mags, 10 ** (out_t.scale - t.scale))
    mags = divide_half_up(mags, np.maximum(n, 1))
    rhi, rlo, over = to_words(mags, neg, out_t.precision)
    return from_words(rhi, rlo, _fits(over, some, name, out_t, null_on_overflow), out_t)


# --- 128-bit comparisons and offsets, for RANGE frames over DECIMAL keys --------------------------


def add_constant(hi: np.ndarray, lo: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(hi, lo) + c for a Python integer c, and the mask of sums past the signed 128-bit range (None
    when none): such a sum lies beyond every DECIMAL value, above all when c > 0, below all else.
    O(n)."""
    if c >= 2**127 or c < -(2**127):
        beyond = np.ones(len(hi), dtype=bool)
        return hi, lo, beyond
    c_lo = np.uint64(c & (2**64 - 1))
    c_hi = np.int64((c >> 64) if (c >> 64) < 2**63 else (c >> 64) - 2**64)
    new_lo = lo + c_lo
    carry = (new_lo < lo).astype(np.int64)
    with np.errstate(over="ignore"):
        new_hi = hi + c_hi + carry
    # signed overflow of the high word: the operands' signs agree and the result's differs
    if c >= 0:
        beyond = new_hi < hi
    else:
        beyond = new_hi > hi
    return new_hi, new_lo, beyond if beyond.any() else None


def searchsorted(u_hi, u_lo, t_hi, t_lo, side: str) -> np.ndarray:
    """``np.searchsorted`` over sorted 128-bit values (u_hi, u_lo) for targets (t_hi, t_lo): per
    target the count of values below it (``side="left"``) or at or below it (``"right"``). A
    vectorised binary search: O(n log m)."""
    lo = np.zeros(len(t_hi), dtype=np.int64)
    hi = np.full(len(t_hi), len(u_hi), dtype=np.int64)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        m = np.minimum(mid, max(len(u_hi) - 1, 0))
        mh, ml = u_hi[m], u_lo[m]
        if side == "left":
            go_right = (mh < t_hi) | ((mh == t_hi) & (ml < t_lo))
        else:
            go_right = (mh < t_hi) | ((mh == t_hi) & (ml <= t_lo))
        lo = np.where(open_ & go_right, mid + 1, lo)
        hi = np.where(open_ & ~go_right, mid, hi)


def exact_offset(offset, scale: int, side: str, sign: int) -> int:
    """The integer to add to an integer key of ``scale`` decimal places so that a search on
    ``side`` finds the frame edge ``key + sign * offset`` exactly: ceil for a "left" search (the
    first value at or above the edge), floor for "right" (the last at or below). Infinite offsets
    are clamped past every 128-bit value."""
    if isinstance(offset, float) and math.isinf(offset):
        return sign * (1 if offset > 0 else -1) * 2**130
    q = unscaled(offset, scale) * sign
    return math.ceil(q) if side == "left" else math.floor(q)


# --- + - * / % with a DECIMAL operand, typed and rounded as Spark 4 does ---------------------------

MIN_ADJUSTED_SCALE = 6  # Spark's DecimalType.MINIMUM_ADJUSTED_SCALE


def adjusted_type(precision: int, scale: int) -> pa.Decimal128Type:
    """Spark's ``DecimalType.adjustPrecisionScale`` (``spark.sql.decimalOperations.
    allowPrecisionLoss``, on by default): past 38 digits a result keeps its integer digits and gives
    up fraction digits, down to a scale of min(scale, 6). O(1).

    >>> adjusted_type(39, 10), adjusted_type(77, 20)
    (Decimal128Type(decimal128(38, 9)), Decimal128Type(decimal128(38, 6)))
    """
    if precision <= MAX_PRECISION:
        return pa.decimal128(precision, scale)
    int_digits = precision - scale
    return pa.decimal128(MAX_PRECISION, max(MAX_PRECISION - int_digits, min(scale, MIN_ADJUSTED_SCALE)))


def arithmetic_type(op: str, a: pa.Decimal128Type, b: pa.Decimal128Type) -> pa.Decimal128Type:
    """Spark's result type of ``a op b`` for DECIMAL operands (``resultDecimalType`` of Add,
    Subtract, Multiply, Divide and Remainder), adjusted to 38 digits. O(1).

    >>> m, two = pa.decimal128(12, 2), pa.decimal128(1, 0)  # m op 2 for m DECIMAL(12, 2)
    >>> [str(arithmetic_type(op, m, two)) for op in "+*/%"]
    ['decimal128(13, 2)', 'decimal128(14, 2)', 'decimal128(16, 6)', 'decimal128(3, 2)']
    """
    p1, s1, p2, s2 = a.precision, a.scale, b.precision, b.scale
    if op in "+-":
        scale = max(s1, s2)
        return adjusted_type(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return adjusted_type(p1 + p2 + 1, s1 + s2)
    if op == "/":
        scale = max(MIN_ADJUSTED_SCALE, s1 + p2 + 1)
        return adjusted_type(p1 - s1 + s2 + scale, scale)
    if op == "%":
        scale = max(s1, s2)
        return adjusted_type(min(p1 - s1, p2 - s2) + scale, scale)
    raise ValueError(f"not an arithmetic operator: {op}")


_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}  # by bit width: the digits of the type's largest value


def integer_type(t: pa.DataType) -> pa.Decimal128Type:
    """The DECIMAL an integer column becomes beside a DECIMAL (Spark's ``DecimalType.forType``):
    TINYINT (3, 0), SMALLINT (5, 0), INT (10, 0), BIGINT (20, 0)."""
    return pa.decimal128(_INTEGER_DIGITS[t.bit_width], 0)


def wider_type(types: list[pa.DataType]) -> pa.Decimal128Type:
    """The type Spark 4 gives ``COALESCE`` and ``CASE`` over DECIMAL and integer operands (its
    ``widerDecimalType`` with ``boundedPreferIntegralDigits``): each integer as its DECIMAL
    (``integer_type``), then the most integer digits and the largest scale; past 38 digits the
    integer digits stay and the scale gives way, down to 0 (measured: DECIMAL(38,10) beside
    DECIMAL(38,0) is DECIMAL(38,0)). O(operands).

    >>> wider_type([pa.decimal128(12, 2), pa.int64()])
    Decimal128Type(decimal128(22, 2))
    >>> wider_type([pa.decimal128(30, 0), pa.decimal128(30, 10)])
    Decimal128Type(decimal128(38, 8))
    """
    as_decimals = [t if pa.types.is_decimal(t) else integer_type(t) for t in types]
    digits = max(t.precision - t.scale for t in as_decimals)
    scale = max(t.scale for t in as_decimals)
    return pa.decimal128(min(digits + scale, MAX_PRECISION), min(scale, MAX_PRECISION - digits))


def literal_type(value: int) -> pa.Decimal128Type:
    """The DECIMAL an integer literal becomes beside a DECIMAL: its own digits (Spark's
    ``DecimalType.fromLiteral``), so ``m * 2`` multiplies by a DECIMAL(1, 0)."""
    return pa.decimal128(len(str(abs(value))), 0)


class DivisionByZero(ArithmeticError):
    """A zero divisor beside a dividend that is not NULL (Spark's ANSI mode: DIVIDE_BY_ZERO, and
    REMAINDER_BY_ZERO for ``%``)."""


def arithmetic(op: str, a, ta: pa.Decimal128Type, b, tb: pa.Decimal128Type, name: str):
    """``a op b`` as Spark 4 computes it over DECIMAL(ta) and DECIMAL(tb) operands (arrays, or
    scalars: a scalar result when both are): exact on the unscaled integers, as Python integers,
    then rounded once, half up (away from zero), to Spark's result type (``arithmetic_type``).
    Spark's ``Decimal`` truncates a product to 39 digits and a quotient to 39 places before it
    rounds to the result's scale of at most 38, which rounds as the exact value does. NULL where an
    operand is. A result past its precision raises WindowRuntimeError (ANSI mode), a zero divisor
    DivisionByZero, and ``%`` where Java's ``BigDecimal.remainder`` (39 digits) gives up
    WindowRuntimeError ("Division impossible"). O(n): numpy int64 operations where every
    intermediate value fits 18 digits (by the types: ``m * 2`` of a DECIMAL(12, 2)), else Python
    integer operations (about 1 µs a row).

    >>> from decimal import Decimal
    >>> m = pa.array([Decimal("1.25"), Decimal("-0.05"), None], pa.decimal128(12, 2))
    >>> arithmetic("/", m, m.type, pa.scalar(3), pa.decimal128(1, 0), "m / 3").to_pylist()
    [Decimal('0.416667'), Decimal('-0.016667'), None]
    """
    out_t = arithmetic_type(op, ta, tb)
    scalar = isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar)
    n = 1 if scalar else len(b if isinstance(a, pa.Scalar) else a)
    p1, s1, p2, s2, s = ta.precision, ta.scale, tb.precision, tb.scale, out_t.scale
    shift = s + s2 - s1  # of the quotient
    digits = {  # the most digits of any value computed below (and of 2 * remainder of a rounding)
        "*": p1 + p2,
        "/": max(p1 + max(shift, 0), p2 + max(-shift, 0)),
    }.get(op, max(p1 - s1, p2 - s2) + max(s1, s2) + 1)
    dtype = np.int64 if digits <= 18 else object  # 2 * 10**18 < 2**63: int64 holds them
    x, x_valid = _unscaled_ints(a, ta, n, dtype)
    y, y_valid = _unscaled_ints(b, tb, n, dtype)
    valid = x_valid & y_valid
    x = np.where(valid, x, 0)
    if op in "/%":
        if (valid & (y == 0)).any():
            raise DivisionByZero(name)
        y = np.where(valid, y, 1)  # NULL rows: any divisor but 0
    else:
        y = np.where(valid, y, 0)
    if op == "*":
        r = _rescale(x * y, s1 + s2, s)
    elif op == "/":  # x/10**s1 / (y/10**s2) * 10**s: the exact quotient's unscaled value
        r = _half_up(x * 10 ** max(shift, 0), y * 10 ** max(-shift, 0))
    else:  # + - %: on the common scale
        top = max(s1, s2)
        x, y = x * 10 ** (top - s1), y * 10 ** (top - s2)
        if op == "%":
            r = _remainder(x, y, valid, name)
        else:
            r = _rescale(x + y if op == "+" else x - y, top, s)
    if (valid & (np.abs(r) >= 10**out_t.precision)).any():
        raise overflow(name, out_t)
    out = _from_ints(np.where(valid, r, 0), valid, out_t)
    return out[0] if scalar else out


def _remainder(x: np.ndarray, y: np.ndarray, valid: np.ndarray, name: str) -> np.ndarray:
    """x % y of integers on one scale, the sign of x (exact). Where the integral quotient has more
    than 39 digits, Java's ``BigDecimal.remainder`` with Spark's MathContext (39 digits, rounding
    down) gives up unless the digits it drops are zeros: WindowRuntimeError, as Spark fails."""
    quotient = np.abs(x) // np.abs(y)
    for i in np.flatnonzero(valid & (quotient >= 10 ** (MAX_PRECISION + 1))):
        dropped = len(str(quotient[i])) - (MAX_PRECISION + 1)
        if quotient[i] % 10**dropped:
            raise WindowRuntimeError(
                f"{name}: the integral quotient has more than 39 digits (Spark: Division impossible)"
            )
    return _with_sign(np.abs(x) - quotient * np.abs(y), x)


def _unscaled_ints(x, t: pa.Decimal128Type, n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """(unscaled integers as a numpy array of ``dtype``: int64, or object for Python ints; valid
    mask) of an integer or DECIMAL array or scalar read as DECIMAL ``t`` (whose scale is the
    value's own). int64 only for ``t`` of at most 18 digits."""
    if isinstance(x, pa.Scalar):
        v = x.as_py() if x.is_valid else None
        whole = 0 if v is None else int(unscaled(v, t.scale))
        return np.full(n, whole, dtype=dtype), np.full(n, v is not None)
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    valid = x.is_valid().to_numpy(zero_copy_only=False) if x.null_count else np.ones(len(x), bool)
    if not pa.types.is_decimal(x.type):
        return x.fill_null(0).to_numpy(zero_copy_only=False).astype(dtype), valid
    hi, lo = words(x)
    if dtype is object:
        return hi.astype(object) * 2**64 + lo.astype(object), valid
    return lo.view(np.int64), valid  # below 10**18: the high word only repeats the sign


def _from_ints(v: np.ndarray, valid: np.ndarray, t: pa.Decimal128Type) -> pa.Array:
    """The decimal128 array of unscaled integers (int64, or Python ints below 10**38)."""
    if v.dtype != object:
        return from_words(v >> 63, v.view(np.uint64), valid, t)
    return from_words((v >> 64).astype(np.int64), (v & (2**64 - 1)).astype(np.uint64), valid, t)


def _with_sign(magnitude: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.where(like < 0, -magnitude, magnitude)


def _half_up(n: np.ndarray, d) -> np.ndarray:
    """n / d rounded half up (away from zero): ``n`` an array of Python integers, ``d`` one such
    array or a positive integer, never 0."""
    if isinstance(d, np.ndarray):  # the quotient's sign moves onto the dividend
        n, d = _with_sign(n, d), np.abs(d)
    magnitude = np.abs(n)
    q, r = magnitude // d, magnitude % d
    return _with_sign(q + (2 * r >= d), n)


def _rescale(v: np.ndarray, scale: int, to: int) -> np.ndarray:
    """Unscaled integers of ``scale`` as unscaled integers of ``to``, rounded half up."""
    return v * 10 ** (to - scale) if to >= scale else _half_up(v, 10 ** (scale - to))
