"""PySpark Columns as overwindow's SQL: ``F.lag("x").over(Window.partitionBy("k").orderBy("ts"))``
becomes ``lag(x) OVER (PARTITION BY k ORDER BY ts ASC NULLS FIRST)``, which
``overwindow.logical.parse_window`` reads into window calls (so every check and message of SQL text
applies to Columns too).

A Column is read without Spark's analyzer, from the expression tree it holds: on Spark Connect the
Python objects of ``pyspark.sql.connect.expressions``, on classic Spark 4.x the JVM's ``ColumnNode``
(through py4j), on classic PySpark 3.5 its unresolved Catalyst expression (through py4j). All are
first turned into one small neutral tree (:class:`Node`), which one renderer prints as SQL
(``overwindow.spark.column_sql``). The
frame is read as the user wrote it (``rowsBetween(-9, 0)``: ``ROWS BETWEEN 9 PRECEDING AND CURRENT
ROW``), never from the analyzed plan, where Spark gives ``lag`` a frame ``ROWS BETWEEN -1 FOLLOWING
AND -1 FOLLOWING`` of its own.

Cost: O(nodes of the Column's expression), one py4j call per node on classic Spark.

>>> from pyspark.sql.connect import functions as F
>>> from pyspark.sql.connect.window import Window
>>> from overwindow.spark.column_sql import to_sql
>>> w = Window.partitionBy("k").orderBy("ts")
>>> to_sql(read(F.avg("x").over(w.rowsBetween(-9, 0)).alias("a")))
'avg(x) OVER (PARTITION BY k ORDER BY ts ASC NULLS FIRST ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS a'
"""

from __future__ import annotations

import decimal
import json
from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp

from overwindow.logical.expr import DIALECT
from overwindow.spark import pandas_udf

# ---------------------------------------------------------------------------------------------
# the neutral tree


@dataclass(frozen=True)
class Node:
    """One node of a Column's expression. ``kind``: ``column`` (``name``: the name parts), ``star``,
    ``literal`` (``value``), ``function`` (``name``, ``args``, ``distinct``), ``cast`` (``args[0]``,
    ``type``), ``sql`` (``text``: SQL written by the user, ``F.expr``), ``case`` (``args``: when,
    then, ..., else or None), ``window`` (``args[0]`` the function, ``partition``, ``order``: nodes
    of kind ``sort``, ``frame``), ``sort`` (``args[0]``, ``descending``, ``nulls_first``), ``alias``
    (``args[0]``, ``name``), ``extract`` (``args``: the value and what it reads of it, ``arr[1]``),
    ``opaque`` (``text``: what overwindow cannot read, e.g. a Python UDF)."""

    kind: str
    name: tuple | str = ()
    args: tuple = ()
    value: object = None
    distinct: bool = False
    type: str = ""
    text: str = ""
    partition: tuple = ()
    order: tuple = ()
    frame: tuple | None = None  # (rows: bool, lower, upper); a bound: "unbounded", 0 (current), int
    descending: bool = False
    nulls_first: bool = True
    session_gap: str = ""  # a window's SESSION WITH GAP, as SQL (``session_window``)

    def walk(self):
        """This node and every node under it (a window's keys too)."""
        yield self
        for child in (*self.args, *self.partition, *self.order):
            if child is not None:
                yield from child.walk()

    @property
    def has_window(self) -> bool:
        """Whether a window function is in it (SQL text included)."""
        return any(n.kind == "window" or (n.kind == "sql" and sql_has_window(n.text)) for n in self.walk())


def sql_has_window(text: str) -> bool:
    try:
        return sqlglot.parse_one(text, read=DIALECT).find(exp.Window) is not None
    except sqlglot.errors.ParseError:
        return False


def opaque_parts(node: Node) -> list[str]:
    """What in ``node`` overwindow cannot read, in words (empty: all of it translates)."""
    return [n.text for n in node.walk() if n.kind == "opaque"]


def _opaque(text: str) -> Node:
    return Node("opaque", text=text)


# ---------------------------------------------------------------------------------------------
# readers


_FRAMELESS = {"lag", "lead"}  # Spark requires a frame of their own; SQL writes none


def read(column) -> Node:
    """The neutral tree of a PySpark Column (classic 3.5 and 4.x, or Connect)."""
    if type(column).__module__.startswith("pyspark.sql.connect"):
        return _connect(column._expr)
    jc = column._jc
    try:
        node = jc.node()
    except Exception:  # PySpark 3.5: a Catalyst expression, no ColumnNode
        return _catalyst(jc.expr())
    return _classic(node)


