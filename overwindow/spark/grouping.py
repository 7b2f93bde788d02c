"""How a ``groupBy`` becomes the grouping Spark's stateful operators run overwindow's machines
under: per key (``key_grouping``; the chunked layout's ``per_key_grouping``), on key buckets
(``bucket_of``, ``bucket_grouping``), the keys a grouping names (``named_keys``) and a
computed key as a column where a machine needs its keys as columns (``with_key_columns``).
Spark's stateful operators group by columns of the rows only, and compare the keys' bytes.
"""

from __future__ import annotations

import functools

from overwindow.logical.bind import PREFIX
from overwindow.spark import compat
from overwindow.spec import DEFAULT_KEY_BUCKETS, FEW_KEY_BUCKETS

_KEY = "__overwindow_group_key_"  # a key grouped by as a column: computed, or a float's -0.0 as 0.0
HIDDEN_KEY = PREFIX + "key"  # a computed key as the machine's input column (with_key_columns)
_BUCKET = "__overwindow_bucket"  # keyBuckets: the bucket of a row's groupBy key
_FEW = "__overwindow_few_buckets"  # marks FEW_KEY_BUCKETS chosen in the grouping key (bucket_grouping)
# the grouping values of the FEW_KEY_BUCKETS buckets overwindow chooses (a SMALLINT beside the
# constant BOOLEAN): Spark's shuffle sends bucket i's rows to partition i % P of P = 1 to 4
# partitions (its Murmur3 hash of the value and TRUE, pmod P: found by a search over SMALLINTs), so
# each partition's task steps as many buckets as the others'. The numbers 0 to 15, as earlier
# releases grouped (NUMBERED), sent 4 and 12 buckets to 2 partitions and 0, 4, 4 and 8 to 4
SPREAD = (22, 2, 3, 1, 19, 6, 9, 24, 30, 0, 21, 15, 25, 70, 4, 5)
# which the chosen FEW_KEY_BUCKETS buckets group by: SPREAD_NAME, or NUMBERED for a checkpoint an
# earlier release started (the main job reads it from the checkpoint's fingerprint)
BUCKET_VALUES = "spark.overwindow.keyBucketValues"
SPREAD_NAME, NUMBERED = "spread", "numbered"
_KEY_HASH = "__overwindow_key_hash"  # the chunked layout on update per key: its group (per_key_grouping)
_PER_KEY = "__overwindow_per_key"  # ... and the constant beside it in the grouping key
PER_KEY_MARKER = bytearray(b"per key")


def regrouped(grouped, df):
    """``df`` (``grouped``'s rows with columns added) grouped by ``grouped``'s expressions. Classic
    Spark keeps a grouping's expressions in the JVM only: the new grouping is built there from
    them (the added columns leave every other column's identity as it was). O(1)."""
    from pyspark.sql.group import GroupedData

    if compat.is_connect(df):
        return df.groupBy(*grouped._grouping_cols)
    jgd = grouped._jgd
    cls = jgd.getClass().getName()  # org.apache.spark.sql(.classic).RelationalGroupedDataset
    jvm = df.sparkSession._jvm
    group_by = jvm.java.lang.Class.forName(cls + "$GroupByType$").getField("MODULE$").get(None)
    jgd = functools.reduce(getattr, cls.split("."), jvm)(df._jdf, jgd.groupingExprs(), group_by)
    return GroupedData(jgd, df)


def shuffle_partitions(session) -> int | None:
    """``spark.sql.shuffle.partitions`` as ``chosen_key_buckets`` takes it (``partitions_count``).
    O(1)."""
    return partitions_count(session.conf.get("spark.sql.shuffle.partitions"))


def partitions_count(value) -> int | None:
    """A ``spark.sql.shuffle.partitions`` setting as a number; None where it is none (``auto`` on
    some platforms, or not set), so the default count is chosen. O(1).

    >>> partitions_count("2"), partitions_count("auto"), partitions_count(None)
    (2, None, None)
    """
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def bucket_of(keys: tuple[str, ...], buckets: int):
    """The Spark column of a row's key bucket: ``pmod(xxhash64(keys), buckets)`` (Spark's own hash,
    stable across versions and sessions; NULL keys hash like any value); 0 without keys. O(1)."""
    from pyspark.sql import functions as F

    if not keys:
        return F.lit(0)
    return F.pmod(F.xxhash64(*[named_column(k) for k in keys]), F.lit(buckets))


