"""A view file's own window functions: grouped-aggregate ``pandas_udf``s its ``query`` calls by name.

A trusted view names each one in ``[view] functions`` as ``name = "module:attribute"``, the way a
Python entry point names an object, e.g. ``functions = { wavg = "plant_udfs:wavg" }`` over a file
``plant_udfs.py`` beside the view file holding ``@pandas_udf(DoubleType()) def wavg(v, w): ...``
(a return type as a DataType: the file is read before Spark starts, and PySpark reads one given as
text, ``"double"``, with Spark). The
job imports the module (the view file's folder first on the import path), checks that the object is
a grouped-aggregate pandas_udf (a function of pandas Series to a scalar, as Spark runs over a
window), joins it to overwindow's catalog under ``name`` when the file is read (so the query is
checked before Spark starts) and registers it in the job's Spark session (``spark.udf.register``),
as a user would in a session of their own before ``overwindow.sql``. A module from the view's folder
is pickled by value, so Spark's workers need not import it. Importing runs the module's code: only
a trusted view may name functions (``[view] trusted = true``).

>>> try:
...     load("/nowhere", "f", "math:sqrt")
... except ValueError as e:
...     print(e)
math:sqrt is not a pandas_udf (a function made by pyspark.sql.functions.pandas_udf)
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys

from overwindow.spark.pandas_udf import GROUPED_AGG, Conversions, register


def load(folder: str, name: str, target: str):
    """The pandas_udf ``target`` (``"module:attribute"``) names, imported with ``folder`` first on the
    import path, joined to overwindow's catalog as ``name``; ValueError saying why not. O(import)."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f'{target!r}: name the function as "module:attribute", e.g. "my_udfs:wavg"')
    sys.path.insert(0, folder)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"{target}: cannot import {module_name} ({e})") from None
    except Exception as e:  # PySpark reads a return type given as text ("double") with Spark's parser
        if "SESSION_OR_CONTEXT_NOT_EXISTS" not in str(e):
            raise
        raise ValueError(
            f"{target}: importing {module_name} needs a Spark session, which the view file is read "
            "before: give each pandas_udf's return type as a DataType (@pandas_udf(DoubleType())), not "
            'as text (@pandas_udf("double"))'
        ) from None
    finally:
        sys.path.remove(folder)
    found = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
    if found is None:
        raise ValueError(f"{target}: {module_name} has no {attribute}")
    if not hasattr(found, "evalType") or not hasattr(found, "func"):
        raise ValueError(
            f"{target} is not a pandas_udf (a function made by pyspark.sql.functions.pandas_udf)"
        )
    if found.evalType != GROUPED_AGG:
        raise ValueError(
            f"{target} is not a grouped-aggregate pandas_udf (pandas Series to a scalar): only those run "
            "over a window, in Spark as here"
        )
    from pyspark import cloudpickle
    from pyspark.serializers import CloudPickleSerializer

    source = getattr(module, "__file__", None) or ""
    if os.path.abspath(source).startswith(os.path.abspath(folder) + os.sep):
        cloudpickle.register_pickle_by_value(module)  # Spark's workers do not have the view's folder
    command = CloudPickleSerializer().dumps((found.func, found.returnType))
    arity = len(inspect.signature(found.func).parameters)
    registered = register(name, found.func, found.returnType, arity, command, Conversions())
    if registered != name.lower():
        raise ValueError(f"{name} is the name of one of overwindow's functions: give the pandas_udf another")
    return found
