"""A column in sorted-row order with the numpy views kernels need, computed once and on demand.

>>> v = Values(pa.array([3, None, 1]))
>>> v.valid.tolist(), v.codes.tolist()
([True, False, True], [1, -1, 0])
"""

from __future__ import annotations

from enum import Enum
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.physical import decimals


class TypeFamily(Enum):
    """How overwindow computes on a column: the family of its Arrow type (``kind_of``).

    >>> TypeFamily.DATE.is_temporal, TypeFamily.INT.is_numeric, TypeFamily.STRING.is_numeric
    (True, True, False)
    """

    INT = "int"
    FLOAT = "float"
    DECIMAL = "decimal"  # exact: sums, averages and RANGE offsets on its unscaled integers
    BOOL = "bool"
    DATE = "date"
    TIMESTAMP = "timestamp"
    STRING = "string"
    INTERVAL = "interval"  # Spark's day-time intervals: INTERVAL_DAY, INTERVAL_DAY_TO_SECOND
    OTHER = "other"  # binary, nested

    @property
    def is_numeric(self) -> bool:
        """A number (what sum, avg and the variances take)."""
        return self in (TypeFamily.INT, TypeFamily.FLOAT, TypeFamily.DECIMAL)

    @property
    def is_integral(self) -> bool:
        """Its ``Values.numbers`` are int64: INT, BOOL, DATE (days), TIMESTAMP and INTERVAL (ticks)."""
        return self in (
            TypeFamily.INT,
            TypeFamily.BOOL,
            TypeFamily.DATE,
            TypeFamily.TIMESTAMP,
            TypeFamily.INTERVAL,
        )

    @property
    def is_temporal(self) -> bool:
        return self in (TypeFamily.DATE, TypeFamily.TIMESTAMP)

    @property
    def is_ordered_number(self) -> bool:
        """A number, DATE or TIMESTAMP: a key RANGE offsets and watermarks apply to."""
        return self.is_numeric or self.is_temporal


def kind_of(t: pa.DataType) -> TypeFamily:
    """The type family of an Arrow type. UINT64 (past int64) computes as FLOAT
    (``Values.exact_numbers``).

    >>> kind_of(pa.int32()), kind_of(pa.decimal128(12, 2)), kind_of(pa.large_string())
    (<TypeFamily.INT: 'int'>, <TypeFamily.DECIMAL: 'decimal'>, <TypeFamily.STRING: 'string'>)
    """
    if pa.types.is_integer(t) and t != pa.uint64():
        return TypeFamily.INT
    if pa.types.is_decimal(t):
        return TypeFamily.DECIMAL
    if pa.types.is_floating(t) or t == pa.uint64():
        return TypeFamily.FLOAT
    if pa.types.is_boolean(t):
        return TypeFamily.BOOL
    if pa.types.is_date(t):
        return TypeFamily.DATE
    if pa.types.is_timestamp(t):
        return TypeFamily.TIMESTAMP
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return TypeFamily.STRING
    if t in (INTERVAL_DAY, INTERVAL_DAY_TO_SECOND):
        return TypeFamily.INTERVAL
    return TypeFamily.OTHER


