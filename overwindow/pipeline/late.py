"""Rows a view drops as late, found where they enter it (the source), so that its dead letter says
where each came from (the Kafka topic, partition and offset, or the file) and how far behind the
watermark it was. The rows still go on: the stateful step drops and counts them as before; the
source only names them.

Which rows are late follows the step that drops them, per micro-batch N, with Spark's watermark of
N (``batchWatermarkMs`` in the checkpoint's ``offsets/N``, written before N runs) and of N - 1:

- emit on window close: Spark drops, before the window step, every row at or below the watermark
  of micro-batch N - 1 (its watermark for late rows, with an event-time timeout); the machine drops
  nothing below that;
- emit on update: the machine drops every change below the watermark of N; on the chunked layout
  (``transformWithStateInPandas`` in event time) Spark also drops rows at or below that of N - 1.

A view of several windows chains stateful steps, each with a watermark of its own, and a remote
checkpoint (a URI) is not read by the workers: the view file's checks (``overwindow.pipeline.view``)
refuse ``late_rows = "dead_letter"`` there, and without a watermark, before a rule is made.

>>> reason(1_000_000, 61_500)  # a row at 1 s, the watermark at 61.5 s
'late: 1970-01-01T00:00:01.000Z is 1 min 0.5 s behind the watermark 1970-01-01T00:01:01.500Z'
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass

import numpy as np

from overwindow.pipeline.view import View
from overwindow.spark.adapter import END_OF_INPUT_MS


@dataclass(frozen=True)
class LateRule:
    """Which rows of a micro-batch the view's stateful step drops as late (module docstring): those
    below the micro-batch's watermark (``current``), and those at or below the previous one's
    (``previous``)."""

    checkpoint: str
    previous: bool
    current: bool

    @classmethod
    def of(cls, view: View) -> LateRule | None:
        """The view's rule, or None where its late rows are not kept (no ``[source] late_rows =
        "dead_letter"``; the view's checks refused it where they cannot be named)."""
        if view.source.get("late_rows") != "dead_letter":
            return None
        if view.emit == "on_window_close":
            return cls(os.path.abspath(view.checkpoint), previous=True, current=False)
        return cls(
            os.path.abspath(view.checkpoint), previous=view.spec.state_layout == "chunked", current=True
        )

    def late(self, times_us: np.ndarray, batch: int) -> tuple[np.ndarray, list[str]]:
        """(the positions of the late rows among event times ``times_us`` (UTC microseconds; NULL
        as int64's smallest, never late) of micro-batch ``batch``, a reason for each). O(rows)."""
        previous = _watermark(self.checkpoint, batch - 1) if self.previous and batch > 0 else None
        current = _watermark(self.checkpoint, batch) if self.current else None
        known = times_us != np.iinfo(np.int64).min
        late = np.zeros(len(times_us), dtype=bool)
        if previous:
            late |= known & (times_us <= previous * 1000)
        if current:
            late |= known & (times_us < current * 1000)
        at = np.flatnonzero(late)
        # the watermark a late row fell behind: the later one it is behind
        marks = [current if current and t < current * 1000 else previous for t in times_us[at]]
        return at, [reason(int(t), m) for t, m in zip(times_us[at], marks)]


_watermarks: dict[tuple, int | None] = {}  # (offsets file, its mtime) -> its watermark, per worker


def _watermark(checkpoint: str, batch: int) -> int | None:
    """Micro-batch ``batch``'s watermark in UTC milliseconds (None: none yet), from its offsets file
    (read once per worker while it is unchanged: ``--final`` plans a batch again, past the end)."""
    path = os.path.join(checkpoint, "offsets", str(batch))
    try:
        key = (path, os.stat(path).st_mtime_ns)
    except OSError:
        return None
    if key not in _watermarks:
        try:
            with open(path, encoding="utf-8") as f:
                f.readline()  # the log's version
                mark = json.loads(f.readline()).get("batchWatermarkMs") or None
        except (OSError, ValueError):
            mark = None
        if len(_watermarks) > 64:
            _watermarks.clear()
        _watermarks[key] = mark
    return _watermarks[key]


def reason(time_us: int, watermark_ms: int) -> str:
    """Why a row is late, and how late: ``late: <its time> is 3 min 2 s behind the watermark <W>``."""
    if watermark_ms >= END_OF_INPUT_MS:
        return f"late: {_text(time_us)} came after the end of the input (--once --final)"
    behind = watermark_ms * 1000 - time_us
    return (
        f"late: {_text(time_us)} is {duration(behind) if behind else 'at'} "
        f"{'behind ' if behind else ''}the watermark {_text(watermark_ms * 1000)}"
    )


def duration(micros: int) -> str:
    """A length of time as people read it.

    >>> duration(90_061_500_000), duration(2_500), duration(120_000_000)
    ('1 d 1 h 1 min 1.5 s', '0.0025 s', '2 min')
    """
    days, rest = divmod(micros, 86_400_000_000)
    hours, rest = divmod(rest, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = f"{rest / 1e6:.6f}".rstrip("0").rstrip(".")
    parts = [(days, "d"), (hours, "h"), (minutes, "min")]
    words = [f"{n} {unit}" for n, unit in parts if n] + ([f"{seconds} s"] if rest else [])
    return " ".join(words) or "0 s"


def _text(micros: int) -> str:
    """UTC microseconds as Spark writes a watermark: ``2024-03-15T13:30:00.000Z``."""
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    return moment.isoformat(timespec="milliseconds") + "Z"