_RANKING = {"RowNumber", "Rank", "DenseRank", "PercentRank", "CumeDist", "NTile"}


def _catalyst(e) -> Node:
    """A classic PySpark 3.5 Column's Catalyst expression (unresolved, through py4j): window
    functions are Catalyst classes there (``Lag``, ``RowNumber``, ``AggregateExpression(Average)``)
    or ``UnresolvedFunction`` (``F.expr``); parts without a window are taken as their SQL."""
    kind = e.getClass().getSimpleName().rstrip("$")
    children = _seq(e.children())
    if kind == "UnresolvedAttribute":
        return Node("column", name=tuple(_seq(e.nameParts())))
    if kind == "UnresolvedStar":
        return Node("star") if not e.target().isDefined() else _opaque(e.toString())
    if kind == "Alias":
        node = Node("alias", args=(_catalyst(e.child()),), name=e.name())
        meta = e.explicitMetadata()
        return _marked(node, meta.get().json() if meta.isDefined() else None)
    if kind == "PythonUDF" or kind.endswith("UDF"):
        name = pandas_udf.from_classic(e)
        if name is not None:
            return Node("function", name=name, args=tuple(_catalyst(c) for c in children))
        return _opaque(f"the Python UDF {e.name()}")
    if kind == "Literal":
        value = e.value()
        if value is None or isinstance(value, (bool, int, float)):
            return Node("literal", value=value)
        return Node("sql", text=e.sql())
    if kind == "SortOrder":
        return Node(
            "sort",
            args=(_catalyst(e.child()),),
            descending=e.direction().toString() == "Descending",
            nulls_first=e.nullOrdering().toString() == "NullsFirst",
        )
    if kind == "WindowExpression":
        spec = e.windowSpec()
        frame = spec.frameSpecification()
        if frame.getClass().getSimpleName().startswith("Unspecified"):
            frame = None
        else:
            rows = frame.frameType().toString() == "RowFrame"
            frame = (rows, _catalyst_bound(frame.lower()), _catalyst_bound(frame.upper()))
        return Node(
            "window",
            args=(_catalyst(e.windowFunction()),),
            partition=tuple(_catalyst(p) for p in _seq(spec.partitionSpec())),
            order=tuple(_catalyst(o) for o in _seq(spec.orderSpec())),
            frame=frame,
        )
    if kind == "AggregateExpression":
        f = e.aggregateFunction()
        args = [_catalyst(c) for c in _seq(f.children())]
        if f.getClass().getSimpleName() in ("First", "Last") and f.ignoreNulls():
            args.append(Node("literal", value=True))
        if f.getClass().getSimpleName() == "Count" and args == [Node("literal", value=1)]:
            args = [Node("star")]  # PySpark 3.5 spells F.count("*") count(1)
        return Node("function", name=f.prettyName(), args=tuple(args), distinct=bool(e.isDistinct()))
    if kind in ("Lag", "Lead", "NthValue"):
        args = (*(_catalyst(c) for c in children), Node("literal", value=bool(e.ignoreNulls())))
        return Node("function", name=e.prettyName(), args=args)
    if kind in _RANKING:
        args = tuple(_catalyst(c) for c in children) if kind == "NTile" else ()
        return Node("function", name=e.prettyName(), args=args)
    if kind == "UnresolvedFunction":
        args = [_catalyst(c) for c in children]
        name = _seq(e.nameParts())[-1]
        if e.ignoreNulls():
            if name.lower() in _FRAMELESS:
                args += [Node("literal")] * (3 - len(args)) + [Node("literal", value=True)]
            else:
                args.append(Node("literal", value=True))
        return Node("function", name=name, args=tuple(args), distinct=bool(e.isDistinct()))
    if not _catalyst_has_window(e):
        try:
            return Node("sql", text=_unparenthesised(e.sql()))
        except Exception:
            return _opaque(e.toString())
    if kind in ("UnaryMinus", "Not") and len(children) == 1:
        return Node("function", name="-" if kind == "UnaryMinus" else "not", args=(_catalyst(children[0]),))
    try:
        symbol = e.symbol()
    except Exception:
        return _opaque(e.toString())
    return Node("function", name=symbol, args=tuple(_catalyst(c) for c in children))


def _unparenthesised(text: str) -> str:
    """Catalyst's SQL of an expression without the parentheses it puts around every operator where
    sqlglot finds them redundant (``(x * 2)``: ``x * 2``; ``CASE WHEN (x > 1) ...``: ``CASE WHEN x
    > 1 ...``), so that ``max(x * 2)`` reads as the user's SQL does."""
    from sqlglot.optimizer.simplify import simplify_parens

    try:
        tree = sqlglot.parse_one(text, read=DIALECT)
    except sqlglot.errors.ParseError:
        return text
    if isinstance(tree, exp.Paren):
        tree = tree.this
    tree = tree.transform(lambda n: simplify_parens(n, DIALECT) if isinstance(n, exp.Paren) else n)
    return tree.sql(dialect=DIALECT)


