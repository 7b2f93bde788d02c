"""Changelog sources through Spark: Flink-style ``-U``/``+U`` pairs and Debezium change events (files
and Kafka) whose updates move rows between partitions (and to and from the NULL partition). After
every micro-batch the view in the sink equals the batch evaluator over the table as it stands: the
old partition keeps no stale row (a ``-U`` was skipped where it landed; Debezium envelopes were not
read at all)."""

import contextlib
import json
import os
import sqlite3
import textwrap
import uuid

import numpy as np
import pyarrow as pa
import pytest
from cdc_history import changed_twice, cut, debezium, flink, history
from kafka_support import produce

import overwindow
from overwindow.pipeline.delta import DeltaSink
from overwindow.pipeline.job import start_view
from overwindow.pipeline.progress import bad_records
from overwindow.pipeline.sinks import SqliteSink
from overwindow.pipeline.view import load_view
from overwindow.spark import compat

CALLS = [
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s",
    "row_number() OVER (ORDER BY ts) AS n",
    "lag(x) OVER (ORDER BY ts) AS p",
]
COLUMNS = ("k", "id", "ts", "x")
SINKS = {
    "sqlite": 'kind = "sqlite"\n        path = "view.sqlite"\n        table = "v"',
    "delta": 'kind = "delta"\n        path = "view.delta"',
}


def _apply(table, record):
    """The table after one record (Flink row with op, or Debezium event)."""
    event = record.get("payload", record)
    if "op" in event and event["op"] in ("c", "u", "d", "r"):
        if event["op"] == "d":
            table.pop(event["before"]["id"], None)
        else:
            table[event["after"]["id"]] = {c: event["after"][c] for c in COLUMNS}
    elif record["op"] in ("-U", "-D"):
        table.pop(record["id"], None)
    else:
        table[record["id"]] = {c: record[c] for c in COLUMNS}


def _expected(table):
    if not table:
        return {}
    data = pa.Table.from_pylist(
        sorted(table.values(), key=lambda r: (r["ts"], r["id"])),
        pa.schema([("k", pa.string()), ("id", pa.int64()), ("ts", pa.int64()), ("x", pa.float64())]),
    )
    spec = overwindow.OverWindow(*CALLS, emit="on_update", rowKey="id")
    return {
        (r["k"], r["id"]): (r["s"], r["n"], r["p"])
        for r in overwindow.evaluate(data, *spec.partitioned(("k",))).to_pylist()
    }


def _view(tmp_path, source, op_schema, sink="sqlite", query=None):
    """The view of ``CALLS`` per ``k`` (or of a ``query``) over ``source``, on update, keyed by id."""
    path = tmp_path / "view.toml"
    calls = f'partition_by = ["k"]\n        calls = {json.dumps(CALLS)}'  # as indented as the rest
    windows = f"query = {json.dumps(query)}" if query else calls
    path.write_text(
        textwrap.dedent(f"""
        [source]
        {source}
        schema = "k STRING, id BIGINT, ts BIGINT, x DOUBLE{op_schema}"

        [view]
        {windows}
        emit = "on_update"
        row_key = ["id"]
        {"op_column = 'op'" if op_schema else ""}

        [sink]
        {SINKS[sink]}
        checkpoint = "chk"
    """)
    )
    return load_view(str(path))


def _sqlite_rows(sink) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(sink.path)) as con:
        return con.execute('SELECT k, id, s, n, p FROM "v"').fetchall()


def _delta_rows(sink) -> list[tuple]:
    """The table as deltalake's own reader reads it (keyed by the row key alone)."""
    import deltalake

    t = deltalake.DeltaTable(sink.path).to_pyarrow_table()
    return list(zip(*(t.column(c).to_pylist() for c in ("k", "id", "s", "n", "p"))))


def _run_and_check(spark, tmp_path, monkeypatch, view, batches):
    """Runs the view over ``batches`` (lists of records, one micro-batch each) and checks the sink's
    table after every micro-batch against the batch evaluator over the table as it stands."""
    seen = {}
    kind = DeltaSink if view.sink["kind"] == "delta" else SqliteSink
    apply, read = kind.apply, _delta_rows if kind is DeltaSink else _sqlite_rows

    def apply_and_look(self, rows, batch_id, query_id):
        done = apply(self, rows, batch_id, query_id)
        got = read(self)
        seen[batch_id] = {(k, i): (s, n, p) for k, i, s, n, p in got}
        assert len(seen[batch_id]) == len(got), "a row twice"
        return done

    monkeypatch.setattr(kind, "apply", apply_and_look)
    query, _ = start_view(spark, view, once=True, quiet=True)
    query.awaitTermination()
    assert query.exception() is None
    assert sum(bad_records(p) for p in query.recentProgress) == 0
    assert sorted(seen) == list(range(len(batches)))
    table = {}
    for batch_id, batch in enumerate(batches):
        for record in batch:
            _apply(table, record)
        want, got = _expected(table), seen[batch_id]
        assert set(got) == set(want), f"after micro-batch {batch_id}"
        for key, (s, n, p) in want.items():
            assert got[key] == (pytest.approx(s), n, p), f"after micro-batch {batch_id}, row {key}"


