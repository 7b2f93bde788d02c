"""A state's bytes as ``applyInPandasWithState`` carries them: compressed, in 7-bit clean form.

Spark hands a group's state value to Python pickled by Pyrolite at pickle protocol 2, where a
binary value travels as a latin-1 text string (``bytearray(str, "latin-1")``): every byte of 0x80
or more becomes two bytes and leaves the fast paths on both sides (the JVM builds the string, the
Python worker decodes it). So the state is stored 7-bit clean: the low seven bits of every byte,
then the top bits packed (``np.packbits``), themselves split the same way once more; 8/7 the size.
Measured on Spark with 37 MB of state over 64 buckets, 10,000 keys touched a micro-batch: random
bytes 1.37 and 1.39 s a micro-batch, the same bytes stored this way 0.99 and 1.16 s.

Spark then pays for every byte of a bucket's state every micro-batch that touches the bucket, on
its way to Python and back, into its state store and into the checkpoint (10-20 ms a MB of state
here). Overwindow's state bytes (Arrow IPC: sorted keys, timestamps, counters) compress
2.2-2.5x with zstd at level 1, for 3-5 ms of Python CPU a MB to compress and 1-2 ms to decompress,
so the state is compressed before it is made 7-bit clean. At 1,000,000 sparse keys held on 64
buckets, the state store's memory went from 85 to 34 MB (window close) and from 145 to 57 MB (emit
on update), and a sparse micro-batch from 1.38 to 1.29 s and 1.81 to 1.70 s (medians of four
alternating runs; BENCHMARKS.md).

A stored value starts with ``TAG`` (zstd, then 7-bit) or ``TAG_7BIT`` (7-bit only, written by the
release before); a value with neither is a state written before those, raw, and is read as it is.
Python hands the value back to Spark pickled at the highest protocol, as bytes, so only the way in
pays for the 7-bit form. O(n): numpy passes and zstd.

>>> clean = to_spark(b"\\x00\\xff\\x80abc" * 100)
>>> max(clean) < 0x80, len(clean) < 100, from_spark(clean) == b"\\x00\\xff\\x80abc" * 100
(True, True, True)
>>> from_spark(b"\\x10\\x00\\x00\\x00raw state")  # written before: as it is
b'\\x10\\x00\\x00\\x00raw state'
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

# raw state bytes start with their header's length (little-endian, 4 bytes): never 2 GB
TAG = b"OWZ\x7f"
TAG_7BIT = b"OW7\x7f"
_CODEC = pa.Codec("zstd", compression_level=1)
_HIGH_FIRST = np.arange(6, -1, -1, dtype=np.uint8)  # a 7-bit byte's bits, highest first
_WEIGHTS = (1 << _HIGH_FIRST).astype(np.uint8)
_LENGTH = 5  # bytes of 7 bits for a length: values up to 32 GiB


def to_spark(state: bytes) -> bytes:
    """``state`` compressed, in 7-bit clean form, tagged, for Spark to keep.

    >>> to_spark(bytes(700))[len(TAG) :][:_LENGTH]  # the length of the state, 7 bits a byte
    b'<\\x05\\x00\\x00\\x00'
    """
    return TAG + _length(len(state)) + _seven(_CODEC.compress(state, asbytes=True))


def from_spark(value) -> bytes:
    """The state bytes Spark kept (``to_spark``'s, 7-bit only or raw ones written before). O(n)."""
    tag = value[: len(TAG)]
    if tag not in (TAG, TAG_7BIT):
        return value
    a = np.frombuffer(value, dtype=np.uint8)[len(TAG) :]
    if tag == TAG_7BIT:
        return _unseven(a)
    return _CODEC.decompress(_unseven(a[_LENGTH:]), decompressed_size=_read_length(a), asbytes=True)


def _length(n: int) -> bytes:
    """``n`` in ``_LENGTH`` bytes of seven bits, lowest first (``_read_length`` reads it)."""
    return bytes((n >> (7 * i)) & 0x7F for i in range(_LENGTH))


def _read_length(a: np.ndarray) -> int:
    """The length ``_length`` wrote at the start of ``a``."""
    return sum(int(b) << (7 * i) for i, b in enumerate(a[:_LENGTH].tolist()))


def _seven(data: bytes) -> bytes:
    """``data`` 7-bit clean: its length, the low seven bits of its bytes, then their top bits (packed,
    split once more). ``_unseven`` reads it."""
    a = np.frombuffer(data, dtype=np.uint8)
    top = np.packbits(a >> 7)  # the top bits, eight a byte: split once more
    return _length(len(a)) + _low7(a) + _low7(top) + _pack7(top >> 7)


def _unseven(a: np.ndarray) -> bytes:
    """The bytes ``_seven`` made 7-bit clean (``a``: from its length on)."""
    n = _read_length(a)
    low, rest = a[_LENGTH : _LENGTH + n], a[_LENGTH + n :]
    m = (n + 7) // 8  # bytes of packed top bits
    top = rest[:m] | (_unpack7(rest[m:], m) << 7)
    return (low | (np.unpackbits(top, count=n) << 7)).tobytes()


def _low7(a: np.ndarray) -> bytes:
    """The low seven bits of ``a``'s bytes."""
    return (a & 0x7F).tobytes()


def _pack7(bits: np.ndarray) -> bytes:
    """``bits`` (0 or 1 each), seven a byte, highest first (``_unpack7`` reads them)."""
    padded = np.zeros(-(-len(bits) // 7) * 7, dtype=np.uint8)
    padded[: len(bits)] = bits
    return (padded.reshape(-1, 7) * _WEIGHTS).sum(axis=1, dtype=np.uint8).tobytes()


def _unpack7(packed: np.ndarray, m: int) -> np.ndarray:
    """The first ``m`` bits of bytes holding seven each (highest first)."""
    return ((packed[:, None] >> _HIGH_FIRST) & 1).ravel()[:m].astype(np.uint8)
