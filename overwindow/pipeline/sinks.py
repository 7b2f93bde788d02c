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
import sqlite3

import pyarrow as pa

CHANGE = "_change"
BATCHES = "_overwindow_batches"


def quote(name: str) -> str:
    """An SQL identifier, quoted: embedded quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def _sqlite_type(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return "INTEGER"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "REAL"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "BLOB"
    return "TEXT"


def _py(v):
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat(sep=" ") if isinstance(v, dt.datetime) else v.isoformat()
    if isinstance(v, float) and v != v:
        return None  # NaN as NULL: SQLite has no NaN
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
        body = ", ".join(f"{quote(f.name)} {_sqlite_type(f.type)}" for f in cols)
        if self.upsert:
            body += f", PRIMARY KEY ({', '.join(quote(k) for k in self.key)})"
        con.execute(f"CREATE TABLE IF NOT EXISTS {quote(self.table)} ({body})")
        con.execute(f"CREATE TABLE IF NOT EXISTS {quote(BATCHES)} (view TEXT PRIMARY KEY, batch_id INTEGER NOT NULL)")

    def apply(self, rows: pa.Table, batch_id: int) -> int:
        """Apply one micro-batch; returns the rows written (0 when the batch was applied before)."""
        con = self._connect()
        try:
            self._create(con, rows.schema)
            con.execute("BEGIN IMMEDIATE")
            done = con.execute(f"SELECT batch_id FROM {quote(BATCHES)} WHERE view = ?", (self.table,)).fetchone()
            if done is not None and batch_id <= done[0]:
                con.execute("ROLLBACK")
                return 0
            records = rows.to_pylist()
            cols = self.columns
            names = ", ".join(quote(c) for c in cols)
            marks = ", ".join("?" for _ in cols)
            if self.upsert:
                where = " AND ".join(f"{quote(k)} = ?" for k in self.key)
                deletes = [tuple(_py(r[k]) for k in self.key) for r in records if r.get(CHANGE) == "delete"]
                upserts = [tuple(_py(r[c]) for c in cols) for r in records if r.get(CHANGE) != "delete"]
                if deletes:
                    con.executemany(f"DELETE FROM {quote(self.table)} WHERE {where}", deletes)
                if upserts:
                    con.executemany(f"INSERT OR REPLACE INTO {quote(self.table)} ({names}) VALUES ({marks})", upserts)
            else:
                con.executemany(f"INSERT INTO {quote(self.table)} ({names}) VALUES ({marks})",
                                [tuple(_py(r[c]) for c in cols) for r in records])
            con.execute(f"INSERT INTO {quote(BATCHES)} (view, batch_id) VALUES (?, ?) "
                        "ON CONFLICT(view) DO UPDATE SET batch_id = excluded.batch_id", (self.table, batch_id))
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
