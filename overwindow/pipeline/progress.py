"""One progress line per micro-batch, from Spark's StreamingQueryListener."""

from __future__ import annotations

import sys

from pyspark.sql.streaming import StreamingQueryListener


def bad_records(p) -> int:
    """Source records of the batch that were not records of the view's schema (dropped, counted)."""
    metrics = (p.observedMetrics or {}).get("overwindow_source")
    return int(metrics["bad_records"] or 0) if metrics is not None else 0


def null_event_times(p) -> int:
    """Bad records of the batch whose event time (the watermark column) was NULL."""
    metrics = (p.observedMetrics or {}).get("overwindow_source")
    return int(metrics.asDict().get("null_event_times") or 0) if metrics is not None else 0


def progress_line(p, rows_out: int | str | None) -> str:
    """``batch 3: 1,200 rows in, 1,180 out, watermark 2024-01-01T10:00:00Z, 4 keys (2.1 MB) in state,
    0 late, 0.84 s`` (and ``, 2 bad records`` when a Kafka batch had values that are not records)."""
    state_keys = sum(op.numRowsTotal for op in p.stateOperators)
    state_bytes = sum(op.memoryUsedBytes for op in p.stateOperators)
    late = sum(op.numRowsDroppedByWatermark for op in p.stateOperators)
    watermark = (p.eventTime or {}).get("watermark", "-")
    seconds = (p.batchDuration or 0) / 1000
    out = "?" if rows_out is None else rows_out if isinstance(rows_out, str) else f"{rows_out:,}"
    bad, null_times = bad_records(p), null_event_times(p)
    return (
        f"batch {p.batchId}: {p.numInputRows:,} rows in, {out} out, watermark {watermark}, "
        f"{state_keys:,} keys ({state_bytes / 1e6:.1f} MB) in state, {late:,} late, {seconds:.2f} s"
        + (f", {bad:,} bad records" if bad else "")
        + (f" ({null_times:,} with a NULL event time)" if null_times else "")
    )


class ProgressPrinter(StreamingQueryListener):
    """Prints a progress line for every micro-batch of the query it watches."""

    def __init__(self, rows_out: dict, stream=None):
        self.rows_out = rows_out  # batch id -> rows the sink wrote, filled by the sink
        self.stream = stream  # None: sys.stdout at the time of printing
        self.query_id = None
        self.last_batch = -1  # the last batch id printed

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        p = event.progress
        if self.query_id is not None and str(p.id) != self.query_id:
            return
        print(
            progress_line(p, self.rows_out.pop(p.batchId, None)), file=self.stream or sys.stdout, flush=True
        )
        self.last_batch = p.batchId

    def drain(self, query, timeout: float = 5.0) -> None:
        """Wait (briefly) until the progress of the query's last batch is printed: Spark delivers
        listener events asynchronously, after awaitTermination may have returned."""
        import time

        last = query.lastProgress
        deadline = time.time() + timeout
        while last is not None and self.last_batch < last["batchId"] and time.time() < deadline:
            time.sleep(0.05)

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        pass