def per_key_grouping(df, keys: tuple[str, ...]):
    """``df`` grouped for the chunked layout on update per key: by each row's ``xxhash64(keys)``
    (Spark's own hash: NULL, NaN and -0.0 keys hash as SQL groups them) and a constant BINARY
    marker, the machine keeping each key's entries apart inside a group (``keys``, as on buckets:
    a group per key but where two keys' hashes collide). Not by the keys themselves: PySpark's
    transformWithStateInPandas (4.x) regroups a partition's rows by the keys' pandas values, where a
    NULL integer key is NaN, which equals nothing, so each row of a NULL key (or a NaN one) became a
    call of its own, on the state of another key. The marker makes the grouping key
    (BIGINT, BINARY), which Spark's state schema check refuses under a checkpoint started per key
    on the keys themselves (as the releases before did). O(1): builds the plan."""
    from pyspark.sql import functions as F

    return df.withColumns(
        {_KEY_HASH: F.xxhash64(*[named_column(k) for k in keys]), _PER_KEY: F.lit(PER_KEY_MARKER)}
    ).groupBy(_KEY_HASH, _PER_KEY)


def key_grouping(df, grouped, names: list[str]):
    """``grouped`` (a state per key) grouped by columns, as Spark's stateful operators need (they
    group by columns of the rows, and a computed key, ``groupBy(F.col("k") % 2)``, was refused by
    Spark as an unresolved column): each computed key becomes a column of its value beside the rows
    (``_KEY``, not among the machine's input columns), and each FLOAT or DOUBLE key is grouped as
    its -0.0 made 0.0, of the same type. Spark's stateful operators group the keys' bytes, where -0.0
    and 0.0 differ, though SQL puts them in one partition (as Spark's own window functions do): a
    key's rows split between two states by the sign of their zero, and a delete went to the state
    that did not hold its row. NULL and NaN keys group as they are. The keys keep their types
    (Spark's state schema check compares types, not names), so checkpoints started before run on.
    ``names``: the rows' columns. O(keys): builds the plan (``grouped`` itself when it groups by
    columns none of a floating type).

    ``groupBy("k")`` over a DOUBLE ``k`` groups by a column ``CASE WHEN k = 0 THEN 0.0 ELSE k END``."""
    from pyspark.sql.types import DoubleType, FloatType

    F = compat.functions(df)
    columns = compat.grouping_columns(grouped)
    types = [f.dataType for f in df.select(*columns).schema.fields]
    by, added = [], {}
    for i, (name, column, type_) in enumerate(zip(_grouping_names(grouped, names), columns, types)):
        zero = isinstance(type_, (DoubleType, FloatType))
        if name is not None and not zero:
            by.append(name)
            continue
        by.append(f"{_KEY}{i}")
        added[by[-1]] = F.when(column == 0, F.lit(0.0).cast(type_)).otherwise(column) if zero else column
    return df.withColumns(added).groupBy(*by) if added else grouped


def with_key_columns(df, grouped, names: list[str]):
    """(``df`` with each computed key of ``grouped`` as a column of its own, the names of the key
    columns, ``{added column: the key as Spark names it}``): where a machine tells its keys apart by
    their columns (on buckets, and per key in the chunked layout) and Spark groups by
    ``groupBy(F.col("k") % 2)``. An added column is named as the columns a bind adds
    (``source_columns`` leaves it out): an input column of the machine that never reaches its
    output nor a row's identity; messages name the key as Spark's ``groupBy(...).count()`` would,
    ``(k % 2)``. ``names``: the rows' columns. O(keys): builds the plan."""
    columns = compat.grouping_columns(grouped)
    by = [n or f"{HIDDEN_KEY}{i}" for i, n in enumerate(_grouping_names(grouped, names))]
    added = {name: column for name, column in zip(by, columns) if name not in names}
    shown = dict(zip(added, df.select(*added.values()).columns))
    return df.withColumns(added), tuple(by), shown


