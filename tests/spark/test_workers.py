"""overwindow.spark.workers: the freeze of a Python worker's imports, without starting Spark (a task
context stands in for the worker's)."""

import gc
import weakref

import pyarrow as pa
import pytest
from pyspark import TaskContext, cloudpickle

from overwindow import OverWindow
from overwindow.spark import workers
from overwindow.spark.adapter import Runner


@pytest.fixture
def unfrozen(monkeypatch):
    assert gc.get_freeze_count() == 0  # nothing else in this process freezes
    monkeypatch.setattr(workers, "_frozen", False)
    yield
    gc.unfreeze()  # this test process collects as before


@pytest.fixture
def in_a_task(monkeypatch):
    monkeypatch.setattr(TaskContext, "get", classmethod(lambda cls: object()))


def _runner():
    spec = OverWindow("sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS s", emit="on_update")
    schema = pa.schema([("k", pa.string()), ("t", pa.int64()), ("x", pa.float64())])
    return Runner(spec, schema, False)


def test_a_worker_unpickling_a_runner_freezes_what_it_tracks_once(unfrozen, in_a_task):
    pickled = cloudpickle.dumps(_runner())
    tracked = len(gc.get_objects())
    run = cloudpickle.loads(pickled)  # as the worker does with each task's function
    frozen = gc.get_freeze_count()
    assert frozen >= tracked * 0.9 and not gc.get_objects(generation=2)
    young = [[]]  # tracked after the freeze; a second one would move it out of every generation
    run = cloudpickle.loads(pickled)  # the next task's (frozen objects of the first may go)
    assert gc.get_freeze_count() <= frozen and any(o is young for o in gc.get_objects())
    assert run.machine is not None


def test_outside_a_task_nothing_is_frozen(unfrozen):
    cloudpickle.loads(cloudpickle.dumps(_runner()))
    assert gc.get_freeze_count() == 0 and not workers._frozen


def test_objects_made_after_the_freeze_are_collected_as_ever(unfrozen, in_a_task):
    class Node:
        pass

    workers.freeze_imports()
    cycle = Node()
    cycle.me = cycle
    ref = weakref.ref(cycle)
    del cycle
    gc.collect()
    assert ref() is None


def test_a_runner_frozen_as_a_worker_unpickles_it_is_freed_with_its_machine(unfrozen, in_a_task):
    """What freezing while the Runner is unpickled relies on: no reference cycle holds a Runner or
    its machine, so they go with their last reference, collector or not."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        run = cloudpickle.loads(cloudpickle.dumps(_runner()))
        assert workers._frozen and any(o is run for o in gc.get_objects()) is False
        refs = weakref.ref(run), weakref.ref(run.machine)
        del run
        assert [r() for r in refs] == [None, None]
    finally:
        if enabled:
            gc.enable()