def _write_files(tmp_path, batches):
    (tmp_path / "events").mkdir()
    for n, batch in enumerate(batches):
        path = tmp_path / "events" / f"{n:03d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in batch))
        os.utime(path, (1_000 + n, 1_000 + n))


@pytest.mark.parametrize("seed", [11, 12])
def test_flink_changelog_moves_rows_between_partitions(spark, tmp_path, monkeypatch, seed):
    """-U (the old image) deletes the row where it lands; +U inserts it in its new partition; a pair
    may be split across micro-batches."""
    rng = np.random.default_rng(seed)
    batches = cut(flink(history(seed)), rng, 6)
    assert changed_twice(batches)  # some ids change more than once in one micro-batch
    _write_files(tmp_path, batches)
    source = 'format = "files"\npath = "events"\nmax_files_per_trigger = 1'
    _run_and_check(spark, tmp_path, monkeypatch, _view(tmp_path, source, ", op STRING"), batches)


@pytest.mark.parametrize("sink", ["sqlite", "delta"])
def test_debezium_files_move_rows_between_partitions(spark, tmp_path, monkeypatch, sink):
    """Into SQLite (keyed by partition and row key) and into Delta Lake (keyed by the row key alone:
    a move's upsert and delete in one micro-batch are netted to the upsert, issue 41); ids move into a
    partition and out again (or are deleted) within one micro-batch."""
    rng = np.random.default_rng(21)
    batches = cut(debezium(history(21), rng), rng, 6)
    assert changed_twice(batches)  # some ids change more than once in one micro-batch
    _write_files(tmp_path, batches)
    source = 'format = "files"\npath = "events"\nmax_files_per_trigger = 1\nenvelope = "debezium"'
    _run_and_check(spark, tmp_path, monkeypatch, _view(tmp_path, source, "", sink), batches)


