"""Random window calls run through overwindow and through DuckDB / SQLite, compared row by row.

One seed gives one random table (``make_table``) and a batch of random calls (``random_call``);
each call is one random spec rendered three ways: our Spark SQL (``CallSpec.ours``), DuckDB SQL
(``CallSpec.duck``) and SQLite SQL (``CallSpec.sqlite``). A batch runs as one
``overwindow.evaluate`` and a few DuckDB SELECTs (or one SQLite SELECT); ``compare`` returns one
message per disagreeing call. DuckDB always gets the null order spelled out (its default is NULLS
LAST both ways; ours, Spark's, is ASC NULLS FIRST / DESC NULLS LAST); our SQL spells it or not.

Ties. DuckDB and SQLite order peers arbitrarily (even differently per SELECT); we order them by
input position. Each call has a ``strategy`` saying how its result stays deterministic:

* ``plain``: ORDER BY keys with many ties and NULLs, nothing appended. Only for results that do not
  depend on the order among peers: rank, dense_rank, percent_rank, cume_dist, and every
  order-insensitive aggregate (count, count(*), count DISTINCT, sum, avg, min, max, variances,
  bool_*, median, percentiles, mode) over RANGE or GROUPS frames (any bounds, any EXCLUDE, RANGE
  offsets over tied int/float/DATE/TIMESTAMP keys), the default frame, and no-ORDER-BY frames
  (whole partition, or ROWS/RANGE UNBOUNDED..UNBOUNDED with any EXCLUDE).
* ``rid``: tied keys plus the unique row id ``rid`` as the last ORDER BY key in both engines, where
  that leaves the tested semantics intact: row_number, ntile, lag, lead, and aggregates and
  first/last/nth_value over ROWS frames with EXCLUDE NO OTHERS / CURRENT ROW.
* ``unique``: one ORDER BY key with no ties in the table (u* columns: at most one NULL, one NaN,
  one +inf, one -inf -- or one -0.0 -- in the whole table, so in any partition). Positions and
  peers are both deterministic, so anything goes: first/last/nth_value over RANGE (with offsets)
  and GROUPS frames, ROWS + EXCLUDE GROUP / TIES, lag/lead, row_number, ntile.
* ``peerset``: tied keys, nothing appended, and the argument (and FILTER) is a function of the
  first ORDER BY key, so all rows of a peer group hold the same value. The multiset of results
  within each peer group is then deterministic although which row gets which is not: we compare
  sorted results per (partition, peer group). Covers ties under ROWS frames with EXCLUDE GROUP /
  TIES, first/last/nth_value over tied RANGE/GROUPS frames, row_number/ntile/lag/lead among ties.

Oracles, per function:

* DuckDB's own result: ranking, lag/lead, first/last/nth_value, count, count(*), count DISTINCT,
  min, max, bool_and, bool_or, median and percentile_cont (quantile_cont; DuckDB interpolates with
  an fma, we without, so where the result cancels to about 0 an absolute error of 1e-9 times the
  frame's largest magnitude is allowed), percentile_disc (quantile_disc: the first value whose
  cumulative distribution reaches p, as ours).
* exact Python arithmetic over the frame's contents as DuckDB reports them (``list(x) FILTER ...
  OVER`` in the same SELECT): sum and avg (DuckDB's sum, fsum and kahan_sum all give
  ``1e20 + 1 - 1e20 = 0``), variances and standard deviations (DuckDB's are plain Welford in
  doubles), percentile_disc (a second oracle beside quantile_disc), and mode. mode is a deliberate
  difference: DuckDB breaks ties by the first value met in the frame, we by the smallest value;
  we check that DuckDB's answer has the top count of the frame (so the frame is right) and that
  ours is the smallest value with that count.
* SQLite 3.40's own result, on data it can hold exactly (no NaN/-0.0/dates/booleans, floats that
  are small multiples of 0.25 so its naive, subtracting window sums are exact).

Oracle bugs worked around (each with a regression test in test_differential.py):

* DuckDB: a RANGE end ``n PRECEDING`` / start ``n FOLLOWING`` whose value equals the current key
  (n = 0, or a NaN/+-inf key) sometimes stops at the current row instead of the peer group's far
  edge; such bounds are handed to DuckDB as the equivalent CURRENT ROW (``CallSpec._duck_frames``).
* DuckDB: ``INTERVAL 30 DAYS`` and ``INTERVAL 1 MONTH`` compare equal, so two bounds of one frame
  (or two windows of one SELECT) that differ only so are merged; the generator never pairs
  offsets DuckDB calls equal (``_range_offset``).
* SQLite: min()/max() ignore FILTER once the frame start moves; they get ``CASE WHEN`` instead.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction

import duckdb
import numpy as np
import pyarrow as pa

import overwindow

REL = 1e-9
TINY = 2.2250738585072014e-308  # the smallest normal double
DUCKDB_CHUNK = 10

# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------

BASE_DATE = dt.date(2024, 1, 27)  # month ends and a leap day within reach of the offsets used
BASE_TS = dt.datetime(2024, 2, 27, 22, 0, 0)
INF, NAN = math.inf, math.nan

KF_POOL = [-INF, -1e15, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.5, 1e15, INF, NAN]
XF_POOL = [
    1e20,
    -1e20,
    1e150,
    -1e150,
    1e200,
    1e-200,
    1.0,
    -1.0,
    3.0,
    0.5,
    2.25,
    -0.0,
    0.0,
    1e-3,
    7.0,
    1e16,
    1e16 + 2,
    1e16 + 4,
    NAN,
    INF,
    -INF,
]  # 1e16 + 2: variances that cancel
XS_POOL = ["a", "b", "B", "", "ab", "ä", "Z", "a "]


def _with_nulls(rng, values: list, p: float) -> list:
    return [None if rng.random() < p else v for v in values]


def _partition_sizes(rng, n: int) -> list[int]:
    """A few partitions of varied sizes, at least one of one row when n allows."""
    sizes = [1] * int(rng.integers(1, 4))
    while sum(sizes) < n:
        sizes.append(int(min(n - sum(sizes), rng.integers(2, max(3, n // 2)))))
    return sizes


def _unique(rng, pool: list, n: int) -> list:
    idx = rng.choice(len(pool), size=n, replace=False)
    return [pool[i] for i in idx]


def make_table(rng: np.random.Generator, n: int, flavor: str = "duckdb") -> pa.Table:
    """A random table: partitions p (int, some 1-row, maybe a NULL partition) and q (string);
    tied ORDER BY keys ki kf kd kt ks; tie-free keys ui uf ud ut; values xf (NULL, NaN, inf,
    1e20 beside 1), xg (finite), xi, xb, xs, xd; rid is unique. ``flavor="sqlite"`` leaves out
    what SQLite cannot hold (NaN, -0.0, dates, booleans) and keeps float sums exact."""
    sqlite = flavor == "sqlite"
    sizes = _partition_sizes(rng, n)
    p = []
    null_part = rng.random() < 0.3
    for j, s in enumerate(sizes):
        p += [None if (null_part and j == len(sizes) - 1) else j] * s
    n = len(p)
    q = list(rng.choice(["x", "y", "z"], size=n, p=[0.5, 0.4, 0.1]))
    q = [str(v) for v in q]

    m = int(rng.integers(2, 8))
    ki = _with_nulls(rng, [int(v) for v in rng.integers(0, m, n) * int(rng.choice([1, 1, 3, 1000]))], 0.12)
    # SQLite sums doubles naively and slides frames by subtracting, so its float keys stay small
    # multiples of 0.5 whose sums are exact in any order (exactness is DuckDB's side's job)
    kf_pool = [
        v for v in KF_POOL if not (sqlite and (not math.isfinite(v) or str(v) == "-0.0" or abs(v) > 1e6))
    ]
    kf_pool = _unique(rng, kf_pool, int(rng.integers(2, min(8, len(kf_pool)) + 1)))
    kf = _with_nulls(rng, [kf_pool[i] for i in rng.integers(0, len(kf_pool), n)], 0.12)
    days = _unique(rng, list(range(0, 70)), int(rng.integers(2, 9)))
    kd = _with_nulls(
        rng, [BASE_DATE + dt.timedelta(days=days[i]) for i in rng.integers(0, len(days), n)], 0.12
    )
    mins = _unique(rng, list(range(0, 72 * 60, 30)), int(rng.integers(2, 9)))
    kt = _with_nulls(
        rng, [BASE_TS + dt.timedelta(minutes=mins[i]) for i in rng.integers(0, len(mins), n)], 0.12
    )
    ks_pool = _unique(rng, XS_POOL, 3)
    ks = _with_nulls(rng, [ks_pool[i] for i in rng.integers(0, 3, n)], 0.12)

    # tie-free keys: distinct over the whole table, so in every partition; one NULL at most
    ui = [int(v) for v in rng.choice(np.arange(-2 * n, 2 * n), size=n, replace=False)]
    uf = [float(v) * 0.5 for v in rng.choice(np.arange(-3 * n, 3 * n), size=n, replace=False)]
    if not sqlite:
        specials = [NAN, INF, -INF, -0.0]
        for pos, v in zip(rng.choice(n, size=min(n, 4), replace=False), specials):
            if rng.random() < 0.6:
                if v == 0.0:  # -0.0 only where it stays unique: replace the 0.0 if any
                    uf = [-0.0 if u == 0.0 else u for u in uf]
                else:
                    uf[pos] = v
    ud = [
        BASE_DATE + dt.timedelta(days=int(v)) for v in rng.choice(np.arange(0, 4 * n), size=n, replace=False)
    ]
    ut = [
        BASE_TS + dt.timedelta(minutes=17 * int(v))
        for v in rng.choice(np.arange(0, 8 * n), size=n, replace=False)
    ]
    for col in (ui, uf, ud, ut):
        if rng.random() < 0.7:
            col[int(rng.integers(0, n))] = None

    if sqlite:
        xf = [float(v) * 0.25 for v in rng.integers(-40, 41, n)]
        xf = [v * 1024 if rng.random() < 0.1 else v for v in xf]
    else:
        xf = []
        for _ in range(n):
            r = rng.random()
            if r < 0.45:
                xf.append(float(XF_POOL[int(rng.integers(0, len(XF_POOL)))]))
            elif r < 0.75:
                xf.append(float(rng.normal() * 10 ** int(rng.integers(-2, 4))))
            else:
                xf.append(float(rng.integers(-5, 6)))
    xf = _with_nulls(rng, xf, 0.12)
    xg = [v if v is None or math.isfinite(v) else float(rng.integers(-3, 4)) for v in xf]
    if not sqlite:
        xg = [v if v is None or rng.random() < 0.9 else 1e20 for v in xg]
    xi = [int(v) for v in rng.integers(-5, 6, n)]
    xi = [v * 2**40 if rng.random() < 0.05 and not sqlite else v for v in xi]
    xi = _with_nulls(rng, xi, 0.12)
    xs = _with_nulls(rng, [XS_POOL[i] for i in rng.integers(0, len(XS_POOL), n)], 0.12)
    xb = _with_nulls(rng, [bool(v) for v in rng.integers(0, 2, n)], 0.15)
    xd = _with_nulls(rng, [BASE_DATE + dt.timedelta(days=int(v)) for v in rng.integers(0, 40, n)], 0.12)

    cols = {
        "rid": pa.array(rng.permutation(n).astype(np.int64)),
        "p": pa.array(p, pa.int64()),
        "q": pa.array(q, pa.string()),
        "ki": pa.array(ki, pa.int64()),
        "kf": pa.array(kf, pa.float64()),
        "ks": pa.array(ks, pa.string()),
        "ui": pa.array(ui, pa.int64()),
        "uf": pa.array(uf, pa.float64()),
        "xf": pa.array(xf, pa.float64()),
        "xg": pa.array(xg, pa.float64()),
        "xi": pa.array(xi, pa.int64()),
        "xs": pa.array(xs, pa.string()),
    }
    if not sqlite:
        cols.update(
            {
                "kd": pa.array(kd, pa.date32()),
                "kt": pa.array(kt, pa.timestamp("us")),
                "ud": pa.array(ud, pa.date32()),
                "ut": pa.array(ut, pa.timestamp("us")),
                "xb": pa.array(xb, pa.bool_()),
                "xd": pa.array(xd, pa.date32()),
            }
        )
    table = pa.table(cols)
    return table.take(pa.array(rng.permutation(n)))  # input order unrelated to any key


# ---------------------------------------------------------------------------------------------
# call specs
# ---------------------------------------------------------------------------------------------

RANK_PEER = ("rank", "dense_rank", "percent_rank", "cume_dist")
RANK_POS = ("row_number", "ntile")
OFFSET = ("lag", "lead")
VALUE = ("first_value", "last_value", "nth_value")
AGGS = (
    "count",
    "count_star",
    "count_distinct",
    "sum",
    "avg",
    "min",
    "max",
    "stddev_samp",
    "stddev_pop",
    "var_samp",
    "var_pop",
    "bool_and",
    "bool_or",
    "median",
    "percentile_cont",
    "percentile_disc",
    "mode",
)
EXACT_LIST = (
    "sum",
    "avg",
    "stddev_samp",
    "stddev_pop",
    "var_samp",
    "var_pop",
    "percentile_disc",
    "mode",
    "median",
    "percentile_cont",
)

AGG_ARGS = {
    "count": ["xf", "xi", "xs", "xb", "xd"],
    "count_distinct": ["xf", "xg", "xi", "xs", "xd", "xb"],
    "sum": ["xf", "xg", "xi", "xi * 3"],
    "avg": ["xf", "xg", "xi"],
    "min": ["xf", "xg", "xi", "xs", "xd"],
    "max": ["xf", "xg", "xi", "xs", "xd"],
    "stddev_samp": ["xg", "xi", "xf"],
    "stddev_pop": ["xg", "xi", "xf"],
    "var_samp": ["xg", "xi", "xf"],
    "var_pop": ["xg", "xi", "xf"],
    "bool_and": ["xb"],
    "bool_or": ["xb"],
    "median": ["xf", "xg", "xi"],
    "percentile_cont": ["xf", "xg", "xi"],
    "percentile_disc": ["xf", "xg", "xi", "xs", "xd"],
    "mode": ["xi", "xs", "xf", "xd", "xb"],
}
ANY_ARGS = ["xf", "xg", "xi", "xs", "xb", "xd"]
NUMERIC_FUNCS = (
    "sum",
    "avg",
    "stddev_samp",
    "stddev_pop",
    "var_samp",
    "var_pop",
    "median",
    "percentile_cont",
)
FILTERS = [
    "xi > 0",
    "xb",
    "NOT xb",
    "xs IS NOT NULL",
    "xf > 0",
    "xf = xf",
    "xi % 2 = 0",
    "p <> 1",
    "xf < 1e10",
    "xs <> 'a'",
    "xi IS NULL OR xi < 3",
]
TIED_KEYS = ["ki", "kf", "kd", "kt", "ks"]
UNIQUE_KEYS = ["ui", "uf", "ud", "ut"]
KEY_TYPE = {
    "ki": "int",
    "ui": "int",
    "kf": "float",
    "uf": "float",
    "kd": "date",
    "ud": "date",
    "kt": "timestamp",
    "ut": "timestamp",
    "ks": "string",
    "rid": "int",
}
PARTITIONS = [(), ("p",), ("q",), ("p", "q")]

# Capabilities of the oracle the batch is for.
DUCKDB_CAPS = dict(
    funcs=RANK_PEER + RANK_POS + OFFSET + VALUE + AGGS,
    ignore_nulls=True,
    negative_offsets=True,
    tied_keys=TIED_KEYS,
    unique_keys=UNIQUE_KEYS,
    agg_args=AGG_ARGS,
    any_args=ANY_ARGS,
    filters=FILTERS,
)
SQLITE_CAPS = dict(
    funcs=RANK_PEER + RANK_POS + OFFSET + VALUE + ("count", "count_star", "sum", "avg", "min", "max"),
    ignore_nulls=False,
    negative_offsets=False,
    tied_keys=["ki", "kf", "ks"],
    unique_keys=["ui", "uf"],
    agg_args={
        "count": ["xf", "xi", "xs"],
        "sum": ["xf", "xi", "xi * 3"],
        "avg": ["xf", "xi"],
        "min": ["xf", "xi", "xs"],
        "max": ["xf", "xi", "xs"],
    },
    any_args=["xf", "xi", "xs"],
    filters=[
        "xi > 0",
        "xs IS NOT NULL",
        "xf > 0",
        "xi % 2 = 0",
        "p <> 1",
        "xs <> 'a'",
        "xi IS NULL OR xi < 3",
    ],
)


@dataclass
class CallSpec:
    name: str
    func: str
    strategy: str  # plain | rid | unique | peerset (see the module docstring)
    arg: str | None = None
    params: tuple = ()  # ntile buckets; lag/lead offset (None: omitted); nth n; percentile p
    default: str | None = None
    ignore_nulls: bool = False
    filter: str | None = None
    partition: tuple = ()
    order: tuple = ()  # (column, descending, nulls_first or None for the engine default)
    frame: tuple | None = None  # (unit, (kind, offset), (kind, offset), exclude)
    short_frame: bool = False  # spell ``ROWS n PRECEDING`` in our SQL
    spelling: str | None = None  # another accepted name of the function, for our SQL

    # -- rendering --------------------------------------------------------------------------
    def _order_sql(self, explicit: bool) -> str:
        items = []
        for col, desc, nf in self.order:
            text = f"{col} {'DESC' if desc else 'ASC'}"
            if nf is None and explicit:
                nf = not desc  # our (Spark's) default: ASC NULLS FIRST, DESC NULLS LAST
            if nf is not None:
                text += " NULLS FIRST" if nf else " NULLS LAST"
            items.append(text)
        return ", ".join(items)

    def _frame_sql(self, short_ok: bool, frame=None) -> str:
        frame = frame or self.frame
        if frame is None:
            return ""
        unit, start, end, exclude = frame

        def b(kind, off):
            return {"UP": "UNBOUNDED PRECEDING", "CR": "CURRENT ROW", "UF": "UNBOUNDED FOLLOWING"}.get(
                kind
            ) or f"{off} {'PRECEDING' if kind == 'P' else 'FOLLOWING'}"

        if (
            short_ok
            and self.short_frame
            and end[0] == "CR"
            and start[0] in ("UP", "P")
            and exclude == "NO OTHERS"
        ):
            text = f"{unit} {b(*start)}"
        else:
            text = f"{unit} BETWEEN {b(*start)} AND {b(*end)}"
        if exclude != "NO OTHERS" or (short_ok and self.short_frame):
            text += f" EXCLUDE {exclude}"
        return text

    def _over(self, explicit: bool, short_ok: bool, frame=None) -> str:
        parts = []
        if self.partition:
            parts.append("PARTITION BY " + ", ".join(self.partition))
        if self.order:
            parts.append("ORDER BY " + self._order_sql(explicit))
        fr = self._frame_sql(short_ok, frame)
        if fr:
            parts.append(fr)
        return "OVER (" + " ".join(parts) + ")"

    def _filter_sql(self) -> str:
        return f" FILTER (WHERE {self.filter})" if self.filter else ""

    def ours(self) -> str:
        f, a = self.func, self.arg
        name = self.spelling or f
        if f == "count_star":
            text = "count(*)"
        elif f == "count_distinct":
            text = f"count(DISTINCT {a})"
        elif f in ("percentile_cont", "percentile_disc"):
            text = f"{f}({self.params[0]}) WITHIN GROUP (ORDER BY {a})"
        elif f in RANK_PEER or f == "row_number":
            text = f"{f}()"
        elif f == "ntile":
            text = f"ntile({self.params[0]})"
        elif f in OFFSET:
            items = [a]
            off = self.params[0]
            if off is not None or self.default is not None:
                items.append(str(1 if off is None else off))
            if self.default is not None:
                items.append(self.default)
            text = f"{f}({', '.join(items)})"
        elif f == "nth_value":
            text = f"nth_value({a}, {self.params[0]})"
        else:
            text = f"{name}({a})"
        if self.ignore_nulls:
            text += " IGNORE NULLS"
        text += self._filter_sql()
        return f"{text} {self._over(False, True)} AS {self.name}"

    def _std_func(self) -> str:
        """Function text for DuckDB (IGNORE NULLS inside the parentheses) and SQLite."""
        f, a = self.func, self.arg
        ign = " IGNORE NULLS" if self.ignore_nulls else ""
        if f == "count_star":
            return "count(*)"
        if f == "count_distinct":
            return f"count(DISTINCT {a})"
        if f == "percentile_cont":
            return f"quantile_cont({a}, {self.params[0]})"
        if f == "percentile_disc":
            return f"quantile_disc({a}, {self.params[0]})"
        if f in RANK_PEER or f == "row_number":
            return f"{f}()"
        if f == "ntile":
            return f"ntile({self.params[0]})"
        if f in OFFSET:
            off = self.params[0]
            items = [a]
            if off is not None or self.default is not None:
                items.append(str(1 if off is None else off))
            if self.default is not None:
                items.append(self.default)
            return f"{f}({', '.join(items)}{ign})"
        if f == "nth_value":
            return f"nth_value({a}, {self.params[0]}{ign})"
        if f in ("first_value", "last_value"):
            return f"{f}({a}{ign})"
        return f"{f}({a})"

    # DuckDB 2.0 bug (see test_duckdb_range_offset_bug_is_worked_around): a RANGE bound with an
    # offset whose value equals the current key -- ``0 PRECEDING``/``INTERVAL 0 DAYS PRECEDING``, or
    # any offset at a NaN/+-inf key, where key -/+ n == key -- must reach the far edge of the peer
    # group, but DuckDB's end-``n PRECEDING`` / start-``n FOLLOWING`` search stops at the current
    # row for some rows (which ones depends on the peers' order, so on the other windows in the
    # query), and count(*) and list() of the same frame can even disagree. By SQL's definition
    # such a bound *is* the peer group's edge, i.e. CURRENT ROW, so DuckDB gets that spelling:
    # statically for a zero offset, and per row (CASE on the key) for non-finite keys. Our engine
    # always gets the original text.
    def _duck_frames(self):
        """(frame for finite keys, frame for NaN/inf keys or None, key column)."""
        f = self.frame
        if f is None or f[0] != "RANGE" or not (f[1][0] in ("P", "F") or f[2][0] in ("P", "F")):
            return f, None, None
        unit, start, end, ex = f
        if start[0] == "F" and _is_zero(start[1]):
            start = ("CR", None)
        if end[0] == "P" and _is_zero(end[1]):
            end = ("CR", None)
        key = self.order[0][0]
        nonfinite = None
        if KEY_TYPE[key] == "float":
            nonfinite = (
                unit,
                ("CR", None) if start[0] in ("P", "F") else start,
                ("CR", None) if end[0] in ("P", "F") else end,
                ex,
            )
        return (unit, start, end, ex), nonfinite, key

    def _duck_windowed(self, func_sql: str) -> str:
        finite, nonfinite, key = self._duck_frames()
        text = f"{func_sql}{self._filter_sql()} {self._over(True, False, finite)}"
        if nonfinite is not None:
            other = f"{func_sql}{self._filter_sql()} {self._over(True, False, nonfinite)}"
            text = f"CASE WHEN isnan({key}) OR isinf({key}) THEN {other} ELSE {text} END"
        return text

    def duck(self) -> str:
        return f"{self._duck_windowed(self._std_func())} AS {self.name}"

    def duck_list(self) -> str:
        """The frame's contents (FILTER applied, NULLs kept) as DuckDB sees them."""
        return f"{self._duck_windowed(f'list({self.arg})')} AS {self.name}__l"

    def sqlite(self) -> str:
        if self.func in ("min", "max") and self.filter:
            # SQLite 3.40 bug: min()/max() as window functions ignore FILTER once the frame start
            # moves (max(x) FILTER (WHERE x < 3) OVER (ORDER BY i ROWS CURRENT ROW) returns 5 for
            # x = 5). min/max skip NULLs, so feeding NULL for filtered-out rows is the same thing.
            text = f"{self.func}(CASE WHEN {self.filter} THEN {self.arg} END)"
            return f"{text} {self._over(True, False)} AS {self.name}"
        return f"{self._std_func()}{self._filter_sql()} {self._over(True, False)} AS {self.name}"

    @property
    def needs_list(self) -> bool:
        return self.func in EXACT_LIST


