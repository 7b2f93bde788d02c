"""Grouped-aggregate ``pandas_udf``s over windows: ``mean_udf("x").over(w)`` on a stream.

Spark runs a grouped-aggregate pandas UDF (``@pandas_udf("double")`` of ``pd.Series`` to a scalar)
over a window in batch, but refuses windows other than time windows on a stream. A Column holding
one is read here (``overwindow.spark.columns``): the UDF's Python function and declared type come
from the Column itself (Spark keeps them pickled by cloudpickle in the call, as it ships them to its
workers), and the function joins overwindow's catalog as a Python aggregate of whole frames
(:class:`PandasUdfAggregate`, under the UDF's name), which travels to the workers inside the spec as
every Python aggregate does. Per row, the function is called on its frame's slice of each argument,
converted to pandas and back exactly as Spark's Python worker converts them (its own conversion
functions, under the session's settings), an empty frame too; a frame on which it raises, or whose
value the declared type cannot hold, is a row set aside on a stream (``overwindow.streaming.aside``).

Frames: ROWS and RANGE, as Spark runs them (GROUPS, EXCLUDE and FILTER are refused, as Spark refuses
them). Cost: one call of the function per row whose value is (re)computed, on its frame's rows:
O(frame size) each, plus Spark's conversions; a whole-partition frame is one call per partition.

>>> from pyspark.sql.types import DoubleType
>>> agg = PandasUdfAggregate("m", lambda v: v.mean(), DoubleType(), 1)
>>> agg.results([1.5, float("nan"), None]).to_pylist()
[1.5, None, None]
>>> float(agg.frame(agg.inputs([pa.array([1.0, None, 4.0])]), 0, 3))
2.5
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.logical.functions import (
    ALIASES,
    BUILTINS,
    Accepts,
    FunctionInfo,
    Kind,
    Result,
    lookup,
    register_user_aggregate,
)
from overwindow.logical.functions import user_aggregate_class as registered

GROUPED_AGG = 202  # PySpark's PythonEvalType.SQL_GROUPED_AGG_PANDAS_UDF


@dataclass(frozen=True)
class Conversions:
    """The session's settings of Spark's pandas conversions, as its Python worker reads them."""

    timezone: str = "UTC"
    safecheck: bool = False
    int_extension: bool = False
    int_to_decimal: bool = False

    @staticmethod
    def of(spark=None) -> Conversions:
        """The settings of ``spark``'s session (the active one if not given; the defaults where
        there is none)."""
        if spark is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.getActiveSession()
        if spark is None:
            return Conversions()
        conf = spark.conf

        def flag(key: str) -> bool:
            try:  # the session's value, or Spark's own default of the setting
                return str(conf.get(key)).lower() == "true"
            except Exception:  # a setting this Spark does not have
                return False

        return Conversions(
            timezone=conf.get("spark.sql.session.timeZone"),
            safecheck=flag("spark.sql.execution.pandas.convertToArrowArraySafely"),
            int_extension=flag("spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype"),
            int_to_decimal=flag("spark.sql.execution.pythonUDF.pandas.intToDecimalCoercionEnabled"),
        )


@dataclass(frozen=True, eq=False)
class PandasUdfAggregate:
    """A grouped-aggregate pandas_udf as a Python aggregate of whole frames (the per-frame kernel,
    ``overwindow.physical.kernels.python_aggregate.per_frame``): ``function`` (pd.Series, ... ->
    scalar) of ``arity`` arguments, ``return_type`` Spark's declared type (a DataType). It keeps
    nothing between calls: the catalog's factory of it is itself."""

    name: str
    function: object
    return_type: object
    arity: int
    conversions: Conversions = Conversions()
    digest: str = ""  # of the pickled function: the same UDF read again is the same entry

    def __call__(self) -> PandasUdfAggregate:
        return self

    @property
    def result_type(self) -> pa.DataType:
        from pyspark.sql.pandas.types import to_arrow_type

        return to_arrow_type(self.return_type, timezone=self.conversions.timezone)

    def function_info(self, name: str) -> FunctionInfo:
        """Its catalog entry: ``arity`` arguments of any type whose NULLs stay in the frame (Spark
        hands the function every row), over ROWS or RANGE frames, no FILTER."""
        return FunctionInfo(
            name,
            Kind.AGGREGATE,
            (Accepts.ANY,) * self.arity,
            result=Result.USER,
            skips=(),
            frame_units=("ROWS", "RANGE"),
            filters=False,
            kind_words="the pandas_udf",
        )

    def inputs(self, arrays: list[pa.Array]) -> list:
        """The arguments as the pandas Series Spark's worker hands the function."""
        from pyspark.sql.conversion import ArrowBatchTransformer

        c = self.conversions
        table = pa.table({f"_{i}": a for i, a in enumerate(arrays)})
        return ArrowBatchTransformer.to_pandas(
            table, timezone=c.timezone, prefer_int_ext_dtype=c.int_extension
        )

    def frame(self, inputs: list, lo: int, hi: int):
        """The function's value over the frame ``[lo, hi)``: slices sharing the Series' memory, as
        Spark slices them."""
        return self.function(*(s.iloc[lo:hi] for s in inputs))

    def results(self, values: list) -> pa.Array:
        """The values as Spark's worker makes them an array of the declared type (NaN is NULL)."""
        import pandas as pd
        from pyspark.sql.conversion import PandasToArrowConversion
        from pyspark.sql.types import StructField, StructType

        if not values:
            return pa.array([], self.result_type)
        c = self.conversions
        schema = StructType([StructField("_0", self.return_type)])
        batch = PandasToArrowConversion.convert(
            [pd.Series(values)],
            schema,
            timezone=c.timezone,
            safecheck=c.safecheck,
            arrow_cast=True,
            int_to_decimal_coercion_enabled=c.int_to_decimal,
        )
        return batch.column(0)


