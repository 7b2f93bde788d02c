"""View files: a good one loads; a bad one is refused before Spark starts, naming key and line."""

import re
import textwrap

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from overwindow.pipeline.view import ViewFileError, load_view
from overwindow.pipeline.view_keys import KEYS_BY_NAME

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
        (
            ('emit = "on_window_close"', 'emit = "on_window_close"\nkey_buckets = 0'),
            r"\[view\] key_buckets \(line 16\)",
        ),
        (
            ('emit = "on_window_close"', 'emit = "on_window_close"\nstate_ttl = "soon"'),
            r"\[view\] state_ttl \(line 16\): state_ttl='soon' is not an interval",
        ),
        (
            ('emit = "on_window_close"', 'emit = "on_update"\nstate_ttl = "1 hour"'),
            r"\[view\] state_ttl \(line 16\): state_ttl forgets a key by event time",
        ),
        (
            (
                'emit = "on_window_close"',
                'emit = "on_window_close"\n\n[spark]\n"sql.session.timeZone" = "Europe/Berlin"',
            ),
            r"\[spark\] sql.session.timeZone: Europe/Berlin is not UTC",
        ),
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


def test_state_ttl_reaches_the_spec(tmp_path):
    view = load_view(
        write(
            tmp_path,
            GOOD.replace('emit = "on_window_close"', 'emit = "on_window_close"\nstate_ttl = "7 days"'),
        )
    )
    assert view.spec.state_ttl.days == 7


def test_missing_file(tmp_path):
    with pytest.raises(ViewFileError, match="cannot read the view file"):
        load_view(str(tmp_path / "nope.toml"))


# -- unknown keys and sections (issue 14, item 1) ----------------------------------------------------


def _line(text, start):
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.strip().startswith(start))


@pytest.mark.parametrize(
    "old, new, section, suggestion",
    [
        ('partition_by = ["k"]', 'partiton_by = ["k"]', "view", "partition_by"),
        ('emit = "on_window_close"', 'emit = "on_window_close"\nrowkey = ["k"]', "view", "row_key"),
        ('file_format = "json"', 'file_formt = "json"', "source", "file_format"),
        ('checkpoint = "chk"', 'checkpont = "chk"', "sink", "checkpoint"),
        ('delay = "10 seconds"', 'dealy = "10 seconds"', "watermark", "delay"),
        # a key of another section
        (
            'emit = "on_window_close"',
            'emit = "on_window_close"\ncheckpoint = "c"',
            "view",
            "[sink] checkpoint",
        ),
    ],
)
def test_an_unknown_key_is_refused_with_its_line_and_the_nearest_known_key(
    tmp_path, old, new, section, suggestion
):
    text = textwrap.dedent(GOOD).replace(old, new)
    bad = new.splitlines()[-1].split("=")[0].strip()
    with pytest.raises(ViewFileError) as e:
        load_view(write(tmp_path, text))
    assert (
        f"[{section}] {bad} (line {_line(text, bad + ' =')}): unknown key; did you mean {suggestion}?"
        in str(e.value)
    )


def test_unknown_sections_and_keys_outside_sections_are_refused(tmp_path):
    text = 'format = "files"\n' + textwrap.dedent(GOOD).replace("[sink]", "[snk]")
    with pytest.raises(ViewFileError) as e:
        load_view(write(tmp_path, text))
    lines = str(e.value).splitlines()
    assert any(
        "format (line 1): a key outside any section; did you mean [source] format?" in x for x in lines
    )
    assert any("unknown section [snk]; did you mean [sink]?" in x for x in lines)


def test_set_refuses_unknown_keys(tmp_path):
    with pytest.raises(
        ViewFileError, match=r"--set view.partiton_by: unknown key; did you mean partition_by\?"
    ):
        load_view(write(tmp_path, GOOD), {"view.partiton_by": ["k"]})
    with pytest.raises(
        ViewFileError, match=r"--set sinc.path: unknown section \[sinc\]; did you mean \[sink\]\?"
    ):
        load_view(write(tmp_path, GOOD), {"sinc.path": "x"})


