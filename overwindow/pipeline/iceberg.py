"""The Iceberg sink: a view's table in an Iceberg table, written with ``pyiceberg`` (no Spark jars,
``pip install overwindow[iceberg]``) through a catalog: pyiceberg's SQL catalog over an SQLite file
for local use, or a catalog URI (``sqlite:///...``, ``postgresql+psycopg://...`` for the SQL catalog,
``http(s)://...`` for a REST catalog), and a warehouse (a folder or a URI) where the data files go.

Window close appends each micro-batch; on update each batch, netted to one change per key
(``overwindow.streaming.changelog``: the table is keyed by the row key alone), is one transaction
that deletes the rows of every key the batch changes and appends its upserts (pyiceberg's own
``upsert`` neither deletes nor matches NULL keys). Every snapshot a batch commits carries the query's
id and the batch id in its summary properties, and the transaction commits in one step of the
catalog, so the batch's rows and its record commit as one; a batch whose id the table's newest
record holds for the query is skipped, so a replay (a job killed anywhere, even inside the commit,
and started again) leaves the table exact. An empty batch commits its record alone (an empty append).

>>> import pyarrow as pa, tempfile, os
>>> d = tempfile.mkdtemp()
>>> s = IcebergSink(os.path.join(d, "catalog.db"), os.path.join(d, "warehouse"), "db.v", ["id"], True)
>>> s.apply(pa.table({"id": [1, 2], "s": [1.5, 2.5], "_change": ["upsert", "upsert"]}), 0, "q1")
2
>>> s.apply(pa.table({"id": [1], "s": [None], "_change": ["delete"]}), 1, "q1"), s.bookkeeping()
(1, Bookkeeping(table_exists=True, applied=Applied(query_id='q1', batch_id=1)))
>>> s.apply(pa.table({"id": [1], "s": [None], "_change": ["delete"]}), 1, "q1") is None  # a replay
True
>>> s.table().scan().to_arrow().to_pydict()
{'id': [2], 's': [2.5]}
"""

from __future__ import annotations

import math
import os
import warnings
from collections import defaultdict

import pyarrow as pa

from overwindow.pipeline.sinks import Applied, Bookkeeping
from overwindow.pipeline.table_formats import BATCH_ID, QUERY_ID, TableFormatSink, upserts
from overwindow.pipeline.view import is_uri
from overwindow.streaming.contract import CHANGE


