"""Window calls: what to compute, never how. Frozen, hashable, printable as SQL.

>>> from overwindow.logical.parse import parse_window
>>> str(parse_window("sum(x) OVER (PARTITION BY k ORDER BY t ROWS 2 PRECEDING) AS s").calls[0])
'sum(x) OVER (PARTITION BY k ORDER BY t ASC NULLS FIRST ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s'
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass, field
from functools import cached_property

from overwindow.errors import WindowSpecError
from overwindow.logical.expr import Expr, sql_literal
from overwindow.logical.frame import Bound, BoundKind, Exclude, Frame, FrameUnit, Interval
from overwindow.logical.functions import Kind, Reach, lookup

_UNBOUNDED = (BoundKind.UNBOUNDED_PRECEDING, BoundKind.UNBOUNDED_FOLLOWING)
_WHOLE_PARTITION = Frame(FrameUnit.ROWS, Bound.unbounded_preceding(), Bound.unbounded_following())


@dataclass(frozen=True)
class SortKey:
    """One ORDER BY key. Spark's default null order: ASC NULLS FIRST, DESC NULLS LAST."""

    expr: Expr
    descending: bool = False
    nulls_first: bool | None = None

    def __post_init__(self):
        if self.nulls_first is None:
            object.__setattr__(self, "nulls_first", not self.descending)

    def __str__(self) -> str:
        return (
            f"{self.expr} {'DESC' if self.descending else 'ASC'} "
            f"NULLS {'FIRST' if self.nulls_first else 'LAST'}"
        )


