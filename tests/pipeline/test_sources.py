"""File sources lose nothing without a word: malformed and wrong-typed records, records over the JSON
parser's limit and rows with a NULL event time are counted and kept in the dead-letter folder while
the rest of the micro-batch goes on; a CSV header in another order stops the query instead of
swapping columns; a file deleted before Spark read it is reported; micro-batches are bounded by
default. The view in the sink is checked against the batch evaluator over the good rows."""

import json
import os
import sqlite3
import textwrap

import numpy as np
import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException

import overwindow
from overwindow.pipeline import sources
from overwindow.pipeline.job import start_view
from overwindow.pipeline.progress import bad_records, null_event_times
from overwindow.pipeline.view import load_view

CALLS = [
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
    "count(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 30 SECONDS PRECEDING AND CURRENT ROW) AS c",
]


def _view(tmp_path, file_format="json", extra="", calls=CALLS):
    path = tmp_path / "view.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "files"
        path = "events"
        file_format = "{file_format}"
        schema = "k STRING, id BIGINT, ts TIMESTAMP, x DOUBLE"
        dead_letter = "bad"
        {extra}

        [watermark]
        column = "ts"
        delay = "1 hour"

        [view]
        partition_by = ["k"]
        calls = {json.dumps(calls)}
        emit = "on_update"
        row_key = ["id"]

        [sink]
        kind = "sqlite"
        path = "view.sqlite"
        table = "v"
        checkpoint = "chk"
    """)
    )
    (tmp_path / "events").mkdir(exist_ok=True)
    return load_view(str(path))


def _good_rows(n, seed, first_id=0):
    rng = np.random.default_rng(seed)
    return [
        {
            "k": str(rng.choice(["a", "b", "c"])),
            "id": first_id + i,
            "ts": f"2024-01-01T00:{int(rng.integers(0, 60)):02d}:{int(rng.integers(0, 60)):02d}",
            "x": None if rng.random() < 0.1 else float(rng.integers(-9, 9)),
        }
        for i in range(n)
    ]


def _run(spark, view):
    query, _ = start_view(spark, view, once=True, quiet=True)
    query.awaitTermination()
    return query


def _assert_view_is(tmp_path, rows, calls=CALLS):
    """The sink's table equals the batch evaluator over ``rows`` (the good ones)."""
    table = pa.Table.from_pylist(rows)
    table = table.set_column(2, "ts", pa.compute.strptime(table["ts"], "%Y-%m-%dT%H:%M:%S", "us"))
    spec = overwindow.OverWindow(*calls, emit="on_update", rowKey="id")
    want = {
        r["id"]: (r["s"], r["c"]) for r in overwindow.evaluate(table, *spec.partitioned(("k",))).to_pylist()
    }
    con = sqlite3.connect(tmp_path / "view.sqlite")
    got = {i: (s, c) for i, s, c in con.execute('SELECT id, s, c FROM "v"')}
    con.close()
    assert set(got) == set(want)
    for i, (s, c) in want.items():
        assert got[i] == (pytest.approx(s), c)


def _dead_letters(tmp_path):
    found = []
    for name in sorted(os.listdir(tmp_path / "bad")):
        assert name.startswith("batch-") and name.endswith(".jsonl")
        found += [json.loads(line) for line in (tmp_path / "bad" / name).read_text().splitlines()]
    return found


