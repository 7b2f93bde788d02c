"""Emit on window close over SESSION frames (docs/sessions.md): a session is final when the
watermark reaches its last row's ORDER BY value plus the gap (the end of Spark's session window):
a row that is not late (above the watermark) lies more than the gap after it, so it can join no
closed session. Each step emits the rows of the sessions that closed, with their values, and drops
them: the state holds the rows of open sessions only.

Sessions are independent of one another, so the batch evaluator over the rows held computes every
open session exactly; a step costs the kernels over the rows held, O(h log h).

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> m = SessionWindowClose(
...     OverWindow("count(*) OVER (ORDER BY t SESSION WITH GAP 2) AS n"), pa.schema([("t", pa.int64())])
... )
>>> step = m.step(None, pa.table({"t": [1, 2, 6]}), watermark=4)
>>> step.output.to_pylist(), step.wakeup
([{'t': 1, 'n': 2}, {'t': 2, 'n': 2}], 8)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.evaluator import evaluate_calls, project
from overwindow.logical.bind import source_columns
from overwindow.logical.call import WindowCall, WindowExpression
from overwindow.logical.expr import Expr
from overwindow.physical.columns import resolve_column
from overwindow.physical.key_shift import key_numbers, saturating_add
from overwindow.physical.sessions import gap_number
from overwindow.physical.values import Values
from overwindow.spec import OverWindow
from overwindow.streaming.aside import Aside, Qualify, RowChecks
from overwindow.streaming.contract import END_OF_INPUT, Counters, Step, keys_of
from overwindow.streaming.state import StateMeta, decode, encode

STATE_KIND = "session_close"
_END = "__ow_session_end"  # each held row's session's last ORDER BY value, an internal call


@dataclass
class SessionCloseMeta(StateMeta):
    """The counters of a ``session_close`` state: the watermark reached (rows at or below it are
    late) and the late rows so far."""

    OLDEST: ClassVar[int] = 1
    NEWEST: ClassVar[int] = 1

    released_upto: int | float | None = None
    late_rows: int = 0


class SessionWindowClose:
    """The emit-on-window-close machine of a spec whose calls all run over sessions
    (``machines.machine_for`` picks it). Of several gaps the widest decides when a row is final:
    its session holds the row's sessions of every narrower gap, and closes after them. ``keys``:
    the columns that tell apart the partitions one state holds (a bucket of keys); none: one
    partition. A ``qualify`` condition filters the rows emitted.

    >>> spec = OverWindow(
    ...     "count(*) OVER (ORDER BY t SESSION WITH GAP 1) AS a",
    ...     "count(*) OVER (ORDER BY t SESSION WITH GAP 3) AS b",
    ...     qualify="b > 1",
    ... )
    >>> m = SessionWindowClose(spec, pa.schema([("t", pa.int64())]))
    >>> m.step(None, pa.table({"t": [1, 3, 9]}), watermark=20).output.to_pylist()
    [{'t': 1, 'a': 1, 'b': 2}, {'t': 3, 'a': 1, 'b': 2}]
    """

    def __init__(self, spec: OverWindow, schema: pa.Schema, keys: tuple[str, ...] = ()):
        if any(not c.frame.is_session for c in spec.calls):
            raise WindowSpecError(
                "on window close, SESSION WITH GAP calls run alone: put the other calls in another "
                "overWindow, or a query of several windows (or use emit='on_update')"
            )
        self.spec, self.schema = spec, schema
        empty = schema.empty_table()
        self.order = resolve_column(empty, spec.order_column)
        self.keys = [resolve_column(empty, k) for k in keys]
        kind = Values(empty.column(self.order)).kind
        self.expressions = spec.partitioned(tuple(self.keys))
        calls = [c for e in self.expressions for c in e.calls]
        sample = max(calls, key=lambda c: gap_number(c.frame.gap, kind))  # the widest gap
        self.gap_number = gap_number(sample.frame.gap, kind)
        end = WindowCall(
            "last_value",
            _END,
            args=(Expr.of(f"`{self.order}`"),),
            partition_by=sample.partition_by,
            order_by=sample.order_by,
            frame=sample.frame,
            frame_given=True,
        )
        self.end_expression = WindowExpression(_END, (end,))
        identity = spec.row_key or source_columns(schema.names)
        self.sort_keys = [(k, "ascending") for k in self.keys] + [(self.order, "ascending")]
        self.sort_keys += [(resolve_column(empty, c), "ascending") for c in identity if c != self.order]
        self.output_schema = project(empty, spec.expressions, evaluate_calls(empty, spec.expressions)).schema
        self.checks = RowChecks(spec.calls, schema.names)
        self.qualify = spec.qualify and Qualify(spec.qualify, self.output_schema.empty_table(), schema.names)

    def step(self, state: bytes | None, rows: pa.Table | None, watermark=None) -> Step:
        """Feed new rows and the watermark (in the ORDER BY key's numbers); the rows of the sessions
        it closed, with their values. O(h log h) for the h rows held after the rows join."""
        if state is None:
            table, meta = self.schema.empty_table(), SessionCloseMeta()
        else:
            tables, meta = decode(state, STATE_KIND, SessionCloseMeta)
            table = tables["rows"]
        late, aside, late_keys = 0, None, ()
        if rows is not None and rows.num_rows:
            rows, aside = self.checks.split(self._conform(rows))
            key = Values(rows.column(self.order))
            ok = key.valid.copy()  # a NULL event time under a watermark: late, as on window close
            if meta.released_upto is not None:
                ok &= key_numbers(key) > meta.released_upto
            late = len(ok) - int(np.count_nonzero(ok))
            if late:
                late_keys = keys_of(rows, tuple(self.keys), ~ok)
                rows = rows.filter(pa.array(ok))
            table = pa.concat_tables([table, rows]).sort_by(self.sort_keys)
        if watermark is not None and (meta.released_upto is None or watermark > meta.released_upto):
            meta.released_upto = watermark
        meta.late_rows += late
        results = evaluate_calls(table, [*self.expressions, self.end_expression])
        ends, never = self._session_ends(results.pop(_END))
        upto = meta.released_upto
        if upto == END_OF_INPUT:
            closed = np.ones(table.num_rows, dtype=bool)
        elif upto is None:
            closed = np.zeros(table.num_rows, dtype=bool)
        else:
            closed = (ends <= upto) & ~never
        mask = pa.array(closed)
        out = project(
            table.filter(mask), self.spec.expressions, {k: v.filter(mask) for k, v in results.items()}
        )
        if self.qualify is not None:  # rows failing it are not in the result
            passes, unsure = self.qualify.holds(out)
            out, aside = out.filter(pa.array(passes)), Aside.join(aside, unsure)
        kept = table.filter(pa.array(~closed))
        waiting = ~closed & ~never
        wakeup = ends[waiting].min().item() if waiting.any() else (END_OF_INPUT if kept.num_rows else None)
        return Step(
            encode({"rows": kept}, STATE_KIND, meta),
            out.select(self.output_schema.names),
            END_OF_INPUT if wakeup is not None and wakeup >= END_OF_INPUT else wakeup,
            late,
            Counters(kept.num_rows, meta.late_rows, bad_rows=len(aside) if aside else 0),
            kept.num_rows == 0,
            self._largest(kept),
            aside,
            late_keys,
        )

    def _session_ends(self, last: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Each row's session's end, its last row's key plus the gap, in ``key_numbers``, and the
        mask of the integer or time keys' ends past every int64, which never come before the end of
        input (kept exact, not wrapped or rounded through DOUBLE); a NaN key's end is the end of
        input. O(n).
        """
        numbers = key_numbers(Values(last))
        if numbers.dtype.kind == "f":
            ends = numbers + self.gap_number
            return np.where(np.isnan(ends), END_OF_INPUT, ends), np.zeros(len(ends), dtype=bool)
        lowest, highest = (int(numbers.min()), int(numbers.max())) if len(numbers) else (0, 0)
        ends, beyond = saturating_add(numbers, self.gap_number, lowest, highest)
        return ends, np.zeros(len(ends), dtype=bool) if beyond is None else beyond

    def _conform(self, rows: pa.Table) -> pa.Table:
        if rows.schema.names != self.schema.names:
            rows = rows.select(self.schema.names)
        return rows if rows.schema.equals(self.schema) else rows.cast(self.schema)

    def _largest(self, kept: pa.Table):
        """(rows, key) of the partition holding the most rows, for the bound on rows per key."""
        if not self.keys or not kept.num_rows:
            return None
        counts = kept.group_by(self.keys, use_threads=False).aggregate([([], "count_all")])
        i = int(pc.index(counts.column("count_all"), pc.max(counts.column("count_all"))).as_py())
        return counts.column("count_all")[i].as_py(), tuple(counts.column(k)[i].as_py() for k in self.keys)