@dataclass(frozen=True)
class WindowCall:
    """One window function call.

    ``args`` are the value expressions (``x`` in ``sum(x)``), ``params`` the constant parameters
    named by the catalog (``ntile(4)``, ``lag(x, 2, 0)``, ``percentile_cont(0.5)``).
    """

    function: str
    alias: str
    args: tuple[Expr, ...] = ()
    params: tuple = ()
    default: Expr | None = None  # lag/lead default value
    filter: Expr | None = None
    ignore_nulls: bool = False
    respect_nulls: bool = False  # collect_list(x) RESPECT NULLS: NULLs kept (the catalog allows it)
    partition_by: tuple[Expr, ...] = ()
    order_by: tuple[SortKey, ...] = ()
    frame: Frame | None = None  # None: the SQL default for this ORDER BY
    frame_given: bool = field(default=False, compare=False)
    # rank(x), dense_rank(x), percent_rank(x): arguments Spark accepts and ignores (it ranks by the
    # ORDER BY); read only for the columns they name
    ignored: tuple[Expr, ...] = ()

    def __post_init__(self):
        if self.frame is None:
            object.__setattr__(self, "frame", Frame.default(bool(self.order_by)))
        if self.function in ("lag", "lead") and not self.params:
            object.__setattr__(self, "params", (1,))  # SQL's default offset, so equal calls compare equal
        validate(self)

    @property
    def info(self):
        return lookup(self.function)

    @property
    def skips_nulls(self) -> bool:
        """Whether the row an offset function reads is counted in rows whose argument is not NULL:
        lag/lead IGNORE NULLS, and counter_diff (the catalog's ``previous_value``), which always
        reads the previous non-NULL value. O(1)."""
        return self.ignore_nulls or self.info.previous_value

    @cached_property
    def rows_back(self) -> int | None:
        """lag/lead (counter_diff: 1): how many rows before the current row the row they read lies
        (negative: after it); None for functions of a frame or of positions. O(1).

        >>> from overwindow.logical.parse import parse_window
        >>> calls = ["lag(x, 2) OVER (ORDER BY t) AS a", "lead(x) OVER (ORDER BY t) AS b"]
        >>> [parse_window(c).calls[0].rows_back for c in calls]
        [2, -1]
        """
        reach = self.info.reach
        offset = self.params[0] if self.params else 1
        if reach is Reach.ROWS_BEFORE:
            return offset
        return -offset if reach is Reach.ROWS_AFTER else None

    @cached_property
    def reach(self) -> Frame:
        """The rows a row's value depends on, as a frame over the ORDER BY: a change to a row alters
        exactly the rows whose reach holds it. The window frame for aggregates and values (the whole
        partition without ORDER BY); for lag/lead the ROWS from the current row to the one they read
        (to the partition's end on that side with IGNORE NULLS); for row_number/rank/dense_rank every
        row up to the current one; for ntile/percent_rank/cume_dist the whole partition (the
        catalog's ``Reach``). O(1).

        >>> from overwindow.logical.parse import parse_window
        >>> calls = ["lead(x, 2) OVER (ORDER BY t) AS a", "rank() OVER (ORDER BY t) AS r"]
        >>> [str(parse_window(c).calls[0].reach) for c in calls]
        ['ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING', 'ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW']
        """
        reach = self.info.reach
        if reach is Reach.FRAME:
            return self.frame if self.order_by else _WHOLE_PARTITION
        if reach is Reach.TO_END:
            return Frame(FrameUnit.ROWS, Bound.unbounded_preceding(), Bound.current_row())
        if reach is Reach.WHOLE:
            return _WHOLE_PARTITION
        back = self.rows_back
        skips = self.skips_nulls
        if back > 0 or (back == 0 and not skips):
            start = Bound.unbounded_preceding() if skips else Bound.preceding(back)
            return Frame(FrameUnit.ROWS, start, Bound.current_row())
        end = Bound.unbounded_following() if skips else Bound.following(-back)
        return Frame(FrameUnit.ROWS, Bound.current_row(), end)

    @cached_property
    def reads(self) -> Frame:
        """The rows the kernels must see to compute a row's value, given how many rows and peer
        groups come before them (the catalog's ``Counts``): the reach, except that row_number, rank
        and dense_rank read only the row's own peer group. O(1).

        >>> from overwindow.logical.parse import parse_window
        >>> str(parse_window("dense_rank() OVER (ORDER BY t) AS r").calls[0].reads)
        'RANGE BETWEEN CURRENT ROW AND CURRENT ROW'
        """
        if self.info.reach is Reach.TO_END:
            return Frame(FrameUnit.RANGE, Bound.current_row(), Bound.current_row())
        return self.reach

    @cached_property
    def unbounded_reach(self) -> str | None:
        """Why a row's value can depend on rows any distance away from it (its ``reach`` has an
        UNBOUNDED side), in SQL words; None when it reaches a bounded number of rows or ORDER BY
        values either side (ROWS, RANGE or GROUPS with offsets or CURRENT ROW, lag/lead without
        IGNORE NULLS). O(1).

        >>> from overwindow.logical.parse import parse_window
        >>> parse_window("rank() OVER (ORDER BY t) AS r").calls[0].unbounded_reach
        'rank() numbers rows from the start of the partition'
        >>> parse_window("sum(x) OVER (ORDER BY t) AS s").calls[0].unbounded_reach
        'sum(...) has an UNBOUNDED frame (RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)'
        >>> parse_window("lag(x) OVER (ORDER BY t) AS p").calls[0].unbounded_reach is None
        True
        """
        frame = self.reach
        if not any(b.kind in _UNBOUNDED for b in (frame.start, frame.end)):
            return None
        reach = self.info.reach
        if reach is Reach.TO_END:
            return f"{self.function}() numbers rows from the start of the partition"
        if reach is Reach.WHOLE:
            return f"{self.function}() depends on the partition's size, so on every row of it"
        if reach is not Reach.FRAME and self.info.previous_value:
            return f"{self.function}(...) looks any distance back for the previous non-NULL value"
        if reach is not Reach.FRAME:
            return f"{self.function}(...) IGNORE NULLS looks any distance for a non-NULL value"
        if not self.order_by:
            return f"{self.function}(...) OVER () without ORDER BY covers the whole partition"
        if self.frame.is_session:
            return f"{self.function}(...) over a session ({self.frame}) chains rows any distance apart"
        return f"{self.function}(...) has an UNBOUNDED frame ({self.frame})"

    @cached_property
    def never_closes(self) -> str | None:
        """Why emit on window close can never emit this call, in SQL words (None when it can): its
        value needs the partition's final size, or every future row. O(1).

        >>> from overwindow.logical.parse import parse_window
        >>> parse_window("cume_dist() OVER (ORDER BY t) AS c").calls[0].never_closes
        "cume_dist() needs the partition's final size, which a stream never knows"
        """
        if self.info.reach is Reach.WHOLE:
            return f"{self.function}() needs the partition's final size, which a stream never knows"
        if self.frame.is_session:  # a session closes at its last row plus the gap (session_close.py)
            return None
        if self.info.uses_frame and self.frame.end.kind is BoundKind.UNBOUNDED_FOLLOWING:
            return "a frame ending at UNBOUNDED FOLLOWING needs every future row, so it never closes"
        return None

    def exprs(self) -> list[Expr]:
        """Every expression over input columns the call reads (arguments, keys, FILTER, default)."""
        exprs = [*self.args, *self.ignored, *self.partition_by, *(k.expr for k in self.order_by)]
        return exprs + [e for e in (self.default, self.filter) if e is not None]

    def columns(self) -> tuple[str, ...]:
        """Every input column the call reads."""
        seen: dict[str, None] = {}
        for e in self.exprs():
            for c in e.columns():
                seen[c] = None
        return tuple(seen)

    def function_sql(self) -> str:
        name = self.function
        if name == "count_star":
            text = "count(*)"
        elif name == "count_distinct":
            text = f"count(DISTINCT {self.args[0]})"
        elif name in ("percentile_cont", "percentile_disc"):
            order = f"{self.args[0]}{' DESC' if self.params[1] else ''}"
            text = f"{name}({sql_literal(self.params[0])}) WITHIN GROUP (ORDER BY {order})"
        elif name == "mode":
            text = f"mode() WITHIN GROUP (ORDER BY {self.args[0]}{' DESC' if self.params[0] else ''})"
        else:
            items = [str(a) for a in (*self.args, *self.ignored)] + [sql_literal(p) for p in self.params]
            if self.default is not None:
                items.append(str(self.default))
            text = f"{name}({', '.join(items)})"
        if self.filter is not None:  # Spark's grammar: FILTER, then IGNORE | RESPECT NULLS
            text += f" FILTER (WHERE {self.filter})"
        if self.ignore_nulls:
            text += " IGNORE NULLS"
        if self.respect_nulls:
            text += " RESPECT NULLS"
        return text

    def over_sql(self) -> str:
        parts = []
        if self.partition_by:
            parts.append("PARTITION BY " + ", ".join(str(e) for e in self.partition_by))
        if self.order_by:
            parts.append("ORDER BY " + ", ".join(str(k) for k in self.order_by))
        if self.info.uses_frame:
            parts.append(str(self.frame))
        return " ".join(parts)

    def __str__(self) -> str:
        return f"{self.function_sql()} OVER ({self.over_sql()}) AS {quote(self.alias)}"