# ---------------------------------------------------------------------------------------------
# random specs
# ---------------------------------------------------------------------------------------------


def _is_zero(offset) -> bool:
    return offset == 0 or (isinstance(offset, str) and offset.split()[1] == "0")


def _pick(rng, items):
    return items[int(rng.integers(0, len(items)))]


def _range_offset(rng, ktype: str, sqlite: bool):
    if ktype == "int":
        # no fractional offset on integers: Spark, and overwindow with it, drop the fraction (1.5 is
        # 1: RANGE BETWEEN 1.5 FOLLOWING ... starts at key + 1), DuckDB and SQLite compare exactly;
        # tests/spark/test_parity.py checks fractions on integer keys against Spark
        return _pick(rng, [0, 1, 1, 2, 3, 5, 1000, 10**9])
    if ktype == "float":
        return _pick(rng, [0, 0.5, 1, 1.5, 2.5, 1e15, 1e300] if not sqlite else [0, 0.5, 1, 1.5, 2.5, 100])
    if ktype == "date":
        # No two offsets here that DuckDB's interval equality (1 month = 30 days, 1 day = 24
        # hours) calls equal but the calendar does not: DuckDB 2.0 then merges the two as one
        # expression, e.g. RANGE BETWEEN INTERVAL 30 DAYS FOLLOWING AND INTERVAL 1 MONTH
        # FOLLOWING uses one bound for both. Spark, and overwindow with it, take no two offsets of
        # different interval types (DAY, MONTH) in one frame anyway.
        return _pick(
            rng,
            [
                "INTERVAL 0 DAYS",
                "INTERVAL 1 DAYS",
                "INTERVAL 3 DAYS",
                "INTERVAL 10 DAYS",
                "INTERVAL 29 DAYS",
                "INTERVAL 31 DAYS",
                "INTERVAL 1 MONTH",
                "INTERVAL 2 MONTHS",
                "INTERVAL 2 WEEKS",
                "INTERVAL 1 YEAR",
            ],
        )
    if ktype == "timestamp":
        return _pick(
            rng,
            [
                "INTERVAL 30 MINUTES",
                "INTERVAL 90 MINUTES",
                "INTERVAL 1 HOURS",
                "INTERVAL 5 HOURS",
                "INTERVAL 1 DAYS",
                "INTERVAL 2 DAYS",
                "INTERVAL 1 MONTH",
                "INTERVAL 45 SECONDS",
            ],
        )
    raise AssertionError(ktype)


