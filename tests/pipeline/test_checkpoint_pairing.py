"""A view's table and its checkpoint stay paired (SQLite, and the PostgreSQL server the tests start):
a new checkpoint over an old table, a lost table or bookkeeping under a checkpoint that committed
batches, and a table ahead of or behind its checkpoint are refused before the query starts (they lost
or doubled rows silently, exit 0); a replayed batch the sink had applied is reported as skipped."""

import json
import os
import shutil
import sqlite3
import textwrap

import pytest

from overwindow.pipeline.job import start_view
from overwindow.pipeline.sinks import PostgresSink, SinkDriftError, SqliteSink
from overwindow.pipeline.view import load_view


def _sql(view, statement, dsn):
    if view.sink["kind"] == "sqlite":
        con = sqlite3.connect(view.sink["path"])
        try:
            found = con.execute(statement).fetchall()
            con.commit()
            return found
        finally:
            con.close()
    import psycopg

    with psycopg.connect(dsn) as con:
        cur = con.execute(statement)
        return cur.fetchall() if cur.description else []


def _view(tmp_path, kind, table, checkpoint="chk"):
    path = tmp_path / "view.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "files"
        path = "events"
        schema = "k STRING, id BIGINT, t BIGINT, x DOUBLE"
        max_files_per_trigger = 1

        [view]
        partition_by = ["k"]
        calls = ["sum(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s"]
        emit = "on_update"
        row_key = ["id"]

        [sink]
        kind = "{kind}"
        path = "view.sqlite"
        table = "{table}"
        checkpoint = "{checkpoint}"
    """)
    )
    return load_view(str(path))


def _run(spark, view, quiet=True):
    query, printer = start_view(spark, view, once=True, quiet=quiet)
    query.awaitTermination()
    if printer is not None:
        printer.poll(query)
    assert query.exception() is None
    return query


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_checkpoint_and_table_drifting_apart_are_refused(spark, tmp_path, monkeypatch, capsys, kind, request):
    dsn = None
    if kind == "postgres":
        dsn = request.getfixturevalue("postgres_dsn")
        monkeypatch.setenv("OVERWINDOW_POSTGRES_DSN", dsn)
    table = f"pairing_{kind}"
    (tmp_path / "events").mkdir()
    for f in range(3):
        rows = [{"k": "ab"[i % 2], "id": f * 10 + i, "t": f * 10 + i, "x": float(i)} for i in range(10)]
        (tmp_path / "events" / f"f{f}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(tmp_path / "events" / f"f{f}.json", (1_000 + f, 1_000 + f))
    view = _view(tmp_path, kind, table)
    sink_class = {"sqlite": SqliteSink, "postgres": PostgresSink}[kind]
    apply = sink_class.apply

    def apply_and_copy(self, rows, batch_id, query_id):
        shutil.copytree(view.checkpoint, tmp_path / f"chk-before-{batch_id}")  # planned, not committed
        return apply(self, rows, batch_id, query_id)

    monkeypatch.setattr(sink_class, "apply", apply_and_copy)
    _run(spark, view)
    monkeypatch.undo()
    if kind == "postgres":
        monkeypatch.setenv("OVERWINDOW_POSTGRES_DSN", dsn)
    assert _sql(view, f'SELECT count(*) FROM "{table}"', dsn) == [(30,)]

    # docs/sinks.md's "start from a new checkpoint", keeping the table: batches 0..2 would be skipped
    with pytest.raises(SinkDriftError, match=f"table {table} holds batches 0..2 of another query"):
        start_view(spark, _view(tmp_path, kind, table, checkpoint="chk-new"), once=True, quiet=True)
    # an older copy of the checkpoint: the table has applied batches it does not know
    shutil.copytree(tmp_path / "chk-before-0", tmp_path / "chk-old")
    with pytest.raises(SinkDriftError, match="past the checkpoint's last batch 0"):
        start_view(spark, _view(tmp_path, kind, table, checkpoint="chk-old"), once=True, quiet=True)
    # an older copy of the database: its bookkeeping is behind the checkpoint
    _sql(view, f"UPDATE \"_overwindow_batches\" SET batch_id = 0 WHERE view = '{table}'", dsn)
    with pytest.raises(SinkDriftError, match="applied batches up to 0 only"):
        start_view(spark, view, once=True, quiet=True)
    _sql(view, f"UPDATE \"_overwindow_batches\" SET batch_id = 2 WHERE view = '{table}'", dsn)

    # a batch planned and applied, killed before Spark committed it: replayed, and said to be skipped
    shutil.rmtree(view.checkpoint)
    shutil.copytree(tmp_path / "chk-before-2", view.checkpoint)
    capsys.readouterr()
    _run(spark, view, quiet=False)
    assert "batch 2: 10 rows in, skipped: already applied" in capsys.readouterr().out
    assert _sql(view, f'SELECT count(*) FROM "{table}"', dsn) == [(30,)]

    # the database (or the table) lost, the checkpoint kept: its batches' rows would never come back
    _sql(view, f'DROP TABLE "{table}"', dsn)
    with pytest.raises(
        SinkDriftError, match=f"batches 0..2 were applied but the table of {table} is missing"
    ):
        start_view(spark, view, once=True, quiet=True)
    _sql(view, f"DELETE FROM \"_overwindow_batches\" WHERE view = '{table}'", dsn)
    with pytest.raises(SinkDriftError, match="is missing"):
        start_view(spark, view, once=True, quiet=True)