def test_a_key_that_does_not_apply_is_a_warning(tmp_path):
    text = textwrap.dedent(GOOD).replace('file_format = "json"', 'file_format = "json"\ntopic = "t"')
    view = load_view(write(tmp_path, text))
    assert view.warnings == [
        f"{tmp_path / 'view.toml'}: [source] topic (line {_line(text, 'topic =')}): not used when "
        "[source] format = 'files' (it applies to format = 'kafka')"
    ]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_misspelt_key_is_refused_at_its_line(tmp_path_factory, data):
    """Every key of the GOOD file, misspelt by one random edit (not into another known key), is refused
    naming the misspelling and its line; nothing is silently ignored."""
    text = textwrap.dedent(GOOD)
    keys = [line.split("=")[0].strip() for line in text.splitlines() if "=" in line]
    key = data.draw(st.sampled_from(keys))
    at = data.draw(st.integers(0, len(key) - 1))
    edit = data.draw(st.sampled_from(["drop", "swap", "add", "case"]))
    if edit == "drop":
        typo = key[:at] + key[at + 1 :]
    elif edit == "swap":
        typo = key[:at] + key[at + 1 : at + 2] + key[at] + key[at + 2 :]
    elif edit == "add":
        typo = key[:at] + data.draw(st.sampled_from("aeiorst_")) + key[at:]
    else:
        typo = key[:at] + key[at].upper() + key[at + 1 :]
    assume(typo != key and typo and typo not in {k for _, k in KEYS_BY_NAME})
    bad = text.replace(f"\n{key} =", f"\n{typo} =", 1)
    path = write(tmp_path_factory.mktemp("typo"), bad)
    with pytest.raises(ViewFileError) as e:
        load_view(path)
    assert f"] {typo} (line {_line(bad, typo + ' =')}): unknown key" in str(e.value)


def test_the_docs_list_every_key_with_its_default_and_meaning():
    import os

    from overwindow.pipeline.view_keys import key_reference

    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "reference", "view-keys.md")) as f:
        assert key_reference() in f.read(), "docs/reference/view-keys.md is stale: python scripts/gen_docs.py"


QUERY_VIEW = GOOD.replace(
    """partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"]""",
    '''query = """
SELECT k, ts, x * 2 AS x2, sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 3 PRECEDING) AS s
FROM source WHERE x > 0
"""''',
)


def test_a_query_view_gives_the_partition_and_calls_overwindow_sql_would_run(tmp_path):
    from overwindow.spark.query import parse_query
    from overwindow.spark.select import query_groups

    view = load_view(write(tmp_path, QUERY_VIEW))
    assert view.partition_by == ["k"] and view.spec.order_column == "ts"
    assert view.query.where == "x > 0" and view.calls_key == "query"
    [(_, spec)], _ = query_groups(parse_query(view.query.text), **view.options)
    assert [str(c) for c in view.spec.calls] == [str(c) for c in spec.calls]
    assert not view.several


def test_a_query_view_over_several_partitionings_keeps_each_group(tmp_path):
    text = QUERY_VIEW.replace(
        "AS s\n", "AS s, lag(x) OVER (PARTITION BY x ORDER BY ts) AS p, rank() OVER (ORDER BY ts) AS r\n"
    )
    view = load_view(write(tmp_path, text))
    assert view.several and view.partition_by == []
    assert [(keys, [e.alias for e in spec.expressions]) for keys, spec in view.groups] == [
        (["k"], ["s"]),
        (["x"], ["p"]),
        ([], ["r"]),
    ]
    on_update = text.replace('emit = "on_window_close"', 'emit = "on_update"')
    with pytest.raises(
        ViewFileError, match=r"\[view\] query \(line 13\): .* on update need \[view\] row_key"
    ):
        load_view(write(tmp_path, on_update))
    chunked = on_update.replace(", rank() OVER (ORDER BY ts) AS r", "").replace(
        'emit = "on_update"', 'emit = "on_update"\nrow_key = ["x"]\nstate_layout = "chunked"'
    )
    with pytest.raises(ViewFileError, match=r"run on the whole state layout"):
        load_view(write(tmp_path, chunked))


