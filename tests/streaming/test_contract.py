"""What a step tells its host beyond its rows (overwindow.streaming.contract): a step over a bucket
of keys names the partition keys of the rows it dropped as late (issue 45: the job's log named the
bucket, `(np.int8(14), np.True_)`, instead)."""

import pyarrow as pa
import pytest

from overwindow.spec import OverWindow
from overwindow.streaming.driver import Driver

SCHEMA = pa.schema([("k", pa.string()), ("id", pa.int64()), ("t", pa.int64()), ("x", pa.float64())])


@pytest.mark.parametrize("emit", ["on_update", "on_window_close"])
@pytest.mark.parametrize("layout", ["whole", "chunked"])
def test_a_bucket_step_names_the_keys_of_its_late_rows(emit, layout):
    spec = OverWindow(
        "sum(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s",
        emit=emit,
        rowKey="id",
        stateLayout=layout,
        keyBuckets=1,
    )
    driver = Driver(spec, SCHEMA, ["k"], watermarked=True)
    steps = []
    step = driver.machine.step
    driver.machine.step = lambda *args, **kwargs: steps.append(step(*args, **kwargs)) or steps[-1]
    first = pa.table({"k": ["a", "b", "c"], "id": [1, 2, 3], "t": [10, 10, 10], "x": [1.0, 2.0, 3.0]})
    driver.feed(first, watermark=12)
    later = pa.table(
        {"k": ["c", "a", "b", "c"], "id": [4, 5, 6, 7], "t": [5, 30, 7, 3], "x": [1.0, 1.0, 1.0, 1.0]},
        schema=SCHEMA,
    )
    driver.feed(later, watermark=12)
    assert steps[-1].late_rows == 3 and sorted(steps[-1].late_keys) == [("b",), ("c",)]  # each once
    assert all(s.late_keys == () for s in steps if not s.late_rows)
