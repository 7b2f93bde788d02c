"""Which state machine runs a spec: emit on window close, emit on update over whole state, or emit on
update over chunked state. The hosts (the Spark adapter, the in-memory driver) ask here.

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> schema = pa.schema([("t", pa.int64()), ("x", pa.int64())])
>>> type(machine_for(OverWindow("lag(x) OVER (ORDER BY t) AS p", emit="on_update"), schema)).__name__
'OnUpdate'
"""

from __future__ import annotations

import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.spec import OverWindow
from overwindow.streaming.chunked import ROWS_PER_CHUNK, ChunkedOnUpdate
from overwindow.streaming.contract import StateMachine
from overwindow.streaming.on_update import OnUpdate
from overwindow.streaming.window_close import WindowClose


def machine_for(
    spec: OverWindow,
    schema: pa.Schema,
    watermarked: bool = False,
    rows_per_chunk: int | None = None,
    keys: tuple[str, ...] = (),
) -> StateMachine:
    """The state machine of the spec's emit mode and state layout over input ``schema``;
    ``watermarked``: the ORDER BY column has a watermark (emit on update then evicts behind it);
    ``rows_per_chunk``: the chunked layout's chunk size (None: its default); ``keys``: the columns
    that tell apart the partitions one state holds (a bucket of keys; emit on window close), none:
    one partition per state. O(calls)."""
    if spec.emit == "on_window_close":
        return WindowClose(spec, schema, tuple(keys))
    if keys:  # OverWindow refuses keyBuckets with emit on update
        raise WindowSpecError("emit on update keeps one partition per state")
    machine = OnUpdate(spec, schema, watermarked)
    if spec.state_layout == "chunked":
        return ChunkedOnUpdate(machine, rows_per_chunk or ROWS_PER_CHUNK)
    return machine
