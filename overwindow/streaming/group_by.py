"""GROUP BY on a stream, as a changelog of its groups: the first of the two operators of a query whose
windows run over a GROUP BY (``SELECT day, sum(amount) AS total, avg(sum(amount)) OVER (ORDER BY
day ROWS 6 PRECEDING) AS avg7 FROM source GROUP BY day``). The second runs the windows on update
over this changelog, keyed by the group keys (``overwindow.spark.grouped``).

Per state (a bucket of group keys) the machine holds the live input rows, only the columns the
aggregates and keys read, and the groups' rows as last emitted. A step applies the batch's rows
(inserts; with an op column also deletes and updates, found by the row key), recomputes the groups
they touch with the batch kernels (each aggregate as ``agg(x) OVER (PARTITION BY <keys>)``, the same
values and types as a window over the whole group), and emits a change per group whose row changed:
``insert`` (a new group), ``update`` (its aggregates changed) or ``delete`` (its last row went).
A group is a distinct combination of key values, NULL and NaN each one value, as in SQL.

Cost per step: O(rows of the touched groups) for the kernels, plus O(held rows) to rewrite the
state; the state holds every live row (a GROUP BY over an unbounded insert-only stream grows with
it, as emit on update without a watermark does).

>>> import pyarrow as pa
>>> from overwindow.logical.parse import parse_window
>>> schema = pa.schema([("day", pa.int64()), ("amount", pa.int64())])
>>> m = GroupBy(schema, ("day",), [parse_window("sum(amount) OVER () AS total")])
>>> step = m.step(None, pa.table({"day": [1, 1, 2], "amount": [5, 6, 7]}))
>>> step.output.to_pylist()
[{'day': 1, 'total': 11, '__ow_op': 'insert'}, {'day': 2, 'total': 7, '__ow_op': 'insert'}]
>>> m.step(step.state, pa.table({"day": [2], "amount": [1]})).output.to_pylist()
[{'day': 2, 'total': 8, '__ow_op': 'update'}]

Closing mode (``closing``: the input column holding each row's closing time C, microseconds, which
Spark computes from a GROUP BY time key: ``to_date(ts)`` closes at the next day, see
``overwindow.spark.closing``): the machine holds the rows of the open groups only, and a step with
the watermark emits each group whose C is at or below it once, as an ``insert`` with its final
aggregates, and forgets its rows, so the state is bounded by the watermark. A row whose group closed
at an earlier step (C at or below the watermark it closed at) is late: counted
(``Step.late_rows``) and left out, as window close counts late rows; a row whose C is NULL (a NULL
event time: its group would never close) is set aside with its reason. ``Step.wakeup`` is the least
C held: the watermark at which the next group closes. Insert-only input (no row key or op column).
O(rows of the closing groups) for the kernels per step, plus O(held rows) for the state.

>>> schema = pa.schema([("day", pa.int64()), ("close", pa.int64()), ("amount", pa.int64())])
>>> m = GroupBy(schema, ("day",), [parse_window("sum(amount) OVER () AS total")], closing="close")
>>> step = m.step(None, pa.table({"day": [1, 2, 1], "close": [2, 3, 2], "amount": [5, 7, 6]}), 1)
>>> step.output.num_rows, step.wakeup
(0, 2)
>>> step = m.step(step.state, pa.table({"day": [2], "close": [3], "amount": [1]}), 2)
>>> step.output.to_pylist(), step.wakeup
([{'day': 1, 'total': 11, '__ow_op': 'insert'}], 3)
>>> m.step(step.state, pa.table({"day": [1], "close": [2], "amount": [9]}), 2).late_rows
1
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.evaluator import evaluate_calls
from overwindow.logical.call import WindowExpression
from overwindow.logical.expr import Expr
from overwindow.streaming import state as S
from overwindow.streaming.aside import Aside, RowChecks
from overwindow.streaming.changes import NOT_HELD, Op, in_source_order, last_changes, ops_of
from overwindow.streaming.contract import Counters, Step, keys_of
from overwindow.streaming.identity import IDENTITY, row_hash, row_ids

OP = "__ow_op"  # a group's change: insert, update or delete (the second operator's op column)
_GROUP = "__ow_group"  # a held row's group: the hash of its key values
_WAS = "__was"  # the suffix of an aggregate's previous value (``previous``)
# closing mode: a row whose closing time is NULL, set aside with this reason
NO_CLOSE = "its GROUP BY time key is NULL (a NULL event time), so its group would never close"


@dataclass
class GroupByMeta(S.StateMeta):
    """No counters of its own (the format's number only)."""

    OLDEST: ClassVar[int] = 1
    NEWEST: ClassVar[int] = 1


@dataclass
class GroupCloseMeta(S.StateMeta):
    """Closing mode: the watermark the groups closed so far are at or below, and the late rows."""

    OLDEST: ClassVar[int] = 1
    NEWEST: ClassVar[int] = 1

    released_upto: int | float | None = None  # the watermark of the last step that had one
    late_rows: int = 0  # rows dropped as late so far


class GroupBy:
    """The GROUP BY machine (see the module). ``schema``: the input columns (keys and aggregate
    arguments are columns of it: Spark computes expressions ahead, ``overwindow.logical.bind``);
    ``keys``: the GROUP BY columns; ``aggregates``: one aggregate call each, over the whole group
    (no PARTITION BY, ORDER BY or frame of its own), named by its alias; ``row_key`` and
    ``op_column``: as OverWindow's (deletes and updates find their row by the row key);
    ``source_order``: as OverWindow's ``sourceOrder`` (a row's changes in a batch apply in its order);
    ``closing``: the closing-time column of closing mode (see the module); ``previous``: on update,
    each change also carries the group's aggregates as last emitted (``was(alias)``: NULL on an
    insert; a delete's are its last ones), so that a HAVING condition, computed by Spark on both,
    tells what the change does to the filtered groups (``having_changes``)."""

    def __init__(
        self,
        schema: pa.Schema,
        keys: tuple[str, ...],
        aggregates: list[WindowExpression],
        row_key: tuple[str, ...] | None = None,
        op_column: str | None = None,
        closing: str | None = None,
        previous: bool = False,
        source_order: tuple[str, ...] = (),
    ):
        if closing is not None and (row_key or op_column is not None):
            raise WindowSpecError(
                "a GROUP BY on window close emits each group once, when the watermark closes it, so it "
                "takes no changes of rows already in a group: leave out rowKey and opColumn (a CDC "
                "source), or write emit='on_update'"
            )
        if closing is not None and previous:
            raise WindowSpecError(
                "a GROUP BY on window close emits each group once: it has no previous values"
            )
        if source_order and not row_key:
            raise WindowSpecError(
                f"sourceOrder={list(source_order)!r} orders each row's changes in a micro-batch: it "
                "needs rowKey (the rows the changes apply to)"
            )
        if op_column is not None and not row_key:
            raise WindowSpecError(f"opColumn={op_column!r} needs rowKey: deletes find their row by it")
        for e in aggregates:
            (call,) = e.calls
            if call.partition_by or call.order_by or e.expr is not None:
                raise WindowSpecError(f"{e}: a GROUP BY aggregate runs over its whole group")
        self.schema, self.keys, self.op, self.closing = schema, tuple(keys), op_column, closing
        self.row_key = tuple(row_key) if row_key else None
        self.source_order = tuple(source_order)
        part = tuple(Expr.of(f"`{k}`") for k in self.keys)
        self.aggregates = [
            replace(e, calls=tuple(replace(c, partition_by=part) for c in e.calls)) for e in aggregates
        ]
        read = dict.fromkeys(
            [*self.keys, *(self.row_key or ()), *(c for e in aggregates for c in _columns(e))]
            + ([closing] if closing else [])
        )
        self.held_schema = pa.schema([schema.field(n) for n in read])
        empty = self.held_schema.empty_table()
        results = evaluate_calls(empty, self.aggregates)
        values = [pa.field(e.alias, results[e.alias].type) for e in self.aggregates]
        self.previous = previous
        self.output_schema = pa.schema(
            [schema.field(k) for k in self.keys]
            + values
            + ([f.with_name(was(f.name)) for f in values] if previous else [])
            + [pa.field(OP, pa.string())]
        )
        self.checks = RowChecks((), schema.names)

    def step(self, state: bytes | None, rows: pa.Table | None, watermark=None) -> Step:
        """Apply one batch of a bucket's rows (None: none) to its ``state``; emit the changed groups
        (closing mode: the groups the ``watermark``, in the closing column's numbers, closes)."""
        if self.closing is not None:
            return self._close(state, rows, watermark)
        held, shown = self._load(state)
        aside, touched = None, np.zeros(0, dtype=np.uint64)
        if rows is not None and rows.num_rows:
            rows, aside = self.checks.split(rows)
            held, touched, not_applied = self._apply(held, rows)
            aside = Aside.join(aside, not_applied)
        output, shown = self._recompute(held, shown, np.unique(touched))
        counters = Counters(state_rows=held.num_rows, bad_rows=len(aside) if aside else 0)
        if not held.num_rows and not shown.num_rows:
            return Step(None, output, counters=counters, empty=True, aside=aside)
        state = S.encode({"rows": held, "shown": shown}, "group_by", GroupByMeta())
        return Step(state, output, counters=counters, aside=aside)

    def _load(self, state: bytes | None) -> tuple[pa.Table, pa.Table]:
        """(the live rows with their group (and identity), the groups as last emitted)."""
        if state is None:
            extra = [pa.field(_GROUP, pa.uint64())] + (
                [pa.field(IDENTITY, pa.int64())] if self.row_key else []
            )
            shown = pa.schema(
                [self.schema.field(k) for k in self.keys]
                + [self.output_schema.field(e.alias) for e in self.aggregates]
                + [pa.field(_GROUP, pa.uint64())]
            )
            return pa.schema([*self.held_schema, *extra]).empty_table(), shown.empty_table()
        tables, _ = S.decode(state, "group_by", GroupByMeta)
        return tables["rows"], tables["shown"]

    def _apply(self, held: pa.Table, rows: pa.Table) -> tuple[pa.Table, np.ndarray, Aside | None]:
        """(the live rows after the batch, the groups it touched, the rows set aside: an unknown op,
        or a delete of a row no group of the bucket holds, as ``NOT_HELD`` says). A row's last change
        wins: the last in source order with ``source_order``, else the last to come."""
        rows = in_source_order(rows, self.source_order)
        ops, reasons = ops_of(rows, self.op)
        data = rows.select(self.held_schema.names)
        if not data.schema.equals(self.held_schema):
            data = data.cast(self.held_schema)
        data = data.append_column(_GROUP, pa.array(row_hash(data, self.keys)))
        valid = ops != Op.BAD
        if self.row_key is None:  # no op column either: every row an insert
            return pa.concat_tables([held, data]), data.column(_GROUP).to_numpy(), None
        ids = row_ids(data, self.row_key)
        last = last_changes(ids, valid)
        held_ids = held.column(IDENTITY).to_numpy()
        changed, count = np.unique(ids[valid], return_counts=True)
        lone = last & (ops == Op.DELETE) & np.isin(ids, changed[count == 1])
        reasons.update((int(i), NOT_HELD) for i in np.flatnonzero(lone & ~np.isin(ids, held_ids)))
        gone = np.isin(held_ids, ids[last])  # an insert or update of a held row replaces it
        inserts = last & (ops != Op.DELETE)
        entering = data.filter(pa.array(inserts)).append_column(IDENTITY, pa.array(ids[inserts]))
        touched = np.concatenate([held.column(_GROUP).to_numpy()[gone], entering.column(_GROUP).to_numpy()])
        bad = sorted(reasons)
        aside = Aside(rows.take(pa.array(bad, pa.int64())), [reasons[i] for i in bad]) if bad else None
        return pa.concat_tables([held.filter(pa.array(~gone)), entering]), touched, aside

    def _close(self, state: bytes | None, rows: pa.Table | None, watermark) -> Step:
        """Closing mode's step (see the module)."""
        if state is None:
            held = pa.schema([*self.held_schema, pa.field(_GROUP, pa.uint64())]).empty_table()
            meta = GroupCloseMeta()
        else:
            tables, meta = S.decode(state, "group_close", GroupCloseMeta)
            held = tables["rows"]
        aside, late = None, 0
        late_keys: tuple = ()
        if rows is not None and rows.num_rows:
            rows, aside = self.checks.split(rows)
            data = rows.select(self.held_schema.names)
            if not data.schema.equals(self.held_schema):
                data = data.cast(self.held_schema)
            closes = data.column(self.closing)
            unknown = closes.is_null().to_numpy(zero_copy_only=False)
            if unknown.any():
                where = pa.array(np.flatnonzero(unknown))
                aside = Aside.join(aside, Aside(rows.take(where), [NO_CLOSE] * len(where)))
            closed = np.zeros(data.num_rows, dtype=bool)
            if meta.released_upto is not None:  # its group closed at an earlier step
                closed = ~unknown & (_numbers(closes) <= meta.released_upto)
            late = int(closed.sum())
            late_keys = keys_of(data, self.keys, closed)
            data = data.filter(pa.array(~unknown & ~closed))
            data = data.append_column(_GROUP, pa.array(row_hash(data, self.keys), pa.uint64()))
            held = pa.concat_tables([held, data])
        meta.late_rows += late
        output = self.output_schema.empty_table()
        if watermark is not None:
            meta.released_upto = max(watermark, meta.released_upto or watermark)
            ending = _numbers(held.column(self.closing)) <= watermark
            if ending.any():
                output = self._groups(held.filter(pa.array(ending))).drop_columns([_GROUP])
                output = output.append_column(OP, pa.array(["insert"] * output.num_rows, pa.string()))
                held = held.filter(pa.array(~ending))
        counters = Counters(held.num_rows, meta.late_rows, bad_rows=len(aside) if aside else 0)
        done = dict(late_rows=late, counters=counters, aside=aside, late_keys=late_keys)
        if not held.num_rows and meta.released_upto is None and not meta.late_rows:
            return Step(None, output, empty=True, **done)
        # kept with no rows too: the watermark it closed at tells late rows (a state per bucket)
        wakeup = int(_numbers(held.column(self.closing)).min()) if held.num_rows else None
        state = S.encode({"rows": held}, "group_close", meta)
        return Step(state, output, wakeup=wakeup, **done)

    def _groups(self, rows: pa.Table) -> pa.Table:
        """Each group of ``rows`` (held rows with their group) once: its keys, its aggregates over
        its rows, its group hash. O(rows) for the kernels."""
        results = evaluate_calls(rows.drop_columns([_GROUP]), self.aggregates)
        groups = rows.column(_GROUP).to_numpy()
        _, first = np.unique(groups, return_index=True)
        now = rows.select(list(self.keys)).take(pa.array(first))
        for e in self.aggregates:
            now = now.append_column(e.alias, results[e.alias].take(pa.array(first)))
        return now.append_column(_GROUP, pa.array(groups[first]))

    def _recompute(self, held: pa.Table, shown: pa.Table, touched: np.ndarray) -> tuple[pa.Table, pa.Table]:
        """(the changes of the ``touched`` groups, the groups as now shown)."""
        if not len(touched):
            return self.output_schema.empty_table(), shown
        now = self._groups(held.filter(pa.array(np.isin(held.column(_GROUP).to_numpy(), touched))))
        groups = now.column(_GROUP).to_numpy()
        was = np.isin(shown.column(_GROUP).to_numpy(), touched)
        before = shown.filter(pa.array(was))
        values = [e.alias for e in self.aggregates]
        old = dict(zip(before.column(_GROUP).to_numpy().tolist(), row_hash(before, values).tolist()))
        new_hash = row_hash(now, values).tolist()
        ops = [
            "insert" if g not in old else "update" if old[g] != h else None
            for g, h in zip(now.column(_GROUP).to_numpy().tolist(), new_hash)
        ]
        changed = now.filter(pa.array([o is not None for o in ops], pa.bool_()))
        ended = before.filter(pa.array(~np.isin(before.column(_GROUP).to_numpy(), groups)))
        if self.previous:  # each group's values as last emitted beside its new ones (a delete: its last)
            changed, ended = self._with_previous(changed, before), self._with_previous(ended, before)
        changed = changed.drop_columns([_GROUP]).append_column(
            OP, pa.array([o for o in ops if o], pa.string())
        )
        deletes = ended.drop_columns([_GROUP]).append_column(
            OP, pa.array(["delete"] * ended.num_rows, pa.string())
        )
        output = pa.concat_tables([changed, deletes]).cast(self.output_schema)
        return output, pa.concat_tables([shown.filter(pc.invert(pa.array(was))), now.cast(shown.schema)])

    def _with_previous(self, groups: pa.Table, before: pa.Table) -> pa.Table:
        """``groups`` (with their hash) with each aggregate's value as ``before`` (the groups as last
        emitted) shows the group, under ``was(alias)``; NULL for a group it lacks (a new one). O(rows)."""
        at = {g: i for i, g in enumerate(before.column(_GROUP).to_numpy().tolist())}
        place = pa.array([at.get(g) for g in groups.column(_GROUP).to_numpy().tolist()], pa.int64())
        for e in self.aggregates:
            groups = groups.append_column(was(e.alias), before.column(e.alias).take(place))
        return groups


ASIDE = "aside"  # a group HAVING failed to compute on: its row, set aside by the windows' machine
INSERT, UPDATE, DELETE = "insert", "update", "delete"


def having_changes(op: str, was: bool, now: bool | None) -> tuple[str, ...]:
    """What one change of the GROUP BY's changelog (``op``: insert, update or delete of a group's
    row) does to the groups HAVING keeps, given the condition on the group's previous aggregates
    (``was``; NULL or a failure counts as false: the group was not kept) and on its new ones
    (``now``: NULL counts as false, as HAVING keeps only groups it is true for; None where computing
    it failed). The changes, in order: an ``insert`` of a
    group entering, an ``update`` of one staying, a ``delete`` of one leaving, ``ASIDE`` for a
    group the condition failed on (its row kept aside with the failure, after a delete of the row it
    had). A group's state only matters to the op it can have: an insert has no previous values, a
    delete no new ones. O(1).

    >>> having_changes("update", True, False), having_changes("update", False, True)
    (('delete',), ('insert',))
    >>> having_changes("insert", False, None), having_changes("update", True, None)
    (('aside',), ('delete', 'aside'))
    """
    if op == DELETE:
        return (DELETE,) if was else ()
    kept = was and op == UPDATE
    if now is None:
        return ((DELETE,) if kept else ()) + (ASIDE,)
    if now:
        return (UPDATE,) if kept else (INSERT,)
    return (DELETE,) if kept else ()


def was(alias: str) -> str:
    """The column of an aggregate's previous value in a changelog with ``previous`` (see ``GroupBy``)."""
    return f"{alias}{_WAS}"


def _numbers(times: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Closing times as int64 numbers (a TIMESTAMP's microseconds; NULL as 0, which the caller
    masks). O(rows)."""
    times = pc.fill_null(times.cast(pa.int64()), 0)
    return np.asarray(times.to_numpy(zero_copy_only=False), dtype=np.int64)


def _columns(e: WindowExpression) -> tuple[str, ...]:
    return tuple(c for call in e.calls for c in call.columns())
