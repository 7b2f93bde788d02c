"""The catalog of window functions: one entry per function, carrying what it accepts (its argument
columns and what each may be, its constant parameters), the rule of its result type, and what its
streaming behaviour depends on (``Reach``). Calls are checked against it when they are built, the
planner reads its types from it and keeps one kernel per name (physical/registry.py), and the
streaming machines, the chunked layout and spec validation ask it instead of testing names.

>>> lookup("stddev").name
'stddev_samp'
>>> lookup("rank").reach, lookup("rank").counts
(<Reach.TO_END: 'to the end'>, <Counts.ROWS: 'rows'>)
>>> info = lookup("regr_slope")
>>> info.args, info.result
((<Accepts.NUMERIC: 'a numeric'>, <Accepts.NUMERIC: 'a numeric'>), <Result.DOUBLE: 'DOUBLE'>)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from overwindow.errors import WindowSpecError


class Kind(Enum):
    RANKING = "ranking"  # row_number, rank, ...: no argument column, no frame
    OFFSET = "offset"  # lag, lead, counter_diff: relative to the current row, no frame
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


class Accepts(Enum):
    """What one argument column of a function may be, in SQL words (the planner checks a column's
    type against it, ``physical.types.accepts``), as Spark's type checks decide."""

    ANY = "any"
    NUMERIC = "a numeric"  # a number (Spark casts it to DOUBLE for the moments)
    SUMMABLE = "a numeric or INTERVAL"  # sum, avg: numbers, day-time intervals (and TIMESTAMP seconds)
    BOOLEAN = "a BOOLEAN"
    INTEGRAL = "an integer (TINYINT, SMALLINT, INT or BIGINT)"
    ORDERED = "a numeric, DATE, TIMESTAMP or INTERVAL"  # median, percentile_cont, percentile_approx
    TEXT = "a STRING or BINARY (or a value Spark casts to STRING)"  # listagg
    ORDERABLE = "an orderable"  # max_by's ordering: any type but MAP
    # collect_set, approx_count_distinct: Spark takes nested types too; its hashes (the set's order,
    # HyperLogLog++'s registers) are reproduced for these
    SETTABLE = "a non-nested"
    ARRAY = "an ARRAY"  # collect_union
    TIMESTAMP = "a TIMESTAMP"  # counter_diff's start time


class Result(Enum):
    """The rule of a function's result type (``physical.types.result_type`` applies it to the
    argument types, Spark's rules)."""

    INT = "INT"
    BIGINT = "BIGINT"
    DOUBLE = "DOUBLE"
    BOOLEAN = "BOOLEAN"
    ARG = "the argument's type"  # of the argument ``result_of``
    SUM = "sum's"  # BIGINT of integers, DOUBLE of floats, DECIMAL(p + 10, s), the interval itself
    AVG = "avg's"  # DOUBLE, DECIMAL(p + 4, s + 4), INTERVAL DAY TO SECOND
    PERCENTILE = "a percentile's"  # DOUBLE of numbers, the type of DATE/TIMESTAMP, an ARRAY of fractions
    ARRAY = "an ARRAY of the argument's type"
    ARG_OR_ARRAY = "the argument's type, or an ARRAY of it with k"  # max_by(x, y [, k])
    ARG_OR_ARRAYS = "the argument's type, or an ARRAY of it for an ARRAY of fractions"
    TEXT = "STRING, or BINARY of BINARY"  # listagg
    HISTOGRAM = "ARRAY<STRUCT<x, y: DOUBLE>>"  # histogram_numeric
    USER = "the Python aggregate's own"