def _catalyst_has_window(e) -> bool:
    if e.getClass().getSimpleName() == "WindowExpression":
        return True
    return any(_catalyst_has_window(c) for c in _seq(e.children()))


def _catalyst_bound(b):
    kind = b.getClass().getSimpleName()
    if kind.startswith("CurrentRow"):
        return 0
    if kind.startswith("Unbounded"):
        return "unbounded"
    value = _catalyst(b)
    return int(value.value) if value.kind == "literal" and isinstance(value.value, int) else value


def _connect(e) -> Node:
    """A Spark Connect expression object (``pyspark.sql.connect.expressions``)."""
    kind = type(e).__name__
    if kind == "ColumnReference":
        return Node("column", name=tuple(_name_parts(e._unparsed_identifier)))
    if kind == "UnresolvedStar":
        return Node("star") if e._unparsed_target is None else _opaque(repr(e))
    if kind == "LiteralExpression":
        return Node("literal", value=e._value)
    if kind == "UnresolvedFunction":
        return Node(
            "function", name=e._name, args=tuple(_connect(a) for a in e._args), distinct=bool(e._is_distinct)
        )
    if kind == "CastExpression":
        t = e._data_type
        return Node("cast", args=(_connect(e._expr),), type=t if isinstance(t, str) else t.simpleString())
    if kind == "SQLExpression":
        return Node("sql", text=e._expr)
    if kind == "ColumnAlias":
        if len(e._alias) != 1:
            return _opaque(repr(e))
        return _marked(Node("alias", args=(_connect(e._child),), name=e._alias[0]), e._metadata)
    if kind == "SortOrder":
        return Node(
            "sort", args=(_connect(e._child),), descending=not e._ascending, nulls_first=bool(e._nullsFirst)
        )
    if kind == "CaseWhen":
        args = [_connect(x) for branch in e._branches for x in branch]
        args.append(_connect(e._else_value) if e._else_value is not None else None)
        return Node("case", args=tuple(args))
    if kind == "WindowExpression":
        spec = e._windowSpec
        frame = None
        if spec._frame is not None:
            frame = (spec._frame._isRowFrame, _int_bound(spec._frame._start), _int_bound(spec._frame._end))
        return Node(
            "window",
            args=(_connect(e._windowFunction),),
            partition=tuple(_connect(p) for p in spec._partitionSpec),
            order=tuple(_connect(o) for o in spec._orderSpec),
            frame=frame,
        )
    if kind == "CommonInlineUserDefinedFunction":
        name = pandas_udf.from_connect(e)
        if name is not None:
            return Node("function", name=name, args=tuple(_connect(a) for a in e._arguments or ()))
        return _opaque(f"the Python UDF {e._function_name}")
    if kind == "UnresolvedExtractValue":  # arr[1], s['a'], m['k']
        return Node("extract", args=(_connect(e._child), _connect(e._extraction)))
    return _opaque(repr(e))


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _int_bound(v: int):
    """A frame bound as PySpark's Window keeps it: 0 the current row, Long.MIN/MAX unbounded."""
    return "unbounded" if v in (_LONG_MIN, _LONG_MAX) else int(v)


def _name_parts(identifier: str) -> list[str]:
    """``a.b`` and ``` `a.b`.c ``` as Spark splits a column name into parts."""
    parts, current, quoted, i = [], "", False, 0
    while i < len(identifier):
        ch = identifier[i]
        if ch == "`":
            if quoted and identifier[i + 1 : i + 2] == "`":
                current += "`"
                i += 1
            else:
                quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
        i += 1
    parts.append(current)
    return parts


def _seq(s) -> list:
    """A Scala Seq (through py4j) as a list."""
    return [s.apply(i) for i in range(s.size())]


