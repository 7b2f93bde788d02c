"""A scalar SQL expression kept as canonical Spark SQL text (hashable, frozen).

>>> Expr.of("price * 2").sql
'price * 2'
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
import operator
import re
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import Token, TokenType

from overwindow.errors import WindowSpecError


class OverwindowSpark(Spark):
    """Spark's SQL as sqlglot reads and writes it, plus the window clause ``SESSION WITH GAP <gap>``
    after ORDER BY (a SESSION frame, docs/sessions.md), which sqlglot's Spark dialect refuses: it
    reads into a ``WindowSpec`` of kind ``SESSION`` whose ``start`` is the gap, and prints back as
    written. Everything else is sqlglot's Spark dialect.

    >>> read_sql("sum(x) OVER (ORDER BY t SESSION WITH GAP 5)").sql(dialect=DIALECT)
    'SUM(x) OVER (ORDER BY t SESSION WITH GAP 5)'
    """

    class Parser(Spark.Parser):
        _session_gap = None

        def _parse_partition_and_order(self):
            partition, order = super()._parse_partition_and_order()
            if order is not None and self._match_text_seq("SESSION", "WITH", "GAP"):
                self._session_gap = self._parse_bitwise()
            return partition, order

        def _parse_window(self, this, alias: bool = False):
            outer, self._session_gap = self._session_gap, None
            window = super()._parse_window(this, alias)
            gap, self._session_gap = self._session_gap, outer
            if gap is not None and isinstance(window, exp.Window):
                if window.args.get("spec") is not None:  # ... SESSION WITH GAP 5 ROWS ...
                    self.raise_error("SESSION WITH GAP takes no ROWS, RANGE or GROUPS bounds")
                window.set("spec", exp.WindowSpec(kind="SESSION", start=gap))
            return window

    class Generator(Spark.Generator):
        def windowspec_sql(self, expression: exp.WindowSpec) -> str:
            if str(expression.args.get("kind")).upper() == "SESSION":
                return f"SESSION WITH GAP {self.sql(expression, 'start')}"
            return super().windowspec_sql(expression)


DIALECT = "overwindowspark"  # OverwindowSpark, registered under its lowercased name
_SPARK = Dialect.get_or_raise(DIALECT)


def for_spark(text: str) -> str:
    """SQL text as Spark's own parser takes it: each ``SESSION WITH GAP`` dropped, so the window
    keeps its default frame. For what Spark only names and types (a frame changes neither); the
    values are overwindow's. Text without one comes back unchanged. O(size of the text).

    >>> for_spark("sum(x) OVER (ORDER BY t SESSION WITH GAP 5) AS s")
    'SUM(x) OVER (ORDER BY t) AS s'
    """
    if "SESSION" not in text.upper():
        return text
    tree = read_sql(text)
    specs = [s for s in tree.find_all(exp.WindowSpec) if str(s.args.get("kind")).upper() == "SESSION"]
    if not specs:
        return text
    for spec in specs:
        spec.pop()
    return tree.sql(dialect="spark")


# the units of Spark's INTERVAL <value> <unit> (a plural too: DAYS)
INTERVAL_UNITS = {"YEAR", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND"}


@lru_cache(maxsize=4096)
def _parse(sql: str) -> exp.Expression:
    try:
        return read_sql(sql)
    except sqlglot.errors.ParseError as e:
        raise WindowSpecError(f"cannot parse SQL expression {sql!r}: {syntax_error(e)}") from None


def read_sql(sql: str) -> exp.Expression:
    """``sqlglot.parse_one(sql, read="spark")`` with string literals read as Spark reads them
    (``spark_tokens``): ``'it''s'`` is the literal ``it's``, ``'a' 'b'`` the literal ``ab``, where
    sqlglot reads both as ``CONCAT(...)`` calls. A ``concat(...)`` or ``||`` written out is read as
    sqlglot reads it.

    >>> [read_sql(t).sql(dialect=DIALECT) for t in ("s = 'a' 'b'", "'a' || 'b'")]
    ["s = 'ab'", "'a' || 'b'"]
    """
    result = _SPARK.parser().parse(spark_tokens(sql), sql)
    if not result or result[0] is None:
        raise sqlglot.errors.ParseError(f"No expression was parsed from '{sql}'")
    return exp.Block(expressions=result) if len(result) > 1 else result[0]


def spark_tokens(sql: str) -> list[Token]:
    """sqlglot's Spark tokens of ``sql``, each run of string literals read as Spark's lexer and
    parser read it. Spark's lexer reads a quote doubled inside a literal as one quote (``'it''s'``
    is ``it's``, ``"a""b"`` is ``a"b``), and its parser reads literals side by side as one
    (``'a' 'b'``, ``'a'"b"`` and ``'a' /* c */ 'b'`` are ``'ab'``; ``INTERVAL '1' '0' DAY`` is ten
    days); sqlglot's Spark tokenizer escapes with backslashes only, so it reads ``'it''s'`` as the
    two literals ``'it'`` and ``'s'``, and its parser makes literals side by side a ``CONCAT`` call
    (Parser._parse_primary). A raw literal (``r'a\\b'``, ``R"..."``: backslashes kept, no doubled
    quote inside) is a literal like the others, read side by side with them (``r'it''s'`` is
    ``its``, as in Spark), where sqlglot's parser makes it a node of its own. After the name of a
    type (``DATE '2024-01-' '01'``, ``INTERVAL '1 ' 'day'``, ``INT '1' '2'``) Spark takes one
    literal and refuses the next: those stay apart (and are refused as before), but for the value
    of ``INTERVAL <value> <unit>``. A quote left open is a ParseError. O(tokens).

    >>> [(t.token_type.name, t.text) for t in spark_tokens("lag(s, 1, 'it''s' '!')")][6:]
    [('STRING', "it's!"), ('R_PAREN', ')')]
    >>> [t.text for t in spark_tokens(r"lag(s, 1, r'a\\b' 'c')")][6:]
    ['a\\\\bc', ')']
    """
    try:
        tokens = _SPARK.tokenize(sql)
    except sqlglot.errors.TokenError:
        raise sqlglot.errors.ParseError("syntax error: a quote or comment is not closed") from None
    runs = [list(run) for _, run in itertools.groupby(tokens, lambda t: t.token_type in _STRINGS)]
    out: list[Token] = []
    for k, run in enumerate(runs):
        if run[0].token_type not in _STRINGS:
            out.extend(run)
            continue
        literals = [[run[0]]]
        for before, tok in zip(run, run[1:]):
            doubled = before.token_type == tok.token_type == TokenType.STRING  # no escape in r'...'
            if doubled and before.end + 1 == tok.start and sql[before.end] == sql[tok.start]:
                literals[-1].append(tok)  # 'it''s': one literal, the doubled quote one quote
            else:
                literals.append([tok])
        strings = [_string(parts, sql[parts[0].start]) for parts in literals]
        if _one_literal_only(out[-1] if out else None, runs[k + 1][0] if k + 1 < len(runs) else None):
            out.extend(strings)
        else:
            out.append(_string(strings, ""))
    return out


# sqlglot's string literal tokens: '...' and "..." (backslash escapes read), r'...' and R"..." (raw)
_STRINGS = {TokenType.STRING, TokenType.RAW_STRING}


def _string(run: list[Token], separator: str) -> Token:
    """One STRING token of ``run``'s texts joined by ``separator``, spanning the run in the text."""
    first, last = run[0], run[-1]
    comments = [c for tok in run for c in tok.comments]
    text = separator.join(tok.text for tok in run)
    return Token(TokenType.STRING, text, first.line, first.col, first.start, last.end, comments)