def bucket_grouping(df, bucket, buckets: int, chosen: bool, *leading: str):
    """``df`` grouped by the ``leading`` columns and each row's key ``bucket`` (of ``buckets``).
    keyBuckets given keep the BIGINT bucket their checkpoints have. Buckets chosen without
    keyBuckets (``chosen_key_buckets``) group by a key whose type Spark's state schema check tells
    apart: a TINYINT bucket, and with ``FEW_KEY_BUCKETS`` a bucket's ``SPREAD`` value as a SMALLINT
    (``NUMBERED``: its number as a TINYINT, as earlier releases did, and beside ``leading`` columns)
    and a constant BOOLEAN beside it. Spark refuses a checkpoint's state under another grouping key,
    so a checkpoint started per key (say by a BIGINT that never equals a bucket number: every window
    would restart silently), on keyBuckets given, on the other chosen count (the shuffle's
    partitions changed: Spark keeps the checkpoint's, overwindow would hash the keys anew) or with
    the other bucket values is refused, unless it was keyed by a lone TINYINT, or a TINYINT or
    SMALLINT and a BOOLEAN. O(1): builds the plan."""
    from pyspark.sql import functions as F

    if not chosen:
        return df.withColumn(_BUCKET, bucket).groupBy(*leading, _BUCKET)
    if buckets not in (FEW_KEY_BUCKETS, DEFAULT_KEY_BUCKETS):  # the grouping key tells these two apart
        raise ValueError(f"{buckets} buckets are not a count overwindow chooses")
    if buckets == DEFAULT_KEY_BUCKETS:
        return df.withColumn(_BUCKET, bucket.cast("tinyint")).groupBy(*leading, _BUCKET)
    if leading or bucket_values(df.sparkSession) == NUMBERED:
        df = df.withColumn(_BUCKET, bucket.cast("tinyint"))
    else:
        spread = F.array(*(F.lit(v) for v in SPREAD))
        df = df.withColumn(_BUCKET, F.element_at(spread, (bucket + 1).cast("int")).cast("smallint"))
    return df.withColumn(_FEW, F.lit(True)).groupBy(*leading, _BUCKET, _FEW)


def bucket_values(session) -> str:
    """How a query of ``session`` groups the ``FEW_KEY_BUCKETS`` buckets it chooses: ``SPREAD``
    (the default), or ``NUMBERED`` as earlier releases did, where ``BUCKET_VALUES`` says so (for
    a checkpoint they started; the main job sets it from the checkpoint's fingerprint). O(1)."""
    value = session.conf.get(BUCKET_VALUES, SPREAD_NAME)
    if value not in (SPREAD_NAME, NUMBERED):
        raise ValueError(f'{BUCKET_VALUES} is "{SPREAD_NAME}" or "{NUMBERED}", not {value!r}')
    return value


def named_keys(grouped, names: list[str]) -> tuple[str, ...] | None:
    """The columns ``grouped`` groups by, by name; None when it groups by a computed expression
    (``with_key_columns`` makes one a column where a machine needs its keys as columns)."""
    columns = _grouping_names(grouped, names)
    if not columns or None in columns:
        return None
    return tuple(columns)


def _grouping_names(grouped, names: list[str]) -> list[str | None]:
    """For each expression ``grouped`` groups by, the column of ``names`` it is, or None where it is
    computed. O(keys x columns)."""
    if compat.is_connect(grouped._df):
        found = [getattr(c._expr, "_unparsed_identifier", None) for c in grouped._grouping_cols]
    else:
        exprs = grouped._jgd.groupingExprs()
        found = []
        for i in range(exprs.size()):
            e = exprs.apply(i)
            named = e.getClass().getSimpleName() in ("AttributeReference", "UnresolvedAttribute")
            found.append(e.name() if named else None)
    return [_named(f, names) for f in found]


def _named(name: str | None, names: list[str]) -> str | None:
    """The column of ``names`` that a grouping column's ``name`` refers to, as Spark resolves it by
    default: the name, or one quoted in backticks (Spark Connect keeps ```my key``` as written), and
    otherwise the one column equal to it without case (None: no one column, or no name). O(columns).

    >>> _named("`my key`", ["k", "my key"]), _named("K", ["k", "x"]), _named("s.a", ["s"])
    ('my key', 'k', None)
    """
    if name is None or name in names:
        return name
    if len(name) > 2 and name[0] == name[-1] == "`" and "`" not in name[1:-1].replace("``", ""):
        name = name[1:-1].replace("``", "`")
        if name in names:
            return name
    same = [n for n in names if n.lower() == name.lower()]
    return same[0] if len(same) == 1 else None


def named_column(name: str):
    """The Spark column of the column ``name`` (backticks quoted as Spark reads them). O(1)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")
