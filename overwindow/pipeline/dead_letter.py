"""A view's dead letter: the bad records of its source (and, with ``late_rows = "dead_letter"``, its
late rows) and the rows its state machines set aside, kept in a folder with their reason, where they
came from and their raw text (``[source] dead_letter``). The tasks that parse the source hand them
over through an accumulator (``_keep_udf``), the driver writes them after each micro-batch
(``DeadLetter.write``). O(bad records) per micro-batch."""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import pandas as pd

from overwindow.logical.bind import failed_expression
from overwindow.pipeline.late import LateRule


class DeadLetter:
    """Bad records kept in a folder: per micro-batch that had any, one JSON Lines file
    ``batch-<id>.jsonl`` with an object per record, ``{"batch", "origin", "reason", "record"}``
    (``record``: the raw text; ``origin``: the file, or the Kafka topic, partition and offset).
    With a ``late`` rule (``overwindow.pipeline.late``) the records the view will drop as late are
    kept there too, with how late (they still go on to be dropped and counted).

    The tasks that parse the source hand bad records to the driver through an accumulator
    (``records``), keyed by (batch, partition, position), so a task that runs again replaces its
    records instead of adding them; the state machines hand over the rows they set aside (a row
    expression fails on their values) through the same accumulator, keyed by (batch, key,
    position), their origin ``overWindow, key ...`` (a GROUP BY stage's ``GROUP BY, group ...``);
    where Spark failed to compute an expression on such a row, its reason goes on with Spark's own
    error for it (``_in_spark_words``). ``write`` (called by the job in each micro-batch, after the
    batch ran) writes each batch's file whole under a temporary name and
    renames it, so a replayed batch rewrites the same file.
    The folder is a local path of the machine that runs the job. O(bad records) per batch.
    """

    def __init__(self, spark, folder: str, late: LateRule | None = None, schema=None):
        from pyspark.accumulators import AccumulatorParam

        class Collect(AccumulatorParam):
            def zero(self, value):
                return {}

            def addInPlace(self, a, b):
                a.update(b)
                return a

        self.folder, self.late, self.spark, self.schema = folder, late, spark, schema
        self.records = spark.sparkContext.accumulator({}, Collect())
        self.keep = _keep_udf(self.records, late)

    def write(self) -> dict[int, int]:
        """Writes the bad records collected since the last call; returns their count per batch id."""
        got, self.records.value = self.records.value, {}
        by_batch: dict[int, list] = {}
        asked: dict[tuple[str, str], str | None] = {}
        # the source's records (partition numbers) before the machines' (keys), each in order
        for (batch, _, _), (origin, reason, record) in sorted(got.items(), key=_batch_then_origin):
            reason = self._in_spark_words(reason, record, asked)
            by_batch.setdefault(batch, []).append(
                {"batch": batch, "origin": origin, "reason": reason, "record": record}
            )
        for batch, records in by_batch.items():
            os.makedirs(self.folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".batch-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            os.replace(tmp, os.path.join(self.folder, f"batch-{batch:08d}.jsonl"))
        return {batch: len(records) for batch, records in by_batch.items()}

    def _in_spark_words(self, reason: str, record: str, asked: dict) -> str:
        """``reason``, where it names an expression Spark failed to compute on the row, followed by
        Spark's own error for that row (``spark_error``): for the first ``SPARK_ERRORS_PER_WRITE``
        distinct rows of a write, one small Spark job each (bad rows are few; a flood of them is
        not asked about row by row)."""
        text = failed_expression(reason)
        if text is None or self.schema is None:
            return reason
        if (text, record) not in asked:
            if len(asked) >= SPARK_ERRORS_PER_WRITE:
                return reason
            from overwindow.spark.bind import spark_error

            asked[text, record] = spark_error(self.spark, text, record, self.schema)
        error = asked[text, record]
        return reason if error is None else f"{reason}: {error}"


SPARK_ERRORS_PER_WRITE = 20


def _batch_then_origin(item) -> tuple:
    (batch, where, n), _ = item
    return batch, isinstance(where, str), str(where) if isinstance(where, str) else where, n


def _keep_udf(records, late: LateRule | None = None):
    """A pandas UDF over (origin, reason, raw) that is true for good rows (reason NULL) and hands the
    bad ones to the accumulator ``records``; with a ``late`` rule, over (origin, reason, raw, event
    time), handing over the late rows too (true: they go on)."""
    from pyspark.sql.functions import pandas_udf

    if late is not None:

        @pandas_udf("boolean")
        def keep_late(origin: pd.Series, reason: pd.Series, raw: pd.Series, time: pd.Series) -> pd.Series:
            return _collect(records, origin, reason, raw, time, late)

        return keep_late

    @pandas_udf("boolean")
    def keep(origin: pd.Series, reason: pd.Series, raw: pd.Series) -> pd.Series:
        return _collect(records, origin, reason, raw)

    return keep


_task = {"attempt": None, "seen": 0}  # records the current task attempt has handed over so far


def _collect(records, origin, reason, raw, time=None, late: LateRule | None = None):
    """(in a Spark task) Adds the rows with a reason (and, with a ``late`` rule, the late rows among
    the others: ``time`` their event times) to ``records``, keyed by (batch id, partition, position
    within the task), and says which rows go on."""
    bad = reason.notna()
    if not bad.any() and late is None:
        return ~bad
    from pyspark import TaskContext

    task = TaskContext.get()
    batch = int(task.getLocalProperty("streaming.sql.batchId"))
    why = reason.where(bad, None).tolist()
    if late is not None:
        micros = time.to_numpy(dtype="datetime64[us]", na_value=np.datetime64("NaT")).astype(np.int64)
        at, reasons = late.late(np.where(bad.to_numpy(), np.iinfo(np.int64).min, micros), batch)
        for n, text in zip(at.tolist(), reasons):
            why[n] = text
    kept = [n for n, w in enumerate(why) if w is not None]
    if kept:
        if _task["attempt"] != task.taskAttemptId():
            _task.update(attempt=task.taskAttemptId(), seen=0)
        start, origins, texts = _task["seen"], origin.tolist(), raw.tolist()
        records.add(
            {
                (batch, task.partitionId(), start + i): (origins[n], why[n], texts[n])
                for i, n in enumerate(kept)
            }
        )
        _task["seen"] = start + len(kept)
    return ~bad
