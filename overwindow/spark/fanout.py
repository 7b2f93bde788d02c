"""Windows over several PARTITION BY or ORDER BY in one streaming query: the input fanned out by
window group into one ``applyInPandasWithState`` (each group's machine, a state per group and
bucket of that group's key), then a ``transformWithStateInPandas`` keyed by a bucket of the row's
identity that joins each row's parts into whole rows (``overwindow.streaming.assemble``).

A window group is the windows sharing PARTITION BY and ORDER BY: one ``OverWindow`` and one machine,
as ``groupBy(keys).overWindow(spec)`` runs it. Every input row is emitted once per group
(``explode`` of the group numbers, so the source is read once), grouped by (group,
``pmod(xxhash64(the group's keys), B)``); the first operator returns each row's part (the input
columns, its group's window columns, the others NULL); the second holds parts until a row is whole
(window close) or keeps each live row's parts (emit on update, keyed by the row key) and returns
the whole rows, a changelog on update. Spark chains the two operators only in the ``append``
output mode, and runs ``transformWithStateInPandas`` on Spark 4 with the RocksDB state store.

Cost per micro-batch: G calls per bucket for G groups (each row stepped by G machines) plus one call
per row bucket in the second operator, whose state holds the rows not yet whole (window close) or
every live row's parts (on update).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.logical.bind import source_columns
from overwindow.logical.expr import Expr
from overwindow.spark import compat, executors
from overwindow.spark.adapter import (
    Runner,
    check_rocksdb,
    check_watermark,
    emitted,
    is_watermarked,
    stream_rows,
    visible,
    with_companions,
)
from overwindow.spark.boundary import (
    arrow_schema,
    check_session_time_zone,
    companions_of,
    output_struct,
    with_interval_days,
)
from overwindow.spark.counts import MachineCounts
from overwindow.spark.grouping import bucket_grouping, bucket_of, shuffle_partitions
from overwindow.spark.handback import Handback, handback_struct, handed_back
from overwindow.spec import DEFAULT_KEY_BUCKETS, OverWindow, chosen_key_buckets
from overwindow.streaming.assemble import ASIDE, PART, Assembler
from overwindow.streaming.contract import CHANGE
from overwindow.streaming.identity import row_hash

_ROWS = "__overwindow_rows"  # the bucket of the row's identity, for the second operator
_PARTS = "__overwindow_parts"  # an Arrow IPC stream of parts, all of one row bucket


def over_windows(
    df,
    groups: list[tuple[tuple[str, ...], OverWindow]],
    qualify: str | None = None,
    keep=None,
    own_columns: bool = False,
):
    """The streaming DataFrame of every group's windows over ``df``, one row per input row: the
    input columns, then each group's window columns in group order (on update ``_change``).
    ``groups``: (PARTITION BY column names, the group's OverWindow without PARTITION BY), all with
    the same emit mode and options; ``qualify``: a condition over the whole row; ``keep``: the dead
    letter, as ``overWindow``'s; ``own_columns``: ``df`` is overwindow's own (a GROUP BY's changelog,
    whose column names are reserved). ``overwindow.select`` and ``overwindow.sql`` call it for windows
    over several PARTITION BY or ORDER BY (and compute what combines them after it).

    Example (``events`` watermarked on ``ts``)::

        over_windows(events, [(("k",), OverWindow("lag(x) OVER (ORDER BY ts) AS p")),
                              ((), OverWindow("count(*) OVER (ORDER BY ts) AS n"))])
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    what = (
        "windows over several PARTITION BY or ORDER BY (or SESSION calls beside others, on window "
        "close) in one query"
    )
    compat.require_transform_with_state(df, what)
    check_rocksdb(df.sparkSession, what)
    first = groups[0][1]
    emit, row_key = first.emit, first.row_key
    if emit == "on_update" and not row_key:
        raise WindowSpecError(
            f"{what} on update need rowKey: the changelog joins each row's windows by its row key"
        )
    if emit == "on_window_close":
        _check_chained(df.sparkSession, what)
    executors.use_running_python(df.sparkSession)
    input_struct = df.schema
    input_schema = arrow_schema(input_struct)
    if first.state_layout == "chunked":
        raise WindowSpecError(f"{what} run on the whole state layout; leave out stateLayout='chunked'")
    watermarked = [emit == "on_window_close" or is_watermarked(df, spec) for _, spec in groups]
    for keys, spec in groups:
        if not own_columns:
            spec.check_columns(source_columns(input_struct.names))
        if emit == "on_window_close":
            check_watermark(df, spec)
        missing = [k for k in keys if k not in input_struct.names]
        if missing:
            raise WindowSpecError(
                f"{what} need PARTITION BY over columns of the stream by name; add `{missing[0]}` "
                "as a column (withColumn or a computed column in the SELECT list) first"
            )
    if first.buckets_given:  # as given ("per key" does not apply here)
        buckets = first.key_buckets or DEFAULT_KEY_BUCKETS
    else:  # chosen as overWindow chooses, and recorded in each group's state
        buckets = chosen_key_buckets(shuffle_partitions(df.sparkSession))
        groups = [(keys, spec.on_chosen_buckets(buckets)) for keys, spec in groups]
    condition = None if qualify is None else Expr.of(qualify)
    assembler = Assembler.of(groups, input_schema, watermarked, condition)
    check_session_time_zone(df)
    companions = companions_of(input_schema)
    counts = MachineCounts.of(df.sparkSession, keep)
    runners = [
        _PartRunner(spec, input_schema, flag, counts, companions, keys)
        for (keys, spec), flag in zip(groups, watermarked)
    ]
    parts_schema = pa.schema(
        list(assembler.schema)
        + [f for r in assembler.results for f in r]
        + [pa.field(PART, pa.int32())]
        + ([pa.field(CHANGE, pa.string())] if emit == "on_update" else [pa.field(ASIDE, pa.bool_())])
    )
    for g, runner in enumerate(runners):
        runner.part = _Parts(g, parts_schema, assembler.identity, buckets)
    bucket = F.lit(0)
    for g, (keys, _) in reversed(list(enumerate(groups))):
        bucket = F.when(F.col(PART) == g, bucket_of(keys, buckets)).otherwise(bucket)
    fanned = df.withColumn(PART, F.explode(F.sequence(F.lit(0), F.lit(len(groups) - 1))))
    grouped = bucket_grouping(fanned, bucket, buckets, not first.buckets_given, PART)
    grouped = with_companions(grouped, companions)
    state_struct = StructType([StructField("state", BinaryType(), False)])
    # parts travel as Arrow IPC (their values exact, NaN apart from NULL), one message per row
    # bucket and call; they carry no watermark, so Spark takes none of them for late rows
    blobs = StructType([StructField(_ROWS, LongType(), False), StructField(_PARTS, BinaryType(), False)])
    timeout = "EventTimeTimeout" if emit == "on_window_close" else "NoTimeout"
    parts = grouped.applyInPandasWithState(_FanOut(runners), blobs, state_struct, "append", timeout)
    plain = StructType([StructField(f.name, f.dataType, f.nullable) for f in input_struct.fields])
    output = output_struct(plain, visible(assembler.output_schema))
    back = Handback.of(output, stream_rows(df.sparkSession))
    processor = _assemble_processor(_Assembly(assembler, counts, back))
    out = parts.groupBy(_ROWS).transformWithStateInPandas(processor, handback_struct(), "Append", "None")
    out = with_interval_days(handed_back(out, output), visible(assembler.output_schema))
    out.overwindow_counts = counts
    return out


CHECK = "spark.sql.streaming.statefulOperator.checkCorrectness.enabled"


def _check_chained(session, what: str) -> None:
    """Spark refuses an operator with event-time timeouts (window close's machines) followed by
    another stateful operator unless ``CHECK`` is off: the second might drop the first's output as
    rows behind the watermark. The row assembly reads no event time (its input carries no
    watermark) and drops nothing, so the check does not apply; turning it off is the session's
    choice (the view job's sessions do)."""
    if (session.conf.get(CHECK, "true") or "true").lower() != "false":
        raise WindowSpecError(
            f"{what} on window close chain two stateful operators, which Spark refuses while {CHECK} "
            "is on (it guards a second operator that could drop the first's rows as late; overwindow's "
            f"row assembly reads no event time and drops none): spark.conf.set('{CHECK}', 'false') "
            "before starting the query, or emit on update"
        )


class _PartRunner(Runner):
    """A window group's runner: its machine's output as parts (``part``: how)."""

    part: _Parts | None = None

    def __getstate__(self):
        return {**super().__getstate__(), "part": self.part}

    def __setstate__(self, d):
        super().__setstate__(d)
        self.part = d["part"]

    def emitted(self, step) -> Iterator[pd.DataFrame]:
        return self.part.of(step)


@dataclass(frozen=True)
class _Parts:
    """How group ``group`` sends its rows on: as parts in ``schema``, one Arrow IPC stream per row
    bucket (the hash of the ``identity`` columns modulo ``buckets``)."""

    group: int
    schema: pa.Schema
    identity: tuple[str, ...]
    buckets: int

    def of(self, step) -> Iterator[pd.DataFrame]:
        """A step's rows with every other group's window columns NULL (on window close, also a
        marker part per row it set aside, ``ASIDE``), as (row bucket, IPC stream) rows."""
        tables = []
        if step.output.num_rows:
            tables.append(_padded(step.output, self.group, self.schema, aside=False))
        if step.aside and ASIDE in self.schema.names:
            tables.append(_padded(step.aside.rows, self.group, self.schema, aside=True))
        if not tables:
            return
        parts = pa.concat_tables(tables)
        bucket = (row_hash(parts, self.identity) % np.uint64(self.buckets)).astype(np.int64)
        order = np.argsort(bucket, kind="stable")
        starts = np.flatnonzero(np.r_[True, bucket[order][1:] != bucket[order][:-1]])
        ends = np.r_[starts[1:], len(order)]
        blobs = [_ipc(parts.take(pa.array(order[a:b]))) for a, b in zip(starts, ends)]
        yield pd.DataFrame({_ROWS: bucket[order][starts], _PARTS: blobs})


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


class _FanOut:
    """The first operator's function: the machine of the row's window group (the grouping key's
    first part), its output as parts."""

    def __init__(self, runners: list[Runner]):
        self.runners = runners

    def __call__(self, key, pdfs: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        return self.runners[int(key[0])](key, pdfs, state)


class _Assembly:
    """The second operator's work for one row bucket and micro-batch: ``assembler`` over the IPC
    streams of parts (pickled to the workers with it); ``back``: how its rows go back to Spark."""

    def __init__(self, assembler: Assembler, counts, back: Handback):
        self.assembler, self.counts, self.back = assembler, counts, back

    def step(self, prior: bytes | None, pdfs: Iterator[pd.DataFrame], key):
        # the IPC streams by position: the last column (Spark may rename it in the frame)
        tables = [pa.ipc.open_stream(blob).read_all() for p in pdfs for blob in p.iloc[:, -1]]
        step = self.assembler.step(prior, pa.concat_tables(tables) if tables else None)
        if self.counts is not None:
            self.counts.add(step, key)
        return step


def _assemble_processor(assembly: _Assembly):
    """A StatefulProcessor running ``assembly`` with one state value per row bucket."""
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    binary = StructType([StructField("value", BinaryType())])

    class AssembleProcessor(StatefulProcessor):
        def init(self, handle):
            self.rows = handle.getValueState("rows", binary)

        def handleInputRows(self, key, rows, timerValues):
            prior = self.rows.get()[0] if self.rows.exists() else None
            step = assembly.step(prior, rows, key)
            if step.empty:
                self.rows.clear()
            else:
                self.rows.update((step.state,))
            yield from emitted(step, assembly.back)

        def close(self):
            pass

    return AssembleProcessor()


def _padded(table: pa.Table, group: int, schema: pa.Schema, aside: bool) -> pa.Table:
    n = table.num_rows
    columns = []
    for f in schema:
        if f.name == PART:
            columns.append(pa.array(np.full(n, group, dtype=np.int32)))
        elif f.name == ASIDE:
            columns.append(pa.array(np.full(n, aside)))
        elif f.name in table.column_names:
            columns.append(table.column(f.name))
        else:
            columns.append(pa.nulls(n, f.type))
    return pa.table(columns, schema=schema)
