"""A stateful operator's rows handed back to Spark as Arrow, not as pandas frames.

PySpark's stateful operators take a Python function's output as pandas frames and turn them into
Arrow themselves (``applyInPandasWithState`` pads each output batch's states to the batch's rows
through ``pd.concat`` first). On window close at 50,000 keys that conversion was 62% of the Python
workers' sampled time (docs/benchmarks/single-job.md). So the operators here return one binary
column, ``ROWS``: the rows as Arrow IPC streams of at most ``Handback.rows`` rows each, already in
the Arrow types Spark reads for the output schema; ``handed_back`` puts a ``mapInArrow`` after the
operator that opens each stream into its record batches, which Spark reads as they are. The rows
are Arrow end to end (NaN apart from NULL, BIGINT whole), and pandas sees one value a stream.

PySpark sends an output batch once the frames of its calls pass
``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, however many bytes they hold, checking after
each frame; Spark's Arrow binary column holds at most 2 GiB a batch (32-bit offsets). So each stream
goes as a frame of its own, of as many rows as its rows and bytes weigh: the stream, then NULLs
(which ``decoded`` skips), a frame row per ``ROWS_A_ROW`` rows of the stream and per
``Handback.row_bytes`` of its bytes, whichever asks more (``Handback.frame_rows``); and a stream
holds at most ``STREAM_BYTES`` (but a lone row larger than that). An output batch then holds at most
``ROWS_A_ROW`` times Spark's records a batch and about ``BATCH_BYTES`` of streams, plus the stream
that passed the count, however many rows a call emits and however wide they are (a frame of a call's
whole output, or a frame row per 64 rows whatever their width, let one batch pass 2 GiB: 640,000
rows of 3.4 KB).

>>> import pyarrow as pa
>>> back = Handback(pa.schema([("x", pa.int64())]), rows=2)
>>> [frame[ROWS].notna().tolist() for frame in back.frames(pa.table({"x": [1, 2, 3]}))]
[[True], [True]]
>>> batches = [pa.record_batch([frame[ROWS].tolist()], names=[ROWS]) for frame in back.frames(
...     pa.table({"x": [1, 2, 3]}))]
>>> [b.column(0).to_pylist() for b in decoded(batches)]
[[1, 2], [3]]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from overwindow.spark.workers import freeze_imports

if TYPE_CHECKING:
    import pandas as pd

ROWS = "__overwindow_arrow"  # the operators' one output column: an Arrow IPC stream, or NULL
ROWS_A_ROW = 64  # rows of a stream per row of its frame (see the module's docstring)
BATCH_BYTES = 128 << 20  # about the most bytes of streams an output batch of PySpark's carries
STREAM_BYTES = 32 << 20  # the most bytes of rows a stream holds, but a lone row larger than that
RECORDS = 10_000  # Spark's default Arrow records a batch, where ``rows`` sets no bound


@dataclass(frozen=True)
class Handback:
    """How a stateful operator hands its rows back: ``schema``, Spark's Arrow types of its output
    columns (``of``), and at most ``rows`` rows a stream (None: one stream a call, but for
    ``STREAM_BYTES``); ``rows`` is half of Spark's Arrow records a batch (``adapter.stream_rows``)."""

    schema: pa.Schema
    rows: int | None = None

    @classmethod
    def of(cls, struct, rows: int | None) -> Handback:
        """For the Spark output schema ``struct``: its Arrow schema as Spark reads a Python function's
        batches (TIMESTAMP as UTC instants: the machines' wall-clock times, which are UTC,
        ``boundary.check_session_time_zone``)."""
        from overwindow.spark import compat

        return cls(compat.to_arrow_schema(struct), rows)

    @property
    def row_bytes(self) -> int:
        """The bytes of a stream a row of its frame stands for: ``BATCH_BYTES`` over Spark's records
        a batch (``2 * rows``), so that a batch of that many frame rows carries about ``BATCH_BYTES``.

        >>> Handback(pa.schema([]), rows=5_000).row_bytes
        13421
        """
        return max(1, BATCH_BYTES // (2 * self.rows if self.rows else RECORDS))

    def frame_rows(self, rows: int, nbytes: int) -> int:
        """The rows of the frame of a stream of ``rows`` rows and ``nbytes`` bytes: one a
        ``ROWS_A_ROW`` rows or a ``row_bytes`` bytes, whichever asks more; at least one. O(1).

        >>> back = Handback(pa.schema([]), rows=5_000)
        >>> back.frame_rows(5_000, 1_000_000), back.frame_rows(5_000, 5_000_000), back.frame_rows(1, 0)
        (79, 373, 1)
        """
        return max(1, -(-rows // ROWS_A_ROW), -(-nbytes // self.row_bytes))

    def frames(self, table: pa.Table) -> Iterator[pd.DataFrame]:
        """``table``'s rows in ``schema``'s types as IPC streams, a frame each (none for no rows).
        O(rows): a cast (none where the types are Spark's already) and one copy into the streams.
        """
        import pandas as pd  # here: the mapInArrow's workers, which only read, never import it

        if not table.num_rows:
            return
        table = table.cast(self.schema)  # a naive timestamp becomes a UTC instant: its value as it is
        for batch in table.to_batches(max_chunksize=self.rows or table.num_rows):
            for piece in _pieces(batch):
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, self.schema) as writer:
                    writer.write_batch(piece)
                stream = sink.getvalue().to_pybytes()
                padding = [None] * (self.frame_rows(piece.num_rows, len(stream)) - 1)
                yield pd.DataFrame({ROWS: [stream, *padding]})


def _pieces(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """``batch`` cut in halves, and those again, until each piece holds at most ``STREAM_BYTES``
    or a lone row; none of no rows. O(pieces x log rows) sizes of slices, no copy.

    >>> [p.num_rows for p in _pieces(pa.record_batch({"s": ["x" * (STREAM_BYTES // 3)] * 5}))]
    [2, 1, 2]
    """
    if not batch.num_rows:
        return
    if batch.num_rows == 1 or batch.nbytes <= STREAM_BYTES:
        yield batch
        return
    half = batch.num_rows // 2
    yield from _pieces(batch.slice(0, half))
    yield from _pieces(batch.slice(half))


def decoded(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function after an operator: each IPC stream of its ``ROWS`` column opened
    into its record batches, NULLs skipped. O(rows), no copy of the values."""
    # its worker's imports out of the collection PySpark runs after every task (40,000 objects,
    # about 30 ms a collection here), as the operators' workers do (``workers.freeze_imports``)
    freeze_imports()
    for batch in batches:
        for stream in batch.column(0):
            if stream.is_valid:
                yield from pa.ipc.open_stream(stream.as_buffer())


def handback_struct():
    """Spark's schema of an operator's output handed back: the ``ROWS`` column."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    return StructType([StructField(ROWS, BinaryType(), True)])


def handed_back(df, output):
    """``df``, an operator's output handed back (``handback_struct()``), as its rows in the Spark schema
    ``output``: a ``mapInArrow`` of ``decoded``. O(1): builds the plan."""
    return df.mapInArrow(decoded, output)
