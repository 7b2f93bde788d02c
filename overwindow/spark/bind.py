"""The Spark projection of a bound query (``overwindow.logical.bind``): Spark computes, before the
windows, every expression the calls read beyond plain columns, so its values, types and errors are
Spark's for every scalar function; the state machines read plain columns.

A row on which one of those expressions fails (an ANSI error: ``x / y`` with ``y = 0``, a CAST
that cannot be made) must not stop the query: Spark would fail the micro-batch again on every
replay. Each expression is therefore computed under a guard that tells whether it fails on the row
(``failure_sql``); the row's ``__ow_error`` names the first expression that failed (NULL on a good
row) and its computed columns are NULL; the state machines set such a row aside with the reason
(``overwindow.streaming.aside``), count it and keep it out of the view.

Cost: each guarded expression is computed twice per row in the JVM (once under the guard, once for
its value), no Python work. O(size of the expressions) to build.

Example (``events`` a stream)::

    bound = bind(spec.expressions)
    events = with_computed(events, bound.pre)   # adds __ow_e0, ..., __ow_error
"""

from __future__ import annotations

from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.bind import ERROR
from overwindow.logical.call import WindowExpression, quote
from overwindow.logical.expr import DIALECT, Expr, read_sql
from overwindow.spark import compat
from overwindow.streaming.contract import CHANGE, DELETE, UPSERT
from overwindow.streaming.topn import rank_condition

_ROW = "__ow_row"  # the guard's lambda variable: the row's columns as one struct


def failure_sql(e: Expr) -> str:
    r"""Spark SQL that is true exactly where computing ``e`` on the row fails (an exception in
    Spark's evaluation), and never fails itself.

    The guard is ``try_to_binary``, whose evaluation catches any exception of its argument (Spark's
    ``TryEval``), over a value that is never NULL unless ``e`` failed: the size of a one-element
    array holding ``e``. ``e`` is computed inside a lambda over the row's columns: Spark's common
    subexpression elimination would otherwise compute a subexpression ``e`` shares with another
    guarded expression (``x / y`` in ``x / y`` and ``(x / y) * 2``) once, ahead of both guards,
    where its exception escapes them; it moves nothing out of a lambda whose every column is read
    through the lambda's variable. O(size of ``e``).

    >>> print(failure_sql(Expr.of("x / y")).replace("), ", "),\n "))
    try_to_binary(CAST(SIZE(TRANSFORM(ARRAY(NAMED_STRUCT('c0', x, 'c1', y)),
     __ow_row -> __ow_row.c0 / __ow_row.c1)) AS STRING),
     'utf-8') IS NULL
    """
    body = e.node.copy()
    columns: dict[str, str] = {}
    for column in list(body.find_all(exp.Column)):
        text = column.sql(dialect=DIALECT)
        field = columns.setdefault(text, f"c{len(columns)}")
        column.replace(exp.column(field, table=_ROW))
    fields = ", ".join(f"'{field}', {text}" for text, field in columns.items()) or "'c', 0"
    row = f"ARRAY(NAMED_STRUCT({fields}))"
    size = f"SIZE(TRANSFORM({row}, {_ROW} -> {body.sql(dialect=DIALECT)}))"
    return f"try_to_binary(CAST({size} AS STRING), 'utf-8') IS NULL"


def with_computed(df, pre: tuple[tuple[str, Expr], ...]):
    """``df`` with each of ``pre``'s (name, expression) computed by Spark as a column of that name,
    NULL where it fails, and ``__ow_error``: the SQL of the first expression that fails on the row
    (NULL where none does). ``df`` itself when ``pre`` is empty. Classic Spark and Spark Connect.
    O(expressions) to build; twice each expression per row to run."""
    if not pre:
        return df
    F = compat.functions(df)
    failed = {name: F.expr(failure_sql(e)) for name, e in pre}
    # CASE WHEN failed THEN NULL ELSE e END: Spark computes the value of a CASE with one branch
    # and no ELSE ahead of the CASE when it is shared, the ELSE of a NULL keeps it inside
    columns = {name: F.when(failed[name], F.lit(None)).otherwise(F.expr(e.sql)) for name, e in pre}
    # a row keeps the first failure named: one of an earlier projection, else of these
    error = F.lit(None).cast("string")
    for name, e in reversed(pre):
        error = F.when(failed[name], F.lit(e.sql)).otherwise(error)
    if ERROR in df.columns:
        error = F.coalesce(F.col(ERROR), error)
    return df.withColumns({**columns, ERROR: error})


