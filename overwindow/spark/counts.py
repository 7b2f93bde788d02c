"""What the state machines count on Spark's workers, summed per micro-batch on the driver: rows
dropped as late, updates of unknown rows, rows set aside (and the rows set aside themselves, for the
dead letter, named by their stage and key).

Each task adds its counts under its micro-batch (the batch id Spark gives the micro-batch's jobs),
its stage and partition and its attempt; the driver takes a micro-batch's counts once its tasks are
done, one attempt per stage and partition, so a task Spark runs again is counted once and a later
micro-batch that has already run lends an earlier one nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from overwindow.logical.bind import source_columns
from overwindow.streaming.aside import dead_letter_records

_NO_TASK = (-1, -1, -1, -1)  # counted outside a Spark task: on the driver, or in a test
# counts nobody takes (a query without a progress line) are dropped past this many entries, down to
# the newest micro-batches' holding half as many, so that they never grow
_KEEP_ENTRIES = 50_000


def _task() -> tuple[int, int, int, int]:
    """(micro-batch, stage, partition, attempt) of the Spark task running here; the batch is -1
    outside a stream's micro-batch, all four outside a task."""
    from pyspark import TaskContext

    task = TaskContext.get()
    if task is None:
        return _NO_TASK
    batch = int(task.getLocalProperty("streaming.sql.batchId") or -1)
    return batch, task.stageId(), task.partitionId(), task.taskAttemptId()


