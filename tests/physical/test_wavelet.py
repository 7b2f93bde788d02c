"""The wavelet matrix (physical/kernels/wavelet.py) against sorted() and plain counting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overwindow.physical.kernels.wavelet import WaveletMatrix

SETTINGS = dict(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def codes_and_queries(draw, max_parts=3):
    sigma = draw(st.sampled_from([1, 2, 3, 7, 8, 9, 100, 1 << 20]))
    n = draw(st.integers(0, 60))
    codes = draw(st.lists(st.integers(0, sigma - 1), min_size=n, max_size=n))
    m = draw(st.integers(1, 15))
    k = draw(st.integers(1, max_parts))
    cuts = [sorted(draw(st.lists(st.integers(0, n), min_size=2 * k, max_size=2 * k))) for _ in range(m)]
    parts = [
        (
            np.array([c[2 * j] for c in cuts], dtype=np.int64),
            np.array([c[2 * j + 1] for c in cuts], dtype=np.int64),
        )
        for j in range(k)
    ]
    return np.array(codes, dtype=np.int64), parts, sigma


def union(codes, parts, q):
    out = []
    for s, e in parts:
        out += codes[int(s[q]) : int(e[q])].tolist()
    return out


@settings(max_examples=400, **SETTINGS)
@given(codes_and_queries(), st.data())
def test_kth_is_the_kth_smallest_of_the_union(case, data):
    codes, parts, _ = case
    wm = WaveletMatrix(codes)
    frames = [sorted(union(codes, parts, q)) for q in range(len(parts[0][0]))]
    nonempty = [q for q, f in enumerate(frames) if f]
    if not nonempty:
        return
    ks = np.array([data.draw(st.integers(0, max(len(f) - 1, 0))) for f in frames], dtype=np.int64)
    got = wm.kth(parts, ks)
    for q in nonempty:
        assert got[q] == frames[q][ks[q]], (frames[q], ks[q])


@settings(max_examples=200, **SETTINGS)
@given(codes_and_queries())
def test_kth_walks_every_rank(case):
    codes, parts, _ = case
    wm = WaveletMatrix(codes)
    for q in range(len(parts[0][0])):
        frame = sorted(union(codes, parts, q))
        one = [(s[q : q + 1], e[q : q + 1]) for s, e in parts]
        for k in range(len(frame)):
            assert wm.kth(one, np.array([k]))[0] == frame[k]


@settings(max_examples=400, **SETTINGS)
@given(codes_and_queries(max_parts=1), st.data())
def test_count_less(case, data):
    codes, parts, sigma = case
    wm = WaveletMatrix(codes)
    s, e = parts[0]
    xs = np.array(
        [
            data.draw(st.one_of(st.integers(0, sigma + 2), st.sampled_from([0, 1 << 40])))
            for _ in range(len(s))
        ],
        dtype=np.int64,
    )
    got = wm.count_less(s, e, xs)
    for q in range(len(s)):
        want = sum(1 for c in codes[s[q] : e[q]] if c < xs[q])
        assert got[q] == want


def test_docstring_example_and_small_cases():
    wm = WaveletMatrix(np.array([3, 1, 2, 1]))
    assert wm.kth([(np.array([0, 1]), np.array([4, 3]))], np.array([1, 0])).tolist() == [1, 1]
    assert wm.count_less(np.array([0, 0, 1]), np.array([4, 4, 3]), np.array([2, 4, 1])).tolist() == [2, 4, 0]


def test_all_zero_codes():
    wm = WaveletMatrix(np.zeros(5, dtype=np.int64))
    assert wm.kth([(np.array([0, 2]), np.array([5, 3]))], np.array([4, 0])).tolist() == [0, 0]
    assert wm.count_less(np.array([0]), np.array([5]), np.array([1])).tolist() == [5]
    assert wm.count_less(np.array([0]), np.array([5]), np.array([0])).tolist() == [0]


def test_empty_matrix():
    wm = WaveletMatrix(np.array([], dtype=np.int64))
    assert wm.n == 0
    assert wm.count_less(np.array([0]), np.array([0]), np.array([3])).tolist() == [0]


@pytest.mark.parametrize("n,sigma", [(2000, 5), (2000, 1000), (500, 1 << 30)])
def test_large_random_against_numpy(n, sigma):
    rng = np.random.default_rng(n + sigma)
    codes = rng.integers(0, sigma, n)
    wm = WaveletMatrix(codes)
    s = rng.integers(0, n, 300)
    e = np.minimum(s + rng.integers(1, 200, 300), n)
    k = (rng.random(300) * (e - s)).astype(np.int64)
    got = wm.kth([(s, e)], k)
    want = [np.sort(codes[a:b])[j] for a, b, j in zip(s, e, k)]
    assert got.tolist() == want
    x = rng.integers(0, sigma + 1, 300)
    assert wm.count_less(s, e, x).tolist() == [int((codes[a:b] < v).sum()) for a, b, v in zip(s, e, x)]