@dataclass(frozen=True)
class FunctionInfo:
    """One function: its value arguments (``args``, what each may be), its constant parameters
    (``params``, by name, in SQL order after the arguments, ``optional`` of them may be left out),
    its result type rule, which arguments' NULLs leave a row out of the frame (``skips``: None is
    all of them), IGNORE / RESPECT NULLS, and its reach."""

    name: str
    kind: Kind
    args: tuple[Accepts, ...] = ()
    params: tuple[str, ...] = ()
    result: Result = Result.ARG
    result_of: int = 0  # the argument the result type follows (regr_avgx: 1, x)
    skips: tuple[int, ...] | None = None  # arguments whose NULL leaves a row out (None: all)
    ignore_nulls: bool = False  # IGNORE NULLS allowed
    respect_nulls: bool = False  # RESPECT NULLS allowed (collect_list: NULLs kept in the array)
    optional: int = 0  # how many of the last params may be left out
    min_args: int | None = None  # fewer arguments than ``args`` it may take (None: all of them)
    previous_value: bool = False  # reads the previous row whose first argument is not NULL
    reach: Reach = Reach.FRAME  # how far its value reaches (streaming: what to keep and recompute)
    counts: Counts | None = None  # TO_END only: what it counts from the partition's first row
    # the frame units it takes, by name ("ROWS", "RANGE"; empty: every unit) and whether it takes
    # FILTER (WHERE ...): a pandas_udf runs where Spark runs one (overwindow.spark.pandas_udf)
    frame_units: tuple[str, ...] = ()
    filters: bool = True
    kind_words: str = ""  # what the function is, for messages ("the pandas_udf"): empty for built-ins

    @property
    def n_args(self) -> int:
        """Value columns the function reads (0 for count(*) and ranking)."""
        return len(self.args)

    @property
    def least_args(self) -> int:
        """The fewest value columns a call may give (counter_diff's start time may be left out)."""
        return self.n_args if self.min_args is None else self.min_args

    @property
    def uses_frame(self) -> bool:
        """Whether the call's window frame decides its value (aggregates, first/last/nth_value);
        ranking and offset functions take no frame."""
        return self.reach is Reach.FRAME

    def skipped(self) -> tuple[int, ...]:
        """The arguments whose NULL leaves a row out of the frame."""
        return tuple(range(self.n_args)) if self.skips is None else self.skips


_A, _N, _S, _O = Accepts.ANY, Accepts.NUMERIC, Accepts.SUMMABLE, Accepts.ORDERED
_AGG = Kind.AGGREGATE


def _f(name, kind, args=(), params=(), result=Result.ARG, **kw):
    return FunctionInfo(name, kind, tuple(args), tuple(params), result, **kw)


def _moment(name: str, n: int = 2) -> FunctionInfo:
    """A DOUBLE statistic of ``n`` numbers per row, over the rows where none is NULL."""
    return _f(name, _AGG, (_N,) * n, result=Result.DOUBLE)


