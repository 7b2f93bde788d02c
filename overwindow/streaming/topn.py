"""Top-N pruning for emit on update: over insert-only input, the rows a Top-N ``qualify`` can never
let back into the result leave the state, so it holds about N rows per partition (as Flink's
append-only Top-N keeps N rows per key).

Pruning is sound when all of these hold, checked once when the machine is built (``TopN.of``):

1. the input is insert-only: no ``opColumn`` and no ``rowKey`` (a repeated row key is an update,
   which may move its row back up). Without a row key a row's identity hashes the whole row: a row
   repeated in a later batch is the held row again (same place, same values), or, when that row was
   dropped, lands after every kept row and is dropped again;
2. the condition implies ``r <= N`` (``r < N``, ``r = N``, ``r BETWEEN ... AND N``, alone or as one
   conjunct of ANDs) for the alias ``r`` of a row_number, rank or dense_rank call (``Reach.TO_END``).
   The machine numbers rows in the state's order, so ``r`` never decreases along it, and an insert
   only raises the ``r`` of the rows after it: the rows past N are a suffix of each partition and
   stay past N, never in the result again;
3. every call's ``reach`` ends at the current row or before it, so a kept row's values depend on no
   later row but its peers (RANGE and GROUPS reaches): with such a call the cut moves on to the end
   of a peer group (rank and dense_rank cut there anyway).

Each step then drops, per partition, the rows from the first one whose held ``r`` is past N (one
vectorised O(rows) pass beside the step's others, no recomputation). A later
insert sorting after a dropped row finds at least N rows (or N peer groups, for dense_rank) kept or
evicted before it, so its own ``r`` is past N and it is dropped in turn; every kept row has the
values it would have with every row held, so the changelog is unchanged. Rows evicted from the
front (``eviction``) stay counted for numbering; dropped rows come from the back and need no count.
The chunked layout never prunes: it refuses the calls a bound needs (their reach is unbounded).

>>> from overwindow.spec import OverWindow
>>> spec = OverWindow("row_number() OVER (ORDER BY t) AS r", emit="on_update", qualify="r <= 2")
>>> top = TopN.of(spec, pa.table({"t": [0], "r": [1]}))
>>> top
TopN(bounds=(('r', 2),), peers=False)
>>> top.dropped(pa.table({"r": [1, 2, 3, 4]}), np.array([0, 1, 1, 2]), None).tolist()
[False, False, True, True]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.call import quote
from overwindow.logical.expr import Expr, literal_value
from overwindow.logical.frame import BoundKind, FrameUnit
from overwindow.logical.functions import Reach
from overwindow.physical.columns import resolve_column
from overwindow.spec import OverWindow
from overwindow.streaming.arrays import in_ranges
from overwindow.streaming.partitions import starts as partition_starts

# reach ends that read no row after the current one (but its peers, for RANGE and GROUPS)
_BACKWARD = (BoundKind.CURRENT_ROW, BoundKind.PRECEDING)


@dataclass(frozen=True)
class TopN:
    """Where a spec's Top-N condition lets a stream drop held rows: per bound, a ranking call's
    result column and the largest value the condition lets through; ``peers``: some call's reach
    takes the current row's peers, so a cut falls only between peer groups."""

    bounds: tuple[tuple[str, int], ...]
    peers: bool

    @staticmethod
    def of(spec: OverWindow, results: pa.Table) -> TopN | None:
        """The pruning an emit-on-update ``spec`` allows (the module's three conditions), None when
        it allows none; ``results``: the machine's result rows (input columns and aliases), to
        resolve the condition's names as it is evaluated. O(calls + condition size)."""
        if spec.qualify is None or spec.row_key or spec.op_column is not None:
            return None
        if any(c.reach.end.kind not in _BACKWARD for c in spec.calls):
            return None
        ranks = {
            resolve_column(results, e.alias)
            for e in spec.expressions
            if e.expr is None and e.calls[0].info.reach is Reach.TO_END
        }
        bounds = tuple((name, n) for name, n in rank_bounds(spec.qualify, results) if name in ranks)
        if not bounds:
            return None
        return TopN(bounds, any(c.reach.unit is not FrameUnit.ROWS for c in spec.calls))

    def dropped(self, results: pa.Table, codes: np.ndarray, parts: np.ndarray | None) -> np.ndarray:
        """Whether each held row leaves the state: the held rows are sorted, their ``results`` as
        held, ``codes`` their (partition, ORDER BY) codes, ``parts`` each one's partition (None: one
        partition). Per partition, the rows from the first one past a bound (a NULL result, of a row
        set aside, is not), on to the end of its peer group when ``peers`` and it is not the
        group's first row. O(rows), plus O(log rows) per partition."""
        n = results.num_rows
        if n == 0:
            return np.zeros(0, dtype=bool)
        past = np.zeros(n, dtype=bool)
        for name, bound in self.bounds:
            over = pc.fill_null(pc.greater(results.column(name), bound), False)
            past |= over.to_numpy(zero_copy_only=False)
        starts = partition_starts(parts) if parts is not None else np.zeros(1, dtype=np.int64)
        ends = np.append(starts[1:], n)
        cut = np.minimum.reduceat(np.where(past, np.arange(n), n), starts)
        if self.peers:  # a cut inside a peer group moves to its end: rows before it read their peers
            inside = np.flatnonzero((cut > starts) & (cut < ends))
            inside = inside[codes[cut[inside] - 1] == codes[cut[inside]]]
            cut[inside] = np.searchsorted(codes, codes[cut[inside]], "right")
        out = np.zeros(n, dtype=bool)
        out[in_ranges(np.minimum(cut, ends), ends)] = True
        return out


