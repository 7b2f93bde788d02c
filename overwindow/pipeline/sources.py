"""The view's source as a streaming DataFrame: files (JSON, CSV, Parquet) or Kafka (Spark's connector
or overwindow's Python reader), parsed into the view's schema, with its watermark."""

from __future__ import annotations

import os

from overwindow.pipeline.view import View, ViewFileError


def source_frame(spark, view: View):
    """The view's input as a streaming DataFrame with the view's schema (and its watermark)."""
    src = view.source
    if src["format"] == "kafka":
        df = _json_records(kafka_frame(spark, view), src["schema"])
    else:
        reader = spark.readStream.schema(src["schema"])
        if src.get("max_files_per_trigger"):
            reader = reader.option("maxFilesPerTrigger", int(src["max_files_per_trigger"]))
        if src["file_format"] == "csv":
            reader = reader.option("header", "true")
        df = reader.format(src["file_format"]).load(src["path"])
    if view.watermark:
        df = df.withWatermark(view.watermark["column"], view.watermark["delay"])
    return df


def kafka_options(view: View) -> dict:
    """The Kafka reader's options (Spark connector names) from the view's [source]. A client setting
    written ``"env:NAME"`` is read from the environment variable NAME, so secrets stay out of view
    files.

    >>> v = View("v.toml", {"bootstrap_servers": "b:9092", "topic": "t", "starting_offsets": "earliest",
    ...                     "options": {"sasl.password": "env:HOME"}}, None, [], [], "on_update",
    ...          None, None, {}, "chk")
    >>> kafka_options(v)["kafka.sasl.password"] == os.environ["HOME"]
    True
    """
    src = view.source
    options = {
        "kafka.bootstrap.servers": src["bootstrap_servers"],
        "subscribe": src["topic"],
        "startingOffsets": src["starting_offsets"],
    }
    for key, value in src.get("options", {}).items():
        if isinstance(value, str) and value.startswith("env:"):
            if value[4:] not in os.environ:
                raise ViewFileError(
                    f"{view.path}: [source] options.{key} reads the environment variable "
                    f"{value[4:]}, which is not set"
                )
            value = os.environ[value[4:]]
        options[f"kafka.{key}"] = str(value)
    if src.get("max_offsets_per_trigger"):
        options["maxOffsetsPerTrigger"] = str(src["max_offsets_per_trigger"])
    return options


def kafka_frame(spark, view: View):
    """Raw Kafka records (the connector's columns): through Spark's own connector when the session has
    it (``reader = "spark"``, or ``"auto"``), else through overwindow's Python data source."""
    from pyspark.errors import AnalysisException

    from overwindow.pipeline import kafka

    src = view.source
    options = kafka_options(view)
    if src["reader"] in ("auto", "spark"):
        try:
            return spark.readStream.format("kafka").options(**options).load()
        except AnalysisException as e:
            if "KAFKA_DATA_SOURCE_NOT_ENABLED" not in str(e):
                raise
            if src["reader"] == "spark":
                raise ViewFileError(
                    f'{view.path}: [source] reader = "spark" needs Spark\'s Kafka connector; set '
                    f"OVERWINDOW_SPARK_PACKAGES=org.apache.spark:spark-sql-kafka-0-10_2.13:{spark.version} "
                    f'(or use reader = "python")'
                ) from None
    spark.dataSource.register(kafka.KafkaDataSource)
    return spark.readStream.format(kafka.FORMAT).options(**options).load()


def _json_records(raw, schema: str):
    """Kafka values parsed as JSON records of ``schema``. A value that is not such a record is dropped
    and counted (the progress line's "bad records"); the other rows go on."""
    from pyspark.sql import functions as F

    parsed = raw.select(F.from_json(F.col("value").cast("string"), schema).alias("r"))
    fields = parsed.schema["r"].dataType.fieldNames()
    bad = F.col("r").isNull() | ~F.greatest(*[F.col(f"r.`{f}`").isNotNull() for f in fields], F.lit(False))
    counted = parsed.observe("overwindow_source", F.sum(F.when(bad, 1).otherwise(0)).alias("bad_records"))
    return counted.where(~bad).select("r.*")
