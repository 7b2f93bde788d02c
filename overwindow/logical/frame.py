"""Window frames: ``ROWS | RANGE | GROUPS BETWEEN <bound> AND <bound> [EXCLUDE ...]``.

Frozen and hashable; ``str(frame)`` prints SQL.

>>> str(Frame(FrameUnit.ROWS, Bound.preceding(3), Bound.current_row()))
'ROWS BETWEEN 3 PRECEDING AND CURRENT ROW'
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class FrameUnit(Enum):
    ROWS = "ROWS"
    RANGE = "RANGE"
    GROUPS = "GROUPS"


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
    """A calendar interval: months plus days plus microseconds (Spark's CalendarInterval)."""

    months: int = 0
    days: int = 0
    micros: int = 0

    def __str__(self) -> str:
        parts = []
        if self.months:
            parts.append(f"{self.months} MONTHS")
        if self.days:
            parts.append(f"{self.days} DAYS")
        if self.micros or not parts:
            parts.append(f"{self.micros} MICROSECONDS")
        # one unit prints as Spark's INTERVAL 3 DAYS; several as one string literal
        return "INTERVAL " + parts[0] if len(parts) == 1 else "INTERVAL '" + " ".join(parts) + "'"

    @property
    def is_negative(self) -> bool:
        return self.months < 0 or self.days < 0 or self.micros < 0


@dataclass(frozen=True)
class Bound:
    """One end of a frame. ``offset`` is a number (ROWS, GROUPS, numeric RANGE) or an Interval."""

    kind: BoundKind
    offset: int | float | Interval | None = None

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
        """Offset as a signed distance in sort order: PRECEDING negative, FOLLOWING positive."""
        if self.kind is BoundKind.PRECEDING:
            return -self.offset if not isinstance(self.offset, Interval) else self.offset
        return self.offset

    def __str__(self) -> str:
        if self.has_offset:
            return f"{self.offset} {self.kind.value}"
        return self.kind.value


@dataclass(frozen=True)
class Frame:
    unit: FrameUnit
    start: Bound
    end: Bound
    exclude: Exclude = Exclude.NO_OTHERS

    @staticmethod
    def default(has_order_by: bool) -> Frame:
        """SQL's default: with ORDER BY, RANGE UNBOUNDED PRECEDING to CURRENT ROW (peers
        included); without, the whole partition."""
        end = Bound.current_row() if has_order_by else Bound.unbounded_following()
        return Frame(FrameUnit.RANGE, Bound.unbounded_preceding(), end)

    @property
    def is_whole_partition(self) -> bool:
        return (
            self.start.kind is BoundKind.UNBOUNDED_PRECEDING
            and self.end.kind is BoundKind.UNBOUNDED_FOLLOWING
            and self.exclude is Exclude.NO_OTHERS
        )

    def __str__(self) -> str:
        text = f"{self.unit.value} BETWEEN {self.start} AND {self.end}"
        if self.exclude is not Exclude.NO_OTHERS:
            text += f" EXCLUDE {self.exclude.value}"
        return text
