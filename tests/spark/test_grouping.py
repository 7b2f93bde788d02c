"""How a groupBy becomes Spark's grouping (overwindow.spark.grouping), against Spark itself: the
buckets overwindow chooses on a few shuffle partitions spread over them evenly."""

import pytest

from overwindow.spark.grouping import (
    BUCKET_VALUES,
    NUMBERED,
    SPREAD,
    bucket_grouping,
    bucket_of,
    bucket_values,
)
from overwindow.spec import FEW_KEY_BUCKETS


@pytest.mark.parametrize("partitions", [1, 2, 3, 4])
def test_chosen_buckets_spread_evenly_over_the_shuffle_partitions(spark, partitions):
    """Bucket i of the 16 chosen on up to 4 shuffle partitions goes to partition i % P, by Spark's
    own hash partitioning of the grouping key (SMALLINT value, TRUE): each task steps as many
    buckets as the others (the bucket numbers, TINYINT, sent 4 and 12 to 2 partitions). Oracle:
    Spark's repartition by the grouping's columns, and the stream's grouping key as built."""
    from pyspark.sql import functions as F

    rows = spark.range(20_000).select((F.col("id") * 7919).alias("k"))
    grouped = bucket_grouping(rows, bucket_of(("k",), FEW_KEY_BUCKETS), FEW_KEY_BUCKETS, True)
    keys = grouped.agg(F.count("*").alias("n")).drop("n")
    assert sorted(r[0] for r in keys.collect()) == sorted(SPREAD) and len(set(SPREAD)) == FEW_KEY_BUCKETS
    assert dict(keys.dtypes)["__overwindow_bucket"] == "smallint"
    placed = keys.repartition(partitions, *keys.columns).select(
        "__overwindow_bucket", F.spark_partition_id().alias("p")
    )
    got = {r[0]: r[1] for r in placed.collect()}
    assert [got[v] for v in SPREAD] == [i % partitions for i in range(FEW_KEY_BUCKETS)]


def test_numbered_buckets_group_as_earlier_releases_did(spark):
    """With spark.overwindow.keyBucketValues = "numbered" the chosen buckets group by their numbers
    as a TINYINT (a checkpoint an earlier release started); another value is refused by name."""
    from pyspark.sql import functions as F

    rows = spark.range(1_000).select(F.col("id").alias("k"))
    try:
        spark.conf.set(BUCKET_VALUES, NUMBERED)
        grouped = bucket_grouping(rows, bucket_of(("k",), FEW_KEY_BUCKETS), FEW_KEY_BUCKETS, True)
        keys = grouped.agg(F.count("*").alias("n"))
        assert dict(keys.dtypes)["__overwindow_bucket"] == "tinyint"
        assert sorted(r[0] for r in keys.collect()) == list(range(FEW_KEY_BUCKETS))
        spark.conf.set(BUCKET_VALUES, "sorted")
        with pytest.raises(ValueError, match="spark.overwindow.keyBucketValues"):
            bucket_values(spark)
    finally:
        spark.conf.unset(BUCKET_VALUES)
