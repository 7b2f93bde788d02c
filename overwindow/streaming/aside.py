"""Rows a stream sets aside instead of stopping: a row whose own values make one of the spec's row
expressions fail (Spark's ANSI errors: DIVIDE_BY_ZERO, ARITHMETIC_OVERFLOW, a CAST that cannot be
made, ...) is counted, kept aside with the reason and left out of the view; the rest of its
micro-batch goes on.

Spark's batch query fails on such a row, and so does ``overwindow.evaluate``. On a stream the same
failure would stop the query for good: every replay of the micro-batch meets the row again. The
machines therefore check a micro-batch's rows on entry, before any of them joins the state, and a
window-close machine checks the expressions over window results (``x / lag(x) OVER w``) as it emits.

>>> from overwindow.spec import OverWindow
>>> checks = RowChecks(OverWindow("sum(x / y) OVER (ORDER BY t) AS s").calls)
>>> good, aside = checks.split(pa.table({"t": [1, 2, 3], "x": [1, 2, 3], "y": [1, 0, 2]}))
>>> good.column("t").to_pylist(), aside.rows.column("t").to_pylist(), aside.reasons[0][:25]
([1, 3], [2], 'Division by zero in x / y')
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from overwindow.errors import WindowRuntimeError, WindowSpecError
from overwindow.evaluator import project, values_of
from overwindow.logical.bind import ERROR, failure
from overwindow.logical.call import WindowCall, WindowExpression, quote
from overwindow.logical.expr import Expr
from overwindow.physical.values import sql_type
from overwindow.streaming.topn import upper_bounds


@dataclass
class Aside:
    """Rows set aside by a step (in the machine's input columns) and why, one reason per row."""

    rows: pa.Table
    reasons: list[str]

    def __len__(self) -> int:
        return self.rows.num_rows

    @staticmethod
    def join(*parts: Aside | None) -> Aside | None:
        """The parts that exist, one after another (None when none does)."""
        found = [p for p in parts if p is not None and len(p)]
        if not found:
            return None
        if len(found) == 1:
            return found[0]
        return Aside(pa.concat_tables([p.rows for p in found]), [r for p in found for r in p.reasons])


def dead_letter_records(batch: int, rows: list[dict], reasons: list[str], origins: list[str]) -> dict:
    """Rows set aside in the form a dead letter collects them (``overwindow.pipeline.dead_letter.
    DeadLetter``): ``{(batch, origin, position): (origin, reason, the row as JSON)}``. O(rows).

    >>> dead_letter_records(3, [{"x": 0}], ["x / 0"], ["after the windows"])
    {(3, 'after the windows', 0): ('after the windows', 'x / 0', '{"x": 0}')}
    """
    return {
        (batch, origin, n): (origin, why, json.dumps(row, default=str, ensure_ascii=False))
        for n, (row, why, origin) in enumerate(zip(rows, reasons, origins))
    }


def failing_rows(table: pa.Table, compute: Callable[[pa.Table], object]) -> tuple[np.ndarray, list[str]]:
    """(the positions of the rows of ``table`` on which ``compute`` (a function of a table's rows,
    each row on its own) raises WindowRuntimeError, and each one's message). Tries the whole table
    first; on a failure, halves it until single rows are found: O(k log n) calls of ``compute`` for
    k failing rows. A failure that no single row explains (not a row's own values) is raised.

    >>> t = pa.table({"y": [1, 0, 2, 0]})
    >>> failing_rows(t, lambda part: values_of(Expr.of("1 / y"), part))[0].tolist()
    [1, 3]
    """
    try:
        compute(table)
        return np.zeros(0, dtype=np.int64), []
    except WindowRuntimeError as whole:
        return _locate(table, compute, whole)


def on_fine_rows(table: pa.Table, compute) -> tuple[object, np.ndarray | None, np.ndarray, list[str]]:
    """(``compute`` of the rows of ``table`` it does not fail on, a mask of those rows (None: all of
    them), the positions of the others and their messages): ``failing_rows``, with the result of
    the rows that remain. O(one call of ``compute``) when none fails."""
    try:
        return compute(table), None, np.zeros(0, dtype=np.int64), []
    except WindowRuntimeError as whole:
        at, reasons = _locate(table, compute, whole)
    fine = np.ones(table.num_rows, dtype=bool)
    fine[at] = False
    return compute(table.filter(pa.array(fine))), fine, at, reasons


def placed(columns: list, fine: np.ndarray) -> list:
    """``columns``, computed over the ``fine`` rows only (``on_fine_rows``), placed among all rows:
    NULL at the others. O(rows x columns).

    >>> placed([pa.array([10, 30])], np.array([True, False, True]))[0].to_pylist()
    [10, None, 30]
    """
    place = pa.array(np.cumsum(fine) - 1, mask=~fine)  # each fine row's place among the computed
    return [c.take(place) for c in columns]


def _locate(table: pa.Table, compute, whole: WindowRuntimeError) -> tuple[np.ndarray, list[str]]:
    """The failing rows of ``table``, which failed as a whole with ``whole`` (raised again when no
    single row fails)."""
    found: list[tuple[int, str]] = []
    _halve(table, 0, compute, whole, found)
    if not found:
        raise whole
    return np.array([i for i, _ in found], dtype=np.int64), [why for _, why in found]


def _halve(table: pa.Table, offset: int, compute, error: WindowRuntimeError, found: list) -> None:
    """Adds (position, message) of the failing rows of ``table``, which failed as a whole with
    ``error``."""
    if table.num_rows == 1:
        found.append((offset, str(error)))
        return
    half = table.num_rows // 2
    for start, part in ((0, table.slice(0, half)), (half, table.slice(half))):
        try:
            compute(part)
        except WindowRuntimeError as e:
            _halve(part, offset + start, compute, e, found)


def _split(table: pa.Table, at: np.ndarray, reasons: list[str]) -> tuple[pa.Table, Aside | None]:
    """(the rows of ``table`` but those at ``at``, those set aside with their ``reasons``)."""
    if not len(at):
        return table, None
    keep = np.ones(table.num_rows, dtype=bool)
    keep[at] = False
    return table.filter(pa.array(keep)), Aside(table.take(pa.array(at)), reasons)


class RowChecks:
    """The row expressions of window calls that can fail on a row's values: arguments, FILTER
    conditions, lag/lead defaults, PARTITION BY and ORDER BY keys, except bare columns and
    constants (which cannot); and, where the input has the column ``ERROR``, the expressions Spark
    computed ahead of the machine (``overwindow.spark.bind``), which name themselves there on the
    rows they failed on. Built once per machine.

    >>> rows = pa.table({"x": [1, 2], ERROR: [None, "x / y"]})
    >>> checks = RowChecks((), rows.column_names)
    >>> checks.split(rows)[1].reasons
    ['Spark failed to compute x / y on this row']
    """

    def __init__(self, calls: tuple[WindowCall, ...], names=()):
        found: dict[Expr, None] = {}
        for c in calls:
            exprs = [*c.args, *c.partition_by, *(k.expr for k in c.order_by)]
            exprs += [e for e in (c.default, c.filter) if e is not None]
            found.update((e, None) for e in exprs if not isinstance(e.node, (exp.Column, exp.Literal)))
        self.exprs = tuple(found)
        self.error = ERROR if ERROR in names else None

    @property
    def active(self) -> bool:
        """Whether any row can fail a check."""
        return bool(self.exprs) or self.error is not None

    def _compute(self, table: pa.Table) -> None:
        for e in self.exprs:
            values_of(e, table)

    def failing(self, rows: pa.Table) -> tuple[np.ndarray, list[str]]:
        """(the positions of the rows some expression fails on, the reasons): those Spark named in
        ``ERROR`` (its projection leaves the machine's calls nothing else to compute), else
        ``failing_rows``. O(rows x expressions) when none fails (nothing at all without expressions
        to check)."""
        if not self.active or rows.num_rows == 0:
            return np.zeros(0, dtype=np.int64), []
        if self.error is None:
            return failing_rows(rows, self._compute)
        failed = rows.column(self.error)
        at = np.flatnonzero(failed.is_valid().to_numpy(zero_copy_only=False))
        return at, [failure(text) for text in failed.take(pa.array(at)).to_pylist()]

    def split(self, rows: pa.Table) -> tuple[pa.Table, Aside | None]:
        """(the rows every expression can be computed on, the rows set aside)."""
        return _split(rows, *self.failing(rows))


def project_failing(
    rows: pa.Table, expressions: list[WindowExpression], results: dict[str, pa.Array]
) -> tuple[pa.Table, pa.Array | None]:
    """(``overwindow.evaluator.project`` of ``rows`` with their window ``results``, and None; or,
    when an expression over the results fails on some rows (``x / lag(x) OVER w`` where the
    previous x is 0), the projection with NULL in those rows' expression columns, and per row the
    reason (NULL where the row is fine)). O(rows x expressions); the search of ``failing_rows``
    only after a failure.

    >>> from overwindow.spec import OverWindow
    >>> spec = OverWindow("x / lag(x) OVER (ORDER BY t) AS r")
    >>> (call,) = spec.calls
    >>> out, why = project_failing(pa.table({"t": [1, 2, 3], "x": [0, 4, 2]}), list(spec.expressions),
    ...                            {call.alias: pa.array([None, 0, 4])})
    >>> out.column("r").to_pylist(), why.is_valid().to_pylist()
    ([None, None, 0.5], [False, True, False])
    >>> why[1].as_py()[:60]
    'Division by zero in x / lag(x, 1) OVER (ORDER BY t ASC NULLS'
    """
    names = rows.column_names
    whole = rows
    for alias, column in results.items():
        whole = whole.append_column(alias, column)

    def compute(part: pa.Table) -> pa.Table:
        return project(part.select(names), expressions, {a: part.column(a) for a in results})

    good, fine, at, reasons = on_fine_rows(whole, compute)
    if fine is None:
        return good, None
    out = rows
    for e, column in zip(expressions, placed([good.column(e.alias) for e in expressions], fine)):
        out = out.append_column(e.alias, column)
    why = np.full(rows.num_rows, None, dtype=object)
    why[at] = [in_sql(r, expressions) for r in reasons]
    return out, pa.array(why, pa.string())


def in_sql(reason: str, expressions) -> str:
    """A failure's message with each window call's internal alias written as the call itself."""
    for e in expressions:
        for call in e.calls:
            written = f"{call.function_sql()} OVER ({call.over_sql()})"
            reason = reason.replace(f"`{call.alias}`", written).replace(quote(call.alias), written)
    return reason


class Qualify:
    """A spec's ``qualify`` condition on result rows (input columns and the calls' aliases), checked
    against the machine's result columns when the machine is built.

    >>> rows = pa.table({"t": [1, 2, 3], "rn": pa.array([1, None, 3], pa.int32())})
    >>> q = Qualify(Expr.of("rn <= 2"), rows.slice(0, 0), ["t"])
    >>> q.holds(rows)[0].tolist()
    [True, False, False]
    """

    def __init__(self, condition: Expr, results: pa.Table, inputs: list[str]):
        self.condition, self.inputs = condition, list(inputs)
        # ``r <= N`` over integer columns (what a machine checks where Spark applies the condition:
        # ``topn.rank_condition``) is compared here, without the batch evaluator's interpreter
        bounds = upper_bounds(condition)
        names = set(results.column_names)
        if bounds is not None and all(
            n in names and pa.types.is_integer(results.schema.field(n).type) for n, _ in bounds
        ):
            self.bounds = bounds
            return
        self.bounds = None
        try:
            kind = values_of(condition, results).type
        except WindowSpecError as e:
            raise WindowSpecError(f"qualify={condition.sql!r}: {e}") from None
        if not (pa.types.is_boolean(kind) or pa.types.is_null(kind)):
            raise WindowSpecError(
                f"qualify={condition.sql!r} must be a condition (BOOLEAN), not {sql_type(kind)}"
            )

    def _compute(self, table: pa.Table) -> pa.Array:
        if self.bounds is None:
            return values_of(self.condition, table)
        out = pa.array(np.ones(table.num_rows, dtype=bool))
        for name, n in self.bounds:
            out = pc.and_kleene(out, pc.less_equal(table.column(name), n))
        return out

    def holds(self, table: pa.Table) -> tuple[np.ndarray, Aside | None]:
        """(per row of ``table`` (the result columns, and others), whether the condition is true:
        NULL is not, as in SQL's WHERE; the rows it fails on (a zero divisor ...), set aside in the
        input columns, which are not true either). O(rows)."""
        value, fine, at, reasons = on_fine_rows(table, self._compute)
        if fine is None:
            return _true(value), None
        out = np.zeros(table.num_rows, dtype=bool)
        out[fine] = _true(value)
        return out, Aside(table.take(pa.array(at)).select(self.inputs), reasons)


def _true(values) -> np.ndarray:
    return pc.fill_null(values, False).to_numpy(zero_copy_only=False).astype(bool)
