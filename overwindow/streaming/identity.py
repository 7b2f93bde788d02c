"""Row identity: a deterministic 64-bit hash per row, which the emit-on-update state keeps beside each
row (column ``IDENTITY``) to find the rows a delete or an update names, to break the last ORDER BY
ties and, without a row key, to key the changelog (``_row_id``).

The hash is part of the state format: it must give the same bits in every process, platform and
release that reads the state. Format 2 hashes numbers, booleans and times from their own bits and
anything else with pandas' SipHash under its fixed key (format 1 hashed whole rows through pandas).

>>> t = pa.table({"id": [7, 8, 7]})
>>> ids = row_ids(t, ("id",))
>>> bool(ids[0] == ids[2]), bool(ids[0] == ids[1])
(True, False)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from overwindow.logical.bind import source_columns

IDENTITY = "__ow_id"  # the state's column of row identities (int64)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_NULL = np.uint64(0x6A09E667F3BCC908)  # the bits a NULL hashes from
_TEXT = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)


def row_ids(rows: pa.Table, row_key: tuple[str, ...] | None) -> np.ndarray:
    """A deterministic 64-bit identity (int64) per row: the hash of its ``row_key`` columns, else of
    the whole row mixed with its ordinal among identical rows of ``rows`` (so repeated rows of one
    batch stay distinct). O(rows x columns), plus a sort without a row key.

    >>> t = pa.table({"x": [1, 1, 2]})
    >>> len(set(row_ids(t, None).tolist()))
    3
    """
    h = row_hash(rows, row_key or source_columns(rows.column_names))
    if not row_key:
        h = h ^ (ordinals(h).astype(np.uint64) * _GOLDEN)
    return h.view(np.int64)


def row_hash(table: pa.Table, columns) -> np.ndarray:
    """A 64-bit hash (uint64) of each row's values in ``columns``, equal exactly for rows whose values
    are equal as SQL keys (NULL to NULL, NaN to NaN, -0.0 to 0.0). O(rows x columns).

    >>> t = pa.table({"a": [1, 2, 1], "b": ["x", "y", "x"]})
    >>> h = row_hash(t, ["a", "b"])
    >>> bool(h[0] == h[2]), bool(h[0] == h[1])
    (True, False)
    """
    h = np.zeros(table.num_rows, dtype=np.uint64)
    for c in columns:
        h = _mix(h * _GOLDEN + _column_bits(table.column(c).combine_chunks()))
    return h


def ordinals(h: np.ndarray) -> np.ndarray:
    """Each value's ordinal among the equal values before it. O(n log n).

    >>> ordinals(np.array([7, 3, 7, 7])).tolist()
    [0, 0, 1, 2]
    """
    order = np.argsort(h, kind="stable")
    first = np.ones(len(h), dtype=bool)
    first[1:] = h[order][1:] != h[order][:-1]
    starts = np.maximum.accumulate(np.where(first, np.arange(len(h)), 0))
    out = np.empty(len(h), dtype=np.int64)
    out[order] = np.arange(len(h)) - starts
    return out


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (uint64 in, uint64 out): every input bit flips about half the output."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def _column_bits(a: pa.Array) -> np.ndarray:
    """64 bits per value (uint64), equal for equal values: the value's own bits for numbers, booleans
    and times (``value_bits``), pandas' SipHash (fixed key) of anything else; NULL as ``_NULL``.
    O(n), no Python objects except for strings and nested types."""
    bits = value_bits(a)
    if bits is None:
        import pandas as pd

        if any(is_text(a.type) for is_text in _TEXT):
            # the bits of pandas' default (which factorizes first, then hashes the distinct values),
            # without its Categorical: 2-3x faster on the few thousand rows of a step
            bits = pd.util.hash_array(a.to_numpy(zero_copy_only=False), categorize=False)
        else:
            bits = pd.util.hash_array(np.asarray(a.to_pandas(), dtype=object))
    if a.null_count:
        bits = np.where(a.is_valid().to_numpy(zero_copy_only=False), bits, _NULL)
    return bits


def value_bits(a: pa.Array) -> np.ndarray | None:
    """The own 64 bits (uint64) of each value of a number, boolean or time array, equal exactly for
    values equal as SQL keys: floats with -0.0 as 0.0 and one NaN, a time's integer count of its
    unit; NULL slots hold any bits. None for other types. O(n).

    >>> value_bits(pa.array([-0.0, 0.0])).tolist(), value_bits(pa.array(["a"]))
    ([0, 0], None)
    """
    t = a.type
    if pa.types.is_floating(t):
        v = a.cast(pa.float64())
        v = np.asarray((v.fill_null(0.0) if v.null_count else v).to_numpy(zero_copy_only=False))
        return np.where(np.isnan(v), np.nan, v + 0.0).view(np.uint64)
    if not (pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_temporal(t)):
        return None
    if pa.types.is_temporal(t):  # a time's integer count of its unit
        a = a.view(pa.int64() if t.bit_width == 64 else pa.int32())
    elif pa.types.is_unsigned_integer(t) and t.bit_width == 64:
        a = a.view(pa.int64())
    v = a.cast(pa.int64())
    return np.asarray((v.fill_null(0) if v.null_count else v).to_numpy(zero_copy_only=False)).view(np.uint64)