def _one_literal_only(before: Token | None, after: Token | None) -> bool:
    """Whether Spark reads one string literal only between ``before`` and ``after``: after the
    name of a type (a typed literal), but for the value of ``INTERVAL <value> <unit>``."""
    if before is None or before.token_type not in _SPARK.parser_class.TYPE_TOKENS:
        return False
    unit = after is not None and after.text.upper().rstrip("S") in INTERVAL_UNITS
    return before.token_type != TokenType.INTERVAL or not unit


def _open_call(context: str) -> str | None:
    """The function whose parenthesis is still open at the end of ``context`` (None: none is)."""
    names: list[str | None] = []
    for m in re.finditer(r"(\w+)?\s*\(|\)", context):
        if m.group(0) == ")":
            if names:
                names.pop()
        else:
            names.append(m.group(1))
    return next((n for n in reversed(names) if n), None) if names and names[-1] else None


def syntax_error(error: sqlglot.errors.ParseError) -> str:
    """sqlglot's complaint in SQL words: what is wrong, at or near which token and column, without
    its terminal underlining or the names of its classes.

    >>> try:
    ...     sqlglot.parse_one("sum() OVER () AS r", read=DIALECT)
    ... except sqlglot.errors.ParseError as e:
    ...     print(syntax_error(e))
    sum() is missing an argument, at or near ')' (column 5)
    """
    if not error.errors:
        return re.sub(r"\x1b\[[0-9;]*m", "", str(error)).splitlines()[0]
    first = error.errors[0]
    what = first.get("description") or "syntax error"
    called = _open_call(first.get("start_context") or "")
    node = re.search(r"<class '[\w.]*?(\w+)'>", what)
    counts = re.findall(r"\((\d+)\)", what)
    if what.startswith("Required keyword"):
        function = node is not None and issubclass(getattr(exp, node.group(1), exp.Expression), exp.Func)
        what = f"{called}() is missing an argument" if called and function else "an operand is missing"
    elif what == "Expecting )":
        what = "syntax error: expected ')'"
    elif what.startswith("The number of provided arguments") and len(counts) == 2:
        plural = "" if counts[1] == "1" else "s"
        what = f"{called or 'the function'}() takes at most {counts[1]} argument{plural}, got {counts[0]}"
    elif what.startswith(("Invalid expression", "Expecting", "Required", "The number", "<class")):
        what = "syntax error"
    return f"{what}, at or near {first.get('highlight')!r} (column {first.get('col')})"


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
    """The value of a constant expression, folded as Spark folds it: numbers with a decimal point
    are exact DECIMALs (``1.5`` is ``Decimal('1.5')``), with an exponent DOUBLEs (``1e0``), others
    integers; ``'a'``, ``TRUE``, ``NULL``, ``ARRAY(0.25, 0.5)``; ``+ - * /`` over constants;
    ``CAST(... AS type)`` and typed literals (``TIMESTAMP '2024-01-01 00:00:00'``, ``DATE '...'``,
    ``1.5D``, ``10L``, ``CAST('Infinity' AS DOUBLE)``).

    Raises WindowSpecError when the expression reads a column or is not a constant.

    >>> [Expr.of(t).literal_value() for t in ("1 + 1", "1.5", "-1e0", "CAST('Infinity' AS DOUBLE)")]
    [2, Decimal('1.5'), -1.0, inf]
    """
    if isinstance(node, exp.Paren):
        return literal_value(node.this, context)
    if isinstance(node, exp.Neg):
        v = literal_value(node.this, context)
        if isinstance(v, decimal.Decimal):
            return v.copy_negate()  # exact: ``-v`` rounds to the context's 28 digits
        if _is_number(v):
            return -v
    elif isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        return _number(node.this)
    elif isinstance(node, exp.Boolean):
        return bool(node.this)
    elif isinstance(node, exp.Null):
        return None
    elif isinstance(node, exp.Array):
        return tuple(literal_value(e, context) for e in node.expressions)
    elif type(node) in _ARITHMETIC:
        a, b = literal_value(node.this, context), literal_value(node.expression, context)
        if a is None or b is None:
            return None
        if _is_number(a) and _is_number(b):
            return _ARITHMETIC[type(node)](a, b, context)
    elif isinstance(node, exp.Cast):
        return _cast_constant(literal_value(node.this, context), node.to, context)
    raise WindowSpecError(f"{context}: expected a constant, got {node.sql(dialect=DIALECT)}")