def results_in_spark(spec):
    """(``spec`` as its machine runs it: each call a window column of its own, under its alias, and
    of its ``qualify`` only the Top-N bounds on its ranking columns (``topn.rank_condition``); what
    Spark computes after the windows: each expression over calls (``price - lag(price) OVER w``) as
    (its alias, the expression); ``spec``'s ``qualify`` as Spark SQL, which Spark applies after
    them (``with_filter``), else None). So Spark computes every expression of a query but its
    window calls, QUALIFY included, and the machine, checking a condition every row in the result
    passes, still deletes a row leaving a Top-N and keeps about N rows per partition. O(calls).

    >>> from overwindow.spec import OverWindow
    >>> p, d = "lag(x) OVER (ORDER BY t) AS p", "x - lag(x) OVER (ORDER BY t) AS d"
    >>> spec = OverWindow(p, d, qualify="d > 0")
    >>> machine, post, condition = results_in_spark(spec)
    >>> machine.aliases, [(a, e.sql) for a, e in post], condition, machine.qualify
    (('p', '__d_w0'), [('d', 'x - `__d_w0`')], 'd > 0', None)
    >>> spec = OverWindow("rank() OVER (ORDER BY t) AS r", qualify="r <= 3 AND x > 0")
    >>> machine, _, condition = results_in_spark(spec)
    >>> condition, machine.qualify.sql
    ('r <= 3 AND x > 0', 'r <= 3')
    """
    post = tuple((e.alias, e.expr) for e in spec.expressions if e.expr is not None)
    condition = spec.qualify
    if not post and condition is None:
        return spec, (), None
    calls = []
    for e in spec.expressions:
        calls += [e] if e.expr is None else [WindowExpression(c.alias, (c,), None, str(c)) for c in e.calls]
    bound = None if condition is None else rank_condition(condition, calls)
    machine = spec.over(calls, qualify=None if bound is None else bound.sql)
    if spec.carried is not None:  # what Spark computes after the windows reads rows' columns too
        read = [*(c for _, e in post for c in e.columns()), *(condition.columns() if condition else ())]
        machine = machine.carrying([*spec.carried, *read])
    return machine, post, None if condition is None else condition.sql


def with_results(out, post: tuple[tuple[str, Expr], ...], emit: str, keep_errors: bool = False):
    """``out`` (a machine's output: input columns and window columns) with each of ``post``'s
    (name, expression over those columns) computed by Spark after the windows
    (``price - lag(price) OVER w``, ``round(avg(x) OVER w, 2)``). A row one of them fails on is not
    in the result: on window close it is left out, on update its change becomes a delete (it leaves
    the table). ``keep_errors``: the row stays, with ``__ow_error`` naming the expression, for the
    caller to keep aside (the main job's dead letter); else ``__ow_error`` is dropped and the rows
    left out are counted in the query's observed metrics (``count_aside``). ``out`` itself without
    ``post``. O(expressions) to build; twice each expression per row to run."""
    if not post:
        return out
    F = compat.functions(out)
    out = with_computed(out, post)
    failed = F.col(ERROR).isNotNull()
    if emit == "on_update":
        out = out.withColumn(CHANGE, F.when(failed, F.lit(DELETE)).otherwise(F.col(CHANGE)))
    if keep_errors:
        return out
    out = count_aside(out, failed)
    return (out if emit == "on_update" else out.where(~failed)).drop(ERROR)


def with_filter(out, condition: str, emit: str, keep_errors: bool = False):
    """``out`` filtered by ``condition`` (Spark SQL over its columns; NULL fails, as in WHERE): on
    window close a row failing it is left out; on update an upsert failing it becomes a delete (the
    rows' previous results are not at hand here: a row that never passed is deleted too, which a
    keyed table ignores). A row the condition itself fails on (an error) is handled as
    ``with_results`` handles one."""
    F = compat.functions(out)
    kind = out.select(F.expr(condition)).schema.fields[0].dataType.simpleString()
    if kind not in ("boolean", "void"):  # Spark's type of it, before the query starts
        written = _bare(condition)
        raise WindowSpecError(f"qualify={written!r} must be a condition (BOOLEAN), not {kind.upper()}")
    name = "__ow_kept"
    out = with_results(out, ((name, Expr.of(f"coalesce({condition}, false)")),), emit, keep_errors)
    kept = F.col(name)
    if emit == "on_update":  # a recomputed row failing the filter leaves the table
        out = out.withColumn(
            CHANGE, F.when((F.col(CHANGE) == UPSERT) & ~kept, F.lit(DELETE)).otherwise(F.col(CHANGE))
        )
    else:
        out = out.where(kept | F.col(ERROR).isNotNull() if keep_errors else kept)
    return out.drop(name)


def _bare(condition: str) -> str:
    """``condition`` with the backquotes its names do not need left out, as the user wrote them.

    >>> _bare("`r` + `my x`")
    'r + `my x`'
    """
    tree = read_sql(condition)
    for column in tree.find_all(exp.Column):
        column.this.set("quoted", quote(column.name) != column.name)
    return tree.sql(dialect=DIALECT)


_observed = iter(range(1 << 62))  # observation names unique within the process


def count_aside(out, failed):
    """``out`` counting, per micro-batch, the rows ``failed`` is true on (rows an expression after
    the windows failed on), in the streaming query's observed metrics as ``overwindow_aside_<n>``:
    ``{"set_aside": count}``. O(1) to build."""
    F = compat.functions(out)
    return out.observe(f"overwindow_aside_{next(_observed)}", F.count(F.when(failed, 1)).alias("set_aside"))


def spark_error(spark, text: str, record: str, schema) -> str | None:
    """Spark's own error computing the expression ``text`` over one row, ``record`` (the row as JSON,
    read with ``schema``, a StructType holding its columns): the first line of Spark's message, its
    error class first (``[DIVIDE_BY_ZERO] Division by zero. ...``); None where Spark computes it, or
    cannot read it over those columns (an expression over window results). One small Spark job.

    What the guard (``failure_sql``) tells is only that the expression failed on the row; this is
    what tells the user why, in Spark's words, for the rows kept in a dead letter.
    """
    from pyspark.errors import AnalysisException, PySparkException

    raw = spark.createDataFrame([(record,)], "r STRING")
    row = raw.select(compat.functions(raw).from_json("r", schema).alias("r"))
    try:
        row.select("r.*").selectExpr(text).collect()
    except AnalysisException:
        return None
    except PySparkException as e:
        return str(e).strip().splitlines()[0]
    return None
