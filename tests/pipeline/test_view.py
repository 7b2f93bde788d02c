"""View files: a good one loads; a bad one is refused before Spark starts, naming key and line."""

import textwrap

import pytest

from overwindow.pipeline.view import ViewFileError, load_view

GOOD = """
[source]
format = "files"
path = "events"
file_format = "json"
schema = "k STRING, ts TIMESTAMP, x DOUBLE"

[watermark]
column = "ts"
delay = "10 seconds"

[view]
partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"]
emit = "on_window_close"

[sink]
kind = "sqlite"
path = "view.sqlite"
table = "v"
checkpoint = "chk"
"""


def write(tmp_path, text):
    p = tmp_path / "view.toml"
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_a_good_view_loads_with_paths_relative_to_the_file(tmp_path):
    view = load_view(write(tmp_path, GOOD))
    assert view.source["path"] == str(tmp_path / "events")
    assert view.sink["path"] == str(tmp_path / "view.sqlite")
    assert view.partition_by == ["k"] and view.spec.order_column == "ts"


def test_overrides_replace_keys(tmp_path):
    view = load_view(write(tmp_path, GOOD), {"sink.path": "/tmp/other.sqlite", "view.emit": "on_update"})
    assert view.sink["path"] == "/tmp/other.sqlite" and view.emit == "on_update"


@pytest.mark.parametrize(
    "change, words",
    [
        (('emit = "on_window_close"', 'emit = "sometimes"'), r"\[view\] emit \(line 15\): must be one of"),
        (('kind = "sqlite"', 'kind = "excel"'), r"\[sink\] kind \(line 18\): must be one of sqlite"),
        (
            (
                'calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"]',
                'calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING)"]',
            ),
            r"\[view\] calls \(line 14\): .*AS <name>",
        ),
        (
            (
                'calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"]',
                'calls = ["ntile(2) OVER (ORDER BY ts) AS n"]',
            ),
            r"\[view\] calls .*ntile",
        ),
        (('schema = "k STRING, ts TIMESTAMP, x DOUBLE"\n', ""), r"\[source\] schema: missing"),
        (('[watermark]\ncolumn = "ts"\ndelay = "10 seconds"\n', ""), r"needs a \[watermark\] section"),
        (('format = "files"', 'format = "files'), r"not valid TOML.*line 3"),
        (('kind = "sqlite"', 'kind = "parquet"\n'), r"Parquet sink only appends"),
    ],
)
def test_bad_views_name_the_key_and_line(tmp_path, change, words):
    old, new = change
    text = GOOD.replace(old, new)
    if "parquet" in new:
        text = text.replace('emit = "on_window_close"', 'emit = "on_update"')
        words = r"\[sink\] kind .*Parquet sink only appends"
    with pytest.raises(ViewFileError, match=words):
        load_view(write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(ViewFileError, match="cannot read the view file"):
        load_view(str(tmp_path / "nope.toml"))
