"""What the sinks into open table formats (Delta Lake: ``overwindow.pipeline.delta``; Iceberg:
``overwindow.pipeline.iceberg``) share: the apply protocol (a replayed batch skipped, the batch netted
to one change per key, then one commit of the format's), the check of a view's columns against an
existing table, in the view's words, and the sink a view file names.

Each commit carries the query's id and the batch id (``QUERY_ID``, ``BATCH_ID``: the keys under which
the formats' commit metadata keeps them), so the table itself says which batch it holds.

>>> import pyarrow as pa
>>> upserts(pa.table({"_change": ["upsert", "delete", None]})).to_pylist()
[True, False, False]
"""

from __future__ import annotations

import importlib

import pyarrow as pa

from overwindow.physical.values import sql_type
from overwindow.pipeline.sinks import Bookkeeping, SinkDriftError, _already_applied
from overwindow.streaming.changelog import net_changes
from overwindow.streaming.contract import CHANGE, UPSERT

QUERY_ID, BATCH_ID = "overwindow.queryId", "overwindow.batchId"  # keys of a commit's metadata


class TableFormatSink:
    """A view's table in an open table format. Subclasses set ``key`` (the row key the changelog is
    keyed by), ``upsert`` (emit on update, else append) and ``name`` (what messages call the table:
    ``Delta table /data/v``), and give ``bookkeeping``, ``_commit`` (one commit of a netted batch
    and its record), ``_arrow_type`` (the Arrow type the format keeps a column of the view as) and
    ``_table_columns`` (an existing table's columns, or None) and ``_table_partitions`` (an
    existing table's partition columns, or None)."""

    key: list[str]
    upsert: bool
    name: str
    format: str  # "Delta", "Iceberg"
    partition_by: list[str] = []

    def bookkeeping(self) -> Bookkeeping:
        raise NotImplementedError

    def _commit(self, changes: pa.Table, batch_id: int, query_id: str) -> None:
        raise NotImplementedError

    def _arrow_type(self, field: pa.Field) -> pa.DataType:
        raise NotImplementedError

    def _table_columns(self) -> dict[str, pa.DataType] | None:
        raise NotImplementedError

    def _table_partitions(self) -> list[str] | None:
        raise NotImplementedError

    def _holds(self, batch_id: int, query_id: str) -> bool:
        """Whether the table holds ``batch_id`` of ``query_id`` already; refuses (SinkDriftError)
        another query's table. Reads the table's newest record."""
        kept = self.bookkeeping().applied
        return kept is not None and _already_applied(self.name, kept, batch_id, query_id)

    def apply(self, rows: pa.Table, batch_id: int, query_id: str) -> int | None:
        """Apply one micro-batch of the query ``query_id`` in one commit; returns the rows written
        (on update: the changes after netting), or None when the table holds the batch already.
        Raises SinkDriftError when another query wrote the table."""
        if self._holds(batch_id, query_id):
            return None
        changes = net_changes(rows, self.key) if self.upsert else rows
        self._commit(changes, batch_id, query_id)
        return changes.num_rows

    def check_columns(self, schema: pa.Schema) -> None:
        """Refuses (SinkDriftError), before anything is written, a view the table cannot keep as it
        is (``schema``: the view's columns): a column the format has no type for, a key or partition
        column the view does not write, and in an existing table a column missing or of another
        type, or other partition columns than ``partition_by`` (where it names some). Columns the
        view does not write may stay. O(columns), one read of the table's schema."""
        fields = [f for f in schema if f.name != CHANGE]
        want = {}
        for f in fields:
            try:
                want[f.name] = self._arrow_type(f)
            except Exception as e:  # the libraries' errors differ by release: say what the view writes
                raise SinkDriftError(
                    f"{self.name}: {self.format} has no type for column {f.name} ({sql_type(f.type)}): {e}"
                ) from None
        needed = self.partition_by + (self.key if self.upsert else [])
        missing = [c for c in needed if c not in want]
        if missing:
            raise SinkDriftError(
                f"{self.name}: the view writes no column {missing[0]} to partition or key the table by "
                f"(it writes {', '.join(sorted(want))})"
            )
        have = self._table_columns()
        for name, kind in want.items() if have is not None else ():
            if name not in have:
                raise SinkDriftError(f"{self.name} has no column {name} (the view writes {sql_type(kind)})")
            if not _same_type(have[name], kind):
                raise SinkDriftError(
                    f"{self.name}: column {name} is {sql_type(have[name])} there, the view writes "
                    f"{sql_type(kind)}"
                )
        parts = self._table_partitions() if have is not None and self.partition_by else None
        if parts is not None and parts != self.partition_by:
            raise SinkDriftError(
                f"{self.name} is partitioned by ({', '.join(parts) or 'nothing'}), the view file "
                f"by ({', '.join(self.partition_by)}) ([sink] partition_by)"
            )


def upserts(changes: pa.Table) -> pa.Array:
    """Which rows of a netted changelog are upserts (the rest are deletes)."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.equal(changes.column(CHANGE), UPSERT), False)


def table_format_sink(view):
    """The Delta or Iceberg sink of a view file (``[sink] kind``), keyed by the row key alone (the
    changelog contract, ``overwindow.streaming.changelog``); refuses (ViewFileError) where the
    format's package is not installed."""
    from overwindow.pipeline.view import ViewFileError

    kind, sink = view.sink["kind"], view.sink
    key, upsert = view.row_key_alone, view.emit == "on_update"
    package = {"delta": "deltalake", "iceberg": "pyiceberg"}[kind]
    try:
        importlib.import_module(package)
        if kind == "delta":
            from overwindow.pipeline.delta import DeltaSink

            return DeltaSink(sink["path"], key, upsert, sink.get("partition_by"))
        from overwindow.pipeline.iceberg import IcebergSink
        from overwindow.pipeline.sources import client_settings

        where = sink["catalog"], sink["warehouse"], sink["table"]
        return IcebergSink(*where, key, upsert, sink.get("partition_by"), client_settings(view, "sink"))
    except ImportError:
        raise ViewFileError(
            f'{view.where("sink", "kind")}: kind = "{kind}" writes with the {package} package: '
            f"pip install overwindow[{kind}]"
        ) from None


def _same_type(found: pa.DataType, want: pa.DataType) -> bool:
    """Whether a table's column type is the one the sink writes (the formats keep strings and
    binaries as one type each, which Arrow spells small or large)."""
    loose = {pa.large_string(): pa.string(), pa.string_view(): pa.string(), pa.large_binary(): pa.binary()}
    return loose.get(found, found) == loose.get(want, want)
