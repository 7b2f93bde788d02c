"""The bind step: a window query split into what Spark computes and what overwindow computes.

On a stream Spark computes every scalar expression around the windows, overwindow the windows
only: ``bind`` takes window expressions whose calls may read any Spark SQL (``avg(length(s))``,
``lag(date_trunc('HOUR', ts))``, ``PARTITION BY k % 8``, ``ORDER BY
-x``) and returns

- ``pre``: the expressions a Spark projection computes before the windows, each under a name of
  its own (``__ow_e0``, ...): every argument, FILTER condition, lag/lead default, PARTITION BY and
  ORDER BY key that is not a bare column or a constant;
- ``expressions``: the same window expressions with those parts replaced by the names, so the
  state machines read plain columns only.

Spark's values, types and ANSI errors then hold for every scalar function, including ones added to
Spark later. Spark's own window operator computes the same projection below its windows: an
argument is computed on every row, a row the FILTER drops too (``sum(x / y) FILTER (WHERE y <> 0)``
fails on ``y = 0`` in Spark's batch query). Equal expressions share one name. Pure: no Spark here
(``overwindow.spark.bind`` runs the projection). O(size of the calls' expressions).

>>> from overwindow.logical.parse import parse_window
>>> b = bind([parse_window("avg(length(s)) OVER (PARTITION BY k % 8 ORDER BY ts) AS a")])
>>> [(name, e.sql) for name, e in b.pre]
[('__ow_e0', 'LENGTH(s)'), ('__ow_e1', 'k % 8')]
>>> b.expressions[0].calls[0].function_sql(), [str(k) for k in b.expressions[0].calls[0].partition_by]
('avg(`__ow_e0`)', ['`__ow_e1`'])
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from overwindow.logical.call import SortKey, WindowCall, WindowExpression
from overwindow.logical.expr import Expr

PREFIX = "__ow_e"  # the names of the columns Spark computes before the windows
# the column in which that projection names the expression that failed on a row (NULL: none did):
# a state machine sets such a row aside (``overwindow.streaming.aside``)
ERROR = "__ow_error"


@dataclass(frozen=True)
class Bound:
    """A bound query: ``pre``, (name, expression) pairs Spark computes before the windows, in order
    of first use; ``expressions``, the window expressions over plain columns."""

    pre: tuple[tuple[str, Expr], ...]
    expressions: tuple[WindowExpression, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the columns Spark computes before the windows."""
        return tuple(name for name, _ in self.pre)


def failure(text: str) -> str:
    """The reason a row is set aside when Spark failed to compute the expression ``text`` on it (the
    expression ``ERROR`` names on the row).

    >>> failure("x / y")
    'Spark failed to compute x / y on this row'
    """
    return f"Spark failed to compute {text} on this row"


def failed_expression(reason: str) -> str | None:
    """The expression a ``failure`` reason names (None for another reason).

    >>> failed_expression("Spark failed to compute x / y on this row"), failed_expression("late")
    ('x / y', None)
    """
    head, tail = failure(""), " on this row"
    if reason.startswith(head.removesuffix(tail)) and reason.endswith(tail):
        return reason[len(head) - len(tail) : -len(tail)]
    return None


def source_columns(names) -> tuple[str, ...]:
    """``names`` without the columns a bind adds (they follow from the others): what a row is,
    for its identity where no row key says. O(names).

    >>> source_columns(["x", "__ow_e0", ERROR])
    ('x',)
    """
    return tuple(n for n in names if not (n.startswith(PREFIX) or n == ERROR))


def is_plain(e: Expr) -> bool:
    """Whether the state machines read ``e`` as it is: a bare column of the input (not a struct's
    field, which Spark computes) or a constant.

    >>> [is_plain(Expr.of(t)) for t in ("x", "`my x`", "s.a", "1", "'a'", "-1", "x + 1", "NULL")]
    [True, True, False, True, True, True, False, True]
    """
    node = e.node
    if isinstance(node, exp.Paren):
        node = node.unnest()
    if isinstance(node, exp.Column):
        return not node.table
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return True
    return isinstance(node, (exp.Literal, exp.Null, exp.Boolean))


class _Names:
    """One name per distinct expression, in order of first use."""

    def __init__(self, start: int = 0):
        self.start = start
        self.pre: dict[Expr, str] = {}

    def column(self, e: Expr, constant: bool = True) -> Expr:
        """A column of ``e``'s value: ``e`` itself when plain (a constant only where ``constant``
        allows one), else the name Spark computes it under."""
        node = e.node
        if is_plain(e) and (constant or (isinstance(node, exp.Column) and not node.table)):
            return e
        name = self.pre.get(e)
        if name is None:
            name = self.pre[e] = f"{PREFIX}{self.start + len(self.pre)}"
        return Expr.of(exp.column(name, quoted=True))


def bind(expressions, start: int = 0) -> Bound:
    """``expressions`` (WindowExpressions) split into a Spark projection and windows over its
    columns (the module's doc); ``start``: the first name's number (another bind's count, when two
    share one projection). O(size of the expressions).

    >>> from overwindow.logical.parse import parse_window
    >>> b = bind([parse_window("sum(x / y) FILTER (WHERE y > 0) OVER () AS s")])
    >>> [(name, e.sql) for name, e in b.pre]
    [('__ow_e0', 'y > 0'), ('__ow_e1', 'x / y')]
    >>> bind([parse_window("lag(x) OVER (ORDER BY t) AS p")]).pre
    ()
    """
    names = _Names(start)
    out = tuple(replace(w, calls=tuple(_bind_call(c, names) for c in w.calls)) for w in expressions)
    return Bound(tuple((name, e) for e, name in names.pre.items()), out)


def bind_groups(groups) -> tuple[tuple[tuple[str, Expr], ...], list[tuple[tuple[str, ...], tuple]]]:
    """``bind`` of window groups, each (its PARTITION BY keys: column names, or ``Expr`` for
    expressions; its window expressions without PARTITION BY): (what Spark computes before the
    windows, each group as (its keys as column names, its expressions over plain columns)).
    O(size of the expressions).

    >>> from overwindow.logical.parse import parse_window
    >>> lag = parse_window("lag(-x) OVER (ORDER BY t) AS p")
    >>> pre, groups = bind_groups([(("k", Expr.of("t % 7")), [lag])])
    >>> [(name, e.sql) for name, e in pre], groups[0][0]
    ([('__ow_e0', 't % 7'), ('__ow_e1', '-x')], ('k', '__ow_e0'))
    """
    names = _Names()
    out = []
    for keys, expressions in groups:
        columns = tuple(k if isinstance(k, str) else names.column(k, constant=False).node.name for k in keys)
        calls = [replace(w, calls=tuple(_bind_call(c, names) for c in w.calls)) for w in expressions]
        out.append((columns, tuple(calls)))
    return tuple((name, e) for e, name in names.pre.items()), out


def _bind_call(call: WindowCall, names: _Names) -> WindowCall:
    column = names.column
    return replace(
        call,
        filter=None if call.filter is None else column(call.filter),
        args=tuple(column(a) for a in call.args),
        ignored=(),  # rank(x): Spark checks them and ignores them
        default=None if call.default is None else column(call.default),
        partition_by=tuple(column(k, constant=False) for k in call.partition_by),  # grouped by name
        order_by=tuple(SortKey(column(k.expr), k.descending, k.nulls_first) for k in call.order_by),
    )
