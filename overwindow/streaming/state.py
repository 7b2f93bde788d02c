"""State encoding: Arrow IPC stream bytes with a format version, the state's kind and its counters
(a versioned dataclass per kind, as JSON) in a header. Never pickle: the bytes outlive the code that
wrote them.

Layout: 4 bytes (little-endian length of the header), the header (JSON: ``version``, ``kind``,
``tables``: the names of the tables, ``meta``: the kind's counters), then per table 8 bytes of length
and one Arrow IPC stream of one record batch.

Kinds and the format versions they read:

- ``window_close`` (``WindowCloseMeta``): format 6 (format 5 with the columns no later step reads
  NULL in the rows already emitted: ``WindowClose.emitted_read_only``), format 5 (format 4 less
  what can be rebuilt: the rows without their non-float key columns, ``parts`` without counters
  that are 0 everywhere, counters as int32 where they fit, ``newest`` only under stateTtl;
  ``WindowClose._stored``), format 4
  (tables ``rows``, every partition's rows, and ``parts``, one row per partition: its key, counters
  and newest ORDER BY key; the watermark and late count in the header), format 3 (``parts``
  without the newest key: taken from the rows held), formats 1 and 2 (one partition, its counters
  in the header) read as one partition;
- ``window_close_split`` (``WindowCloseSplitMeta``): format 1, a bucket's value of the split
  layout (tables ``pending`` and ``waits``); each key's entry is its own format
  (``window_close_split.ENTRY_TAG``);
- ``on_update`` (``OnUpdateMeta``; also each chunk of the chunked layout, with empty counters):
  format 3 (format 2 less the identity column where a row key names rows: ``OnUpdate.encode``
  hashes it again on load) and format 2 (table ``rows``: the held rows, their identities and
  results), not format 1, which hashed row identities differently (``identity``); a bucket of
  keys also holds ``parts`` (each partition key's evicted counts), and its keyBuckets and the
  watermark it last evicted at (``evicted_at``; absent: not known) in the header;
- ``on_update_index`` (``ChunkIndexMeta``): formats 2 and 3 (alike: 3 marks an index whose chunks
  are written in ``on_update`` format 3); on a bucket of keys, the bucket's value holds no table,
  only its keyBuckets and key columns (each key's index is an entry of the bucket's map).

>>> t = pa.table({"x": [1, 2]})
>>> data = encode({"rows": t}, "on_update", OnUpdateMeta(late_rows=3))
>>> tables, meta = decode(data, "on_update", OnUpdateMeta)
>>> tables["rows"].equals(t), meta.late_rows, meta.horizon
(True, 3, None)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import ClassVar, TypeVar

import pyarrow as pa

# 2: on-update identities are hashed without pandas for numbers and times (``identity.row_hash``);
# other kinds unchanged. A kind may write a newer format of its own (``StateMeta.NEWEST``): window
# close writes 4. This number is the one a checkpoint's view fingerprint records: it moves only when
# states this release writes can no longer be read from an older checkpoint.
FORMAT_VERSION = 2
_KEY = b"overwindow.state"
_OPTIONS = pa.ipc.IpcWriteOptions()
_READ_OPTIONS = pa.ipc.IpcReadOptions()


class StateFormatError(ValueError):
    """State bytes this version cannot read (another format version, or not overwindow state)."""


@dataclass
class StateMeta:
    """A state kind's counters, kept in the header as JSON (field names are the JSON keys).
    ``OLDEST``: the oldest format version whose counters this class reads; ``NEWEST``: the one it
    writes; a counter missing from a state takes its field's default, which must be what its absence
    meant."""

    OLDEST: ClassVar[int] = FORMAT_VERSION
    NEWEST: ClassVar[int] = FORMAT_VERSION

    def to_json(self) -> dict:
        return dict(vars(self))  # the fields: plain values (asdict's deep copy costs 20x more)

    @classmethod
    def from_json(cls, raw: dict, version: int):
        known = {f.name for f in fields(cls)}
        if not set(raw) <= known:
            raise StateFormatError(
                f"state format {version} holds counters this overwindow does not know: "
                f"{sorted(set(raw) - known)}; start the query from a new checkpoint"
            )
        return cls(**raw)


@dataclass
class WindowCloseMeta(StateMeta):
    """Emit on window close, for all the partitions a state holds: the ``rows`` table holds their
    rows, ``parts`` their keys and counters (``overwindow.streaming.window_close``)."""

    OLDEST: ClassVar[int] = 1
    NEWEST: ClassVar[int] = 6

    released_upto: int | float | None = None  # the watermark the released rows are at or below
    late_rows: int = 0  # rows dropped as late so far
    buckets: int | None = None  # keyBuckets the state was written with (None: a state per key)
    # formats 1 and 2 held one partition and its counters here (n_released, emitted, pruned_rows,
    # pruned_groups; pending_sorted): read as that partition's row of ``parts``
    one_partition: dict | None = None

    @classmethod
    def from_json(cls, raw: dict, version: int) -> WindowCloseMeta:
        if version < 3:
            raw = dict(raw)
            old = ("n_released", "emitted", "pruned_rows", "pruned_groups", "pending_sorted")
            raw["one_partition"] = {k: raw.pop(k) for k in old if k in raw}
        return super().from_json(raw, version)

    def to_json(self) -> dict:
        return {"released_upto": self.released_upto, "late_rows": self.late_rows, "buckets": self.buckets}


@dataclass
class WindowCloseSplitMeta(StateMeta):
    """Emit on window close over a bucket's split state: the bucket's value (``pending``: its keys'
    rows not released yet; ``waits``: the keys whose RANGE FOLLOWING frames wait on the watermark),
    beside an entry per key (``overwindow.streaming.window_close_split``)."""

    OLDEST: ClassVar[int] = 1
    NEWEST: ClassVar[int] = 1

    released_upto: int | float | None = None  # the watermark the released rows are at or below
    late_rows: int = 0  # rows dropped as late so far
    buckets: int | None = None  # keyBuckets the state was written with
    keys: list[str] | None = None  # the key columns
    entries: int = 0  # the keys with an entry


@dataclass
class OnUpdateMeta(StateMeta):
    """Emit on update: the ``rows`` table holds the live rows with their identities and results (of
    a bucket of keys: every partition's, and ``parts`` the evicted counts of each partition key)."""

    OLDEST: ClassVar[int] = 2
    NEWEST: ClassVar[int] = 3

    evicted_rows: int = 0  # rows of the partition evicted so far (row_number and rank count them)
    evicted_groups: int = 0  # their peer groups (dense_rank counts them)
    horizon: int | float | None = None  # changes below this ORDER BY key are late (None: none yet)
    late_rows: int = 0  # changes dropped as late so far
    buckets: int | None = None  # keyBuckets the state was written with (None: a state per key)
    # of a bucket of keys: the watermark its partitions were last evicted at, every one as far as
    # it allowed (None: not known, so the next eviction looks at every partition)
    evicted_at: int | float | None = None

    def to_json(self) -> dict:
        out = super().to_json()
        for name in ("buckets", "evicted_at"):  # a state per key reads as it did before buckets
            if out.get(name) is None:
                out.pop(name, None)
        return out


def buckets_changed(written: int | None, written_keys, running: int | None, keys) -> StateFormatError:
    """The error for a state written with other keyBuckets (or keys) than the query now runs (None:
    a state per key, which ``keyBuckets`` spells ``"per key"``).

    >>> print(str(buckets_changed(None, (), 64, ("k",))).split(" (keys")[0])
    this state was written with keyBuckets="per key"
    """
    was, now = (b if b else '"per key"' for b in (written, running))
    return StateFormatError(
        f"this state was written with keyBuckets={was} (keys {tuple(written_keys)}) "
        f"and the query now runs keyBuckets={now} (keys {tuple(keys)}): its keys would "
        f"land in other states; keep keyBuckets={was} as the checkpoint was started (OverWindow's "
        "keyBuckets, a view's key_buckets), or start the query from a new checkpoint"
    )


def held_columns(rows: pa.Table, names: list[str]) -> pa.Table:
    """A state's held ``rows`` with the columns ``names`` (the ones the query holds), by name: a
    state written holding more columns (before ``OverWindow.carrying``, or for a query carrying
    more) gives those alone; one lacking a column is refused. O(columns).

    >>> held_columns(pa.table({"t": [1], "x": [2], "url": ["a"]}), ["t", "x"]).column_names
    ['t', 'x']
    """
    missing = [n for n in names if n not in rows.column_names]
    if missing:
        raise StateFormatError(
            f"this state holds no column {', '.join(map(repr, missing))}, which the query now keeps "
            "or reads (a column added to its SELECT or its source): start the query from a new "
            "checkpoint"
        )
    return rows if rows.column_names == list(names) else rows.select(list(names))


@dataclass
class ChunkIndexMeta(OnUpdateMeta):
    """The chunked layout's index: the partition's counters and the next free chunk id; with its
    ``buckets``, the key columns of a bucket of keys (None: a state per key). A bucket's own value
    is one with no table: the keyBuckets and keys its entries were written with."""

    next_chunk: int = 0
    keys: list[str] | None = None

    def to_json(self) -> dict:
        out = super().to_json()
        if out.get("keys") is None:  # a state per key reads as it did before buckets
            out.pop("keys", None)
        return out


M = TypeVar("M", bound=StateMeta)


def encode(
    tables: dict[str, pa.Table], kind: str, meta: StateMeta | None = None, version: int | None = None
) -> bytes:
    """State bytes of named tables, of a ``kind``, with counters ``meta`` (None: none), in format
    ``version`` (None: the newest ``meta`` writes, else ``FORMAT_VERSION``). O(bytes); streaming
    steps encode small states per key and call, so the fixed cost counts."""
    if version is None:
        version = meta.NEWEST if meta is not None else FORMAT_VERSION
    header = json.dumps(
        {
            "version": version,
            "kind": kind,
            "tables": list(tables),
            "meta": meta.to_json() if meta is not None else {},
        }
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


def decode(data: bytes, kind: str, meta: type[M]) -> tuple[dict[str, pa.Table], M]:
    """The tables and counters of state bytes of this ``kind`` written in a format from
    ``meta.OLDEST`` up to ``meta.NEWEST``; StateFormatError otherwise. O(bytes), no copy of the
    tables."""
    view = memoryview(data)
    n = int.from_bytes(view[:4], "little")
    try:
        header = json.loads(bytes(view[4 : 4 + n]))
    except ValueError:
        raise StateFormatError("not overwindow state") from None
    if not isinstance(header, dict):
        raise StateFormatError("not overwindow state")
    version, oldest, newest = header.get("version"), meta.OLDEST, meta.NEWEST
    if not isinstance(version, int) or not oldest <= version <= newest or header.get("kind") != kind:
        accepted = f"{oldest} to {newest}" if oldest < newest else f"{newest}"
        raise StateFormatError(
            f"state written as {header.get('kind')!r} format {version}, this overwindow reads "
            f"{kind!r} format {accepted}; start the query from a new checkpoint"
        )
    try:
        return _tables(view, 4 + n, header), meta.from_json(header["meta"], version)
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
