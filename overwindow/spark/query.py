"""A window query's SQL text read for ``overwindow.sql`` and a view file's ``query``: ``SELECT
<columns> FROM <table> [WHERE ...] [GROUP BY ... [HAVING ...]] [QUALIFY ...]``, or ``SELECT <names or
*> FROM (<that>) [WHERE ...]``, read with sqlglot in Spark's dialect into a ``Query`` (other clauses
refused in SQL words), and what the view checks read of it before Spark starts (its result names,
its filter's columns, its input columns). ``overwindow.spark.select`` runs it. O(query size).

>>> parse_query("SELECT k, lag(x) OVER (ORDER BY ts) AS p FROM v QUALIFY p > 0").filter
'p > 0'
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.expr import DIALECT, read_sql


@dataclass(frozen=True)
class Query:
    """A window query read by :func:`parse_query`: the table after FROM (as written), the WHERE
    condition (Spark SQL, applied before the windows), the SELECT list (sqlglot expressions), the
    filter on its results (QUALIFY, or the WHERE of an outer SELECT; Spark SQL over the SELECT
    list's names) and the outer SELECT's column names (None: all of them)."""

    table: str
    where: str | None
    columns: tuple
    text: str
    filter: str | None = None
    outer: tuple | None = None
    group_by: tuple = ()  # GROUP BY keys (Spark SQL): the windows run over the groups
    having: str | None = None  # HAVING (Spark SQL over the groups): the groups the windows run over

    @property
    def names(self) -> list[str] | None:
        """The result's columns as written (None when a ``*`` leaves them to the table's schema)."""
        if self.outer is not None:
            return list(self.outer)
        if any(isinstance(e, exp.Star) for e in self.columns):
            return None
        return [e.alias_or_name for e in self.columns]


def parse_query(query: str, what: str = "overwindow.sql") -> Query:
    """Read ``SELECT <columns> FROM <table> [WHERE <condition>] [QUALIFY <condition>]``, or ``SELECT
    <names or *> FROM (<that>) [WHERE <condition>]``, with sqlglot in Spark's dialect; other clauses
    are refused in SQL words (``what``: who runs it, for the message). O(query size).

    >>> parse_query("SELECT k, lag(x) OVER (ORDER BY ts) AS p FROM v WHERE x > 0").where
    'x > 0'
    >>> q = parse_query("SELECT * FROM (SELECT k, row_number() OVER (ORDER BY ts) AS n FROM v) WHERE n <= 3")
    >>> q.table, q.filter, q.outer
    ('v', 'n <= 3', None)
    >>> parse_query("SELECT t.n FROM (SELECT n, lag(x) OVER (ORDER BY ts) AS p FROM v) t WHERE t.p > 0").outer
    ('n',)
    """
    try:
        tree = read_sql(query)
    except sqlglot.errors.ParseError as e:
        raise WindowSpecError(f"cannot parse {query!r}: {e}") from None
    if not isinstance(tree, exp.Select):
        raise WindowSpecError(f"{what} runs one SELECT ... FROM <view>, got {query!r}")
    source = tree.args.get("from") or tree.args.get("from_")
    if source is not None and isinstance(source.this, exp.Subquery):
        return _outer(tree, source.this, query, what)
    allowed = {"expressions", "from", "where", "from_", "qualify", "group", "having"}
    extra = [k for k, v in tree.args.items() if v and k not in allowed]
    if extra or source is None or not isinstance(source.this, exp.Table):
        clauses = ", ".join(_CLAUSES.get(k, k.upper()) for k in extra) or "this FROM clause"
        raise WindowSpecError(
            f"{what} runs SELECT <columns> FROM <view> [WHERE <condition>] [GROUP BY <keys> [HAVING "
            "<condition>]] [QUALIFY <condition>] over "
            f"one view or table; {clauses} is not supported yet, in {query!r}"
        )
    where, qualify, group = tree.args.get("where"), tree.args.get("qualify"), tree.args.get("group")
    having = tree.args.get("having")
    if group is not None:
        _check_group_by(group, query, what)
    elif having is not None:
        raise WindowSpecError(
            f"{what} runs windows over GROUP BY <keys> [HAVING <condition>]; HAVING without GROUP BY (one "
            f"group of every row) is not supported yet, in {query!r}"
        )
    return Query(
        table=source.this.sql(dialect=DIALECT),
        where=None if where is None else where.this.sql(dialect=DIALECT),
        columns=tuple(tree.expressions),
        text=query,
        filter=None if qualify is None else _filter(qualify.this, "QUALIFY", query),
        group_by=() if group is None else tuple(k.sql(dialect=DIALECT) for k in group.expressions),
        having=None if having is None else having.this.sql(dialect=DIALECT),
    )


def _check_group_by(group: exp.Group, query: str, what: str) -> None:
    """Refuses GROUP BY forms overwindow does not run yet: ROLLUP, CUBE, GROUPING SETS, ALL.

    >>> try:
    ...     _check_group_by(read_sql("SELECT a FROM t GROUP BY ROLLUP(a)").args["group"], "q", "sql")
    ... except WindowSpecError as e:
    ...     print(str(e).split(";")[1])
     GROUP BY ROLLUP (a) is not supported yet, in 'q'
    """
    odd = [
        k
        for k in group.expressions
        if isinstance(k, (exp.Rollup, exp.Cube, exp.GroupingSets)) or k.find(exp.AggFunc, exp.Window)
    ]
    if odd or any(v for k, v in group.args.items() if k != "expressions") or not group.expressions:
        shown = odd[0].sql(dialect=DIALECT) if odd else group.sql(dialect=DIALECT).removeprefix("GROUP BY ")
        raise WindowSpecError(
            f"{what} runs windows over GROUP BY <keys>; GROUP BY {shown} is not supported yet, in {query!r}"
        )


def _outer(tree: exp.Select, inner: exp.Subquery, query: str, what: str) -> Query:
    """``SELECT <names or *> FROM (<query>) [WHERE <condition>]``: the inner query, its results
    filtered by the outer WHERE (and its own QUALIFY), then the outer SELECT's columns."""
    extra = [k for k, v in tree.args.items() if v and k not in {"expressions", "from", "from_", "where"}]
    listed = [e for e in tree.expressions if not isinstance(e, (exp.Star, exp.Column))]
    if len(tree.expressions) > 1 and any(isinstance(e, exp.Star) for e in tree.expressions):
        listed.append(exp.var("* beside other columns"))  # names, or * alone
    if extra or listed or not isinstance(inner.this, exp.Select):
        clauses = ", ".join(_CLAUSES.get(k, k.upper()) for k in extra)
        found = clauses or (listed[0].sql(dialect=DIALECT) if listed else "a subquery that is not a SELECT")
        raise WindowSpecError(
            f"{what} filters a window query as SELECT <columns or *> FROM (SELECT ... OVER ... FROM "
            f"<view>) WHERE <condition>; {found} is not supported yet, in {query!r}"
        )
    q = parse_query(inner.this.sql(dialect=DIALECT), what)
    where = tree.args.get("where")
    conditions = [c for c in (q.filter, where and _filter(where.this, "WHERE", query)) if c]
    stars = any(isinstance(e, exp.Star) for e in tree.expressions)
    return replace(
        q,
        text=query,
        filter=" AND ".join(f"({c})" for c in conditions)
        if len(conditions) > 1
        else next(iter(conditions), None),
        outer=q.outer if stars else tuple(e.name for e in tree.expressions),
    )


