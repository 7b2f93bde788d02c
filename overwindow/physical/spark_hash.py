"""The order of Spark's hash sets, so that ``collect_set`` and ``collect_union`` return their
elements in the order Spark does.

Spark collects a set into a Scala ``mutable.HashSet`` and returns its iteration order: a table of
16 buckets, doubled before an add that finds it holding 12 (then 24, 48, ...) elements; an element
goes to bucket ``h & (size - 1)`` of its improved hash ``h = hash ^ (hash >>> 16)``, where a bucket
keeps its elements sorted by ``h`` (as signed 32-bit integers), an equal ``h`` after the elements
already there. The element hashes are the ones Spark's values give (measured against Spark 4):
an INT, SMALLINT, TINYINT or DATE its own value; a BIGINT, TIMESTAMP or day-time interval (a long
of microseconds) Scala's ``longHash`` (the value when it fits an INT, else the two halves
XOR-ed); a DOUBLE or FLOAT Java's ``Double.hashCode`` / ``Float.hashCode`` of the value with -0.0
read as 0.0 and every NaN as one; a BOOLEAN 1231 or 1237; a STRING Spark's Murmur3 (seed 42) of
its UTF-8 bytes; a BINARY the same over the bytes of an ``UnsafeArrayData``; a DECIMAL Scala's
``BigDecimal.hashCode``; NULL 0.

>>> set_order(np.array([3, 17, 1]), np.array([0, 1, 2]), 16).tolist()  # hashes 3, 17, 1: buckets 3, 1, 1
[2, 1, 0]
"""

from __future__ import annotations

import decimal
import math

import numpy as np
import pyarrow as pa

from overwindow.physical.values import MICROS_PER_TICK, TypeFamily, kind_of

_M32 = 0xFFFFFFFF


def _low_word(u: np.ndarray) -> np.ndarray:
    """The low 32 bits of uint64 values, as int32."""
    return (u & np.uint64(_M32)).astype(np.uint32).view(np.int32)


def _long_hash(v: np.ndarray) -> np.ndarray:
    """Scala's ``Statics.longHash``: an int64 that fits an int32 is its own hash, another its two
    halves XOR-ed (Java's ``Long.hashCode``)."""
    v = np.asarray(v, dtype=np.int64)
    u = v.view(np.uint64)
    fits = (v >= -(2**31)) & (v < 2**31)
    return np.where(fits, _low_word(u), _low_word(u ^ (u >> np.uint64(32))))


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k: int) -> int:
    return (_rotl((k * 0xCC9E2D51) & _M32, 15) * 0x1B873593) & _M32


def _mix_h1(h: int, k: int) -> int:
    return (_rotl(h ^ k, 13) * 5 + 0xE6546B64) & _M32


