"""A view file's ``[view] query``, read as ``overwindow.sql`` reads a query (``parse_query``,
``query_groups``), so the job runs what ``overwindow.sql`` would: its window groups, calls and
partition set on the View, checked against the rest of the file (the sink's keys on update, a GROUP
BY's closing on window close, the sandbox of an untrusted view); and a spec error in view-file
words, at the key it is about (``spec_problem``).

>>> from overwindow.pipeline.view import View
>>> source = {"schema": "k STRING, ts TIMESTAMP, x DOUBLE"}
>>> view = View("v.toml", source, None, [], [], "on_update", None, None, {}, "chk", trusted=True)
>>> view.options = {"emit": "on_update"}
>>> use_query(view, "SELECT k, ts, lag(x) OVER (PARTITION BY k ORDER BY ts) AS p FROM source")
>>> view.partition_by, view.calls
(['k'], ['LAG(x) OVER (PARTITION BY k ORDER BY ts) AS p'])
"""

from __future__ import annotations

import re

from overwindow.errors import WindowSpecError
from overwindow.pipeline.view import View, ViewFileError
from overwindow.spark.query import parse_query
from overwindow.spark.select import key_column, query_groups


def read_query(view: View, text: str, given: dict) -> None:
    """[view] query: read with overwindow.sql's reader (``parse_query``, ``query_groups``), so the job
    runs what ``overwindow.sql`` would; fills the view's calls, partition and spec. The source is
    named ``source``; PARTITION BY must be columns, and emit on update must keep the sink's key."""
    where = view.where("view", "query")
    for other in ("calls", "partition_by"):
        if other in given:
            raise ViewFileError(
                f"{view.where('view', other)}: give calls and partition_by, or query (whose windows "
                f"say their PARTITION BY), not both; {where} is set too"
            )
    use_query(view, text)


def use_query(view: View, text: str) -> None:
    """The view runs the query ``text`` (``FROM source``) with its ``options``: its query, window
    groups, calls and partition set from it, as overwindow.sql reads a query; ViewFileError naming
    ``[view] query`` otherwise."""
    where = view.where("view", "query")
    try:
        view.query = parse_query(text, "a view's query")
        options = view.options
        if view.query.group_by and view.emit == "on_window_close":  # the windows run on update over
            options = dict(options, emit="on_update")  # the closed groups (overwindow.spark.grouped)
            _closing_groups(view)
        groups, view.computed = query_groups(view.query, **options)
    except WindowSpecError as e:  # at the key it is about (row_key, ...) in view-file words, else the query
        raise ViewFileError(
            spec_problem(view, e) if _spec_key(str(e)) != "calls" else f"{where}: {e}"
        ) from None
    if view.query.table.lower() != "source":
        raise ViewFileError(f"{where}: FROM {view.query.table}: a view reads its [source]; write FROM source")
    check_sandbox(view, [text])
    # a PARTITION BY expression (date_trunc('HOUR', ts)) is Spark's to compute: the groups keep it
    view.groups = [([key_column(k) or k for k in keys], spec) for keys, spec in groups]
    view.spec = groups[0][1]
    columns = [key_column(k) for k in groups[0][0]]
    view.partition_by = [] if view.several else [k for k in columns if k is not None]
    computed = [k.sql for k in groups[0][0] if key_column(k) is None]
    if computed and not view.several and view.emit == "on_update" and view.row_key:
        raise ViewFileError(
            f"{where}: PARTITION BY {computed[0]} on update with row_key: the table is keyed by the "
            "PARTITION BY columns and the row key, so a row updated into another partition of the "
            "expression would reach it as an upsert and a delete of one key; partition by columns of "
            "the [source], or leave out row_key (rows then never move)"
        )
    view.calls = [e.text for _, spec in view.groups for e in spec.expressions]
    if view.query.group_by:
        _grouped(view, where)
        return
    if view.several and view.emit == "on_update" and not view.row_key:
        raise ViewFileError(
            f"{where}: windows over several PARTITION BY or ORDER BY on update need [view] row_key: the "
            "table joins each row's windows by its row key"
        )
    if view.several and view.source.get("late_rows") == "dead_letter":
        raise ViewFileError(
            f"{view.where('source', 'late_rows')}: late rows of windows over several PARTITION BY or ORDER "
            'BY are counted only, not kept yet; remove late_rows = "dead_letter"'
        )
    if view.several and view.spec.state_layout == "chunked":
        raise ViewFileError(
            f"{where}: windows over several PARTITION BY or ORDER BY run on the whole state layout; "
            'remove state_layout = "chunked"'
        )
    if view.emit == "on_update" and view.query.names is not None:
        listed = {n.lower() for n in view.query.names}
        missing = [c for c in view.partition_by + (view.row_key or []) if c.lower() not in listed]
        if missing:
            raise ViewFileError(
                f"{where}: emit on update keeps the table keyed by the PARTITION BY and row_key "
                f"columns; add {', '.join(missing)} to the SELECT list"
            )