def _filter(condition, clause: str, query: str) -> str:
    """A filter on window results as Spark SQL; a window function inside it is refused (it is
    computed in the SELECT list and filtered by name)."""
    if condition.find(exp.Window) is not None:
        raise WindowSpecError(
            f"{clause} {condition.sql(dialect=DIALECT)}: name the window in the SELECT list "
            f"(row_number() OVER (...) AS rn) and filter on its name ({clause} rn <= 3), in {query!r}"
        )
    condition = condition.copy()
    for column in condition.find_all(exp.Column):  # `t.rn` of an outer query over `(...) AS t`
        column.set("table", None)
    return condition.sql(dialect=DIALECT)


def result_names(query: Query, inputs: list[str]) -> list[str]:
    """The SELECT list's names over input columns ``inputs`` (``*`` expanded), as a filter on the
    results sees them (an unnamed computed column by its SQL, about as Spark names it)."""
    return [
        n
        for e in query.columns
        for n in (inputs if isinstance(e, exp.Star) else [e.alias_or_name or e.sql(dialect=DIALECT)])
    ]


def filter_problem(query: Query, names: list[str]) -> str | None:
    """Why ``query``'s filter and outer SELECT cannot run on a result of columns ``names`` (a name
    they use is not among them), or None."""
    known = {n.lower() for n in names}
    used = (
        []
        if query.filter is None
        else [c.name for c in sqlglot.parse_one(query.filter, read=DIALECT).find_all(exp.Column)]
    )
    for name in [*used, *(query.outer or ())]:
        if name.lower() not in known:
            return (
                f"no column `{name}` among the query's columns ({', '.join(names)}): a filter on window "
                "results and the outer SELECT use the SELECT list's names"
            )
    return None


def query_columns(query: Query) -> list:
    """Every column reference of ``query`` (sqlglot Columns, in its WHERE, SELECT list and HAVING):
    each names an input column. O(query size).

    >>> q = parse_query("SELECT lag(x) OVER (ORDER BY ts) AS p FROM v WHERE k > 0")
    >>> [c.name for c in query_columns(q)]
    ['x', 'ts', 'k']
    """
    where = [] if query.where is None else [sqlglot.parse_one(query.where, read=DIALECT)]
    if query.having is not None:  # its names of SELECT items are their expressions, read above
        from overwindow.spark.grouped import having_condition

        where.append(having_condition(sqlglot.parse_one(query.text, read=DIALECT)))
    return [c for e in [*query.columns, *where] for c in e.find_all(exp.Column)]


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