def _bounds(rng, offset):
    """(start, end) with every bound kind, including start-after-end frames that are empty for
    some rows only (``1 PRECEDING AND 0 FOLLOWING`` over ties, ``INTERVAL 31 DAYS PRECEDING AND
    INTERVAL 1 MONTH PRECEDING``). Left out: the combinations DuckDB and SQLite reject at parse time
    (start CURRENT ROW / FOLLOWING, end before it), and what Spark rejects (overwindow with it): two
    numeric offsets whose lower bound passes the upper one, two INTERVALs of different types."""
    starts = ["UP", "P", "CR", "F"] if offset else ["UP", "CR"]
    ends = ["P", "CR", "F", "UF"] if offset else ["CR", "UF"]
    while True:
        s, e = _pick(rng, starts), _pick(rng, ends)
        if (s == "CR" and e == "P") or (s == "F" and e in ("P", "CR")):
            continue
        a, b = (offset() if s in ("P", "F") else None), (offset() if e in ("P", "F") else None)
        if a is not None and b is not None and not _spark_accepts(s, a, e, b):
            continue
        return (s, a), (e, b)


def _interval_type(offset) -> str:
    """Spark's type of an offset: 'number', or the INTERVAL's unit (DAY for WEEKs)."""
    if not isinstance(offset, str):
        return "number"
    unit = offset.split()[-1].upper().rstrip("S")
    return {"WEEK": "DAY"}.get(unit, unit)