def rank_bounds(condition: Expr, columns: pa.Table) -> list[tuple[str, int]]:
    """(column, N) for each conjunct of ``condition``'s ANDs that bounds a column of ``columns``
    from above by a constant number: ``c <= N``, ``c < N``, ``c = N``, ``c BETWEEN ... AND N``, or
    the same mirrored (``N >= c``); N as the largest integer the conjunct lets through. Other
    conjuncts bound nothing. O(condition size).

    >>> rank_bounds(Expr.of("rn < 3 AND (s > 0 AND 2.5 >= `RN`) AND rn BETWEEN 1 AND 4"),
    ...             pa.table({"rn": [1], "s": [1]}))
    [('rn', 2), ('rn', 2), ('rn', 4)]
    >>> rank_bounds(Expr.of("rn <= 3 OR s > 0"), pa.table({"rn": [1], "s": [1]}))
    []
    """
    found = []
    for node in _conjuncts(condition.node):
        if isinstance(node, exp.Between) and not node.args.get("symmetric"):
            sides = [(node.this, node.args["high"], False)]
        elif isinstance(node, (exp.LTE, exp.LT)):
            sides = [(node.this, node.expression, isinstance(node, exp.LT))]
        elif isinstance(node, (exp.GTE, exp.GT)):
            sides = [(node.expression, node.this, isinstance(node, exp.GT))]
        elif isinstance(node, exp.EQ):
            sides = [(node.this, node.expression, False), (node.expression, node.this, False)]
        else:
            continue
        for column, limit, strict in sides:
            n = _limit(limit, strict)
            column = column.unnest()
            if n is not None and isinstance(column, exp.Column):
                found.append((resolve_column(columns, column.name), n))
    return found


def rank_condition(condition: Expr, expressions) -> Expr | None:
    """What a machine can check of ``condition`` on its own, over its row_number, rank and
    dense_rank columns (``expressions``: its window expressions): the AND of ``r <= N`` for each
    bound ``rank_bounds`` finds on one of them (the tightest per column); None when there is none.
    Every row passing ``condition`` passes it, so where Spark applies ``condition`` after the
    machine, a machine checking this one emits no change of a row that is out of the result on
    both sides of it, deletes a row leaving it, and prunes as ``TopN`` prunes. O(condition size).

    >>> from overwindow.spec import OverWindow
    >>> spec = OverWindow("row_number() OVER (ORDER BY t) AS rn", "sum(x) OVER (ORDER BY t) AS s")
    >>> rank_condition(Expr.of("RN < 4 AND s > 0 AND rn <= 9"), spec.expressions).sql
    'rn <= 3'
    >>> rank_condition(Expr.of("s > 0 OR rn = 1"), spec.expressions) is None
    True
    """
    ranks = {e.alias for e in expressions if e.expr is None and e.calls[0].info.counts is not None}
    names = {n.lower(): n for n in ranks}
    for n in condition.columns():  # the others, once each, so that every name resolves
        names.setdefault(n.lower(), n)
    columns = pa.table({n: pa.nulls(0) for n in names.values()})
    tightest: dict[str, int] = {}
    for name, n in rank_bounds(condition, columns):
        if name in ranks:
            tightest[name] = min(n, tightest.get(name, n))
    if not tightest:
        return None
    return Expr.of(" AND ".join(f"{quote(name)} <= {n}" for name, n in tightest.items()))


def upper_bounds(condition: Expr) -> list[tuple[str, int]] | None:
    """(column, N) for each conjunct of ``condition`` when every one is ``column <= N`` (N a
    constant number, taken as the largest integer at most it), as ``rank_condition`` writes them;
    None for any other condition. O(condition size).

    >>> upper_bounds(Expr.of("rn <= 3 AND `r 2` <= -1")), upper_bounds(Expr.of("rn < 3"))
    ([('rn', 3), ('r 2', -1)], None)
    """
    found = []
    for node in _conjuncts(condition.node):
        if not isinstance(node, exp.LTE) or not isinstance(node.this.unnest(), exp.Column):
            return None
        column, n = node.this.unnest(), _limit(node.expression, False)
        if n is None or column.table:
            return None
        found.append((column.name, n))
    return found


def _conjuncts(node: exp.Expression):
    """The operands of ``node``'s top-level ANDs (through parentheses), left to right."""
    node = node.unnest()
    if isinstance(node, exp.And):
        yield from _conjuncts(node.this)
        yield from _conjuncts(node.expression)
    else:
        yield node


def _limit(node: exp.Expression, strict: bool) -> int | None:
    """The largest integer below (``strict``) or at most the constant number ``node``; None when it
    is not one (a column, a string, NULL, NaN, an infinity)."""
    try:
        value = literal_value(node, node.sql())
    except WindowSpecError:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)) or not math.isfinite(value):
        return None
    return math.ceil(value) - 1 if strict else math.floor(value)
