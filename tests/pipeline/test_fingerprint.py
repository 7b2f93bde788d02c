"""The checkpoint's view (issue 14, item 3): what shapes state and table is compared with the view the
checkpoint was started with; what a checkpoint may change (the delay, batch sizes, spacing) is not.
Here the checkpoint is marked started by hand; tests/test_cli.py runs it on Spark."""

import json
import os
import re
import shutil
import textwrap

import pytest

from overwindow.pipeline.fingerprint import FILE, record
from overwindow.pipeline.validate import check_views
from overwindow.pipeline.view import ViewFileError, load_view

VIEW = """
[source]
format = "files"
path = "events"
schema = "k STRING, ts TIMESTAMP, id BIGINT, x DOUBLE"
max_files_per_trigger = 1

[watermark]
column = "ts"
delay = "10 seconds"

[view]
partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"]
row_key = ["id"]

[sink]
kind = "sqlite"
path = "view.sqlite"
table = "v"
checkpoint = "chk"
"""


CALL = "sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"


def started(folder, text=VIEW):
    """A view run once: its fingerprint recorded and Spark's offsets folder not empty."""
    (folder / "events").mkdir(parents=True)
    (folder / "view.toml").write_text(textwrap.dedent(text))
    (checked,) = check_views([load_view(str(folder / "view.toml"))], create=True)
    record(checked)
    (folder / "chk" / "offsets").mkdir()
    (folder / "chk" / "offsets" / "0").write_text("v1\n")
    return str(folder / "view.toml")


@pytest.mark.parametrize(
    "override, label",
    [
        ({"view.calls": [CALL, "max(x) OVER (ORDER BY ts) AS m"]}, "[view] calls"),
        ({"view.calls": ["sum(x) OVER (ORDER BY ts ROWS 4 PRECEDING) AS s"]}, "[view] calls"),
        ({"view.partition_by": []}, "[view] partition_by"),
        ({"view.row_key": ["id", "k"]}, "[view] row_key"),
        ({"view.emit": "on_update"}, "[view] emit"),
        ({"view.emit": "on_update", "view.state_layout": "chunked"}, "[view] state_layout"),
        ({"view.key_buckets": 16}, "[view] key_buckets"),
        ({"source.schema": "k STRING, ts TIMESTAMP, id BIGINT, x DECIMAL(10, 2)"}, "[source] schema"),
        ({"sink.table": "v2"}, "[sink] kind / path / table"),
        ({"sink.path": "other.sqlite"}, "[sink] kind / path / table"),
    ],
)  # fmt: skip
def test_what_shapes_state_or_table_is_compared(tmp_path, override, label):
    path = started(tmp_path)
    with pytest.raises(ViewFileError) as e:
        check_views([load_view(path, override)])
    # the calls and the schema say which of them changed (issue 40, item 16)
    listed = label in ("[view] calls", "[source] schema")
    assert (f"{label}: " if listed else f"{label} was ") in str(e.value)
    assert "a new checkpoint and a new table" in str(e.value)


@pytest.mark.parametrize(
    "override",
    [
        {"watermark.delay": "1 hour"},
        {"source.max_files_per_trigger": 5},
        {"view.calls": ["SUM(x)   over (order by ts rows between 3 preceding and current row)   as s"]},
    ],
)
def test_what_a_checkpoint_may_change_is_not(tmp_path, override):
    path = started(tmp_path)
    check_views([load_view(path, override)])


@pytest.mark.parametrize(
    "given, recorded",
    [(None, "chosen"), ("64", 64), ('"per key"', None)],
)
def test_the_key_buckets_a_checkpoint_was_started_on_are_recorded_and_kept(tmp_path, given, recorded):
    """Buckets overwindow chose are recorded as such (their count follows the partitions Spark keeps
    for the checkpoint), a count given as the count; the view without key_buckets then runs what
    was recorded, and a count written out where buckets were chosen is a change."""
    text = (
        VIEW
        if given is None
        else VIEW.replace('row_key = ["id"]', f'row_key = ["id"]\nkey_buckets = {given}')
    )
    path = started(tmp_path, text)
    with open(tmp_path / "chk" / FILE) as f:
        assert json.load(f)["key_buckets"] == recorded
    (checked,) = check_views([load_view(path, {"view.key_buckets": None})])
    assert checked.view.spec.buckets_chosen == (given is None)
    if given is None:
        with pytest.raises(ViewFileError, match='key_buckets was "chosen", is now 16'):
            check_views([load_view(path, {"view.key_buckets": 16})])


def test_a_checkpoint_spark_has_not_started_takes_any_view(tmp_path):
    path = started(tmp_path)
    shutil.rmtree(tmp_path / "chk" / "offsets")
    check_views([load_view(path, {"view.emit": "on_update"})])


def test_a_moved_view_folder_is_named_as_such(tmp_path):
    started(tmp_path / "a")
    os.rename(tmp_path / "a", tmp_path / "b")
    with pytest.raises(
        ViewFileError, match=f"the view folder moved from {tmp_path / 'a'} to {tmp_path / 'b'}"
    ):
        check_views([load_view(str(tmp_path / "b" / "view.toml"))])


