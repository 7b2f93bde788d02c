"""Rows across the pandas boundary of Spark's stateful operators: the pandas chunks a UDF receives as
Arrow tables, with NaN and NULL kept apart and BIGINT values whole (Spark's pandas conversion makes
both NaN, and a BIGINT column holding a NULL float64: see :class:`Companion`), and the Spark types
of what the operators hand back (as Arrow: ``overwindow.spark.handback``).

The only module that relies on pandas internals (``DataFrame._get_column_array``): it saves more
than the conversion itself costs on the few hundred rows a key gets per call. It has a public
fallback, taken when the internal is missing or when ``PANDAS_INTERNALS`` is False (tests force it
so and compare).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import zoneinfo
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.physical.values import INTERVAL_DAY
from overwindow.spark import compat

# False: take only the public pandas API (the fallback every internal has)
PANDAS_INTERNALS = True


class Companion(NamedTuple):
    """A column whose values Spark's pandas conversion cannot carry whole, and the column Spark adds
    beside it so that they arrive whole: a DOUBLE/FLOAT column arrives as float64 with NULL and NaN
    both NaN (``kind == "nan"``: the companion is ``isnan(column)``); a BIGINT column holding a NULL
    arrives as float64, exact only to 2**53 (``kind == "value"``: the companion is
    ``coalesce(column, 0)``, a BIGINT never NULL)."""

    column: str
    name: str
    kind: str


def companions_of(schema: pa.Schema) -> tuple[Companion, ...]:
    """The companions the nullable DOUBLE, FLOAT and BIGINT columns of ``schema`` need. O(columns).

    >>> schema = pa.schema([("x", pa.float64()), ("n", pa.int64()), ("s", pa.string())])
    >>> [tuple(c) for c in companions_of(schema)]
    [('x', '__overwindow_whole_0', 'nan'), ('n', '__overwindow_whole_1', 'value')]
    """
    found = []
    for f in schema:
        if f.nullable and (pa.types.is_floating(f.type) or pa.types.is_int64(f.type)):
            kind = "nan" if pa.types.is_floating(f.type) else "value"
            found.append(Companion(f.name, f"__overwindow_whole_{len(found)}", kind))
    return tuple(found)


def check_session_time_zone(df) -> None:
    """Check the session time zone (``spark.sql.session.timeZone``) of the DataFrame ``df``, in
    which Spark's pandas conversion hands TIMESTAMP values to Python as wall-clock times and reads
    them back. Refused with a WindowSpecError where ``df`` has a TIMESTAMP (TIMESTAMP_NTZ is not
    converted), also inside a struct, array or map, and the zone is not UTC at every instant: where
    the offset changes (daylight saving) an autumn hour repeats, so two instants become one
    wall-clock time (rows leave their order, a carried value moves by an hour) and an INTERVAL frame
    across the spring change spans an hour more than Spark's; under any other offset, a timestamp's
    seconds since 1970 (``CAST(ts AS BIGINT)``, ``unix_timestamp``) would be read off the wall
    clock. Either would be silently wrong. O(columns).

    >>> utc_always("UTC"), utc_always("+00:00"), utc_always("+05:30"), utc_always("America/New_York")
    (True, True, False, False)
    """
    tz = df.sparkSession.conf.get("spark.sql.session.timeZone")
    if _zoned(df.schema) and not utc_always(tz):
        raise WindowSpecError(
            f"the session time zone is {tz}: Spark hands a stream's TIMESTAMP values to Python as "
            "wall-clock times of that zone, where overwindow reads instants (an hour repeats where "
            "the offset falls back, so rows would change order and values); set "
            "spark.sql.session.timeZone to UTC for this query (the view job runs in UTC)"
        )


def _zoned(t) -> bool:
    """Whether the Spark type ``t`` is or holds a TIMESTAMP (with the session's zone)."""
    from pyspark.sql.types import ArrayType, MapType, StructType, TimestampType

    if isinstance(t, StructType):
        return any(_zoned(f.dataType) for f in t.fields)
    if isinstance(t, ArrayType):
        return _zoned(t.elementType)
    if isinstance(t, MapType):
        return _zoned(t.keyType) or _zoned(t.valueType)
    return isinstance(t, TimestampType)


@functools.lru_cache(maxsize=64)
def utc_always(tz: str) -> bool:
    """Whether the time zone ID ``tz`` (as Spark reads it: a region, ``UTC``, ``+00:00``, ``GMT``)
    is UTC at every instant: a zero offset, or a region whose offset is zero in every month from
    1900 to 2100. O(1) after the first call per zone."""
    zero = r"[+-]0{1,2}(:?00){0,2}"
    if re.fullmatch(
        rf"(?i)(Z|UTC|GMT|UT)?({zero})?|(Etc/)?(UTC|GMT|UCT|Zulu|Universal|Greenwich)([+-]0)?", tz
    ):
        return True
    try:
        zone = zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False  # a zone Python does not know: treated as one that may not be UTC
    months = (dt.datetime(y, m, 1, tzinfo=zone) for y in range(1900, 2101) for m in range(1, 13))
    return all(d.utcoffset() == dt.timedelta(0) for d in months)


def spark_type(t: pa.DataType):
    """The Spark type of an output column of Arrow type ``t``: PySpark's own mapping (a naive
    timestamp is Spark's TIMESTAMP, as in the input), but an INTERVAL DAY (``INTERVAL_DAY``: Arrow's
    duration says no interval fields, which PySpark reads as DAY TO SECOND) is Spark's INTERVAL DAY.
    O(1).

    >>> spark_type(pa.duration("s")), spark_type(pa.duration("us"))
    (DayTimeIntervalType(0, 0), DayTimeIntervalType(0, 3))
    """
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import DayTimeIntervalType

    if t == INTERVAL_DAY:
        return DayTimeIntervalType(DayTimeIntervalType.DAY, DayTimeIntervalType.DAY)
    return from_arrow_type(t, prefer_timestamp_ntz=False)


def with_interval_days(df, output: pa.Schema):
    """``df``, the output of a stateful operator whose rows have the Arrow schema ``output``, with its
    INTERVAL DAY columns as Spark's INTERVAL DAY. Spark reads every Arrow duration a Python UDF
    returns as an INTERVAL DAY TO SECOND (its check of the returned Arrow schema refuses any other
    day-time interval type), so the operator returns them so and a projection after it casts them
    (exact: they hold whole days). O(columns) to plan; the cast costs Spark O(rows)."""
    from pyspark.sql import functions as F

    days = [f.name for f in output if f.type == INTERVAL_DAY]
    if not days:
        return df
    return df.withColumns({name: F.col(f"`{name}`").cast(spark_type(INTERVAL_DAY)) for name in days})


def to_arrow(frame: pd.DataFrame, schema: pa.Schema, companions: tuple[Companion, ...] = ()) -> pa.Table:
    """A UDF's pandas chunk as Arrow, column by column. O(rows).

    Spark builds a fresh frame per key and call (``pd.concat`` of one Series per column), and on such
    a frame ``frame[name]`` costs ~20 us a column building a Series, ``pa.Table.from_pandas`` ~0.2 ms
    in metadata handling: more than the conversion of the few hundred rows a key gets. So columns are
    read by position with pandas' ``_get_column_array`` (internal, in pandas 1.3 to 2.x; the public
    path where it is missing or names repeat), numpy-typed ones as numpy (a naive timestamp column's
    DatetimeArray converts three times faster so).

    >>> s = pa.schema([("t", pa.timestamp("us")), ("x", pa.float64())])
    >>> to_arrow(pd.DataFrame({"x": [1.5], "t": pd.to_datetime(["2024-01-01"])}), s).to_pylist()
    [{'t': datetime.datetime(2024, 1, 1, 0, 0), 'x': 1.5}]
    """
    # the companions are the frame's last columns (Spark does not keep their names in every version)
    columns = tuple(frame.columns)
    data = columns[: len(columns) - len(companions)]
    get = getattr(frame, "_get_column_array", None) if PANDAS_INTERNALS else None
    found = _positions(data, tuple(schema.names)) if get is not None else None
    if found is None:
        arrays = [frame[f.name].to_numpy() for f in schema]
        extras = [frame.iloc[:, i].to_numpy() for i in range(len(data), len(columns))]
    else:
        arrays = [get(i) for i in found]
        extras = [get(i) for i in range(len(data), len(columns))]
    whole = {c.column: (c.kind, np.asarray(extra)) for c, extra in zip(companions, extras)}
    return pa.Table.from_arrays(
        [_column(a, f, whole.get(f.name)) for a, f in zip(arrays, schema)], schema=schema
    )


def _column(values, field: pa.Field, whole: tuple[str, np.ndarray] | None) -> pa.Array:
    """One column of a UDF's pandas chunk as Arrow, as Spark held it: pandas' NaN read as NULL, but
    where a companion (``whole``: its kind and values) says a NaN was a NaN, or gives the exact
    values of a BIGINT column pandas read as float64. O(rows).

    >>> x = pa.field("x", pa.float64())
    >>> _column(np.array([1.0, np.nan, np.nan]), x, ("nan", np.array([0, 1, 0], bool))).to_pylist()
    [1.0, nan, None]
    >>> n = pa.field("n", pa.int64())
    >>> _column(np.array([np.nan, 2.0**63]), n, ("value", np.array([0, 2**63 - 1]))).to_pylist()
    [None, 9223372036854775807]
    """
    if isinstance(values.dtype, np.dtype):
        values = np.asarray(values)
    if whole is not None and whole[0] == "value" and values.dtype.kind == "f":  # a NULL made it float64
        return pa.array(whole[1], type=field.type, mask=np.isnan(values))
    column = pa.array(values, type=field.type, from_pandas=True)
    if whole is not None and whole[0] == "nan" and whole[1].any():
        return pc.if_else(whole[1], pa.scalar(float("nan"), field.type), column)
    return column


@functools.lru_cache(maxsize=64)
def _positions(columns: tuple, names: tuple) -> tuple[int, ...] | None:
    """Where each of ``names`` is among a frame's ``columns`` (None if some name repeats). A column
    Spark renamed by its position (transformWithStateInPandas hands a column named ``__x`` as
    ``_<position>``) is found at its position.

    >>> _positions(("k", "_1"), ("k", "__ow_e0"))
    (0, 1)
    """
    index = pd.Index(columns)
    if not index.is_unique:
        return None
    found = index.get_indexer(names).tolist()
    found = [j if i < 0 and j < len(columns) and columns[j] == f"_{j}" else i for j, i in enumerate(found)]
    if -1 in found:
        raise KeyError(f"columns {[n for n, i in zip(names, found) if i < 0]} missing from {list(columns)}")
    return tuple(found)


def arrow_schema(struct) -> pa.Schema:
    """Arrow schema of the pandas frames a UDF receives: timestamps are session wall-clock, tz-naive;
    an INTERVAL DAY is ``INTERVAL_DAY`` (Spark's Arrow type of it says DAY TO SECOND), so that what
    the machines compute of it is Spark's INTERVAL DAY too (``lag`` of it)."""
    from pyspark.sql.types import DayTimeIntervalType

    schema = compat.to_arrow_schema(struct)
    days = {
        f.name
        for f in struct.fields
        if isinstance(f.dataType, DayTimeIntervalType) and f.dataType.endField == DayTimeIntervalType.DAY
    }
    return pa.schema(
        [
            pa.field(
                f.name,
                INTERVAL_DAY
                if f.name in days
                else pa.timestamp(f.type.unit)
                if pa.types.is_timestamp(f.type)
                else f.type,
                f.nullable,
            )
            for f in schema
        ]
    )


def output_struct(input_struct, output: pa.Schema):
    """Spark schema of the output: input fields as they are, then each other column's type (a naive
    timestamp is Spark's TIMESTAMP, as in the input); an INTERVAL DAY (``INTERVAL_DAY``) as Spark
    reads a Python UDF's durations, DAY TO SECOND (``with_interval_days`` casts it back)."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    given = {f.name: f for f in input_struct.fields}
    return StructType(
        [
            given[f.name]
            if f.name in given and f.type != INTERVAL_DAY
            else StructField(f.name, from_arrow_type(f.type, prefer_timestamp_ntz=False), True)
            for f in output
        ]
    )