def quote(name: str) -> str:
    """An identifier as Spark SQL: bare when it reads back as itself, else in backticks."""
    import sqlglot

    try:
        back = sqlglot.parse_one(f"SELECT 1 AS {name}", read="spark").expressions[0].alias
    except sqlglot.errors.ParseError:
        back = None
    return name if back == name else "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class WindowExpression:
    """One output column: a window call, or a scalar expression over window calls
    (``price - lag(price) OVER (...) AS diff``). ``expr`` refers to each call by its alias."""

    alias: str
    calls: tuple[WindowCall, ...]
    expr: Expr | None = None  # None: the single call is the column
    text: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.text or str(self.calls[0])


INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # Spark's INT: ROWS offsets, lag offsets, ntile, nth_value


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def _positive_int(n, what: str, where: str) -> None:
    if not _is_int(n) or not 0 < n <= INT_MAX:
        raise WindowSpecError(f"{what} a positive INT constant, got {sql_literal(n)} {where}")


# the frame Spark's ranking functions run on: written out, it is allowed (Spark: "Window Frame ...
# must match the required frame"); lag and lead take none at all
_ROWS_TO_CURRENT = Frame(FrameUnit.ROWS, Bound.unbounded_preceding(), Bound.current_row())
_REQUIRED_FRAMES = {
    "row_number": _ROWS_TO_CURRENT,
    "rank": _ROWS_TO_CURRENT,
    "dense_rank": _ROWS_TO_CURRENT,
    "percent_rank": _ROWS_TO_CURRENT,
    "ntile": _ROWS_TO_CURRENT,
    "cume_dist": Frame(FrameUnit.RANGE, Bound.unbounded_preceding(), Bound.current_row()),
    "counter_diff": _ROWS_TO_CURRENT,
}