@pytest.mark.parametrize(
    "old, new, words",
    [
        (
            "query = ",
            'partition_by = ["k"]\nquery = ',
            r"\[view\] partition_by \(line 13\): give calls and partition_by, or query "
            r".*\[view\] query \(line 14\)",
        ),
        (
            "query = ",
            'calls = ["lag(x) OVER (ORDER BY ts) AS p"]\nquery = ',
            r"\[view\] calls \(line 13\): give calls .*\[view\] query \(line 14\) is set too",
        ),
        ("FROM source", "FROM events", r"\[view\] query \(line 13\): FROM events: .*write FROM source"),
        (
            "WHERE x > 0",
            "HAVING x > 0",
            r"\[view\] query \(line 13\): .*HAVING without GROUP BY \(one group of every row\)",
        ),
        (" AS s\n", "\n", r"\[view\] query \(line 13\): the window column .* needs a name: add AS <name>"),
        ("sum(x)", "hll_sketch_agg(x)", r"\[view\] query \(line 13\): column 's': (?i:hll_sketch_agg)"),
        (
            'emit = "on_window_close"',
            'emit = "on_update"\nrow_key = ["id"]',
            r"\[view\] query \(line 13\): emit on update keeps the table keyed .*add id to the SELECT list",
        ),
        ('query = """', 'calls = """', r"\[view\] calls \(line 13\): a list of text"),
        (
            "WHERE x > 0",
            "WHERE x > 0 QUALIFY sum(x) OVER (ORDER BY ts) > 0",
            r"\[view\] query \(line 13\): QUALIFY SUM\(x\) OVER .*: name the window in the SELECT list",
        ),
    ],
)
def test_bad_queries_name_view_query_and_its_line(tmp_path, old, new, words):
    with pytest.raises(ViewFileError, match=words):
        load_view(write(tmp_path, QUERY_VIEW.replace(old, new, 1)))


def test_a_view_without_calls_or_query_is_refused(tmp_path):
    text = GOOD.replace('calls = ["sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s"]\n', "")
    with pytest.raises(ViewFileError, match=r"\[view\]: missing calls = \[...\] .* or query ="):
        load_view(write(tmp_path, text))


def test_an_outer_select_on_update_keeps_the_tables_key(tmp_path):
    text = QUERY_VIEW.replace('emit = "on_window_close"', 'emit = "on_update"\nrow_key = ["id"]')
    body = text[text.index('query = """') : text.rindex('"""') + 3]
    inner = "SELECT k, id, sum(x) OVER (PARTITION BY k ORDER BY ts) AS s FROM source"
    view = load_view(write(tmp_path, text.replace(body, f'query = "SELECT * FROM ({inner}) WHERE s > 0"')))
    assert view.query.filter == "s > 0" and view.query.names == ["k", "id", "s"]
    outer = f'query = "SELECT k, s FROM ({inner}) WHERE s > 0"'
    with pytest.raises(ViewFileError, match=r"\[view\] query \(line 13\): .*add id to the SELECT list"):
        load_view(write(tmp_path, text.replace(body, outer)))


def _started(checkpoint, fingerprint=None):
    """A checkpoint Spark has written offsets into, with the view fingerprint ``fingerprint``."""
    import json

    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1")
    if fingerprint is not None:
        (checkpoint / "overwindow-view.json").write_text(json.dumps(fingerprint))


@pytest.mark.parametrize(
    "given, started, hosting, chosen",
    [
        (None, None, 64, True),  # a new checkpoint: buckets as overWindow chooses them
        (None, {"key_buckets": "chosen"}, 64, True),  # ... and so when started on chosen buckets
        (None, {"key_buckets": 64}, 64, False),  # an earlier release's default: 64 given
        (None, {"key_buckets": 8}, 8, False),  # a started one goes on as it was started
        (None, {"key_buckets": None}, None, False),  # ... per key
        (None, "no fingerprint", None, False),  # started by an older overwindow: per key
        ('"per key"', None, None, False),
        ("16", {"key_buckets": 16}, 16, False),
        ('"chosen"', "no fingerprint", 64, True),  # its record gone: chosen says how it started
        ('"chosen"', {"key_buckets": None}, 64, True),  # as written, whatever was recorded
    ],
)
def test_window_close_hosts_key_buckets_by_default_and_a_started_checkpoint_keeps_its_own(
    tmp_path, given, started, hosting, chosen
):
    """Chosen buckets' count follows the shuffle partitions when the query is built (the job gives
    it a started checkpoint's: tests/test_cli.py); the view knows only that it runs on them."""
    text = (
        GOOD
        if given is None
        else GOOD.replace('emit = "on_window_close"', f'emit = "on_window_close"\nkey_buckets = {given}')
    )
    if started is not None:
        _started(tmp_path / "chk", None if started == "no fingerprint" else started)
    view = load_view(write(tmp_path, text))
    assert (view.spec.key_buckets, view.spec.buckets_chosen) == (hosting, chosen)
    per_key_kept = given is None and hosting is None
    assert (
        any("runs a state per key, as the checkpoint was started" in w for w in view.warnings) == per_key_kept
    )