def sql_literal(v) -> str:
    """A constant as Spark SQL text that reads back as the same value and type: integers bare,
    DECIMALs with their digits (``1.50``, ``100BD``), DOUBLEs with an exponent (``1.5E0``,
    ``CAST('Infinity' AS DOUBLE)``), strings quoted, ``ARRAY(...)`` for tuples.

    >>> [sql_literal(v) for v in (2, decimal.Decimal("1.50"), 1.5, math.inf, "it's", (0.25, 0.5), None)]
    ['2', '1.50', '1.5E0', "CAST('Infinity' AS DOUBLE)", "'it''s'", 'ARRAY(0.25E0, 0.5E0)', 'NULL']
    >>> sql_literal(decimal.Decimal("1E+2"))
    '100BD'
    >>> print(sql_literal("C:\\\\temp"))  # a backslash escaped, as Spark reads it
    'C:\\\\temp'
    """
    if isinstance(v, tuple):
        return "ARRAY(" + ", ".join(sql_literal(x) for x in v) + ")"
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return str(v).upper()
    if isinstance(v, str):  # Spark reads backslash escapes in string literals
        return "'" + v.replace("\\", "\\\\").replace("'", "''") + "'"
    if isinstance(v, float):
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return f"CAST('{'-' if v < 0 else ''}Infinity' AS DOUBLE)"
        mantissa, _, exponent = repr(v).partition("e")
        return f"{mantissa}E{int(exponent or 0)}"
    exponent = v.as_tuple().exponent if isinstance(v, decimal.Decimal) else -1
    if isinstance(exponent, int) and exponent >= 0:  # DECIMAL(3,0) to Spark; 100 would be INT
        return f"{int(v)}BD"
    if isinstance(v, dt.datetime):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    return str(v)