def _size(offset):
    """An offset's size in its own type's unit (WEEKs in DAYs)."""
    if not isinstance(offset, str):
        return offset
    amount = int(offset.split()[1])
    return amount * 7 if offset.split()[-1].upper().startswith("WEEK") else amount


def _spark_accepts(s, a, e, b) -> bool:
    if _interval_type(a) != _interval_type(b):
        return False
    lower = -_size(a) if s == "P" else _size(a)
    upper = -_size(b) if e == "P" else _size(b)
    return lower <= upper


def _exclude(rng):
    return _pick(rng, ["NO OTHERS", "NO OTHERS", "NO OTHERS", "CURRENT ROW", "GROUP", "TIES"])


def _order_keys(rng, keys, count):
    cols = list(rng.choice(keys, size=count, replace=False))
    out = []
    for c in cols:
        desc = bool(rng.random() < 0.4)
        nf = _pick(rng, [None, True, False])
        out.append((str(c), desc, nf))
    return tuple(out)


def _key_arg(rng, key: str, numeric: bool) -> str:
    """An argument constant within each peer group of ``key`` (peerset strategy)."""
    if KEY_TYPE[key] == "int":
        return _pick(rng, [key, f"{key} * 2", f"{key} - 1"])
    return key


def _key_filter(rng, key: str) -> str | None:
    t = KEY_TYPE[key]
    if rng.random() < 0.6:
        return None
    if t == "int":
        return _pick(rng, [f"{key} > 1", f"{key} IS NOT NULL", f"{key} % 2 = 0"])
    if t == "float":
        return _pick(rng, [f"{key} > 0", f"{key} < 2", f"{key} IS NULL"])
    if t == "string":
        return _pick(rng, [f"{key} <> 'a'", f"{key} IS NOT NULL"])
    return f"{key} IS NOT NULL"


