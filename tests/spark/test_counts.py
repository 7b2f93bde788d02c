"""The state machines' counts per micro-batch (overwindow.spark.counts): each micro-batch's counts
are its own whenever they are taken, and a task Spark runs again is counted once. The accumulator is
a stand-in merging as Spark's driver merges each finished task's counts."""

from accumulator_support import Accumulator

from overwindow.spark.counts import MachineCounts, _Sum


def _task(batch, stage, partition, attempt, late=0, unknown=0, aside=0):
    return {(batch, stage, partition, attempt): (late, unknown, aside)}


def test_each_batch_takes_its_own_counts_when_later_batches_have_run():
    counts = MachineCounts(Accumulator(_Sum()))
    counts.counted.add(_task(0, 1, 0, 10, late=2))
    counts.counted.add(_task(0, 1, 1, 11, unknown=1))
    counts.counted.add(_task(1, 3, 0, 12, late=5, aside=1))  # batch 1 ran before batch 0 was taken
    counts.add_aside(1, 4)  # rows set aside after the windows, on the driver
    assert counts.take(0) == (2, 1, 0)
    assert counts.take(1) == (5, 0, 5)
    assert counts.take(0) == counts.take(1) == counts.take() == (0, 0, 0)  # taken once


def test_a_task_run_again_counts_once_and_a_tasks_calls_add_up():
    counts = MachineCounts(Accumulator(_Sum()))
    for _ in range(3):  # one task's calls, one per key or bucket
        counts.counted.add(_task(7, 2, 0, 40, late=1))
    counts.counted.add(_task(7, 2, 0, 55, late=3))  # partition 0 run again (a retry): replaces
    counts.counted.add(_task(7, 2, 1, 41, late=1))
    counts.counted.add(_task(7, 4, 0, 42, aside=2))  # another stateful stage of the batch, partition 0
    assert counts.take(7) == (4, 0, 2)


def test_take_without_a_batch_takes_every_batch():
    counts = MachineCounts(Accumulator(_Sum()))
    counts.counted.add(_task(-1, 0, 0, 1, aside=2))  # a batch query: no micro-batch
    counts.counted.add(_task(3, 0, 0, 2, late=1))
    assert counts.take() == (1, 0, 2)


def test_counts_nobody_takes_stay_bounded_and_keep_the_newest_batches():
    counts = MachineCounts(Accumulator(_Sum()))
    for batch in range(60_000):  # a query without a progress line: nothing is ever taken
        counts.counted.add(_task(batch, 1, 0, batch, late=1))
    assert len(counts.counted.value) <= 50_000
    assert counts.take(59_999) == counts.take(59_900) == (1, 0, 0)
    many = MachineCounts(Accumulator(_Sum()))
    for batch in range(200):  # 600 tasks a micro-batch count something
        for partition in range(600):
            many.counted.add(_task(batch, 1, partition, batch * 600 + partition, aside=1))
        assert len(many.counted.value) <= 50_000
    assert many.take(199) == (0, 0, 600)
