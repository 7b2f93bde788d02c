"""``overwindow.select`` and ``overwindow.sql``: a PySpark user's window query, unchanged, on a stream.

``select(df, *columns)`` takes what ``df.select`` takes (column names, Columns, and window functions
as PySpark Columns ``F.lag("x").over(w)`` or as SQL text ``"lag(x) OVER (PARTITION BY k ORDER BY ts)
AS prev"``), translates every window column into overwindow's calls (``overwindow.spark.columns``,
then ``overwindow.logical.parse_window``), and runs them as ``df.groupBy(<PARTITION BY>).overWindow(
OverWindow(*calls, ...))``: the streaming DataFrame it returns has the requested columns in the
requested order, named and typed as Spark's batch ``df.select(*columns)`` names and types them
(emit on update appends ``_change``, and ``_row_id`` without a ``rowKey``). ``sql(spark, "SELECT ...
FROM v [WHERE ...]")`` reads the query with sqlglot and calls ``select`` over the temporary view.

One select runs one ``overWindow``: every window must share one PARTITION BY (and one ORDER BY).
Windows over different PARTITION BY are refused, naming both, until the fan-out hosting of
docs/many-keys.md (section 3.6) lands.

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
from overwindow.logical.call import WindowExpression, quote
from overwindow.logical.expr import DIALECT
from overwindow.logical.parse import parse_window
from overwindow.spark import columns as C
from overwindow.spark import compat
from overwindow.spec import OverWindow
from overwindow.streaming.contract import CHANGE, ROW_ID

_DOCS = "docs/many-keys.md, section 3.6"


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


def select(
    df,
    *columns,
    emit: str = "on_window_close",
    rowKey=None,
    opColumn: str | None = None,
    stateLayout: str = "whole",
    maxRowsPerKey: int | None = None,
    keyBuckets: int | None = None,
    stateTtl=None,
):
    """``df.select(*columns)`` with window functions, on a streaming DataFrame.

    ``columns``: names (``"k"``, ``"*"``), Columns without a window (``F.col("x")``, ``F.col("x") +
    1``: computed by Spark on overwindow's output), PySpark window Columns (``F.lag("x", 2,
    0).over(w)``, ``F.avg("x").over(w.rowsBetween(-9, 0)).alias("a")``, ``(F.col("x") -
    F.lag("x").over(w)).alias("d")``) and SQL text with OVER (``"avg(x) OVER (PARTITION BY k ORDER
    BY ts ROWS 9 PRECEDING) AS a"``, or ``F.expr(...)``). The keyword options are OverWindow's.
    Refuses with a WindowSpecError, before any query starts, what overwindow cannot translate (a
    Python UDF, a function it lacks) and windows over different PARTITION BY or ORDER BY.
    O(expression size) to translate.

    Example::

        w = Window.partitionBy("k").orderBy("ts")
        overwindow.select(events.withWatermark("ts", "1 minute"), "k", F.lag("x").over(w))
    """
    F = _functions(df)
    items = [item for c in columns for item in _items(df, c, F)]
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
        alias = item.name
        if alias.lower() in inputs or alias.lower() in taken:
            alias = f"_overwindow_{n}"
        taken.add(alias.lower())
        _parse(item, alias)
    keys, spec = _group(
        windows,
        "select",
        emit=emit,
        rowKey=rowKey,
        opColumn=opColumn,
        stateLayout=stateLayout,
        maxRowsPerKey=maxRowsPerKey,
        keyBuckets=keyBuckets,
        stateTtl=stateTtl,
    )
    try:
        if not keys:
            out = df.overWindow(spec)
        else:
            out = df.groupBy(*(_key(k, F) for k in keys)).overWindow(spec)
    except WindowSpecError as e:
        raise type(e)(
            str(e).replace("before groupBy(...).overWindow(...)", "before overwindow.select(...)")
        ) from None
    final = [F.col(quote(i.window.alias)).alias(i.name) if i.window is not None else i.carry for i in items]
    if emit == "on_update":
        final.append(CHANGE)
        if not rowKey:
            final.append(ROW_ID)
    result = out.select(*final)
    counts = getattr(out, "overwindow_counts", None)
    if counts is not None:
        result.overwindow_counts = counts
    return result


def sql(spark, query: str, **options):
    """``SELECT <columns> FROM <view> [WHERE <condition>]`` with window functions, over a (streaming)
    temporary view or table, as :func:`select` runs it (``options``: OverWindow's). The query is read
    with sqlglot in Spark's dialect; WHERE is applied before the windows, as SQL does.

    Example::

        overwindow.sql(spark, "SELECT k, lag(x) OVER (PARTITION BY k ORDER BY ts) AS p FROM v")
    """
    q = parse_query(query)
    return run_query(spark.table(q.table), q, **options)


@dataclass(frozen=True)
class Query:
    """A window query read by :func:`parse_query`: the table after FROM (as written), the WHERE
    condition (Spark SQL, applied before the windows) and the SELECT list (sqlglot expressions)."""

    table: str
    where: str | None
    columns: tuple
    text: str


def parse_query(query: str, what: str = "overwindow.sql") -> Query:
    """Read ``SELECT <columns> FROM <table> [WHERE <condition>]`` with sqlglot in Spark's dialect;
    other clauses are refused in SQL words (``what``: who runs it, for the message). O(query size).

    >>> parse_query("SELECT k, lag(x) OVER (ORDER BY ts) AS p FROM v WHERE x > 0").where
    'x > 0'
    """
    try:
        tree = sqlglot.parse_one(query, read=DIALECT)
    except sqlglot.errors.ParseError as e:
        raise WindowSpecError(f"cannot parse {query!r}: {e}") from None
    if not isinstance(tree, exp.Select):
        raise WindowSpecError(f"{what} runs one SELECT ... FROM <view>, got {query!r}")
    allowed = {"expressions", "from", "where", "from_"}
    extra = [k for k, v in tree.args.items() if v and k not in allowed]
    source = tree.args.get("from") or tree.args.get("from_")
    if extra or source is None or not isinstance(source.this, exp.Table):
        clauses = ", ".join(_CLAUSES.get(k, k.upper()) for k in extra) or "this FROM clause"
        raise WindowSpecError(
            f"{what} runs SELECT <columns> FROM <view> [WHERE <condition>] over one view or "
            f"table; {clauses} is not supported yet, in {query!r}"
        )
    where = tree.args.get("where")
    return Query(
        table=source.this.sql(dialect=DIALECT),
        where=None if where is None else where.this.sql(dialect=DIALECT),
        columns=tuple(tree.expressions),
        text=query,
    )


def query_columns(query: Query) -> list:
    """Every column reference of ``query`` (sqlglot Columns, in its WHERE and SELECT list): each
    names an input column. O(query size).

    >>> q = parse_query("SELECT lag(x) OVER (ORDER BY ts) AS p FROM v WHERE k > 0")
    >>> [c.name for c in query_columns(q)]
    ['x', 'ts', 'k']
    """
    where = [] if query.where is None else [sqlglot.parse_one(query.where, read=DIALECT)]
    return [c for e in [*query.columns, *where] for c in e.find_all(exp.Column)]


def run_query(df, query: Query, **options):
    """The streaming DataFrame of ``query`` over ``df`` (the table after FROM): WHERE with
    ``df.where``, then :func:`select` of the SELECT list (window columns as text, the others as
    ``F.expr``). ``overwindow.sql`` and the view job both run queries through here."""
    if query.where is not None:
        df = df.where(query.where)
    F = _functions(df)
    items = []
    for e in query.columns:
        if isinstance(e, exp.Star):
            items.append("*")
        elif e.find(exp.Window) is not None:
            items.append(e.sql(dialect=DIALECT))
        else:
            items.append(F.expr(e.sql(dialect=DIALECT)))
    return select(df, *items, **options)


def query_spec(query: Query, **options) -> tuple[tuple, OverWindow]:
    """The shared PARTITION BY (logical expressions) and the OverWindow (``options``: its keywords)
    of ``query``'s window columns, without Spark (a view file's check): with no Spark to name them,
    every window column needs ``AS <name>``. Refuses as :func:`select` does. O(query size).

    >>> keys, spec = query_spec(parse_query("SELECT lag(x) OVER (PARTITION BY k ORDER BY ts) AS p FROM v"))
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
    return _group(windows, "query", **options)