def random_call(rng, name: str, caps: dict) -> CallSpec:
    sqlite = not caps["ignore_nulls"]
    funcs = caps["funcs"]
    f = _pick(rng, funcs)
    partition = _pick(rng, PARTITIONS)
    tied, unique = caps["tied_keys"], caps["unique_keys"]

    if f in RANK_PEER:
        order = _order_keys(rng, tied, int(rng.integers(1, 4)))
        return CallSpec(name, f, "plain", partition=partition, order=order)

    if f in RANK_POS or f in OFFSET:
        strategy = _pick(rng, ["rid", "rid", "unique", "peerset"])
        order, arg = _positional_order(rng, strategy, tied, unique)
        spec = CallSpec(name, f, strategy, partition=partition, order=order)
        if f == "ntile":
            spec.params = (_pick(rng, [1, 2, 3, 4, 7, 50, 100]),)
        elif f in OFFSET:
            spec.arg = arg if strategy == "peerset" else _pick(rng, caps["any_args"])
            offs = [None, 0, 1, 1, 2, 3, 10, 1000] + ([-1, -2] if caps["negative_offsets"] else [])
            spec.params = (_pick(rng, offs),)
            spec.ignore_nulls = caps["ignore_nulls"] and rng.random() < 0.4
            if rng.random() < 0.35:
                spec.default = _default_for(rng, spec.arg)
        return spec

    # value functions and aggregates: they take a frame
    is_value = f in VALUE
    has_order = is_value or rng.random() < 0.85
    if not has_order:
        strategy = "plain"
        order = ()
        frame = _pick(
            rng,
            [
                None,
                None,
                ("ROWS", ("UP", None), ("UF", None), _exclude(rng)),
                ("RANGE", ("UP", None), ("UF", None), _exclude(rng)),
                # not RANGE CURRENT ROW without ORDER BY (all rows peers: the whole partition in
                # PostgreSQL and DuckDB), which Spark refuses and so does overwindow
            ],
        )
    else:
        unit = _pick(rng, ["ROWS", "ROWS", "RANGE", "RANGE", "GROUPS", None])
        exclude = _exclude(rng)
        if unit in ("RANGE", "GROUPS", None):
            strategy = "plain" if not is_value else _pick(rng, ["unique", "peerset"])
        elif exclude in ("NO OTHERS", "CURRENT ROW"):
            strategy = _pick(rng, ["rid", "rid", "unique", "peerset"])
        else:
            strategy = _pick(rng, ["unique", "peerset"])
        if strategy == "unique":
            order = _order_keys(rng, unique, 1)
        elif unit == "RANGE" and rng.random() < 0.75:  # RANGE with offsets: exactly one key
            order = _order_keys(rng, [k for k in tied if KEY_TYPE[k] != "string"], 1)
        else:
            order = _order_keys(rng, tied, int(rng.integers(1, 3)))
        if strategy == "rid":
            order = order + (("rid", bool(rng.random() < 0.5), None),)
        if unit is None:
            frame = None
        else:
            ktype = KEY_TYPE[order[0][0]]
            if unit == "RANGE":
                offset = (
                    (lambda: _range_offset(rng, ktype, sqlite))
                    if len(order) == 1 and ktype != "string"
                    else None
                )
            else:
                offset = lambda: _pick(rng, [0, 1, 1, 2, 3, 5, 10**6])  # noqa: E731
            start, end = _bounds(rng, offset)
            frame = (unit, start, end, exclude)

    spec = CallSpec(name, f, strategy, partition=partition, order=order, frame=frame)
    spec.short_frame = rng.random() < 0.3
    numeric = f in NUMERIC_FUNCS
    if strategy == "peerset":
        key = order[0][0]
        if numeric and KEY_TYPE[key] not in ("int", "float"):
            key = _pick(rng, [k for k in tied if KEY_TYPE[k] in ("int", "float")])
            spec.order = ((key, False, None),) + order[1:]
            if (
                frame is not None
                and frame[0] == "RANGE"
                and (frame[1][0] in ("P", "F") or frame[2][0] in ("P", "F"))
            ):
                spec.frame = (frame[0], ("UP", None), ("CR", None), frame[3])
        if f in ("bool_and", "bool_or"):
            spec.func = f = "count"
        spec.arg = None if f == "count_star" else _key_arg(rng, key, numeric)
        spec.filter = _key_filter(rng, key) if not is_value else None
    else:
        if f != "count_star":
            spec.arg = _pick(rng, caps["any_args"] if is_value else caps["agg_args"][f])
        if not is_value and rng.random() < 0.25:
            spec.filter = _pick(rng, caps["filters"])
    if f in ("percentile_cont", "percentile_disc"):
        spec.params = (_pick(rng, [0.0, 0.1, 0.25, 0.3, 0.5, 0.55, 0.7, 0.75, 0.9, 1.0, 0.33]),)
    if f == "nth_value":
        spec.params = (_pick(rng, [1, 2, 3, 4, 10, 200]),)
    if is_value:
        spec.ignore_nulls = caps["ignore_nulls"] and rng.random() < 0.4
    if not sqlite and rng.random() < 0.15:
        spec.spelling = {
            "stddev_samp": _pick(rng, ["stddev", "std"]),
            "var_samp": "variance",
            "bool_and": "every",
            "bool_or": _pick(rng, ["some", "any"]),
            "avg": "mean",
        }.get(f)
    return spec