# Spark's day-time intervals as Arrow durations. Arrow's duration has no interval fields, so its
# unit is what tells Spark's two types apart: INTERVAL DAY (``DATE - DATE``, and what sum, min, lag
# ... keep of it) holds whole days, exactly in seconds, the coarsest unit; INTERVAL DAY TO SECOND
# (``TIMESTAMP - TIMESTAMP``, the average or a percentile of an INTERVAL DAY) is Spark's own storage,
# microseconds, which is also PySpark's Arrow type for every day-time interval.
INTERVAL_DAY = pa.duration("s")
INTERVAL_DAY_TO_SECOND = pa.duration("us")
# Spark holds a day-time interval in a long of microseconds: the ticks of each carrier in one
# microsecond's count, and the most ticks a value may hold
MICROS_PER_TICK = {"s": 1_000_000, "us": 1}
INTERVAL_LIMIT = {unit: (2**63 - 1) // micros for unit, micros in MICROS_PER_TICK.items()}
# a day-time interval field's unit in microseconds (what a cast to or from a number counts)
FIELD_MICROS = {"DAY": 86_400_000_000, "HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000}


def interval_type(fields: str) -> pa.DataType:
    """The Arrow carrier of Spark's day-time interval of ``fields``: INTERVAL DAY's whole days in
    seconds, every other (DAY TO SECOND, HOUR, MINUTE TO SECOND, ...) in microseconds.

    >>> interval_type("DAY"), interval_type("HOUR")
    (DurationType(duration[s]), DurationType(duration[us]))
    """
    return INTERVAL_DAY if fields == "DAY" else INTERVAL_DAY_TO_SECOND


def carrier_fields(t: pa.DataType) -> str:
    """The fields a column of an interval carrier has: DAY or DAY TO SECOND (``interval_type``'s
    inverse for the two types a column can have)."""
    return "DAY" if t == INTERVAL_DAY else "DAY TO SECOND"


def sql_type(t: pa.DataType) -> str:
    """An Arrow type in Spark's words (``INT``, ``DECIMAL(12,2)``, ``TIMESTAMP``, ...)."""
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    names = {
        pa.int8(): "TINYINT",
        pa.int16(): "SMALLINT",
        pa.int32(): "INT",
        pa.int64(): "BIGINT",
        pa.float32(): "FLOAT",
        pa.float64(): "DOUBLE",
        pa.bool_(): "BOOLEAN",
        pa.date32(): "DATE",
        pa.string(): "STRING",
        pa.large_string(): "STRING",
        pa.null(): "VOID",
    }
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if t == INTERVAL_DAY:
        return "INTERVAL DAY"
    if t == INTERVAL_DAY_TO_SECOND:
        return "INTERVAL DAY TO SECOND"
    return names.get(t, str(t).upper())


def numpy_values(x, to: pa.DataType) -> tuple[np.ndarray, np.ndarray]:
    """(values as a numpy array of ``to``, NULL slots 0; valid mask) of an array, or of a scalar
    (one value, which numpy broadcasts against the other operand)."""
    if isinstance(x, pa.Scalar):
        valid = x.is_valid
        return np.array([x.as_py() if valid else 0], dtype=to.to_pandas_dtype()), np.array([valid])
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    valid = x.is_valid().to_numpy(zero_copy_only=False)
    return x.cast(to).fill_null(0).to_numpy(zero_copy_only=False), valid


class Values:
    """One Arrow column (already in sorted order) plus cached numpy views.

    Views: ``valid`` (not NULL), ``numbers`` (int64 or float64, NULL as 0; dates as days, timestamps in
    their unit), ``codes`` (dense rank among the sorted distinct values, NaN greatest, NULL -1) with
    ``uniques`` (the distinct values, sorted). Each view costs one pass (codes: one sort of the distinct
    values).

    DECIMAL and UINT64 values do not all fit ``numbers`` (float64 for both): there ``exact_numbers``
    is False, ``numbers`` serves DOUBLE arithmetic only (variances, percentile_cont, and sums of
    UINT64), and order, equality and the values a kernel returns as they are (min, max, lag,
    first_value, mode, ...) come from ``codes`` and the column itself, exactly. DECIMAL sums,
    averages and RANGE offsets work on ``words``, the exact unscaled integers.
    """

    def __init__(self, array: pa.Array | pa.ChunkedArray):
        if isinstance(array, pa.ChunkedArray):  # one chunk: itself (combine_chunks would copy it)
            array = array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        if pa.types.is_date64(array.type):  # milliseconds at midnight: the same days as a DATE
            array = array.cast(pa.date32())
        if pa.types.is_decimal256(array.type):  # Spark's DECIMALs end at 38 digits, as decimal128
            if array.type.precision > 38:
                raise WindowSpecError(
                    f"DECIMAL({array.type.precision}, {array.type.scale}) is wider than DECIMAL(38, s), "
                    "the widest DECIMAL Spark and overwindow compute on"
                )
            array = array.cast(pa.decimal128(array.type.precision, array.type.scale))
        self.array: pa.Array = array
        self.type: pa.DataType = array.type
        self.kind = kind_of(array.type)
        self.exact_numbers = not (pa.types.is_decimal(self.type) or self.type == pa.uint64())

    def __len__(self) -> int:
        return len(self.array)

    @cached_property
    def valid(self) -> np.ndarray:
        if self.array.null_count == 0:
            return np.ones(len(self.array), dtype=bool)
        return self.array.is_valid().to_numpy(zero_copy_only=False)

    @cached_property
    def numbers(self) -> np.ndarray:
        a = self.array
        if self.kind is TypeFamily.DECIMAL:  # each correctly rounded, as Spark converts them
            a, target = decimals.to_float64(a), pa.float64()
        elif self.kind is TypeFamily.FLOAT:
            target = pa.float64()
        elif self.kind is TypeFamily.BOOL:
            target = pa.int64()
        elif self.kind is TypeFamily.DATE:
            a, target = a.cast(pa.int32()), pa.int64()
        elif self.kind in (TypeFamily.TIMESTAMP, TypeFamily.INTERVAL, TypeFamily.INT):
            # a timestamp's or interval's storage is its int64 count of units: a view, not a cast (a
            # cast, even to the type an array already has, costs microseconds: streaming steps do
            # this per key)
            a = a.view(pa.int64()) if self.kind is not TypeFamily.INT else a
            target = pa.int64()
        else:
            raise TypeError(f"column of type {self.type} has no numeric view")
        if a.type != target:  # DECIMAL and UINT64 to float64 may round: meant (exact_numbers)
            a = a.cast(target, safe=self.exact_numbers)
        return np.asarray((a.fill_null(0) if a.null_count else a).to_numpy(zero_copy_only=False))

    @cached_property
    def words(self) -> tuple[np.ndarray, np.ndarray]:
        """A DECIMAL column's unscaled integers as (high int64, low uint64) words
        (``overwindow.physical.decimals``); NULL slots hold 0."""
        hi, lo = decimals.words(self.array)
        if self.array.null_count:
            hi, lo = np.where(self.valid, hi, 0), np.where(self.valid, lo, np.uint64(0))
        return hi, lo

    @cached_property
    def _keys(self) -> pa.Array:
        """The column as compared for equality and order. SQL (and Spark, which normalises
        floating keys) has -0.0 = 0.0 and every NaN equal to every other; Arrow's hashing
        compares bits, so -0.0 and each NaN payload would become values of their own: fold
        -0.0 into 0.0 (x + 0.0) and every NaN into one."""
        a = self.array
        if not pa.types.is_floating(a.type):
            return a
        zero = pa.scalar(0.0, a.type)
        return pc.if_else(pc.is_nan(a), pa.scalar(float("nan"), a.type), pc.add(a, zero))

    @cached_property
    def _dense(self) -> tuple[np.ndarray, pa.Array]:
        """(codes, uniques): numbers by one numpy sort, other types by Arrow's hashing."""
        if (self.kind.is_ordered_number or self.kind.is_integral) and self.exact_numbers:
            nums = self.numbers
            if nums.dtype == np.float64:
                nums = np.where(np.isnan(nums), np.nan, nums + 0.0)  # one NaN, and -0.0 is 0.0
            valid = self.valid
            uniq, inverse = np.unique(nums[valid], return_inverse=True, equal_nan=True)
            codes = np.full(len(nums), -1, dtype=np.int64)
            codes[valid] = inverse.ravel()
            return codes, self.from_numbers(uniq, np.ones(len(uniq), dtype=bool))
        u = pc.unique(self._keys.drop_null())
        u = u.take(pc.sort_indices(u))
        idx = pc.index_in(self._keys, value_set=u)
        return np.asarray(idx.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64), u

    @property
    def uniques(self) -> pa.Array:
        return self._dense[1]

    @property
    def codes(self) -> np.ndarray:
        return self._dense[0]

    def from_numbers(self, numbers: np.ndarray, valid: np.ndarray) -> pa.Array:
        """Arrow array of this column's type from a numeric view (the inverse of ``numbers``; only
        with ``exact_numbers``)."""
        mask = ~valid
        if self.kind is TypeFamily.FLOAT:
            return pa.array(numbers.astype(np.float64), mask=mask).cast(self.type)
        if self.kind is TypeFamily.BOOL:
            return pa.array(numbers.astype(bool), mask=mask)
        if self.kind is TypeFamily.DATE:
            return pa.array(numbers.astype(np.int32), mask=mask).cast(self.type)
        return pa.array(numbers.astype(np.int64), mask=mask).cast(self.type)

    def take(self, index: np.ndarray) -> pa.Array:
        """Values at ``index`` (sorted positions); index -1 gives NULL."""
        missing = index < 0
        mask = missing if missing.any() else None
        if len(self.array) == 0:
            return pa.nulls(len(index), self.type)
        if self.array.null_count == 0 and self.kind.is_ordered_number and self.exact_numbers:
            # numbers without NULLs: a numpy gather, half the fixed cost of Arrow's take on the
            # short columns streaming steps evaluate per key
            numbers = self.array.to_numpy(zero_copy_only=False)
            return pa.array(numbers[np.where(missing, 0, index)], type=self.type, mask=mask)
        return self.array.take(pa.array(np.where(missing, 0, index), mask=mask))

    def take_codes(self, codes: np.ndarray) -> pa.Array:
        """Distinct values by code; code -1 gives NULL."""
        missing = codes < 0
        if len(self.uniques) == 0:
            return pa.nulls(len(codes), self.type)
        idx = pa.array(np.where(missing, 0, codes), mask=missing if missing.any() else None)
        return self.uniques.take(idx)