class _Sum:
    """Spark's AccumulatorParam (``zero``, ``addInPlace``) for ``{(batch, stage, partition,
    attempt): (late, unknown, aside)}``: a task's counts add up under its own entry; past
    ``_KEEP_ENTRIES`` entries the oldest micro-batches' are dropped down to half as many. O(entries
    added), amortized.

    >>> _Sum().addInPlace({(3, 1, 0, 7): (1, 0, 0)}, {(3, 1, 0, 7): (1, 0, 2), (3, 1, 1, 8): (0, 1, 0)})
    {(3, 1, 0, 7): (2, 0, 2), (3, 1, 1, 8): (0, 1, 0)}
    """

    def zero(self, value):
        return {}

    def addInPlace(self, total, more):
        for entry, counts in more.items():
            had = total.get(entry)
            total[entry] = counts if had is None else tuple(a + b for a, b in zip(had, counts))
        if len(total) > _KEEP_ENTRIES:
            _drop_oldest(total, _KEEP_ENTRIES // 2)
        return total


def _drop_oldest(total: dict, keep: int) -> None:
    """Drops the entries of the oldest micro-batches of ``total``, keeping the newest batches'
    while they hold at most ``keep`` entries (the newest one whatever it holds). O(entries).

    >>> t = {(b, 0, p, 0): (1, 0, 0) for b in range(4) for p in range(3)}
    >>> _drop_oldest(t, 7); sorted({e[0] for e in t})
    [2, 3]
    """
    entries = list(total)  # a copy: the driver takes (pops) from the dict meanwhile
    per_batch = Counter(e[0] for e in entries)
    kept: set[int] = set()
    for batch in sorted(per_batch, reverse=True):
        if kept and per_batch[batch] > keep:
            break
        kept.add(batch)
        keep -= per_batch[batch]
    for entry in entries:
        if entry[0] not in kept:
            total.pop(entry, None)


class MachineCounts:
    """What the state machines drop, doubt or set aside, summed over a query's workers with one Spark
    accumulator: rows dropped as late (beside those Spark drops before them), updates of unknown
    rows, rows set aside (``Step.aside``), and, with ``keep``, the rows set aside themselves. The
    workers ``add``; the driver ``take``s a micro-batch's counts once it has run (for its progress
    line). A task run twice to success (speculation, a map stage resubmitted) is counted once: the
    latest attempt of each stage and partition (Spark merges no failed attempt's); kept rows are
    keyed by (batch, key, position), so a retry replaces them."""

    def __init__(self, counted, keep=None):
        self.counted, self.keep = counted, keep

    @classmethod
    def of(cls, session, keep=None) -> MachineCounts | None:
        """Counts for a query of ``session``; None on Spark Connect (no accumulators)."""
        try:
            sc = session.sparkContext
        except AttributeError:  # Spark Connect: no SparkContext (PySparkAttributeError)
            return None
        return cls(sc.accumulator({}, _Sum()), keep)

    def add(self, step, key, keys: tuple[str, ...] = (), stage: Stage | None = None) -> None:
        """On a worker: a step's counts (and, with ``keep``, its rows set aside) for ``key``, a
        bucket's number where ``keys`` names the partition key columns in its rows; ``stage``: the
        operator that set them aside, for their origin (None: the windows')."""
        late, unknown = step.late_rows, step.counters.unknown_updates
        aside = len(step.aside) if step.aside else 0
        if late or unknown or aside:
            self.counted.add({_task(): (late, unknown, aside)})
        if aside and self.keep is not None:
            self.keep.add(aside_records(step.aside, key, keys, stage or WINDOWS))

    def add_aside(self, batch: int, rows: int) -> None:
        """On the driver: ``rows`` of micro-batch ``batch`` set aside after the windows."""
        self.counted.add({(batch, *_NO_TASK[1:]): (0, 0, rows)})

    def take(self, batch: int | None = None) -> tuple[int, int, int]:
        """On the driver: (late rows, updates of unknown rows, rows set aside) counted in micro-batch
        ``batch`` (None: in every batch) and not taken yet. O(entries counted since the last take)."""
        counted = self.counted.value
        latest: dict[tuple, tuple] = {}
        # a copy: the accumulator's server thread adds to the dict while tasks end
        for entry, counts in counted.copy().items():
            if batch is None or entry[0] == batch:
                where, attempt = entry[:3], entry[3]
                if where not in latest or attempt > latest[where][0]:
                    latest[where] = (attempt, counts)
                counted.pop(entry, None)
        return tuple(sum(c[i] for _, c in latest.values()) for i in range(3))

    def __getstate__(self):
        return {"counted": self.counted, "keep": self.keep}

    def __setstate__(self, d):
        self.__init__(d["counted"], d["keep"])


class StageCounts:
    """The counts of a query's stateful stages taken together (a GROUP BY's, then its windows'):
    ``take`` sums theirs, rows set aside after the windows count in the last. O(stages).

    >>> class Stage:
    ...     def take(self, batch=None):
    ...         return (1, 0, 2)
    >>> StageCounts(Stage(), Stage()).take(3)
    (2, 0, 4)
    """

    def __init__(self, *stages):
        self.stages = stages

    @staticmethod
    def of(*stages):
        """The stages' counts taken together; None where no stage counts (Spark Connect)."""
        counting = [s for s in stages if s is not None]
        return StageCounts(*counting) if len(counting) > 1 else (counting[0] if counting else None)

    def take(self, batch: int | None = None) -> tuple[int, int, int]:
        taken = [stage.take(batch) for stage in self.stages]
        return tuple(sum(t[i] for t in taken) for i in range(3))

    def add_aside(self, batch: int, rows: int) -> None:
        self.stages[-1].add_aside(batch, rows)


def key_text(values, names: tuple[str, ...] = ()) -> str:
    """A partition key as people write it: numpy scalars as plain values, each named by its column
    where ``names`` are given.

    >>> import numpy as np
    >>> print(key_text((np.int64(3), "a")), "|", key_text(("NVDA", np.True_), ("symbol", "open")))
    (3, 'a') | symbol='NVDA', open=True
    """
    plain = tuple(v.item() if isinstance(v, np.generic) else v for v in values)
    if names:
        return ", ".join(f"{n}={v!r}" for n, v in zip(names, plain))
    return repr(plain)


@dataclass(frozen=True)
class Stage:
    """The operator rows are set aside in, as their dead-letter origin names it: its words before
    the key (``overWindow, key``, ``GROUP BY, group``) and the names its key columns are shown
    under (empty: the columns' own).

    >>> Stage("GROUP BY, group", {"__ow_e0": "to_date(ts)"}).label("__ow_e0")
    'to_date(ts)'
    """

    words: str
    names: dict = field(default_factory=dict)

    def label(self, column: str) -> str:
        return self.names.get(column, column)


WINDOWS = Stage("overWindow, key")


def aside_origin(aside, n: int, key, keys: tuple[str, ...], stage: Stage = WINDOWS) -> str:
    """Where the ``n``-th row set aside comes from: the stage and its partition key (a bucket's rows
    name their own)."""
    if keys:
        values = [aside.rows.column(k)[n].as_py() for k in keys]
        return f"{stage.words} {key_text(values, tuple(stage.label(k) for k in keys))}"
    return f"{stage.words} {key_text(key)}"


def aside_records(aside, key, keys: tuple[str, ...] = (), stage: Stage = WINDOWS) -> dict:
    """A step's rows set aside as dead-letter records: ``{(batch, origin, position): (origin,
    reason, the row as JSON)}``, the batch read from the running task; on a bucket of keys (``keys``:
    the key columns) each row's origin names its own partition key, in ``stage``'s words."""
    rows = aside.rows.select(source_columns(aside.rows.column_names)).to_pylist()  # the user's columns
    origins = [aside_origin(aside, n, key, keys, stage) for n in range(len(rows))]
    return dead_letter_records(_task()[0], rows, aside.reasons, origins)
