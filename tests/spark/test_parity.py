"""Parity with Spark: overwindow's batch evaluator against Spark's own batch window functions.

Every seed builds one random table (``make_table``: INT, BIGINT, DOUBLE with NULL/NaN/+-inf/-0.0,
DECIMAL(12,2), DECIMAL(38,10) with up to 30 digits, STRING, BOOLEAN, DATE and TIMESTAMP reaching
back before 1970; tied keys, NULL partition keys, one-row partitions) and a batch of random calls
(``random_call``) over every window function and frame Spark accepts: ranking, lag/lead with
offsets, defaults and IGNORE NULLS, first/last/nth_value with IGNORE NULLS, the aggregates, ROWS
and RANGE frames with every bound kind, numeric, day-time and year-month INTERVAL offsets,
ASC/DESC and NULLS FIRST/LAST spelled or left to the default. The batch runs as a few Spark SQL
SELECTs over the table and as one ``overwindow.evaluate`` over the Arrow table and one over the
same table as pandas (``pd.ArrowDtype`` columns, which keep NaN apart from NULL). Every row of
every call must agree: values (floats to a relative 1e-9, NaN equal to NaN, DECIMALs exactly,
NULL equal to NULL) and result types (overwindow's Arrow type mapped to Spark's by
``from_arrow_type``, a day-time interval's by the type a stream declares for it, against the type
of Spark's column).

Ties: Spark orders peers arbitrarily, overwindow by input position. Calls whose value depends on
the order among peers (row_number, ntile, lag, lead, ROWS frames, first/last/nth_value over RANGE
frames without offsets) get the unique ``rid`` as their last ORDER BY key; first/last/nth_value
over a RANGE frame with offsets (one ORDER BY key, so no ``rid``) read the key itself, which all
peers share, or order by ``rid``.

Where overwindow is deliberately more exact than Spark, Spark's plain answer is not the oracle
(``Call.oracle``):

* ``sum``/``avg`` of DOUBLE: overwindow rounds the exact frame sum once; Spark adds in DOUBLE, in
  frame order (``1e20 + 1 - 1e20`` is 0 or 1 depending on the order). The oracle is Spark summing
  the values cast to DECIMAL(38,10), which holds every finite value of the table exactly (they
  are multiples of 2**-10 below 1e21): the sum is Spark's exact DECIMAL sum, the average that sum
  over Spark's count, rounded once. Frames holding NaN or an infinity have no DECIMAL sum; there
  Spark's DOUBLE sum and average are NaN or an infinity, computed without rounding, and are the
  oracle as they are.
* variances and standard deviations (any numeric argument): Spark updates its moments in DOUBLE
  (Welford), which loses everything on values such as 1e20 beside 1; overwindow computes from
  exact sums. The oracle is the frame's values as Spark collects them (``collect_list`` over the
  same window), each converted to DOUBLE as both engines convert their arguments, then exact
  rational arithmetic (``exact_moment``).

Not generated, because Spark has no such thing: GROUPS frames, EXCLUDE, FILTER on window
aggregates, count(DISTINCT) over windows, the holistic aggregates (median, percentiles, mode) over
frames, IGNORE NULLS on aggregates.

The number of calls is ``OVERWINDOW_PARITY_CALLS`` (default 360), spread over ``TABLES`` tables;
``OVERWINDOW_PARITY_SEED`` moves the seeds. A failure prints the call's SQL, the seed and the rows
of the table the call reads, enough to replay it with ``make_table(seed)``.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from dataclasses import dataclass, field
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import overwindow
from overwindow.errors import WindowRuntimeError
from overwindow.logical.expr import Expr
from overwindow.physical.expressions import evaluate_expr

CALLS = int(os.environ.get("OVERWINDOW_PARITY_CALLS", "360"))
SEED = int(os.environ.get("OVERWINDOW_PARITY_SEED", "0"))
TABLES = 6
PER_TABLE = max(1, math.ceil(CALLS / TABLES))
PER_QUERY = 60  # window expressions per Spark SELECT
REL = 1e-9

# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------

# column -> Spark type; every column is both an ORDER BY key (with ties and NULLs) and an argument
TYPES = {
    "i": "INT",
    "l": "BIGINT",
    "f": "DOUBLE",
    "m": "DECIMAL(12,2)",
    "w": "DECIMAL(38,10)",
    "s": "STRING",
    "b": "BOOLEAN",
    "d": "DATE",
    "t": "TIMESTAMP",
    "n": "TIMESTAMP_NTZ",
}
NUMERIC = ("i", "l", "f", "m", "w")
INF, NAN = math.inf, math.nan
# finite doubles are multiples of 2**-10 below 1e21: exact in DECIMAL(38,10) (see the docstring)
F_POOL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.25, 3.0, -7.125, 1e20, -1e20, 1e15 + 0.5, 2.0**-10, 123456.375]
F_SPECIAL = [NAN, INF, -INF]
S_POOL = ["a", "b", "B", "", "ab", "ä", "Z", "a ", "zz"]
UTC = dt.timezone.utc


def _nulls(rng, values, p):
    return [None if rng.random() < p else v for v in values]


def _tied(rng, pool, n, p_null=0.1):
    """n draws from a few values of ``pool`` (ties), some NULL."""
    k = int(rng.integers(2, min(8, len(pool)) + 1))
    few = [pool[j] for j in rng.choice(len(pool), size=k, replace=False)]
    return _nulls(rng, [few[j] for j in rng.integers(0, k, n)], p_null)


def _decimal_pool(rng, digits, scale, k=12):
    """k random DECIMALs of up to ``digits`` digits, ``scale`` after the point."""
    out = []
    for _ in range(k):
        nd = int(rng.integers(1, digits + 1))
        unscaled = int("".join(str(int(v)) for v in rng.integers(0, 10, nd)))
        # in a context of 80 digits: the default one keeps 28 and would round the 30-digit values
        out.append(Decimal(unscaled * (1 if rng.random() < 0.6 else -1)).scaleb(-scale, Context(prec=80)))
    return out


def make_table(seed: int) -> pa.Table:
    """The random table of ``seed``: ``rid`` unique; partitions ``p`` (INT) and ``q`` (STRING),
    both with a NULL partition at times; the columns of ``TYPES``, each with ties and NULLs."""
    rng = np.random.default_rng(seed)
    sizes = [1] * int(rng.integers(1, 4))
    n_target = int(rng.integers(40, 140))
    while sum(sizes) < n_target:
        sizes.append(int(rng.integers(2, 40)))
    n = sum(sizes)
    p = []
    null_part = rng.random() < 0.5
    for j, size in enumerate(sizes):
        p += [None if (null_part and j == 1) else j] * size
    q = _nulls(rng, [str(v) for v in rng.choice(["x", "y"], size=n)], 0.1)

    i_pool = [int(v) for v in rng.integers(-6, 7, 10)] + [2**30, -(2**30)]
    l_pool = [int(v) for v in rng.integers(-4, 5, 8) * int(rng.choice([1, 3, 1000]))] + [2**40, -(2**40) + 7]
    f_pool = F_POOL + [float(v) / 1024 for v in rng.integers(-5000, 5000, 6)]
    f = _tied(rng, f_pool, n)
    f = [rng.choice(F_SPECIAL) if v is not None and rng.random() < 0.08 else v for v in f]
    m_pool = _decimal_pool(rng, 12, 2) + [Decimal("0.00"), Decimal("-0.01"), Decimal("9999999999.99")]
    w_pool = _decimal_pool(rng, 30, 10) + [Decimal("0E-10"), Decimal("1E-10")]
    # dates: 1900..2100, month ends and leap days within reach of month offsets
    d_pool = [dt.date(1900, 1, 1) + dt.timedelta(days=int(v)) for v in rng.integers(0, 73000, 8)]
    d_pool += [dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2024, 1, 31), dt.date(2024, 2, 29)]
    d_pool += [dt.date(2024, 3, 31), dt.date(1960, 2, 29), dt.date(2024, 2, 1)]
    t0 = dt.datetime(1950, 1, 1, tzinfo=UTC)
    t_pool = [t0 + dt.timedelta(microseconds=int(v)) for v in rng.integers(0, 80 * 365 * 86400 * 10**6, 6)]
    base = dt.datetime(1969, 12, 31, 22, 0, tzinfo=UTC)
    t_pool += [base + dt.timedelta(minutes=int(v) * 30) for v in rng.integers(0, 150, 8)]
    t_pool += [dt.datetime(2024, 1, 31, 12, tzinfo=UTC), dt.datetime(2024, 2, 29, 12, tzinfo=UTC)]

    cols = {
        "rid": pa.array(np.arange(n, dtype=np.int64)),
        "p": pa.array(p, pa.int32()),
        "q": pa.array(q, pa.string()),
        "i": pa.array(_tied(rng, i_pool, n), pa.int32()),
        "l": pa.array(_tied(rng, l_pool, n), pa.int64()),
        "f": pa.array(f, pa.float64()),
        "m": pa.array(_tied(rng, m_pool, n), pa.decimal128(12, 2)),
        "w": pa.array(_tied(rng, w_pool, n), pa.decimal128(38, 10)),
        "s": pa.array(_tied(rng, S_POOL, n), pa.string()),
        "b": pa.array(_nulls(rng, [bool(v) for v in rng.integers(0, 2, n)], 0.15), pa.bool_()),
        "d": pa.array(_tied(rng, d_pool, n), pa.date32()),
        "t": pa.array(_tied(rng, t_pool, n), pa.timestamp("us", tz="UTC")),
        "n": pa.array([None if v is None else v.replace(tzinfo=None) for v in _tied(rng, t_pool, n)]),
    }
    table = pa.table(cols)
    return table.take(pa.array(rng.permutation(n)))  # input order unrelated to any key


# ---------------------------------------------------------------------------------------------
# calls
# ---------------------------------------------------------------------------------------------

RANKING = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile")
OFFSETS = ("lag", "lead")
VALUES = ("first_value", "last_value", "nth_value")
# aggregate spelling -> what its argument may be
AGGREGATES = {
    "count": tuple(TYPES),
    "count(*)": (),
    "sum": NUMERIC,
    "avg": NUMERIC,
    "mean": NUMERIC,
    "min": tuple(TYPES),
    "max": tuple(TYPES),
    "stddev_samp": NUMERIC,
    "stddev_pop": NUMERIC,
    "stddev": NUMERIC,
    "std": NUMERIC,
    "var_samp": NUMERIC,
    "var_pop": NUMERIC,
    "variance": NUMERIC,
    "bool_and": ("b",),
    "bool_or": ("b",),
    "every": ("b",),
    "some": ("b",),
}
# the aggregates by what they compute, drawn evenly, then one spelling
AGGREGATE_GROUPS = [
    ("count", "count(*)"),
    ("sum",),
    ("avg", "mean"),
    ("min", "max"),
    tuple(name for name in AGGREGATES if "std" in name or "var" in name),
    ("bool_and", "bool_or", "every", "some"),
]
MOMENTS = {
    "stddev_samp": ("samp", True),
    "stddev": ("samp", True),
    "std": ("samp", True),
    "stddev_pop": ("pop", True),
    "var_samp": ("samp", False),
    "variance": ("samp", False),
    "var_pop": ("pop", False),
}
# DATE - DATE: Spark's INTERVAL DAY (and NULL where either date is)
INTERVALS = ("d - DATE'1970-01-01'", "d - d", "d - NULL")
# ... and the day-time intervals of literals, casts, products and TIMESTAMP - DATE: INTERVAL DAY
# (the first three) or INTERVAL DAY TO SECOND
INTERVAL_DAYS = ("coalesce(d - d, INTERVAL '2' DAY)", "CAST(p AS INTERVAL DAY)", "INTERVAL '-3' DAY + d - d")
INTERVAL_EXPRESSIONS = (
    *INTERVAL_DAYS,
    "(d - DATE'1970-01-01') * 1.5",
    "(d - DATE'2000-01-01') / 7",
    "p * (d - d + INTERVAL '0 00:00:00.000001' DAY TO SECOND)",
    "t - d",
    "CAST(m AS INTERVAL DAY TO SECOND)",
)
DEFAULTS = {  # lag/lead defaults Spark casts to the argument's type
    "i": ["0", "-3"],
    "l": ["7", "-1"],
    "f": ["1.5", "-0.5"],
    "m": ["1.25", "0"],
    "w": ["123456789012345678.25", "-1"],
    "s": ["'zz'", "''"],
    "b": ["false", "true"],
    "d": ["DATE'1999-12-31'", "DATE'1901-02-03'"],
    "t": ["TIMESTAMP'1969-07-20 20:17:40'", "TIMESTAMP'2001-01-01 00:00:00.000001'"],
    "n": ["TIMESTAMP_NTZ'1969-07-20 20:17:40'", "NULL"],
    **dict.fromkeys(INTERVALS + INTERVAL_DAYS, ["'3'", "' -2 '", "INTERVAL '4' DAY"]),  # whole days
    **dict.fromkeys(
        INTERVAL_EXPRESSIONS[len(INTERVAL_DAYS) :],
        ["'1 02:00:00.5'", "INTERVAL '-0 00:00:00.000001' DAY TO SECOND"],
    ),
}
# defaults read from another column of a type Spark widens to the argument's
COLUMN_DEFAULTS = {"l": ["i"], "f": ["i", "l"], "w": ["m", "i"], "s": ["q"]}
# numeric arguments that are expressions: their types follow Spark's rules for the operators
# (DECIMAL ones: an integer literal is a DECIMAL of its digits, a column INT DECIMAL(10, 0), past 38
# digits the scale gives way, rounded half up; divisors that are never 0)
EXPRESSIONS = [
    "i + l",
    "i * 3",  # INT, and an error where it overflows INT (2**30 * 3), as in Spark's ANSI mode
    "-f",
    "abs(i)",
    "CAST(i AS DOUBLE) / 4",
    "coalesce(l, i)",
    "m - 0.5",
    "CASE WHEN b THEN i ELSE -i END",
    "m * 2",  # DECIMAL(14,2)
    "m + w",  # DECIMAL(38,9): w's tenth decimal rounded half up
    "i * m",  # DECIMAL(10,0) * DECIMAL(12,2)
    "w * 3",  # DECIMAL(38,8)
    "m / 3",  # DECIMAL(16,6)
    "w / (abs(i) + 1)",  # DECIMAL(38,10) / an INT column
    "m / (abs(w) + 1)",  # mixed scales: DECIMAL(12,2) / DECIMAL(38,9) is DECIMAL(38,19)
    "m * 0.5 - w",
    "w % (abs(m) + 1)",
    "d + p",  # a DATE plus an INT number of days (Spark's date_add), NULL where p is
    "3 + d",
    "d - 40000",
    *INTERVALS,
    *INTERVAL_EXPRESSIONS,
]
DOUBLES = ("f", "-f", "CAST(i AS DOUBLE) / 4")  # the DOUBLE arguments: sum/avg oracle by DECIMAL
# RANGE offsets by key: lists of spellings in increasing order, one list per offset type (a
# frame's two offsets share one type: Spark refuses INTERVAL '1' MONTH beside INTERVAL '1-1' YEAR
# TO MONTH, or INTERVAL '1' DAY beside INTERVAL '2' HOUR)
_MONTHS = [
    ["INTERVAL 0 MONTHS", "INTERVAL 1 MONTH", "INTERVAL 2 MONTHS", "INTERVAL 13 MONTHS"],
    ["INTERVAL '0-1' YEAR TO MONTH", "INTERVAL '1-1' YEAR TO MONTH", "INTERVAL '30-0' YEAR TO MONTH"],
    ["INTERVAL 1 YEAR", "INTERVAL 40 YEARS"],
]
_TIMES = [
    ["INTERVAL 0 HOURS", "INTERVAL 1 HOUR", "INTERVAL 2 HOURS", "INTERVAL 36 HOURS"],
    [
        "INTERVAL '0 00:00:00' DAY TO SECOND",
        "INTERVAL '0 00:30:00' DAY TO SECOND",
        "INTERVAL '1 02:00:00.5' DAY TO SECOND",
        "INTERVAL '3000 00:00:00' DAY TO SECOND",
    ],
    ["INTERVAL 1 DAY", "INTERVAL 3 DAYS", "INTERVAL 20000 DAYS"],
    *_MONTHS,
]
RANGE_OFFSETS = {
    # NULL: the bound's value is NULL, placed where NULLs sort; strings and fractions are cast to
    # the key's type (over integers the fraction is dropped, over DECIMAL(12,2) rounded half up)
    # (INTERVALs too, in their last unit: INTERVAL 2 HOURS over an integer key is 2)
    "i": [
        ["0", "1", "2", "5"],
        ["NULL"],
        ["-1.5", "0.5", "'1'", "2.9"],
        ["INTERVAL 0 HOURS", "INTERVAL 36 HOURS"],
    ],
    "l": [["0", "1", "3", "2000"], ["-0.5", "'1.5'", "2.5e0"], ["INTERVAL 1 DAY", "INTERVAL 3 DAYS"]],
    "f": [["0", "0.5", "1", "2.25", "1e20"], ["NULL"], ["' 0.5 '", "1"]],
    "m": [["0", "0.01", "1.5", "100"], ["0.005", "'1.555'", "2.499"], ["INTERVAL 1555 MILLISECONDS"]],
    "w": [["0", "0.0000000001", "1", "100000000000000000000"]],
    "rid": [["0", "1", "2", "4"]],
    "d": [
        ["0", "1", "3", "400"],  # days
        ["INTERVAL 0 DAYS", "INTERVAL 1 DAY", "INTERVAL 3 DAYS", "INTERVAL 400 DAYS"],
        *_MONTHS,
    ],
    "t": _TIMES,
    "n": _TIMES,
}
PARTITIONS = [(), ("p",), ("q",), ("p", "q"), ("b",), ("d",), ("f",), ("m", "s")]


@dataclass
class Call:
    """One random call: its SQL (the same text for Spark and overwindow), how its value is
    checked (``oracle``: ``plain`` is Spark's own answer to the same SQL) and the extra Spark
    expressions that oracle reads, by alias."""

    alias: str
    sql: str  # the window expression, without alias
    oracle: str = "plain"  # plain | double_sum | double_avg | moment
    extra: dict = field(default_factory=dict)  # alias -> Spark SQL over the same window
    columns: tuple = ()  # the columns the call reads, for failure messages


def _pick(rng, seq):
    return seq[int(rng.integers(0, len(seq)))]


def _order_item(rng, col, allow_nulls_spelling=True):
    desc = rng.random() < 0.4
    text = col + (" DESC" if desc else (" ASC" if rng.random() < 0.3 else ""))
    if allow_nulls_spelling and rng.random() < 0.5:
        text += _pick(rng, [" NULLS FIRST", " NULLS LAST"])
    return text


def _order_keys(rng, with_rid):
    cols = list(rng.choice(list(TYPES), size=int(rng.integers(1, 3)), replace=False))
    items = [_order_item(rng, c) for c in cols]
    if with_rid:
        items.append(_order_item(rng, "rid"))
    return items, cols


_RANK = {"UP": 0, "P": 1, "CR": 2, "F": 3, "UF": 4}


def _bound(kind, offset):
    return {"UP": "UNBOUNDED PRECEDING", "CR": "CURRENT ROW", "UF": "UNBOUNDED FOLLOWING"}.get(kind) or (
        f"{offset} {'PRECEDING' if kind == 'P' else 'FOLLOWING'}"
    )


def _frame(rng, unit, offsets):
    """A random frame of ``unit`` whose start does not pass its end where Spark checks it (kinds in
    order, two PRECEDING or two FOLLOWING offsets in order); ``offsets``: spellings in increasing
    order, or None for no offsets."""
    kinds = ["UP", "CR", "UF"] + (["P", "F"] if offsets else [])
    while True:
        a, b = _pick(rng, kinds), _pick(rng, kinds)
        if a != "UF" and b != "UP" and _RANK[a] <= _RANK[b]:
            break
    ia, ib = (int(rng.integers(0, len(offsets))) for _ in range(2)) if offsets else (0, 0)
    if a == b == "P":
        ia, ib = max(ia, ib), min(ia, ib)
    if a == b == "F":
        ia, ib = min(ia, ib), max(ia, ib)
    oa, ob = (offsets[ia], offsets[ib]) if offsets else (None, None)
    if b == "CR" and a in ("UP", "P", "CR") and rng.random() < 0.25:
        return f"{unit} {_bound(a, oa)}"  # the short form: start AND CURRENT ROW
    return f"{unit} BETWEEN {_bound(a, oa)} AND {_bound(b, ob)}"


def _over(partition, order, frame=""):
    parts = []
    if partition:
        parts.append("PARTITION BY " + ", ".join(partition))
    if order:
        parts.append("ORDER BY " + ", ".join(order))
    if frame:
        parts.append(frame)
    return "OVER (" + " ".join(parts) + ")"


def _rows_frame(rng):
    return _frame(rng, "ROWS", ["0", "1", "2", "3", "6"])


def random_call(rng, alias: str) -> Call:
    partition = _pick(rng, PARTITIONS)
    group = _pick(rng, ["ranking", "offset", "value", "aggregate", "aggregate", "aggregate"])
    if group == "ranking":
        name = _pick(rng, RANKING)
        positional = name in ("row_number", "ntile")  # the order among peers decides
        order, cols = _order_keys(rng, with_rid=positional)
        text = f"ntile({int(rng.integers(1, 8))})" if name == "ntile" else f"{name}()"
        if name in ("rank", "dense_rank", "percent_rank") and rng.random() < 0.2:
            text = f"{name}({_pick(rng, list(TYPES))})"  # Spark ignores the argument: ORDER BY ranks
        return Call(alias, f"{text} {_over(partition, order)}", columns=(*partition, *cols))
    if group == "offset":
        name = _pick(rng, OFFSETS)
        arg = _pick(rng, EXPRESSIONS) if rng.random() < 0.15 else _pick(rng, list(TYPES))
        order, cols = _order_keys(rng, with_rid=True)
        items = [arg]
        offset = _pick(rng, [None, 1, 2, 3, 0, -1])
        default = None
        if offset is not None and rng.random() < 0.6:
            choices = DEFAULTS.get(arg, ["0"]) + ["NULL"] + COLUMN_DEFAULTS.get(arg, [])
            default = _pick(rng, choices)
        if offset is not None:
            items.append(str(offset))
        if default is not None:
            items.append(default)
        ignore = " IGNORE NULLS" if rng.random() < 0.4 else ""
        if rng.random() < 0.03:
            items = []  # lag(): Spark's lag(NULL), a VOID column
        text = f"{name}({', '.join(items)}){ignore} {_over(partition, order)}"
        return Call(alias, text, columns=(*partition, *cols, *_columns_of(arg), *_columns_of(default)))
    if group == "value":
        name, arg = _pick(rng, VALUES), _pick(rng, list(TYPES))
        ignore = " IGNORE NULLS" if rng.random() < 0.4 else ""
        shape = _pick(rng, ["default", "rows", "range", "range_offset", "range_offset"])
        order, frame, cols = _framed_window(rng, shape, value_arg=arg)
        if shape == "range_offset" and cols[0] != "rid":
            arg = cols[0]  # one ORDER BY key, no rid: read the key itself, which peers share
        head = f"nth_value({arg}, {int(rng.integers(1, 5))})" if name == "nth_value" else f"{name}({arg})"
        text = f"{head}{ignore} {_over(partition, order, frame)}"
        return Call(alias, text, columns=(*partition, *cols, arg))
    name = _pick(rng, _pick(rng, AGGREGATE_GROUPS))
    if name in ("sum", "avg", "mean") and rng.random() < 0.4:
        arg = _pick(rng, DOUBLES)  # the DOUBLE sums overwindow computes exactly (see the docstring)
    elif AGGREGATES[name] and AGGREGATES[name][0] in NUMERIC and rng.random() < 0.25:
        arg = _pick(rng, EXPRESSIONS)
    else:
        arg = _pick(rng, AGGREGATES[name]) if AGGREGATES[name] else None
    shape = _pick(rng, ["none", "whole", "default", "rows", "rows", "range", *["range_offset"] * 4])
    order, frame, cols = _framed_window(rng, shape)
    over = _over(partition, order, frame)
    head = "count(*)" if arg is None else f"{name}({arg})"
    call = Call(alias, f"{head} {over}", columns=(*partition, *cols, *_columns_of(arg)))
    if arg in DOUBLES and name in ("sum", "avg", "mean"):
        call.oracle = "double_sum" if name == "sum" else "double_avg"
        call.extra = {
            f"{alias}__dec": f"sum(try_cast({arg} AS DECIMAL(38,10))) {over}",
            f"{alias}__n": f"count({arg}) {over}",
        }
    elif name in MOMENTS:
        call.oracle = "moment"
        call.extra = {f"{alias}__list": f"collect_list({arg}) {over}"}
    return call


def _columns_of(expr):
    """The table's columns an argument or default reads."""
    if expr is None:
        return []
    return [c for c in ("rid", "p", "q", *TYPES) if re.search(rf"\b{c}\b", expr.replace("'", " '"))]


def _framed_window(rng, shape, value_arg=None):
    """(ORDER BY items, frame text, ORDER BY columns) for a call over a frame. ``value_arg``: the
    call returns one of its frame's values, so the order among peers matters wherever the frame's
    edges can fall inside a peer group."""
    if shape == "none":
        return [], "", []
    if shape == "whole":
        unit = _pick(rng, ["ROWS", "RANGE"])
        return [], f"{unit} BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING", []
    if shape == "default":
        order, cols = _order_keys(rng, with_rid=value_arg is not None)
        return order, "", cols
    if shape == "rows":
        order, cols = _order_keys(rng, with_rid=True)
        return order, _rows_frame(rng), cols
    if shape == "range":
        order, cols = _order_keys(rng, with_rid=value_arg is not None)
        return order, _frame(rng, "RANGE", None), cols
    key = _pick(rng, [*RANGE_OFFSETS, "f", "d", "t"])
    offsets = _pick(rng, RANGE_OFFSETS[key])
    return [_order_item(rng, key)], _frame(rng, "RANGE", offsets), [key]


def random_calls(seed: int, count: int) -> list[Call]:
    rng = np.random.default_rng([seed, 1])
    return [random_call(rng, f"c{j}") for j in range(count)]


# ---------------------------------------------------------------------------------------------
# oracles
# ---------------------------------------------------------------------------------------------


def _as_double(v) -> float:
    """A value as both engines convert an argument to DOUBLE (a DECIMAL correctly rounded)."""
    return float(v)


def exact_moment(values: list, kind: str, root: bool):
    """var_samp/var_pop (or their square roots) of ``values`` computed exactly: each value as a
    DOUBLE, then rational arithmetic, rounded once (the square root of the rounded variance is
    within an ulp or two). NULL where Spark's is (no value; one value for the sample ones), NaN
    where a value is NaN or infinite."""
    xs = [_as_double(v) for v in values if v is not None]
    n = len(xs)
    if n == 0 or (kind == "samp" and n == 1):
        return None
    if not all(math.isfinite(x) for x in xs):
        return NAN
    ratios = [x.as_integer_ratio() for x in xs]
    den = max(d for _, d in ratios)  # a power of two: every value is an integer over it
    ints = [num * (den // d) for num, d in ratios]
    s1, s2 = sum(ints), sum(v * v for v in ints)
    var = Fraction(n * s2 - s1 * s1, n * (n if kind == "pop" else n - 1) * den * den)
    return math.sqrt(float(var)) if root else float(var)


def expected_column(call: Call, spark_cols: dict) -> list:
    """The oracle's values of ``call``, row by row (``spark_cols``: Spark's columns as lists)."""
    plain = spark_cols[call.alias]
    if call.oracle == "plain":
        return plain
    if call.oracle == "moment":
        kind, root = MOMENTS[call.sql.split("(")[0]]
        return [exact_moment(v, kind, root) for v in spark_cols[f"{call.alias}__list"]]
    dec, cnt = spark_cols[f"{call.alias}__dec"], spark_cols[f"{call.alias}__n"]
    out = []
    for v, s, c in zip(plain, dec, cnt):
        if v is None or not math.isfinite(v):  # no value, or NaN/inf in the frame: no rounding
            out.append(v)
        elif call.oracle == "double_sum":
            out.append(float(s))
        else:
            out.append(float(Fraction(s) / c))
    return out


def same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if not (isinstance(a, float) and isinstance(b, float)):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= REL * max(abs(a), abs(b))
    if type(a) is not type(b):
        return False
    return a == b


# ---------------------------------------------------------------------------------------------
# running both engines
# ---------------------------------------------------------------------------------------------


def run_spark(spark, table: pa.Table, calls: list[Call]) -> tuple[dict, dict, dict]:
    """(Spark's columns by alias as Python lists in rid order, Spark's result types by alias,
    errors by call alias). A SELECT that fails is retried call by call, so one refused call is
    named and does not hide the others."""
    df = spark.createDataFrame(table)
    df = df.withColumn("n", df["n"].cast("timestamp_ntz"))  # Arrow's zone-less timestamps
    assert {f.name: f.dataType.simpleString() for f in df.schema.fields if f.name in TYPES} == {
        name: t.lower() for name, t in TYPES.items()
    }
    df.createOrReplaceTempView("parity")
    return run_spark_view(spark, "parity", calls)


def run_spark_view(spark, view: str, calls: list[Call]) -> tuple[dict, dict, dict]:
    """``run_spark`` over a temporary view already registered (with a ``rid`` column)."""
    values, types, errors = {}, {}, {}

    def select(batch):
        items = [f"{c.sql} AS {c.alias}" for c in batch]
        items += [f"{sql} AS {alias}" for c in batch for alias, sql in c.extra.items()]
        df = spark.sql(f"SELECT rid, {', '.join(items)} FROM {view} ORDER BY rid")
        out = df.toArrow()
        for f in df.schema.fields:
            types[f.name] = f.dataType
            values[f.name] = out.column(f.name).to_pylist()

    for start in range(0, len(calls), PER_QUERY):
        batch = calls[start : start + PER_QUERY]
        try:
            select(batch)
        except Exception:
            for c in batch:
                try:
                    select([c])
                except Exception as e:  # noqa: BLE001 - reported per call
                    errors[c.alias] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    return values, types, errors


def run_overwindow(data, calls: list[Call]) -> tuple[dict, dict, dict]:
    """(overwindow's columns by alias as Python lists in rid order, Arrow types, errors)."""
    texts = [f"{c.sql} AS {c.alias}" for c in calls]
    errors = {}
    try:
        out = overwindow.evaluate(data, *texts)
    except Exception:
        good = []
        for c, text in zip(calls, texts):
            try:
                overwindow.evaluate(data, text)
                good.append(text)
            except Exception as e:  # noqa: BLE001 - reported per call
                errors[c.alias] = f"{type(e).__name__}: {e}"
        out = overwindow.evaluate(data, *good)
    if isinstance(out, pd.DataFrame):
        cols = {name: pa.chunked_array([pa.array(out[name])]) for name in out.columns}
        table = pa.table(cols)
    else:
        table = out
    table = table.sort_by("rid")
    values = {name: table.column(name).to_pylist() for name in table.column_names}
    types = {name: table.schema.field(name).type for name in table.column_names}
    return values, types, errors


def _arrow_type_as_spark(t: pa.DataType):
    from pyspark.sql.pandas.types import from_arrow_type

    from overwindow.spark.boundary import spark_type

    # Arrow's duration has no interval fields: its unit tells INTERVAL DAY from DAY TO SECOND
    return spark_type(t) if pa.types.is_duration(t) else from_arrow_type(t)


def compare(seed, table, calls, spark_out, ours, label) -> list[str]:
    spark_values, spark_types, spark_errors = spark_out
    our_values, our_types, our_errors = ours
    rid = spark_values["rid"]
    msgs = []
    for c in calls:
        where = f"[{label}, seed {seed}] {c.sql}"
        if c.alias in spark_errors and c.alias in our_errors:
            continue  # both refuse the call (e.g. bounds out of order: the generator avoids them)
        if c.alias in spark_errors or c.alias in our_errors:
            theirs, mine = spark_errors.get(c.alias, "ok"), our_errors.get(c.alias, "ok")
            msgs.append(f"{where}: Spark: {theirs}; overwindow: {mine}")
            continue
        got_type = _arrow_type_as_spark(our_types[c.alias])
        if got_type != spark_types[c.alias]:
            want_type = spark_types[c.alias].simpleString()
            msgs.append(f"{where}: type {got_type.simpleString()}, Spark's {want_type}")
        want = expected_column(c, spark_values)
        got = our_values[c.alias]
        bad = [j for j in range(len(rid)) if not same(got[j], want[j])]
        if bad:
            rows = ", ".join(f"rid {rid[j]}: {got[j]!r} vs Spark {want[j]!r}" for j in bad[:4])
            msgs.append(f"{where} ({c.oracle}): {len(bad)} rows differ: {rows}\n{_rows_text(table, c)}")
    return msgs


def _rows_text(table: pa.Table, call: Call) -> str:
    cols = ["rid", *dict.fromkeys(col for col in call.columns if col != "rid")]
    return table.select(cols).sort_by("rid").to_pandas().to_string(max_rows=200)


def _as_pandas(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper=pd.ArrowDtype)


# ---------------------------------------------------------------------------------------------
# the test
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [SEED + j for j in range(TABLES)])
def test_random_calls_agree_with_spark(spark, seed):
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    table = make_table(seed)
    calls = random_calls(seed, PER_TABLE)
    spark_out = run_spark(spark, table, calls)
    msgs = compare(seed, table, calls, spark_out, run_overwindow(table, calls), "arrow")
    msgs += compare(seed, table, calls, spark_out, run_overwindow(_as_pandas(table), calls), "pandas")
    assert not msgs, f"{len(msgs)} disagreement(s) with Spark:\n" + "\n".join(msgs)


def test_integer_literals_are_int_as_in_spark(spark):
    """``i * 3`` over an INT column is INT, as Spark types the literal 3, and fails where the
    product overflows INT, as Spark's ANSI mode fails (the literal was BIGINT: the product was
    BIGINT and went on past INT)."""
    table = pa.table({"rid": pa.array([0, 1, 2]), "i": pa.array([1, None, 5], pa.int32())})
    calls = [Call("a", "lag(i * 3) OVER (ORDER BY rid)"), Call("b", "sum(i - 1) OVER (ORDER BY rid)")]
    spark.createDataFrame(table).createOrReplaceTempView("literals")
    df = spark.sql("SELECT rid, " + ", ".join(f"{c.sql} AS {c.alias}" for c in calls) + " FROM literals")
    got = overwindow.evaluate(table, *(f"{c.sql} AS {c.alias}" for c in calls))
    for c in calls:
        assert _arrow_type_as_spark(got.schema.field(c.alias).type) == df.schema[c.alias].dataType
    assert got["a"].to_pylist() == [r["a"] for r in df.orderBy("rid").collect()]

    big = pa.table({"rid": pa.array([0, 1]), "i": pa.array([1, 2**30], pa.int32())})
    spark.createDataFrame(big).createOrReplaceTempView("literals")
    with pytest.raises(Exception, match="ARITHMETIC_OVERFLOW"):
        spark.sql("SELECT lag(i * 3) OVER (ORDER BY rid) FROM literals").collect()
    with pytest.raises(WindowRuntimeError, match="overflow"):
        overwindow.evaluate(big, "lag(i * 3) OVER (ORDER BY rid) AS a")


# calls Spark reads in its own way, each checked against Spark over one small table (values and
# result types): arguments of rank/dense_rank/percent_rank ignored; lag() is lag(NULL), VOID; DATE
# plus or minus INT, SMALLINT or TINYINT days, wrapping as Java's int does; a bare NULL typed as
# the other operand, or DOUBLE; a BIGINT constant where Spark accepts one (nth_value, RANGE)
READINGS = [
    "percentile(x, 0.25, 1) OVER (PARTITION BY k)",  # frequency 1: each row once
    "nth_value(x, '2') OVER (ORDER BY t)",  # a string offset, cast to INT
    "rank(x) OVER (ORDER BY t)",
    "rank(x, s) OVER (PARTITION BY k ORDER BY t DESC)",
    "dense_rank(1) OVER (ORDER BY k)",
    "percent_rank(s) OVER (PARTITION BY k ORDER BY t)",
    "lag() OVER (ORDER BY t)",
    "lead() IGNORE NULLS OVER (PARTITION BY k ORDER BY t)",
    "coalesce(lag() OVER (ORDER BY t), 1)",
    "lag(d + 1) OVER (ORDER BY t)",
    "lag(1 + d) OVER (ORDER BY t)",
    "lead(d - k) OVER (ORDER BY t)",
    "lag(k + d) OVER (ORDER BY t)",
    "lag(d + CAST(2 AS SMALLINT)) OVER (ORDER BY t)",
    "lag(d - CAST(-3 AS TINYINT)) OVER (ORDER BY t)",
    "lag(d + CAST(NULL AS INT)) OVER (ORDER BY t)",
    "lag(CAST(NULL AS DATE) + 1) OVER (ORDER BY t)",
    "lag(d + NULL) OVER (ORDER BY t)",
    "lag(NULL + d) OVER (ORDER BY t)",
    "lag(DATE '9999-12-31' + 1 = d) OVER (ORDER BY t)",
    "lag(d + 2147483647 < d) OVER (ORDER BY t)",
    "lag(m * NULL) OVER (ORDER BY t)",
    "lag(m / NULL) OVER (ORDER BY t)",
    "lag(NULL - m) OVER (ORDER BY t)",
    "lag(NULL + 1) OVER (ORDER BY t)",
    "lag(NULL * NULL) OVER (ORDER BY t)",
    "lag(NULL / NULL) OVER (ORDER BY t)",
    "lag(x + NULL) OVER (ORDER BY t)",
    "lag(t - NULL) OVER (ORDER BY t)",
    "lag(k % NULL) OVER (ORDER BY t)",
    "lag(-NULL) OVER (ORDER BY t)",
    "lag(abs(NULL)) OVER (ORDER BY t)",
    # COALESCE and CASE over DECIMALs and integers: Spark's wider DECIMAL (a BIGINT is 20 digits;
    # past 38 digits the scale gives way, rounded half up)
    "lag(coalesce(m, t)) OVER (ORDER BY t)",
    "lag(coalesce(k, m, 1)) OVER (ORDER BY t)",
    "lag(CASE WHEN k = 1 THEN m ELSE t END) OVER (ORDER BY t)",
    "lag(CASE WHEN k = 1 THEN m WHEN k = 2 THEN 1.125 END) OVER (ORDER BY t)",
    "lag(coalesce(CAST(NULL AS DECIMAL(38,37)), m)) OVER (ORDER BY t)",
    "lag(coalesce(CAST(m AS DECIMAL(38,10)), CAST(t AS DECIMAL(38,0)))) OVER (ORDER BY t)",
    "lag(CASE WHEN k = 1 THEN CAST(m AS DECIMAL(30,10)) ELSE CAST(t AS DECIMAL(30,0)) END) OVER (ORDER BY t)",
    "nth_value(x, CAST(1 AS BIGINT)) OVER (ORDER BY t)",
    "sum(x) OVER (ORDER BY t RANGE BETWEEN CAST(1 AS BIGINT) PRECEDING AND CURRENT ROW)",
    # a NULL RANGE offset: the bound's value is NULL, placed where the sort puts NULLs
    "sum(t) OVER (ORDER BY k RANGE BETWEEN NULL PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY k DESC RANGE BETWEEN NULL PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY k NULLS LAST RANGE BETWEEN CURRENT ROW AND NULL FOLLOWING)",
    "sum(t) OVER (ORDER BY k DESC NULLS FIRST RANGE BETWEEN CURRENT ROW AND NULL FOLLOWING)",
    "count(*) OVER (ORDER BY x RANGE BETWEEN NULL PRECEDING AND NULL FOLLOWING)",
    "sum(t) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND NULL PRECEDING)",
    "sum(t) OVER (PARTITION BY s ORDER BY m DESC NULLS FIRST RANGE BETWEEN NULL PRECEDING AND 1 FOLLOWING)",
    "sum(t) OVER (ORDER BY k RANGE BETWEEN CAST(NULL AS INT) FOLLOWING AND UNBOUNDED FOLLOWING)",
    # NULL FOLLOWING over a day-time interval key: a NULL bound, where the sort puts NULLs
    "sum(t) OVER (ORDER BY ts - d RANGE BETWEEN NULL FOLLOWING AND INTERVAL '1' DAY FOLLOWING)",
    "sum(t) OVER (ORDER BY d - d DESC RANGE BETWEEN CURRENT ROW AND NULL FOLLOWING)",
    # RANGE offsets cast to the key's type: strings read as DOUBLEs; fractions dropped over
    # integers, rounded half up to the key's scale over DECIMALs
    "sum(t) OVER (ORDER BY u RANGE BETWEEN -1.5 PRECEDING AND 3 FOLLOWING)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN '-1.5' PRECEDING AND '3' FOLLOWING)",
    "sum(t) OVER (ORDER BY u DESC RANGE BETWEEN 1.5e0 FOLLOWING AND 3 FOLLOWING)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN '1.555' PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN 1.555 PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY n DESC RANGE BETWEEN CURRENT ROW AND '1.554' FOLLOWING)",
    "sum(t) OVER (ORDER BY x RANGE BETWEEN ' 1.5 ' PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY k RANGE BETWEEN '1e0' PRECEDING AND '2' FOLLOWING)",
    # a FOLLOWING string is cast straight to the key's type (a PRECEDING one is negated as a DOUBLE)
    "sum(t) OVER (ORDER BY u RANGE BETWEEN CURRENT ROW AND ' +2 ' FOLLOWING)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN CURRENT ROW AND '1e0' FOLLOWING)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN '-1.555' FOLLOWING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN '-2' FOLLOWING AND CURRENT ROW)",
    # INTERVAL offsets over integer and DECIMAL keys: a count of the interval's last unit
    "sum(t) OVER (ORDER BY u RANGE BETWEEN INTERVAL 2 DAYS PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN INTERVAL 1999 MILLISECONDS PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN INTERVAL '0-2' YEAR TO MONTH PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN INTERVAL '0 02' DAY TO HOUR PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY k DESC RANGE BETWEEN CURRENT ROW AND INTERVAL 1 YEAR FOLLOWING)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN INTERVAL '1.555' SECOND PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN INTERVAL 1 HOUR PRECEDING AND INTERVAL 1 HOUR FOLLOWING)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN INTERVAL 1 MICROSECOND PRECEDING AND CURRENT ROW)",
    # each offset cast to a numeric key's type before the bounds' types are matched and compared:
    # an INTERVAL beside a number, or beside an INTERVAL of other units, and offsets equal once cast
    "sum(t) OVER (ORDER BY u RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND 1 FOLLOWING)",
    "sum(t) OVER (ORDER BY k RANGE BETWEEN 3 PRECEDING AND INTERVAL 2 HOURS FOLLOWING)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN INTERVAL 1999 MILLISECONDS PRECEDING AND 0.5 FOLLOWING)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN INTERVAL '1' MONTH PRECEDING AND INTERVAL 1 DAY FOLLOWING)",
    "sum(t) OVER (ORDER BY u DESC RANGE BETWEEN INTERVAL '1 02:00:00' DAY TO SECOND PRECEDING "
    "AND INTERVAL '0-1' YEAR TO MONTH FOLLOWING)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 2 HOURS PRECEDING)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN 1.5 FOLLOWING AND 1 FOLLOWING)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN 0.006 FOLLOWING AND 0.005 FOLLOWING)",
    # NaN offsets over DOUBLE keys: the bound's value is NaN, which sorts above every number;
    # infinite or NaN offsets over DECIMAL keys cast to NULL
    "sum(t) OVER (ORDER BY y RANGE BETWEEN CAST('NaN' AS DOUBLE) PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY y RANGE BETWEEN CURRENT ROW AND CAST('NaN' AS DOUBLE) FOLLOWING)",
    "sum(t) OVER (ORDER BY y DESC RANGE BETWEEN CAST('NaN' AS DOUBLE) PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY y DESC NULLS FIRST RANGE BETWEEN CURRENT ROW AND 'NaN' FOLLOWING)",
    "sum(t) OVER (ORDER BY y RANGE BETWEEN 1 PRECEDING AND CAST('NaN' AS DOUBLE) PRECEDING)",
    "sum(t) OVER (ORDER BY y RANGE BETWEEN CAST('NaN' AS DOUBLE) FOLLOWING AND UNBOUNDED FOLLOWING)",
    "sum(t) OVER (ORDER BY x RANGE BETWEEN 'NaN' PRECEDING AND CAST('NaN' AS DOUBLE) FOLLOWING)",
    "sum(t) OVER (ORDER BY m RANGE BETWEEN CAST('NaN' AS DOUBLE) PRECEDING AND 1 FOLLOWING)",
    "sum(t) OVER (ORDER BY m RANGE BETWEEN 1 PRECEDING AND CAST('Infinity' AS DOUBLE) FOLLOWING)",
    "sum(t) OVER (ORDER BY n DESC RANGE BETWEEN CAST('-Infinity' AS DOUBLE) PRECEDING AND CURRENT ROW)",
    # DATE - DATE: an INTERVAL DAY (NULL beside a NULL), kept by the functions that return one of
    # their values and by sum; avg and the percentiles an INTERVAL DAY TO SECOND, Spark's
    # microseconds rounded half up (avg) or cut (percentiles); lag defaults of whole days as strings
    "lag(d - d) OVER (ORDER BY t)",
    "lag(d - NULL) OVER (ORDER BY t)",
    "lead(NULL - d, 2, ' -2 ') OVER (ORDER BY t)",
    "lead(d - DATE '2024-01-01', 1, '3') IGNORE NULLS OVER (ORDER BY t)",
    "first_value(d - DATE '2000-01-01') OVER (ORDER BY t DESC)",
    "nth_value(DATE '2000-01-01' - d, 2) OVER (ORDER BY t)",
    "min(d - DATE '2000-01-01') OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)",
    "max(d - DATE '2000-01-01') OVER (PARTITION BY k)",
    "sum(d - DATE '2000-01-01') OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)",
    "avg(d - DATE '2000-01-01') OVER (ORDER BY t)",
    "avg(DATE '2024-03-02' - d) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
    "count(d - d) OVER (ORDER BY t)",
    "median(d - DATE '2024-01-01') OVER (PARTITION BY k)",
    "percentile(d - DATE '1970-01-01', 0.123456789) OVER ()",
    "percentile_cont(0.3) WITHIN GROUP (ORDER BY DATE '2024-01-01' - d DESC) OVER ()",
    "percentile_disc(0.3) WITHIN GROUP (ORDER BY d - DATE '2000-01-01') OVER ()",
    "mode(d - DATE '2024-01-01') OVER (PARTITION BY k)",
    # ... and in expressions: added, negated, compared, COALESCE, CASE, cast, added to a DATE
    "lag((d - DATE '2000-01-01') + (d - d)) OVER (ORDER BY t)",
    "lag(d - (d - DATE '2024-01-01')) OVER (ORDER BY t)",
    "lag(-(d - DATE '2000-01-01')) OVER (ORDER BY t)",
    "lag(abs(d - DATE '2000-01-01')) OVER (ORDER BY t)",
    "lag(d - DATE '2000-01-01' > DATE '2000-01-01' - d) OVER (ORDER BY t)",
    "lag(coalesce(d - NULL, d - DATE '2000-01-01')) OVER (ORDER BY t)",
    "lag(CASE WHEN k = 1 THEN d - DATE '2000-01-01' END) OVER (ORDER BY t)",
    "lag(CAST(d - DATE '2000-01-01' AS INT)) OVER (ORDER BY t)",
    "lag(CAST(d - DATE '2000-01-01' AS DECIMAL(12,2))) OVER (ORDER BY t)",
    "lag(CAST(d - DATE '2000-01-01' AS STRING)) OVER (ORDER BY t)",
    "lag(s, 1, d - DATE '2000-01-01') OVER (ORDER BY t)",
    # ... as ORDER BY and PARTITION BY keys
    "rank() OVER (ORDER BY d - DATE '2000-01-01' DESC)",
    "count(*) OVER (PARTITION BY d - d)",
    "sum(t) OVER (ORDER BY DATE '2000-01-01' - d NULLS LAST ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)",
    # interval literals in expressions: compared, added to dates, times and intervals (a DATE plus
    # an INTERVAL DAY is a DATE, plus any other day-time interval a TIMESTAMP), as lag defaults, in
    # COALESCE, CASE, BETWEEN and IN, aggregated
    "lag((d - DATE '2024-01-01') > INTERVAL '1' DAY) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') <= INTERVAL '36' HOUR) OVER (ORDER BY t)",
    "lag(d + INTERVAL '2' DAY) OVER (ORDER BY t)",
    "lag(d - INTERVAL '2' DAY) OVER (ORDER BY t)",
    "lag(INTERVAL '2' DAY + d) OVER (ORDER BY t)",
    "lag(d + INTERVAL '25' HOUR) OVER (ORDER BY t)",
    "lag(d - (ts - ts)) OVER (ORDER BY t)",
    "lag(ts + INTERVAL '90' MINUTE) OVER (ORDER BY t)",
    "lag(ts - INTERVAL '1 02:00:00.5' DAY TO SECOND) OVER (ORDER BY t)",
    "lag(ts + INTERVAL 1 DAY 2 HOURS) OVER (ORDER BY t)",
    "lag(d - DATE '2024-01-01', 1, INTERVAL '3' DAY) OVER (ORDER BY t)",
    "lead(ts - ts, 1, INTERVAL '1 02:00:00' DAY TO SECOND) OVER (ORDER BY t)",
    "lag(ts - ts, 1, '-1 02:00:00.25') OVER (ORDER BY t)",
    "lag(coalesce(d - DATE '2024-01-01', INTERVAL '3' DAY)) OVER (ORDER BY t)",
    "lag(coalesce(d - DATE '2024-01-01', ts - ts)) OVER (ORDER BY t)",
    "lag(CASE WHEN k = 1 THEN d - DATE '2024-01-01' ELSE INTERVAL '5' DAY END) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') + INTERVAL '1' DAY) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') - INTERVAL '1 00:00:00.5' DAY TO SECOND) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') BETWEEN INTERVAL '1' DAY AND INTERVAL '100' DAY) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') IN (INTERVAL '59' DAY, INTERVAL '0' DAY)) OVER (ORDER BY t)",
    "lag(-INTERVAL '2' DAY) OVER (ORDER BY t)",
    "sum(INTERVAL '1' DAY) OVER (ORDER BY t)",
    "max(ts - ts + INTERVAL '0 00:00:01' DAY TO SECOND) OVER (PARTITION BY k)",
    # CAST to and from day-time intervals: numbers count the last field's unit, strings are the
    # literal's text, intervals cut to the target's last field
    "lag(CAST(k AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST(t AS INTERVAL DAY TO SECOND)) OVER (ORDER BY t)",
    "lag(CAST(m AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST(m AS INTERVAL DAY TO SECOND)) OVER (ORDER BY t)",
    "lag(CAST(NULL AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST(' -3 ' AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST('1 2:3:4.1234567' AS INTERVAL DAY TO SECOND)) OVER (ORDER BY t)",
    "lag(CAST(ts - ts AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST(INTERVAL '-1 23:00:00' DAY TO SECOND AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST(INTERVAL '36' HOUR AS INTERVAL DAY TO SECOND)) OVER (ORDER BY t)",
    "lag(CAST(INTERVAL '36' HOUR AS INT)) OVER (ORDER BY t)",
    "lag(CAST(INTERVAL '1.5' SECOND AS DECIMAL(10,3))) OVER (ORDER BY t)",
    "lag(CAST(CAST(k AS INTERVAL HOUR) AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(INTERVAL 1500 MILLISECONDS AS STRING)) OVER (ORDER BY t)",
    "lag(CAST((d - DATE '2024-01-01') * 1.5 AS STRING)) OVER (ORDER BY t)",
    "lag(CAST((d - DATE '2024-01-01') * 1.5 AS BIGINT)) OVER (ORDER BY t)",
    # an interval times or over a number: an INTERVAL DAY TO SECOND, rounded half up
    "lag((d - DATE '2024-01-01') * 2) OVER (ORDER BY t)",
    "lag(k * (d - DATE '2024-01-01')) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') * x) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') * m) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') * 1.75) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') / 7) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') / 7.0) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') / -0.3e0) OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') * '2') OVER (ORDER BY t)",
    "lag((d - DATE '2024-01-01') / NULL) OVER (ORDER BY t)",
    "lag(INTERVAL '-0 00:00:00.000003' DAY TO SECOND / 2) OVER (ORDER BY t)",
    "lag(INTERVAL '0 00:00:00.000001' DAY TO SECOND * -1.5) OVER (ORDER BY t)",
    "sum((d - DATE '2024-01-01') * 2) OVER (ORDER BY t)",
    "avg((d - DATE '2024-01-01') / 3) OVER (ORDER BY t)",
    # DOUBLE, FLOAT and TIMESTAMP as STRING: Java's number text, the time without trailing zeros
    "lag(s, 1, x) OVER (ORDER BY t)",
    "lag(s, 2, x * 1e20) OVER (ORDER BY t)",
    "lag(s, 2, x / 3e5) OVER (ORDER BY t)",
    "lag(s, 1, ts) OVER (ORDER BY t)",
    "lag(CAST(y AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(-x * 1e-5 AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(CAST(x / 3 AS FLOAT) AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(ts AS STRING)) OVER (ORDER BY t)",
    # a TIMESTAMP minus a DATE (either way): an INTERVAL DAY TO SECOND; a string beside a DATE or
    # TIMESTAMP in - is read as one
    "lag(ts - d) OVER (ORDER BY t)",
    "lag(d - ts) OVER (ORDER BY t)",
    "lag(ts - DATE '2024-01-01') OVER (ORDER BY t)",
    "lag(d - '2024-01-01') OVER (ORDER BY t)",
    "lag('2024-01-01 10:00:00' - d) OVER (ORDER BY t)",
    "lag(ts - '2024-01-01 10:00:00') OVER (ORDER BY t)",
    "lag(d - CAST(NULL AS TIMESTAMP)) OVER (ORDER BY t)",
    # RANGE offsets over a day-time interval ORDER BY key: intervals, and numbers cast to the key's
    # type (days over an INTERVAL DAY, seconds over an INTERVAL DAY TO SECOND)
    "sum(t) OVER (ORDER BY d - DATE '2024-01-01' RANGE BETWEEN INTERVAL '60' DAY PRECEDING AND CURRENT ROW)",
    "count(*) OVER (ORDER BY d - DATE '2024-01-01' DESC RANGE BETWEEN INTERVAL '1440' HOUR PRECEDING "
    "AND 1 FOLLOWING)",
    "sum(t) OVER (ORDER BY ts - ts RANGE BETWEEN INTERVAL '0 00:00:01' DAY TO SECOND PRECEDING "
    "AND 1.5 FOLLOWING)",
    "sum(t) OVER (ORDER BY CAST(k AS INTERVAL DAY) RANGE BETWEEN 1 PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY CAST(t AS INTERVAL DAY TO SECOND) RANGE BETWEEN 1.5 PRECEDING AND "
    "INTERVAL '2' SECOND FOLLOWING)",
    "sum(t) OVER (ORDER BY CAST(t AS INTERVAL DAY TO SECOND) DESC NULLS FIRST RANGE BETWEEN "
    "INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)",
    # a bound past Spark's largest interval that Spark never compares with another row's key
    "count(*) OVER (ORDER BY d - DATE '2024-01-01' RANGE BETWEEN CURRENT ROW AND "
    "INTERVAL '106751991' DAY FOLLOWING)",
    # string literals as Spark reads them: a quote doubled inside a literal is one quote, literals
    # side by side are one (in an argument, a comparison, IN, CASE, a CAST, an INTERVAL's value, a
    # RANGE offset); sqlglot reads both as CONCAT calls
    "lag(s, 1, 'it''s') OVER (ORDER BY t)",
    'lead(s, 1, "it""s") OVER (ORDER BY t)',
    # raw string literals: backslashes kept, read side by side with other literals
    "lag(s, 1, r'a\\b' 'c') OVER (ORDER BY t)",
    "lag(s, 1, r'it''s') OVER (ORDER BY t)",
    "lag(s, 2, 'a' 'b' \"c\") OVER (ORDER BY t)",
    "lag(s < 'b' 'b') OVER (ORDER BY t)",
    "lag(s IN ('c' '', 'it''s')) OVER (ORDER BY t)",
    "sum(CASE WHEN s = 'c' /* c */ '' THEN t END) OVER (ORDER BY t)",
    "lag(x, 1, '1' '.5') OVER (ORDER BY t)",
    "lag(CAST('1' '2' AS INT)) OVER (ORDER BY t)",
    "lag(CAST('INTERVAL ''3'' DAY' AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(d + CAST('INTERVAL ''3'' DAY' AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(d + INTERVAL '1' '0' DAY) OVER (ORDER BY t)",
    "sum(t) OVER (ORDER BY d RANGE BETWEEN INTERVAL '6' '0' DAY PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN '1' '.5' PRECEDING AND CURRENT ROW)",
    # a TIMESTAMP where Spark wants a number: sum and avg of its DOUBLE seconds, a RANGE offset
    # FOLLOWING over a numeric key (its seconds, rounded down over an integer key, rounded half up
    # to a DECIMAL key's scale through the DOUBLE), its CASTs to numbers
    "sum(ts) OVER (ORDER BY t)",
    "avg(ts) OVER (PARTITION BY k)",
    "sum(ts) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY k RANGE BETWEEN CURRENT ROW AND TIMESTAMP '1970-01-01 00:00:01.9' FOLLOWING)",
    "sum(t) OVER (ORDER BY k RANGE BETWEEN CURRENT ROW AND TIMESTAMP '1969-12-31 23:59:59.5' FOLLOWING)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN CURRENT ROW AND TIMESTAMP '1970-01-01 00:00:01.555' FOLLOWING)",
    "sum(t) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND TIMESTAMP '1970-01-01 00:00:02.5' FOLLOWING)",
    "sum(t) OVER (ORDER BY m RANGE BETWEEN TIMESTAMP '2024-01-01 00:00:00' FOLLOWING AND NULL PRECEDING)",
    "lag(CAST(ts AS BIGINT)) OVER (ORDER BY t)",
    "lag(CAST(ts AS DOUBLE)) OVER (ORDER BY t)",
    # constants that are CASTs or typed literals keep their type and Spark's text (they were
    # folded in Python: INT, DECIMAL(3,2), DOUBLE, 'True', '1e+20')
    "lag(CAST(1 AS BIGINT)) OVER (ORDER BY t)",
    "lag(10L) OVER (ORDER BY t)",
    "lag(10Y) OVER (ORDER BY t)",
    "lag(10S) OVER (ORDER BY t)",
    "max(CAST(1 AS SMALLINT)) OVER (PARTITION BY k)",
    "lag(CAST(1 AS DECIMAL(10,2))) OVER (ORDER BY t)",
    "lag(CAST(0.1 AS FLOAT)) OVER (ORDER BY t)",
    "lag(CAST(NULL AS INT)) OVER (ORDER BY t)",
    "lag(CAST(NULL AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(TRUE AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(1e20 AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(1e7 AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(CAST('NaN' AS DOUBLE) AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(TIMESTAMP '2024-01-01 10:00:00.5' AS STRING)) OVER (ORDER BY t)",
    "lag(CAST(' 2024-1-5 ' AS DATE)) OVER (ORDER BY t)",
    "lag(CAST('2024-3' AS DATE)) OVER (ORDER BY t)",
    "lag(CAST('2024-01-05T10:00' AS DATE)) OVER (ORDER BY t)",
    "lag(DATE '2024-1-5') OVER (ORDER BY t)",
    # a FLOAT beside an integer is DOUBLE in Spark's ANSI mode
    "lag(coalesce(f, k)) OVER (ORDER BY t)",
    "last_value(coalesce(f, t)) OVER (ORDER BY t)",
    "lag(CASE WHEN k = 1 THEN f ELSE t END) OVER (ORDER BY t)",
    "lag(coalesce(f, f)) OVER (ORDER BY t)",
    # a negated literal: one INT literal, but BIGINT negated in parentheses
    "lag(-2147483648) OVER (ORDER BY t)",
    "lag(- 2147483648) OVER (ORDER BY t)",
    "lag(-(2147483648)) OVER (ORDER BY t)",
    "lag(-(1.5)) OVER (ORDER BY t)",
    "lag(k + -2147483648) OVER (ORDER BY t)",
    "lag(k + - 2147483648) OVER (ORDER BY t)",
    "lag(k + -(2147483648)) OVER (ORDER BY t)",
    "lag(t + -9223372036854775808) OVER (ORDER BY t)",
    "lag(m * -1.5) OVER (ORDER BY t)",
    "lag(x * 1e-400) OVER (ORDER BY t)",
    # IF, NULLIF, <=>, GREATEST, LEAST (were refused as unsupported)
    "lag(IF(k > 1, x, t)) OVER (ORDER BY t)",
    "lag(if(k = 1, m, k)) OVER (ORDER BY t)",
    "sum(IF(x > 1, 1, 0)) OVER (ORDER BY t)",
    "lag(IF(NULL, 1, 2.5)) OVER (ORDER BY t)",
    "lag(nullif(k, 2)) OVER (ORDER BY t)",
    "lag(NULLIF(x, y)) OVER (ORDER BY t)",
    "lag(nullif(s, 'c')) OVER (ORDER BY t)",
    "lag(nullif(k, 1.0)) OVER (ORDER BY t)",
    "lag(k <=> 2) OVER (ORDER BY t)",
    "lag(x <=> y) OVER (ORDER BY t)",
    "lag(y <=> y) OVER (ORDER BY t)",
    "lag(s <=> NULL) OVER (ORDER BY t)",
    "lag(m <=> k) OVER (ORDER BY t)",
    "lag(x IS DISTINCT FROM f) OVER (ORDER BY t)",
    "lag(k IS NOT DISTINCT FROM NULL) OVER (ORDER BY t)",
    "lag(greatest(x, k)) OVER (ORDER BY t)",
    "lag(least(x, k)) OVER (ORDER BY t)",
    "lag(greatest(y, x, k)) OVER (ORDER BY t)",
    "lag(least(y, NULL)) OVER (ORDER BY t)",
    "lag(greatest(k, t)) OVER (ORDER BY t)",
    "lag(least(m, k)) OVER (ORDER BY t)",
    "lag(greatest(m, n, 1)) OVER (ORDER BY t)",
    "lag(greatest(m, x)) OVER (ORDER BY t)",
    "lag(least(f, k)) OVER (ORDER BY t)",
    "lag(greatest(f, f)) OVER (ORDER BY t)",
    "lag(greatest(s, 'b')) OVER (ORDER BY t)",
    "lag(least(d, DATE '2000-01-01')) OVER (ORDER BY t)",
    "lag(greatest(ts, ts)) OVER (ORDER BY t)",
    "max(least(x, 2)) OVER (ORDER BY t ROWS 1 PRECEDING)",
    "lag(greatest(k > 1, x > 1)) OVER (ORDER BY t)",
    "lag(least(d - d, DATE '2024-01-01' - d)) OVER (ORDER BY t)",
    # CEIL and FLOOR: BIGINT, or DECIMAL(p - s + 1, 0)
    "lag(ceil(x)) OVER (ORDER BY t)",
    "lag(floor(x * -1.5)) OVER (ORDER BY t)",
    "lag(ceil(IF(abs(y) > 1e300, x, y))) OVER (ORDER BY t)",
    "lag(floor(IF(abs(y) > 1e300, -x, y))) OVER (ORDER BY t)",
    "lag(ceil(m)) OVER (ORDER BY t)",
    "lag(floor(m * -3)) OVER (ORDER BY t)",
    "lag(CEILING(k)) OVER (ORDER BY t)",
    "lag(floor(f)) OVER (ORDER BY t)",
    "lag(ceil(1.5)) OVER (ORDER BY t)",
    "sum(floor(n)) OVER (ORDER BY t ROWS 1 PRECEDING)",
    "lag(ceil(NULL)) OVER (ORDER BY t)",
    # ROUND (half away from zero) and BROUND (half to even), in Spark's types
    "lag(round(x * 1.05, 1)) OVER (ORDER BY t)",
    "lag(round(x / 4, 1)) OVER (ORDER BY t)",
    "lag(bround(x / 4, 1)) OVER (ORDER BY t)",
    "lag(round(-x / 2)) OVER (ORDER BY t)",
    "lag(bround(-x / 2)) OVER (ORDER BY t)",
    "lag(round(y, 2)) OVER (ORDER BY t)",
    "lag(round(x * 1e3, -2)) OVER (ORDER BY t)",
    "lag(round(m, 1)) OVER (ORDER BY t)",
    "lag(bround(m, 1)) OVER (ORDER BY t)",
    "lag(round(m, -1)) OVER (ORDER BY t)",
    "lag(round(m, 5)) OVER (ORDER BY t)",
    "lag(round(m)) OVER (ORDER BY t)",
    "lag(round(k * 15, -1)) OVER (ORDER BY t)",
    "lag(bround(k * 15, -1)) OVER (ORDER BY t)",
    "lag(round(t, 2)) OVER (ORDER BY t)",
    "lag(round(f, 1)) OVER (ORDER BY t)",
    "lag(round(f * 3, 1)) OVER (ORDER BY t)",
    "lag(round(NULL, 1)) OVER (ORDER BY t)",
    "lag(round(2.675, 2)) OVER (ORDER BY t)",
    "lag(round(CAST(2.675 AS DOUBLE), 2)) OVER (ORDER BY t)",
    "lag(round(-x * 0.5 + 0.25, 0)) OVER (ORDER BY t)",
    "avg(round(x, 0)) OVER (ORDER BY t ROWS 1 PRECEDING)",
    # TO_DATE, DATEDIFF, DATE_ADD, DATE_SUB, UNIX_TIMESTAMP and the parts of dates and timestamps
    "lag(to_date(ts)) OVER (ORDER BY t)",
    "lag(to_date(concat('2024-0', k, '-05'))) OVER (ORDER BY t)",
    "lag(datediff(ts, d)) OVER (ORDER BY t)",
    "lag(datediff(d, DATE '2024-01-01')) OVER (ORDER BY t)",
    "lag(date_add(d, k)) OVER (ORDER BY t)",
    "lag(date_sub(ts, 1)) OVER (ORDER BY t)",
    "lag(date_add(d, -k * 3)) OVER (ORDER BY t)",
    "lag(unix_timestamp(ts)) OVER (ORDER BY t)",
    "lag(unix_timestamp(d)) OVER (ORDER BY t)",
    "lag(year(ts)) OVER (ORDER BY t)",
    "lag(quarter(d)) OVER (ORDER BY t)",
    "lag(month(ts)) OVER (ORDER BY t)",
    "lag(day(d)) OVER (ORDER BY t)",
    "lag(dayofmonth(ts)) OVER (ORDER BY t)",
    "lag(dayofweek(d)) OVER (ORDER BY t)",
    "lag(dayofweek(ts)) OVER (ORDER BY t)",
    "lag(dayofyear(ts)) OVER (ORDER BY t)",
    "lag(weekofyear(d)) OVER (ORDER BY t)",
    "lag(hour(ts)) OVER (ORDER BY t)",
    "lag(minute(ts)) OVER (ORDER BY t)",
    "lag(second(ts)) OVER (ORDER BY t)",
    "lag(hour(d)) OVER (ORDER BY t)",
    "lag(year(NULL)) OVER (ORDER BY t)",
    "unix_timestamp(ts) - lag(unix_timestamp(ts)) OVER (ORDER BY t)",
    "datediff(d, lag(d) OVER (ORDER BY t))",
    "count(*) FILTER (WHERE month(d) = 2) OVER (ORDER BY t)",
    # found by probing: a constant string with column positions; seconds before 1970 cut toward
    # zero; date_add of NULL days a DATE; a DECIMAL's plain text; TRIM of NULL characters
    "lag(substr('abcdef', k - 3)) OVER (ORDER BY t)",
    "lag(substring('abc', 2, k)) OVER (ORDER BY t)",
    "lag(unix_timestamp(ts + INTERVAL '0.5' SECOND)) OVER (ORDER BY t)",
    "lag(unix_timestamp(TIMESTAMP '1969-12-31 23:59:59.999999')) OVER (ORDER BY t)",
    "lag(date_add(d, NULL)) OVER (ORDER BY t)",
    "lag(CAST(CAST(m / 100000 AS DECIMAL(20, 10)) AS STRING)) OVER (ORDER BY t)",
    "lag(concat(CAST(0.0000000001 AS DECIMAL(20, 10)), '|', CAST(n AS DECIMAL(20, 10)) * 0))"
    " OVER (ORDER BY t)",
    "lag(trim(BOTH NULL FROM s)) OVER (ORDER BY t)",
    # found by probing: negative scales past the type's digits are zeros; a 38-digit negative
    # DECIMAL literal keeps its digits; BIGINT beside DOUBLE rounds to a DOUBLE; DECIMAL(38, 38)
    # beside DECIMAL(38, 0) rounds half up
    "lag(round(k, -10)) OVER (ORDER BY t)",
    "lag(bround(t, -20)) OVER (ORDER BY t)",
    "lag(round(m, -11)) OVER (ORDER BY t)",
    "lag(round(CAST(0.5 AS DECIMAL(1, 1)), -1)) OVER (ORDER BY t)",
    "lag(round(CAST(99 AS DECIMAL(2, 0)), -3)) OVER (ORDER BY t)",
    "lag(-0.99999999999999999999999999999999999999) OVER (ORDER BY t)",
    "lag(- 0.1234567890123456789012345678901) OVER (ORDER BY t)",
    "lag(greatest(x, 9223372036854775807)) OVER (ORDER BY t)",
    "lag(IF(k > 1, x, 9223372036854775807)) OVER (ORDER BY t)",
    "lag(nullif(x, 9223372036854775807)) OVER (ORDER BY t)",
    "lag(x <=> 9223372036854775807) OVER (ORDER BY t)",
    "lag(nullif(t * 1000000007, f)) OVER (ORDER BY t)",
    "lag(least(CAST(0.5 AS DECIMAL(38, 38)), CAST(k AS DECIMAL(38, 0)))) OVER (ORDER BY t)",
    "lag(coalesce(CAST(NULL AS DECIMAL(38, 38)), CAST(k AS DECIMAL(38, 0)))) OVER (ORDER BY t)",
    # UPPER, LOWER, LENGTH, TRIM, SUBSTRING, CONCAT, ||
    "lag(upper(concat(s, ' Straße ǆ'))) OVER (ORDER BY t)",
    "lag(lower(concat('ÀÉ İ ', s))) OVER (ORDER BY t)",
    "lag(ucase(s)) OVER (ORDER BY t)",
    "lag(length(concat(s, ' é😀'))) OVER (ORDER BY t)",
    "lag(char_length(s)) OVER (ORDER BY t)",
    "lag(trim(concat('  ', s, ' \t '))) OVER (ORDER BY t)",
    "lag(ltrim(concat('  ', s, ' '))) OVER (ORDER BY t)",
    "lag(rtrim(concat('  ', s, ' '))) OVER (ORDER BY t)",
    "lag(trim(BOTH 'xa' FROM concat('xx', s, 'ax'))) OVER (ORDER BY t)",
    "lag(trim(LEADING 'x' FROM concat('xx', s, 'x'))) OVER (ORDER BY t)",
    "lag(substr(concat(s, 'bcdé'), 2)) OVER (ORDER BY t)",
    "lag(substring(concat(s, 'bcdé'), -3, 2)) OVER (ORDER BY t)",
    "lag(substr(concat(s, 'bcdé'), 0, 2)) OVER (ORDER BY t)",
    "lag(substr(concat(s, 'bc'), -5, 3)) OVER (ORDER BY t)",
    "lag(substr(concat(s, 'bcde'), k, u)) OVER (ORDER BY t)",
    "lag(substr(concat(s, 'bcde'), 2, -1)) OVER (ORDER BY t)",
    "lag(substring(s FROM 1 FOR 1)) OVER (ORDER BY t)",
    "lag(concat(s, '-', x, '-', k, '-', m, '-', d)) OVER (ORDER BY t)",
    "lag(s || k) OVER (ORDER BY t)",
    "lag(concat(s, NULL)) OVER (ORDER BY t)",
    "lag(concat(ts)) OVER (ORDER BY t)",
    "max(upper(s)) OVER (ORDER BY t ROWS 1 PRECEDING)",
    # LIKE, NOT LIKE, ILIKE, ESCAPE
    "lag(s LIKE 'a%') OVER (ORDER BY t)",
    "lag(concat(s, '%x') LIKE '_\\%_') OVER (ORDER BY t)",
    "lag(concat(s, '%x') LIKE '%!%%' ESCAPE '!') OVER (ORDER BY t)",
    "lag(concat(s, '\\\\x') LIKE '%\\\\\\\\x') OVER (ORDER BY t)",
    "lag(concat(s, '\nb') LIKE 'a_b') OVER (ORDER BY t)",
    "lag(s NOT LIKE 'c') OVER (ORDER BY t)",
    "lag(concat('Straße', s) ILIKE 'STRASSE%') OVER (ORDER BY t)",
    "lag(concat('ÀB', s) ILIKE 'àb_') OVER (ORDER BY t)",
    "lag(s NOT ILIKE 'C') OVER (ORDER BY t)",
    "lag(s LIKE NULL) OVER (ORDER BY t)",
    "count(*) FILTER (WHERE s LIKE '%c%') OVER (ORDER BY t)",
    "sum(CASE WHEN s LIKE 'b%' THEN x END) OVER (ORDER BY t)",
    # the simple CASE compares its subject (it was read as CASE WHEN <subject>); IN lists with CASTs
    "lag(CASE x > 1 WHEN TRUE THEN 'a' ELSE 'b' END) OVER (ORDER BY t)",
    "lag(CASE k WHEN 1 THEN 'one' WHEN NULL THEN 'n' ELSE 'other' END) OVER (ORDER BY t)",
    "lag(s IN (CAST(TRUE AS STRING), 'a')) OVER (ORDER BY t)",
    "lag(u IN (CAST('4' AS INT), 0)) OVER (ORDER BY t)",
    # integers cast to FLOAT or DOUBLE past their exact range: rounded, as Java casts (were errors)
    "lag(CAST(t * 16777217 AS FLOAT)) OVER (ORDER BY t)",
    "lag(CAST(t * 9007199254740993 AS DOUBLE)) OVER (ORDER BY t)",
    "lag(CAST(CAST(k AS BIGINT) * 2147483647 AS FLOAT)) OVER (ORDER BY t)",
    # integer literals past BIGINT are DECIMALs of their digits
    "lag(100000000000000000000) OVER (ORDER BY t)",
    "lag(9223372036854775808) OVER (ORDER BY t)",
    "lag(-(9223372036854775808)) OVER (ORDER BY t)",
]
# calls Spark refuses when it analyses them, and overwindow with a WindowSpecError
READINGS_REFUSED = [
    # a DOUBLE literal past DOUBLE's range (it was read as infinity)
    "lag(1e309) OVER (ORDER BY t)",
    "lag(x * -1E309) OVER (ORDER BY t)",
    # GREATEST and LEAST over types with no common type, a condition of IF that is no BOOLEAN
    "lag(greatest(s, k)) OVER (ORDER BY t)",
    "lag(IF(k, 1, 2)) OVER (ORDER BY t)",
    "lag(round(x, k)) OVER (ORDER BY t)",
    # one argument of GREATEST, two of IF; literals past DOUBLE's or DECIMAL's range
    "lag(greatest(x)) OVER (ORDER BY t)",
    "lag(IF(k = 1, 1)) OVER (ORDER BY t)",
    "lag(1.7976931348623158e308) OVER (ORDER BY t)",
    "lag(-1234567890123456789012345678.90123456789) OVER (ORDER BY t)",
    # a number as a DATE (it was read as a count of days)
    "lag(CAST(k AS DATE)) OVER (ORDER BY t)",
    "lag(year(k)) OVER (ORDER BY t)",
    # a CASE condition that is no BOOLEAN (it was a runtime error, not a refusal)
    "lag(CASE WHEN NULL THEN x ELSE 0 END) OVER (ORDER BY t)",
    "lag(CASE WHEN NULL THEN 1 WHEN k = 1 THEN 2 END) OVER (ORDER BY t)",
    "lag(CASE WHEN k THEN 1 END) OVER (ORDER BY t)",
    # a field of a column that is no struct
    "lag(k.a) OVER (ORDER BY t)",
    "cume_dist(x) OVER (ORDER BY t)",
    "rank(nope) OVER (ORDER BY t)",
    "rank(x) OVER (PARTITION BY k)",
    "lag() OVER (PARTITION BY k)",
    "lag(d + t) OVER (ORDER BY t)",
    "lag(d + 1.5) OVER (ORDER BY t)",
    "lag(d + x) OVER (ORDER BY t)",
    "lag(d + '1') OVER (ORDER BY t)",
    "lag(k - d) OVER (ORDER BY t)",
    "lag(d * 2) OVER (ORDER BY t)",
    "ntile(CAST(1 AS BIGINT)) OVER (ORDER BY t)",
    "ntile(1L) OVER (ORDER BY t)",
    "lag(x, CAST(1 AS BIGINT)) OVER (ORDER BY t)",
    "lead(x, CAST(1 AS SMALLINT), 0) OVER (ORDER BY t)",
    "sum(x) OVER (ORDER BY t ROWS BETWEEN CAST(1 AS BIGINT) PRECEDING AND CURRENT ROW)",
    "sum(x) OVER (ORDER BY t ROWS BETWEEN CURRENT ROW AND CAST(1 AS SMALLINT) FOLLOWING)",
    "sum(x) OVER (ORDER BY t ROWS BETWEEN NULL PRECEDING AND CURRENT ROW)",
    "sum(x) OVER (ORDER BY d RANGE BETWEEN NULL PRECEDING AND CURRENT ROW)",
    "sum(x) OVER (ORDER BY s RANGE BETWEEN NULL PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY x RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY x RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND 1 FOLLOWING)",
    "sum(t) OVER (ORDER BY d RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND 1 FOLLOWING)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND INTERVAL 2 HOURS PRECEDING)",
    "sum(t) OVER (ORDER BY k RANGE BETWEEN INTERVAL 1 YEAR PRECEDING AND INTERVAL 11 MONTHS PRECEDING)",
    "sum(t) OVER (ORDER BY y RANGE BETWEEN CAST('NaN' AS DOUBLE) PRECEDING AND 1 FOLLOWING)",
    "sum(t) OVER (ORDER BY y RANGE BETWEEN CAST('NaN' AS DOUBLE) FOLLOWING AND 'Infinity' FOLLOWING)",
    # an INTERVAL DAY (DATE - DATE) where Spark takes no interval, or no INTERVAL DAY
    "lag(d - d, 1, 0) OVER (ORDER BY t)",
    "lag(d - d, 1, d) OVER (ORDER BY t)",
    "lag(x, 1, d - d) OVER (ORDER BY t)",
    "stddev(d - d) OVER (ORDER BY t)",
    "var_pop(d - d) OVER (ORDER BY t)",
    "bool_or(d - d) OVER (ORDER BY t)",
    "count_if(d - d) OVER (ORDER BY t)",
    "ntile(d - d) OVER (ORDER BY t)",
    "lag(x, d - d) OVER (ORDER BY t)",
    "lag((d - d) + 1) OVER (ORDER BY t)",
    "lag((d - d) - d) OVER (ORDER BY t)",
    "lag((d - d) % 2) OVER (ORDER BY t)",
    "lag((d - d) * (d - d)) OVER (ORDER BY t)",
    "lag((d - d) > 0) OVER (ORDER BY t)",
    "lag((d - d) = d) OVER (ORDER BY t)",
    "lag(coalesce(d - d, 0)) OVER (ORDER BY t)",
    "lag(CASE WHEN k = 1 THEN d - d ELSE 0 END) OVER (ORDER BY t)",
    "lag(CASE WHEN d - d THEN 1 END) OVER (ORDER BY t)",
    "lag(CAST(d - d AS DOUBLE)) OVER (ORDER BY t)",
    "lag(CAST(d - d AS BOOLEAN)) OVER (ORDER BY t)",
    "lag(CAST(d - d AS DATE)) OVER (ORDER BY t)",
    "sum(x) OVER (ORDER BY d - d RANGE BETWEEN NULL PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY ts - d RANGE BETWEEN NULL PRECEDING AND CURRENT ROW)",  # -NULL: a DOUBLE
    "sum(t) OVER (ORDER BY d RANGE BETWEEN CURRENT ROW AND NULL FOLLOWING)",
    # interval literals, CASTs and products Spark refuses: year-month beside day-time, a lag
    # default of other interval fields, a DOUBLE, DATE or year-month cast to a day-time interval,
    # a number over an interval, an interval over an interval, an interval beside a string
    "lag((d - d) > INTERVAL '1-2' YEAR TO MONTH) OVER (ORDER BY t)",
    "lag(coalesce(d - d, INTERVAL '1' MONTH)) OVER (ORDER BY t)",
    "lag((d - d) + INTERVAL '1' MONTH) OVER (ORDER BY t)",
    "lag(d - d, 1, INTERVAL '36' HOUR) OVER (ORDER BY t)",
    "lag(d - d, 1, INTERVAL '1 02:00:00' DAY TO SECOND) OVER (ORDER BY t)",
    "lag(ts - ts, 1, INTERVAL '3' DAY) OVER (ORDER BY t)",
    "lag(ts - ts, 1, d - d) OVER (ORDER BY t)",
    "lag(CAST(x AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST(d AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST(d - d > INTERVAL '1' DAY AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST(INTERVAL '1' MONTH AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(2 / (d - d)) OVER (ORDER BY t)",
    "lag((d - d) / (d - d)) OVER (ORDER BY t)",
    "lag((d - d) > '1') OVER (ORDER BY t)",
    "lag(d + '2024-01-01') OVER (ORDER BY t)",
    "sum(t) OVER (ORDER BY d - d RANGE BETWEEN INTERVAL '1' MONTH PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY d - d RANGE BETWEEN '1' PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY d - d RANGE BETWEEN CAST(1 AS DOUBLE) PRECEDING AND CURRENT ROW)",
    # a TIMESTAMP: its standard deviation, negated (n PRECEDING is -n), over a time or interval key;
    # TIMESTAMP_NTZ and a CAST as a frame bound
    "stddev(ts) OVER (ORDER BY t)",
    "sum(t) OVER (ORDER BY t RANGE BETWEEN TIMESTAMP '1970-01-01 00:00:01' PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY ts RANGE BETWEEN CURRENT ROW AND TIMESTAMP '1970-01-01 00:00:03' FOLLOWING)",
    "sum(t) OVER (ORDER BY d - d RANGE BETWEEN CURRENT ROW AND TIMESTAMP '1970-01-01 00:00:03' FOLLOWING)",
    "sum(t) OVER (ORDER BY t RANGE BETWEEN CURRENT ROW AND TIMESTAMP_NTZ '1970-01-01 00:00:03' FOLLOWING)",
    "sum(t) OVER (ORDER BY t RANGE BETWEEN CURRENT ROW AND CAST('1970-01-01' AS TIMESTAMP) FOLLOWING)",
    # after the name of a type Spark takes one string literal, and so after INTERVAL without a unit
    # (PARSE_SYNTAX_ERROR); a string is no ROWS offset, ignore-nulls flag or percentile frequency
    "lag(d, 1, DATE '2024-01-' '01') OVER (ORDER BY t)",
    "lag(ts, 1, TIMESTAMP '2024-01-01' ' 10:00:00') OVER (ORDER BY t)",
    "lag(d + INTERVAL '1 ' 'day') OVER (ORDER BY t)",
    "sum(x) OVER (ORDER BY t ROWS BETWEEN '1' '0' PRECEDING AND CURRENT ROW)",
    "last(x, 'tr' 'ue') OVER (ORDER BY t)",
    "first(x, 'false') OVER (ORDER BY t)",
    "nth_value(x, 1, 'true') OVER (ORDER BY t)",
    "percentile(x, 0.5, '1') OVER (PARTITION BY k)",
]
# calls Spark analyses and fails on when it runs them, whatever the rows (a RANGE offset that
# cannot be cast to the key's type); overwindow refuses them with a WindowSpecError
READINGS_CAST_REFUSED = [
    "sum(t) OVER (ORDER BY u RANGE BETWEEN 'a' PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN '99999999999' PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY k RANGE BETWEEN '3000000000' PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN CAST('NaN' AS DOUBLE) PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY u RANGE BETWEEN 1 PRECEDING AND '1.5' FOLLOWING)",
    "sum(t) OVER (ORDER BY k RANGE BETWEEN CURRENT ROW AND '2e0' FOLLOWING)",
    "sum(t) OVER (ORDER BY n RANGE BETWEEN CURRENT ROW AND 'NaN' FOLLOWING)",
    # lag defaults Spark cannot read as an INTERVAL DAY (INVALID_INTERVAL_FORMAT)
    "lag(d - d, 1, 'a') OVER (ORDER BY t)",
    "lag(d - d, 1, '1.5') OVER (ORDER BY t)",
    "lag(d - d, 1, '3 days') OVER (ORDER BY t)",
    "lag(ts - ts, 1, '3') OVER (ORDER BY t)",
    # strings Spark cannot read as a DATE or an interval, an INT past INTERVAL DAY
    "lag(d - 'x') OVER (ORDER BY t)",
    "lag(CAST('3 days' AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST('1 02:00:00' AS INTERVAL DAY)) OVER (ORDER BY t)",
    "lag(CAST(2147483647 AS INTERVAL DAY)) OVER (ORDER BY t)",
    "sum(t) OVER (ORDER BY d - d RANGE BETWEEN 106751992 PRECEDING AND CURRENT ROW)",
    "sum(t) OVER (ORDER BY k RANGE BETWEEN CURRENT ROW AND TIMESTAMP '2100-01-01 00:00:00' FOLLOWING)",
    # 'INTERVAL ' '3' ' DAY' is the string INTERVAL 3 DAY: no INTERVAL DAY (its value unquoted)
    "lag(CAST('INTERVAL ' '3' ' DAY' AS INTERVAL DAY)) OVER (ORDER BY t)",
    # strings Spark's CAST cannot read, a DECIMAL that does not fit
    "lag(CAST('1.5' AS INT)) OVER (ORDER BY t)",
    "lag(CAST('5.' AS INT)) OVER (ORDER BY t)",
    "lag(CAST('1e3' AS INT)) OVER (ORDER BY t)",
    "lag(CAST('2024-01-01xyz' AS DATE)) OVER (ORDER BY t)",
    "lag(CAST('20240101' AS DATE)) OVER (ORDER BY t)",
    "lag(CAST('2024-02-30' AS DATE)) OVER (ORDER BY t)",
    "lag(CAST('\uff12\uff10\uff12\uff14-01-01' AS DATE)) OVER (ORDER BY t)",
    "lag(s IN (CAST('1.5' AS INT))) OVER (ORDER BY t)",
    "lag(CAST(12345.678 AS DECIMAL(5,1))) OVER (ORDER BY t)",
    # LIKE patterns Spark fails on when it runs them: the escape before another character, or last
    "lag(s LIKE 'a!b' ESCAPE '!') OVER (ORDER BY t)",
    "lag(s LIKE 'ab!' ESCAPE '!') OVER (ORDER BY t)",
    # TO_DATE of a number: Spark reads it as text and fails in every row
    "lag(to_date(k)) OVER (ORDER BY t)",
]
# calls Spark's ANSI mode fails when it runs them (ARITHMETIC_OVERFLOW): a WindowRuntimeError
READINGS_FAILING = [
    "lag(-k) OVER (ORDER BY t)",
    "lag(abs(k)) OVER (ORDER BY t)",
    "lag(-t) OVER (ORDER BY t)",
    "lag(abs(t)) OVER (ORDER BY t)",
    # CEIL and FLOOR of a DOUBLE past BIGINT's range (an infinity too), ROUND of an integer past it
    "lag(ceil(y)) OVER (ORDER BY t)",
    "lag(floor(x * -1e30)) OVER (ORDER BY t)",
    "lag(round(k + 2147483645, -1)) OVER (ORDER BY t)",
    "lag(- -2147483648) OVER (ORDER BY t)",
]


def test_spark_readings_agree(spark):
    """Each of READINGS gives Spark's values and result types; each of READINGS_REFUSED is refused
    by both, each of READINGS_FAILING fails in both, on the rows' overflow."""
    table = pa.table(
        {
            "rid": pa.array([0, 1, 2, 3, 4], pa.int64()),
            "t": pa.array([1, 2, 3, 5, 7], pa.int64()),
            "k": pa.array([1, 1, 2, 2, None], pa.int32()),
            "x": pa.array([1.0, 2.5, None, -1.0, 3.0]),
            "f": pa.array([1.5, None, -0.25, None, 2.0], pa.float32()),
            "y": pa.array([math.nan, math.inf, None, -math.inf, math.nan]),
            "m": pa.array(
                [Decimal("1.50"), Decimal("-2.25"), None, Decimal("10.00"), Decimal("0.5")],
                pa.decimal128(12, 2),
            ),
            "s": pa.array(["a", "b", None, "c", "c"]),
            "u": pa.array([0, 1, 2, 4, 6], pa.int64()),
            "n": pa.array(
                [Decimal("0.00"), Decimal("1.55"), Decimal("1.56"), Decimal("3.00"), None],
                pa.decimal128(12, 2),
            ),
            "d": pa.array(
                [dt.date(2024, 1, 1), dt.date(2024, 2, 29), None, dt.date(1969, 12, 31), dt.date(1, 1, 1)],
                pa.date32(),
            ),
            "ts": pa.array(
                [
                    dt.datetime(2024, 1, 1, 10, 30),
                    dt.datetime(1969, 12, 31, 23),
                    None,
                    dt.datetime(2000, 6, 15, 12, 0, 0, 123456),
                    dt.datetime(2024, 3, 1),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )
    spark.createDataFrame(table).createOrReplaceTempView("readings")
    calls = [Call(f"c{j}", text) for j, text in enumerate(READINGS)]
    spark_values, spark_types, spark_errors = run_spark_view(spark, "readings", calls)
    ours = run_overwindow(table, calls)
    msgs = compare(0, table, calls, (spark_values, spark_types, spark_errors), ours, "readings")
    assert not msgs, "\n".join(msgs)
    for text in READINGS_REFUSED:
        with pytest.raises(Exception):  # noqa: B017 - Spark's analysis refuses it, in its own words
            spark.sql(f"SELECT {text} AS r FROM readings").schema  # noqa: B018 - analyses
        with pytest.raises(overwindow.WindowSpecError):
            overwindow.evaluate(table, f"{text} AS r")
    for text in READINGS_CAST_REFUSED:
        with pytest.raises(Exception):  # noqa: B017 - CAST_INVALID_INPUT, NUMERIC_VALUE_OUT_OF_RANGE...
            spark.sql(f"SELECT {text} AS r FROM readings").collect()
        with pytest.raises(overwindow.WindowSpecError):
            overwindow.evaluate(table, f"{text} AS r")
    big = table.set_column(
        table.schema.get_field_index("k"), "k", pa.array([1, -(2**31), 2, 3, 4], pa.int32())
    )
    big = big.set_column(big.schema.get_field_index("t"), "t", pa.array([1, 2, 3, -(2**63), 7], pa.int64()))
    spark.createDataFrame(big).createOrReplaceTempView("readings")
    for text in READINGS_FAILING:
        with pytest.raises(Exception, match="ARITHMETIC_OVERFLOW"):
            spark.sql(f"SELECT {text} AS r FROM readings").collect()
        with pytest.raises(WindowRuntimeError, match="ARITHMETIC_OVERFLOW"):
            overwindow.evaluate(big, f"{text} AS r")


# interval arithmetic Spark's ANSI mode fails on when it runs it, over rows that make it fail: a
# WindowRuntimeError naming Spark's error (a stream sets such rows aside, one by one)
INTERVAL_FAILING = {
    "lag((d - DATE '2024-01-01') / k) OVER (ORDER BY t)": "INTERVAL_DIVIDED_BY_ZERO",
    "lag((d - DATE '2024-01-01') / x) OVER (ORDER BY t)": "INTERVAL_DIVIDED_BY_ZERO",
    "lag(INTERVAL '106751991' DAY * k) OVER (ORDER BY t)": "long overflow",
    "lag((d - DATE '2024-01-01') * CAST('NaN' AS DOUBLE)) OVER (ORDER BY t)": "infinite or NaN",
    "lag(d - s) OVER (ORDER BY t)": "CAST_INVALID_INPUT",
    "lag(CAST(s AS INTERVAL DAY)) OVER (ORDER BY t)": "INVALID_INTERVAL_FORMAT",
}


def test_interval_failures_agree_with_spark(spark):
    """Each of INTERVAL_FAILING fails in Spark and in overwindow, with Spark's error named."""
    table = pa.table(
        {
            "t": pa.array([1, 2, 3], pa.int64()),
            "k": pa.array([2, 0, None], pa.int32()),
            "x": pa.array([1.0, -0.0, None]),
            "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 2, 29), None], pa.date32()),
            "s": pa.array(["2024-01-01", "x", None]),
        }
    )
    spark.createDataFrame(table).createOrReplaceTempView("failing")
    for text, error in INTERVAL_FAILING.items():
        with pytest.raises(Exception, match=error):
            spark.sql(f"SELECT {text} AS r FROM failing").collect()
        with pytest.raises(WindowRuntimeError, match=error):
            overwindow.evaluate(table, f"{text} AS r")


def test_strings_cast_to_dates_as_spark_reads_them(spark):
    """CAST(s AS DATE) over a column reads the forms Spark reads (a year alone, one-digit months
    and days, anything after a space or a T) to Spark's dates, and fails where Spark's cast fails
    (text glued to the day, eight digits, a day past the month's end), with its error named."""
    good = [" 2024-1-5 ", "2024", "2024-3", "2024-01-05T10:00", "2024-01-05 junk", "0999-12-31"]
    table = pa.table({"t": pa.array(range(len(good)), pa.int64()), "s": pa.array(good)})
    spark.createDataFrame(table).createOrReplaceTempView("dates")
    want = spark.sql("SELECT t, CAST(s AS DATE) AS d FROM dates ORDER BY t").toPandas()["d"].tolist()
    got = overwindow.evaluate(table, "lag(CAST(s AS DATE), 0) OVER (ORDER BY t) AS d")["d"].to_pylist()
    assert got == want
    for bad in ("2024-01-01xyz", "20240101", "2024-02-30", "2024-13-01", "x"):
        one = pa.table({"t": pa.array([0], pa.int64()), "s": pa.array([bad])})
        spark.createDataFrame(one).createOrReplaceTempView("dates")
        with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
            spark.sql("SELECT CAST(s AS DATE) FROM dates").collect()
        with pytest.raises(WindowRuntimeError, match="cannot be cast to DATE"):
            overwindow.evaluate(one, "lag(CAST(s AS DATE), 0) OVER (ORDER BY t) AS d")


def test_string_and_rounding_functions_agree_with_spark_over_random_rows(spark):
    """SUBSTRING with positions and lengths around 0, negative and past the end, case mapping,
    LENGTH and TRIM over random strings (empty, NULL, spaces, tabs, non-ASCII, astral characters),
    and ROUND/BROUND/CEIL/FLOOR/GREATEST/LEAST over random doubles with few or many digits: every
    row as Spark computes it, and the same result types."""
    rng = np.random.default_rng(7)
    alphabet = [" ", " ", "\t", "a", "B", "é", "ß", "İ", "ǆ", "😀", "x"]
    n = 300
    strings = [
        None if rng.random() < 0.1 else "".join(rng.choice(alphabet, size=rng.integers(0, 7)))
        for _ in range(n)
    ]
    specials = [0.5, -0.5, 2.5, 2.675, 1.005, 0.1 + 0.2, 1e-7, 123456789.125, 5e-324, 1e300, -0.0]
    doubles = [
        None
        if rng.random() < 0.05
        else float(rng.choice(specials))
        if rng.random() < 0.3
        else float(rng.normal() * 10.0 ** rng.integers(-3, 6))
        for _ in range(n)
    ]
    table = pa.table(
        {
            "s": pa.array(strings, pa.string()),
            "p": pa.array(rng.integers(-8, 9, size=n), pa.int32()),
            "l": pa.array(rng.integers(-2, 9, size=n), pa.int32()),
            "x": pa.array(doubles, pa.float64()),
            "y": pa.array(rng.normal(size=n) * 100, pa.float64()),
            "w": pa.array(
                [
                    Decimal(
                        int(rng.integers(-(10**18), 10**18)) * 10**12 + int(rng.integers(0, 10**12))
                    ).scaleb(-10)
                    for _ in range(n)
                ],
                pa.decimal128(38, 10),
            ),
        }
    )
    exprs = [
        "substr(s, p, l)",
        "substr(s, p)",
        "upper(s)",
        "lower(s)",
        "length(s)",
        "trim(s)",
        "rtrim(s)",
        "concat(s, x)",
        "s LIKE '%é_'",
        "s ILIKE 'SS%'",
        "s LIKE '_'",
        "s NOT LIKE '%a%x'",
        "round(x, 2)",
        "round(x, p)",
        "bround(x, 1)",
        "round(CAST(x AS FLOAT), 2)",
        "round(CAST(y AS DECIMAL(20, 6)), 3)",
        "bround(CAST(y AS DECIMAL(20, 6)), -1)",
        "ceil(y)",
        "floor(CAST(y AS DECIMAL(20, 6)))",
        "greatest(x, y, 0)",
        "least(x, y)",
        "CAST(w AS DOUBLE)",
        "greatest(w, x)",
        "least(w, 1e0)",
        "w < x",
    ]
    spark.createDataFrame(table).createOrReplaceTempView("fns")
    for e in exprs:
        if e == "round(x, p)":  # Spark takes a constant scale: one per p
            got, want = [], []
            for scale in range(-8, 9):
                sub = table.filter(pc.equal(table["p"], scale))
                want += [
                    r[0] for r in spark.sql(f"SELECT round(x, {scale}) FROM fns WHERE p = {scale}").collect()
                ]
                got += evaluate_expr(Expr.of(f"round(x, {scale})"), sub).to_pylist()
        else:
            out = spark.sql(f"SELECT {e} AS r FROM fns")
            want = [r[0] for r in out.collect()]
            ours = evaluate_expr(Expr.of(e), table)
            got = ours.to_pylist()
            assert out.schema["r"].dataType == _arrow_type_as_spark(ours.type), (e, out.schema, ours.type)
        bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if not _equal(g, w)]
        assert not bad, (e, bad[:5])


def _equal(a, b) -> bool:
    """Equal values, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def test_a_dotted_name_without_backquotes_is_refused_as_spark_refuses_it(spark):
    """``a.b`` beside a column named ``a.b`` and a column ``b``: Spark resolves neither (the
    column needs backquotes); overwindow refuses it, where it read ``b``; `` `a.b` `` reads it."""
    table = pa.table({"t": pa.array([1, 2], pa.int64()), "a.b": [100, 200], "b": [1, 2]})
    spark.createDataFrame(table).createOrReplaceTempView("dotted")
    with pytest.raises(Exception, match="UNRESOLVED_COLUMN"):
        spark.sql("SELECT lag(a.b) OVER (ORDER BY t) FROM dotted").schema  # noqa: B018 - analyses
    with pytest.raises(overwindow.WindowSpecError, match="backquotes"):
        overwindow.evaluate(table, "lag(a.b) OVER (ORDER BY t) AS p")
    want = [r[0] for r in spark.sql("SELECT lag(`a.b`) OVER (ORDER BY t) FROM dotted").collect()]
    assert overwindow.evaluate(table, "lag(`a.b`) OVER (ORDER BY t) AS p")["p"].to_pylist() == want
