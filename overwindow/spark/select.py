"""``overwindow.select`` and ``overwindow.sql``: a PySpark user's window query, unchanged, on a stream.

``select(df, *columns)`` takes what ``df.select`` takes (column names, Columns, and window functions
as PySpark Columns ``F.lag("x").over(w)`` or as SQL text ``"lag(x) OVER (PARTITION BY k ORDER BY ts)
AS prev"``), translates every window column into overwindow's calls (``overwindow.spark.columns``,
then ``overwindow.logical.parse_window``), and runs them as ``df.groupBy(<PARTITION BY>).overWindow(
OverWindow(*calls, ...))``: the streaming DataFrame it returns has the requested columns in the
requested order, named and typed as Spark's batch ``df.select(*columns)`` names and types them
(emit on update appends ``_change``, and ``_row_id`` without a ``rowKey``). ``sql(spark, "SELECT ...
FROM v [WHERE ...] [QUALIFY ...]")`` reads the query with sqlglot and calls ``select`` over the
temporary view, then filters the window results (Top-N, deduplication). The view job runs a view
file's ``query`` through the same ``parse_query`` / ``run_query``.

Windows sharing one PARTITION BY and ORDER BY run as one ``overWindow``; windows over several run
as one query of ``overwindow.spark.fanout`` (a machine per window group, then whole rows), where a
column may also combine windows of several groups (``a - b`` of two such windows).

Cost: the translation is O(size of the columns' expressions), plus one analysis of
``df.select(*columns)`` by Spark for the output names; the query is overWindow's.

Example (``events`` a stream watermarked on ``ts``)::

    w = Window.partitionBy("k").orderBy("ts")
    out = overwindow.select(events, "k", "ts", "x", F.lag("x").over(w).alias("prev"))
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.bind import ERROR, bind
from overwindow.logical.call import WindowExpression, quote
from overwindow.logical.expr import DIALECT, Expr, for_spark, read_sql
from overwindow.logical.parse import parse_window
from overwindow.spark import column_sql, compat, pandas_udf
from overwindow.spark import columns as C
from overwindow.spark.bind import with_computed, with_filter, with_results
from overwindow.spark.fanout import over_windows
from overwindow.spark.query import Query, filter_problem, parse_query
from overwindow.spec import OverWindow
from overwindow.streaming.contract import CHANGE, ROW_ID
from overwindow.streaming.topn import rank_condition


@dataclass
class _Item:
    """One requested column: carried through (``carry``: what to select from overWindow's output)
    or a window column (``sql``: its SQL without alias, ``alias``: the alias the user gave)."""

    spark: object  # what Spark's own df.select takes for it (a name or a Column)
    carry: object = None
    sql: str = ""
    alias: str | None = None
    name: str = ""  # Spark's output name, filled in by _names
    window: WindowExpression | None = None
    source: str | None = None  # the input column it carries unchanged, if it is one


def select(
    df,
    *columns,
    emit: str = "on_window_close",
    rowKey=None,
    opColumn: str | None = None,
    sourceOrder=None,
    stateLayout: str = "whole",
    maxRowsPerKey: int | None = None,
    keyBuckets: int | str | None = None,
    stateTtl=None,
    qualify: str | None = None,
    _keep=None,
    _append: bool = False,
):
    """``df.select(*columns)`` with window functions, on a streaming DataFrame.

    ``columns``: names (``"k"``, ``"*"``), Columns without a window (``F.col("x")``, ``F.col("x") +
    1``: computed by Spark on overwindow's output), PySpark window Columns (``F.lag("x", 2,
    0).over(w)``, ``F.avg("x").over(w.rowsBetween(-9, 0)).alias("a")``, ``(F.col("x") -
    F.lag("x").over(w)).alias("d")``) and SQL text with OVER (``"avg(x) OVER (PARTITION BY k ORDER
    BY ts ROWS 9 PRECEDING) AS a"``, or ``F.expr(...)``). The keyword options are OverWindow's;
    ``*`` leaves out the ``opColumn`` and ``sourceOrder`` columns (what a change does and where it
    stands in its source), which the result never has.
    Refuses with a WindowSpecError, before any query starts, what overwindow cannot translate (a
    Python UDF, a function it lacks). Windows over several PARTITION BY or ORDER BY run as one
    query (``overwindow.spark.fanout``), a column combining them computed over the whole row, always
    on key buckets (``keyBuckets``, chosen as ``OverWindow.hosted`` chooses unless given; ``"per
    key"`` does not apply there).
    ``qualify``: a condition on the result (SQL over its window columns and the input columns it
    carries unchanged, by their names in the result: ``"rn <= 3"``), as SQL's QUALIFY: on window
    close a row failing it is not emitted; on update the changelog keeps exactly the rows passing it
    (a row entering is upserted, one leaving deleted, one staying outside not emitted).
    O(expression size) to translate.

    Example::

        w = Window.partitionBy("k").orderBy("ts")
        overwindow.select(events.withWatermark("ts", "1 minute"), "k", F.lag("x").over(w))
    """
    F = compat.functions(df)
    # not part of the rows: the op column and where each change stands in its source
    hidden = (opColumn, *([sourceOrder] if isinstance(sourceOrder, str) else sourceOrder or ()))
    items = [item for c in columns for item in _items(df, c, F, hidden)]
    if not items:
        raise WindowSpecError("overwindow.select needs at least one column")
    windows = [i for i in items if i.sql]
    if not windows:
        raise WindowSpecError(
            "overwindow.select found no window function (... OVER ...) among the columns; use df.select"
        )
    _names(df, items)
    inputs = {n.lower() for n in df.columns}
    taken: set[str] = set()
    for n, item in enumerate(windows):
        item.sql = pandas_udf.by_name(df, item.sql)  # a pandas_udf Spark's session knows by name
        alias = item.name
        if alias.lower() in inputs or alias.lower() in taken:
            alias = f"_overwindow_{n}"
        taken.add(alias.lower())
        _parse(item, alias)
    options = dict(
        emit=emit,
        rowKey=rowKey,
        opColumn=opColumn,
        sourceOrder=sourceOrder,
        stateLayout=stateLayout,
        maxRowsPerKey=maxRowsPerKey,
        keyBuckets=keyBuckets,
        stateTtl=stateTtl,
    )
    condition = None if qualify is None else _in_machine_names(qualify, items)
    groups, _ = window_groups(windows, emit)
    # Spark computes the expressions the windows read, PARTITION BY keys included (bind); each
    # spec is built over what the user wrote, so its checks speak of that, and runs over Spark's
    # columns
    bound = bind([i.window for i in windows])
    for item, window in zip(windows, bound.expressions):
        item.window = window
    runs, computed = window_groups(windows, emit)
    several = len(groups) > 1  # one query, one operator per kind of work (overwindow.spark.fanout)
    try:
        specs = [
            (
                _key_names(keys),
                OverWindow(*ws, qualify=None if several else condition, **options).over(run, bound.pre),
            )
            for (_, ws), (keys, run) in zip(groups, runs)
        ]
        if not _append:  # a GROUP BY's changelog (overwindow.spark.grouped) names its own columns
            specs[0][1].check_columns(df.columns)
        carried = _carried(items)
        if not several and not _append and carried is not None:
            # held: what the result carries, and what Spark computes after the windows reads
            read = [c for w in computed for c in w.expr.columns()]
            specs = [(keys, spec.carrying([*carried, *read])) for keys, spec in specs]
        df = with_computed(df, bound.pre)
        if several:  # Spark applies the condition; the row assembly its Top-N bounds (as overWindow)
            calls = [e for _, spec in specs for e in spec.expressions]
            bound = None if condition is None else rank_condition(Expr.of(condition), calls)
            bound = None if bound is None else bound.sql
            out = over_windows(df, specs, qualify=bound, keep=_keep, own_columns=_append)
            if condition is not None:
                out = with_filter(out, condition, emit, keep_errors=_keep is not None)
        elif not specs[0][0]:  # _keep: the view job's dead letter for rows set aside (adapter.over_window)
            out = df.overWindow(specs[0][1], _keep, append=_append)
        else:
            keys, spec = specs[0]
            out = df.groupBy(*(F.col(quote(k)) for k in keys)).overWindow(spec, _keep, append=_append)
    except WindowSpecError as e:
        raise type(e)(
            str(e).replace("before groupBy(...).overWindow(...)", "before overwindow.select(...)")
        ) from None
    # what the windows' results go into (price - lag(price) OVER w, a column combining windows of
    # several groups): Spark computes it over each call's own column, after the windows
    out = with_results(out, tuple((w.alias, w.expr) for w in computed), emit, keep_errors=_keep is not None)
    final = [F.col(quote(i.window.alias)).alias(i.name) if i.window is not None else i.carry for i in items]
    if ERROR in out.columns:  # the job keeps the rows an expression failed on aside (job.batch_writer)
        final.append(ERROR)
    if emit == "on_update":
        final.append(CHANGE)
        if not rowKey:
            final.append(ROW_ID)
    return _counted(out.select(*final), out)


def _carried(items: list[_Item]) -> tuple[str, ...] | None:
    """The input columns the result carries unchanged, besides its windows (None: a column is
    computed by Spark from columns only its analysis names). O(items).

    >>> _carried([_Item("k", source="k"), _Item(None, sql="lag(x) OVER (ORDER BY t)")])
    ('k',)
    >>> _carried([_Item("k", source="k"), _Item("x + 1")]) is None
    True
    """
    plain = [i for i in items if not i.sql]
    if any(i.source is None for i in plain):
        return None
    return tuple(i.source for i in plain)


def _in_machine_names(condition: str, items: list[_Item]) -> str:
    """``condition`` over the result's names, written over the names the machine's rows carry (a
    window column's alias, an input column's own name). O(condition size)."""
    names = {
        i.name.lower(): i.source if i.window is None else i.window.alias if i.window.expr is None else None
        for i in items
    }
    try:
        tree = read_sql(condition)
    except sqlglot.errors.ParseError as e:
        raise WindowSpecError(f"qualify={condition!r}: {e}") from None
    for column in list(tree.find_all(exp.Column)):
        name = names.get(column.name.lower())
        if name is None:
            raise WindowSpecError(
                f"qualify={condition!r}: `{column.name}` is not a window column or an input column of "
                "the result (a column computed from others is computed by Spark after the windows)"
            )
        column.replace(exp.column(name, quoted=True))
    return tree.sql(dialect=DIALECT)


def machine_filter(query: Query, inputs: list[str]) -> bool:
    """Whether ``query``'s filter names only window columns and input columns carried unchanged
    (so the state machines apply it, as ``select(qualify=...)``); else Spark filters the result."""
    plain = set()
    for e in query.columns:
        if isinstance(e, exp.Star):
            plain |= {n.lower() for n in inputs}
        elif isinstance(e.unalias(), (exp.Window, exp.Column)):  # a window call, or carried
            plain.add(e.alias_or_name.lower())
    used = sqlglot.parse_one(query.filter, read=DIALECT).find_all(exp.Column)
    return all(c.name.lower() in plain for c in used)


def _counted(result, out):
    """``result`` (a DataFrame derived from overWindow's ``out``) carrying ``out``'s job counters."""
    counts = getattr(out, "overwindow_counts", None)
    if counts is not None:
        result.overwindow_counts = counts
    return result


def sql(spark, query: str, **options):
    """``SELECT <columns> FROM <view> [WHERE <condition>] [QUALIFY <condition>]`` with window
    functions, over a (streaming) temporary view or table, as :func:`select` runs it (``options``:
    OverWindow's); or ``SELECT * FROM (<that query>) WHERE <condition>``. The query is read with
    sqlglot in Spark's dialect; WHERE is applied before the windows, as SQL does, and QUALIFY (or
    the outer WHERE) to the window results: on window close a row failing it is not emitted, on
    update only rows entering the filtered result (upserts), changing inside it (upserts) or leaving
    it (deletes) are emitted.

    Example::

        overwindow.sql(spark, "SELECT k, lag(x) OVER (PARTITION BY k ORDER BY ts) AS p FROM v")
    """
    q = parse_query(query)
    return run_query(spark.table(q.table), q, **options)


def run_query(df, query: Query, _keep=None, **options):
    """The streaming DataFrame of ``query`` over ``df`` (the table after FROM): WHERE with
    ``df.where``, then :func:`select` of the SELECT list (window columns as text, the others as
    ``F.expr``), then the filter on its results and the outer SELECT's columns. A filter over window
    columns and input columns is the machines' ``qualify`` (on update only rows entering, changing
    inside or leaving it are emitted); one over columns Spark computes after the windows is applied
    to the result in Spark (on update a failing upsert becomes a delete, since the row's previous
    results are not at hand there: a row that never passed is deleted too, which a keyed table
    ignores). ``overwindow.sql`` and the view job both run
    queries through here."""
    if query.group_by:  # windows over a GROUP BY: two operators (overwindow.spark.grouped)
        from overwindow.spark.grouped import run_grouped

        return run_grouped(df, query, _keep=_keep, **options)
    if query.where is not None:
        df = df.where(query.where)
    F = compat.functions(df)
    items = []
    for e in query.columns:
        if isinstance(e, exp.Star):
            items.append("*")
        elif e.find(exp.Window) is not None:
            items.append(e.sql(dialect=DIALECT))
        elif isinstance(e.unalias(), exp.Column):  # carried unchanged: a filter may name it
            parts = [p.name for p in e.unalias().parts]
            if (
                len(parts) > 1
                and parts[0].lower()
                == sqlglot.parse_one(query.table, into=exp.Table, read=DIALECT).name.lower()
            ):
                parts = parts[1:]  # the view's own qualifier; what is left may be a struct's field
            col = F.col(".".join(quote(p) for p in parts))
            items.append(col.alias(e.alias) if isinstance(e, exp.Alias) else col)
        else:
            items.append(F.expr(e.sql(dialect=DIALECT)))
    return run_items(df, items, query, _keep=_keep, **options)


def run_items(df, items: list, query: Query, _keep=None, **options):
    """:func:`select` of ``items`` (``query``'s SELECT list as ``select`` takes it) over ``df``,
    then ``query``'s filter on its results and its outer SELECT's columns (:func:`run_query`)."""
    F = compat.functions(df)
    in_machine = query.filter is not None and machine_filter(query, df.columns)
    out = select(df, *items, qualify=query.filter if in_machine else None, _keep=_keep, **options)
    result = out
    if query.filter is not None or query.outer is not None:
        problem = filter_problem(query, [c for c in out.columns if c not in (CHANGE, ROW_ID)])
        if problem:
            raise WindowSpecError(f"{problem}, in {query.text!r}")
    if query.filter is not None and not in_machine:
        emit = options.get("emit", "on_window_close")
        result = with_filter(result, query.filter, emit, keep_errors=_keep is not None)
    if query.outer is not None:
        extra = [c for c in (ERROR, CHANGE, ROW_ID) if c in result.columns]
        result = result.select(*(F.col(quote(n)) for n in query.outer), *extra)
    return _counted(result, out)


def query_groups(query: Query, **options) -> tuple[list[tuple[tuple, OverWindow]], tuple]:
    """The window groups of ``query``'s window columns, without Spark (a view file's check): per
    group (windows sharing PARTITION BY and ORDER BY) its PARTITION BY (logical expressions) and its
    OverWindow (``options``: its keywords); and the columns combining windows of several groups
    (:func:`window_groups`). With no Spark to name them, every window column needs ``AS <name>``.
    Refuses as :func:`select` does. O(query size).

    >>> q = parse_query("SELECT lag(x) OVER (PARTITION BY k ORDER BY ts) AS p FROM v")
    >>> [(keys, spec)], computed = query_groups(q)
    >>> [k.sql for k in keys], spec.order_column
    (['k'], 'ts')
    """
    windows = []
    for e in query.columns:
        if e.find(exp.Window) is None:
            continue
        if not isinstance(e, exp.Alias):
            raise WindowSpecError(f"the window column {e.sql(dialect=DIALECT)} needs a name: add AS <name>")
        item = _Item(spark=None, sql=e.this.sql(dialect=DIALECT), name=e.alias)
        _parse(item, e.alias)
        windows.append(item)
    if not windows:
        raise WindowSpecError("found no window function (... OVER ...) in the SELECT list")
    groups, computed = window_groups(windows, options.get("emit", "on_window_close"))
    return [(keys, OverWindow(*ws, **options)) for keys, ws in groups], computed


def _items(df, column, F, hidden=()) -> list[_Item]:
    """The requested column as items (``*`` expands to the input columns but the ``hidden`` ones,
    named without regard to case as Spark names columns)."""
    if isinstance(column, str):
        if column == "*":
            hide = {h.lower() for h in hidden if h}
            names = [n for n in df.columns if n.lower() not in hide]
            return [_Item(spark=F.col(quote(n)), carry=F.col(quote(n)), source=n) for n in names]
        if not C.sql_has_window(column):
            return [_Item(spark=column, carry=column, source=column)]
        return [_sql_item(column, F.expr(for_spark(column)))]
    node = C.read(column)
    alias = node.name if node.kind == "alias" else None
    body = node.args[0] if node.kind == "alias" else node
    if body.kind == "star":
        return _items(df, "*", F, hidden)
    if body.kind == "column":
        col = F.col(".".join(quote(p) for p in body.name))
        source = body.name[0] if len(body.name) == 1 else None  # a struct's field is computed
        return [_Item(spark=column, carry=col.alias(alias) if alias else col, source=source)]
    if not body.has_window:
        return [_Item(spark=column, carry=column)]
    opaque = C.opaque_parts(body)
    if opaque:
        raise column_sql.Untranslatable(
            f"cannot translate {column} for overwindow: {opaque[0]} is not a window function or "
            "expression overwindow computes (write aggregates in Python as overwindow.Aggregate or a "
            "grouped-aggregate pandas_udf)"
        )
    if body.kind == "sql":
        item = _sql_item(body.text, column)
        item.alias = alias or item.alias
        return [item]
    try:
        text = column_sql.to_sql(body)
    except column_sql.Untranslatable as e:
        raise column_sql.Untranslatable(f"cannot translate {column} for overwindow: {e}") from None
    return [_Item(spark=column, sql=text, alias=alias)]


def _sql_item(text: str, spark_column) -> _Item:
    """A window written as SQL text, ``<expr> [AS alias]``."""
    try:
        tree = read_sql(text)
    except sqlglot.errors.ParseError as e:
        raise WindowSpecError(f"cannot parse {text!r}: {e}") from None
    if isinstance(tree, exp.Alias):
        return _Item(spark=spark_column, sql=tree.this.sql(dialect=DIALECT), alias=tree.alias)
    return _Item(spark=spark_column, sql=tree.sql(dialect=DIALECT))


def _names(df, items: list[_Item]) -> None:
    """Each item's output name as Spark's batch ``df.select`` names it (one analysis)."""
    names = df.select(*(i.spark for i in items)).columns
    for item, name in zip(items, names):
        item.name = name


def _parse(item: _Item, alias: str) -> None:
    """``item.window``: its SQL parsed as ``<sql> AS alias``; errors name the column."""
    try:
        item.window = parse_window(f"{item.sql} AS {quote(alias)}")
    except WindowSpecError as e:
        raise WindowSpecError(f"column {item.name!r}: {e}") from None


def window_groups(
    windows: list[_Item], emit: str = "on_window_close"
) -> tuple[list[tuple[tuple, list[WindowExpression]]], tuple]:
    """The windows grouped by (PARTITION BY as a set, ORDER BY), in order of first appearance: per
    group its PARTITION BY (logical expressions) and its window expressions without it; and the
    columns whose expression combines windows of several groups (``lag(x) OVER (PARTITION BY k
    ...) - lag(x) OVER (PARTITION BY j ...)``): each of their calls joins its group as a window
    column of its own, named by the call's alias, and the column (its expression over those
    aliases) is computed over the whole row (``overwindow.streaming.assemble``). On window close
    (``emit``), whose session machine runs SESSION calls alone, the SESSION calls of a PARTITION BY
    and ORDER BY are a group of their own. O(windows).

    >>> a = _Item(None, window=parse_window("lag(x) OVER (PARTITION BY k ORDER BY t) AS a"), name="a")
    >>> b = _Item(None, window=parse_window("rank() OVER (PARTITION BY j ORDER BY t) AS b"), name="b")
    >>> groups, computed = window_groups([a, b, a])
    >>> [([k.sql for k in keys], [w.alias for w in ws]) for keys, ws in groups], computed
    ([(['k'], ['a', 'a']), (['j'], ['b'])], ())
    >>> d = parse_window("lag(x) OVER (PARTITION BY k ORDER BY t) - rank() OVER (PARTITION BY j "
    ...                  "ORDER BY t) AS d")
    >>> groups, computed = window_groups([_Item(None, window=d, name="d")])
    >>> [([k.sql for k in keys], [w.alias for w in ws]) for keys, ws in groups]
    [(['k'], ['__d_w0']), (['j'], ['__d_w1'])]
    >>> [c.alias for c in computed]
    ['d']
    >>> s = parse_window("sum(x) OVER (PARTITION BY k ORDER BY t SESSION WITH GAP 5) AS s")
    >>> sessions = [a, _Item(None, window=s, name="s")]
    >>> [[w.alias for w in ws] for _, ws in window_groups(sessions)[0]]
    [['a'], ['s']]
    >>> [[w.alias for w in ws] for _, ws in window_groups(sessions, "on_update")[0]]
    [['a', 's']]
    """
    groups: dict = {}
    computed = []

    def add(key, call_partition, expression):
        groups.setdefault(key, (call_partition, []))[1].append(_unpartitioned(expression))

    for item in windows:
        keys = [_group_key(c, emit) for c in item.window.calls]
        if item.window.expr is None:
            add(keys[0], item.window.calls[0].partition_by, item.window)
            continue
        computed.append(item.window)
        for key, call in zip(keys, item.window.calls):
            add(key, call.partition_by, WindowExpression(call.alias, (call,), None, str(call)))
    return list(groups.values()), tuple(computed)


def _group_key(call, emit: str) -> tuple:
    session = emit != "on_update" and call.frame.is_session
    return frozenset(map(str, call.partition_by)), tuple(map(str, call.order_by)), session


def key_column(key) -> str | None:
    """The column a PARTITION BY key (a logical expression) names, None when it is an expression.

    >>> from overwindow.logical.expr import Expr
    >>> key_column(Expr.of("k")), key_column(Expr.of("k % 2"))
    ('k', None)
    """
    node = key.node
    return node.name if isinstance(node, exp.Column) and not node.table else None


def _key_names(keys) -> tuple[str, ...]:
    """PARTITION BY keys as column names (an expression keeps its SQL, which the fan-out refuses)."""
    return tuple(key_column(k) or k.sql for k in keys)


def _unpartitioned(w: WindowExpression) -> WindowExpression:
    return WindowExpression(w.alias, tuple(replace(c, partition_by=()) for c in w.calls), w.expr, w.text)