def validate(call: WindowCall) -> None:
    """Check a call against SQL's rules; raise WindowSpecError worded in SQL."""
    info = lookup(call.function)
    where = f"in {call.function}(...) AS {call.alias}"
    if not info.least_args <= len(call.args) <= info.n_args:
        wanted = f"{info.least_args} to {info.n_args}" if info.least_args < info.n_args else info.n_args
        raise WindowSpecError(
            f"{call.function}() takes {wanted} argument column(s), got {len(call.args)} {where}"
        )
    if call.ignore_nulls and not info.ignore_nulls:
        raise WindowSpecError(f"IGNORE NULLS is not allowed with {call.function}() {where}")
    if call.respect_nulls and not info.respect_nulls:
        raise WindowSpecError(f"RESPECT NULLS is not allowed with {call.function}() {where}")
    if call.ignore_nulls and call.respect_nulls:
        raise WindowSpecError(f"IGNORE NULLS and RESPECT NULLS together {where}")
    _validate_user_function(call, info, where)
    if call.filter is not None and info.kind is not Kind.AGGREGATE:
        raise WindowSpecError(
            f"FILTER (WHERE ...) is only allowed with aggregate functions, not {call.function}() {where}"
        )
    if call.frame.is_session:
        _validate_session(call, info, where)
    if not info.uses_frame:
        if not call.order_by:
            raise WindowSpecError(
                f"{call.function}() requires the window to be ordered: add ORDER BY {where}"
            )
        required = _REQUIRED_FRAMES.get(call.function)
        if call.frame_given and call.frame != required:
            raise WindowSpecError(
                f"{call.function}() does not take a window frame"
                + (f" other than its own, {required}" if required else "")
                + f"; remove it {where}"
            )
    if call.function == "ntile":
        _positive_int(call.params[0] if call.params else None, "ntile(n) needs", where)
    if call.function in ("lag", "lead"):
        off = call.params[0]
        if not _is_int(off) or not INT_MIN <= off <= INT_MAX:
            raise WindowSpecError(
                f"{call.function}() offset must be an INT constant, got {sql_literal(off)} {where}"
            )
    if call.function == "nth_value":
        if not call.order_by:
            raise WindowSpecError(f"nth_value() requires the window to be ordered: add ORDER BY {where}")
        _positive_int(call.params[0] if call.params else None, "nth_value(x, n) needs", where)
    if call.function in ("percentile_cont", "percentile_disc"):
        p = call.params[0] if call.params else None
        ps = p if isinstance(p, tuple) else (p,)
        if not ps or any(not _is_number(x) or not 0 <= x <= 1 for x in ps):
            raise WindowSpecError(
                f"{call.function} needs a fraction between 0 and 1, got {sql_literal(p)} {where}"
            )
    if info.kind is Kind.AGGREGATE and len(call.params) < len(info.params) - info.optional:
        raise WindowSpecError(f"{call.function}() needs its {', '.join(info.params)} argument {where}")
    _validate_parameters(call, where)
    _validate_frame(call, where)


