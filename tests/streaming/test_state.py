"""State bytes: the format version, and what this release refuses to read."""

import pyarrow as pa
import pytest

from overwindow.spec import OverWindow
from overwindow.streaming.on_update import OnUpdate
from overwindow.streaming.state import FORMAT_VERSION, StateFormatError

SCHEMA = pa.schema([("k", pa.int64()), ("id", pa.int64()), ("t", pa.float64()), ("u", pa.int64())])


def test_format_1_state_is_refused_with_a_clear_error():
    """Format 1 hashed identities with pandas; its identities cannot match new rows' any more."""

    spec = OverWindow("lag(u) OVER (ORDER BY t) AS p", emit="on_update", rowKey="id")
    machine = OnUpdate(spec, SCHEMA)
    state = machine.step(
        None, pa.Table.from_pylist([{"k": 0, "id": 1, "t": 1.0, "u": 1}], schema=SCHEMA)
    ).state
    old = state.replace(f'"version": {FORMAT_VERSION}'.encode(), b'"version": 1')
    with pytest.raises(
        StateFormatError,
        match="format 1, this overwindow reads 'on_update' format 2; start the query from a new checkpoint",
    ):
        machine.step(old, None)
