"""The neutral tree of a PySpark Column (``overwindow.spark.columns``) as SQL in Spark's dialect,
which ``overwindow.logical.parse_window`` reads: operators parenthesised only as operands, lag and
lead without the frame Spark gives them, a frame as the user wrote it; and ``sessionWindow``, which
marks a window Column as one over sessions. O(nodes).

>>> from overwindow.spark.columns import Node
>>> x, two = Node("column", name=("x",)), Node("literal", value=2)
>>> to_sql(Node("alias", name="y", args=(Node("function", name="*", args=(x, two)),)))
'x * 2 AS y'
"""

from __future__ import annotations

import datetime as dt
import decimal

from overwindow.errors import WindowSpecError
from overwindow.logical.call import quote
from overwindow.logical.expr import sql_literal
from overwindow.spark.columns import _FRAMELESS, SESSION_GAP, Node, _with_session, read

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