def murmur3_bytes(data: bytes, seed: int = 42) -> int:
    """Spark's ``Murmur3_x86_32.hashUnsafeBytes``: 4-byte little-endian words, then each remaining
    (signed) byte mixed as a word of its own (not the reference tail). O(len(data)).

    >>> murmur3_bytes(b"a")  # Spark: SELECT hash('a')
    1485273170
    """
    h = seed
    aligned = len(data) - len(data) % 4
    for i in range(0, aligned, 4):
        h = _mix_h1(h, _mix_k1(int.from_bytes(data[i : i + 4], "little")))
    for b in data[aligned:]:
        h = _mix_h1(h, _mix_k1((b - 256 if b >= 128 else b) & _M32))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def _unsafe_array(data: bytes) -> bytes:
    """The bytes of Spark's ``UnsafeArrayData`` of a byte array: the element count, a null bit per
    element (in 8-byte words), the bytes padded to 8."""
    n = len(data)
    return n.to_bytes(8, "little") + bytes(((n + 63) // 64) * 8) + data + bytes(-n % 8)


def _scala_double_hash(d: float) -> int:
    """Scala's ``Statics.doubleHash``: an integral double hashes as that integer."""
    if math.isfinite(d) and d == int(d):
        i = int(d)
        if -(2**31) <= i < 2**31:
            return i
        if -(2**63) <= i < 2**63:
            return int(_long_hash(np.array([i]))[0])
    f = np.float32(d)
    if float(f) == d:
        return int(np.array([f]).view(np.int32)[0])
    bits = int(np.array([d]).view(np.uint64)[0])
    return _signed((bits ^ (bits >> 32)) & _M32)


def _signed(v: int) -> int:
    return v - (1 << 32) if v >= 1 << 31 else v


def _java_big_integer_hash(v: int) -> int:
    h = 0
    mag, words = abs(v), []
    while mag:
        words.append(mag & _M32)
        mag >>= 32
    for w in reversed(words):
        h = (31 * h + w) & _M32
    return _signed((_signed(h) * (-1 if v < 0 else 1)) & _M32)


_WIDE = decimal.Context(prec=100)


def decimal_hash(value: decimal.Decimal) -> int:
    """Scala's ``BigDecimal.hashCode`` (Spark's ``Decimal.hashCode``): a whole value as its integer
    (``longHash``, or Java's ``BigInteger.hashCode`` past a long), one a double holds exactly (its
    shortest text reads back as it) as that double's Scala hash, else Murmur3's ``mixLast`` of the
    unscaled integer's hash and the scale, trailing zeros stripped.

    >>> decimal_hash(decimal.Decimal("2.00")), decimal_hash(decimal.Decimal("0.5"))
    (2, 1056964608)
    """
    stripped = value.normalize(_WIDE)
    sign, digits, exponent = stripped.as_tuple()
    if exponent >= 0 or value == value.to_integral_value():
        whole = int(value)
        if -(2**63) <= whole < 2**63:
            return int(_long_hash(np.array([whole]))[0])
        return _java_big_integer_hash(whole)
    as_double = float(value)
    if math.isfinite(as_double) and decimal.Decimal(repr(as_double)) == value:
        return _scala_double_hash(as_double)
    unscaled = int("".join(map(str, digits))) * (-1 if sign else 1)
    k = _rotl((-exponent * 0xCC9E2D51) & _M32, 15) * 0x1B873593 & _M32
    return _signed((_java_big_integer_hash(unscaled) & _M32) ^ k)


def element_hashes(array: pa.Array) -> np.ndarray | None:
    """The hash Spark's hash set gives each value of ``array`` (int32; NULL 0), or None for the
    types whose hashes are not reproduced (nested types). O(n), a Python step per value for
    STRING, BINARY and DECIMAL."""
    t = array.type
    family = kind_of(t)
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    if pa.types.is_null(t):
        return np.zeros(len(array), dtype=np.int32)
    if family is TypeFamily.BOOL:
        out = np.where(array.fill_null(False).to_numpy(zero_copy_only=False), 1231, 1237)
    elif family is TypeFamily.FLOAT:
        out = _float_hashes(array)
    elif family is TypeFamily.DATE:
        out = array.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32)
    elif family in (TypeFamily.TIMESTAMP, TypeFamily.INTERVAL):
        out = _long_hash(_micros(array))
    elif family is TypeFamily.INT and t.bit_width < 64:
        out = array.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32)
    elif family is TypeFamily.INT:
        out = _long_hash(array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False))
    elif family is TypeFamily.STRING:
        out = np.array([murmur3_bytes(s.encode()) if s is not None else 0 for s in array.to_pylist()])
    elif family is TypeFamily.DECIMAL:
        out = np.array([decimal_hash(v) if v is not None else 0 for v in array.to_pylist()])
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        out = np.array([murmur3_bytes(_unsafe_array(b)) if b is not None else 0 for b in array.to_pylist()])
    else:
        return None
    return np.where(valid, out, 0).astype(np.int32)


def _float_hashes(array: pa.Array) -> np.ndarray:
    if array.type == pa.float32():
        x = array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float32) + np.float32(0)
        bits = np.where(np.isnan(x), np.int32(0x7FC00000), x.view(np.int32))
        return bits.astype(np.int32)
    x = array.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False) + 0.0  # -0.0 is 0.0
    bits = np.where(np.isnan(x), np.uint64(0x7FF8000000000000), x.view(np.uint64))
    return _low_word(bits ^ (bits >> np.uint64(32)))