def _positional_order(rng, strategy, tied, unique):
    if strategy == "unique":
        order = _order_keys(rng, unique, 1)
        return order, None
    order = _order_keys(rng, tied, int(rng.integers(1, 3)))
    if strategy == "rid":
        return order + (("rid", bool(rng.random() < 0.5), None),), None
    return order, _key_arg(rng, order[0][0], False)


def _default_for(rng, arg: str) -> str | None:
    col = arg.split()[0]
    t = {
        "xf": "float",
        "xg": "float",
        "xi": "int",
        "xs": "string",
        "xb": "bool",
        "ki": "int",
        "ui": "int",
        "kf": "float",
        "uf": "float",
        "ks": "string",
    }.get(col)
    if t == "int":
        return _pick(rng, ["-1", "100", "0"])
    if t == "float":
        return _pick(rng, ["-1.5", "0", "2.25"])
    if t == "string":
        return "'zz'"
    if t == "bool":
        return "TRUE"
    return None


# ---------------------------------------------------------------------------------------------
# exact Python oracles over a frame's contents
# ---------------------------------------------------------------------------------------------


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _scaled(vals):
    """Exact integers and a common denominator for finite floats / ints."""
    ratios = [v.as_integer_ratio() if isinstance(v, float) else (int(v), 1) for v in vals]
    den = max((d for _, d in ratios), default=1)
    return [n * (den // d) for n, d in ratios], den


def _nonfinite(vals):
    """IEEE result of a sum with NaN/inf in it, else None."""
    if any(_is_nan(v) for v in vals):
        return NAN
    pos = any(v == INF for v in vals)
    neg = any(v == -INF for v in vals)
    if pos and neg:
        return NAN
    if pos or neg:
        return INF if pos else -INF
    return None


def exact_sum(vals):
    if not vals:
        return None
    if all(isinstance(v, int) for v in vals):
        return sum(vals)
    bad = _nonfinite(vals)
    if bad is not None:
        return bad
    return math.fsum(vals)  # correctly rounded exact sum: fsum([1e20, 1.0, -1e20]) == 1.0


def exact_avg(vals):
    if not vals:
        return None
    bad = _nonfinite(vals) if not all(isinstance(v, int) for v in vals) else None
    if bad is not None:
        return bad
    ints, den = _scaled(vals)
    return float(Fraction(sum(ints), den * len(vals)))


def exact_var(vals, sample: bool, root: bool):
    """Exact variance or standard deviation (rounded once), NaN with any NaN/inf in the frame;
    and the absolute tolerance: 1e-9 of the frame's magnitude (squared for variances) where the
    exact answer is 0 (equal values that a double-double sum cancels to about 0), the smallest
    normal double where the answer is subnormal, else none."""
    n = len(vals)
    if n - sample <= 0:
        return None, 0.0
    if any(_is_nan(v) or v in (INF, -INF) for v in vals):
        return NAN, 0.0
    ints, den = _scaled(vals)
    s1 = sum(ints)
    s2 = sum(i * i for i in ints)
    var = Fraction(n * s2 - s1 * s1, n * (n - sample) * den * den)
    big = max(abs(float(v)) for v in vals)
    if root:  # the root of the exact value: it is finite even where the variance overflows
        with decimal.localcontext() as ctx:
            ctx.prec = 40
            root_value = (decimal.Decimal(var.numerator) / decimal.Decimal(var.denominator)).sqrt()
        value = float(root_value)
        # below the smallest normal double only absolute precision exists (stddev of [5e-324, 0,
        # 0] is 2.9e-324, which no double arithmetic over squares can see)
        return value, (REL * big if value else 0.0) + (TINY if value < TINY else 0.0)
    try:
        value = float(var)
    except OverflowError:
        return INF, 0.0
    return value, (REL * big * big if value else 0.0) + (TINY if value < TINY else 0.0)


def _sort_key(v):
    if _is_nan(v):
        return (1, 0.0)
    return (0, v)


def _disc_index(n: int, p: float) -> int:
    """Index of percentile_disc: the first value whose cumulative distribution i/n reaches p.

    Computed as the SQL definition says (cume_dist compared in doubles), not as ceil(p * n) - 1:
    for p = 0.55, n = 100, 0.55 * 100 is 55.000000000000007 and ceil gives 56, but row 55 already
    has cume_dist 55/100 == 0.55. DuckDB 2.0 answers 55 as well."""
    for i in range(1, n + 1):
        if i / n >= p:
            return i - 1
    return n - 1


def exact_percentile_disc(vals, p):
    if not vals:
        return None
    s = sorted(vals, key=_sort_key)
    return s[_disc_index(len(s), p)]


def exact_percentile_cont(vals, p):
    """SQL's continuous percentile, exactly: the values at ranks floor and ceil of p * (n - 1)
    (ranks chosen in doubles, as every engine does), interpolated in exact rational arithmetic with
    p read as the decimal it was written as, rounded once. With infinities or NaN, IEEE's
    lo * (1 - d) + hi * d (Spark's and DuckDB's formula)."""
    if not vals:
        return None
    s = [float(v) for v in sorted(vals, key=_sort_key)]
    pos = p * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    a, b = s[lo], s[hi]
    if pos == lo or a == b or (_is_nan(a) and _is_nan(b)):
        return a
    if not (math.isfinite(a) and math.isfinite(b)):
        d = pos - lo
        return a * (1 - d) + b * d
    d = Fraction(repr(p)) * (len(s) - 1) - lo
    return float(Fraction(a) + (Fraction(b) - Fraction(a)) * d)


def _norm(v):
    """Grouping key of a value: NaN equals NaN, -0.0 equals 0.0 (SQL equality, Spark's rule)."""
    if isinstance(v, float):
        if math.isnan(v):
            return ("nan",)
        return v + 0.0
    return v


def mode_candidates(vals):
    """(top count, smallest value with the top count) of the non-NULL frame values."""
    if not vals:
        return 0, None, Counter()
    counts = Counter(_norm(v) for v in vals)
    top = max(counts.values())
    best = [v for v in vals if counts[_norm(v)] == top]
    return top, min(best, key=_sort_key), counts


# ---------------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------------


def close(a, b, rel: float = REL, abs_tol: float = 0.0) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= rel * max(abs(a), abs(b)) + abs_tol
    return a == b


def _result_sort_key(v):
    if v is None:
        return (0, 0, "")
    if isinstance(v, float) and math.isnan(v):
        return (3, 0, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (1, float(v), "")
    return (2, 0, v)


@dataclass
class Expected:
    value: object
    abs_tol: float = 0.0


@dataclass
class Batch:
    table: pa.Table
    calls: list[CallSpec]
    rows: dict = field(default_factory=dict)  # rid -> input row (dict)


def _expected_from_list(spec: CallSpec, native, lst):
    """The expected result of one row from DuckDB's frame contents ``lst`` (and its native
    answer), or a string describing a contradiction in the oracle itself."""
    vals = [v for v in (lst or []) if v is not None]
    f = spec.func
    if f == "sum":
        return Expected(exact_sum(vals))
    if f == "avg":
        return Expected(exact_avg(vals))
    if f in ("var_samp", "var_pop", "stddev_samp", "stddev_pop"):
        v, tol = exact_var(vals, f.endswith("samp"), f.startswith("stddev"))
        return Expected(v, tol)
    if f == "percentile_disc":
        e = exact_percentile_disc(vals, spec.params[0])
        if native is not UNAVAILABLE and not close(e, native):
            return f"quantile_disc gave {native!r}, the frame {sorted(vals, key=_sort_key)!r} gives {e!r}"
        return Expected(e)
    if f in ("median", "percentile_cont"):
        # DuckDB interpolates as fma(lo, 1 - d, hi * d), we as lo * (1 - d) + hi * d: both round,
        # which only shows where the exact answer is 0 (lo = -3, hi = 2, p = 0.3: -2.2e-16 and
        # -1.1e-16) -- an absolute error of 1e-9 of the frame's magnitude is allowed there -- or
        # subnormal (DuckDB's median of [5e-324, 5e-324] is 0.0)
        e = exact_percentile_cont(vals, 0.5 if f == "median" else spec.params[0])
        finite = [abs(float(v)) for v in vals if not _is_nan(v) and abs(float(v)) != INF]
        tol = (REL * max(finite, default=0.0) if e == 0 else 0.0) + (
            TINY if e is not None and abs(e) < TINY else 0.0
        )
        if native is not UNAVAILABLE and not close(native, e, abs_tol=tol):
            return f"quantile_cont gave {native!r}, the frame {sorted(vals, key=_sort_key)!r} gives {e!r}"
        return Expected(e, tol)
    if f == "mode":
        if not vals:
            return Expected(None)
        top, smallest, counts = mode_candidates(vals)
        if native is None or counts.get(_norm(native), 0) != top:
            return f"DuckDB mode {native!r} does not have the top count {top} in the frame {vals!r}"
        return Expected(smallest)
    raise AssertionError(f)


def compare(batch: Batch, ours: dict, oracle: dict, oracle_name: str, max_msgs: int = 20) -> list[str]:
    """Messages for every call where our results differ from the oracle's.

    ``ours`` and ``oracle`` map call name (and ``name__l`` for frame lists) to {rid: value}."""
    msgs = []
    for spec in batch.calls:
        mine = ours[spec.name]
        expected = {}
        problems = []
        for rid, native in oracle[spec.name].items():
            if spec.needs_list and f"{spec.name}__l" in oracle:
                e = _expected_from_list(spec, native, oracle[f"{spec.name}__l"][rid])
                if isinstance(e, str):
                    problems.append(f"rid={rid}: oracle contradiction: {e}")
                    e = Expected(native)
                expected[rid] = e
            else:
                expected[rid] = Expected(native)
        if spec.strategy == "peerset":
            problems += _compare_peersets(batch, spec, mine, expected)
        else:
            for rid in sorted(expected):
                e = expected[rid]
                if not close(mine[rid], e.value, abs_tol=e.abs_tol):
                    detail = ""
                    if f"{spec.name}__l" in oracle:
                        detail = f" frame={oracle[spec.name + '__l'][rid]!r}"
                    problems.append(
                        f"rid={rid} row={_row_subset(batch, spec, rid)} ours={mine[rid]!r} "
                        f"{oracle_name}={e.value!r}{detail}"
                    )
        if problems:
            msgs.append(
                f"[{spec.strategy}] ours: {spec.ours()}\n    {oracle_name}: "
                f"{spec.duck() if oracle_name == 'duckdb' else spec.sqlite()}\n      "
                + "\n      ".join(problems[:6])
                + (f"\n      ... {len(problems)} rows" if len(problems) > 6 else "")
            )
            if len(msgs) >= max_msgs:
                break
    return msgs


def _row_subset(batch: Batch, spec: CallSpec, rid) -> dict:
    """The input columns the call reads, for failure messages."""
    row = batch.rows[rid]
    text = " ".join(x for x in (spec.arg, spec.filter, spec.default) if x)
    cols = [*spec.partition, *(c for c, _, _ in spec.order)]
    cols += [c for c in row if c in text.replace("(", " ").replace(")", " ").split()]
    return {c: row[c] for c in dict.fromkeys(cols)}


def _compare_peersets(batch: Batch, spec: CallSpec, mine: dict, expected: dict) -> list[str]:
    groups = defaultdict(list)
    for rid, row in batch.rows.items():
        key = (
            tuple(_norm(row[c]) for c in spec.partition)
            + ("|",)
            + tuple(_norm(row[c]) for c, _, _ in spec.order)
        )
        groups[key].append(rid)
    out = []
    for key, rids in groups.items():
        a = sorted((mine[r] for r in rids), key=_result_sort_key)
        es = sorted((expected[r] for r in rids), key=lambda e: _result_sort_key(e.value))
        ok = len(a) == len(es) and all(close(x, e.value, abs_tol=e.abs_tol) for x, e in zip(a, es))
        if not ok:
            out.append(f"peer group {key}: ours={a!r} expected={[e.value for e in es]!r}")
    return out


# ---------------------------------------------------------------------------------------------
# running a batch
# ---------------------------------------------------------------------------------------------


def make_batch(seed: int, n_calls: int, flavor: str = "duckdb") -> Batch:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 90)) if rng.random() < 0.9 else int(rng.integers(1, 6))
    table = make_table(rng, n, flavor)
    caps = DUCKDB_CAPS if flavor == "duckdb" else SQLITE_CAPS
    calls = [random_call(rng, f"c{i}", caps) for i in range(n_calls)]
    rows = {r["rid"]: r for r in table.to_pylist()}
    return Batch(table, calls, rows)


def run_ours(batch: Batch) -> dict:
    out = overwindow.evaluate(batch.table, *[c.ours() for c in batch.calls])
    rids = out.column("rid").to_pylist()
    return {c.name: dict(zip(rids, out.column(c.name).to_pylist())) for c in batch.calls}


class _Unavailable:
    def __repr__(self):
        return "UNAVAILABLE"


UNAVAILABLE = _Unavailable()  # DuckDB could not compute the native result (see run_duckdb)
QUANTILES = ("median", "percentile_cont", "percentile_disc")


def _select(con, items: list[str], out: dict) -> None:
    cur = con.execute("SELECT rid, " + ",\n  ".join(items) + "\nFROM t")
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    for name in names[1:]:
        out[name] = {}
    for row in rows:
        for name, v in zip(names[1:], row[1:]):
            out[name][row[0]] = v


def run_duckdb(batch: Batch) -> dict:
    con = duckdb.connect()
    try:
        con.execute("SET threads TO 1")
        con.register("t", batch.table)
        # a call and its frame list stay in one SELECT: with ties, only windows of one query
        # are sure to see the peers in the same order
        groups = [(c, [c.duck(), c.duck_list()] if c.needs_list else [c.duck()]) for c in batch.calls]
        chunks, cur = [], []
        for g in groups:
            if cur and sum(len(items) for _, items in cur) + len(g[1]) > DUCKDB_CHUNK:
                chunks.append(cur)
                cur = []
            cur.append(g)
        chunks.append(cur)
        out = {}
        # DuckDB's planning time grows faster than linearly with the number of windows in one
        # SELECT (80 windows: ~3x slower than 8 queries of 10), so send them in chunks
        for chunk in chunks:
            try:
                _select(con, [i for _, items in chunk for i in items], out)
            except duckdb.Error:
                for call, items in chunk:
                    try:
                        _select(con, items, out)
                    except duckdb.Error as e:
                        # DuckDB 2.0 bug: quantile_cont/quantile_disc over a sliding ROWS frame
                        # that holds a NaN can fail with a bare "std::exception"
                        # (test_duckdb_quantile_crash_on_nan); the frame list still works and
                        # the Python oracle over it takes over
                        if call.func not in QUANTILES or "std::exception" not in str(e):
                            raise
                        _select(con, items[1:], out)
                        out[call.name] = {rid: UNAVAILABLE for rid in out[call.name + "__l"]}
    finally:
        con.close()
    return out


def run_sqlite(batch: Batch) -> dict:
    con = sqlite3.connect(":memory:")
    try:
        cols = batch.table.column_names
        types = {
            "q": "TEXT",
            "ks": "TEXT",
            "xs": "TEXT",
            "kf": "REAL",
            "uf": "REAL",
            "xf": "REAL",
            "xg": "REAL",
        }
        decl = ", ".join(f"{c} {types.get(c, 'INTEGER')}" for c in cols)
        con.execute(f"CREATE TABLE t ({decl})")
        con.executemany(
            f"INSERT INTO t VALUES ({', '.join('?' * len(cols))})",
            [tuple(r[c] for c in cols) for r in batch.table.to_pylist()],
        )
        sql = "SELECT rid, " + ",\n  ".join(c.sqlite() for c in batch.calls) + "\nFROM t"
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
    finally:
        con.close()
    out = {name: {} for name in names[1:]}
    for row in rows:
        for name, v in zip(names[1:], row[1:]):
            out[name][row[0]] = v
    return out
