"""User-defined aggregates written in Python, callable from SQL text by name.

Write a class with ``create``, ``update`` and ``evaluate``; that is enough for every frame (the
naive path recomputes each frame). Add ``retract`` and frames slide (each row enters and leaves
once); add ``merge`` (without ``retract``) and a segment tree combines O(log n) partial states per
frame. ``update``/``retract`` receive a numpy array of the non-NULL values that pass FILTER; states
must not be mutated by ``merge``.

>>> import numpy as np
>>> class GeoMean(Aggregate):
...     result_type = pa.float64()
...     def create(self): return (0.0, 0)
...     def update(self, s, v): return (s[0] + float(np.log(v).sum()), s[1] + len(v))
...     def retract(self, s, v): return (s[0] - float(np.log(v).sum()), s[1] - len(v))
...     def evaluate(self, s): return float(np.exp(s[0] / s[1])) if s[1] else None
>>> register_aggregate("geomean", GeoMean)
"""

from __future__ import annotations

import pyarrow as pa

from overwindow.logical.functions import register_user_aggregate


class Aggregate:
    """Base class of Python aggregates. ``result_type``: the Arrow type of results (None: inferred)."""

    result_type: pa.DataType | None = None

    def create(self):
        raise NotImplementedError

    def update(self, state, values):
        raise NotImplementedError

    def evaluate(self, state):
        raise NotImplementedError


def register_aggregate(name: str, cls: type) -> None:
    """Make ``name(x) OVER (...)`` usable in SQL text. ``cls()`` must build an Aggregate."""
    for method in ("create", "update", "evaluate"):
        if not callable(getattr(cls, method, None)) or getattr(cls, method) is getattr(Aggregate, method):
            raise TypeError(f"aggregate {name!r} needs a {method}() method")
    register_user_aggregate(name, cls)
