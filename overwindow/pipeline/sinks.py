"""Sinks that apply each micro-batch exactly once.

Emit-on-update views are applied as upserts and deletes keyed by (partition key, row key); emit-on-
window-close views append. A micro-batch's rows and its batch id commit in one transaction, and a
batch id already applied is skipped, so a replayed batch changes nothing. Table and column names are
always quoted identifiers and values always bound parameters.

>>> import pyarrow as pa, tempfile, os
>>> db = os.path.join(tempfile.mkdtemp(), "v.sqlite")
>>> s = SqliteSink(db, "v", key=["k", "id"], upsert=True)
>>> t = pa.table({"k": [1], "id": [7], "s": [2.5], "_change": ["upsert"]})
>>> s.apply(t, 0), s.apply(t, 0)
(1, 0)
"""

from __future__ import annotations

import datetime as dt
import decimal
import sqlite3

import pyarrow as pa

from overwindow.physical.values import TypeFamily, kind_of
from overwindow.streaming.contract import CHANGE

BATCHES = "_overwindow_batches"


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
}


def _sql_type(t: pa.DataType, postgres: bool) -> str:
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytea" if postgres else "BLOB"
    if pa.types.is_decimal(t):  # every digit: a REAL holds 15, SQLite keeps longer ones as text
        return (
            f"numeric({t.precision}, {t.scale})" if postgres else "NUMERIC" if t.precision <= 15 else "TEXT"
        )
    return _SQL_TYPES.get(kind_of(t), ("TEXT", "text"))[postgres]


def _py(v):
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat(sep=" ") if isinstance(v, dt.datetime) else v.isoformat()
    if isinstance(v, float) and v != v:
        return None  # NaN as NULL: SQLite has no NaN
    if isinstance(v, decimal.Decimal):
        return str(v)  # sqlite3 binds no Decimal; NUMERIC affinity turns the text into a number
    return v


class SqliteSink:
    """A table in an SQLite file (readers in other processes can query it while the job writes)."""

    def __init__(self, path: str, table: str, key: list[str], upsert: bool):
        self.path, self.table, self.key, self.upsert = path, table, list(key), upsert
        self.columns: list[str] | None = None

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
        con.execute(
            f"CREATE TABLE IF NOT EXISTS {quote(BATCHES)} (view TEXT PRIMARY KEY, batch_id INTEGER NOT NULL)"
        )

    def apply(self, rows: pa.Table, batch_id: int) -> int:
        """Apply one micro-batch; returns the rows written (0 when the batch was applied before)."""
        con = self._connect()
        try:
            self._create(con, rows.schema)
            con.execute("BEGIN IMMEDIATE")
            done = con.execute(
                f"SELECT batch_id FROM {quote(BATCHES)} WHERE view = ?", (self.table,)
            ).fetchone()
            if done is not None and batch_id <= done[0]:
                con.execute("ROLLBACK")
                return 0
            records = rows.to_pylist()
            cols = self.columns
            names = ", ".join(quote(c) for c in cols)
            marks = ", ".join("?" for _ in cols)
            if self.upsert:
                where = " AND ".join(f"{quote(k)} = ?" for k in self.key)
                upserts, deletes = changes(records, cols, self.key, _py)
                if deletes:
                    con.executemany(f"DELETE FROM {quote(self.table)} WHERE {where}", deletes)
                if upserts:
                    con.executemany(
                        f"INSERT OR REPLACE INTO {quote(self.table)} ({names}) VALUES ({marks})", upserts
                    )
            else:
                con.executemany(
                    f"INSERT INTO {quote(self.table)} ({names}) VALUES ({marks})",
                    changes(records, cols, self.key, _py)[0],
                )
            con.execute(
                f"INSERT INTO {quote(BATCHES)} (view, batch_id) VALUES (?, ?) "
                "ON CONFLICT(view) DO UPDATE SET batch_id = excluded.batch_id",
                (self.table, batch_id),
            )
            con.execute("COMMIT")
            return len(records)
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        finally:
            con.close()


class ConsoleSink:
    """Prints each micro-batch (no exactly-once: for looking, not keeping)."""

    def __init__(self, limit: int = 20):
        self.limit = limit

    def apply(self, rows: pa.Table, batch_id: int) -> int:
        print(f"-- batch {batch_id}: {rows.num_rows} rows")
        if rows.num_rows:
            print(rows.slice(0, self.limit).to_pandas().to_string(index=False))
        return rows.num_rows


class PostgresSink:
    """A table in PostgreSQL; the connection string comes from the environment, never from the view
    file or the logs. Same exactly-once protocol as SqliteSink, in one transaction per batch."""

    def __init__(self, dsn: str, table: str, key: list[str], upsert: bool):
        self._dsn, self.table, self.key, self.upsert = dsn, table, list(key), upsert

    def __repr__(self) -> str:  # the DSN may hold a password
        return f"PostgresSink(table={self.table!r})"

    def apply(self, rows: pa.Table, batch_id: int) -> int:
        import psycopg
        from psycopg import sql

        cols = [f for f in rows.schema if f.name != CHANGE]
        names = [f.name for f in cols]
        table, batches = sql.Identifier(self.table), sql.Identifier(BATCHES)
        with psycopg.connect(self._dsn) as con, con.cursor() as cur:
            body = sql.SQL(", ").join(
                sql.SQL("{} {}").format(sql.Identifier(f.name), sql.SQL(_sql_type(f.type, postgres=True)))
                for f in cols
            )
            if self.upsert:
                body = sql.SQL("{}, PRIMARY KEY ({})").format(
                    body, sql.SQL(", ").join(map(sql.Identifier, self.key))
                )
            cur.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(table, body))
            cur.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (view text PRIMARY KEY, batch_id bigint NOT NULL)"
                ).format(batches)
            )
            con.commit()
            cur.execute(
                sql.SQL("SELECT batch_id FROM {} WHERE view = %s FOR UPDATE").format(batches), (self.table,)
            )
            done = cur.fetchone()
            if done is not None and batch_id <= done[0]:
                con.rollback()
                return 0
            records = rows.to_pylist()
            columns = sql.SQL(", ").join(map(sql.Identifier, names))
            marks = sql.SQL(", ").join(sql.Placeholder() * len(names))
            if self.upsert:
                where = sql.SQL(" AND ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in self.key)
                upserts, deletes = changes(records, names, self.key, _pg)
                if deletes:
                    cur.executemany(sql.SQL("DELETE FROM {} WHERE {}").format(table, where), deletes)
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
                    "INSERT INTO {} (view, batch_id) VALUES (%s, %s) ON CONFLICT (view) "
                    "DO UPDATE SET batch_id = EXCLUDED.batch_id"
                ).format(batches),
                (self.table, batch_id),
            )
            con.commit()
            return len(records)


def _pg(v):
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.replace(tzinfo=None)
    return v