BUILTINS: dict[str, FunctionInfo] = {
    f.name: f
    for f in [
        _f("row_number", Kind.RANKING, result=Result.INT, reach=Reach.TO_END, counts=Counts.ROWS),
        _f("rank", Kind.RANKING, result=Result.INT, reach=Reach.TO_END, counts=Counts.ROWS),
        _f("dense_rank", Kind.RANKING, result=Result.INT, reach=Reach.TO_END, counts=Counts.GROUPS),
        _f("percent_rank", Kind.RANKING, result=Result.DOUBLE, reach=Reach.WHOLE),
        _f("cume_dist", Kind.RANKING, result=Result.DOUBLE, reach=Reach.WHOLE),
        _f("ntile", Kind.RANKING, (), ["buckets"], Result.INT, reach=Reach.WHOLE),
        _f("lag", Kind.OFFSET, (_A,), ["offset", "default"], ignore_nulls=True, reach=Reach.ROWS_BEFORE),
        _f("lead", Kind.OFFSET, (_A,), ["offset", "default"], ignore_nulls=True, reach=Reach.ROWS_AFTER),
        # counter_diff(value [, start_time]): value minus the previous non-NULL value (NULL at a
        # reset), so it reads the previous non-NULL row as lag(value) IGNORE NULLS does
        _f(
            "counter_diff",
            Kind.OFFSET,
            (Accepts.NUMERIC, Accepts.TIMESTAMP),
            reach=Reach.ROWS_BEFORE,
            min_args=1,
            previous_value=True,
        ),
        _f("first_value", Kind.VALUE, (_A,), ignore_nulls=True),
        _f("last_value", Kind.VALUE, (_A,), ignore_nulls=True),
        _f("nth_value", Kind.VALUE, (_A,), ["n"], ignore_nulls=True),
        _f("count", _AGG, (_A,), result=Result.BIGINT),
        _f("count_star", _AGG, result=Result.BIGINT),
        _f("count_distinct", _AGG, (_A,), result=Result.BIGINT),
        _f("sum", _AGG, (_S,), result=Result.SUM),
        _f("avg", _AGG, (_S,), result=Result.AVG),
        # the sum and average, NULL where Spark's DECIMAL, BIGINT or INTERVAL sum overflows
        _f("try_sum", _AGG, (_S,), result=Result.SUM),
        _f("try_avg", _AGG, (_S,), result=Result.AVG),
        _f("min", _AGG, (Accepts.ORDERABLE,)),
        _f("max", _AGG, (Accepts.ORDERABLE,)),
        _moment("stddev_samp", 1),
        _moment("stddev_pop", 1),
        _moment("var_samp", 1),
        _moment("var_pop", 1),
        _moment("skewness", 1),
        _moment("kurtosis", 1),
        # (y, x): over the rows where neither is NULL
        _moment("covar_pop"),
        _moment("covar_samp"),
        _moment("corr"),
        _f("regr_count", _AGG, (_N, _N), result=Result.BIGINT),
        _f("regr_avgx", _AGG, (_N, _N), result=Result.AVG, result_of=1),
        _f("regr_avgy", _AGG, (_N, _N), result=Result.AVG),
        _moment("regr_sxx"),
        _moment("regr_syy"),
        _moment("regr_sxy"),
        _moment("regr_slope"),
        _moment("regr_intercept"),
        _moment("regr_r2"),
        _f("bool_and", _AGG, (Accepts.BOOLEAN,), result=Result.BOOLEAN),
        _f("bool_or", _AGG, (Accepts.BOOLEAN,), result=Result.BOOLEAN),
        _f("bit_and", _AGG, (Accepts.INTEGRAL,)),
        _f("bit_or", _AGG, (Accepts.INTEGRAL,)),
        _f("bit_xor", _AGG, (Accepts.INTEGRAL,)),
        _f("median", _AGG, (_O,), result=Result.PERCENTILE),
        _f("percentile_cont", _AGG, (_O,), ["fraction"], Result.PERCENTILE),
        _f("percentile_disc", _AGG, (_A,), ["fraction"], Result.PERCENTILE),
        _f("mode", _AGG, (_A,)),
        # collect_list(x) [RESPECT NULLS]: the frame's values in frame order (NULLs kept with
        # RESPECT NULLS); collect_set(x): its distinct values in Spark's hash set's order
        _f("collect_list", _AGG, (_A,), result=Result.ARRAY, ignore_nulls=True, respect_nulls=True),
        _f(
            "collect_set",
            _AGG,
            (Accepts.SETTABLE,),
            result=Result.ARRAY,
            ignore_nulls=True,
            respect_nulls=True,
        ),
        _f("collect_union", _AGG, (Accepts.ARRAY,)),
        _f("listagg", _AGG, (Accepts.TEXT,), ["delimiter"], Result.TEXT, optional=1),
        # max_by(x, y [, k]): over the rows whose y is not NULL (x may be)
        _f("max_by", _AGG, (_A, Accepts.ORDERABLE), ["k"], Result.ARG_OR_ARRAY, skips=(1,), optional=1),
        _f("min_by", _AGG, (_A, Accepts.ORDERABLE), ["k"], Result.ARG_OR_ARRAY, skips=(1,), optional=1),
        # Spark's approximate aggregates, by its own algorithms (physical/kernels/approximate.py)
        _f("percentile_approx", _AGG, (_O,), ["percentage", "accuracy"], Result.ARG_OR_ARRAYS, optional=1),
        _f("approx_count_distinct", _AGG, (Accepts.SETTABLE,), ["relativeSD"], Result.BIGINT, optional=1),
        _f("histogram_numeric", _AGG, (_O,), ["nb"], Result.HISTOGRAM),
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
    "array_agg": "collect_list",
    "string_agg": "listagg",
    "approx_percentile": "percentile_approx",
}

_USER_AGGREGATES: dict[str, FunctionInfo] = {}
_USER_CLASSES: dict[str, type] = {}


def register_user_aggregate(name: str, cls: type) -> None:
    """Make ``name(x) OVER (...)`` call the Python aggregate class ``cls`` (see overwindow.udaf): one
    argument whose NULLs leave a row out, or what ``cls.function_info(name)`` says where it says it
    (a pandas_udf: its arguments, NULLs kept, its frames; overwindow.spark.pandas_udf)."""
    key = name.lower()
    if key in BUILTINS or key in ALIASES:
        raise WindowSpecError(f"cannot register aggregate {name!r}: it is a built-in function name")
    describe = getattr(cls, "function_info", None)
    info = describe(key) if callable(describe) else None
    _USER_AGGREGATES[key] = info or FunctionInfo(key, Kind.AGGREGATE, (Accepts.ANY,), result=Result.USER)
    _USER_CLASSES[key] = cls


def user_aggregate_class(name: str) -> type | None:
    return _USER_CLASSES.get(name)


def lookup(name: str) -> FunctionInfo:
    """The catalog entry for a SQL function name (case-insensitive, aliases resolved)."""
    key = name.lower()
    key = ALIASES.get(key, key)
    info = BUILTINS.get(key) or _USER_AGGREGATES.get(key)
    if info is None:
        lookup_refused(key)
        known = ", ".join(sorted(set(BUILTINS) - {"count_star", "count_distinct"} | set(_USER_AGGREGATES)))
        raise WindowSpecError(
            f"unknown window function {name}(); known functions: {known} "
            f"(register a Python aggregate with overwindow.register_aggregate)"
        )
    return info


def lookup_refused(name: str) -> None:
    """Raise the refusal of a function overwindow refuses by name (``REFUSED``); nothing for others."""
    refused = REFUSED.get(name.lower())
    if refused is not None:
        raise WindowSpecError(f"{name.lower()}() is not computed over a window by overwindow: {refused}")


# Spark's aggregate and window functions that overwindow refuses by name, and why (the registry
# test, tests/spark/test_function_registry.py, holds every function Spark lists to being computed
# or here).
_SKETCH = (
    "it returns a sketch whose bytes are Apache DataSketches' serialization, which overwindow does "
    "not reproduce; compute the sketch in Spark"
)
REFUSED: dict[str, str] = {
    **dict.fromkeys(
        [
            "hll_sketch_agg",
            "hll_union_agg",
            "theta_sketch_agg",
            "theta_union_agg",
            "theta_intersection_agg",
            "kll_sketch_agg_bigint",
            "kll_sketch_agg_double",
            "kll_sketch_agg_float",
            "kll_merge_agg_bigint",
            "kll_merge_agg_double",
            "kll_merge_agg_float",
            "tuple_sketch_agg_double",
            "tuple_sketch_agg_integer",
            "tuple_union_agg_double",
            "tuple_union_agg_integer",
            "tuple_intersection_agg_double",
            "tuple_intersection_agg_integer",
        ],
        _SKETCH,
    ),
    **dict.fromkeys(
        ["bitmap_construct_agg", "bitmap_or_agg", "bitmap_and_agg"],
        "it builds Spark's bitmap BINARY values; compute them in Spark",
    ),
    "count_min_sketch": "it returns Spark's serialized count-min sketch (BINARY); compute it in Spark",
    **dict.fromkeys(
        ["approx_top_k", "approx_top_k_accumulate", "approx_top_k_combine"],
        "its result comes from an Apache DataSketches frequent-items sketch whose state and ties "
        "overwindow does not reproduce; compute it in Spark",
    ),
    "grouping": "it is only defined with GROUP BY ... ROLLUP, CUBE or GROUPING SETS, never over a window "
    "(Spark: UNSUPPORTED_EXPR_FOR_WINDOW)",
    "grouping_id": "it is only defined with GROUP BY ... ROLLUP, CUBE or GROUPING SETS, never over a window "
    "(Spark: UNSUPPORTED_EXPR_FOR_WINDOW)",
    "measure": "it reads a measure of a metric view, which exists only in Spark's catalog (over a window "
    "Spark itself fails: INTERNAL_ERROR)",
}
