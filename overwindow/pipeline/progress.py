"""Progress per micro-batch, from Spark's StreamingQueryListener: a line for people, or (``--progress
json``) one JSON object per line for monitoring.

Counts the job keeps itself (bad records, ...) come from observed metrics whose name starts with
``overwindow`` (``df.observe("overwindow_source", ...)``), summed by field name, so a source that
observes a new count shows up in the JSON without a change here.
"""

from __future__ import annotations

import json
import sys
import threading

from pyspark.sql.streaming import StreamingQueryListener

NO_WATERMARK = "1970-01-01T00:00:00.000Z"  # what Spark reports before the first watermark


def observed(p) -> dict[str, int]:
    """The job's own counts in a progress (observed metrics named ``overwindow...``), by field."""
    counts: dict[str, int] = {}
    for name, row in (p.observedMetrics or {}).items():
        if not name.startswith("overwindow"):
            continue
        for field, value in row.asDict().items():
            if value is None or isinstance(value, (int, float)):
                counts[field] = counts.get(field, 0) + int(value or 0)
    return counts


def bad_records(p) -> int:
    """Source records of the batch that were not records of the view's schema (dropped, counted)."""
    return observed(p).get("bad_records", 0)


def null_event_times(p) -> int:
    """Bad records of the batch whose event time (the watermark column) was NULL."""
    return observed(p).get("null_event_times", 0)


def progress_record(
    p, rows_out: int | str | None, machine: tuple[int, int, int] = (0, 0, 0), lost: list | None = None
) -> dict:
    """A micro-batch's progress as a flat dict (the JSON form): rows in and out, late rows (Spark's
    and the state machines', ``machine[0]``), bad records, updates of unknown rows (``machine[1]``),
    rows the state machines set aside (``machine[2]``), the files listed for the batch but deleted
    before Spark read them (``lost``), keys and bytes in state, the watermark (None before the
    first), durations in milliseconds."""
    watermark = (p.eventTime or {}).get("watermark")
    counts = observed(p)
    return {
        "batch": p.batchId,
        "timestamp": p.timestamp,
        "rows_in": p.numInputRows,
        "rows_out": rows_out,
        "late": sum(op.numRowsDroppedByWatermark for op in p.stateOperators) + machine[0],
        "bad": counts.get("bad_records", 0),
        "null_event_times": null_event_times(p),
        "unknown_updates": machine[1],
        "set_aside": machine[2],
        "lost_files": list(lost or []),
        "counts": counts,
        "state_keys": sum(op.numRowsTotal for op in p.stateOperators),
        "state_bytes": sum(op.memoryUsedBytes for op in p.stateOperators),
        "watermark": None if watermark in (None, NO_WATERMARK) else watermark,
        "batch_ms": p.batchDuration,
        "durations_ms": dict(p.durationMs or {}),
    }


def progress_line(
    p,
    rows_out: int | str | None,
    machine: tuple[int, int, int] = (0, 0, 0),
    unit: str = "keys",
    lost: list | None = None,
) -> str:
    """``batch 3: 1,200 rows in, 1,180 out, watermark 2024-01-01T10:00:00Z, 4 keys (2.1 MB) in state,
    0 late, 0.84 s`` (and ``, 2 bad records (1 with a NULL event time)`` when a batch had records
    that are not rows, ``, 1 updates of unknown rows`` when emit on update met some, ``, 3 rows set
    aside`` when the state machines set rows aside). ``machine``: (rows late, updates of unknown
    rows, rows set aside) the state machines counted in the batch; their late rows join Spark's.
    ``unit``: what a state entry holds, ``keys`` or ``key buckets`` (``keyBuckets``)."""
    r = progress_record(p, rows_out, machine, lost)
    out = "?" if rows_out is None else rows_out if isinstance(rows_out, str) else f"{rows_out:,}"
    return (
        f"batch {r['batch']}: {r['rows_in']:,} rows in, {out} out, watermark {r['watermark'] or 'none'}, "
        f"{r['state_keys']:,} {unit} ({r['state_bytes'] / 1e6:.1f} MB) in state, {r['late']:,} late, "
        f"{(r['batch_ms'] or 0) / 1000:.2f} s"
        + (f", {r['bad']:,} bad records" if r["bad"] else "")
        + (f" ({r['null_event_times']:,} with a NULL event time)" if r["null_event_times"] else "")
        + (f", {r['unknown_updates']:,} updates of unknown rows" if r["unknown_updates"] else "")
        + (f", {r['set_aside']:,} rows set aside" if r["set_aside"] else "")
        + (
            f", {len(r['lost_files'])} file(s) lost (deleted before Spark read them)"
            if r["lost_files"]
            else ""
        )
    )


