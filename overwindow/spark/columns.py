"""PySpark Columns as overwindow's SQL: ``F.lag("x").over(Window.partitionBy("k").orderBy("ts"))``
becomes ``lag(x) OVER (PARTITION BY k ORDER BY ts ASC NULLS FIRST)``, which
``overwindow.logical.parse_window`` reads into window calls (so every check and message of SQL text
applies to Columns too).

A Column is read without Spark's analyzer, from the expression tree it holds: on Spark Connect the
Python objects of ``pyspark.sql.connect.expressions``, on classic Spark 4.x the JVM's ``ColumnNode``
(through py4j), on classic PySpark 3.5 its unresolved Catalyst expression (through py4j). All are
first turned into one small neutral tree (:class:`Node`), which one renderer prints as SQL. The
frame is read as the user wrote it (``rowsBetween(-9, 0)``: ``ROWS BETWEEN 9 PRECEDING AND CURRENT
ROW``), never from the analyzed plan, where Spark gives ``lag`` a frame ``ROWS BETWEEN -1 FOLLOWING
AND -1 FOLLOWING`` of its own.

Cost: O(nodes of the Column's expression), one py4j call per node on classic Spark.

>>> from pyspark.sql.connect import functions as F
>>> from pyspark.sql.connect.window import Window
>>> w = Window.partitionBy("k").orderBy("ts")
>>> to_sql(read(F.avg("x").over(w.rowsBetween(-9, 0)).alias("a")))
'avg(x) OVER (PARTITION BY k ORDER BY ts ASC NULLS FIRST ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS a'
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.call import quote
from overwindow.logical.expr import DIALECT, sql_literal
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


def _opaque(text: str) -> Node:
    return Node("opaque", text=text)


# ---------------------------------------------------------------------------------------------
# readers


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
# the renderer

_INFIX = {
    "+": "+",
    "-": "-",
    "*": "*",
    "/": "/",
    "%": "%",
    "=": "=",
    "==": "=",
    "<=>": "<=>",
    "!=": "!=",
    "<>": "<>",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
    "and": "AND",
    "or": "OR",
}
_PREFIX = {"-": "-", "negative": "-", "!": "NOT ", "not": "NOT "}
_POSTFIX = {"isnull": "IS NULL", "isnotnull": "IS NOT NULL"}
_FRAMELESS = {"lag", "lead"}  # Spark requires a frame of their own; SQL writes none


class Untranslatable(WindowSpecError):
    """A Column overwindow cannot read as SQL (a Python UDF, a function of Spark's it lacks...)."""


def to_sql(node: Node) -> str:
    """SQL text in Spark's dialect for a neutral tree (an alias at the top as ``... AS name``)."""
    if node.kind == "alias":
        return f"{_sql(node.args[0])} AS {quote(node.name)}"
    return _sql(node)


def _sql(n: Node, operand: bool = False) -> str:
    """``n`` as SQL; ``operand``: it is an operand of an operator, so an operator or SQL text in it
    is parenthesised (nowhere else, so that ``max(x * 2)`` reads back as the user's SQL does)."""
    k = n.kind
    if k == "column":
        return ".".join(quote(p) for p in n.name)
    if k == "star":
        return "*"
    if k == "literal":
        if isinstance(n.value, (dt.date, dt.datetime, tuple)) or not isinstance(
            n.value, (type(None), bool, int, float, str, decimal.Decimal)
        ):
            raise Untranslatable(f"the constant {n.value!r}")
        return sql_literal(n.value)
    if k == "cast":
        return f"CAST({_sql(n.args[0])} AS {n.type})"
    if k == "sql":
        return f"({n.text})" if operand else n.text
    if k == "alias":
        return _sql(n.args[0])
    if k == "sort":
        direction = "DESC" if n.descending else "ASC"
        return f"{_sql(n.args[0])} {direction} NULLS {'FIRST' if n.nulls_first else 'LAST'}"
    if k == "case":
        *pairs, other = n.args
        text = "CASE" + "".join(f" WHEN {_sql(c)} THEN {_sql(v)}" for c, v in zip(pairs[::2], pairs[1::2]))
        return text + (f" ELSE {_sql(other)}" if other is not None else "") + " END"
    if k == "function":
        return _function(n, operand)
    if k == "window":
        return _window(n)
    if k == "extract":
        return f"{_sql(n.args[0], operand=True)}[{_sql(n.args[1])}]"
    raise Untranslatable(n.text)


def _function(n: Node, operand: bool = False) -> str:
    name, args = n.name, n.args
    low = name.lower()
    text = None
    if low in _INFIX and len(args) == 2:
        text = f"{_sql(args[0], True)} {_INFIX[low]} {_sql(args[1], True)}"
    elif low in _PREFIX and len(args) == 1:
        text = f"{_PREFIX[low]}{_sql(args[0], True)}"
    elif low in _POSTFIX and len(args) == 1:
        text = f"{_sql(args[0], True)} {_POSTFIX[low]}"
    elif low == "in" and args:
        text = f"{_sql(args[0], True)} IN ({', '.join(_sql(a) for a in args[1:])})"
    if text is not None:
        return f"({text})" if operand else text
    if low in _FRAMELESS and len(args) == 4 and args[3].kind == "literal" and isinstance(args[3].value, bool):
        # classic Spark 4 spells F.lag(x, 1) as lag(x, 1, NULL, <ignore nulls>): a NULL default is
        # no default
        kept = args[:2] if args[2] == Node("literal") else args[:3]
        text = f"{low}({', '.join(_sql(a) for a in kept)})"
        return text + (" IGNORE NULLS" if args[3].value else "")
    inner = ", ".join(_sql(a) for a in args)
    return f"{name}({'DISTINCT ' if n.distinct else ''}{inner})"


def _window(n: Node) -> str:
    fn = n.args[0]
    if fn.kind == "sql":  # F.expr("lag(x)").over(w): the function as SQL, unparenthesised
        function = fn.text
    elif fn.kind == "function":
        function = _function(fn)
    else:
        raise Untranslatable(f"{_describe(fn)} is not a window function")
    parts = []
    if n.partition:
        parts.append("PARTITION BY " + ", ".join(_sql(p) for p in n.partition))
    if n.order:
        parts.append("ORDER BY " + ", ".join(_sql(o) for o in n.order))
    if n.session_gap:
        parts.append(f"SESSION WITH GAP {n.session_gap}")
    elif n.frame is not None and not _own_frame(fn, n.frame):
        rows, lower, upper = n.frame
        unit = "ROWS" if rows else "RANGE"
        parts.append(f"{unit} BETWEEN {_bound(lower, 'PRECEDING')} AND {_bound(upper, 'FOLLOWING')}")
    return f"{function} OVER ({' '.join(parts)})"


def _own_frame(fn: Node, frame) -> bool:
    """Whether ``frame`` is the one Spark requires of lag/lead (``lag(x, 2)``: ROWS BETWEEN 2
    PRECEDING AND 2 PRECEDING), which SQL does not write; any other frame is kept, and refused as
    Spark refuses it."""
    if fn.kind != "function" or fn.name.lower() not in _FRAMELESS:
        return False
    offset = fn.args[1].value if len(fn.args) > 1 and fn.args[1].kind == "literal" else 1
    if not isinstance(offset, int) or isinstance(offset, bool):
        return False
    at = -offset if fn.name.lower() == "lag" else offset
    return frame == (True, at, at)


def _bound(b, unbounded_side: str) -> str:
    if b == "unbounded":
        return f"UNBOUNDED {unbounded_side}"
    if isinstance(b, Node):
        return f"{_sql(b)} FOLLOWING"  # a negative value reads as PRECEDING, as in Spark
    if b == 0:
        return "CURRENT ROW"
    return f"{-b} PRECEDING" if b < 0 else f"{b} FOLLOWING"


def _describe(n: Node) -> str:
    if n.kind == "opaque":
        return n.text
    try:
        return _sql(n)
    except Untranslatable as e:
        return str(e)


def opaque_parts(node: Node) -> list[str]:
    """What in ``node`` overwindow cannot read, in words (empty: all of it translates)."""
    return [n.text for n in node.walk() if n.kind == "opaque"]


# the alias metadata key that marks a window Column as one over sessions (``session_window``)
SESSION_GAP = "overwindow.sessionGap"


def session_window(column, gapDuration):
    """``column``, a window function over a PySpark window with ORDER BY and no frame
    (``F.sum("x").over(Window.partitionBy("k").orderBy("ts"))``, aliased or not), over sessions
    instead: ``SESSION WITH GAP`` (docs/sessions.md). ``gapDuration`` as ``F.session_window`` takes
    it (``"30 minutes"``), an INTERVAL literal's SQL, a ``datetime.timedelta``, or a number for a
    numeric ORDER BY column. Exposed as ``overwindow.sessionWindow``; ``overwindow.select`` and
    ``overwindow.sql``'s column lists read it. The Column Spark sees is the window as written,
    aliased with the gap in its metadata: Spark names and types it (a frame changes neither), and
    only overwindow computes it. O(size of the column's expression).

    >>> # w = Window.partitionBy("user").orderBy("ts")
    >>> # overwindow.select(clicks, "user", "ts",
    >>> #     overwindow.sessionWindow(F.count("*").over(w), "30 minutes").alias("clicks"))
    """
    from overwindow.logical.parse import parse_window

    gap = _gap_sql(gapDuration)
    node = read(column)
    window = node.args[0] if node.kind == "alias" else node
    if window.kind != "window":
        raise WindowSpecError(
            f"sessionWindow takes a window function Column (f.over(w)), got {_describe(window)}"
        )
    if window.frame is not None and not _own_frame(window.args[0], window.frame):
        raise WindowSpecError(
            f"SESSION WITH GAP takes no ROWS or RANGE bounds: a row's frame is its whole session; "
            f"remove rowsBetween/rangeBetween from {_describe(window)}"
        )
    text = _window(_with_session(window, gap))
    parse_window(f"{text} AS s")  # refused now, in SQL words, where it is not defined
    name = node.name if node.kind == "alias" else text
    return column.alias(name, metadata={SESSION_GAP: gap})


def _gap_sql(gap) -> str:
    """A session gap as SQL: ``"30 minutes"`` as ``INTERVAL '30 minutes'``, a timedelta as a day-time
    INTERVAL, a number as its literal, INTERVAL text as it is."""
    if isinstance(gap, dt.timedelta):
        micros = (gap.days * 86_400 + gap.seconds) * 1_000_000 + gap.microseconds
        return (
            f"INTERVAL '{micros / 1_000_000!r}' SECOND"
            if micros % 1_000_000
            else f"INTERVAL '{micros // 1_000_000}' SECOND"
        )
    if isinstance(gap, str):
        text = gap.strip()
        return text if text.upper().startswith("INTERVAL") else "INTERVAL '" + text.replace("'", "''") + "'"
    if isinstance(gap, (int, float, decimal.Decimal)) and not isinstance(gap, bool):
        return sql_literal(gap)
    raise WindowSpecError(
        f"sessionWindow's gapDuration is a duration string ('30 minutes'), an INTERVAL, a timedelta or "
        f"a number, not {gap!r}"
    )


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
