"""Once in each Python worker that runs overwindow's ``Runner`` or reads its rows back
(``handback.decoded``): the objects its imports made, out of the garbage collector's way.

PySpark's daemon runs a full ``gc.collect()`` after every task a reused worker runs, and Python's own
collections of its oldest generation walk every tracked object as well. A worker that has imported
PySpark, pandas, pyarrow and overwindow tracks about 100,000 objects (the modules' functions,
classes, dicts): 50-60 ms a collection on this project's 2-core machine, 13% of all the Python
workers' sampled time on Nexmark's q19, 0.6% once frozen (docs/benchmarks/nexmark.md). They live as
long as the process, so ``gc.freeze`` moves them into a permanent generation no collection walks.
A frozen object is still freed when its last reference goes; only a reference cycle among frozen
objects stays for good, so the freeze happens once a process, when the worker unpickles a
``Runner`` (``adapter.Runner.__setstate__``: its imports done), before any rows, or first reads
rows back (a ``mapInArrow`` worker: pyarrow's and PySpark's 40,000 objects). What that first
unpickling is building is frozen with them: an ``applyInPandasWithState`` Runner is in no cycle
(freed as ever); a chunked layout's processor class, rebuilt by cloudpickle, is kept and reused by
the worker's later tasks (one class a process). O(1): ``gc.freeze`` moves lists.

>>> import gc
>>> freeze_imports()  # outside a Spark task (a driver, a test): nothing
>>> gc.get_freeze_count()
0
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_imports() -> None:
    """``gc.freeze()`` the first time it is called inside a Spark task's Python worker, else nothing."""
    global _frozen
    if _frozen:
        return
    from pyspark import TaskContext

    if TaskContext.get() is None:  # the driver, or a test unpickling a function: not a worker
        return
    gc.freeze()
    _frozen = True
