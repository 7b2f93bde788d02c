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


class StateFormatError(ValueError):
    """State bytes this version cannot read (another format version, or not overwindow state)."""


def encode(tables: dict[str, pa.Table], meta: dict, kind: str) -> bytes:
    """One IPC stream per named table, concatenated with length prefixes; ``meta`` in the first.
    Each stream is sized by a dry run first, so the data is copied once into an exact buffer."""
    header = json.dumps({"version": FORMAT_VERSION, "kind": kind, "tables": list(tables), "meta": meta}).encode()
    schemas = [t.schema.with_metadata({_KEY: b"1"}) for t in tables.values()]
    sizes = []
    for table, schema in zip(tables.values(), schemas):
        dry = pa.MockOutputStream()
        with pa.ipc.new_stream(dry, schema) as w:
            w.write_table(table)
        sizes.append(dry.size())
    buf = pa.allocate_buffer(4 + len(header) + sum(8 + s for s in sizes))
    sink = pa.FixedSizeBufferWriter(buf)
    sink.write(len(header).to_bytes(4, "little"))
    sink.write(header)
    for table, schema, size in zip(tables.values(), schemas, sizes):
        sink.write(size.to_bytes(8, "little"))
        with pa.ipc.new_stream(sink, schema) as w:
            w.write_table(table)
    return buf.to_pybytes()


def decode(data: bytes, kind: str, oldest: int = FORMAT_VERSION) -> tuple[dict[str, pa.Table], dict]:
    """The tables and meta of state bytes of this ``kind`` written in a format from ``oldest`` (the
    oldest this kind still reads the same way) up to ``FORMAT_VERSION``; StateFormatError otherwise."""
    view = memoryview(data)
    n = int.from_bytes(view[:4], "little")
    try:
        header = json.loads(bytes(view[4:4 + n]))
    except ValueError:
        raise StateFormatError("not overwindow state") from None
    version = header.get("version")
    if not isinstance(version, int) or not oldest <= version <= FORMAT_VERSION or header.get("kind") != kind:
        accepted = f"{oldest} to {FORMAT_VERSION}" if oldest < FORMAT_VERSION else f"{FORMAT_VERSION}"
        raise StateFormatError(
            f"state written as {header.get('kind')!r} format {version}, this overwindow reads "
            f"{kind!r} format {accepted}; start the query from a new checkpoint")
    pos = 4 + n
    tables = {}
    for name in header["tables"]:
        size = int.from_bytes(view[pos:pos + 8], "little")
        pos += 8
        table = pa.ipc.open_stream(pa.py_buffer(view[pos:pos + size])).read_all()
        tables[name] = table.replace_schema_metadata(None)
        pos += size
    return tables, header["meta"]
