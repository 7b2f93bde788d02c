"""The PostgreSQL sink against a real server the test starts (Debian's PostgreSQL packages; .ci/run
installs them): exactly-once batches, upserts/deletes, quoted names, bound values, no DSN in repr."""

import glob
import os
import shutil
import socket
import subprocess
import tempfile

import pyarrow as pa
import pytest

from overwindow.pipeline.sinks import PostgresSink


def _bin(name):
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    assert found, f"{name} not found: install Debian's postgresql package (.ci/run does)"
    return found


def _as_server_user(args):
    """initdb and postgres refuse to run as root: run them as the postgres user there."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture(scope="module")
def postgres_dsn():
    data = tempfile.mkdtemp(prefix="ow-pg-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    subprocess.run(_as_server_user([_bin("initdb"), "-D", data, "-A", "trust", "-U", "postgres"]), check=True,
                   capture_output=True)
    opts = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(_as_server_user([_bin("pg_ctl"), "-D", data, "-o", opts, "-l", f"{data}/log", "-w", "start"]),
                   check=True, capture_output=True)
    try:
        yield f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    finally:
        subprocess.run(_as_server_user([_bin("pg_ctl"), "-D", data, "-m", "fast", "stop"]), capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def _rows(dsn, table):
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn) as con:
        return sorted(con.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))).fetchall())


def test_upserts_deletes_and_replays(postgres_dsn):
    sink = PostgresSink(postgres_dsn, "view one", key=["k", "id"], upsert=True)
    b0 = pa.table({"k": ["a", "a", "b"], "id": [1, 2, 1], "s": [1.0, 2.0, float("nan")], "_change": ["upsert"] * 3})
    assert sink.apply(b0, 0) == 3
    assert sink.apply(b0, 0) == 0  # replayed: skipped
    b1 = pa.table({"k": ["a", "b"], "id": [1, 1], "s": [10.0, None], "_change": ["upsert", "delete"]})
    assert sink.apply(b1, 1) == 2
    assert _rows(postgres_dsn, "view one") == [("a", 1, 10.0), ("a", 2, 2.0)]


def test_appends_with_quoted_names_and_bound_values(postgres_dsn):
    evil = 'v"; DROP TABLE x; --'
    sink = PostgresSink(postgres_dsn, evil, key=["id"], upsert=False)
    b = pa.table({"id": [1], "weird col": ["'); DROP TABLE x; --"]})
    assert sink.apply(b, 0) == 1 and sink.apply(b, 0) == 0
    assert _rows(postgres_dsn, evil) == [(1, "'); DROP TABLE x; --")]
    assert "password" not in repr(PostgresSink("host=h password=secret", "t", ["id"], False))
