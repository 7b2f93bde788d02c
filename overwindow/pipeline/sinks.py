"""Sinks that apply each micro-batch exactly once, paired with one checkpoint.

Emit-on-update views are applied as upserts and deletes keyed by (partition key, row key), a NULL
key being a value like any other (SQL puts NULL keys in one partition), each batch first netted to
one change per key (``overwindow.streaming.changelog``); emit-on-window-close views append. A
micro-batch's rows, its batch id and the id of the query that wrote it (Spark's ``query.id``, kept
in the checkpoint and stable across restarts) commit in one transaction, and a batch id already
applied is skipped ("skipped: already applied"), so a replayed batch changes nothing. A table is
written by one checkpoint only: ``check_pairing`` refuses to start a view whose table belongs to
another query, whose checkpoint has committed batches the table does not hold, or whose table has
applied batches the checkpoint does not know, and ``apply`` refuses another query's table. Table
and column names are always quoted identifiers and values always bound parameters.

>>> import pyarrow as pa, tempfile, os
>>> db = os.path.join(tempfile.mkdtemp(), "v.sqlite")
>>> s = SqliteSink(db, "v", key=["k", "id"], upsert=True)
>>> t = pa.table({"k": [None], "id": [7], "s": [2.5], "_change": ["upsert"]})
>>> s.apply(t, 0, "q1"), s.apply(t, 0, "q1"), s.apply(t, 1, "q1"), s.bookkeeping()
(1, None, 1, Bookkeeping(table_exists=True, applied=Applied(query_id='q1', batch_id=1)))
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import os
import sqlite3
from dataclasses import dataclass

import pyarrow as pa

from overwindow.physical.values import TypeFamily, kind_of, sql_type
from overwindow.streaming.changelog import net_changes
from overwindow.streaming.contract import CHANGE

BATCHES = "_overwindow_batches"
SKIPPED = "skipped: already applied"  # what the progress line says of a batch the sink had applied


class SinkDriftError(RuntimeError):
    """The sink's table and the checkpoint do not belong together: running on would lose or double
    rows."""


@dataclass(frozen=True)
class Applied:
    """The last batch applied to a view's table, and the query that applied it (None: written by a
    version that did not record it)."""

    query_id: str | None
    batch_id: int


@dataclass(frozen=True)
class Bookkeeping:
    """What a sink's database says of a view: whether its table exists, and its last applied batch."""

    table_exists: bool
    applied: Applied | None


def check_pairing(table: str, kept: Bookkeeping, checkpoint, where: str) -> None:
    """Refuses (SinkDriftError) a table and a checkpoint (``overwindow.pipeline.checkpoint.
    CheckpointState``) that drifted apart; ``where`` names the two for the message.

    >>> from overwindow.pipeline.checkpoint import CheckpointState
    >>> check_pairing("v", Bookkeeping(True, Applied("q1", 4)), CheckpointState("q1", 4, 5), "")
    >>> check_pairing("v", Bookkeeping(True, Applied("q1", 4)), CheckpointState(None, None, None), "")
    Traceback (most recent call last):
    ...
    overwindow.pipeline.sinks.SinkDriftError: table v holds batches 0..4 of another query (q1) ...
    """
    applied, ways = (
        kept.applied,
        (
            "Either keep the table with the checkpoint that wrote it, or start both afresh: a new checkpoint "
            "and a new (or dropped) table"
        ),
    )
    if applied is not None and applied.query_id is not None and applied.query_id != checkpoint.query_id:
        raise SinkDriftError(
            f"table {table} holds batches 0..{applied.batch_id} of another query ({applied.query_id}) than "
            f"the checkpoint's ({checkpoint.query_id or 'a new checkpoint'}){where}; running on would "
            f"skip or mix batches. {ways}."
        )
    if not kept.table_exists and (applied is not None or checkpoint.last_committed is not None):
        raise SinkDriftError(
            f"batches 0..{max(applied.batch_id if applied else -1, checkpoint.last_committed or -1)} were "
            f"applied but the table of {table} is missing{where}: their rows would never be written "
            f"again. {ways}."
        )
    if applied is None:
        if checkpoint.last_committed is not None:
            raise SinkDriftError(
                f"the checkpoint has committed batches 0..{checkpoint.last_committed} but the record of "
                f"applied batches of {table} is missing{where}: their rows would be missing. {ways}."
            )
        return
    if checkpoint.last_committed is None and applied.query_id is None:
        raise SinkDriftError(
            f"table {table} holds batches 0..{applied.batch_id} of an earlier run, and the checkpoint is "
            f"new{where}: its first batches would be skipped as already applied. {ways}."
        )
    last = -1 if checkpoint.last_planned is None else checkpoint.last_planned
    if applied.batch_id > last:
        raise SinkDriftError(
            f"table {table} has applied batch {applied.batch_id}, past the checkpoint's last batch "
            f"{last}{where} (an older copy of the checkpoint?): new batches would be skipped as already "
            f"applied. {ways}."
        )
    if checkpoint.last_committed is not None and applied.batch_id < checkpoint.last_committed:
        raise SinkDriftError(
            f"table {table} has applied batches up to {applied.batch_id} only, but the checkpoint has "
            f"committed up to {checkpoint.last_committed}{where} (an older copy of the database?): the "
            f"batches between would be missing. {ways}."
        )