def _classic(n) -> Node:
    """A classic Spark 4 ``org.apache.spark.sql.internal.ColumnNode`` (through py4j)."""
    kind = n.getClass().getSimpleName()
    if kind == "UnresolvedAttribute":
        return Node("column", name=tuple(_seq(n.nameParts())))
    if kind == "UnresolvedStar":
        return Node("star") if not n.unparsedTarget().isDefined() else _opaque(n.toString())
    if kind == "Literal":
        value = n.value()
        if not (value is None or isinstance(value, (bool, int, float, str, decimal.Decimal))):
            return _opaque(f"the constant {value}")
        return Node("literal", value=value)
    if kind == "UnresolvedFunction":
        if n.isUserDefinedFunction():
            return _opaque(f"the user-defined function {n.functionName()}")
        return Node(
            "function",
            name=n.functionName(),
            args=tuple(_classic(a) for a in _seq(n.arguments())),
            distinct=bool(n.isDistinct()),
        )
    if kind == "Cast":
        return Node("cast", args=(_classic(n.child()),), type=n.dataType().sql())
    if kind == "SqlExpression":
        return Node("sql", text=n.expression())
    if kind == "Alias":
        names = _seq(n.name())
        if len(names) != 1:
            return _opaque(n.toString())
        meta = n.metadata()
        node = Node("alias", args=(_classic(n.child()),), name=names[0])
        return _marked(node, meta.get().json() if meta.isDefined() else None)
    if kind == "SortOrder":
        return Node(
            "sort",
            args=(_classic(n.child()),),
            descending="Descending" in n.sortDirection().toString(),
            nulls_first="NullsFirst" in n.nullOrdering().toString(),
        )
    if kind == "CaseWhenOtherwise":
        args = [_classic(x) for b in _seq(n.branches()) for x in (b._1(), b._2())]
        other = n.otherwise()
        args.append(_classic(other.get()) if other.isDefined() else None)
        return Node("case", args=tuple(args))
    if kind == "Window":
        spec = n.windowSpec()
        frame = None
        if spec.frame().isDefined():
            f = spec.frame().get()
            frame = ("Row" in f.frameType().toString(), _classic_bound(f.lower()), _classic_bound(f.upper()))
        return Node(
            "window",
            args=(_classic(n.windowFunction()),),
            partition=tuple(_classic(p) for p in _seq(spec.partitionColumns())),
            order=tuple(_classic(o) for o in _seq(spec.sortColumns())),
            frame=frame,
        )
    if kind == "ExpressionColumnNode":
        pandas = _classic_pandas_udf(n.expression())
        if pandas is not None:
            return pandas
        inner = n.expression().getClass().getSimpleName()
        if "UDF" in inner:
            return _opaque(f"the Python UDF {n.expression().name()}")
        return _opaque(f"the Spark expression {inner}")
    text = n.sql()  # any other node (arr[1], a lambda, ...): Spark's SQL of it, unless it holds a window
    return _opaque(n.toString()) if sql_has_window(text) else Node("sql", text=text)


def _classic_pandas_udf(e) -> Node | None:
    """A grouped-aggregate pandas_udf's call (an ``AggregateExpression`` of a ``PythonUDAF`` whose
    arguments are Column nodes) as a call of the name it is registered under in overwindow's
    catalog (``overwindow.spark.pandas_udf``); None for any other expression."""
    if e.getClass().getSimpleName() != "AggregateExpression":
        return None
    f = e.aggregateFunction()
    if f.getClass().getSimpleName() != "PythonUDAF":
        return None
    name = pandas_udf.from_classic(f)
    if name is None:
        return None
    args = []
    for child in _seq(f.children()):
        try:
            args.append(_classic(child.node()))
        except Exception:  # not a Column's node: Spark's own expression
            args.append(_opaque(f"the argument {child.toString()} of the pandas_udf {f.name()}"))
    return Node("function", name=name, args=tuple(args))


def _classic_bound(b):
    kind = b.getClass().getSimpleName()
    if kind.startswith("CurrentRow"):
        return 0
    if kind.startswith("Unbounded"):
        return "unbounded"
    value = _classic(b.value())
    return int(value.value) if value.kind == "literal" and isinstance(value.value, int) else value


# ---------------------------------------------------------------------------------------------
# windows over sessions (marked by ``overwindow.spark.column_sql.session_window``)

# the alias metadata key that marks a window Column as one over sessions (``session_window``)
SESSION_GAP = "overwindow.sessionGap"


def _marked(alias: Node, metadata) -> Node:
    """An alias node as read, or, where its metadata holds ``SESSION_GAP`` (``session_window``), the
    window under it over sessions (the alias was the mark, not the user's name)."""
    if not metadata:
        return alias
    meta = json.loads(metadata) if isinstance(metadata, str) else dict(metadata)
    gap = meta.get(SESSION_GAP)
    return alias if gap is None else _with_session(alias.args[0], gap)


def _with_session(node: Node, gap: str) -> Node:
    if node.kind == "alias":
        return replace(node, args=(_with_session(node.args[0], gap),))
    return replace(node, session_gap=gap, frame=None) if node.kind == "window" else node
