"""A scalar SQL expression kept as canonical Spark SQL text (hashable, frozen).

>>> Expr.of("price * 2").sql
'price * 2'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp

from overwindow.errors import WindowSpecError

DIALECT = "spark"


@lru_cache(maxsize=4096)
def _parse(sql: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(sql, read=DIALECT)
    except sqlglot.errors.ParseError as e:
        raise WindowSpecError(f"cannot parse SQL expression {sql!r}: {e}") from None


@dataclass(frozen=True)
class Expr:
    """A scalar expression over input columns (an argument, a FILTER condition, an ORDER BY key)."""

    sql: str

    @staticmethod
    def of(node: exp.Expression | str) -> Expr:
        if isinstance(node, str):
            node = _parse(node)
        return Expr(node.sql(dialect=DIALECT))

    @property
    def node(self) -> exp.Expression:
        """The parsed expression; treat it as read-only (it is cached)."""
        return _parse(self.sql)

    def columns(self) -> tuple[str, ...]:
        """Names of the input columns the expression reads, in first-use order."""
        seen: dict[str, None] = {}
        for col in self.node.find_all(exp.Column):
            seen[col.name] = None
        return tuple(seen)

    def literal_value(self):
        """The Python value of a constant expression (number, string, boolean, NULL, array of those).

        Raises WindowSpecError when the expression reads a column.
        """
        return literal_value(self.node, self.sql)

    def __str__(self) -> str:
        return self.sql


def literal_value(node: exp.Expression, context: str):
    """Constant-fold a literal node: ``2``, ``-1.5``, ``'a'``, ``TRUE``, ``NULL``, ``ARRAY(0.25, 0.5)``."""
    if isinstance(node, exp.Paren):
        return literal_value(node.this, context)
    if isinstance(node, exp.Neg):
        v = literal_value(node.this, context)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            return float(text)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Array):
        return tuple(literal_value(e, context) for e in node.expressions)
    raise WindowSpecError(f"{context}: expected a constant, got {node.sql(dialect=DIALECT)}")
