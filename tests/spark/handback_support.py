"""What Spark reads of the frames a stateful operator's function yields (``overwindow.spark.handback``),
without Spark: each frame's column as PySpark's pandas conversion makes it Arrow, then the
``mapInArrow`` function after the operator."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from overwindow.spark.handback import ROWS, decoded


def handed_back(frames) -> pa.Table | None:
    """The rows of ``frames`` as Spark reads them back (None: no frame had a row)."""
    batches = [
        pa.record_batch([pa.Array.from_pandas(f[ROWS], type=pa.binary())], names=[ROWS]) for f in frames
    ]
    read = list(decoded(iter(batches)))
    return pa.Table.from_batches(read) if read else None


def frame(frames) -> pd.DataFrame:
    """``handed_back``'s rows as pandas (an empty frame for none)."""
    table = handed_back(frames)
    return pd.DataFrame() if table is None else table.to_pandas()