class IcebergSink(TableFormatSink):
    """A view's table ``table`` (``namespace.name``) in the Iceberg catalog ``catalog`` (an SQLite
    file, made where missing, or a catalog URI), its data files under ``warehouse``. ``key``: the
    columns an emit-on-update view is keyed by (its row key); ``upsert``: emit on update (else
    append); ``partition_by``: the table's partition columns (identity partitions) when the sink
    creates it; ``properties``: the catalog's properties besides its URI and warehouse (a REST
    catalog's ``credential``, ``token``, ...: never printed). Costs per batch: an append writes the
    batch's files; an update also rewrites the data files holding a key the batch changes (copy on
    write) and reads the table's newest snapshot's summary."""

    format = "Iceberg"

    def __init__(
        self,
        catalog: str,
        warehouse: str,
        table: str,
        key: list[str],
        upsert: bool,
        partition_by: list[str] | None = None,
        properties: dict[str, str] | None = None,
    ):
        self.catalog_location, self.warehouse, self.identifier = catalog, warehouse, table
        self._properties = dict(properties or {})
        self.key, self.upsert, self.partition_by = list(key), upsert, list(partition_by or [])
        self.name = f"Iceberg table {table}"
        self._catalog = None

    def __repr__(self) -> str:
        return f"IcebergSink({self.identifier!r})"

    def catalog(self):
        """The catalog (made once a sink)."""
        if self._catalog is None:
            from pyiceberg.catalog import load_catalog

            local = self.catalog_location
            uri = local if is_uri(local) else f"sqlite:///{os.path.abspath(local)}"
            warehouse = (
                self.warehouse if is_uri(self.warehouse) else f"file://{os.path.abspath(self.warehouse)}"
            )
            self._catalog = load_catalog(
                "overwindow", **{**self._properties, "uri": uri, "warehouse": warehouse}
            )
        return self._catalog

    def table(self):
        """The Iceberg table, or None where there is none yet (nor its catalog file)."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        if not is_uri(self.catalog_location) and not os.path.exists(self.catalog_location):
            return None
        try:
            return self.catalog().load_table(self.identifier)
        except (NoSuchTableError, NoSuchNamespaceError):
            return None

    def bookkeeping(self) -> Bookkeeping:
        """Whether the table exists, and the last batch a query of overwindow committed to it (from
        the newest snapshot, walking back through its ancestors, whose summary names one: another
        writer's snapshots, a compaction, may come after it). O(snapshots since that one)."""
        from pyiceberg.table.snapshots import ancestors_of

        table = self.table()
        if table is None:
            return Bookkeeping(False, None)
        for snapshot in ancestors_of(table.current_snapshot(), table.metadata):  # newest first
            summary = snapshot.summary.additional_properties if snapshot.summary else {}
            if QUERY_ID in summary:
                return Bookkeeping(True, Applied(summary[QUERY_ID], int(summary[BATCH_ID])))
        return Bookkeeping(True, None)

    def _arrow_type(self, field: pa.Field) -> pa.DataType:
        from pyiceberg.catalog import Catalog
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        iceberg = Catalog._convert_schema_if_needed(pa.schema([field]))
        return schema_to_pyarrow(iceberg).field(0).type

    def _table_columns(self) -> dict[str, pa.DataType] | None:
        table = self.table()
        return None if table is None else {f.name: f.type for f in table.schema().as_arrow()}

    def _table_partitions(self) -> list[str] | None:
        """The existing table's partition columns (a transform other than identity named as
        ``bucket[4](id)``), or None where there is no table."""
        table = self.table()
        if table is None:
            return None
        names = []
        for field in table.spec().fields:
            column = table.schema().find_column_name(field.source_id)
            names.append(column if str(field.transform) == "identity" else f"{field.transform}({column})")
        return names

    def _commit(self, changes: pa.Table, batch_id: int, query_id: str) -> None:
        """One transaction of the catalog: on update the rows of the batch's keys deleted, then its
        upserts appended (on window close: the batch appended), each snapshot with the record."""
        record = {QUERY_ID: query_id, BATCH_ID: str(batch_id)}
        data = changes.drop_columns([CHANGE]) if CHANGE in changes.column_names else changes
        table = self.table() or self._create(data.schema)
        kept = table.schema().as_arrow()
        data = data.cast(pa.schema([kept.field(c) for c in data.column_names]))  # as kept: no NULL type
        with table.transaction() as tx:
            if self.upsert and changes.num_rows:
                with warnings.catch_warnings():  # "did not match any records": a new key
                    warnings.simplefilter("ignore")
                    tx.delete(key_filter(changes, self.key), snapshot_properties=record)
            tx.append(data.filter(upserts(changes)) if self.upsert else data, snapshot_properties=record)

    def _create(self, schema: pa.Schema):
        """The table, made with its partition spec in one commit of the catalog."""
        from pyiceberg.catalog import Catalog
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.schema import assign_fresh_schema_ids
        from pyiceberg.transforms import IdentityTransform

        namespace = self.identifier.rsplit(".", 1)[0]
        catalog = self.catalog()
        catalog.create_namespace_if_not_exists(namespace)
        if not self.partition_by:
            return catalog.create_table_if_not_exists(self.identifier, schema=schema)
        iceberg = assign_fresh_schema_ids(Catalog._convert_schema_if_needed(schema))  # ids to refer to
        spec = PartitionSpec(
            *(
                PartitionField(iceberg.find_field(c).field_id, 1000 + i, IdentityTransform(), c)
                for i, c in enumerate(self.partition_by)
            )
        )
        return catalog.create_table_if_not_exists(self.identifier, schema=iceberg, partition_spec=spec)


def key_filter(rows: pa.Table, key: list[str]):
    """An Iceberg row filter matching the rows whose ``key`` is one of ``rows``' keys, a NULL key
    matching NULL (``IS NULL``) and a NaN one NaN: per value of the key's first columns, one ``IN``
    of its last column's values, joined by ORs of depth log(n) (pyiceberg's visitors recurse). Each
    comparison is guarded by ``IS NOT NULL``, so the filter is never NULL: pyiceberg's delete keeps
    the rows where NOT filter is true, and would drop a row whose filter is NULL. O(n log n).

    >>> key_filter(pa.table({"id": [3, None]}), ["id"])
    Or(left=IsNull(term=Reference(name='id')), right=And(left=NotNull(term=Reference(name='id')), right=...))
    """
    from pyiceberg.expressions import And, EqualTo, In, IsNaN, IsNull, NotNull, Or

    def nan(v):
        return isinstance(v, float) and math.isnan(v)

    def matches(column, values):  # a column is one of some values
        plain = [v for v in values if v is not None and not nan(v)]
        found = [IsNull(column)] if None in values else []
        if plain:
            found.append(And(NotNull(column), In(column, plain) if plain[1:] else EqualTo(column, plain[0])))
        return found + ([And(NotNull(column), IsNaN(column))] if any(nan(v) for v in values) else [])

    *first, last = key
    groups: dict[tuple, list] = defaultdict(list)
    for row in rows.select(key).to_pylist():
        groups[tuple(row[c] for c in first)].append(row[last])
    terms = []
    for prefix, values in groups.items():
        same = [matches(c, [v])[0] for c, v in zip(first, prefix)]
        terms += [_balanced(And, [*same, end]) for end in matches(last, values)]
    return _balanced(Or, terms)


def _balanced(join, terms: list):
    """``terms`` joined by ``join`` (And, Or) as a balanced tree."""
    if len(terms) == 1:
        return terms[0]
    middle = len(terms) // 2
    return join(_balanced(join, terms[:middle]), _balanced(join, terms[middle:]))