def register(name: str, function, return_type, arity: int, command: bytes, conversions: Conversions) -> str:
    """Register the pandas_udf ``name`` in overwindow's catalog and return the name its calls use:
    ``name`` itself, unless a built-in or another function holds it (then ``name`` and a digest of
    the pickled function, ``command``). O(1).

    >>> from pyspark.sql.types import DoubleType
    >>> register("geo_mean", len, DoubleType(), 1, b"x", Conversions())
    'geo_mean'
    >>> register("geo_mean", max, DoubleType(), 1, b"y", Conversions())
    'geo_mean_a1fce4363854ff88'
    """
    digest = hashlib.sha256(command).hexdigest()[:16]
    for candidate in (name.lower(), f"{name.lower()}_{digest}"):
        held = registered(candidate)
        if held is not None and getattr(held, "digest", None) == digest:
            return candidate
        if held is None and not _builtin(candidate):
            register_user_aggregate(
                candidate, PandasUdfAggregate(candidate, function, return_type, arity, conversions, digest)
            )
            return candidate
    raise WindowSpecError(f"cannot name the pandas_udf {name!r} in overwindow's catalog")


def _builtin(name: str) -> bool:
    try:
        lookup(name)
    except WindowSpecError:
        return False
    return True


def from_classic(udaf) -> str | None:
    """The catalog name of a classic Spark ``PythonUDAF`` (PySpark 3.5: ``PythonUDF``) expression
    (through py4j) of a
    grouped-aggregate pandas_udf, registered from the function Spark holds pickled in it; None for
    another kind of Python aggregate. O(size of the pickled function)."""
    if udaf.evalType() != GROUPED_AGG:
        return None
    command = udaf.func().command()  # Spark 4: a Scala Seq of bytes; 3.5: a byte[] py4j hands as bytes
    command = bytes(command) if isinstance(command, (bytes, bytearray)) else bytes(command.unsafeArray())
    return _from_command(udaf.name(), command, udaf.children().size())


def from_connect(udf) -> str | None:
    """The catalog name of a Spark Connect ``CommonInlineUserDefinedFunction`` of a grouped-aggregate
    pandas_udf, registered from the function and declared type the client holds (it ships them to
    the server pickled, as classic PySpark ships them to its workers); None for another kind of
    Python function, or a type still in text. O(size of the pickled function)."""
    from pyspark.serializers import CloudPickleSerializer
    from pyspark.sql.types import DataType

    function = udf._function
    if getattr(function, "_eval_type", None) != GROUPED_AGG or not isinstance(
        function._output_type, DataType
    ):
        return None
    command = CloudPickleSerializer().dumps((function._func, function._output_type))
    arity = len(udf._arguments or ())
    return register(
        udf._function_name, function._func, function._output_type, arity, command, Conversions.of()
    )


