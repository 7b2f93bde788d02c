"""A stateful operator's rows handed back to Spark as Arrow, not as pandas frames.

PySpark's stateful operators take a Python function's output as pandas frames and turn them into
Arrow themselves (``applyInPandasWithState`` pads each output batch's states to the batch's rows
through ``pd.concat`` first). On window close at 50,000 keys that conversion was 62% of the Python
workers' sampled time (docs/benchmarks/single-job.md). So the operators here return one binary
column, ``ROWS``: the rows as Arrow IPC streams of at most ``Handback.rows`` rows each, already in
the Arrow types Spark reads for the output schema; ``handed_back`` puts a ``mapInArrow`` after the
operator that opens each stream into its record batches, which Spark reads as they are. The rows
are Arrow end to end (NaN apart from NULL, BIGINT whole), and pandas sees one value a stream.

PySpark sends an output batch once its frames pass ``spark.sql.execution.arrow.maxRecordsPerBatch``
rows. A stream of n rows goes as a frame of ``ceil(n / ROWS_A_ROW)`` rows (the stream, then NULLs,
which ``decoded`` skips), so an output batch still holds at most ``ROWS_A_ROW`` times that many
rows, however few streams it counts.

>>> import pyarrow as pa
>>> back = Handback(pa.schema([("x", pa.int64())]), rows=2)
>>> [frame[ROWS].notna().tolist() for frame in back.frames(pa.table({"x": [1, 2, 3]}))]
[[True, True]]
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


@dataclass(frozen=True)
class Handback:
    """How a stateful operator hands its rows back: ``schema``, Spark's Arrow types of its output
    columns (``of``), and at most ``rows`` rows a stream (None: one stream a call)."""

    schema: pa.Schema
    rows: int | None = None

    @classmethod
    def of(cls, struct, rows: int | None) -> Handback:
        """For the Spark output schema ``struct``: its Arrow schema as Spark reads a Python function's
        batches (TIMESTAMP as UTC instants: the machines' wall-clock times, which are UTC,
        ``boundary.check_session_time_zone``)."""
        from overwindow.spark import compat

        return cls(compat.to_arrow_schema(struct), rows)

    def frames(self, table: pa.Table) -> Iterator[pd.DataFrame]:
        """``table``'s rows in ``schema``'s types as one frame of IPC streams (none for no rows).
        O(rows): a cast (none where the types are Spark's already) and one copy into the streams.
        """
        import pandas as pd  # here: the mapInArrow's workers, which only read, never import it

        if not table.num_rows:
            return
        table = table.cast(self.schema)  # a naive timestamp becomes a UTC instant: its value as it is
        streams = []
        for batch in table.to_batches(max_chunksize=self.rows or table.num_rows):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, self.schema) as writer:
                writer.write_batch(batch)
            streams.append(sink.getvalue().to_pybytes())
            streams.extend([None] * ((batch.num_rows - 1) // ROWS_A_ROW))
        yield pd.DataFrame({ROWS: streams})


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
