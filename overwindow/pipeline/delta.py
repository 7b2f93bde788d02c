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

from overwindow.physical.values import sql_type
from overwindow.pipeline.sinks import Applied, Bookkeeping, SinkDriftError, _already_applied
from overwindow.streaming.changelog import net_changes
from overwindow.streaming.contract import CHANGE, UPSERT

QUERY_ID, BATCH_ID = "overwindow.queryId", "overwindow.batchId"  # keys of the commit info


class DeltaSink:
    """A view's table in the Delta table at ``path`` (a folder, or a URI deltalake reads, with
    ``storage_options``). ``key``: the columns an emit-on-update view is keyed by (its row key);
    ``upsert``: emit on update (else append); ``partition_by``: the table's partition columns when
    the sink creates it. Costs per batch: an append writes the batch's files; a MERGE joins the
    batch with the table (delta-rs reads the files its keys may be in)."""

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

    def check_columns(self, schema: pa.Schema) -> None:
        """Refuses (SinkDriftError), before anything is written, a view the table cannot keep as it
        is (``schema``: the view's columns): a column Delta has no type for, a partition column the
        view does not write, and in an existing table a column missing, of another type, or other
        partition columns than ``partition_by``. Columns the view does not write may stay."""
        from deltalake import Schema

        fields = [f for f in schema if f.name != CHANGE]
        for f in fields:
            try:
                Schema.from_arrow(pa.schema([f]))
            except Exception as e:  # deltalake's errors differ by release: say what the view writes
                raise SinkDriftError(
                    f"Delta table {self.path}: Delta has no type for column {f.name} "
                    f"({sql_type(f.type)}): {e}"
                ) from None
        names = {f.name for f in fields}
        missing = [c for c in self.partition_by + self.key if c not in names]
        if missing:
            raise SinkDriftError(
                f"Delta table {self.path}: the view writes no column {missing[0]} to partition or key the "
                f"table by (it writes {', '.join(sorted(names))})"
            )
        table = self._table()
        if table is None:
            return
        have = {f.name: f for f in pa.schema(table.schema().to_arrow())}
        want = pa.schema(Schema.from_arrow(pa.schema(fields)).to_arrow())
        for f in want:
            found = have.get(f.name)
            if found is None:
                raise SinkDriftError(
                    f"Delta table {self.path} has no column {f.name} (the view writes {sql_type(f.type)})"
                )
            if not _same_type(found.type, f.type):
                raise SinkDriftError(
                    f"Delta table {self.path}: column {f.name} is {sql_type(found.type)} there, the view "
                    f"writes {sql_type(f.type)}"
                )
        parts = list(table.metadata().partition_columns)
        if self.partition_by and parts != self.partition_by:
            raise SinkDriftError(
                f"Delta table {self.path} is partitioned by ({', '.join(parts) or 'nothing'}), the view file "
                f"by ({', '.join(self.partition_by)}) ([sink] partition_by)"
            )

    def apply(self, rows: pa.Table, batch_id: int, query_id: str) -> int | None:
        """Apply one micro-batch of the query ``query_id`` in one Delta commit; returns the rows
        written (on update: the changes after netting), or None when the table's log holds the
        batch already. Raises SinkDriftError when another query wrote the table."""
        from deltalake import CommitProperties, Transaction, write_deltalake

        table = self._table()
        if table is not None:
            if not self._owner_checked:
                kept = self.bookkeeping().applied
                if kept is not None and _already_applied(self.path, kept, batch_id, query_id):
                    return None
                self._owner_checked = True
            done = table.transaction_version(query_id)
            if done is not None and batch_id <= done:
                return None
        commit = CommitProperties(
            app_transactions=[Transaction(query_id, batch_id)],
            custom_metadata={QUERY_ID: query_id, BATCH_ID: str(batch_id)},
        )
        changes = net_changes(rows, self.key) if self.upsert else rows
        data = changes.drop_columns([CHANGE]) if CHANGE in changes.column_names else changes
        if table is None or not self.upsert:  # appends (a new table: an on-update batch's upserts)
            if self.upsert:
                data = data.filter(_upserts(changes))
            write_deltalake(
                self.path,
                data,
                mode="append",
                partition_by=self.partition_by or None,
                storage_options=self.storage_options,
                commit_properties=commit,
            )
        else:
            if changes.num_rows:
                self._merge(table, changes, commit)
                table.update_incremental()
            if table.transaction_version(query_id) != batch_id:  # a MERGE that changed nothing
                # commits nothing: the batch's record alone
                table.create_write_transaction(
                    [], mode="append", schema=table.schema(), commit_properties=commit
                )
        self._owner_checked = True
        return changes.num_rows

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


def _upserts(changes: pa.Table) -> pa.Array:
    import pyarrow.compute as pc

    return pc.fill_null(pc.equal(changes.column(CHANGE), UPSERT), False)


def _name(column: str) -> str:
    """A column name as delta-rs's SQL reads it: in backticks, a backtick doubled."""
    return "`" + column.replace("`", "``") + "`"


def _same_type(found: pa.DataType, want: pa.DataType) -> bool:
    """Whether a table's column type is the one the sink writes (Delta keeps strings and binaries as
    one type each, which Arrow spells small or large)."""
    loose = {pa.large_string(): pa.string(), pa.string_view(): pa.string(), pa.large_binary(): pa.binary()}
    return loose.get(found, found) == loose.get(want, want)