# sqlglot's names of a SELECT's parts, as SQL writes them
_CLAUSES = {
    "joins": "JOIN",
    "group": "GROUP BY",
    "order": "ORDER BY",
    "sort": "SORT BY",
    "windows": "WINDOW",
    "with": "WITH",
    "with_": "WITH",
    "distinct": "DISTINCT",
    "laterals": "LATERAL VIEW",
}


def _functions(df):
    if compat.is_connect(df):
        from pyspark.sql.connect import functions
    else:
        from pyspark.sql import functions
    return functions


def _items(df, column, F) -> list[_Item]:
    """The requested column as items (``*`` expands to the input columns)."""
    if isinstance(column, str):
        if column == "*":
            return [_Item(spark=F.col(quote(n)), carry=F.col(quote(n))) for n in df.columns]
        if not C.sql_has_window(column):
            return [_Item(spark=column, carry=column)]
        return [_sql_item(column, F.expr(column))]
    node = C.read(column)
    alias = node.name if node.kind == "alias" else None
    body = node.args[0] if node.kind == "alias" else node
    if body.kind == "star":
        return _items(df, "*", F)
    if body.kind == "column":
        col = F.col(".".join(quote(p) for p in body.name))
        return [_Item(spark=column, carry=col.alias(alias) if alias else col)]
    if not body.has_window:
        return [_Item(spark=column, carry=column)]
    opaque = C.opaque_parts(body)
    if opaque:
        raise C.Untranslatable(
            f"cannot translate {column} for overwindow: {opaque[0]} is not a window function or "
            "expression overwindow computes (write aggregates in Python as overwindow.Aggregate)"
        )
    if body.kind == "sql":
        item = _sql_item(body.text, column)
        item.alias = alias or item.alias
        return [item]
    try:
        text = C.to_sql(body)
    except C.Untranslatable as e:
        raise C.Untranslatable(f"cannot translate {column} for overwindow: {e}") from None
    return [_Item(spark=column, sql=text, alias=alias)]


