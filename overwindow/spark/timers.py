"""A grouping key's one event-time timer on ``transformWithStateInPandas``: a bucket of keys waits
for the watermark to reach its wakeup (window close's pending rows, a GROUP BY's earliest closing
time). Spark lists a key's timers only by iterating them, so the timer's time is kept beside it in
a value state and moved only when it changes. O(1) round trips to the JVM per move.

Used inside a StatefulProcessor (pyspark is imported only when one is built)::

    timer = BucketTimer(handle)     # in init
    timer.fired(expiredTimerInfo)   # in handleExpiredTimer
    timer.move(ms)                  # after a step: its wakeup in UTC ms, or None
"""

from __future__ import annotations


class BucketTimer:
    """The key's timer and its time (the value state ``timer``)."""

    def __init__(self, handle):
        from pyspark.sql.types import LongType, StructField, StructType

        self.handle = handle
        self.time = handle.getValueState("timer", StructType([StructField("ms", LongType())]))

    def fired(self, expired) -> None:
        """Spark has deleted the timer that fired (``expired``: its ExpiredTimerInfo)."""
        if (self.time.get() or (None,))[0] == expired.getExpiryTimeInMs():
            self.time.clear()

    def move(self, ms: int | None) -> None:
        """The timer at ``ms`` (None: none), moved only when it changes."""
        old = (self.time.get() or (None,))[0]
        if ms == old:
            return
        if old is not None:
            self.handle.deleteTimer(old)
        if ms is None:
            self.time.clear()
        else:
            self.handle.registerTimer(ms)
            self.time.update((ms,))
