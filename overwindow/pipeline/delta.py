"""The Delta Lake sink: a view's table in a Delta table (a folder of Parquet files and a log), written
with ``deltalake`` (delta-rs: no Spark jars, ``pip install overwindow[delta]``).

Window close appends each micro-batch; on update each batch, netted to one change per key
(``overwindow.streaming.changelog``: the table is keyed by the row key alone), is one ``MERGE``:
upserts update or insert, deletes delete. Every commit carries the query's id and the batch id as a
Delta application transaction (``txn``: app id = the query id, version = the batch id) and the same
two in its commit info, so the batch's rows and its record commit as one; a batch whose id the
table's log already holds for the query is skipped, so a replay (a job killed anywhere, even inside
the commit, and started again) leaves the table exact. An empty batch commits its record alone,
so the table always says which batch it holds (``check_pairing`` compares that with the checkpoint).

>>> import pyarrow as pa, tempfile, deltalake
>>> path = tempfile.mkdtemp()
>>> s = DeltaSink(path, key=["id"], upsert=True)
>>> s.apply(pa.table({"id": [1, 2], "s": [1.5, 2.5], "_change": ["upsert", "upsert"]}), 0, "q1")
2
>>> s.apply(pa.table({"id": [1], "s": [None], "_change": ["delete"]}), 1, "q1"), s.bookkeeping()
(1, Bookkeeping(table_exists=True, applied=Applied(query_id='q1', batch_id=1)))
>>> s.apply(pa.table({"id": [1], "s": [None], "_change": ["delete"]}), 1, "q1") is None  # a replay
True
>>> deltalake.DeltaTable(path).to_pyarrow_table().to_pydict()
{'id': [2], 's': [2.5]}
"""

from __future__ import annotations

import pyarrow as pa

from overwindow.pipeline.sinks import Applied, Bookkeeping
from overwindow.pipeline.table_formats import BATCH_ID, QUERY_ID, TableFormatSink, upserts
from overwindow.streaming.contract import CHANGE, UPSERT


class DeltaSink(TableFormatSink):
    """A view's table in the Delta table at ``path`` (a folder, or a URI deltalake reads, with
    ``storage_options``). ``key``: the columns an emit-on-update view is keyed by (its row key);
    ``upsert``: emit on update (else append); ``partition_by``: the table's partition columns when
    the sink creates it. Costs per batch: an append writes the batch's files; a MERGE joins the
    batch with the table (delta-rs reads the files its keys may be in)."""

    format = "Delta"

    def __init__(
        self,
        path: str,
        key: list[str],
        upsert: bool,
        partition_by: list[str] | None = None,
        storage_options: dict | None = None,
    ):
        self.path, self.key, self.upsert = path, list(key), upsert
        self.partition_by = list(partition_by or [])
        self.storage_options = storage_options
        self.name = f"Delta table {path}"
        self._owner_checked = False  # whether apply has read which query the table belongs to

    def __repr__(self) -> str:
        return f"DeltaSink({self.path!r})"

    def _table(self):
        """The Delta table, or None where there is none yet."""
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self.path, self.storage_options):
            return None
        return DeltaTable(self.path, storage_options=self.storage_options)

    def bookkeeping(self) -> Bookkeeping:
        """Whether the table exists, and the last batch a query of overwindow committed to it (from
        the newest commit whose info names one: other writers' commits, an OPTIMIZE or a VACUUM, may
        come after it). Reads the table's history: O(commits)."""
        table = self._table()
        if table is None:
            return Bookkeeping(False, None)
        for commit in table.history():  # newest first
            if QUERY_ID in commit:
                query = commit[QUERY_ID]
                done = table.transaction_version(query)
                return Bookkeeping(True, Applied(query, done if done is not None else int(commit[BATCH_ID])))
        return Bookkeeping(True, None)

    def _arrow_type(self, field: pa.Field) -> pa.DataType:
        from deltalake import Schema

        return pa.schema(Schema.from_arrow(pa.schema([field])).to_arrow()).field(0).type

    def _table_columns(self) -> dict[str, pa.DataType] | None:
        table = self._table()
        return None if table is None else {f.name: f.type for f in pa.schema(table.schema().to_arrow())}

    def _table_partitions(self) -> list[str] | None:
        table = self._table()
        return None if table is None else list(table.metadata().partition_columns)

    def _holds(self, batch_id: int, query_id: str) -> bool:
        """The table's owner read once from its history, then its app transaction of the query: O(1)
        a batch."""
        if not self._owner_checked:
            if super()._holds(batch_id, query_id):
                return True
            self._owner_checked = True
        table = self._table()
        done = None if table is None else table.transaction_version(query_id)
        return done is not None and batch_id <= done

    def _commit(self, changes: pa.Table, batch_id: int, query_id: str) -> None:
        """One Delta commit of a netted batch and its app transaction: an append (a new table: an
        on-update batch's upserts), or a MERGE; an empty MERGE commits the record alone."""
        from deltalake import CommitProperties, Transaction, write_deltalake

        table = self._table()
        commit = CommitProperties(
            app_transactions=[Transaction(query_id, batch_id)],
            custom_metadata={QUERY_ID: query_id, BATCH_ID: str(batch_id)},
        )
        data = changes.drop_columns([CHANGE]) if CHANGE in changes.column_names else changes
        if table is None or not self.upsert:
            if self.upsert:
                data = data.filter(upserts(changes))
            write_deltalake(
                self.path,
                data,
                mode="append",
                partition_by=self.partition_by or None,
                storage_options=self.storage_options,
                commit_properties=commit,
            )
            return
        if changes.num_rows:
            self._merge(table, changes, commit)
            table.update_incremental()
        if table.transaction_version(query_id) != batch_id:  # a MERGE that changed nothing
            # commits nothing: the batch's record alone
            table.create_write_transaction([], mode="append", schema=table.schema(), commit_properties=commit)

    def _merge(self, table, changes: pa.Table, commit) -> None:
        """One MERGE of a netted changelog by ``key``: NULL keys match NULL keys (``IS NOT DISTINCT
        FROM``, used only for key columns holding a NULL in the batch: ``=`` lets delta-rs hash-join)."""
        same = [
            f"(t.{_name(k)} IS NOT DISTINCT FROM s.{_name(k)})"
            if changes.column(k).null_count
            else f"(t.{_name(k)} = s.{_name(k)})"
            for k in self.key
        ]
        values = {_name(c): f"s.{_name(c)}" for c in changes.column_names if c != CHANGE}
        upsert = f"s.{_name(CHANGE)} = '{UPSERT}'"
        (
            table.merge(
                changes,
                predicate=" AND ".join(same),
                source_alias="s",
                target_alias="t",
                commit_properties=commit,
            )
            .when_matched_update(values, predicate=upsert)
            .when_matched_delete(predicate=f"NOT ({upsert})")
            .when_not_matched_insert(values, predicate=upsert)
            .execute()
        )


def _name(column: str) -> str:
    """A column name as delta-rs's SQL reads it: in backticks, a backtick doubled."""
    return "`" + column.replace("`", "``") + "`"