def _validate_session(call: WindowCall, info, where: str) -> None:
    """SESSION WITH GAP over exactly one ORDER BY column, with functions of a frame. The functions
    that ignore frames (row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag, lead) are
    refused as Spark refuses them any frame but their own: run over the partition as their meaning
    says, they would silently number or read across sessions, which a frame written beside them
    promises not to. O(1)."""
    if not info.uses_frame:
        raise WindowSpecError(
            f"{call.function}() ignores window frames (Spark refuses it any frame but its own), so "
            f"SESSION WITH GAP would not limit it to the session; remove it {where}"
        )
    if len(call.order_by) != 1:
        raise WindowSpecError(
            "SESSION WITH GAP needs exactly one ORDER BY column, whose consecutive values the gap "
            f"separates sessions by; got {len(call.order_by)} {where}"
        )


def _validate_user_function(call: WindowCall, info, where: str) -> None:
    """What a function runs over where it says so (``FunctionInfo.frame_units``, ``filters``): a
    pandas_udf over ROWS and RANGE frames without EXCLUDE or FILTER, as Spark runs one (Spark's
    parser has no EXCLUDE; FILTER: INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX)."""
    what = f"{info.kind_words} {call.function}()".strip()
    if call.filter is not None and not info.filters:
        raise WindowSpecError(f"{what} does not take FILTER (WHERE ...), as in Spark {where}")
    if not info.frame_units:
        return
    units = " or ".join(info.frame_units)
    if call.frame.unit.value not in info.frame_units or call.frame.exclude is not Exclude.NO_OTHERS:
        raise WindowSpecError(
            f"{what} runs over {units} frames without EXCLUDE, as Spark runs it; got {call.frame} {where}"
        )


def hll_register_bits(relative_sd: float) -> int:
    """HyperLogLog++'s register bits p for approx_count_distinct's relativeSD, as Spark computes them
    (Spark refuses p below 4): ceil(2 log2(1.106 / relativeSD)).

    >>> hll_register_bits(0.05), hll_register_bits(0.39)
    (9, 4)
    """
    return math.ceil(2.0 * math.log(1.106 / relative_sd) / math.log(2.0))


def _validate_parameters(call: WindowCall, where: str) -> None:
    """The constant parameters of the approximate aggregates and max_by / min_by, as Spark checks
    them: a fraction (or ARRAY of them) between 0 and 1 and a positive INT accuracy for
    percentile_approx, nb of at least 2 for histogram_numeric, a relativeSD giving HLL++ at least 4
    register bits (below about 0.391) for approx_count_distinct, k from 1 to 100000 for max_by."""
    name, params = call.function, call.params
    if name == "percentile_approx":
        p = params[0]
        ps = p if isinstance(p, tuple) else (p,)
        if not ps or any(not _is_number(x) or not 0 <= x <= 1 for x in ps):
            raise WindowSpecError(
                f"percentile_approx needs a percentage between 0 and 1, got {sql_literal(p)} {where}"
            )
        if len(params) > 1:
            _positive_int(params[1], "percentile_approx's accuracy must be", where)
    if name == "histogram_numeric" and (not _is_int(params[0]) or not 2 <= params[0] <= INT_MAX):
        raise WindowSpecError(
            f"histogram_numeric needs nb, an INT constant of at least 2, got {sql_literal(params[0])} {where}"
        )
    if name == "approx_count_distinct" and params:
        sd = params[0]
        # Spark's register bits: ceil(2 log2(1.106 / relativeSD)), at least 4
        if (
            not _is_number(sd)
            or not 0 < sd
            or math.ceil(2.0 * math.log(1.106 / float(sd)) / math.log(2.0)) < 4
        ):
            raise WindowSpecError(
                f"approx_count_distinct needs a relativeSD above 0 and below 0.391 (HyperLogLog++ needs at "
                f"least 4 register bits), got {sql_literal(sd)} {where}"
            )
    if name in ("max_by", "min_by") and params and (not _is_int(params[0]) or not 1 <= params[0] <= 100_000):
        raise WindowSpecError(
            f"{name}(x, y, k) needs k, an INT constant from 1 to 100000, got {sql_literal(params[0])} {where}"
        )