def _sql_item(text: str, spark_column) -> _Item:
    """A window written as SQL text, ``<expr> [AS alias]``."""
    try:
        tree = sqlglot.parse_one(text, read=DIALECT)
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


def _group(windows: list[_Item], unit: str, **options) -> tuple[tuple, OverWindow]:
    """The PARTITION BY every window shares and the one OverWindow (``options``) that runs them
    without it; windows over another PARTITION BY or ORDER BY are refused (``unit``: one select or
    one query)."""
    keys = _shared(windows, "PARTITION BY", lambda c: c.partition_by, unit)
    _shared(windows, "ORDER BY", lambda c: c.order_by, unit)
    return keys, OverWindow(*(_unpartitioned(i.window) for i in windows), **options)


def _shared(windows: list[_Item], clause: str, key, unit: str) -> tuple:
    """The ``clause`` (PARTITION BY or ORDER BY; ``key(call)``: its items, compared as a set for
    PARTITION BY) every window shares, or a WindowSpecError naming two windows that differ (one
    overWindow groups by one key and sorts once)."""
    first = None
    for item in windows:
        for call in item.window.calls:
            if first is None:
                first = (item, call)
                continue
            ours, theirs = key(call), key(first[1])
            same = (
                set(map(str, ours)) == set(map(str, theirs)) if clause == "PARTITION BY" else ours == theirs
            )
            if not same:
                texts = [", ".join(map(str, k)) or "(none)" for k in (theirs, ours)]
                raise WindowSpecError(
                    f"windows over different {clause} in one {unit} are not supported yet: "
                    f"{first[0].name!r} has {clause} {texts[0]}, {item.name!r} has {clause} {texts[1]}. "
                    f"Run one {unit} per {clause} (several windows per query is the next step: {_DOCS})"
                )
    return key(first[1])


def _unpartitioned(w: WindowExpression) -> WindowExpression:
    return WindowExpression(w.alias, tuple(replace(c, partition_by=()) for c in w.calls), w.expr, w.text)


def _key(e, F):
    """A PARTITION BY key for groupBy: the column by name, or the expression as SQL."""
    node = e.node
    if isinstance(node, exp.Column) and not node.table:
        return F.col(quote(node.name))
    return F.expr(e.sql)