def by_name(df, text: str) -> str:
    """``text`` (the SQL of a window column over ``df``) with each call of a function overwindow's
    catalog lacks looked up in Spark's session: one registered there as a grouped-aggregate
    pandas_udf (``spark.udf.register("wavg", wavg)``) joins the catalog (``register``) from the
    function Spark holds, its calls renamed where the catalog names it otherwise; any other Python
    UDF is refused by name; a name Spark does not know is left for the catalog to refuse. PySpark
    keeps no registry of its own on the driver, so Spark is asked: an analysis of one aggregate
    call per name (``SELECT wavg(x, w) FROM df``), no job. Classic Spark only (Spark Connect keeps
    the function on its server). O(calls) analyses.

    Example (``spark.udf.register("wavg", wavg)`` done)::

        by_name(events, "wavg(x, w) OVER (PARTITION BY k ORDER BY t ROWS 2 PRECEDING)")
    """
    from sqlglot import exp

    from overwindow.logical.expr import DIALECT, read_sql

    tree = read_sql(text)
    # a name the catalog holds as a user's aggregate is asked again: the session may have replaced it
    calls = [n for n in tree.find_all(exp.Anonymous) if n.name.lower() not in BUILTINS | ALIASES.keys()]
    if not calls or not hasattr(df, "_jdf"):
        return text
    for call in calls:
        name = _session_udaf(df, call)
        if name is not None and name != call.name:
            call.set("this", name)
    return tree.sql(dialect=DIALECT)


def _session_udaf(df, call) -> str | None:
    """The catalog name of the grouped-aggregate pandas_udf ``call`` (a sqlglot call, without its
    OVER) names in ``df``'s session, registered from Spark's analysis of it; None where Spark does
    not know the name; WindowSpecError for another kind of Python UDF."""
    from pyspark.errors import AnalysisException

    from overwindow.logical.expr import DIALECT
    from overwindow.spark import compat
    from overwindow.spark.columns import _seq

    try:
        plan = df.agg(compat.functions(df).expr(call.sql(dialect=DIALECT)))._jdf.queryExecution().analyzed()
    except AnalysisException:
        return None  # not a function of the session (the catalog refuses it), or not an aggregate
    found = [
        e
        for e in _walk(_seq(plan.expressions()))
        if e.getClass().getSimpleName() in ("PythonUDAF", "PythonUDF")
    ]
    if not found:
        return None
    name = from_classic(found[0]) if found[0].getClass().getSimpleName() == "PythonUDAF" else None
    if name is None:
        raise WindowSpecError(
            f"{call.name} is a Python UDF of Spark's session, not a grouped-aggregate pandas_udf (a "
            "pandas_udf of Series to a scalar): only those run over a window, in Spark as here"
        )
    return name


def _walk(expressions) -> list:
    """Every expression of ``expressions`` (py4j Catalyst expressions) and below, depth first."""
    from overwindow.spark.columns import _seq

    out = []
    for e in expressions:
        out.append(e)
        out += _walk(_seq(e.children()))
    return out


def _from_command(name: str, command: bytes, n_args: int) -> str:
    """Register the function and type pickled in ``command`` (PySpark's ``(function, returnType)``
    of a UDF). A command too large for the plan is a broadcast (over 1 MB): refused by name."""
    from pyspark.serializers import CloudPickleSerializer

    loaded = CloudPickleSerializer().loads(command)
    if not isinstance(loaded, tuple) or len(loaded) != 2:
        raise WindowSpecError(
            f"the pandas_udf {name} is shipped to Spark's workers as a broadcast (its pickled function "
            "is over 1 MB), which overwindow does not read; make its function smaller"
        )
    function, return_type = loaded
    return register(name, function, return_type, n_args, command, Conversions.of())
