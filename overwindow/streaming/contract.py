"""The contract between the streaming state machines and what hosts them (the Spark adapter, the
in-memory driver): one step per partition and micro-batch, its result, and the output columns a
machine adds.

A machine is built once per spec and input schema (``overwindow.streaming.machines.machine_for``) and
holds nothing between calls, so one machine object serves every partition: a host keeps each
partition's state and calls ``step(state, rows, watermark)`` for the partitions with rows in the
micro-batch, and for those whose ``wakeup`` the watermark has passed (with no rows). A host that
serves many partitions in one call (a bucket of keys) steps each of them with its own state.

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> from overwindow.streaming.machines import machine_for
>>> schema = pa.schema([("t", pa.int64()), ("x", pa.int64())])
>>> m = machine_for(OverWindow("lag(x) OVER (ORDER BY t) AS p"), schema)
>>> step = m.step(None, pa.table({"t": [1, 2], "x": [5, 6]}), watermark=1)
>>> step.output.to_pylist(), step.wakeup, step.counters.state_rows
([{'t': 1, 'x': 5, 'p': None}], 2, 2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa

from overwindow.logical.bind import source_columns
from overwindow.streaming.aside import Aside

CHANGE = "_change"  # emit on update: UPSERT or DELETE per output row
UPSERT, DELETE = "upsert", "delete"
ROW_ID = "_row_id"  # emit on update without a row key: the row's 64-bit identity, the changelog's key
# the watermark past every row: the input has ended. Window close releases and emits every row it
# holds, frames cut at the partition's end as the batch evaluator cuts them (Flink does this for
# bounded sources), and takes no rows after it; a ``wakeup`` of END_OF_INPUT means rows wait for
# later rows (n FOLLOWING, lead) and only the end of input emits them without. Emit on update has
# nothing to add at the end.
END_OF_INPUT = math.inf


@dataclass
class Counters:
    """What a step counted for its partition."""

    state_rows: int = 0  # rows the partition holds after the step
    late_rows_total: int = 0  # rows dropped as late since the partition started
    recomputed_rows: int = 0  # emit on update: rows whose results this step recomputed
    # rows this step set aside (``Step.aside``): a row expression fails on their values; emit on
    # update also: no known op, a NULL event time
    bad_rows: int = 0
    unknown_updates: int = 0  # emit on update: single-image updates of rows the partition did not hold
    # emit on update: rows this step dropped past a Top-N qualify (``topn``), never in the result again
    pruned_rows: int = 0


@dataclass
class Step:
    """What one step produced for one partition."""

    state: bytes | None  # the new state; None: the machine wrote it to the store it was given
    output: pa.Table  # the rows emitted, in the machine's ``output_schema``
    wakeup: int | float | None = None  # window close: the watermark at which it can emit without rows
    late_rows: int = 0  # rows of this step dropped as late
    counters: Counters = field(default_factory=Counters)
    # the partition holds nothing a later step reads (no rows, no counts that numbering continues
    # from): the host removes its state rather than write an empty one. Lateness then rests on the
    # host's watermark alone, as it does for a partition never seen.
    empty: bool = False
    # a step over many partitions (a bucket of keys): (rows, key) of the one holding the most rows,
    # which the bound on rows per key checks; None: the state is one partition
    largest: tuple[int, tuple] | None = None
    # the rows set aside, with their reasons (``overwindow.streaming.aside``); the host counts and
    # keeps them, and the query goes on
    aside: Aside | None = None
    # a step over many partitions (a bucket of keys): the partition keys of the rows it dropped as
    # late, each once, for the host to name; () for a step of one partition (the host's key)
    late_keys: tuple = ()


def keys_of(rows: pa.Table, keys: tuple[str, ...], mask) -> tuple[tuple, ...]:
    """The values of the ``keys`` columns in the rows of ``rows`` that ``mask`` selects, each key
    once, in the order first met; () without keys or rows. O(rows selected).

    >>> keys_of(pa.table({"k": ["a", "b", "a"], "x": [1, 2, 3]}), ("k",), [True, False, True])
    (('a',),)
    """
    picked = rows.select(list(keys)).filter(pa.array(mask, pa.bool_())) if keys else None
    if picked is None or not picked.num_rows:
        return ()
    return tuple(dict.fromkeys(zip(*(picked.column(k).to_pylist() for k in keys))))


class RowBoundError(RuntimeError):
    """A partition holds more rows than the spec's ``maxRowsPerKey``."""


def check_row_bound(step: Step, bound: int | None, key) -> None:
    """Raise RowBoundError, naming the bound and the partition ``key`` (or, for a step over many
    partitions, the largest one's), when the step left more rows in a partition's state than
    ``bound`` (None: no bound). O(1).

    >>> try:
    ...     check_row_bound(Step(None, pa.table({}), counters=Counters(state_rows=3)), 2, ("a",))
    ... except RowBoundError as e:
    ...     print(str(e).split(";")[0])
    the partition ('a',) holds 3 rows in state, more than maxRowsPerKey=2
    """
    rows, key = step.largest or (step.counters.state_rows, key)
    if bound is not None and rows > bound:
        raise RowBoundError(
            f"the partition {key!r} holds {rows:,} rows in state, more than maxRowsPerKey={bound:,}; "
            "raise the bound, add a watermark on the ORDER BY column (rows behind it leave the state), "
            "or partition the stream more finely"
        )


class StateMachine(Protocol):
    """A streaming state machine: pure Python, no Spark."""

    output_schema: pa.Schema

    def step(self, state, rows: pa.Table | None, watermark=None) -> Step:
        """Feed one partition's rows of a micro-batch (None: none) with the current watermark (in the
        ORDER BY key's numbers) to its ``state`` (None: new); the new state and the rows emitted."""
        ...


def held_schema(spec, data: pa.Schema, keys: tuple[str, ...]) -> pa.Schema:
    """The columns of ``data`` (the input rows) a machine holds and emits: all of them, or with
    ``spec.carried`` those carried, the ``keys`` (partition and row key), what the
    calls, the results' expressions and the condition read, and the columns a bind adds (Spark
    computed them for the calls, or names a row's failed expression), in input order. O(columns).

    >>> from overwindow.spec import OverWindow
    >>> spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", emit="on_update").carrying(["K"])
    >>> data = pa.schema([("k", pa.int64()), ("t", pa.int64()), ("x", pa.int64()), ("url", pa.string())])
    >>> held_schema(spec, data, ()).names
    ['k', 't', 'x']
    """
    if spec.carried is None:
        return data
    exprs = [e for c in spec.calls for e in c.exprs()] + [e.expr for e in spec.expressions if e.expr]
    read = [*spec.carried, *keys, *(c for e in exprs for c in e.columns())]
    read += spec.qualify.columns() if spec.qualify is not None else []
    wanted = {n.lower() for n in read}
    added = set(data.names) - set(source_columns(data.names))
    return pa.schema([f for f in data if f.name.lower() in wanted or f.name in added])