def test_one_micro_batch_of_several_change_files_applies_them_in_source_order(spark, tmp_path, monkeypatch):
    """Four change files in one micro-batch (admission by bytes), later files larger: Spark packs
    small files into a partition largest first and hands a key's rows from several partitions to
    its group in no set order; the rows carry where they stand in the source (file, part, position)
    and each id's changes, inserted, updated, moved between partitions and deleted across the files,
    apply in that order: the table equals the batch evaluator over the rows the changes leave. A
    query view, whose ``*`` leaves out the op column and the source's order columns."""
    records = flink(history(51, changes=120))
    cuts = [0, len(records) // 10, len(records) * 3 // 10, len(records) * 6 // 10, len(records)]
    files = [records[a:b] for a, b in zip(cuts, cuts[1:])]
    # the data holds what the order decides: ids changed in several files, and twice in one
    spread = {}
    for n, batch in enumerate(files):
        for r in batch:
            spread.setdefault(r["id"], set()).add(n)
    assert sum(len(f) > 1 for f in spread.values()) >= 10 and changed_twice(files)
    _write_files(tmp_path, files)
    windows = ", ".join(c.replace("OVER (", "OVER (PARTITION BY k ") for c in CALLS)
    query = f"SELECT *, {windows} FROM source"
    view = _view(tmp_path, 'format = "files"\npath = "events"', ", op STRING", query=query)
    _run_and_check(spark, tmp_path, monkeypatch, view, [records])


def test_debezium_kafka_moves_rows_between_partitions(spark, tmp_path, monkeypatch, kafka_bootstrap):
    """Through the Kafka source, with tombstones (no value) after deletes, as Debezium writes them."""
    rng = np.random.default_rng(31)
    events = debezium(history(31), rng)
    records = []
    for event in events:
        records.append((b"k", json.dumps(event).encode()))
        if event.get("payload", event)["op"] == "d":
            records.append((b"k", None))
    topic = f"cdc-{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, records)
    per_batch = 25
    batches = [
        [json.loads(v) for _, v in records[i : i + per_batch] if v is not None]
        for i in range(0, len(records), per_batch)
    ]
    source = (
        f'format = "kafka"\nbootstrap_servers = "{kafka_bootstrap}"\ntopic = "{topic}"\n'
        f'starting_offsets = "earliest"\nmax_offsets_per_trigger = {per_batch}\nenvelope = "debezium"'
    )
    _run_and_check(spark, tmp_path, monkeypatch, _view(tmp_path, source, ""), batches)


# -- the CDC page's Debezium view through the command line (issue 40, items 2 and 3) -----------------


def docs_view(marker: str) -> str:
    """The first TOML block of docs/cdc.md after the line holding ``marker``."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "cdc.md")) as f:
        text = f.read()
    after = text[text.index(marker) :]
    return after.split("```toml\n", 1)[1].split("```", 1)[0]


def _accounts(seed, rng, changes=60):
    """Debezium events of ``history``'s random changes, in the CDC page's columns (account, id, ts,
    amount): updates move rows between accounts (and to NULL) and in time."""
    rename = {"k": "account", "x": "amount"}
    events = []
    for record in debezium(history(seed, changes), rng):
        event = record.get("payload", record)
        for image in ("before", "after"):
            if event[image] is not None:
                event[image] = {rename.get(c, c): v for c, v in event[image].items()}
        events.append(record)
    return events


def _balances(table):
    """the CDC page's view over the live rows ``table`` (id -> row), by the batch evaluator."""
    if not table:
        return {}
    data = pa.Table.from_pylist(
        sorted(table.values(), key=lambda r: (r["ts"], r["id"])),
        pa.schema(
            [("account", pa.string()), ("id", pa.int64()), ("ts", pa.int64()), ("amount", pa.float64())]
        ),
    )
    calls = [
        "sum(amount) OVER (ORDER BY ts ROWS UNBOUNDED PRECEDING) AS balance",
        "row_number() OVER (ORDER BY ts) AS nth",
    ]
    spec = overwindow.OverWindow(*calls, emit="on_update", rowKey="id")
    return {
        r["id"]: (r["account"], r["ts"], r["amount"], r["balance"], r["nth"])
        for r in overwindow.evaluate(data, *spec.partitioned(("account",))).to_pylist()
    }


def test_the_docs_debezium_view_runs_through_the_command_line(spark, tmp_path, capsys):
    """the CDC page's example, as written there, validates and runs with ``overwindow run --once``, one
    run per file of Debezium events; after each the table equals the batch evaluator over the rows
    the events leave."""
    from overwindow.__main__ import main

    view = tmp_path / "view.toml"
    view.write_text(docs_view("A view of Debezium events"))
    (tmp_path / "changes").mkdir()
    assert main(["validate", str(view)]) == 0, capsys.readouterr().err
    rng = np.random.default_rng(41)
    events = _accounts(41, rng)
    live = {}
    for n, batch in enumerate(cut(events, rng, 2)):
        path = tmp_path / "changes" / f"{n}.json"
        path.write_text("".join(json.dumps(e) + "\n" for e in batch))
        os.utime(path, (1_000 + n, 1_000 + n))
        assert main(["run", str(view), "--once", "--quiet"]) == 0, capsys.readouterr().err
        for event in batch:
            e = event.get("payload", event)
            if e["op"] == "d":
                live.pop(e["before"]["id"], None)
            else:
                live[e["after"]["id"]] = e["after"]
        with sqlite3.connect(tmp_path / "accounts.sqlite") as con:
            got = {
                r[0]: r[1:]
                for r in con.execute('SELECT id, account, ts, amount, balance, nth FROM "balances"')
            }
        want = _balances(live)
        assert set(got) == set(want), f"after file {n}"
        for i, (account, ts, amount, balance, nth) in want.items():
            assert got[i] == (account, ts, amount, pytest.approx(balance), nth), f"after file {n}, id {i}"


def test_debezium_events_that_cannot_be_applied_exactly_are_kept_aside(spark, tmp_path, capsys):
    """Issue 40, item 3, through ``overwindow run`` on the CDC page's view: an update that changes the row
    key deletes the old row and inserts the new one (it left the old row); a delete whose before image
    lacks the partition key, and a create whose after image lacks columns (which became a row of
    NULLs), are bad records with their reasons; a delete whose before image names another partition
    than the row's is set aside (it deleted nothing, silently). All are counted and dead-lettered;
    the table equals the batch evaluator over the rows the good events leave."""
    from overwindow.__main__ import main
    from overwindow.streaming.changes import NOT_HELD

    view = tmp_path / "view.toml"
    view.write_text(docs_view("A view of Debezium events"))
    (tmp_path / "changes").mkdir()

    def row(account, i, ts, amount):
        return {"account": account, "id": i, "ts": ts, "amount": amount}

    files = [
        [
            {"before": None, "after": row("a", 1, 1, 10.0), "op": "c"},
            {"before": None, "after": row("a", 2, 2, 5.0), "op": "c"},
            {"payload": {"before": None, "after": row("b", 3, 1, 7.0), "op": "r"}},
        ],
        [
            {"before": row("a", 1, 1, 10.0), "after": row("a", 11, 1, 10.0), "op": "u"},  # a new row key
            {"before": {"id": 2}, "after": None, "op": "d"},  # no partition key: bad
            {"before": row("b", 2, 2, 5.0), "after": None, "op": "d"},  # row 2 is in a: set aside
            {"before": None, "after": {"account": "a"}, "op": "c"},  # no id, ts, amount: bad
            {"before": None, "after": row("a", 4, 3, 1.0), "op": "c"},
        ],
    ]
    for n, events in enumerate(files):
        path = tmp_path / "changes" / f"{n}.json"
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
        os.utime(path, (1_000 + n, 1_000 + n))
    args = [
        "--set",
        "source.dead_letter=bad",
        "--set",
        "source.max_files_per_trigger=1",
        "--progress",
        "json",
    ]
    assert main(["run", str(view), "--once", *args]) == 0, capsys.readouterr().err
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert sum(r["bad"] for r in records) == 2 and sum(r["set_aside"] for r in records) == 1
    kept = [
        json.loads(x) for f in sorted((tmp_path / "bad").glob("*.jsonl")) for x in f.read_text().splitlines()
    ]
    assert sorted(r["reason"] for r in kept) == sorted(
        [
            "Debezium op 'd': the before image has no account, which find the row",
            "Debezium op 'c': the after image has no id, ts, amount",
            NOT_HELD,
        ]
    )
    live = {1: row("a", 11, 1, 10.0), 2: row("a", 2, 2, 5.0), 3: row("b", 3, 1, 7.0), 4: row("a", 4, 3, 1.0)}
    want = _balances({r["id"]: r for r in live.values()})
    with sqlite3.connect(tmp_path / "accounts.sqlite") as con:
        got = {
            r[0]: r[1:] for r in con.execute('SELECT id, account, ts, amount, balance, nth FROM "balances"')
        }
    assert got == want


GROUPED = (
    "SELECT k, sum(x) AS total, count(*) AS n, rank() OVER (ORDER BY count(*) DESC, k) AS r "
    "FROM source GROUP BY k"
)


@pytest.mark.skipif(compat.version() < compat.SPARK_4, reason="a GROUP BY's windows need PySpark 4")
def test_debezium_changes_under_a_group_by_equal_spark_batch_after_every_micro_batch(
    spark, tmp_path, monkeypatch
):
    """Issue 39: a CDC source under a GROUP BY. Updates move rows between groups (NULL included),
    some come without a before image, deletes empty groups; after every micro-batch the table (keyed
    by the GROUP BY key) equals Spark's batch SQL of the query over the rows live at that point."""
    rng = np.random.default_rng(31)
    batches = cut(debezium(history(31), rng), rng, 5)
    _write_files(tmp_path, batches)
    (tmp_path / "view.toml").write_text(
        textwrap.dedent(f"""
        [source]
        format = "files"
        path = "events"
        max_files_per_trigger = 1
        envelope = "debezium"
        schema = "k STRING, id BIGINT, ts BIGINT, x DOUBLE"

        [view]
        query = {json.dumps(GROUPED)}
        emit = "on_update"
        row_key = ["id"]

        [sink]
        {SINKS["sqlite"]}
        checkpoint = "chk"
    """)
    )
    view = load_view(str(tmp_path / "view.toml"))
    seen = {}
    apply = SqliteSink.apply

    def apply_and_look(self, rows, batch_id, query_id):
        done = apply(self, rows, batch_id, query_id)
        with contextlib.closing(sqlite3.connect(self.path)) as con:
            seen[batch_id] = sorted(con.execute('SELECT k, total, n, r FROM "v"').fetchall(), key=str)
        return done

    monkeypatch.setattr(SqliteSink, "apply", apply_and_look)
    key = "spark.sql.streaming.stateStore.providerClass"
    before = spark.conf.get(key, None)
    try:
        query, _ = start_view(spark, view, once=True, quiet=True)
        query.awaitTermination()
    finally:
        spark.conf.unset(key) if before is None else spark.conf.set(key, before)
    assert query.exception() is None
    assert sum(bad_records(p) for p in query.recentProgress) == 0
    assert sorted(seen) == list(range(len(batches)))
    table: dict = {}
    schema = "k STRING, id BIGINT, ts BIGINT, x DOUBLE"
    for batch_id, batch in enumerate(batches):
        for record in batch:
            _apply(table, record)
        spark.createDataFrame(
            [tuple(r[c] for c in COLUMNS) for r in table.values()], schema
        ).createOrReplaceTempView("ow_cdc_grouped")
        want = spark.sql(GROUPED.replace("source", "ow_cdc_grouped")).collect()
        want = sorted((tuple(r) for r in want), key=str)
        assert len(seen[batch_id]) == len(want), f"after micro-batch {batch_id}"
        for got, w in zip(seen[batch_id], want):
            total = w[1] if w[1] is None else pytest.approx(w[1])
            assert got == (w[0], total, w[2], w[3]), f"after micro-batch {batch_id}"
