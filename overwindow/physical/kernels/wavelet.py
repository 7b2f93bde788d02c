"""A wavelet matrix over small non-negative integer codes: k-th smallest and rank counts over
any union of row ranges, answered for all frames at once (one vectorised pass per bit).

Build O(n log sigma); each query batch O(m log sigma) for m frames, sigma distinct codes.

>>> wm = WaveletMatrix(np.array([3, 1, 2, 1]))
>>> wm.kth([(np.array([0, 1]), np.array([4, 3]))], np.array([1, 0])).tolist()
[1, 1]
"""

from __future__ import annotations

import numpy as np


class WaveletMatrix:
    def __init__(self, codes: np.ndarray):
        codes = np.asarray(codes, dtype=np.int64)
        self.n = len(codes)
        top = int(codes.max(initial=0))
        self.bits = max(top.bit_length(), 1)
        self.zeros_prefix = []  # per level, from the most significant bit: zeros in [0, p)
        self.n_zeros = []
        cur = codes
        for level in range(self.bits - 1, -1, -1):
            bit = (cur >> level) & 1
            z = np.zeros(self.n + 1, dtype=np.int64)
            np.cumsum(bit == 0, out=z[1:])
            self.zeros_prefix.append(z)
            self.n_zeros.append(int(z[-1]))
            cur = np.concatenate((cur[bit == 0], cur[bit == 1]))

    def kth(self, parts, k: np.ndarray) -> np.ndarray:
        """The k-th smallest (0-based) code over the union of ranges ``parts`` of each query."""
        parts = [(s.astype(np.int64).copy(), e.astype(np.int64).copy()) for s, e in parts]
        k = np.asarray(k, dtype=np.int64).copy()
        value = np.zeros(len(k), dtype=np.int64)
        for z, nz, level in zip(self.zeros_prefix, self.n_zeros, range(self.bits - 1, -1, -1)):
            zin = sum(z[e] - z[s] for s, e in parts)
            left = k < zin
            for j, (s, e) in enumerate(parts):
                parts[j] = (np.where(left, z[s], nz + s - z[s]), np.where(left, z[e], nz + e - z[e]))
            k = np.where(left, k, k - zin)
            value |= (~left).astype(np.int64) << level
        return value

    def count_less(self, s: np.ndarray, e: np.ndarray, x: np.ndarray) -> np.ndarray:
        """How many codes in rows [s, e) are smaller than x."""
        s, e = s.astype(np.int64).copy(), e.astype(np.int64).copy()
        x = np.asarray(x, dtype=np.int64)
        total = np.zeros(len(s), dtype=np.int64)
        beyond = x >= (1 << self.bits)  # every code is smaller
        width = e - s
        for z, nz, level in zip(self.zeros_prefix, self.n_zeros, range(self.bits - 1, -1, -1)):
            one = ((x >> level) & 1).astype(bool)
            zs, ze = z[s], z[e]
            total = np.where(one, total + (ze - zs), total)
            s = np.where(one, nz + s - zs, zs)
            e = np.where(one, nz + e - ze, ze)
        return np.where(beyond, width, total)