def test_bad_json_records_are_counted_and_kept_aside(spark, tmp_path):
    view = _view(tmp_path)
    good = _good_rows(80, seed=1)
    too_long = json.dumps({"k": "a" * 21_000_000, "id": 901, "ts": "2024-01-01T00:00:01", "x": 1.0})
    bad = {
        "not json": "not a JSON record",
        '{"k": "a", "id": 902, "ts": "2024-01-01T00:00:05", "x": "abc"}': "wrong type: x (DOUBLE)",
        '{"k": "a", "id": 903, "ts": "yesterday", "x": 1}': "wrong type: ts (TIMESTAMP)",
        '{"other": 1}': "no column of the schema",
        '{"k": "b", "id": 904, "ts": null, "x": 2}': "NULL event time (ts)",
        '{"k": "b", "id": 905, "x": 2}': "NULL event time (ts)",
        too_long: "a value longer than the JSON parser's limit of 20,000,000 characters",
    }
    lines = [json.dumps(r) for r in good[:40]] + list(bad) + [""]
    lines.append(json.dumps(good[40:42]))  # a JSON array counts as its records (as Spark's reader reads it)
    lines += [json.dumps(r) for r in good[42:]] + ["   "]
    # issue 40, item 9: bytes that are no UTF-8 in a key (Spark reads U+FFFD: another key)
    not_utf8 = b'{"k": "a\xff", "id": 906, "ts": "2024-01-01T00:00:06", "x": 1.0}'
    bad[not_utf8.decode("utf-8", errors="replace")] = sources.NOT_UTF8
    (tmp_path / "events" / "f0.json").write_bytes(("\n".join(lines) + "\n").encode() + not_utf8 + b"\n")
    query = _run(spark, view)
    assert query.exception() is None
    assert sum(bad_records(p) for p in query.recentProgress) == len(bad)
    assert sum(null_event_times(p) for p in query.recentProgress) == 2
    # not late: Spark's watermark never saw them (the progress line's late count stays 0)
    assert sum(op.numRowsDroppedByWatermark for p in query.recentProgress for op in p.stateOperators) == 0
    _assert_view_is(tmp_path, good)
    kept = _dead_letters(tmp_path)
    assert sorted((r["record"], r["reason"]) for r in kept) == sorted(bad.items())
    assert all(r["origin"].endswith("/events/f0.json") and r["batch"] == 0 for r in kept)