@pytest.mark.parametrize(
    "emit, given, chosen, hosting",
    [
        ("on_window_close", None, True, 64),  # not read: buckets as OverWindow chooses them
        ("on_update", None, True, 64),  # its [watermark] bounds the state
        ("on_window_close", "64", False, 64),
        ("on_window_close", '"per key"', False, None),
    ],
)
def test_a_remote_checkpoint_runs_the_buckets_overwindow_chooses(tmp_path, emit, given, chosen, hosting):
    """A remote checkpoint is not read, so the view cannot know whether an older overwindow started it
    per key; chosen buckets group by a TINYINT, which Spark refuses to run on such a checkpoint (64
    BIGINT buckets would read a state started per key on BIGINT keys as empty buckets)."""
    extra = f"\nkey_buckets = {given}" if given else ""
    text = GOOD.replace('emit = "on_window_close"', f'emit = "{emit}"{extra}')
    text = text.replace('checkpoint = "chk"', 'checkpoint = "s3a://bucket/chk"')
    view = load_view(write(tmp_path, text))
    assert (view.spec.key_buckets, view.spec.buckets_chosen) == (hosting, chosen)
    assert all(spec is view.spec for _, spec in view.groups)


@pytest.mark.parametrize(
    "watermark, layout, given, hosting",
    [
        (True, "whole", None, 64),  # rows behind the watermark leave the state: buckets
        (False, "whole", None, None),  # every live row stays: a bucket would carry all its keys' rows
        (True, "chunked", None, None),  # on buckets the chunked layout measured no faster
        (False, "chunked", "8", 8),  # ... and runs there when asked
    ],
)
def test_emit_on_update_hosts_key_buckets_where_the_watermark_bounds_its_state(
    tmp_path, watermark, layout, given, hosting
):
    extra = f"\nkey_buckets = {given}" if given else ""
    text = GOOD.replace('emit = "on_window_close"', f'emit = "on_update"\nstate_layout = "{layout}"{extra}')
    if not watermark:
        text = text.replace('[watermark]\ncolumn = "ts"\ndelay = "10 seconds"\n', "")
    view = load_view(write(tmp_path, text))
    assert (view.watermark is not None) == watermark
    assert view.spec.key_buckets == hosting


def test_key_buckets_is_a_number_or_per_key(tmp_path):
    bad = GOOD.replace('emit = "on_window_close"', 'emit = "on_window_close"\nkey_buckets = "per row"')
    with pytest.raises(
        ViewFileError,
        match=r'\[view\] key_buckets \(line 16\): a positive whole number, "per key" or "chosen"',
    ):
        load_view(write(tmp_path, bad))


def test_window_close_with_the_chunked_layout_runs_on_key_buckets(tmp_path):
    """state_layout = "chunked" on window close: each key's history an entry of its bucket, so it
    gets the default key buckets; per key it is refused in the view's words."""
    chunked = GOOD.replace('emit = "on_window_close"', 'emit = "on_window_close"\nstate_layout = "chunked"')
    view = load_view(write(tmp_path, chunked))
    assert (view.spec.state_layout, view.spec.key_buckets) == ("chunked", 64)
    per_key = chunked.replace('state_layout = "chunked"', 'state_layout = "chunked"\nkey_buckets = "per key"')
    with pytest.raises(
        ViewFileError, match='state_layout = "chunked" on emit on window close .* key_buckets'
    ):
        load_view(write(tmp_path, per_key))


def test_empty_values_are_refused_and_a_home_folder_is_read(tmp_path, monkeypatch):
    """Issue 40, item 9: ``checkpoint = ""`` (the view's own folder), ``table = ""`` and the like were
    accepted without a word, and ``~/chk`` made a folder named ``~``."""
    for key, line in (("checkpoint", 21), ("table", 20), ("path", 19)):
        text = re.sub(rf'^{key} = ".*"$', f'{key} = ""', GOOD.split("[sink]")[1], flags=re.M)
        with pytest.raises(ViewFileError, match=rf"\[sink\] {key} \(line {line}\): empty; give a value"):
            load_view(write(tmp_path, GOOD.split("[sink]")[0] + "[sink]" + text))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    view = load_view(write(tmp_path, GOOD.replace('checkpoint = "chk"', 'checkpoint = "~/chk"')))
    assert view.checkpoint == str(tmp_path / "home" / "chk")


def test_an_expression_partition_with_a_row_key_on_update_is_refused(tmp_path):
    """PARTITION BY an expression Spark computes is a view's to use (tests/pipeline/test_view_query.py
    runs one); on update with a row key, a row updated into another partition of the expression would
    reach a table keyed by (the PARTITION BY columns, the row key) as an upsert and a delete of one
    key: refused, naming the query and the way out."""
    text = QUERY_VIEW.replace("PARTITION BY k", "PARTITION BY k, date_trunc('HOUR', ts)").replace(
        'emit = "on_window_close"', 'emit = "on_update"\nrow_key = ["x"]'
    )
    with pytest.raises(ViewFileError, match=r"\[view\] query \(line \d+\): PARTITION BY DATE_TRUNC.*row_key"):
        load_view(write(tmp_path, text))
    assert load_view(write(tmp_path, text.replace('row_key = ["x"]', ""))).partition_by == ["k"]


