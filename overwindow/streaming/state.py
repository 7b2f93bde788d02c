"""State encoding: Arrow IPC stream bytes with a format version and JSON counters in the schema
metadata. Never pickle: the bytes outlive the code that wrote them.

>>> t = pa.table({"x": [1, 2]})
>>> tables, meta = decode(encode({"rows": t}, {"n": 3}, kind="test"), kind="test")
>>> tables["rows"].equals(t), meta
(True, {'n': 3})
"""

from __future__ import annotations

import json

import pyarrow as pa

# 2: on-update identities are hashed without pandas (``on_update._row_hash``); other kinds unchanged
FORMAT_VERSION = 2
_KEY = b"overwindow.state"
_OPTIONS = pa.ipc.IpcWriteOptions()
_READ_OPTIONS = pa.ipc.IpcReadOptions()


class StateFormatError(ValueError):
    """State bytes this version cannot read (another format version, or not overwindow state)."""


def encode(tables: dict[str, pa.Table], meta: dict, kind: str) -> bytes:
    """One IPC stream per named table, concatenated with length prefixes; ``meta`` in the first.
    O(bytes); streaming steps encode small states per key and call, so the fixed cost counts."""
    header = json.dumps(
        {"version": FORMAT_VERSION, "kind": kind, "tables": list(tables), "meta": meta}
    ).encode()
    parts = [len(header).to_bytes(4, "little"), header]
    for table in tables.values():
        # one record batch: a message per chunk costs more than the copy (none when already one chunk)
        table = table.combine_chunks()
        sink = pa.BufferOutputStream()
        # options given: the default reads two environment variables on every writer
        with pa.ipc.RecordBatchStreamWriter(
            sink, table.schema.with_metadata({_KEY: b"1"}), options=_OPTIONS
        ) as w:
            w.write_table(table)
        stream = sink.getvalue()
        parts += [stream.size.to_bytes(8, "little"), stream]
    return b"".join(parts)


def decode(data: bytes, kind: str, oldest: int = FORMAT_VERSION) -> tuple[dict[str, pa.Table], dict]:
    """The tables and meta of state bytes of this ``kind`` written in a format from ``oldest`` (the
    oldest this kind still reads the same way) up to ``FORMAT_VERSION``; StateFormatError otherwise."""
    view = memoryview(data)
    n = int.from_bytes(view[:4], "little")
    try:
        header = json.loads(bytes(view[4 : 4 + n]))
    except ValueError:
        raise StateFormatError("not overwindow state") from None
    if not isinstance(header, dict):
        raise StateFormatError("not overwindow state")
    version = header.get("version")
    if not isinstance(version, int) or not oldest <= version <= FORMAT_VERSION or header.get("kind") != kind:
        accepted = f"{oldest} to {FORMAT_VERSION}" if oldest < FORMAT_VERSION else f"{FORMAT_VERSION}"
        raise StateFormatError(
            f"state written as {header.get('kind')!r} format {version}, this overwindow reads "
            f"{kind!r} format {accepted}; start the query from a new checkpoint"
        )
    try:
        return _tables(view, 4 + n, header), header["meta"]
    except (ValueError, KeyError, TypeError, IndexError, OSError, pa.ArrowException) as e:
        raise StateFormatError(
            f"state of {kind!r} format {version} is damaged and cannot be decoded ({type(e).__name__}: "
            f"{e}); start the query from a new checkpoint"
        ) from None


def _tables(view: memoryview, pos: int, header: dict) -> dict[str, pa.Table]:
    tables = {}
    for name in header["tables"]:
        size = int.from_bytes(view[pos : pos + 8], "little")
        pos += 8
        if size <= 0 or pos + size > len(view):
            raise ValueError(f"table {name!r} runs past the end of the value")
        table = pa.ipc.RecordBatchStreamReader(
            pa.py_buffer(view[pos : pos + size]), options=_READ_OPTIONS
        ).read_all()
        tables[name] = table.replace_schema_metadata(None)
        pos += size
    if pos != len(view):
        raise ValueError(f"{len(view) - pos} bytes after the last table")
    return tables