class ProgressPrinter(StreamingQueryListener):
    """Prints the progress of every micro-batch of the query it watches, once each, in batch order;
    ``json``: one JSON object per line (with ``view``, the view's name, and ``kafka_reader``: which
    Kafka reader reads the source, ``spark`` or ``python``, null for files); ``name``: a prefix for
    lines (several views in one job). The job ``poll``s it as it waits for its queries: Spark hands
    listeners their events late, out of step with the batches, and a listener removed when the query
    ends never hears of the rest (with several views most lines were lost); registered as a
    listener it prints as events come. ``counts``: the state machines' counts, each line taking its
    own batch's (a line printed after later batches have run too)."""

    def __init__(
        self,
        rows_out: dict,
        stream=None,
        json_lines: bool = False,
        name: str | None = None,
        counts=None,
        unit: str = "keys",
        kafka_reader: str | None = None,
        lost: dict | None = None,
    ):
        self.rows_out = rows_out  # batch id -> rows the sink wrote, filled by the sink
        self.lost = lost if lost is not None else {}  # batch id -> files lost, filled by the job
        self.counts = counts  # the state machines' counts (overwindow.spark.counts.MachineCounts)
        self.unit = unit  # what a state entry holds: keys, or key buckets
        self.stream = stream  # None: sys.stdout at the time of printing
        self.json_lines = json_lines
        self.name = name
        self.kafka_reader = kafka_reader
        self.query_id = None
        self.last_batch = -1  # the last batch id printed
        self._printing = threading.Lock()  # a listener's events and ``poll`` may print at once

    def say(self, text: str) -> None:
        """A line about the view that is no micro-batch's progress (none in JSON progress)."""
        if not self.json_lines:
            print((f"{self.name}: " if self.name else "") + text, file=self.stream or sys.stdout, flush=True)

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        p = event.progress
        if self.query_id is not None and str(p.id) != self.query_id:
            return
        self._print(p)

    def poll(self, query) -> None:
        """Prints the progress of the query's batches not printed yet (Spark keeps the last 100),
        in order. O(progresses kept)."""
        for p in sorted(map(_progress, query.recentProgress), key=lambda p: p.batchId):
            self._print(p)

    def poll_new(self, query) -> None:
        """``poll``, when the query's last progress is of a batch not printed yet. O(1) otherwise."""
        last = query.lastProgress
        if last is not None and last["batchId"] > self.last_batch:
            self.poll(query)

    def _print(self, p) -> None:
        if not ran_a_batch(p.durationMs):
            return
        with self._printing:
            if p.batchId > self.last_batch:  # else printed already (or an older batch's event, late)
                self._print_new(p)

    def _print_new(self, p) -> None:
        machine = self.counts.take(p.batchId) if self.counts is not None else (0, 0, 0)
        rows_out = self.rows_out.pop(p.batchId, None)
        lost = self.lost.get(p.batchId)
        if self.json_lines:
            text = json.dumps(
                {
                    "view": self.name,
                    "kafka_reader": self.kafka_reader,
                    **progress_record(p, rows_out, machine, lost),
                }
            )
        else:
            text = (f"{self.name}: " if self.name else "") + progress_line(
                p, rows_out, machine, self.unit, lost
            )
        print(text, file=self.stream or sys.stdout, flush=True)
        self.last_batch = p.batchId

    def drain(self, query, timeout: float = 5.0) -> None:
        """Print what is left of the query's progress: as a listener, wait (briefly) until Spark
        delivered the last batch's event, then print whatever it did not."""
        import time

        ran = [p for p in query.recentProgress if ran_a_batch(p["durationMs"])]
        deadline = time.time() + timeout
        while ran and self.last_batch < ran[-1]["batchId"] and time.time() < deadline:
            time.sleep(0.05)
        self.poll(query)

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        pass


def ran_a_batch(durations: dict | None) -> bool:
    """Whether a progress (its ``durationMs``) is of a micro-batch that ran: a trigger that found
    nothing to read has a progress too, with no batch (its id is the next batch's), never printed."""
    return "addBatch" in (durations or {})


def _progress(p):
    """A query's progress as PySpark's StreamingQueryProgress (PySpark 3.5's ``recentProgress`` holds
    plain dicts; 4's progress is a dict too, with the attributes)."""
    if type(p) is dict:
        from pyspark.sql.streaming.listener import StreamingQueryProgress

        return StreamingQueryProgress.fromJson(p)
    return p
