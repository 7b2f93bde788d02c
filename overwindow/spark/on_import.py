"""Run a function once a module is imported, without importing it: how ``import overwindow`` adds
``overWindow`` to Spark Connect's DataFrames without importing Spark Connect.

Spark Connect's modules import grpc and protobuf, which a classic session never needs (and every
Python worker of a query imports overwindow). So
:func:`after_import` patches Connect's classes right away when Connect is imported already, and
otherwise at the moment something (``SparkSession.builder.remote(...)``, a user's own import)
imports it, through a finder on ``sys.meta_path`` that wraps that one module's loader.

>>> import sys, types
>>> seen = []
>>> after_import("json.tool", lambda module: seen.append(module.__name__))
>>> "json.tool" in sys.modules or seen == []
True
>>> import json.tool
>>> seen
['json.tool']
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable


def after_import(name: str, then: Callable) -> None:
    """Call ``then(module)`` once the module ``name`` has been imported: now if it is in
    ``sys.modules``, else right after its code first runs (before the importer sees it). Registering
    the same (name, then) twice calls it once. O(1) per import of any module while pending."""
    if name in sys.modules:
        then(sys.modules[name])
        return
    if any(isinstance(f, _AfterImport) and (f.name, f.then) == (name, then) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _AfterImport(name, then))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: on the import of its module, leaves ``sys.meta_path`` and returns the
    spec the other finders give, its loader wrapped to call ``then`` after the module's code ran."""

    def __init__(self, name: str, then: Callable):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # once, and not found again by the search below
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenLoader(spec.loader, self.then)
        return spec


class _ThenLoader(importlib.abc.Loader):
    """``loader``, calling ``then(module)`` after it ran the module's code; anything else asked of
    it (``get_source``, ``is_package``, resources) is the wrapped loader's."""

    def __init__(self, loader, then: Callable):
        self._loader, self._then = loader, then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._then(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)
