"""The Iceberg sink (issue 41), without Spark: random changelogs applied batch by batch (every batch
applied twice, the second time a replay) leave the table a model keeps, read back with pyiceberg's
own scan; appends; a batch's record in the snapshots' summaries; a table of another query and a
table drifted from the view refused before anything is written."""

import decimal
import itertools
import re

import pyarrow as pa
import pytest
from hypothesis import given, settings
from sink_support import CHANGELOG, DRIFTED, SCHEMA, TYPED_ROW, TYPED_SCHEMA, batches, model, sort_key

pytest.importorskip("pyiceberg")

from overwindow.pipeline.checkpoint import CheckpointState  # noqa: E402
from overwindow.pipeline.iceberg import IcebergSink  # noqa: E402
from overwindow.pipeline.sinks import Bookkeeping, SinkDriftError, check_pairing  # noqa: E402


def sink_in(folder, key=("k", "id"), upsert=True, table="db.v") -> IcebergSink:
    return IcebergSink(str(folder / "catalog.db"), str(folder / "warehouse"), table, list(key), upsert)


def scan(folder, table="db.v") -> pa.Table:
    """The table as a catalog of its own reads it (pyiceberg's scan)."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("overwindow", uri=f"sqlite:///{folder / 'catalog.db'}", warehouse=f"file://{folder}")
    return catalog.load_table(table).scan().to_arrow()


def read(folder, table="db.v") -> list[tuple]:
    t = scan(folder, table)
    return sorted(zip(*(t.column(c).to_pylist() for c in ("k", "id", "s"))), key=sort_key)


def snapshots(sink) -> int:
    return len(sink.table().metadata.snapshots)


@pytest.fixture(scope="module")
def catalog_folder(tmp_path_factory):
    """One catalog for the examples of a property (a table each): making a catalog takes a second."""
    return tmp_path_factory.mktemp("iceberg")


TABLES = itertools.count()


@settings(max_examples=20, deadline=None)
@given(changelog=CHANGELOG)
def test_upserts_and_deletes_by_key_with_nulls_replays_skipped(catalog_folder, changelog):
    """Keyed by (k, id) with NULLs in both: a NULL key matches a NULL key. Each batch applied twice:
    the replay is skipped and commits nothing."""
    table = f"db.v{next(TABLES)}"
    sink = sink_in(catalog_folder, table=table)
    for b, batch in enumerate(batches(changelog)):
        assert sink.apply(batch, b, "q") == batch.num_rows
        before = snapshots(sink)
        assert sink.apply(batch, b, "q") is None
        assert snapshots(sink) == before
    assert read(catalog_folder, table) == model(changelog)
    assert sink.bookkeeping().applied.batch_id == len(changelog) - 1


def test_a_batch_with_two_changes_of_one_key_is_applied_as_its_net_effect(tmp_path):
    """A row moved between partitions: its new partition's upsert and its old one's delete, in that
    order, in one batch of a table keyed by the row key alone: the row is kept."""
    sink = sink_in(tmp_path, key=["id"])
    sink.apply(pa.table({"k": ["a"], "id": [1], "s": [1.0], "_change": ["upsert"]}), 0, "q")
    moved = pa.table({"k": ["b", "a"], "id": [1, 1], "s": [2.0, None], "_change": ["upsert", "delete"]})
    assert sink.apply(moved, 1, "q") == 1
    assert read(tmp_path) == [("b", 1, 2.0)]


def test_many_keys_of_two_columns_nan_keys_too(tmp_path):
    """Thousands of keys in one batch (the filter's ORs stay shallow), a NaN in a key column
    matching NaN."""
    sink = sink_in(tmp_path, key=["k", "x"])
    n = 3000
    first = pa.table(
        {
            "k": [str(i % 7) for i in range(n)],
            "x": [float(i) for i in range(n - 1)] + [float("nan")],
            "_change": ["upsert"] * n,
        }
    )
    sink.apply(first, 0, "q")
    sink.apply(first.set_column(2, "_change", pa.array(["delete"] * n)).slice(1), 1, "q")
    t = scan(tmp_path)
    assert t.to_pylist() == [{"k": "0", "x": 0.0}]


def test_appends_and_empty_batches_record_their_batch(tmp_path):
    sink = sink_in(tmp_path, key=["id"], upsert=False)
    sink.apply(pa.table({"k": ["a", None], "id": [1, 2], "s": [1.5, float("nan")]}), 0, "q")
    empty = pa.table(
        {"k": pa.array([], pa.string()), "id": pa.array([], pa.int64()), "s": pa.array([], pa.float64())}
    )
    assert sink.apply(empty, 1, "q") == 0
    assert sink.apply(empty, 1, "q") is None
    sink.apply(pa.table({"k": ["b"], "id": [3], "s": [None]}, schema=empty.schema), 2, "q")
    summaries = [s.summary.additional_properties for s in sink.table().metadata.snapshots]
    assert [s["overwindow.batchId"] for s in summaries] == ["0", "1", "2"]
    got = read(tmp_path)
    assert [r[:2] for r in got] == [(None, 2), ("a", 1), ("b", 3)]
    assert got[0][2] != got[0][2]  # NaN kept as NaN


def test_types_a_view_writes_read_back_as_written(tmp_path):
    """DECIMAL with 30 digits, dates before 1970, UTC and naive timestamps, binary, booleans, on
    update; a key of timestamps."""
    schema, row = TYPED_SCHEMA, TYPED_ROW
    sink = sink_in(tmp_path, key=["ts", "id"])
    sink.apply(pa.Table.from_pylist([row], schema=schema), 0, "q")
    sink.check_columns(schema)  # the table it made fits the view
    changed = dict(row, d=decimal.Decimal("-0.0001"), f=None)
    sink.apply(pa.Table.from_pylist([changed, dict(row, id=2)], schema=schema), 1, "q")
    got = sorted(scan(tmp_path).to_pylist(), key=lambda r: r["id"])
    want = [{k: v for k, v in r.items() if k != "_change"} for r in (changed, dict(row, id=2))]
    assert got == want


def test_another_querys_table_is_refused_at_start_and_at_apply(tmp_path):
    sink_in(tmp_path, key=["id"], upsert=False).apply(pa.table({"id": [1]}), 0, "q1")
    kept = sink_in(tmp_path, key=["id"], upsert=False).bookkeeping()
    assert (kept.table_exists, kept.applied.query_id, kept.applied.batch_id) == (True, "q1", 0)
    with pytest.raises(SinkDriftError, match="another query"):
        check_pairing("db.v", kept, CheckpointState("q2", 0, 0), "")
    check_pairing("db.v", kept, CheckpointState("q1", 0, 1), "")
    sink = sink_in(tmp_path, key=["id"], upsert=False)
    with pytest.raises(SinkDriftError, match=r"written by another query \(q1\) than this one \(q2\)"):
        sink.apply(pa.table({"id": [2]}), 1, "q2")
    assert snapshots(sink) == 1


def test_a_table_of_other_writers_snapshots_keeps_its_record(tmp_path):
    """A snapshot without overwindow's record (another writer) after the last batch: the record is
    the newest snapshot that has one; a new table has none."""
    sink = sink_in(tmp_path, key=["id"], upsert=False)
    assert sink.bookkeeping() == Bookkeeping(False, None)
    sink.apply(pa.table({"id": [1]}), 4, "q")
    sink.table().append(pa.table({"id": [9]}))
    assert sink.bookkeeping().applied.batch_id == 4


@pytest.mark.parametrize("table, refusal", DRIFTED)
def test_a_column_dropped_or_retyped_is_refused_in_one_line_before_any_write(tmp_path, table, refusal):
    other = sink_in(tmp_path, key=["id"], upsert=False)
    other._create(table.schema).append(table)
    with pytest.raises(SinkDriftError, match=rf"^Iceberg table db\.v{re.escape(refusal)}$"):
        sink_in(tmp_path, key=["id"]).check_columns(SCHEMA)
    assert snapshots(other) == 1


def test_columns_the_view_does_not_write_may_stay_and_the_key_must_be_written(tmp_path):
    other = sink_in(tmp_path, key=["id"], upsert=False)
    other._create(
        pa.schema([("k", pa.string()), ("id", pa.int64()), ("s", pa.float64()), ("note", pa.string())])
    )
    sink_in(tmp_path, key=["id"]).check_columns(SCHEMA)
    with pytest.raises(SinkDriftError, match="writes no column day to partition or key"):
        sink_in(tmp_path / "new", key=["day"]).check_columns(SCHEMA)


def test_a_column_iceberg_has_no_type_for_is_refused(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("gap", pa.duration("us"))])
    with pytest.raises(SinkDriftError, match=r"Iceberg has no type for column gap \(INTERVAL"):
        sink_in(tmp_path, key=["id"], upsert=False).check_columns(schema)


def test_a_partitioned_table_keyed_by_the_row_key_keeps_rows_moving_between_partitions(tmp_path):
    """``partition_by = ["k"]`` (identity partitions, NULL one of them), keyed by ``id`` alone as a
    view is: a row whose k changes arrives as an upsert in its new partition and a delete from its
    old one in one batch (either order), netted to the upsert; it moves to its new partition's
    files. Read back with pyiceberg's scan after every batch; each data file holds one k."""
    sink = IcebergSink(str(tmp_path / "catalog.db"), str(tmp_path / "warehouse"), "db.v", ["id"], True, ["k"])
    log = [
        [("a", 1, 1.0, "upsert"), ("b", 2, 2.0, "upsert"), (None, 3, 3.0, "upsert")],
        [
            ("b", 1, 1.5, "upsert"),
            ("a", 1, None, "delete"),
            (None, 3, None, "delete"),
            ("a", 3, 3.5, "upsert"),
        ],
        [("b", 2, None, "delete"), (None, 1, 4.0, "upsert"), ("b", 1, None, "delete")],
    ]
    tables = [
        [(None, 3, 3.0), ("a", 1, 1.0), ("b", 2, 2.0)],
        [("a", 3, 3.5), ("b", 1, 1.5), ("b", 2, 2.0)],
        [(None, 1, 4.0), ("a", 3, 3.5)],
    ]
    for b, (changes, want) in enumerate(zip(log, tables)):
        batch = pa.table(
            {
                "k": pa.array([k for k, *_ in changes], pa.string()),
                "id": pa.array([i for _, i, *_ in changes], pa.int64()),
                "s": pa.array([s for *_, s, _ in changes], pa.float64()),
                "_change": [c for *_, c in changes],
            }
        )
        sink.apply(batch, b, "q")
        assert read(tmp_path) == want, f"after batch {b}"
    table = sink.table()
    assert [table.schema().find_column_name(f.source_id) for f in table.spec().fields] == ["k"]
    files = [task.file.file_path for task in table.scan().plan_files()]
    assert sorted(re.search(r"/k=([^/]+)/", f).group(1) for f in files) == ["a", "null"]


def test_an_existing_table_partitioned_otherwise_is_refused(tmp_path):
    rows = pa.table({"k": ["a"], "id": [1], "s": [1.0], "_change": ["upsert"]})
    sink_in(tmp_path, key=["id"]).apply(rows, 0, "q")  # unpartitioned
    with pytest.raises(
        SinkDriftError, match=r"^Iceberg table db.v is partitioned by \(nothing\), the view file by \(k\)"
    ):
        IcebergSink(
            str(tmp_path / "catalog.db"), str(tmp_path / "warehouse"), "db.v", ["id"], True, ["k"]
        ).check_columns(SCHEMA)
    with pytest.raises(SinkDriftError, match="writes no column day to partition"):
        IcebergSink(
            str(tmp_path / "catalog.db"), str(tmp_path / "warehouse"), "db.w", ["id"], True, ["day"]
        ).check_columns(SCHEMA)


def test_a_rest_catalogs_credentials_come_from_the_environment_and_are_never_printed(
    tmp_path, monkeypatch, capsys
):
    """A view file's ``[sink] options = { token = "env:NAME" }``: the token, read from the
    environment, reaches a REST catalog (a local HTTP server standing in for one, which sees the
    request's Authorization header); the view file, the sink's repr and anything printed hold the
    variable's name only; an unset variable is refused naming it."""
    import http.server
    import json
    import textwrap
    import threading

    from overwindow.pipeline.table_formats import table_format_sink
    from overwindow.pipeline.view import ViewFileError, load_view

    seen = []

    class Catalog(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # the REST catalog's first call: GET /v1/config
            seen.append((self.path, self.headers.get("Authorization")))
            body = json.dumps({"defaults": {}, "overrides": {}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Catalog)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        view_file = tmp_path / "v.toml"
        view_file.write_text(
            textwrap.dedent(f"""
            [source]
            format = "files"
            path = "in"
            schema = "k STRING, id BIGINT, ts TIMESTAMP, x DOUBLE"
            [view]
            partition_by = ["k"]
            calls = ["sum(x) OVER (ORDER BY ts) AS s"]
            emit = "on_update"
            row_key = ["id"]
            [sink]
            kind = "iceberg"
            catalog = "http://127.0.0.1:{server.server_address[1]}"
            warehouse = "warehouse"
            table = "db.v"
            options = {{ token = "env:OW_TEST_ICEBERG_TOKEN" }}
            checkpoint = "chk"
            """)
        )
        secret = "s3cr3t-token-value"
        monkeypatch.setenv("OW_TEST_ICEBERG_TOKEN", secret)
        sink = table_format_sink(load_view(str(view_file)))
        sink.catalog()
        assert seen and seen[0][0].startswith("/v1/config") and seen[0][1] == f"Bearer {secret}"
        assert secret not in repr(sink) and secret not in view_file.read_text()
        assert secret not in "".join(capsys.readouterr())
        monkeypatch.delenv("OW_TEST_ICEBERG_TOKEN")
        with pytest.raises(
            ViewFileError, match=r"options.token reads the environment variable OW_TEST_ICEBERG_TOKEN"
        ):
            table_format_sink(load_view(str(view_file)))
    finally:
        server.shutdown()