def _validate_frame(call: WindowCall, where: str) -> None:
    """Spark's frame rules, in its words: no frame starting at UNBOUNDED FOLLOWING or ending at
    UNBOUNDED PRECEDING; INT offsets for ROWS (and GROUPS), numbers or INTERVALs for RANGE; a ROWS
    or GROUPS lower bound past the upper bound is an error (a CURRENT ROW bound is not compared:
    ``ROWS BETWEEN CURRENT ROW AND 2 PRECEDING`` is an empty frame, as in Spark). RANGE bounds are
    compared, and their types matched, once the ORDER BY key's type is known: Spark casts them to
    it first (``range_frame_in_key_type`` in physical/range_offsets.py)."""
    f = call.frame
    if f.is_session:
        return  # its own rules: _validate_session; its gap against the key's type: sessions.py
    if f.start.kind is BoundKind.UNBOUNDED_FOLLOWING or f.end.kind is BoundKind.UNBOUNDED_PRECEDING:
        raise WindowSpecError(
            f'window frame upper bound "{f.end}" does not follow the lower bound "{f.start}" {where}'
        )
    for b, which in ((f.start, "lower"), (f.end, "upper")):
        if not b.has_offset:
            continue
        off = b.offset
        if off is None and f.unit is FrameUnit.RANGE:
            continue  # RANGE NULL PRECEDING: Spark's bound value is NULL (physical/bounds.py)
        if isinstance(off, Interval):
            if off.months and (off.days or off.micros):
                raise WindowSpecError(
                    f"the {which} bound {off} mixes months with days or times: Spark's RANGE frames take "
                    f"a year-month or a day-time interval, not both {where}"
                )
            if f.unit is not FrameUnit.RANGE:
                raise WindowSpecError(
                    f"the {which} bound {off} of a {f.unit.value} frame must be an INT constant {where}"
                )
        elif isinstance(off, (str, dt.datetime)) and f.unit is FrameUnit.RANGE:
            continue  # 'n', TIMESTAMP '...' FOLLOWING: cast to the ORDER BY column's type (range_offsets.py)
        elif not _is_number(off):
            raise WindowSpecError(
                f"the {which} bound of a frame must be a constant number or INTERVAL, "
                f"got {sql_literal(off)} {where}"
            )
        elif f.unit is not FrameUnit.RANGE and (not _is_int(off) or not INT_MIN <= off <= INT_MAX):
            raise WindowSpecError(
                f"the {which} bound {sql_literal(off)} of a {f.unit.value} frame must be an INT "
                f"constant {where}"
            )
    lower, upper = f.start.signed_offset(), f.end.signed_offset()
    if (
        f.unit is not FrameUnit.RANGE
        and _is_number(lower)
        and _is_number(upper)
        and lower > upper
        and not f.one_side
    ):
        raise WindowSpecError(
            f"the lower bound of a window frame must be less than or equal to the upper bound: {f} {where}"
        )
    if f.unit is FrameUnit.RANGE and (f.start.has_offset or f.end.has_offset) and len(call.order_by) != 1:
        raise WindowSpecError(
            f"RANGE with an offset needs exactly one ORDER BY column, got {len(call.order_by)} {where}"
        )
    if (
        f.unit is FrameUnit.RANGE
        and not call.order_by
        and (f.start.kind, f.end.kind) != (BoundKind.UNBOUNDED_PRECEDING, BoundKind.UNBOUNDED_FOLLOWING)
    ):
        # Spark: "A range window frame cannot be used in an unordered window specification" (only
        # the whole partition, RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING, may be)
        raise WindowSpecError(f"a RANGE frame other than the whole partition needs ORDER BY: {f} {where}")
    if f.unit is FrameUnit.GROUPS and not call.order_by:
        raise WindowSpecError(f"GROUPS frames require ORDER BY {where}")