def _closing_groups(view: View) -> None:
    """Refuses a GROUP BY whose groups cannot close on window close (``grouped.closing``), or a
    row_key with one (a group is emitted once: no changes of its rows)."""
    from overwindow.spark.grouped import closing

    if view.row_key:
        raise ViewFileError(
            f"{view.where('view', 'row_key')}: windows over a GROUP BY on window close emit each group "
            "once, when the watermark closes it, so they take no changes of rows already grouped: "
            'leave out row_key, or write emit = "on_update"'
        )
    if view.watermark is None:
        raise ViewFileError(
            f'{view.path}: emit = "on_window_close" closes the groups of the GROUP BY as the watermark '
            "passes them: add a [watermark] section on the event-time column its time key buckets"
        )
    try:
        closing(view.query, view.watermark.get("column"))
    except WindowSpecError as e:
        raise ViewFileError(f"{view.where('view', 'query')}: {_view_words(str(e))}") from None


def check_sandbox(view: View, texts: list[str]) -> None:
    """Refuses SQL of an untrusted view that reaches past its source's columns
    (overwindow.pipeline.sandbox), naming the key that holds it."""
    if view.trusted:
        return
    from overwindow.pipeline.sandbox import refuse
    from overwindow.pipeline.spark_strings import SparkStringError, parse_schema

    try:
        columns = parse_schema(view.source["schema"]).fieldNames()
    except SparkStringError:
        columns = None  # validate names the schema's problem
    problems = [p for text in texts for p in refuse(text, view.where("view", view.calls_key), columns)]
    if problems:
        raise ViewFileError("\n".join(dict.fromkeys(problems)))


def _grouped(view: View, where: str) -> None:
    """A query with GROUP BY: its windows run over the groups, on update, keyed by the GROUP BY keys
    (overwindow.spark.grouped), which the SELECT list must show; a CDC source's row_key and
    op_column find the source rows a change applies to."""
    from overwindow.spark.grouped import key_names

    names = key_names(view.query)
    if None in names:
        key = view.query.group_by[names.index(None)]
        raise ViewFileError(
            f"{where}: GROUP BY {key}: the table is keyed by the GROUP BY keys; add {key} to the SELECT list"
        )
    view.group_key, view.partition_by = names, []


# OverWindow's keyword arguments and the view-file keys they come from
_SPEC_WORDS = {
    "opColumn": "op_column",
    "rowKey": "row_key",
    "stateLayout": "state_layout",
    "maxRowsPerKey": "max_rows_per_key",
    "keyBuckets": "key_buckets",
    "stateTtl": "state_ttl",
}


def spec_problem(view: View, error: WindowSpecError) -> str:
    """A spec error as a view-file problem: the [view] key it is about, its line, its words."""
    key = _spec_key(str(error))
    return f"{view.where('view', view.calls_key if key == 'calls' else key)}: {_view_words(str(error))}"


def _spec_key(message: str) -> str:
    """The [view] key a spec error is about (the calls unless it names another argument)."""
    for word, key in _SPEC_WORDS.items():
        if message.startswith(word):
            return key
    return "calls"


def _view_words(message: str) -> str:
    """A spec error in view-file words: ``opColumn='op'`` -> ``op_column = "op"``."""
    for word, key in _SPEC_WORDS.items():
        message = message.replace(word, key)
    return re.sub(r"\b(op_column|row_key|state_layout|emit)='([^']*)'", r'\1 = "\2"', message)
