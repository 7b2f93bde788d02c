"""View files: a TOML definition of a streaming materialized view, checked before Spark starts.

```toml
[source]
format = "files"                 # files | kafka
path = "events/"                 # files: a folder that receives new files
file_format = "json"             # json | parquet | csv
schema = "plant STRING, date DATE, mwh DOUBLE"
max_files_per_trigger = 1        # or max_bytes_per_trigger (default 33554432: 32 MiB a batch)
dead_letter = "bad/"             # optional: bad records kept here (overwindow.pipeline.sources)
# envelope = "debezium"          # Debezium change events (json files, kafka; on_update with row_key)
# kafka: bootstrap_servers = "host:9092", topic = "t", starting_offsets = "earliest" | "latest",
#        max_offsets_per_trigger = 10000 (default 100000), reader = "auto" | "spark" | "python",
#        options = { "security.protocol" = "SASL_SSL" }  (client settings; JSON records of `schema`)

[watermark]
column = "date"
delay = "3 days"

[view]
partition_by = ["plant"]
calls = [
"avg(mwh) OVER (ORDER BY date RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING) AS avg7",
]
emit = "on_window_close"         # on_window_close | on_update
row_key = ["plant", "date"]
# state_layout = "chunked"       # on_update only: state in chunks (whole | chunked; see OverWindow)

[sink]
kind = "sqlite"                  # sqlite | postgres | parquet | console
path = "view.sqlite"             # sqlite: the database file; parquet: the folder
table = "plant_view"
checkpoint = "checkpoint/"

[spark]                          # optional: Spark settings over OVERWINDOW_SPARK_CONF's
"spark.driver.memory" = "4g"
```

Relative paths are relative to the view file. Errors name the key and its line.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from overwindow.errors import WindowSpecError
from overwindow.spec import EMIT_MODES, OverWindow

SOURCES = ("files", "kafka")
FILE_FORMATS = ("json", "parquet", "csv")
STARTING_OFFSETS = ("earliest", "latest")
KAFKA_READERS = ("auto", "spark", "python")  # Spark's connector if present, else ours; only one; only ours
SINKS = ("sqlite", "postgres", "parquet", "console")
ENVELOPES = ("none", "debezium")  # [source] envelope: rows as they are, or Debezium change events


class ViewFileError(ValueError):
    """A view file that cannot run; the message names the file, key and line."""


@dataclass
class View:
    path: str
    source: dict
    watermark: dict | None
    partition_by: list[str]
    calls: list[str]
    emit: str
    row_key: list[str] | None
    op_column: str | None
    sink: dict
    checkpoint: str
    spec: OverWindow = field(repr=False, default=None)
    spark: dict = field(default_factory=dict)  # [spark]: Spark settings for the session the job starts

    @property
    def name(self) -> str:
        return self.sink.get("table") or os.path.splitext(os.path.basename(self.path))[0]


def _line_of(text: str, section: str, key: str) -> int | None:
    """The line of ``key`` in ``[section]`` (1-based), to point errors at it."""
    current = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            current = stripped.strip("[]").strip()
        elif current == section and stripped.split("=", 1)[0].strip() == key:
            return number
    return None


def load_view(path: str, overrides: dict | None = None) -> View:
    """Read and check a view file; ``overrides`` maps "section.key" to a value (command-line flags)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ViewFileError(f"{path}: cannot read the view file: {e.strerror}") from None
    text = raw.decode("utf-8", errors="replace")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ViewFileError(f"{path}: not valid TOML: {e}") from None
    for dotted, value in (overrides or {}).items():
        section, key = dotted.split(".", 1)
        doc.setdefault(section, {})[key] = value
    base = os.path.dirname(os.path.abspath(path))

    def where(section, key):
        line = _line_of(text, section, key)
        return f"{path}: [{section}] {key}" + (f" (line {line})" if line else "")

    def need(section, key, kind=str, choices=None):
        value = doc.get(section, {}).get(key)
        if value is None:
            raise ViewFileError(f"{where(section, key)}: missing; add {key} = ... under [{section}]")
        if not isinstance(value, kind):
            raise ViewFileError(
                f"{where(section, key)}: expected {getattr(kind, '__name__', kind)}, got {value!r}"
            )
        if choices and value not in choices:
            raise ViewFileError(f"{where(section, key)}: must be one of {', '.join(choices)}, got {value!r}")
        return value

    def local(p):
        return p if os.path.isabs(p) else os.path.join(base, p)

    for section in doc:
        if section not in ("source", "watermark", "view", "sink", "spark"):
            raise ViewFileError(
                f"{path}: unknown section [{section}] (use source, watermark, view, sink, spark)"
            )
    source = dict(doc.get("source", {}))
    source["format"] = need("source", "format", str, SOURCES)
    need("source", "schema")
    if source["format"] == "files":
        source["path"] = local(need("source", "path"))
        source["file_format"] = source.get("file_format", "json")
        if source["file_format"] not in FILE_FORMATS:
            raise ViewFileError(f"{where('source', 'file_format')}: must be one of {', '.join(FILE_FORMATS)}")
        for key in ("max_files_per_trigger", "max_bytes_per_trigger"):
            limit = source.get(key)
            if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0):
                raise ViewFileError(f"{where('source', key)}: a positive whole number, got {limit!r}")
        if "max_files_per_trigger" in source and "max_bytes_per_trigger" in source:
            raise ViewFileError(
                f"{where('source', 'max_bytes_per_trigger')}: set max_files_per_trigger or "
                "max_bytes_per_trigger, not both (Spark takes one)"
            )
    else:
        need("source", "bootstrap_servers")
        need("source", "topic")
        source["starting_offsets"] = source.get("starting_offsets", "earliest")
        source["reader"] = source.get("reader", "auto")
        for key, choices in (("starting_offsets", STARTING_OFFSETS), ("reader", KAFKA_READERS)):
            if source[key] not in choices:
                raise ViewFileError(
                    f"{where('source', key)}: must be one of {', '.join(choices)}, got {source[key]!r}"
                )
        limit = source.get("max_offsets_per_trigger")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0):
            raise ViewFileError(
                f"{where('source', 'max_offsets_per_trigger')}: a positive number of records, got {limit!r}"
            )
        if not isinstance(source.get("options", {}), dict):
            raise ViewFileError(
                f"{where('source', 'options')}: a table of Kafka client settings, "
                'e.g. options = { "security.protocol" = "SSL" }'
            )
    if source.get("dead_letter") is not None:
        source["dead_letter"] = local(need("source", "dead_letter"))
    source["envelope"] = source.get("envelope", "none")
    if source["envelope"] not in ENVELOPES:
        raise ViewFileError(
            f"{where('source', 'envelope')}: must be one of {', '.join(ENVELOPES)}, "
            f"got {source['envelope']!r}"
        )
    if source["envelope"] == "debezium" and source.get("file_format", "json") != "json":
        raise ViewFileError(
            f'{where("source", "envelope")}: Debezium events are JSON: use file_format = "json"'
        )
    watermark = doc.get("watermark")
    if watermark is not None:
        need("watermark", "column")
        need("watermark", "delay")
    view = doc.get("view", {})
    calls = need("view", "calls", list)
    if not calls or not all(isinstance(c, str) for c in calls):
        raise ViewFileError(f"{where('view', 'calls')}: a list of window calls as SQL text")
    partition_by = view.get("partition_by", [])
    partition_by = [partition_by] if isinstance(partition_by, str) else list(partition_by)
    emit = view.get("emit", "on_window_close")
    if emit not in EMIT_MODES:
        raise ViewFileError(f"{where('view', 'emit')}: must be one of {', '.join(EMIT_MODES)}, got {emit!r}")
    row_key = view.get("row_key")
    row_key = [row_key] if isinstance(row_key, str) else row_key
    op_column = view.get("op_column")
    if source["envelope"] == "debezium":
        if emit != "on_update" or not row_key:
            raise ViewFileError(
                f'{where("source", "envelope")}: Debezium changes need emit = "on_update" and a [view] '
                "row_key (the columns that identify a row)"
            )
        op_column = op_column or "_op"  # the source adds the op of each row image under this name
    try:
        spec = OverWindow(
            *calls,
            emit=emit,
            rowKey=row_key,
            opColumn=op_column,
            stateLayout=view.get("state_layout", "whole"),
        )
    except WindowSpecError as e:
        raise ViewFileError(f"{where('view', 'calls')}: {e}") from None
    if emit == "on_window_close" and watermark is None:
        raise ViewFileError(
            f'{path}: emit = "on_window_close" needs a [watermark] section on the ORDER BY column '
            f"{spec.order_column!r}"
        )
    sink = dict(doc.get("sink", {}))
    sink["kind"] = need("sink", "kind", str, SINKS)
    if sink["kind"] in ("sqlite", "parquet"):
        sink["path"] = local(need("sink", "path"))
    if sink["kind"] == "parquet" and emit != "on_window_close":
        raise ViewFileError(
            f'{where("sink", "kind")}: a Parquet sink only appends; use it with emit = "on_window_close"'
        )
    if sink["kind"] in ("sqlite", "postgres"):
        sink["table"] = need("sink", "table")
    if sink["kind"] == "postgres":
        sink["dsn_env"] = sink.get("dsn_env", "OVERWINDOW_POSTGRES_DSN")
    if source.get("dead_letter") is not None and sink["kind"] == "parquet":
        raise ViewFileError(
            f"{where('source', 'dead_letter')}: dead letters are written by the job's own sinks "
            "(sqlite, postgres, console), not by Spark's Parquet sink"
        )
    checkpoint = local(need("sink", "checkpoint"))
    settings = {}  # [spark]: Spark settings, "spark." optional (so --set spark.driver.memory=4g works)
    for key, value in doc.get("spark", {}).items():
        if not isinstance(value, (str, int, float, bool)):
            raise ViewFileError(
                f'{where("spark", key)}: a Spark setting and its value, e.g. "spark.driver.memory" = "4g"'
            )
        settings[key if key.startswith("spark.") else f"spark.{key}"] = value
    return View(
        path,
        source,
        watermark,
        partition_by,
        calls,
        emit,
        row_key,
        op_column,
        sink,
        checkpoint,
        spec,
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in settings.items()},
    )
