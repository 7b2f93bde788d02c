"""Window frames: ``ROWS | RANGE | GROUPS BETWEEN <bound> AND <bound> [EXCLUDE ...]``, and
``SESSION WITH GAP <gap>`` (each row's frame is its session: docs/sessions.md).

Frozen and hashable; ``str(frame)`` prints SQL.

>>> str(Frame(FrameUnit.ROWS, Bound.preceding(3), Bound.current_row()))
'ROWS BETWEEN 3 PRECEDING AND CURRENT ROW'
>>> str(Frame.session(Interval(micros=1_800_000_000, fields="MINUTE")))
"SESSION WITH GAP INTERVAL '30' MINUTE"
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass, field
from enum import Enum

from overwindow.logical.expr import sql_literal


class FrameUnit(Enum):
    ROWS = "ROWS"
    RANGE = "RANGE"
    GROUPS = "GROUPS"
    SESSION = "SESSION"


_DAY = 86_400_000_000  # microseconds


class BoundKind(Enum):
    UNBOUNDED_PRECEDING = "UNBOUNDED PRECEDING"
    PRECEDING = "PRECEDING"
    CURRENT_ROW = "CURRENT ROW"
    FOLLOWING = "FOLLOWING"
    UNBOUNDED_FOLLOWING = "UNBOUNDED FOLLOWING"


class Exclude(Enum):
    NO_OTHERS = "NO OTHERS"
    CURRENT_ROW = "CURRENT ROW"
    GROUP = "GROUP"
    TIES = "TIES"


@dataclass(frozen=True)
class Interval:
    """An interval: months, or days plus microseconds; ``fields`` names its Spark type (``DAY``,
    ``HOUR``, ``YEAR TO MONTH``, ``DAY TO SECOND``, ...), which a frame's two bounds must share."""

    months: int = 0
    days: int = 0
    micros: int = 0
    fields: str = field(default="", compare=False)

    def negated(self) -> Interval:
        return Interval(-self.months, -self.days, -self.micros, self.fields)

    @property
    def year_month(self) -> bool:
        """A year-month interval (YEAR, MONTH, YEAR TO MONTH)."""
        return bool(self.months) or self.fields in ("YEAR", "MONTH", "YEAR TO MONTH")

    def __str__(self) -> str:
        """Spark's ANSI literal of the interval's type, which reads back as the same value and type:
        ``INTERVAL '3' DAY``, ``INTERVAL '1-1' YEAR TO MONTH``, ``INTERVAL '1 02:00:00' DAY TO SECOND``.

        >>> str(Interval(months=13, fields="YEAR TO MONTH")), str(Interval(days=1, micros=7_200_000_000))
        ("INTERVAL '1-1' YEAR TO MONTH", "INTERVAL '1 02:00:00' DAY TO SECOND")
        """
        sign = "-" if self.months < 0 or self.days * _DAY + self.micros < 0 else ""
        if self.year_month:
            m = abs(self.months)
            if self.fields == "YEAR" and m % 12 == 0:
                return f"INTERVAL '{sign}{m // 12}' YEAR"
            if self.fields == "MONTH":
                return f"INTERVAL '{sign}{m}' MONTH"
            return f"INTERVAL '{sign}{m // 12}-{m % 12}' YEAR TO MONTH"
        total = abs(self.days * _DAY + self.micros)
        fields = self.fields.split(" TO ") if self.fields else ["DAY", "SECOND"]
        first, last = fields[0], fields[-1]
        names = ["DAY", "HOUR", "MINUTE", "SECOND"]
        sizes = {"DAY": _DAY, "HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000}
        if last != "SECOND" and total % sizes[last]:
            last = "SECOND"  # a value finer than its fields (built in code): print every digit
        parts, rest = [], total
        for name in names[names.index(first) : names.index(last) + 1]:
            amount, rest = divmod(rest, sizes[name])
            parts.append(f"{amount}" if name == first else f"{amount:02d}")
        if rest:  # microseconds: the fraction of the last (SECOND) field
            parts[-1] += f".{rest:06d}".rstrip("0")
        text = parts[0] if first == "DAY" else ":".join(parts)
        if first == "DAY" and len(parts) > 1:
            text = f"{parts[0]} {':'.join(parts[1:])}"
        return f"INTERVAL '{sign}{text}' {first if first == last else f'{first} TO {last}'}"

    @property
    def is_negative(self) -> bool:
        return self.months < 0 or self.days < 0 or self.micros < 0


@dataclass(frozen=True)
class Bound:
    """One end of a frame. ``offset`` is a number (ROWS, GROUPS, numeric RANGE) or an Interval."""

    kind: BoundKind
    offset: int | float | decimal.Decimal | Interval | None = None
    # written with a negative offset (-1 PRECEDING), which SQL refuses and Spark reads the other way
    flipped: bool = field(default=False, compare=False, repr=False)

    def __post_init__(self):
        # Spark reads -1 PRECEDING as 1 FOLLOWING (the bound is value - offset): keep one spelling
        if self.has_offset and _negative(self.offset):
            flipped = BoundKind.FOLLOWING if self.kind is BoundKind.PRECEDING else BoundKind.PRECEDING
            object.__setattr__(self, "flipped", True)
            object.__setattr__(self, "kind", flipped)
            object.__setattr__(
                self, "offset", self.offset.negated() if isinstance(self.offset, Interval) else -self.offset
            )

    @staticmethod
    def unbounded_preceding() -> Bound:
        return Bound(BoundKind.UNBOUNDED_PRECEDING)

    @staticmethod
    def preceding(offset) -> Bound:
        return Bound(BoundKind.PRECEDING, offset)

    @staticmethod
    def current_row() -> Bound:
        return Bound(BoundKind.CURRENT_ROW)

    @staticmethod
    def following(offset) -> Bound:
        return Bound(BoundKind.FOLLOWING, offset)

    @staticmethod
    def unbounded_following() -> Bound:
        return Bound(BoundKind.UNBOUNDED_FOLLOWING)

    @property
    def has_offset(self) -> bool:
        return self.kind in (BoundKind.PRECEDING, BoundKind.FOLLOWING)

    def signed_offset(self):
        """An offset as a signed distance in sort order (PRECEDING negative, FOLLOWING positive):
        the number, or an INTERVAL's months or microseconds (Spark compares two intervals of one
        type); None for the other bounds."""
        if not self.has_offset:
            return None
        size = self.offset
        if size is None:  # RANGE NULL PRECEDING: no distance
            return None
        if isinstance(size, Interval):
            size = size.months if size.year_month else size.days * _DAY + size.micros
        return -size if self.kind is BoundKind.PRECEDING else size

    def __str__(self) -> str:
        if self.has_offset:
            return f"{sql_literal(self.offset)} {self.kind.value}"
        return self.kind.value


def _negative(offset) -> bool:
    if isinstance(offset, Interval):
        return offset.months < 0 or offset.days * _DAY + offset.micros < 0
    return isinstance(offset, (int, float, decimal.Decimal)) and not isinstance(offset, bool) and offset < 0


@dataclass(frozen=True)
class Frame:
    unit: FrameUnit
    start: Bound
    end: Bound
    exclude: Exclude = Exclude.NO_OTHERS
    # SESSION frames: the gap (a positive number, or a day-time INTERVAL) within which consecutive
    # ORDER BY values chain rows into one session; None for the other units
    gap: int | float | decimal.Decimal | Interval | None = None

    @staticmethod
    def session(gap) -> Frame:
        """``SESSION WITH GAP gap``: a row's frame is its session, the run of its partition's rows
        whose consecutive ORDER BY values lie at most ``gap`` apart (peers always share one). Its
        bounds say how far a session may reach, any distance either side; where it ends is found
        from the rows (``physical/sessions.session_bounds``). O(1)."""
        return Frame(FrameUnit.SESSION, Bound.unbounded_preceding(), Bound.unbounded_following(), gap=gap)

    @property
    def is_session(self) -> bool:
        return self.unit is FrameUnit.SESSION

    @staticmethod
    def default(has_order_by: bool) -> Frame:
        """SQL's default: with ORDER BY, RANGE UNBOUNDED PRECEDING to CURRENT ROW (peers
        included); without, the whole partition (Spark spells it ROWS ... UNBOUNDED FOLLOWING)."""
        if not has_order_by:
            return Frame(FrameUnit.ROWS, Bound.unbounded_preceding(), Bound.unbounded_following())
        return Frame(FrameUnit.RANGE, Bound.unbounded_preceding(), Bound.current_row())

    @property
    def one_side(self) -> bool:
        """Whether both bounds are offsets on one side of the current row (``1 PRECEDING AND 5
        PRECEDING``, ``5 FOLLOWING AND 1 FOLLOWING``): with the start past the end, such a frame is
        SQL's empty frame (PostgreSQL and DuckDB: NULL sums, count 0), where Spark refuses it; a
        start past the end across the current row (``1 FOLLOWING AND 1 PRECEDING``), or written
        with a negative offset (``-2 PRECEDING AND 1 FOLLOWING``, which SQL refuses), all refuse.

        >>> Frame(FrameUnit.ROWS, Bound.preceding(1), Bound.preceding(5)).one_side
        True
        """
        ends = (self.start, self.end)
        return self.start.kind is self.end.kind and self.start.has_offset and not any(b.flipped for b in ends)

    @property
    def is_whole_partition(self) -> bool:
        return (
            not self.is_session
            and self.start.kind is BoundKind.UNBOUNDED_PRECEDING
            and self.end.kind is BoundKind.UNBOUNDED_FOLLOWING
            and self.exclude is Exclude.NO_OTHERS
        )

    def __str__(self) -> str:
        if self.is_session:
            return f"SESSION WITH GAP {sql_literal(self.gap)}"
        text = f"{self.unit.value} BETWEEN {self.start} AND {self.end}"
        if self.exclude is not Exclude.NO_OTHERS:
            text += f" EXCLUDE {self.exclude.value}"
        return text
