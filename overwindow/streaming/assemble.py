"""Whole rows from the parts that several window groups emit: a query whose windows differ in
PARTITION BY or ORDER BY.

Such a query runs one machine per window group (the windows sharing both): each emits, per input
row, a *part*, the row's input columns and that group's window columns (the others NULL), tagged
with the group (``PART``). This machine, keyed by the row's identity (its row key, else its input
columns), joins a row's parts into the whole row the query returns:

- emit on window close: a row is emitted once every group has emitted its part (the groups close a
  row's frames at different watermarks: a FOLLOWING frame later), then forgotten. Rows equal in
  every input column are told apart by arrival: the n-th such part of one group joins the n-th of
  another (they are interchangeable, as rows SQL cannot tell apart are). A group that set the row
  aside sends a marker part (``ASIDE``): the row is counted there and never emitted here.
- emit on update (a row key): the machine keeps every live row's parts. A group's part is its last
  upsert of the row in the micro-batch, or a delete (the row left that group's partition and did
  not come back, or left the stream). A row is in the result while every group holds a part (and
  ``qualify`` holds); a changed row in it is upserted, one leaving it deleted, once per micro-batch
  whatever order the groups' parts came in.

A column whose expression combines windows of several groups (``lag(x) OVER (PARTITION BY k ...) -
lag(x) OVER (PARTITION BY j ...)``) reaches this machine as its calls, each a window column of its
group; Spark computes it over the whole rows this machine returns (``overwindow.spark.bind``).

State: one table of rows with their parts so far (Arrow IPC, kind ``assemble``), in arrival order.
A step costs O((state rows + parts) x columns) plus a sort of the parts.

>>> schema = pa.schema([("id", pa.int64()), ("x", pa.int64())])
>>> m = Assembler(schema, [pa.schema([("a", pa.int64())]), pa.schema([("b", pa.int64())])], "on_window_close")
>>> first = pa.table({"id": [1, 2], "x": [5, 6], "a": [10, 20], "b": pa.nulls(2, pa.int64()), PART: [0, 0]})
>>> step = m.step(None, first)
>>> step.output.num_rows, step.counters.state_rows
(0, 2)
>>> later = pa.table({"id": [2], "x": [6], "a": pa.nulls(1, pa.int64()), "b": [7], PART: [1]})
>>> m.step(step.state, later).output.to_pylist()
[{'id': 2, 'x': 6, 'a': 20, 'b': 7}]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.logical.bind import source_columns
from overwindow.logical.expr import Expr
from overwindow.streaming import state as S
from overwindow.streaming.aside import Aside, Qualify
from overwindow.streaming.contract import CHANGE, DELETE, UPSERT, Counters, Step
from overwindow.streaming.identity import IDENTITY, ordinals, row_hash
from overwindow.streaming.machines import machine_for

PART = "__ow_window"  # a part's window group (int32), from the first operator
ASIDE = "__ow_aside"  # window close: the part marks a row its group set aside (bool)
_SEQ = "__ow_seq"  # the state row's arrival number: rows equal in every column pair up in order
_SHOWN = "__ow_shown"  # emit on update: the row is in the result the changelog keeps
_DEAD = "__ow_dead"  # window close: a group set the row aside


def _has(group: int) -> str:
    return f"__ow_has_{group}"


@dataclass
class AssembleMeta(S.StateMeta):
    """The next arrival number."""

    OLDEST: ClassVar[int] = 1
    NEWEST: ClassVar[int] = 1

    seq: int = 0


class Assembler:
    """Joins the window groups' parts of each row (see the module). ``schema``: the input columns;
    ``results``: each group's window columns; ``emit``: the groups' emit mode; ``row_key``: the
    identity columns (None: all input columns); ``qualify``: a condition over the whole row."""

    def __init__(
        self,
        schema: pa.Schema,
        results: list[pa.Schema],
        emit: str,
        row_key: tuple[str, ...] | None = None,
        qualify: Expr | None = None,
    ):
        if emit == "on_update" and not row_key:
            raise ValueError("emit on update joins a row's parts by its row key")
        self.schema, self.results, self.emit = schema, list(results), emit
        self.identity = tuple(row_key or source_columns(schema.names))
        self.columns = list(schema) + [f for r in results for f in r]
        flags = [pa.field(_has(g), pa.bool_()) for g in range(len(results))]
        last = pa.field(_SHOWN if emit == "on_update" else _DEAD, pa.bool_())
        self.state_schema = pa.schema(
            [pa.field(IDENTITY, pa.int64()), pa.field(_SEQ, pa.int64()), *self.columns, *flags, last]
        )
        tail = [pa.field(CHANGE, pa.string())] if emit == "on_update" else []
        self.output_schema = pa.schema(self.columns + tail)
        names = [f.name for f in self.columns]
        self.qualify = qualify and Qualify(qualify, pa.schema(self.columns).empty_table(), names)

    @classmethod
    def of(cls, groups, schema: pa.Schema, watermarked, qualify: Expr | None = None) -> Assembler:
        """The assembler of window ``groups`` ((PARTITION BY columns, OverWindow) each, one emit mode
        and row key) over input ``schema``, each group's machine built as its host builds it
        (``watermarked``: one flag, or one per group); refuses what a group's machine refuses."""
        flags = watermarked if isinstance(watermarked, (list, tuple)) else [watermarked] * len(groups)
        results = []
        for (keys, spec), flag in zip(groups, flags):
            output = machine_for(spec, schema, flag, keys=tuple(keys)).output_schema
            results.append(pa.schema([f for f in output if f.name not in schema.names and f.name != CHANGE]))
        first = groups[0][1]
        rows = pa.schema([f for f in schema if f.name not in first.source_order])  # no part of a row
        return cls(rows, results, first.emit, first.row_key, qualify)

    def step(self, state: bytes | None, parts: pa.Table | None) -> Step:
        """Join one micro-batch's ``parts`` (the input and window columns, ``PART``; on update
        ``CHANGE``; on window close ``ASIDE`` if any group set rows aside) into the rows of
        ``state`` (None: new); emit the rows they complete (on update: the changelog)."""
        if state is None:
            rows, meta = self.state_schema.empty_table(), AssembleMeta()
        else:
            tables, meta = S.decode(state, "assemble", AssembleMeta)
            rows = tables["rows"]
        touched = np.zeros(rows.num_rows, dtype=bool)
        if parts is not None and parts.num_rows:
            ids = row_hash(parts, self.identity).view(np.int64)
            group = parts.column(PART).to_numpy(zero_copy_only=False)
            for g in range(len(self.results)):
                at = np.flatnonzero(group == g)
                if len(at):
                    rows, touched, meta.seq = self._join(rows, touched, meta.seq, parts, ids, g, at)
        output, rows, aside = self._emit(rows, touched)
        new = S.encode({"rows": rows}, "assemble", meta) if rows.num_rows else None
        counters = Counters(state_rows=rows.num_rows)
        return Step(new, output, counters=counters, empty=new is None, aside=aside)

    def _join(self, rows, touched, seq, parts, ids, g, at):
        """``rows`` with group ``g``'s parts (rows ``at`` of ``parts``) joined in."""
        deletes = np.zeros(len(at), dtype=bool)
        if self.emit == "on_update":
            upsert = pc.equal(parts.column(CHANGE), UPSERT).to_numpy(zero_copy_only=False)[at]
            # a row's part is its group's last upsert in the batch, else its delete
            order = np.lexsort((at, upsert, ids[at]))
            last = np.r_[ids[at][order][1:] != ids[at][order][:-1], True]
            at, deletes = at[order[last]], ~upsert[order[last]]
            waiting = np.arange(rows.num_rows)
        else:
            waiting = np.flatnonzero(~rows.column(_has(g)).to_numpy(zero_copy_only=False))
        held = rows.column(IDENTITY).to_numpy()[waiting]
        matched = pd.DataFrame({"i": ids[at], "o": ordinals(ids[at])}).merge(
            pd.DataFrame({"i": held, "o": ordinals(held), "s": waiting}), on=["i", "o"], how="left"
        )["s"]
        found = matched.notna().to_numpy()
        target = matched.to_numpy(dtype=np.float64, na_value=-1).astype(np.int64)
        fresh = at[~found & ~deletes]
        rows = pa.concat_tables([rows, self._new_rows(parts, ids, fresh, g, seq)])
        touched = np.r_[touched, np.ones(len(fresh), dtype=bool)]
        n = rows.num_rows
        source = np.full(n, -1)
        source[target[found]] = at[found]
        cleared = np.zeros(n, dtype=bool)
        cleared[target[found & deletes]] = True
        source[cleared] = -1
        touched[target[found]] = True
        write = source >= 0
        taken = pa.array(source, mask=~write)
        # the group's window columns take its parts (NULL where it deleted the row); on update its
        # upserts also carry the row's new input values
        inputs = list(self.schema.names) if self.emit == "on_update" else []
        masks = {**{n: write for n in inputs}, **{f.name: write | cleared for f in self.results[g]}}
        out = {
            name: pc.if_else(mask, parts.column(name).take(taken), rows.column(name))
            for name, mask in masks.items()
        }
        has = rows.column(_has(g)).to_numpy(zero_copy_only=False).copy()
        has[write], has[cleared] = True, False
        out[_has(g)] = pa.array(has)
        if self.emit != "on_update" and ASIDE in parts.column_names:
            dead = rows.column(_DEAD).to_numpy(zero_copy_only=False).copy()
            marked = pc.fill_null(parts.column(ASIDE), False).to_numpy(zero_copy_only=False)
            dead[write] |= marked[source[write]]
            out[_DEAD] = pa.array(dead)
        for name, column in out.items():
            rows = rows.set_column(rows.schema.get_field_index(name), name, column)
        return rows, touched, seq + len(fresh)

    def _new_rows(self, parts, ids, at, g, seq) -> pa.Table:
        """State rows for parts ``at`` of group ``g`` that join no row held."""
        n = len(at)
        taken = parts.take(pa.array(at, pa.int64()))
        columns = {IDENTITY: pa.array(ids[at]), _SEQ: pa.array(np.arange(seq, seq + n, dtype=np.int64))}
        for f in self.columns:
            columns[f.name] = taken.column(f.name).cast(f.type)
        for h in range(len(self.results)):
            columns[_has(h)] = pa.array(np.full(n, h == g))
        if self.emit == "on_update":
            columns[_SHOWN] = pa.array(np.zeros(n, dtype=bool))
        elif ASIDE in parts.column_names:
            columns[_DEAD] = pc.fill_null(taken.column(ASIDE), False)
        else:
            columns[_DEAD] = pa.array(np.zeros(n, dtype=bool))
        return pa.table(columns, schema=self.state_schema)

    def _emit(self, rows: pa.Table, touched: np.ndarray):
        """(the rows emitted, the rows kept, the rows set aside or None): a row is in the result when
        every group holds its part and ``qualify`` holds;
        only rows touched by this step's parts change."""
        flags = [rows.column(_has(g)).to_numpy(zero_copy_only=False) for g in range(len(self.results))]
        whole = np.logical_and.reduce(flags) if flags else np.zeros(rows.num_rows, dtype=bool)
        names = [f.name for f in self.columns]
        dead = None if self.emit == "on_update" else rows.column(_DEAD).to_numpy(zero_copy_only=False)
        at = np.flatnonzero(whole & touched if dead is None else whole & touched & ~dead)
        complete = rows.take(pa.array(at, pa.int64())).select(names)
        ok, aside = self._passes(complete)
        if self.emit == "on_window_close":
            return complete.filter(pa.array(ok)), rows.filter(pa.array(~whole)), aside
        passes = np.zeros(rows.num_rows, dtype=bool)
        passes[at] = ok
        shown = rows.column(_SHOWN).to_numpy(zero_copy_only=False)
        upsert, delete = touched & passes, touched & shown & ~passes
        emitted = np.flatnonzero(upsert | delete)
        out = rows.take(pa.array(emitted, pa.int64())).select(names)
        out = out.append_column(CHANGE, pa.array(np.where(upsert[emitted], UPSERT, DELETE), pa.string()))
        rows = rows.set_column(
            rows.schema.get_field_index(_SHOWN), _SHOWN, pa.array(np.where(touched, passes, shown))
        )
        return out, rows.filter(pa.array(np.logical_or.reduce(flags))), aside

    def _passes(self, rows: pa.Table) -> tuple[np.ndarray, Aside | None]:
        """(per whole row of ``rows`` whether it is in the result: ``qualify`` holds; the rows set
        aside, with the reasons). O(rows)."""
        if self.qualify is None:
            return np.ones(rows.num_rows, dtype=bool), None
        return self.qualify.holds(rows)
