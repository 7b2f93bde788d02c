"""The adapter's event-time timeout path at the end of input, without Spark: a key whose rows wait
for later rows sets its timeout at END_OF_INPUT_MS, and a watermark past it makes the machine emit
every row it holds (a stand-in for Spark's GroupState records what the function sets)."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

import overwindow
from overwindow.spark.adapter import END_OF_INPUT_MS, _Runner
from overwindow.spec import OverWindow


class _State:
    """What ``applyInPandasWithState`` hands the function for one key: the watermark, the stored
    state (``get`` is a property, as in PySpark) and the timeout it is given."""

    def __init__(self, watermark_ms: int, value: bytes | None):
        self.watermark_ms, self.value, self.timeout = watermark_ms, value, None

    def getCurrentWatermarkMs(self):
        return self.watermark_ms

    @property
    def exists(self):
        return self.value is not None

    @property
    def get(self):
        return (self.value,)

    def update(self, row):
        self.value = row[0]

    def setTimeoutTimestamp(self, ms):
        self.timeout = ms


def test_a_watermark_past_end_of_input_emits_the_rows_waiting_for_later_rows():
    spec = OverWindow(
        "lead(x) OVER (ORDER BY ts) AS nx",
        "sum(x) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 2 FOLLOWING) AS s",
        "row_number() OVER (ORDER BY ts) AS rn",
    )
    schema = pa.schema([("ts", pa.timestamp("us")), ("x", pa.float64())])
    run = _Runner(spec, schema, "UTC", watermarked=True)
    times = pd.to_datetime(["2024-01-01 00:00:01", "2024-01-01 00:00:02", "2024-01-01 00:00:04"])
    rows = pd.DataFrame({"ts": times, "x": [1.0, 2.0, 4.0]})
    last_ms = int(times[-1].value // 1_000_000)
    state, out = None, []
    for watermark_ms, frames in ((0, [rows]), (last_ms + 1000, []), (END_OF_INPUT_MS + 1, [])):
        gs = _State(watermark_ms, state)
        out += list(run(("k",), iter(frames), gs))
        state = gs.value
        if watermark_ms == last_ms + 1000:  # released: the last two rows wait for rows after them
            assert sum(map(len, out)) == 1 and gs.timeout == END_OF_INPUT_MS
    got = pd.concat(out).reset_index(drop=True)
    want = overwindow.evaluate(pa.Table.from_pandas(rows, schema=schema), *spec.expressions)
    pd.testing.assert_frame_equal(got, want.to_pandas(), check_dtype=False)
