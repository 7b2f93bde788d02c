"""Row identities: equal exactly for rows equal as SQL keys, the same in every call (the state holds
them), distinct for repeated rows of one batch without a row key."""

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.streaming.identity import _NULL, _column_bits, ordinals, row_hash, row_ids


@given(st.lists(st.integers(0, 4), max_size=40))
def test_ordinals_count_equal_values_before(values):
    h = np.array(values, dtype=np.uint64)
    want = [values[:i].count(v) for i, v in enumerate(values)]
    assert ordinals(h).tolist() == want


@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-3, 3)),
            st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, float("nan")])),
            st.one_of(st.none(), st.sampled_from(["a", "b", ""])),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_row_hash_is_equal_exactly_for_equal_rows(rows):
    t = pa.table(
        {
            "i": pa.array([r[0] for r in rows], pa.int64()),
            "f": pa.array([r[1] for r in rows], pa.float64()),
            "s": pa.array([r[2] for r in rows], pa.string()),
        }
    )
    h = row_hash(t, ["i", "f", "s"])
    # SQL equality of keys, NULL equal to NULL, NaN to NaN, -0.0 to 0.0
    norm = [(r[0], None if r[1] is None else ("nan" if r[1] != r[1] else r[1] + 0.0), r[2]) for r in rows]
    for a in range(len(rows)):
        for b in range(len(rows)):
            assert (h[a] == h[b]) == (norm[a] == norm[b])
    # the same in a fresh call (it lives in the state)
    assert (row_hash(t.slice(1), ["i", "f", "s"]) == h[1:]).all()


# what format 2 states hold for these rows (written by the release that introduced format 2)
IDS_WITH_KEY = [7544782791371313789, 8609296653116894759, 3272595266957169993]
IDS_WITHOUT_KEY = [6238072747940578789, 5272463233947570727, -2622165800321222925]


def test_identities_are_fixed_bits():
    """The identity is part of the state format: held rows are found by it, so the bits must never
    change within a format version."""
    t = pa.table(
        {
            "i": pa.array([1, None, -7], pa.int64()),
            "f": pa.array([0.5, -0.0, float("nan")], pa.float64()),
            "s": pa.array(["a", None, "é"], pa.string()),
        }
    )
    assert row_ids(t, ("i", "f", "s")).tolist() == IDS_WITH_KEY
    assert row_ids(t.select(["i"]), None).tolist() == IDS_WITHOUT_KEY


def test_repeated_rows_of_one_batch_get_distinct_identities():
    t = pa.table({"x": [3, 3, 3, 4]})
    ids = row_ids(t, None)
    assert len(set(ids.tolist())) == 4
    assert (row_ids(t.slice(0, 2), None) == ids[:2]).all()  # by ordinal: the same in a replay


# pandas' default hash_array factorizes text first, and its factorize compares strings as C strings:
# "a\x00b" and "a\x00c" (or "" and "\x00") become one value with one hash there. Identities must
# keep them apart, so the bits equal pandas' only for text without NUL characters (the next test).
NO_NUL = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.none(), NO_NUL), min_size=1, max_size=30),
    st.sampled_from([pa.string(), pa.large_string()]),
)
def test_text_hashes_to_pandas_default_bits(values, typ):
    """Text without NUL characters is hashed as pandas' default ``hash_array`` hashes it (the bits
    format 2 states hold), NULL as the NULL bits."""
    a = pa.array(values, typ)
    expected = pd.util.hash_array(np.asarray(a.to_pandas(), dtype=object))
    expected = np.where(a.is_valid().to_numpy(zero_copy_only=False), expected, _NULL)
    assert (_column_bits(a) == expected).all()
    binary = pa.array([None if v is None else v.encode() for v in values], pa.binary())
    expected = pd.util.hash_array(np.asarray(binary.to_pandas(), dtype=object))
    expected = np.where(binary.is_valid().to_numpy(zero_copy_only=False), expected, _NULL)
    assert (_column_bits(binary) == expected).all()


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=4), st.text(max_size=4), st.text(min_size=1, max_size=4))
def test_text_differing_after_a_nul_hashes_apart(head, a, b):
    """Strings that differ only after a NUL character are distinct keys: their bits differ (where
    pandas' default hash_array gives them one hash)."""
    x, y = f"{head}\x00{a}", f"{head}\x00{a}{b}"
    for typ in (pa.string(), pa.large_string()):
        bits = _column_bits(pa.array([x, y], typ))
        assert bits[0] != bits[1]
    bits = _column_bits(pa.array([x.encode(), y.encode()], pa.binary()))
    assert bits[0] != bits[1]