def test_rows_an_expression_fails_on_are_set_aside_into_the_dead_letter(spark, tmp_path, capsys):
    """A zero divisor fails Spark's batch query (ANSI); on the stream the row is left out of the
    view, counted on the progress line and kept in the dead letter with the reason, and the rest of
    the micro-batch goes on."""
    calls = [CALLS[0].replace("sum(x)", "sum(12 / x)"), CALLS[1]]
    view = _view(tmp_path, calls=calls)
    rows = _good_rows(60, seed=3)
    for i in (5, 17, 40):
        rows[i]["x"] = 0.0
    (tmp_path / "events" / "f0.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    query, printer = start_view(spark, view, once=True, quiet=False, json_lines=True)
    query.awaitTermination()
    printer.poll(query)
    assert query.exception() is None
    zero = [r for r in rows if r["x"] == 0]
    _assert_view_is(tmp_path, [r for r in rows if r["x"] != 0], calls)
    kept = _dead_letters(tmp_path)
    assert sorted(json.loads(r["record"])["id"] for r in kept) == sorted(r["id"] for r in zero)
    # Spark computes 12 / x ahead of the windows (the bind step); the reason names the expression
    # and says Spark's own error for the row
    why = "Spark failed to compute 12 / x on this row: [DIVIDE_BY_ZERO] Division by zero."
    assert all(r["reason"].startswith(why) for r in kept), kept[0]["reason"]
    assert all(r["origin"].startswith("overWindow, key") for r in kept)
    assert all(not any(c.startswith("__ow_") for c in json.loads(r["record"])) for r in kept)
    progress = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert sum(p["set_aside"] for p in progress) == len(zero)


def test_bad_csv_lines_are_counted_and_a_reordered_header_stops_the_query(spark, tmp_path):
    view = _view(tmp_path, "csv")
    good = _good_rows(30, seed=2)
    text = "k,id,ts,x\n" + "".join(
        f"{r['k']},{r['id']},{r['ts']},{'' if r['x'] is None else r['x']}\n" for r in good
    )
    bad = {"a,906,2024-01-01T00:00:03,zz": "wrong type: x (DOUBLE)", "b,907": "malformed CSV line"}
    text += "\n".join(bad) + "\n"
    (tmp_path / "events" / "f0.csv").write_text(text)
    query = _run(spark, view)
    assert query.exception() is None
    assert sum(bad_records(p) for p in query.recentProgress) == 2
    _assert_view_is(tmp_path, good)
    assert sorted((r["record"], r["reason"]) for r in _dead_letters(tmp_path)) == sorted(bad.items())
    # the same columns in another order: read by position they would swap k and x
    (tmp_path / "events" / "f1.csv").write_text("x,id,ts,k\n1.5,908,2024-01-01T00:00:09,a\n")
    with pytest.raises(
        StreamingQueryException, match=r"(?s)f1\.csv.*CSV header does not conform to the schema"
    ):
        _run(spark, view)
    _assert_view_is(tmp_path, good)


def test_a_file_deleted_before_it_was_read_is_reported(spark, tmp_path, monkeypatch, capsys):
    """availableNow lists every file at the start; f1, deleted while batch 0 runs, is listed for batch 1
    but gone when Spark builds it (Spark skipped it with a warning the job's log level hides).
    Admission control by default: no max_files_per_trigger, and a byte limit (made small here) splits
    the three files into three micro-batches. Issue 40, item 8: through ``overwindow run`` the loss
    is said on stderr, in the batch's JSON progress (``lost_files``) and by exit code 3 (it was 0)."""
    from overwindow.__main__ import main
    from overwindow.pipeline.sinks import SqliteSink

    monkeypatch.setattr(sources, "DEFAULT_MAX_BYTES_PER_TRIGGER", 1)
    view = _view(tmp_path)
    rows = _good_rows(30, seed=3)
    for f in range(3):
        path = tmp_path / "events" / f"f{f}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows[f * 10 : f * 10 + 10]))
        os.utime(path, (1_000 + f, 1_000 + f))
    apply = SqliteSink.apply

    def apply_then_delete(self, table, batch_id, query_id):
        if batch_id == 0:
            os.remove(tmp_path / "events" / "f1.json")
        return apply(self, table, batch_id, query_id)

    monkeypatch.setattr(SqliteSink, "apply", apply_then_delete)
    assert main(["run", view.path, "--once", "--progress", "json"]) == 3
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [r["rows_in"] for r in records if r["rows_in"]] == [10, 10]
    lost = {r["batch"]: r["lost_files"] for r in records}
    assert lost[1] == [(tmp_path / "events" / "f1.json").as_uri()]
    assert all(not files for batch, files in lost.items() if batch != 1)
    assert "batch 1: 1 file(s) listed for the batch were deleted before Spark read them" in err
    assert "f1.json" in err
    assert (
        "1 file(s) were deleted before Spark read them; their rows are not in the view (exit code 3)" in err
    )
    _assert_view_is(tmp_path, rows[:10] + rows[20:])


def test_max_bytes_per_trigger_bounds_each_micro_batch(spark, tmp_path):
    view = _view(tmp_path, extra="max_bytes_per_trigger = 1")
    rows = _good_rows(20, seed=4)
    for f in range(4):
        path = tmp_path / "events" / f"f{f}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows[f * 5 : f * 5 + 5]))
        os.utime(path, (1_000 + f, 1_000 + f))
    query = _run(spark, view)
    assert query.exception() is None
    assert [p.numInputRows for p in query.recentProgress if p.numInputRows] == [5, 5, 5, 5]
    _assert_view_is(tmp_path, rows)


@pytest.mark.parametrize(
    "extra, emit, words",
    [
        (
            'envelope = "debezium"',
            "on_window_close",
            r'envelope .*need emit = "on_update" and a \[view\] row_key',
        ),
        ('envelope = "maxwell"', "on_update", r"envelope .*must be one of none, debezium"),
        ("max_files_per_trigger = 2\nmax_bytes_per_trigger = 1000", "on_update", r"not both"),
        ("max_bytes_per_trigger = 0", "on_update", r"max_bytes_per_trigger .*a positive whole number"),
    ],
)
def test_source_keys_are_checked_before_spark_starts(tmp_path, extra, emit, words):
    from overwindow.pipeline.view import ViewFileError

    path = tmp_path / "v.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "files"
        path = "events"
        schema = "k STRING, id BIGINT, t BIGINT, x DOUBLE"
        {extra}

        [watermark]
        column = "t"
        delay = "10"

        [view]
        calls = ["sum(x) OVER (ORDER BY t) AS s"]
        emit = "{emit}"

        [sink]
        kind = "console"
        checkpoint = "chk"
    """)
    )
    with pytest.raises(ViewFileError, match=words):
        load_view(str(path))


def test_a_debezium_view_gets_its_op_column_and_spark_settings_come_from_set(tmp_path):
    path = tmp_path / "v.toml"
    path.write_text(
        textwrap.dedent("""
        [source]
        format = "files"
        path = "events"
        schema = "k STRING, id BIGINT, t BIGINT, x DOUBLE"
        envelope = "debezium"

        [view]
        calls = ["sum(x) OVER (ORDER BY t) AS s"]
        emit = "on_update"
        row_key = ["id"]

        [sink]
        kind = "console"
        checkpoint = "chk"

        [spark]
        "spark.executor.memory" = "2g"
    """)
    )
    view = load_view(str(path), {"spark.driver.memory": "4g"})
    assert view.op_column == "_op" and view.spec.op_column == "_op"
    assert view.spark == {"spark.executor.memory": "2g", "spark.driver.memory": "4g"}


def test_late_rows_can_be_kept_with_their_reason(spark, tmp_path, capsys):
    """Issue 40, item 7: ``late_rows = "dead_letter"`` keeps late rows in the dead letter with the
    reason, as bad records are kept. Oracle: the same view without it, run beside it over the same
    files (one job, a query each, both emit modes): its table is the same, and as many rows were late
    there (dropped by Spark's operator or by the state machine) as are kept here; every input row is
    in the table or kept (window close ends its input with --final). Late rows arrive both well below
    the watermark and between the previous batch's watermark and the batch's own, where the two
    modes differ (window close takes them, emit on update drops them). Item 18: with several views in
    one run every committed batch of each has its progress record, with its bad records (one
    malformed line) and late rows (most were never printed, and their counts went to other batches)."""
    from overwindow.__main__ import main

    (tmp_path / "events").mkdir()
    rows = []
    for f, (minute, back) in enumerate([(0, None), (1, None), (2, [5, 30, 70]), (3, [10, 100, 125])]):
        batch = [{"k": "ab"[i % 2], "id": f * 100 + i, "ts": f"2024-01-01T00:{minute:02d}:{i:02d}", "x": 1.0}
                 for i in range(20)]  # fmt: skip
        for j, seconds in enumerate(back or []):  # rows from earlier: some late, some not
            ts = f"2024-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}"
            batch.append({"k": "ab"[j % 2], "id": f * 100 + 50 + j, "ts": ts, "x": 2.0})
        rows += batch
        path = tmp_path / "events" / f"f{f}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in batch) + ("{not json\n" if f == 1 else ""))
        os.utime(path, (1_000 + f, 1_000 + f))
    views = {}
    for emit in ("on_window_close", "on_update"):
        for name, extra in (("counted", ""), ("kept", 'late_rows = "dead_letter"\ndead_letter = "bad"')):
            folder = tmp_path / f"{emit}-{name}"
            folder.mkdir()
            (folder / "view.toml").write_text(
                textwrap.dedent(f"""
                [source]
                format = "files"
                path = "../events"
                schema = "k STRING, id BIGINT, ts TIMESTAMP, x DOUBLE"
                max_files_per_trigger = 1
                EXTRA

                [watermark]
                column = "ts"
                delay = "5 seconds"

                [view]
                partition_by = ["k"]
                calls = ["sum(x) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s"]
                emit = "{emit}"
                row_key = ["id"]

                [sink]
                kind = "sqlite"
                path = "view.sqlite"
                table = "v"
                checkpoint = "chk"
                """).replace("EXTRA", extra)
            )
            views[emit, name] = folder
    files = [str(f / "view.toml") for f in views.values()]
    assert main(["run", *files, "--once", "--final", "--progress", "json"]) == 0, capsys.readouterr().err
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    for folder in views.values():
        mine = [r for r in records if r["view"] == f"v ({folder / 'view.toml'})"]
        commits = [n for n in os.listdir(folder / "chk" / "commits") if n.isdigit()]
        assert [r["batch"] for r in mine] == list(range(len(commits))), folder
        assert [r["bad"] for r in mine][:3] == [0, 1, 0], folder
    for emit in ("on_window_close", "on_update"):
        counted, kept = views[emit, "counted"], views[emit, "kept"]
        late = [
            sum(r["late"] for r in records if r["view"] == f"v ({f / 'view.toml'})") for f in (counted, kept)
        ]
        tables = [
            sorted(sqlite3.connect(f / "view.sqlite").execute('SELECT id, s FROM "v"'))
            for f in (counted, kept)
        ]
        assert tables[0] == tables[1], emit
        bad = [
            json.loads(x) for f in sorted((kept / "bad").glob("*.jsonl")) for x in f.read_text().splitlines()
        ]
        assert [r["reason"] for r in bad if not r["reason"].startswith("late: ")] == ["not a JSON record"]
        bad = [r for r in bad if r["reason"].startswith("late: ")]
        assert len(bad) == late[0] == late[1] > 0, emit
        assert all(
            r["reason"].startswith("late: 2024-01-01T00:0") and "the watermark 2024" in r["reason"]
            for r in bad
        )
        ids = [json.loads(r["record"])["id"] for r in bad] + [i for i, _ in tables[1]]
        assert sorted(ids) == sorted(r["id"] for r in rows), emit