def test_a_checkpoint_without_a_record_is_taken_with_a_warning(tmp_path):
    path = started(tmp_path)
    os.remove(tmp_path / "chk" / FILE)
    (checked,) = check_views([load_view(path, {"view.emit": "on_update"})])
    assert any("does not say which view it belongs to" in w for w in checked.view.warnings)


QUERY = "SELECT k, id, sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 3 PRECEDING) AS s FROM source"


@pytest.mark.parametrize(
    "query, label",
    [
        (QUERY + " WHERE x > 0", "[view] query"),
        (QUERY + " QUALIFY s > 0", "[view] query"),
        (QUERY.replace("k, id,", "k, id, x,"), "[view] query"),
        (QUERY.replace("3 PRECEDING", "4 PRECEDING"), "[view] calls"),
        ("select k,  id, SUM(x) over (partition by k order by ts rows 3 preceding) as s from source", None),
    ],
)
def test_a_query_views_where_filter_and_columns_are_compared(tmp_path, query, label):
    text = VIEW.replace('partition_by = ["k"]\n', "").replace(f'calls = ["{CALL}"]', f'query = "{QUERY}"')
    path = started(tmp_path, text)
    if label is None:
        check_views([load_view(path, {"view.query": query})])
        return
    with pytest.raises(ViewFileError, match=rf"{re.escape(label)}(:| was) "):
        check_views([load_view(path, {"view.query": query})])


@pytest.mark.parametrize(
    "before, after, changed",
    [
        ("'it''s'", "'it' 's'", True),  # Spark reads it's, then its
        ("'it''s'", '"it\'s"', False),
        ("'a' 'b'", "'ab'", False),
    ],
)
def test_a_query_views_string_literals_compare_as_spark_reads_them(tmp_path, before, after, changed):
    query = QUERY + " WHERE k = {}"
    text = VIEW.replace('partition_by = ["k"]\n', "").replace(
        f'calls = ["{CALL}"]', f"query = '''{query.format(before)}'''"
    )
    path = started(tmp_path, text)
    if not changed:
        check_views([load_view(path, {"view.query": query.format(after)})])
        return
    with pytest.raises(ViewFileError, match=r"\[view\] query was "):
        check_views([load_view(path, {"view.query": query.format(after)})])


def test_a_query_view_records_its_calls_as_the_previous_release_did(tmp_path):
    """Spark computes ``x - sum(x) OVER w`` over the call's own column now; the checkpoint still
    records the column as written, so a checkpoint the previous release started (whose record is the
    list below, as it wrote it) goes on."""
    query = (
        "SELECT k, id, x - sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 3 PRECEDING) AS d, "
        "lag(x) OVER (PARTITION BY k ORDER BY ts) AS p FROM source"
    )
    text = VIEW.replace('partition_by = ["k"]\n', "").replace(f'calls = ["{CALL}"]', f'query = "{query}"')
    path = started(tmp_path, text)
    with open(tmp_path / "chk" / FILE) as f:
        assert json.load(f)["calls"] == [
            "x - sum(x) OVER (ORDER BY ts ASC NULLS FIRST ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS d",
            "lag(x, 1) OVER (ORDER BY ts ASC NULLS FIRST) AS p",
        ]
    check_views([load_view(path)])


def test_a_changed_call_among_many_names_only_that_call(tmp_path, capsys, monkeypatch):
    """Issue 40, item 16: the refusal listed every old and new call (some 900 characters)."""
    from overwindow.__main__ import main
    from overwindow.pipeline import job

    calls = [f"{f}(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS {f}3" for f in ("sum", "avg", "min", "max")]
    path = started(tmp_path, VIEW.replace(f'["{CALL}"]', json.dumps(calls)))
    monkeypatch.setattr(job, "local_spark", lambda *a, **k: pytest.fail("Spark was started"))
    changed = [c.replace("min(x) OVER (ORDER BY ts ROWS 3", "min(x) OVER (ORDER BY ts ROWS 5") for c in calls]
    more = [*calls[:3], "count(x) OVER (ORDER BY ts) AS n"]  # max3 out, n in
    for new, said in [
        (
            changed,
            '[view] calls: `min3` was "min(x) OVER (ORDER BY ts ASC NULLS FIRST ROWS BETWEEN 3 PRECEDING '
            'AND CURRENT ROW) AS min3", is now "min(x) OVER (ORDER BY ts ASC NULLS FIRST ROWS BETWEEN 5 '
            'PRECEDING AND CURRENT ROW) AS min3". ',
        ),
        (
            more,
            '[view] calls: added "count(x) OVER (ORDER BY ts ASC NULLS FIRST RANGE BETWEEN UNBOUNDED '
            'PRECEDING AND CURRENT ROW) AS n"; removed "max(x) OVER (ORDER BY ts ASC NULLS FIRST ROWS '
            'BETWEEN 3 PRECEDING AND CURRENT ROW) AS max3". ',
        ),
    ]:
        for command in ("validate", "run"):
            assert main([command, path, "--set", f"view.calls={json.dumps(new)}"]) == 2
            (line,) = capsys.readouterr().err.strip().splitlines()
            assert said in line, line
            for kept in ("sum3", "avg3"):  # unchanged calls go unnamed
                assert kept not in line
