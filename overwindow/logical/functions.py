"""The catalog of window functions: what each accepts, so calls are checked when they are built, and
what its streaming behaviour depends on (``Reach``), so the streaming machines, the chunked layout and
spec validation ask one place instead of testing function names.

>>> lookup("stddev").name
'stddev_samp'
>>> lookup("rank").reach, lookup("rank").counts
(<Reach.TO_END: 'to the end'>, <Counts.ROWS: 'rows'>)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from overwindow.errors import WindowSpecError


class Kind(Enum):
    RANKING = "ranking"  # row_number, rank, ...: no argument column, no frame
    OFFSET = "offset"  # lag, lead: relative to the current row, no frame
    VALUE = "value"  # first_value, last_value, nth_value: a row picked from the frame
    AGGREGATE = "aggregate"  # every aggregate, built in or user-defined, over the frame


class Reach(Enum):
    """How far a function's value reaches along the ORDER BY: which rows a change to one row can
    alter, hence what a stream must keep, recompute and wait for. ``WindowCall.reach`` turns it into
    a frame for one call (DataFusion keeps the same beside each function: ``uses_window_frame``,
    ``supports_bounded_execution``, ``get_range``).

    What follows from it: emit on window close can emit every function but the WHOLE ones (and
    frames ending at UNBOUNDED FOLLOWING, ``WindowCall.never_closes``); the chunked layout hosts
    only calls whose reach is bounded (FRAME with offsets, ROWS_BEFORE/AFTER without IGNORE NULLS:
    ``WindowCall.unbounded_reach``).
    """

    FRAME = "frame"  # the call's window frame: ROWS offsets, RANGE by value, GROUPS by peer groups
    ROWS_BEFORE = "rows before"  # lag: the row `offset` rows before (any distance with IGNORE NULLS)
    ROWS_AFTER = "rows after"  # lead: the row `offset` rows after (any distance with IGNORE NULLS)
    TO_END = "to the end"  # numbers rows from the partition start: a change moves every row after it
    WHOLE = "whole"  # depends on the partition's size: a change moves every row of it


class Counts(Enum):
    """What a TO_END function counts from the partition's first row, so its value over the rows left
    after evicting or pruning a prefix is the value over those rows plus the prefix's count."""

    ROWS = "rows"  # row_number, rank
    GROUPS = "peer groups"  # dense_rank


@dataclass(frozen=True)
class FunctionInfo:
    name: str
    kind: Kind
    n_args: int  # value columns the function reads (0 for count(*) and ranking)
    params: tuple[str, ...] = ()  # names of constant parameters, in SQL order
    ignore_nulls: bool = False  # IGNORE NULLS allowed
    numeric_only: bool = False  # the argument must be a number (or for avg, interval-free)
    reach: Reach = Reach.FRAME  # how far its value reaches (streaming: what to keep and recompute)
    counts: Counts | None = None  # TO_END only: what it counts from the partition's first row

    @property
    def uses_frame(self) -> bool:
        """Whether the call's window frame decides its value (aggregates, first/last/nth_value);
        ranking and offset functions take no frame."""
        return self.reach is Reach.FRAME


def _f(name, kind, n_args=1, params=(), **kw):
    return FunctionInfo(name, kind, n_args, tuple(params), **kw)


BUILTINS: dict[str, FunctionInfo] = {
    f.name: f
    for f in [
        _f("row_number", Kind.RANKING, 0, reach=Reach.TO_END, counts=Counts.ROWS),
        _f("rank", Kind.RANKING, 0, reach=Reach.TO_END, counts=Counts.ROWS),
        _f("dense_rank", Kind.RANKING, 0, reach=Reach.TO_END, counts=Counts.GROUPS),
        _f("percent_rank", Kind.RANKING, 0, reach=Reach.WHOLE),
        _f("cume_dist", Kind.RANKING, 0, reach=Reach.WHOLE),
        _f("ntile", Kind.RANKING, 0, ["buckets"], reach=Reach.WHOLE),
        _f("lag", Kind.OFFSET, 1, ["offset", "default"], ignore_nulls=True, reach=Reach.ROWS_BEFORE),
        _f("lead", Kind.OFFSET, 1, ["offset", "default"], ignore_nulls=True, reach=Reach.ROWS_AFTER),
        _f("first_value", Kind.VALUE, 1, ignore_nulls=True),
        _f("last_value", Kind.VALUE, 1, ignore_nulls=True),
        _f("nth_value", Kind.VALUE, 1, ["n"], ignore_nulls=True),
        _f("count", Kind.AGGREGATE, 1),
        _f("count_star", Kind.AGGREGATE, 0),
        _f("count_distinct", Kind.AGGREGATE, 1),
        _f("sum", Kind.AGGREGATE, 1, numeric_only=True),
        _f("avg", Kind.AGGREGATE, 1, numeric_only=True),
        _f("min", Kind.AGGREGATE, 1),
        _f("max", Kind.AGGREGATE, 1),
        _f("stddev_samp", Kind.AGGREGATE, 1, numeric_only=True),
        _f("stddev_pop", Kind.AGGREGATE, 1, numeric_only=True),
        _f("var_samp", Kind.AGGREGATE, 1, numeric_only=True),
        _f("var_pop", Kind.AGGREGATE, 1, numeric_only=True),
        _f("bool_and", Kind.AGGREGATE, 1),
        _f("bool_or", Kind.AGGREGATE, 1),
        _f("median", Kind.AGGREGATE, 1),
        _f("percentile_cont", Kind.AGGREGATE, 1, ["fraction"]),
        _f("percentile_disc", Kind.AGGREGATE, 1, ["fraction"]),
        _f("mode", Kind.AGGREGATE, 1),
    ]
}

# Other spellings accepted in SQL text (Spark and DuckDB names), mapped to the catalog name.
ALIASES = {
    "stddev": "stddev_samp",
    "std": "stddev_samp",
    "variance": "var_samp",
    "every": "bool_and",
    "some": "bool_or",
    "any": "bool_or",
    "quantile_cont": "percentile_cont",
    "quantile_disc": "percentile_disc",
    "percentile": "percentile_cont",
    "mean": "avg",
}

_USER_AGGREGATES: dict[str, FunctionInfo] = {}
_USER_CLASSES: dict[str, type] = {}


def register_user_aggregate(name: str, cls: type) -> None:
    """Make ``name(x) OVER (...)`` call the Python aggregate class ``cls`` (see overwindow.udaf)."""
    key = name.lower()
    if key in BUILTINS or key in ALIASES:
        raise WindowSpecError(f"cannot register aggregate {name!r}: it is a built-in function name")
    _USER_AGGREGATES[key] = FunctionInfo(key, Kind.AGGREGATE, 1)
    _USER_CLASSES[key] = cls


def user_aggregate_class(name: str) -> type | None:
    return _USER_CLASSES.get(name)


def lookup(name: str) -> FunctionInfo:
    """The catalog entry for a SQL function name (case-insensitive, aliases resolved)."""
    key = name.lower()
    key = ALIASES.get(key, key)
    info = BUILTINS.get(key) or _USER_AGGREGATES.get(key)
    if info is None:
        known = ", ".join(sorted(set(BUILTINS) - {"count_star", "count_distinct"} | set(_USER_AGGREGATES)))
        raise WindowSpecError(
            f"unknown window function {name}(); known functions: {known} "
            f"(register a Python aggregate with overwindow.register_aggregate)"
        )
    return info
