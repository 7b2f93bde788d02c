"""A state's bytes as ``applyInPandasWithState`` carries them: in 7-bit clean form.

Spark hands a group's state value to Python pickled by Pyrolite at pickle protocol 2, where a
binary value travels as a latin-1 text string (``bytearray(str, "latin-1")``): every byte of 0x80
or more becomes two bytes and leaves the fast paths on both sides (the JVM builds the string, the
Python worker decodes it). Overwindow's state bytes (Arrow IPC: numbers, hashes) have half their
bytes there, so the state is stored 7-bit clean: the low seven bits of every byte, then the top
bits packed (``np.packbits``), themselves split the same way once more; 8/7 the size. Measured on
Spark with 37 MB of state over 64 buckets, 10,000 keys touched a micro-batch: random bytes 1.37 and
1.39 s a micro-batch, the same bytes stored this way 0.99 and 1.16 s (BENCHMARKS.md).

A stored value starts with ``TAG``; a value without it is a state written before, raw, and is
read as it is. Python hands the value back to Spark pickled at the highest protocol, as bytes,
so only the way in pays for the form. O(n) numpy passes.

>>> clean = to_spark(b"\\x00\\xff\\x80abc")
>>> max(clean) < 0x80, from_spark(clean)
(True, b'\\x00\\xff\\x80abc')
>>> from_spark(b"\\x10\\x00\\x00\\x00raw state")  # written before: as it is
b'\\x10\\x00\\x00\\x00raw state'
"""

from __future__ import annotations

import numpy as np

# raw state bytes start with their header's length (little-endian, 4 bytes): never 2 GB
TAG = b"OW7\x7f"
_HIGH_FIRST = np.arange(6, -1, -1, dtype=np.uint8)  # a 7-bit byte's bits, highest first
_WEIGHTS = (1 << _HIGH_FIRST).astype(np.uint8)
_LENGTH = 5  # bytes of 7 bits for the length: values up to 32 GiB


def to_spark(state: bytes) -> bytes:
    """``state`` in 7-bit clean form, tagged, for Spark to keep.

    >>> len(to_spark(bytes(700))) - len(TAG) - _LENGTH
    801
    """
    a = np.frombuffer(state, dtype=np.uint8)
    n = len(a)
    length = bytes((n >> (7 * i)) & 0x7F for i in range(_LENGTH))
    top = np.packbits(a >> 7)  # the top bits, eight a byte: split once more
    return TAG + length + _low7(a) + _low7(top) + _pack7(top >> 7)


def from_spark(value) -> bytes:
    """The state bytes Spark kept (``to_spark``'s, or raw ones written before). O(n)."""
    if value[: len(TAG)] != TAG:
        return value
    a = np.frombuffer(value, dtype=np.uint8)[len(TAG) :]
    n = sum(int(b) << (7 * i) for i, b in enumerate(a[:_LENGTH].tolist()))
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