def _is_number(v) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


_DOUBLE_MAX = decimal.Decimal("1.7976931348623157E+308")  # Java's Double.MAX_VALUE, as Spark compares


def _number(text: str):
    """A numeric literal's value by Spark's rules: exponent -> DOUBLE, decimal point -> DECIMAL,
    else an integer."""
    if "e" in text.lower():
        # Spark's parser refuses a literal whose exact value passes DOUBLE's largest (not infinity)
        if abs(decimal.Decimal(text)) > _DOUBLE_MAX:
            raise WindowSpecError(
                f"the numeric literal {text} does not fit in a DOUBLE (Spark: INVALID_NUMERIC_LITERAL_RANGE)"
            )
        return float(text)
    if "." in text:
        return decimal.Decimal(text)
    return int(text)


def _mixed(a, b):
    """Both operands in one Python type: float if either is a DOUBLE, else Decimal if either is a
    DECIMAL (exact), else int."""
    if isinstance(a, float) or isinstance(b, float):
        return float(a), float(b)
    if isinstance(a, decimal.Decimal) or isinstance(b, decimal.Decimal):
        return decimal.Decimal(a), decimal.Decimal(b)
    return a, b


def _divide(a, b, context):
    a, b = _mixed(a, b)
    if b == 0:
        raise WindowSpecError(f"{context}: division by zero in a constant")
    if isinstance(a, int):
        return a / b  # Spark's / of integers is a DOUBLE
    if isinstance(a, decimal.Decimal):
        with decimal.localcontext() as ctx:
            ctx.prec = 38
            return a / b
    return a / b


_ARITHMETIC = {
    exp.Add: lambda a, b, c: operator.add(*_mixed(a, b)),
    exp.Sub: lambda a, b, c: operator.sub(*_mixed(a, b)),
    exp.Mul: lambda a, b, c: operator.mul(*_mixed(a, b)),
    exp.Div: _divide,
}

# Spark's names for the special DOUBLE values a string casts to (case-insensitive)
_SPECIAL_DOUBLES = {
    "nan": math.nan,
    "infinity": math.inf,
    "+infinity": math.inf,
    "inf": math.inf,
    "+inf": math.inf,
    "-infinity": -math.inf,
    "-inf": -math.inf,
}