def _micros(array: pa.Array) -> np.ndarray:
    """Spark's long of microseconds of a TIMESTAMP or day-time interval."""
    unit = array.type.unit
    ticks = array.view(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if unit in MICROS_PER_TICK:
        return ticks * MICROS_PER_TICK[unit]
    if unit == "ms":
        return ticks * 1000
    return ticks // 1000  # nanoseconds: Spark holds microseconds


def improved(hashes: np.ndarray) -> np.ndarray:
    """Scala's ``improveHash``: ``h ^ (h >>> 16)``, as int32."""
    u = hashes.astype(np.int32).view(np.uint32)
    return (u ^ (u >> np.uint32(16))).view(np.int32)


def table_sizes(highest: np.ndarray) -> np.ndarray:
    """The table size a set ends with when the most elements it held before an add was ``highest``:
    16 doubled while 0.75 of it is at most ``highest + 1``."""
    size = np.full(len(highest), 16, dtype=np.int64)
    grow = 12 <= highest + 1
    while grow.any():
        size = np.where(grow, size * 2, size)
        grow = (size * 3 // 4) <= highest + 1
    return size


def set_order(hashes: np.ndarray, first: np.ndarray, sizes) -> np.ndarray:
    """The positions of a set's elements in iteration order: by bucket (of the improved hash under
    the table size ``sizes``, scalar or per element), then improved hash, then first insertion."""
    h = improved(hashes).astype(np.int64)
    bucket = h & (np.asarray(sizes, dtype=np.int64) - 1)
    return np.lexsort((first, h, bucket))


# --- XXH64, as Spark's xxhash64() and approx_count_distinct hash values (seed 42) -----------------

_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
_M64 = (1 << 64) - 1
_U = np.uint64


def _rotl64(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U(r)) | (x >> _U(64 - r))


def _fmix64(h: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        h = h ^ (h >> _U(33))
        h = h * _U(_P2)
        h = h ^ (h >> _U(29))
        h = h * _U(_P3)
        return h ^ (h >> _U(32))


def xxhash_int(v: np.ndarray, seed: int = 42) -> np.ndarray:
    """Spark's ``XXH64.hashInt`` of int32 values (as uint64 hashes). O(n), vectorised."""
    with np.errstate(over="ignore"):
        h = np.full(len(v), (seed + _P5 + 4) & _M64, dtype=np.uint64)
        h = h ^ ((np.asarray(v).astype(np.int64).view(np.uint64) & _U(0xFFFFFFFF)) * _U(_P1))
        return _fmix64(_rotl64(h, 23) * _U(_P2) + _U(_P3))


def xxhash_long(v: np.ndarray, seed: int = 42) -> np.ndarray:
    """Spark's ``XXH64.hashLong`` of int64 values (as uint64 hashes). O(n), vectorised."""
    with np.errstate(over="ignore"):
        h = np.full(len(v), (seed + _P5 + 8) & _M64, dtype=np.uint64)
        h = h ^ (_rotl64(np.asarray(v).astype(np.int64).view(np.uint64) * _U(_P2), 31) * _U(_P1))
        return _fmix64(_rotl64(h, 27) * _U(_P1) + _U(_P4))


def _rot64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round64(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _M64
    return (_rot64(acc, 31) * _P1) & _M64


def xxhash_bytes(data: bytes, seed: int = 42) -> int:
    """Spark's ``XXH64.hashUnsafeBytes`` (the reference XXH64) of a byte string, as an unsigned
    64-bit integer. O(len(data)), in Python."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed & _M64, (seed - _P1) & _M64]
        while i <= n - 32:
            for j in range(4):
                v[j] = _round64(v[j], int.from_bytes(data[i + 8 * j : i + 8 * j + 8], "little"))
            i += 32
        h = (_rot64(v[0], 1) + _rot64(v[1], 7) + _rot64(v[2], 12) + _rot64(v[3], 18)) & _M64
        for lane in v:
            h = ((h ^ _round64(0, lane)) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i <= n - 8:
        h = ((_rot64(h ^ _round64(0, int.from_bytes(data[i : i + 8], "little")), 27)) * _P1 + _P4) & _M64
        i += 8
    if i <= n - 4:
        h = ((_rot64(h ^ (int.from_bytes(data[i : i + 4], "little") * _P1 & _M64), 23)) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h = (_rot64(h ^ (data[i] * _P5 & _M64), 11) * _P1) & _M64
        i += 1
    return int(_fmix64(np.array([h], dtype=np.uint64))[0])


def xxhashes(array: pa.Array) -> np.ndarray | None:
    """Spark's XXH64 (seed 42) of each value of ``array`` as its ``xxhash64()`` and
    approx_count_distinct compute it (uint64; NULL rows 0), or None for types not reproduced
    (nested ones): BOOLEAN 1 or 0, TINYINT to INT and DATE as ints, BIGINT, TIMESTAMP and day-time
    intervals (microseconds) as longs, FLOAT and DOUBLE by their bits (-0.0 as 0.0, every NaN
    one), DECIMAL by its unscaled long up to 18 digits and the two's-complement bytes of its
    unscaled integer past that, STRING by its UTF-8 bytes, BINARY by its bytes. O(n), a Python step
    per value for STRING, BINARY and wide DECIMAL."""
    t = array.type
    family = kind_of(t)
    if family is TypeFamily.BOOL:
        out = xxhash_int(array.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int32))
    elif family is TypeFamily.DATE or (family is TypeFamily.INT and t.bit_width < 64):
        out = xxhash_int(array.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False))
    elif family is TypeFamily.INT:
        out = xxhash_long(array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False))
    elif family in (TypeFamily.TIMESTAMP, TypeFamily.INTERVAL):
        out = xxhash_long(_micros(array))
    elif t == pa.float32():
        x = array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float32) + np.float32(0)
        out = xxhash_int(np.where(np.isnan(x), np.int32(0x7FC00000), x.view(np.int32)))
    elif family is TypeFamily.FLOAT:
        x = array.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False) + 0.0
        bits = np.where(np.isnan(x), np.int64(0x7FF8000000000000), x.view(np.int64))
        out = xxhash_long(bits)
    elif family is TypeFamily.DECIMAL:
        out = np.array([_decimal_xxhash(v, t) for v in array.to_pylist()], dtype=np.uint64)
    elif family is TypeFamily.STRING:
        out = np.array(
            [xxhash_bytes(v.encode()) if v is not None else 0 for v in array.to_pylist()], np.uint64
        )
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        out = np.array([xxhash_bytes(v) if v is not None else 0 for v in array.to_pylist()], np.uint64)
    else:
        return None
    return np.where(array.is_valid().to_numpy(zero_copy_only=False), out, np.uint64(0))


def _decimal_xxhash(value, t: pa.Decimal128Type) -> int:
    if value is None:
        return 0
    unscaled = int(value.scaleb(t.scale, _WIDE))
    if t.precision <= 18:
        return int(xxhash_long(np.array([unscaled]))[0])
    return xxhash_bytes(
        unscaled.to_bytes((unscaled + (unscaled < 0)).bit_length() // 8 + 1, "big", signed=True)
    )
