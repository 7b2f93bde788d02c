"""The origin a dead-letter record gives a row set aside names the operator that set it aside and
its key: ``overWindow, key ...`` for the windows, ``GROUP BY, group ...`` for the GROUP BY stage of
windows over a GROUP BY, a key Spark computed shown as the expression written. No Spark session:
the worker-side step runs on pandas chunks as Spark hands them, its accumulators stand-ins."""

import pandas as pd
import pyarrow as pa
from accumulator_support import Accumulator

from overwindow.logical.bind import ERROR
from overwindow.logical.parse import parse_window
from overwindow.spark.counts import MachineCounts, Stage, _Sum, aside_records
from overwindow.spark.grouped import _GroupStep
from overwindow.streaming.aside import Aside
from overwindow.streaming.group_by import GroupBy


class _Replace:  # the dead letter's: a task run again replaces its records
    def zero(self, value):
        return {}

    def addInPlace(self, records, more):
        return {**records, **more}


def test_rows_the_group_by_stage_sets_aside_name_it_and_their_group():
    schema = pa.schema(
        [
            ("k", pa.string()),
            ("__ow_e0", pa.date32()),
            ("id", pa.int64()),
            ("x", pa.int64()),
            ("op", pa.string()),
        ]
    )
    machine = GroupBy(schema, ("k", "__ow_e0"), [parse_window("sum(x) OVER () AS s")], ("id",), "op")
    keep = Accumulator(_Replace())
    counts = MachineCounts(Accumulator(_Sum()), keep)
    stage = Stage("GROUP BY, group", {"__ow_e0": "to_date(ts)"})
    step = _GroupStep(machine, schema, (), counts, ("k", "__ow_e0"), stage)
    rows = pd.DataFrame(
        {"k": ["a", "b"], "__ow_e0": [None, None], "id": [1, 2], "x": [5, 6], "op": ["c", "zap"]}
    )
    done = step(7, None, [rows])
    assert len(done.aside) == 1 and counts.take() == (0, 0, 1)
    ((origin, reason, record),) = keep.value.values()
    assert origin == "GROUP BY, group k='b', to_date(ts)=None"
    assert reason == "no known operation 'zap' in op"
    assert "__ow_e0" not in record and '"id": 2' in record  # the user's columns


def test_rows_the_windows_set_aside_name_overwindow_and_their_key():
    aside = pa.table({"k": ["a"], "x": [1], ERROR: ["x / 0"]})
    ((origin, _, _),) = aside_records(Aside(aside, ["why"]), (3,), ("k",)).values()
    assert origin == "overWindow, key k='a'"
    ((origin, _, _),) = aside_records(Aside(aside, ["why"]), ("a",)).values()
    assert origin == "overWindow, key ('a',)"