def _cast_constant(v, to: exp.DataType, context: str):
    """A constant cast as Spark casts it (ANSI mode): to numbers (a fraction dropped toward zero for
    integers, DECIMAL rounded half up), strings, dates and timestamps."""
    if v is None:
        return None
    name = to.this.name if hasattr(to.this, "name") else str(to.this).upper()
    try:
        if name in ("DOUBLE", "FLOAT"):
            if isinstance(v, str):
                special = _SPECIAL_DOUBLES.get(v.strip().lower())
                return special if special is not None else float(v.strip())
            return float(v)
        if name in ("INT", "BIGINT", "SMALLINT", "TINYINT"):
            if isinstance(v, str):
                v = decimal.Decimal(v.strip())
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(v)
            return int(v)  # toward zero
        if name == "DECIMAL":
            params = [int(p.this.this) for p in to.expressions]
            scale = params[1] if len(params) > 1 else 0
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(v)
            return decimal.Decimal(str(v) if isinstance(v, float) else v).quantize(
                decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP
            )
        if name in ("VARCHAR", "TEXT", "STRING", "CHAR"):
            return v if isinstance(v, str) else str(v)
        if name == "DATE":
            if isinstance(v, dt.datetime):
                return v.date()
            if isinstance(v, dt.date):
                return v
            return spark_date(v.strip())
        if name in ("TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPLTZ", "TIMESTAMPNTZ", "DATETIME"):
            if isinstance(v, dt.datetime):
                return v
            if isinstance(v, dt.date):
                return dt.datetime(v.year, v.month, v.day)
            return parse_timestamp(v)
        if name == "BOOLEAN":
            if isinstance(v, bool):
                return v
            if isinstance(v, str) and v.strip().lower() in ("true", "false"):
                return v.strip().lower() == "true"
    except (ValueError, ArithmeticError, TypeError):
        raise WindowSpecError(
            f"{context}: the value {v!r} cannot be cast to {to.sql(dialect=DIALECT)} "
            "(Spark: CAST_INVALID_INPUT)"
        ) from None
    raise WindowSpecError(f"{context}: cannot cast {v!r} to {to.sql(dialect=DIALECT)}")


# Spark's forms of a DATE in a string: [+-]yyyy*, yyyy*-[m]m, yyyy*-[m]m-[d]d, then after the day
# anything behind a space or a T; the year of 4 to 7 digits, month and day of 1 or 2
_SPARK_DATE = re.compile(r"([+-]?[0-9]{4,7})(?:-([0-9]{1,2})(?:-([0-9]{1,2})(?:[ T].*)?)?)?", re.DOTALL)


def spark_date(text: str) -> dt.date:
    """The DATE Spark's CAST reads from ``text`` (trimmed); ValueError where Spark's cast fails
    (``2024-01-01x``, ``20240101``, ``2024-02-30``) or the year is outside 1-9999 (Python's dates).

    >>> texts = ("2024", "2024-3", "2024-1-5", "2024-01-05T10:00", "2024-01-05 x")
    >>> [spark_date(t).isoformat() for t in texts]
    ['2024-01-01', '2024-03-01', '2024-01-05', '2024-01-05', '2024-01-05']
    """
    found = _SPARK_DATE.fullmatch(text)
    if found is None:
        raise ValueError(f"not a date: {text!r}")
    year, month, day = found.groups()
    return dt.date(int(year), int(month or 1), int(day or 1))


def parse_timestamp(text: str) -> dt.datetime:
    """A TIMESTAMP literal's text (``2024-01-01``, ``2024-01-01 10:00:00.5``, ``...T...Z``) as a
    naive datetime (UTC when the text names the zone).

    >>> parse_timestamp("2024-01-01T10:00:00Z")
    datetime.datetime(2024, 1, 1, 10, 0)
    """
    t = text.strip().replace("T", " ")
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    value = dt.datetime.fromisoformat(t)
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value