def _already_applied(table: str, applied: Applied, batch_id: int, query_id: str) -> bool:
    """Whether ``batch_id`` of ``query_id`` is in the table already; refuses another query's table."""
    if applied.query_id is not None and applied.query_id != query_id:
        raise SinkDriftError(
            f"table {table} is written by another query ({applied.query_id}) than this one ({query_id}): "
            "keep one checkpoint per table"
        )
    return batch_id <= applied.batch_id


def quote(name: str) -> str:
    """An SQL identifier, quoted: embedded quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def changes(records: list[dict], columns: list[str], key: list[str], convert) -> tuple[list, list]:
    """(rows to write, keys to delete) of one batch, as parameter tuples; rows without ``_change``
    (appended views) are all written."""
    writes = [tuple(convert(r[c]) for c in columns) for r in records if r.get(CHANGE) != "delete"]
    deletes = [tuple(convert(r[k]) for k in key) for r in records if r.get(CHANGE) == "delete"]
    return writes, deletes


# column types by our type family (overwindow.physical.values.kind_of): (SQLite, PostgreSQL);
# other families (strings, ...) are text, binary columns BLOB / bytea
_SQL_TYPES = {
    TypeFamily.INT: ("INTEGER", "bigint"),
    TypeFamily.BOOL: ("INTEGER", "boolean"),
    TypeFamily.FLOAT: ("REAL", "double precision"),
    TypeFamily.TIMESTAMP: ("TEXT", "timestamp"),
    TypeFamily.DATE: ("TEXT", "date"),
    TypeFamily.INTERVAL: ("TEXT", "interval"),
}


def _sql_type(t: pa.DataType, postgres: bool) -> str:
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytea" if postgres else "BLOB"
    if pa.types.is_decimal(t):  # every digit: a REAL holds 15, SQLite keeps longer ones as text
        return (
            f"numeric({t.precision}, {t.scale})" if postgres else "NUMERIC" if t.precision <= 15 else "TEXT"
        )
    return _SQL_TYPES.get(kind_of(t), ("TEXT", "text"))[postgres]


def _column_problem(table: str, column: pa.Field, found: str | None, want: str, postgres: bool) -> str | None:
    """Why ``table``'s ``column`` (its declared type ``found``, None: no such column) cannot take what
    the view writes there (``want``, its SQL type), or None."""
    if found is None:
        return f"table {table} has no column {column.name} (the view writes {want}, {sql_type(column.type)})"
    if _same_type(found, want, postgres):
        return None
    return (
        f"table {table}: column {column.name} is {found} there, the view writes {want} "
        f"({sql_type(column.type)}): values would be converted to the table's type"
    )


def _same_type(found: str, want: str, postgres: bool) -> bool:
    """Whether a table's declared column type is the one the sink creates (PostgreSQL spells some of
    them out: ``timestamp without time zone``, ``numeric(12,2)``).

    >>> _same_type("timestamp without time zone", "timestamp", True)
    True
    >>> _same_type("numeric(12,2)", "numeric(12, 2)", True)
    True
    >>> _same_type("bigint", "double precision", True), _same_type("real", "REAL", False)
    (False, True)
    """
    spelt = {"timestamp": "timestamp without time zone"}
    found, want = found.lower().replace(" ", ""), want.lower()
    return found == spelt.get(want, want).replace(" ", "")


def _py(v):
    if isinstance(v, (dt.datetime, dt.date)):  # one text format (microseconds always): pandas reads it
        return v.isoformat(sep=" ", timespec="microseconds") if isinstance(v, dt.datetime) else v.isoformat()
    if isinstance(v, float) and v != v:
        return None  # NaN as NULL: SQLite has no NaN
    if isinstance(v, decimal.Decimal):
        return str(v)  # sqlite3 binds no Decimal; NUMERIC affinity turns the text into a number
    if isinstance(v, dt.timedelta):  # sqlite3 binds no timedelta: PostgreSQL's interval text
        hours, minutes, seconds = v.seconds // 3600, v.seconds // 60 % 60, v.seconds % 60
        return f"{v.days} days {hours:02}:{minutes:02}:{seconds:02}.{v.microseconds:06}"
    return v


class SqliteSink:
    """A table in an SQLite file (readers in other processes can query it while the job writes). Keys
    match with ``IS``, so a NULL in a key column is a value like any other (SQL puts NULL keys in one
    partition); SQLite's primary key lets NULLs through, so a row with a NULL key is replaced by a
    delete and an insert."""

    def __init__(self, path: str, table: str, key: list[str], upsert: bool):
        self.path, self.table, self.key, self.upsert = path, table, list(key), upsert
        self.columns: list[str] | None = None

    def __repr__(self) -> str:
        return f"SqliteSink({self.path!r}, table={self.table!r})"

    def _connect(self):
        con = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        return con

    def _create(self, con, schema: pa.Schema):
        cols = [f for f in schema if f.name != CHANGE]
        self.columns = [f.name for f in cols]
        body = ", ".join(f"{quote(f.name)} {_sql_type(f.type, postgres=False)}" for f in cols)
        if self.upsert:
            body += f", PRIMARY KEY ({', '.join(quote(k) for k in self.key)})"
        con.execute(f"CREATE TABLE IF NOT EXISTS {quote(self.table)} ({body})")
        _create_batches_sqlite(con)

    def bookkeeping(self) -> Bookkeeping:
        """What the database says of this view (nothing is created)."""
        if not os.path.exists(self.path):
            return Bookkeeping(False, None)
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=60)
        try:  # SQLite's names ignore case: "Prices" and "prices" are one table
            tables = {
                r[0].lower() for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            done = None
            if BATCHES.lower() in tables:
                cols = [r[1] for r in con.execute(f"PRAGMA table_info({quote(BATCHES)})")]
                query = "query_id" if "query_id" in cols else "NULL"
                done = con.execute(
                    f"SELECT batch_id, {query} FROM {quote(BATCHES)} WHERE view = ? COLLATE NOCASE",
                    (self.table,),
                ).fetchone()
            exists = self.table.lower() in tables
            return Bookkeeping(exists, None if done is None else Applied(done[1], done[0]))
        finally:
            con.close()

    def check_columns(self, schema: pa.Schema) -> None:
        """Refuses (SinkDriftError) an existing table that cannot take the view's rows as they are
        (``schema``: the view's columns): a column missing or of another type than the sink creates
        (SQLite would convert the values to it), or an emit-on-update table keyed otherwise (an
        upsert would add a row instead of replacing one). Columns the view does not write may stay."""
        if not os.path.exists(self.path):
            return
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=60)
        try:
            info = con.execute(f"PRAGMA table_info({quote(self.table)})").fetchall()
        finally:
            con.close()
        if not info:
            return
        have = {name.lower(): (kind, pk) for _, name, kind, _, _, pk in info}
        for f in (f for f in schema if f.name != CHANGE):
            found = have.get(f.name.lower())
            problem = _column_problem(self.table, f, found and found[0], _sql_type(f.type, False), False)
            if problem:
                raise SinkDriftError(problem)
        keyed = [n for _, n, _, _, _, pk in sorted(info, key=lambda r: r[5]) if pk]
        if self.upsert and [k.lower() for k in keyed] != [k.lower() for k in self.key]:
            raise SinkDriftError(
                f"table {self.table} is keyed by ({', '.join(keyed) or 'nothing'}), the view by "
                f"({', '.join(self.key)}): an upsert would add a row instead of replacing one"
            )

    def apply(self, rows: pa.Table, batch_id: int, query_id: str) -> int | None:
        """Apply one micro-batch of the query ``query_id``; returns the rows written, or None when the
        batch was applied before. Raises SinkDriftError when another query wrote the table."""
        con = self._connect()
        try:
            self._create(con, rows.schema)
            con.execute("BEGIN IMMEDIATE")
            done = con.execute(
                f"SELECT batch_id, query_id FROM {quote(BATCHES)} WHERE view = ? COLLATE NOCASE",
                (self.table,),
            ).fetchone()
            if done is not None and _already_applied(
                self.table, Applied(done[1], done[0]), batch_id, query_id
            ):
                con.execute("ROLLBACK")
                return None
            records = (net_changes(rows, self.key) if self.upsert else rows).to_pylist()
            cols = self.columns
            names = ", ".join(quote(c) for c in cols)
            marks = ", ".join("?" for _ in cols)
            insert = f"INSERT INTO {quote(self.table)} ({names}) VALUES ({marks})"
            if self.upsert:
                where = " AND ".join(f"{quote(k)} IS ?" for k in self.key)
                delete = f"DELETE FROM {quote(self.table)} WHERE {where}"
                upserts, deletes = changes(records, cols, self.key, _py)
                at = [cols.index(k) for k in self.key]
                null_keyed = [r for r in upserts if any(r[i] is None for i in at)]
                if deletes or null_keyed:
                    con.executemany(delete, deletes + [tuple(r[i] for i in at) for r in null_keyed])
                if null_keyed:
                    con.executemany(insert, null_keyed)
                if len(null_keyed) < len(upserts):
                    con.executemany(
                        f"INSERT OR REPLACE INTO {quote(self.table)} ({names}) VALUES ({marks})",
                        [r for r in upserts if all(r[i] is not None for i in at)],
                    )
            else:
                con.executemany(insert, changes(records, cols, self.key, _py)[0])
            con.execute(
                f"INSERT INTO {quote(BATCHES)} (view, batch_id, query_id) VALUES (?, ?, ?) "
                "ON CONFLICT(view) DO UPDATE SET batch_id = excluded.batch_id, query_id = excluded.query_id",
                (self.table, batch_id, query_id),
            )
            con.execute("COMMIT")
            return len(records)
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        finally:
            con.close()


def _create_batches_sqlite(con) -> None:
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {quote(BATCHES)} "
        "(view TEXT PRIMARY KEY, batch_id INTEGER NOT NULL, query_id TEXT)"
    )
    if "query_id" not in [r[1] for r in con.execute(f"PRAGMA table_info({quote(BATCHES)})")]:
        con.execute(f"ALTER TABLE {quote(BATCHES)} ADD COLUMN query_id TEXT")  # written by 0.x


class ConsoleSink:
    """Prints each micro-batch (no exactly-once: for looking, not keeping)."""

    def __init__(self, limit: int = 20):
        self.limit = limit

    def apply(self, rows: pa.Table, batch_id: int, query_id: str | None = None) -> int:
        print(f"-- batch {batch_id}: {rows.num_rows} rows")
        if rows.num_rows:
            print(rows.slice(0, self.limit).to_pandas().to_string(index=False))
        return rows.num_rows


class PostgresSink:
    """A table in PostgreSQL (15 or later); the connection string comes from the environment, never
    from the view file or the logs. Same exactly-once protocol as SqliteSink, in one transaction per
    batch. Upserted views are keyed by a unique index ``NULLS NOT DISTINCT`` (a primary key would
    refuse NULL keys), and deletes match a NULL key column with ``IS NULL``, so both use the index."""

    def __init__(self, dsn: str, table: str, key: list[str], upsert: bool):
        self._dsn, self.table, self.key, self.upsert = dsn, table, list(key), upsert
        self._created = False  # the tables and index exist (made sure of once per sink, not per batch)

    def __repr__(self) -> str:  # the DSN may hold a password
        return f"PostgresSink(table={self.table!r})"

    def bookkeeping(self) -> Bookkeeping:
        """What the database says of this view (nothing is created)."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self._dsn) as con:
            exists = con.execute(
                "SELECT to_regclass(%s), to_regclass(%s)", (quote(self.table), quote(BATCHES))
            )
            table, batches = exists.fetchone()
            done = None
            if batches is not None:
                query = sql.SQL("query_id" if _has_query_id(con) else "NULL")
                done = con.execute(
                    sql.SQL("SELECT batch_id, {} FROM {} WHERE view = %s").format(
                        query, sql.Identifier(BATCHES)
                    ),
                    (self.table,),
                ).fetchone()
            return Bookkeeping(table is not None, None if done is None else Applied(done[1], done[0]))

    def check_columns(self, schema: pa.Schema) -> None:
        """Refuses (SinkDriftError) an existing table with a column missing or of another type than
        the sink creates (``schema``: the view's columns); PostgreSQL would convert the values
        (3.5 into a bigint column is 4). Columns the view does not write may stay."""
        import psycopg

        with psycopg.connect(self._dsn) as con:
            found = con.execute(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped",
                (quote(self.table),),
            ).fetchall()
        if not found:
            return
        have = dict(found)
        for f in (f for f in schema if f.name != CHANGE):
            problem = _column_problem(self.table, f, have.get(f.name), _sql_type(f.type, True), True)
            if problem:
                raise SinkDriftError(problem)

    def _create(self, con, cur, cols) -> None:
        from psycopg import sql

        if self._created:
            return
        body = sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(f.name), sql.SQL(_sql_type(f.type, postgres=True)))
            for f in cols
        )
        cur.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(sql.Identifier(self.table), body))
        if self.upsert:
            if con.info.server_version < 150000:
                raise RuntimeError(
                    "the PostgreSQL sink keys emit-on-update views by a unique index NULLS NOT DISTINCT, "
                    f"which needs PostgreSQL 15 or later (the server is {con.info.server_version})"
                )
            # one index per table and key; the name fits PostgreSQL's 63 bytes whatever the table's
            digest = hashlib.sha256("\0".join([self.table, *self.key]).encode()).hexdigest()[:20]
            cur.execute(
                sql.SQL("CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} ({}) NULLS NOT DISTINCT").format(
                    sql.Identifier(f"overwindow_key_{digest}"),
                    sql.Identifier(self.table),
                    sql.SQL(", ").join(map(sql.Identifier, self.key)),
                )
            )
        cur.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} "
                "(view text PRIMARY KEY, batch_id bigint NOT NULL, query_id text)"
            ).format(sql.Identifier(BATCHES))
        )
        if not _has_query_id(con):  # bookkeeping of an earlier version
            cur.execute(sql.SQL("ALTER TABLE {} ADD COLUMN query_id text").format(sql.Identifier(BATCHES)))
        con.commit()
        self._created = True

    def apply(self, rows: pa.Table, batch_id: int, query_id: str) -> int | None:
        """Apply one micro-batch of the query ``query_id``; returns the rows written, or None when the
        batch was applied before. Raises SinkDriftError when another query wrote the table."""
        import psycopg
        from psycopg import sql

        cols = [f for f in rows.schema if f.name != CHANGE]
        names = [f.name for f in cols]
        table, batches = sql.Identifier(self.table), sql.Identifier(BATCHES)
        with psycopg.connect(self._dsn) as con, con.cursor() as cur:
            self._create(con, cur, cols)
            cur.execute(
                sql.SQL("SELECT batch_id, query_id FROM {} WHERE view = %s FOR UPDATE").format(batches),
                (self.table,),
            )
            done = cur.fetchone()
            if done is not None and _already_applied(
                self.table, Applied(done[1], done[0]), batch_id, query_id
            ):
                con.rollback()
                return None
            records = (net_changes(rows, self.key) if self.upsert else rows).to_pylist()
            columns = sql.SQL(", ").join(map(sql.Identifier, names))
            marks = sql.SQL(", ").join(sql.Placeholder() * len(names))
            if self.upsert:
                upserts, deletes = changes(records, names, self.key, _pg)
                for nulls, keys in _by_null_columns(deletes).items():
                    where = sql.SQL(" AND ").join(
                        sql.SQL("{} IS NULL" if null else "{} = %s").format(sql.Identifier(k))
                        for k, null in zip(self.key, nulls)
                    )
                    cur.executemany(sql.SQL("DELETE FROM {} WHERE {}").format(table, where), keys)
                others = [c for c in names if c not in self.key]
                update = (
                    sql.SQL(", ").join(
                        sql.SQL("{} = EXCLUDED.{}").format(sql.Identifier(c), sql.Identifier(c))
                        for c in others
                    )
                    if others
                    else None
                )
                conflict = sql.SQL(", ").join(map(sql.Identifier, self.key))
                statement = sql.SQL("INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) ").format(
                    table, columns, marks, conflict
                )
                statement += sql.SQL("DO UPDATE SET {}").format(update) if update else sql.SQL("DO NOTHING")
                if upserts:
                    cur.executemany(statement, upserts)
            else:
                cur.executemany(
                    sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(table, columns, marks),
                    changes(records, names, self.key, _pg)[0],
                )
            cur.execute(
                sql.SQL(
                    "INSERT INTO {} (view, batch_id, query_id) VALUES (%s, %s, %s) ON CONFLICT (view) "
                    "DO UPDATE SET batch_id = EXCLUDED.batch_id, query_id = EXCLUDED.query_id"
                ).format(batches),
                (self.table, batch_id, query_id),
            )
            con.commit()
            return len(records)


def _has_query_id(con) -> bool:
    found = con.execute(
        "SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = 'query_id' "
        "AND table_schema = current_schema()",
        (BATCHES,),
    )
    return found.fetchone() is not None


def _by_null_columns(keys: list[tuple]) -> dict[tuple, list[tuple]]:
    """Key tuples grouped by which of their columns are NULL, each without its NULLs: one statement
    per group can match ``col IS NULL`` / ``col = %s`` and use the key's index.

    >>> _by_null_columns([(1, None), (2, None), (3, 4)])
    {(False, True): [(1,), (2,)], (False, False): [(3, 4)]}
    """
    groups: dict[tuple, list[tuple]] = {}
    for key in keys:
        groups.setdefault(tuple(v is None for v in key), []).append(tuple(v for v in key if v is not None))
    return groups


def _pg(v):
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.replace(tzinfo=None)
    return v
