"""State values that fail to decode are StateFormatErrors with a clear message, whatever the damage
(issue 18, item 8): a truncated or overwritten value raised IndexError, ArrowInvalid or
AttributeError deep inside Spark's worker before."""

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.streaming.state import StateFormatError, decode, encode

TABLES = {
    "rows": pa.table({"k": [1, 2, None], "s": ["a", None, "ccc"], "x": [0.5, float("nan"), -0.0]}),
    "more": pa.table({"t": pa.array([0, 10**12], pa.timestamp("us"))}),
}
GOOD = encode(TABLES, {"n": 3}, kind="test")


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_damaged_state_is_refused_as_state(data):
    damage = data.draw(st.sampled_from(["truncate", "overwrite", "append", "header"]))
    value = bytearray(GOOD)
    if damage == "truncate":
        value = value[: data.draw(st.integers(0, len(value) - 1))]
    elif damage == "overwrite":
        for _ in range(data.draw(st.integers(1, 8))):
            value[data.draw(st.integers(0, len(value) - 1))] = data.draw(st.integers(0, 255))
    elif damage == "append":
        value += data.draw(st.binary(min_size=1, max_size=16))
    else:
        value[4 : 4 + 8] = data.draw(st.binary(min_size=8, max_size=8))
    try:
        tables, meta = decode(bytes(value), kind="test")
    except StateFormatError as e:
        assert "new checkpoint" in str(e) or "not overwindow state" in str(e)
    else:  # damage that leaves a well-formed value (a changed number, a renamed table) goes unseen
        assert len(tables) == len(TABLES) and all(isinstance(t, pa.Table) for t in tables.values())


def test_state_of_another_version_names_both():
    with pytest.raises(StateFormatError, match="format 2, this overwindow reads 'other'"):
        decode(GOOD, kind="other")