def test_a_group_by_query_keys_the_table_by_its_keys_on_update_and_on_window_close(tmp_path):
    daily = QUERY_VIEW.replace(
        "SELECT k, ts, x * 2 AS x2, sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 3 PRECEDING) AS s",
        "SELECT k, to_date(ts) AS day, sum(x) AS total, "
        "lag(sum(x)) OVER (PARTITION BY k ORDER BY to_date(ts)) AS p",
    ).replace("WHERE x > 0", "WHERE x > 0 GROUP BY k, to_date(ts)")
    assert load_view(write(tmp_path, daily)).key == ["k", "day"]  # on window close: its days close
    on_update = daily.replace('emit = "on_window_close"', 'emit = "on_update"')
    assert load_view(write(tmp_path, on_update)).key == ["k", "day"]
    hidden = on_update.replace("to_date(ts) AS day, ", "")
    with pytest.raises(
        ViewFileError, match=r"GROUP BY TO_DATE\(ts\): .*add TO_DATE\(ts\) to the SELECT list"
    ):
        load_view(write(tmp_path, hidden))
    # a CDC source under a GROUP BY: its row key finds the source rows; the table stays keyed by the
    # GROUP BY keys
    cdc = on_update.replace('emit = "on_update"', 'emit = "on_update"\nrow_key = ["x"]\nop_column = "op"')
    assert load_view(write(tmp_path, cdc.replace("x DOUBLE", "x DOUBLE, op STRING"))).key == ["k", "day"]
    with pytest.raises(
        ViewFileError, match=r"\[view\] op_column \(line \d+\): op_column = \"op\" needs row_key"
    ):
        load_view(write(tmp_path, cdc.replace('row_key = ["x"]\n', "")))


def test_a_group_by_on_window_close_is_refused_where_a_closed_group_could_change_rows_emitted_before(
    tmp_path,
):
    """On window close each group is emitted once: refused before Spark starts, at [view] query and
    its line, where no GROUP BY key is a time bucket of the watermarked column, where a window's
    ORDER BY does not start with it ascending or reads past the current row, and with a row_key."""
    daily = QUERY_VIEW.replace(
        "SELECT k, ts, x * 2 AS x2, sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 3 PRECEDING) AS s",
        "SELECT k, date_trunc('HOUR', ts) AS hour, count(*) AS n, "
        "sum(count(*)) OVER (PARTITION BY k ORDER BY date_trunc('HOUR', ts) ROWS 2 PRECEDING) AS n3",
    ).replace("WHERE x > 0", "WHERE x > 0 GROUP BY k, date_trunc('HOUR', ts)")
    assert load_view(write(tmp_path, daily)).key == ["k", "hour"]
    no_time_key = daily.replace("k, date_trunc('HOUR', ts) AS hour", "k, x").replace(
        "GROUP BY k, date_trunc('HOUR', ts)", "GROUP BY k, x"
    )
    refused = [
        (no_time_key, r"GROUP BY k, x on window close: .*a time bucket of `ts`: the column itself, to_date"),
        (
            daily.replace("ROWS 2 PRECEDING", "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING"),
            r"SUM\(COUNT\(\*\)\) OVER .* reads rows after the current one .*emit = \"on_update\"",
        ),
        (
            daily.replace("ORDER BY date_trunc('HOUR', ts)", "ORDER BY count(*)"),
            r".*start the ORDER BY with a GROUP BY time key ascending \(DATE_TRUNC",
        ),
        (
            daily.replace("sum(count(*)) OVER", "percent_rank() OVER").replace(" ROWS 2 PRECEDING", ""),
            r"PERCENT_RANK\(\) OVER .* percent_rank\(\) needs the partition's final size",
        ),
    ]
    for text, message in refused:
        with pytest.raises(ViewFileError, match=r"\[view\] query \(line \d+\): " + message):
            load_view(write(tmp_path, text))
    with pytest.raises(ViewFileError, match=r"\[view\] row_key \(line \d+\): .*leave out row_key"):
        load_view(
            write(
                tmp_path,
                daily.replace('emit = "on_window_close"', 'emit = "on_window_close"\nrow_key = ["x"]'),
            )
        )
