"""Which state machine runs a spec: emit on window close over whole or split state (a bucket's
pending rows in its value, each key's history in an entry) or over sessions (``session_close``),
emit on update over whole state, or
emit on update over chunked state. The hosts (the Spark adapter, the in-memory driver) ask here.

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> schema = pa.schema([("t", pa.int64()), ("x", pa.int64())])
>>> type(machine_for(OverWindow("lag(x) OVER (ORDER BY t) AS p", emit="on_update"), schema)).__name__
'OnUpdate'
"""

from __future__ import annotations

import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.evaluator import values_of
from overwindow.logical.frame import FrameUnit
from overwindow.physical.range_offsets import range_frame_in_key_type
from overwindow.physical.sessions import check_session_gap
from overwindow.physical.values import sql_type
from overwindow.spec import OverWindow
from overwindow.streaming.chunked import ROWS_PER_CHUNK, ChunkedOnUpdate
from overwindow.streaming.contract import StateMachine
from overwindow.streaming.on_update import OnUpdate
from overwindow.streaming.session_close import SessionWindowClose
from overwindow.streaming.window_close import WindowClose
from overwindow.streaming.window_close_split import SplitWindowClose


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
    that tell apart the partitions one state holds (a bucket of keys; for the chunked layout, one
    store of the bucket's keys' entries), none: one partition per state. O(calls)."""
    _check_range_offsets(spec, schema)
    if spec.emit == "on_window_close" and any(c.frame.is_session for c in spec.calls):
        return SessionWindowClose(spec, schema, tuple(keys))
    if spec.emit == "on_window_close":
        machine = WindowClose(spec, schema, tuple(keys))
        if spec.state_layout == "chunked":
            if not keys:
                raise WindowSpecError(
                    "stateLayout='chunked' on window close keeps each key's history as an entry of "
                    "its bucket: it runs on keyBuckets over groupBy columns (df.groupBy(k).overWindow)"
                )
            return SplitWindowClose(machine)
        return machine
    machine = OnUpdate(spec, schema, watermarked, tuple(keys))
    if spec.state_layout == "chunked":
        return ChunkedOnUpdate(machine, rows_per_chunk or ROWS_PER_CHUNK)
    return machine


def _check_range_offsets(spec: OverWindow, schema: pa.Schema) -> None:
    """Each SESSION gap checked against the ORDER BY key's type, and each RANGE offset cast to the
    ORDER BY key's type as the batch frames cast it; one that casts
    to NULL (an infinite DOUBLE over a DECIMAL key, as Spark casts it) is refused as ``OverWindow``
    refuses a NULL offset, when the machine is built rather than on its first rows. O(calls)."""
    empty = schema.empty_table()
    for call in spec.calls:
        f = call.frame
        if f.is_session:  # its gap against the key's type, before any row
            check_session_gap(f.gap, values_of(call.order_by[0].expr, empty).type)
            continue
        if not call.info.uses_frame or f.unit is not FrameUnit.RANGE:
            continue
        if not (f.start.has_offset or f.end.has_offset):
            continue
        key = call.order_by[0].expr
        key_type = values_of(key, empty).type
        cast = range_frame_in_key_type(f, key_type)
        if any(b.has_offset and b.offset is None for b in (cast.start, cast.end)):
            raise WindowSpecError(
                f"{f} of {call.alias} casts to a NULL RANGE offset over ORDER BY {key} "
                f"({sql_type(key_type)}), as Spark casts it: evaluate() computes it, a stream does not"
            )
