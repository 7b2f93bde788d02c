"""View files: a TOML definition of a streaming materialized view, read and checked before Spark starts.

```toml
[source]
format = "files"                 # files | kafka
path = "events/"                 # files: a folder that receives new files
file_format = "json"             # json | parquet | csv
schema = "plant STRING, date TIMESTAMP, mwh DOUBLE"

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

[sink]
kind = "sqlite"                  # sqlite | postgres | parquet | delta | iceberg | kafka | console
path = "view.sqlite"             # sqlite: the database file; parquet: the folder
table = "plant_view"
checkpoint = "checkpoint/"
```

Every key the file may hold is one row of ``KEYS`` (section, name, kind, default, meaning, where it
applies); the docs' key reference (docs/reference/view-keys.md) is ``key_reference()`` of that
table. A key or section the table does not know is refused with the line it is on and the nearest
known name; a known key that does not apply to the view (``topic`` of a file source) is a warning.
Relative paths are relative to the view file.

>>> KEYS_BY_NAME["view", "partition_by"].default
[]
>>> suggest("partiton_by", "view")
'partition_by'
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import sys
from dataclasses import dataclass, field

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


from overwindow.errors import WindowSpecError
from overwindow.pipeline.sandbox import resource_setting
from overwindow.spark.boundary import utc_always
from overwindow.spark.select import Query, key_column, parse_query, query_groups
from overwindow.spec import (
    DEFAULT_KEY_BUCKETS,
    EMIT_MODES,
    FEW_KEY_BUCKETS,
    FEW_PARTITIONS,
    PER_KEY,
    STATE_LAYOUTS,
    OverWindow,
    watermark_bounds_state,
)
from overwindow.streaming.contract import ROW_ID

# [view] key_buckets = "chosen", and what a checkpoint's fingerprint records for buckets overwindow
# chose (``OverWindow.hosted``): their count follows the shuffle partitions Spark keeps for the
# checkpoint (``job.start_view``); a number is a count given (or the 64 an earlier release gave
# every new checkpoint), null a state per key
CHOSEN = "chosen"

SOURCES = ("files", "kafka")
FILE_FORMATS = ("json", "parquet", "csv")
STARTING_OFFSETS = ("earliest", "latest")
KAFKA_READERS = ("auto", "spark", "python")  # Spark's connector if present, else ours; only one; only ours
SINKS = ("sqlite", "postgres", "parquet", "delta", "iceberg", "kafka", "console")
ENVELOPES = ("none", "debezium")  # [source] envelope: rows as they are, or Debezium change events
LATE_ROWS = ("count", "dead_letter")  # [source] late_rows: late rows counted, or kept too


class ViewFileError(ValueError):
    """A view file that cannot run; each line of the message names the file, key and line."""


@dataclass(frozen=True)
class Section:
    name: str
    meaning: str
    required: bool = True
    free: bool = False  # keys are not checked against KEYS (settings passed on as they are)


@dataclass(frozen=True)
class Key:
    """One view-file key. ``kind``: text | count (an integer above 0) | names (a column name or a list
    of them) | texts (a list of text) | offset (an interval as text, or a number) | table (settings
    as a TOML table). ``when``: (section, key, values) — the key applies only when that key has one
    of the values. ``path``: a path, relative to the view file; ``writes``: the job writes there (so
    it may not lie in the source folder)."""

    section: str
    name: str
    kind: str
    meaning: str
    default: object = None
    required: bool = False
    choices: tuple = ()
    when: tuple | None = None
    path: bool = False
    writes: bool = False


SECTIONS = (
    Section("source", "where the rows come from and their columns"),
    Section("watermark", "how late rows may arrive (needed by emit on window close)", required=False),
    Section("view", "the window calls and how they are emitted"),
    Section("sink", "where the view is kept, and the checkpoint"),
    Section(
        "spark",
        "Spark settings for the session the job starts, over OVERWINDOW_SPARK_CONF's (e.g. "
        '`"spark.driver.memory" = "4g"`; the `spark.` prefix may be left out)',
        required=False,
        free=True,
    ),
)

_FILES = ("source", "format", ("files",))
_KAFKA = ("source", "format", ("kafka",))
_KAFKA_SINK = ("sink", "kind", ("kafka",))
KEYS = (
    Key("source", "format", "text", "where rows come from", required=True, choices=SOURCES),
    Key(
        "source",
        "schema",
        "text",
        "the input columns in Spark's DDL: `name TYPE, ...` (STRING, BIGINT, DOUBLE, DECIMAL(p, s), "
        "DATE, TIMESTAMP, ...)",
        required=True,
    ),
    Key(
        "source", "path", "text", "the folder that receives new files", required=True, when=_FILES, path=True
    ),
    Key("source", "file_format", "text", "the files' format", "json", choices=FILE_FORMATS, when=_FILES),
    Key(
        "source",
        "max_files_per_trigger",
        "count",
        "at most this many new files per micro-batch (instead of max_bytes_per_trigger)",
        when=_FILES,
    ),
    Key(
        "source",
        "max_bytes_per_trigger",
        "count",
        "at most about this many bytes of new files per micro-batch (default 33554432: 32 MiB)",
        when=_FILES,
    ),
    Key(
        "source",
        "dead_letter",
        "text",
        "a folder where bad records are kept, with the reason, as JSON lines per micro-batch "
        "(default: counted only)",
        path=True,
        writes=True,
    ),
    Key(
        "source",
        "late_rows",
        "text",
        "rows that arrive late (at or below the watermark): counted only, or also kept in the dead_letter "
        "folder with the reason",
        "count",
        choices=LATE_ROWS,
    ),
    Key(
        "source",
        "envelope",
        "text",
        "rows as they are, or Debezium change events (`before`/`after`/`op`: JSON files or Kafka; "
        'emit = "on_update" with a row_key)',
        "none",
        choices=ENVELOPES,
    ),
    Key(
        "source",
        "bootstrap_servers",
        "text",
        "the Kafka brokers, `host:port[,host:port]`",
        required=True,
        when=_KAFKA,
    ),
    Key(
        "source",
        "topic",
        "text",
        "the Kafka topic (one), of JSON records of the schema",
        required=True,
        when=_KAFKA,
    ),
    Key(
        "source",
        "starting_offsets",
        "text",
        "where a new checkpoint starts reading the topic",
        "earliest",
        choices=STARTING_OFFSETS,
        when=_KAFKA,
    ),
    Key(
        "source",
        "max_offsets_per_trigger",
        "count",
        "at most this many records per micro-batch (default 100000)",
        when=_KAFKA,
    ),
    Key(
        "source",
        "reader",
        "text",
        "Spark's Kafka connector if the session has it, else overwindow's Python reader; or insist on one",
        "auto",
        choices=KAFKA_READERS,
        when=_KAFKA,
    ),
    Key(
        "source",
        "idle_timeout",
        "text",
        "the Python reader with a [watermark]: how long a Kafka partition without new records keeps the "
        "others from reading past it in event time (docs/deployment.md, Kafka source)",
        "30 seconds",
        when=_KAFKA,
    ),
    Key(
        "source",
        "options",
        "table",
        'Kafka client settings, e.g. `{ "security.protocol" = "SSL" }`; a value `"env:NAME"` is read '
        "from the environment variable NAME",
        {},
        when=_KAFKA,
    ),
    Key("watermark", "column", "text", "the event-time column (a TIMESTAMP)", required=True),
    Key(
        "watermark",
        "delay",
        "text",
        'how late a row may arrive, as Spark reads it: "10 seconds", "5 minutes", "1 hour 30 minutes"',
        required=True,
    ),
    Key(
        "view",
        "calls",
        "texts",
        "the window calls, SQL text each with `AS name`, without PARTITION BY (or `query`)",
    ),
    Key(
        "view",
        "query",
        "text",
        "instead of `calls` and `partition_by`: `SELECT ... FROM source [WHERE ...] [QUALIFY ...]` in "
        "Spark SQL, its window columns each with `AS name` and one PARTITION BY / ORDER BY",
    ),
    Key(
        "view",
        "functions",
        "table",
        'grouped-aggregate pandas_udfs the query calls by name, each `name = "module:attribute"` '
        '(a module beside the view file, or installed), e.g. `{ wavg = "plant_udfs:wavg" }`; '
        "importing runs the module: needs `trusted = true`",
        {},
    ),
    Key(
        "view",
        "partition_by",
        "names",
        "the partition key columns (PARTITION BY); none: the whole stream is one partition",
        [],
    ),
    Key("view", "emit", "text", "when rows are emitted", "on_window_close", choices=EMIT_MODES),
    Key(
        "view",
        "row_key",
        "names",
        "the columns that identify a row: they break ORDER BY ties and key the sink (default: all "
        "input columns)",
    ),
    Key(
        "view",
        "op_column",
        "text",
        "a column saying insert, update or delete per row (CDC input; emit on update; needs row_key)",
    ),
    Key(
        "view",
        "state_layout",
        "text",
        "emit on update: a key's state as one value, or in chunks a micro-batch reads only where its "
        "changes reach; emit on window close (on key buckets): a bucket's state as one value, or each "
        "key's history as an entry read only when the key releases rows",
        "whole",
        choices=STATE_LAYOUTS,
    ),
    Key(
        "view",
        "max_rows_per_key",
        "count",
        "the most rows one partition may hold in state: a micro-batch past it stops the query with an "
        "error naming the partition (default: no bound)",
    ),
    Key(
        "view",
        "key_buckets",
        "buckets",
        "hash the partition keys into this many buckets, one state and one Python call per bucket "
        'and micro-batch, so cost follows rows rather than keys; "per key": a state and a call per '
        'key; "chosen": the buckets `overWindow` chooses, '
        f"{FEW_KEY_BUCKETS} up to {FEW_PARTITIONS} shuffle partitions and {DEFAULT_KEY_BUCKETS} above "
        "(default: chosen for a new checkpoint of emit on window close, and of emit on update with a "
        "[watermark] on the whole state layout; what a started checkpoint was started with, a state "
        "per key for one started by an older overwindow or whose overwindow-view.json is gone; a "
        "remote checkpoint is not read, so one started otherwise needs its `key_buckets` written "
        "out; otherwise a state per key); fixed for the checkpoint's life",
    ),
    Key(
        "view",
        "trusted",
        "flag",
        "false: the view file is data (its SQL reads only its source's columns, with functions that read "
        "nothing else, and [spark] takes only resource settings); true: it is code you trust (its SQL "
        "runs with Spark's rules, [spark] takes any setting)",
        False,
    ),
    Key(
        "view",
        "state_ttl",
        "offset",
        "emit on window close: forget a partition once the watermark is this far past its newest row "
        "('7 days'; a number for a numeric ORDER BY): its waiting rows are emitted as at its end and a "
        "later row starts it anew (default: keep every partition)",
    ),
    Key("sink", "kind", "text", "where the view is kept", required=True, choices=SINKS),
    Key(
        "sink",
        "path",
        "text",
        "sqlite: the database file; parquet and delta: the folder",
        required=True,
        when=("sink", "kind", ("sqlite", "parquet", "delta")),
        path=True,
        writes=True,
    ),
    Key(
        "sink",
        "table",
        "text",
        "the table (iceberg: `namespace.table`)",
        required=True,
        when=("sink", "kind", ("sqlite", "postgres", "iceberg")),
    ),
    Key(
        "sink",
        "catalog",
        "text",
        "the Iceberg catalog: an SQLite file of pyiceberg's SQL catalog (made where missing), or a catalog "
        "URI (`sqlite:///...`, `postgresql+psycopg://...`, `https://...` for a REST catalog)",
        required=True,
        when=("sink", "kind", ("iceberg",)),
        path=True,
        writes=True,
    ),
    Key(
        "sink",
        "warehouse",
        "text",
        "where the Iceberg table's files go: a folder or a URI (`s3://...`)",
        required=True,
        when=("sink", "kind", ("iceberg",)),
        path=True,
        writes=True,
    ),
    Key(
        "sink",
        "partition_by",
        "names",
        "the Delta or Iceberg table's partition columns (Iceberg: identity partitions), when the sink "
        "creates it",
        [],
        when=("sink", "kind", ("delta", "iceberg")),
    ),
    Key(
        "sink",
        "bootstrap_servers",
        "text",
        "the Kafka brokers the changelog is written to, `host:port[,host:port]`",
        required=True,
        when=_KAFKA_SINK,
    ),
    Key("sink", "topic", "text", "the Kafka topic of the changelog", required=True, when=_KAFKA_SINK),
    Key(
        "sink",
        "format",
        "text",
        "the changelog's records: the row or a tombstone (upsert-kafka), or Debezium change events",
        "upsert",
        choices=("upsert", "debezium"),
        when=_KAFKA_SINK,
    ),
    Key(
        "sink",
        "options",
        "table",
        'Kafka producer settings, e.g. `{ "security.protocol" = "SASL_SSL" }`, or the Iceberg catalog\'s '
        'properties, e.g. a REST catalog\'s `{ credential = "env:ICEBERG_CREDENTIAL" }`; a value '
        '`"env:NAME"` is read from the environment variable NAME',
        {},
        when=("sink", "kind", ("kafka", "iceberg")),
    ),
    Key(
        "sink",
        "dsn_env",
        "text",
        "the environment variable holding the PostgreSQL connection string",
        "OVERWINDOW_POSTGRES_DSN",
        when=("sink", "kind", ("postgres",)),
    ),
    Key(
        "sink",
        "checkpoint",
        "text",
        "the folder where Spark keeps offsets and state (one per view)",
        required=True,
        path=True,
        writes=True,
    ),
)
SECTIONS_BY_NAME = {s.name: s for s in SECTIONS}
KEYS_BY_NAME = {(k.section, k.name): k for k in KEYS}


def suggest(name: str, section: str | None) -> str | None:
    """The known key (of ``section``; of any section as ``[section] key``) nearest to ``name``."""
    names = [k.name for k in KEYS if k.section == section]
    found = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if found:
        return found[0]
    elsewhere = [k for k in KEYS if k.name == name or difflib.get_close_matches(name, [k.name], cutoff=0.8)]
    return f"[{elsewhere[0].section}] {elsewhere[0].name}" if elsewhere else None


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
    lines: dict = field(repr=False, default_factory=dict)  # (section, key) -> line in the file
    warnings: list = field(repr=False, default_factory=list)
    spark: dict = field(default_factory=dict)  # [spark]: Spark settings for the session the job starts
    query: Query | None = None  # [view] query, read (calls and partition_by come from it)
    options: dict = field(default_factory=dict)  # OverWindow's keywords besides the calls
    # (PARTITION BY columns, OverWindow) per window group: one for calls, one per PARTITION BY and
    # ORDER BY of a query (``spec`` is the first's; ``partition_by`` empty when there are several)
    groups: list = field(repr=False, default_factory=list)
    # a query's columns combining windows of several groups (overwindow.spark.select.window_groups)
    computed: tuple = field(repr=False, default=())
    trusted: bool = False  # [view] trusted: SQL and [spark] with Spark's rules (overwindow.pipeline.sandbox)
    group_key: list[str] | None = None  # a query's GROUP BY keys (their result names): the table's key
    functions: dict = field(repr=False, default_factory=dict)  # [view] functions: name -> its pandas_udf

    def __post_init__(self):
        if not self.groups and self.spec is not None:  # a view built in code (the demo's): one group
            self.groups = [(self.partition_by, self.spec)]

    @property
    def key(self) -> list[str]:
        """The columns that key the view's table on update: a GROUP BY's keys; else the PARTITION BY
        columns and the row key (``_row_id`` without one)."""
        return self.group_key or self.partition_by + (self.row_key or [ROW_ID])

    @property
    def row_key_alone(self) -> list[str]:
        """The columns that key a table applying the changelog contract (Delta, Iceberg, Kafka):
        a GROUP BY's keys; else the row key alone (``_row_id`` without one)."""
        return self.group_key or self.row_key or [ROW_ID]

    @property
    def several(self) -> bool:
        """The view's windows differ in PARTITION BY or ORDER BY (overwindow.spark.fanout runs them)."""
        return len(self.groups) > 1

    @property
    def calls_key(self) -> str:
        """The [view] key holding the window calls: ``query`` or ``calls``."""
        return "query" if self.query is not None else "calls"

    @property
    def name(self) -> str:
        return self.sink.get("table") or os.path.splitext(os.path.basename(self.path))[0]

    def where(self, section: str, key: str | None = None) -> str:
        """``view.toml: [sink] path (line 20)``: the place a message points at."""
        if key is None:
            return f"{self.path}: [{section}]"
        line = self.lines.get((section, key))
        where = f" (line {line})" if isinstance(line, int) else f" ({line})" if line else ""
        return f"{self.path}: [{section}] {key}{where}"

    def written_paths(self) -> list[tuple[str, str, str]]:
        """(section, key, absolute path) of every place the job writes."""
        found = []
        for k in KEYS:
            if not k.writes:
                continue
            value = (
                self.checkpoint
                if (k.section, k.name) == ("sink", "checkpoint")
                else self.section(k.section).get(k.name)
            )
            if isinstance(value, str) and not is_uri(value):
                found.append((k.section, k.name, value))
        return found

    def section(self, name: str) -> dict:
        return {"source": self.source, "watermark": self.watermark or {}, "sink": self.sink}.get(name, {})


def is_uri(path: str) -> bool:
    """A location with a scheme (``s3a://bucket/chk``): not a local path."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path) is not None


def key_lines(text: str) -> dict[tuple[str, str], int]:
    """The line (1-based) of each ``[section] key`` assignment of a TOML text, to point messages at
    it. Multi-line values are skipped; a ``[section.key]`` table header counts as the key's line."""
    found: dict[tuple[str, str], int] = {}
    section = None
    depth = 0  # inside a multi-line array or inline table
    quoted = None  # inside a multi-line string ('''/""")
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if quoted is not None:
            if quoted in stripped:
                quoted = None
            continue
        if depth == 0 and stripped.startswith("[") and not stripped.startswith("[["):
            parts = [p.strip().strip("\"'") for p in stripped.split("]")[0].strip("[").split(".")]
            section = parts[0]
            if len(parts) > 1:
                found.setdefault((section, parts[1]), number)
            continue
        if depth == 0 and "=" in stripped and not stripped.startswith("#"):
            name = [p.strip().strip("\"'") for p in stripped.split("=", 1)[0].split(".")]
            if section is None and len(name) > 1:
                found.setdefault((name[0], name[1]), number)
            elif section is not None:
                found.setdefault((section, name[0]), number)
        body = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', "", stripped.split("=", 1)[-1])
        if body.count('"""') % 2 or body.count("'''") % 2:
            quoted = '"""' if '"""' in body else "'''"
        body = body.split("#", 1)[0]
        depth = max(0, depth + body.count("[") + body.count("{") - body.count("]") - body.count("}"))
    return found


def _kind_error(key: Key, value) -> str | None:
    """Why ``value`` is not of the key's kind (None when it is)."""
    kind = key.kind
    if kind == "text" and not isinstance(value, str):
        return f"expected text, got {value!r}"
    if kind == "text" and not value.strip():
        return "empty; give a value or leave the key out" + (
            " (a path relative to the view file)" if key.path else ""
        )
    positive = isinstance(value, int) and not isinstance(value, bool) and value > 0
    if kind == "flag" and not isinstance(value, bool):
        return f"true or false, got {value!r}"
    if kind == "count" and not positive:
        return f"a positive whole number, got {value!r}"
    if kind == "buckets" and value not in (PER_KEY, CHOSEN) and not positive:
        return f'a positive whole number, "{PER_KEY}" or "{CHOSEN}", got {value!r}'
    if kind == "offset" and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
        return f"an interval such as '7 days', or a number, got {value!r}"
    if kind == "names" and not (
        isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    ):
        return f'a column name or a list of them, e.g. ["a", "b"], got {value!r}'
    if kind == "texts" and not (
        isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value)
    ):
        return f"a list of text, got {value!r}"
    if kind == "table" and not (
        isinstance(value, dict) and all(isinstance(v, (str, int, float, bool)) for v in value.values())
    ):
        return f"a table of {key.meaning}; got {value!r}"
    return None


def _applies(key: Key, doc: dict) -> bool:
    if key.when is None:
        return True
    section, name, values = key.when
    found = doc.get(section, {}).get(name, KEYS_BY_NAME[section, name].default)
    return found in values


def _set_override(doc: dict, dotted: str, value) -> str | None:
    """Put a ``--set section.key=value`` into the parsed file; the reason when the key is unknown."""
    section, _, key = dotted.partition(".")
    if section not in SECTIONS_BY_NAME:
        near = difflib.get_close_matches(section, list(SECTIONS_BY_NAME), n=1)
        return f"--set {dotted}: unknown section [{section}]" + (
            f"; did you mean [{near[0]}]?" if near else ""
        )
    head, _, rest = key.partition(".")
    known = KEYS_BY_NAME.get((section, head))
    if known is None and not SECTIONS_BY_NAME[section].free:
        near = suggest(key, section)
        return f"--set {dotted}: unknown key" + (f"; did you mean {near}?" if near else "")
    target = doc.setdefault(section, {})
    if rest and known is not None and known.kind == "table":
        target = target.setdefault(head, {})
        if not isinstance(target, dict):
            return f"--set {dotted}: [{section}] {head} is not a table"
        key = rest
    target[key] = value
    return None


def load_view(path: str, overrides: dict | None = None) -> View:
    """Read and check a view file; ``overrides`` maps "section.key" to a value (command-line flags).
    Raises ViewFileError with one line per problem. Checks only the file itself: the schema, the
    columns, paths and the environment are checked by overwindow.pipeline.validate."""
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
    lines = key_lines(text)
    view = View(path, {}, None, [], [], "", None, None, {}, "", lines=lines)
    problems: list[str] = []

    for dotted, value in (overrides or {}).items():
        reason = _set_override(doc, dotted, value)
        if reason:
            problems.append(f"{path}: {reason}")
        else:
            section, _, key = dotted.partition(".")
            lines[section, key.partition(".")[0]] = "--set"  # the value no longer comes from the file

    for name, body in doc.items():
        if name in SECTIONS_BY_NAME and isinstance(body, dict):
            continue
        if not isinstance(body, dict):
            owner = suggest(name, None)
            problems.append(
                f"{path}: {name} (line {lines.get((name, name)) or _top_line(text, name)}): a key outside "
                "any section" + (f"; did you mean {owner}?" if owner and owner.startswith("[") else "")
            )
            continue
        near = difflib.get_close_matches(name, list(SECTIONS_BY_NAME), n=1)
        problems.append(
            f"{path}: unknown section [{name}]"
            + (f"; did you mean [{near[0]}]?" if near else f" (use {', '.join(SECTIONS_BY_NAME)})")
        )
    for section in SECTIONS:
        body = doc.get(section.name)
        if not isinstance(body, dict) or section.free:
            continue
        for key in body:
            if (section.name, key) not in KEYS_BY_NAME:
                near = suggest(key, section.name)
                problems.append(
                    f"{view.where(section.name, key)}: unknown key"
                    + (f"; did you mean {near}?" if near else "")
                )
    if problems:
        raise ViewFileError("\n".join(problems))

    values: dict[str, dict] = {}
    for key in KEYS:
        body = doc.get(key.section)
        if body is None:
            continue
        value = body.get(key.name)
        applies = _applies(key, doc)
        if value is None:
            if key.required and applies:
                add = f"add {key.name} = ... under [{key.section}]"
                problems.append(f"{view.where(key.section, key.name)}: missing; {add}")
            elif applies and key.default is not None:
                values.setdefault(key.section, {})[key.name] = copy.deepcopy(key.default)
            continue
        if not applies:
            section, name, allowed = key.when
            view.warnings.append(
                f"{view.where(key.section, key.name)}: not used when [{section}] {name} = "
                f"{doc.get(section, {}).get(name, KEYS_BY_NAME[section, name].default)!r} (it applies to "
                + " or ".join(f"{name} = {v!r}" for v in allowed)
                + ")"
            )
            continue
        reason = _kind_error(key, value)
        if reason is None and key.choices and value not in key.choices:
            reason = f"must be one of {', '.join(key.choices)}, got {value!r}"
        if reason:
            problems.append(f"{view.where(key.section, key.name)}: {reason}")
            continue
        if key.kind == "names" and isinstance(value, str):
            value = [value]
        if key.path:  # ~ is the home folder, as a shell reads it
            value = (
                value
                if is_uri(value)
                else os.path.normpath(
                    os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(value))
                )
            )
        values.setdefault(key.section, {})[key.name] = value
    for section in SECTIONS:
        if section.required and section.name not in doc:
            problems.append(f"{path}: missing section [{section.name}] ({section.meaning})")
    if problems:
        raise ViewFileError("\n".join(problems))

    view.source = values.get("source", {})
    view.watermark = values.get("watermark") if "watermark" in doc else None
    v = values.get("view", {})
    view.partition_by, view.emit = v["partition_by"], v["emit"]
    view.row_key, view.op_column = v.get("row_key"), v.get("op_column")
    view.sink = values.get("sink", {})
    view.checkpoint = view.sink.pop("checkpoint")
    view.trusted = v.get("trusted", False)
    view.functions = _functions(view, v.get("functions", {}))
    _check_source(view)
    view.spark = _spark_settings(view, doc.get("spark", {}))
    view.options = dict(
        emit=view.emit,
        rowKey=view.row_key,
        opColumn=view.op_column,
        sourceOrder=source_order(view),
        stateLayout=v.get("state_layout", "whole"),
        maxRowsPerKey=v.get("max_rows_per_key"),
        keyBuckets=_key_buckets(view, v.get("key_buckets"), v.get("state_layout", "whole")),
        stateTtl=v.get("state_ttl"),
    )
    given = doc.get("view", {})
    if "query" in v:
        _read_query(view, v["query"], given)
    elif "calls" in v:
        view.calls = v["calls"]
        _check_sandbox(view, view.calls)
        try:
            view.spec = OverWindow(*view.calls, **view.options)
        except WindowSpecError as e:
            raise ViewFileError(spec_problem(view, e)) from None
        view.groups = [(view.partition_by, view.spec)]
    else:
        raise ViewFileError(
            f'{view.where("view")}: missing calls = [...] (the window calls) or query = "SELECT ... '
            'FROM source"'
        )
    if view.emit == "on_window_close" and view.watermark is None:
        raise ViewFileError(
            f'{path}: emit = "on_window_close" needs a [watermark] section on the ORDER BY column '
            f"{view.spec.order_column!r}"
        )
    if view.sink["kind"] == "parquet" and view.emit != "on_window_close":
        raise ViewFileError(
            f'{view.where("sink", "kind")}: a Parquet sink only appends; use it with emit = "on_window_close"'
        )
    if view.options["keyBuckets"] is None:
        host_chosen(view)
    return view


def host_chosen(view: View) -> None:
    """The view's window groups hosted as ``overWindow`` hosts them without keyBuckets. Their count
    is chosen again when the query is built, for the shuffle partitions it runs on
    (``job.start_view``); here what counts is whether the view runs on buckets (the fingerprint,
    the progress line's unit). O(groups)."""
    view.groups = [(keys, spec.hosted(view.watermark is not None, True)) for keys, spec in view.groups]
    view.spec = view.groups[0][1]


def _key_buckets(view: View, given, layout: str) -> int | str | None:
    """[view] key_buckets as OverWindow's ``keyBuckets``: the number given, or ``PER_KEY``; None
    for ``CHOSEN``: the spec's buckets chosen as ``overWindow`` chooses them (``load_view``, then
    the adapter for the shuffle partitions, which ``job.start_view`` sets to a started checkpoint's),
    say for a checkpoint whose fingerprint is lost (which would run per key). Not given, where
    ``OverWindow.hosted`` would choose buckets (``watermark_bounds_state``): what the view's
    checkpoint was started with (a count given, an earlier release's 64 too, or a state per key),
    else None, chosen. Chosen buckets group by a key Spark refuses to run on a checkpoint started
    per key, on buckets given or on the other chosen count, so a remote checkpoint, which is not
    read here, is refused loudly where a count given would read a state started per key on BIGINT
    keys as empty buckets. Elsewhere ``PER_KEY``, as ``hosted`` chooses. The chunked layout on
    update stays per key: on buckets it measured no faster (docs/design/many-keys.md, section 8, fourth
    increment: its machine's step per key, not Spark's per-group cost, dominates)."""
    if given == CHOSEN:  # as overWindow chooses, whatever the checkpoint recorded
        return None
    if given is not None or not watermark_bounds_state(view.emit, layout, view.watermark is not None):
        return PER_KEY if given is None else given
    if is_uri(view.checkpoint):
        return None
    from overwindow.pipeline.fingerprint import started_key_buckets

    started = started_key_buckets(view.checkpoint)
    if started == PER_KEY:
        view.warnings.append(
            f"{view.where('sink', 'checkpoint')}: runs a state per key, as the checkpoint was started; "
            "a new checkpoint would hash the keys into buckets (key_buckets), which costs far less "
            "with many keys"
        )
        return PER_KEY
    return None if started in (None, CHOSEN) else started


def _read_query(view: View, text: str, given: dict) -> None:
    """[view] query: read with overwindow.sql's reader (``parse_query``, ``query_groups``), so the job
    runs what ``overwindow.sql`` would; fills the view's calls, partition and spec. The source is
    named ``source``; PARTITION BY must be columns, and emit on update must keep the sink's key."""
    where = view.where("view", "query")
    for other in ("calls", "partition_by"):
        if other in given:
            raise ViewFileError(
                f"{view.where('view', other)}: give calls and partition_by, or query (whose windows "
                f"say their PARTITION BY), not both; {where} is set too"
            )
    use_query(view, text)


def use_query(view: View, text: str) -> None:
    """The view runs the query ``text`` (``FROM source``) with its ``options``: its query, window
    groups, calls and partition set from it, as overwindow.sql reads a query; ViewFileError naming
    ``[view] query`` otherwise."""
    where = view.where("view", "query")
    try:
        view.query = parse_query(text, "a view's query")
        options = view.options
        if view.query.group_by and view.emit == "on_window_close":  # the windows run on update over
            options = dict(options, emit="on_update")  # the closed groups (overwindow.spark.grouped)
            _closing_groups(view)
        groups, view.computed = query_groups(view.query, **options)
    except WindowSpecError as e:  # at the key it is about (row_key, ...) in view-file words, else the query
        raise ViewFileError(
            spec_problem(view, e) if _spec_key(str(e)) != "calls" else f"{where}: {e}"
        ) from None
    if view.query.table.lower() != "source":
        raise ViewFileError(f"{where}: FROM {view.query.table}: a view reads its [source]; write FROM source")
    _check_sandbox(view, [text])
    # a PARTITION BY expression (date_trunc('HOUR', ts)) is Spark's to compute: the groups keep it
    view.groups = [([key_column(k) or k for k in keys], spec) for keys, spec in groups]
    view.spec = groups[0][1]
    columns = [key_column(k) for k in groups[0][0]]
    view.partition_by = [] if view.several else [k for k in columns if k is not None]
    computed = [k.sql for k in groups[0][0] if key_column(k) is None]
    if computed and not view.several and view.emit == "on_update" and view.row_key:
        raise ViewFileError(
            f"{where}: PARTITION BY {computed[0]} on update with row_key: the table is keyed by the "
            "PARTITION BY columns and the row key, so a row updated into another partition of the "
            "expression would reach it as an upsert and a delete of one key; partition by columns of "
            "the [source], or leave out row_key (rows then never move)"
        )
    view.calls = [e.text for _, spec in view.groups for e in spec.expressions]
    if view.query.group_by:
        _grouped(view, where)
        return
    if view.several and view.emit == "on_update" and not view.row_key:
        raise ViewFileError(
            f"{where}: windows over several PARTITION BY or ORDER BY on update need [view] row_key: the "
            "table joins each row's windows by its row key"
        )
    if view.several and view.source.get("late_rows") == "dead_letter":
        raise ViewFileError(
            f"{view.where('source', 'late_rows')}: late rows of windows over several PARTITION BY or ORDER "
            'BY are counted only, not kept yet; remove late_rows = "dead_letter"'
        )
    if view.several and view.spec.state_layout == "chunked":
        raise ViewFileError(
            f"{where}: windows over several PARTITION BY or ORDER BY run on the whole state layout; "
            'remove state_layout = "chunked"'
        )
    if view.emit == "on_update" and view.query.names is not None:
        listed = {n.lower() for n in view.query.names}
        missing = [c for c in view.partition_by + (view.row_key or []) if c.lower() not in listed]
        if missing:
            raise ViewFileError(
                f"{where}: emit on update keeps the table keyed by the PARTITION BY and row_key "
                f"columns; add {', '.join(missing)} to the SELECT list"
            )


def _closing_groups(view: View) -> None:
    """Refuses a GROUP BY whose groups cannot close on window close (``grouped.closing``), or a
    row_key with one (a group is emitted once: no changes of its rows)."""
    from overwindow.spark.grouped import closing

    if view.row_key:
        raise ViewFileError(
            f"{view.where('view', 'row_key')}: windows over a GROUP BY on window close emit each group "
            "once, when the watermark closes it, so they take no changes of rows already grouped: "
            'leave out row_key, or write emit = "on_update"'
        )
    if view.watermark is None:
        raise ViewFileError(
            f'{view.path}: emit = "on_window_close" closes the groups of the GROUP BY as the watermark '
            "passes them: add a [watermark] section on the event-time column its time key buckets"
        )
    try:
        closing(view.query, view.watermark.get("column"))
    except WindowSpecError as e:
        raise ViewFileError(f"{view.where('view', 'query')}: {_view_words(str(e))}") from None


def _functions(view: View, named: dict) -> dict:
    """[view] functions: each pandas_udf imported and joined to overwindow's catalog
    (``overwindow.pipeline.user_functions``), by its name; ViewFileError naming the key."""
    if not named:
        return {}
    where = view.where("view", "functions")
    if not view.trusted:
        raise ViewFileError(
            f"{where}: importing a module runs its code; name functions only in a view file you trust, "
            "with [view] trusted = true"
        )
    from overwindow.pipeline.user_functions import load

    folder = os.path.dirname(os.path.abspath(view.path))
    found = {}
    for name, target in named.items():
        try:
            found[name] = load(folder, name, str(target))
        except ValueError as e:
            raise ViewFileError(f"{where}: {name}: {e}") from None
    return found


def _check_sandbox(view: View, texts: list[str]) -> None:
    """Refuses SQL of an untrusted view that reaches past its source's columns
    (overwindow.pipeline.sandbox), naming the key that holds it."""
    if view.trusted:
        return
    from overwindow.pipeline.sandbox import refuse
    from overwindow.pipeline.spark_strings import SparkStringError, parse_schema

    try:
        columns = parse_schema(view.source["schema"]).fieldNames()
    except SparkStringError:
        columns = None  # validate names the schema's problem
    problems = [p for text in texts for p in refuse(text, view.where("view", view.calls_key), columns)]
    if problems:
        raise ViewFileError("\n".join(dict.fromkeys(problems)))


def _grouped(view: View, where: str) -> None:
    """A query with GROUP BY: its windows run over the groups, on update, keyed by the GROUP BY keys
    (overwindow.spark.grouped), which the SELECT list must show; a CDC source's row_key and
    op_column find the source rows a change applies to."""
    from overwindow.spark.grouped import key_names

    names = key_names(view.query)
    if None in names:
        key = view.query.group_by[names.index(None)]
        raise ViewFileError(
            f"{where}: GROUP BY {key}: the table is keyed by the GROUP BY keys; add {key} to the SELECT list"
        )
    view.group_key, view.partition_by = names, []


# the columns the source adds beside each row of a view that takes changes of rows (emit on update
# with a row key): where the row stands in the source, by which a row's changes in one micro-batch
# apply (OverWindow's sourceOrder; overwindow.pipeline.sources makes them). A file's changes: the
# files in the order Spark's file source takes them (modification time, then path), the parts Spark
# splits a large file into by their start, and the rows of a part as they were read. Kafka's: the
# offset in its partition (a row key's changes are in one partition when the topic is keyed by it).
SOURCE_ORDER = {  # by source format: the columns, as Spark's DDL
    "files": "__ow_file_time BIGINT, __ow_file_path STRING, __ow_file_block BIGINT, __ow_file_row BIGINT",
    "kafka": "__ow_kafka_partition INT, __ow_kafka_offset BIGINT",
}


def source_order(view: View) -> tuple[str, ...]:
    """The names of the ``SOURCE_ORDER`` columns of ``view``'s source when its rows are changes of
    rows (emit on update with a row key: an op column, a Debezium envelope, or a repeated row key's
    upsert), else none. O(1)."""
    if view.emit != "on_update" or not view.row_key:
        return ()
    return tuple(c.split()[0] for c in SOURCE_ORDER.get(view.source.get("format"), "").split(", ") if c)


def _check_source(view: View) -> None:
    """The [source] rules that join keys (each key alone is checked by its row of KEYS)."""
    src = view.source
    if "max_files_per_trigger" in src and "max_bytes_per_trigger" in src:
        raise ViewFileError(
            f"{view.where('source', 'max_bytes_per_trigger')}: set max_files_per_trigger or "
            "max_bytes_per_trigger, not both (Spark takes one)"
        )
    if src.get("envelope") == "debezium":
        if src.get("format") == "files" and src.get("file_format", "json") != "json":
            raise ViewFileError(
                f'{view.where("source", "envelope")}: Debezium events are JSON: use file_format = "json"'
            )
        if view.emit != "on_update" or not view.row_key:
            raise ViewFileError(
                f'{view.where("source", "envelope")}: Debezium changes need emit = "on_update" and a '
                "[view] row_key (the columns that identify a row)"
            )
        view.op_column = view.op_column or "_op"  # the source adds the op of each row image under this name
    if src.get("late_rows") == "dead_letter":
        where = view.where("source", "late_rows")
        if src.get("dead_letter") is None:
            raise ViewFileError(f"{where}: late rows are kept in the [source] dead_letter folder: set it")
        if view.watermark is None:
            raise ViewFileError(f"{where}: no row is late without a [watermark]; remove late_rows")
        if is_uri(view.checkpoint):
            raise ViewFileError(
                f"{where}: the job reads each batch's watermark from the checkpoint, which must be a local "
                "folder for that"
            )
    if src.get("dead_letter") is not None and view.sink.get("kind") == "parquet":
        raise ViewFileError(
            f"{view.where('source', 'dead_letter')}: dead letters are written by the job's own sinks "
            "(sqlite, postgres, console), not by Spark's Parquet sink"
        )


def _spark_settings(view: View, body: dict) -> dict:
    """[spark]: Spark settings as text, ``spark.`` added where left out (so ``--set
    spark.driver.memory=4g`` works too)."""
    settings = {}
    for key, value in body.items():
        if not isinstance(value, (str, int, float, bool)):
            raise ViewFileError(
                f"{view.where('spark', key)}: a Spark setting and its value, "
                'e.g. "spark.driver.memory" = "4g"'
            )
        name = key if key.startswith("spark.") else f"spark.{key}"
        if not view.trusted and not resource_setting(name):
            raise ViewFileError(
                f"{view.where('spark', key)}: a view file sets only resource settings (memory, cores, "
                f"partitions, batch sizes); {name} can change what the job runs or reads: set it in "
                "OVERWINDOW_SPARK_CONF, or [view] trusted = true for a view file you trust"
            )
        settings[name] = str(value).lower() if isinstance(value, bool) else str(value)
        if name == "spark.sql.session.timeZone" and not utc_always(settings[name]):
            raise ViewFileError(
                f"{view.where('spark', key)}: {value} is not UTC: Spark hands a stream's timestamps "
                "to Python as wall-clock times of the session's zone, where overwindow reads instants "
                "(where the offset changes an hour repeats, and rows would change); leave it out, "
                "the job runs in UTC"
            )
    return settings


def _top_line(text: str, name: str) -> int | str:
    for number, line in enumerate(text.splitlines(), 1):
        if line.split("=", 1)[0].strip().strip("\"'") == name:
            return number
    return "?"


# OverWindow's keyword arguments and the view-file keys they come from
_SPEC_WORDS = {
    "opColumn": "op_column",
    "rowKey": "row_key",
    "stateLayout": "state_layout",
    "maxRowsPerKey": "max_rows_per_key",
    "keyBuckets": "key_buckets",
    "stateTtl": "state_ttl",
}


def spec_problem(view: View, error: WindowSpecError) -> str:
    """A spec error as a view-file problem: the [view] key it is about, its line, its words."""
    key = _spec_key(str(error))
    return f"{view.where('view', view.calls_key if key == 'calls' else key)}: {_view_words(str(error))}"


def _spec_key(message: str) -> str:
    """The [view] key a spec error is about (the calls unless it names another argument)."""
    for word, key in _SPEC_WORDS.items():
        if message.startswith(word):
            return key
    return "calls"


def _view_words(message: str) -> str:
    """A spec error in view-file words: ``opColumn='op'`` -> ``op_column = "op"``."""
    for word, key in _SPEC_WORDS.items():
        message = message.replace(word, key)
    return re.sub(r"\b(op_column|row_key|state_layout|emit)='([^']*)'", r'\1 = "\2"', message)


# a key's kind (``Key.kind``, which ``_kind_error`` checks) as the key reference shows its type
KIND_WORDS = {
    "text": "text",
    "flag": "true or false",
    "count": "whole number above 0",
    "buckets": 'whole number above 0, "per key" or "chosen"',
    "offset": "interval text or number",
    "names": "column name or list of them",
    "texts": "list of text",
    "table": "TOML table",
}


def key_reference() -> str:
    """The view-file key reference as a Markdown table (docs/reference/view-keys.md, which
    scripts/gen_docs.py writes; `overwindow keys` prints it)."""
    rows = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for section in SECTIONS:
        needed = "required" if section.required else "optional"
        rows.append(f"| **`[{section.name}]`** | section | {needed} | {section.meaning} |")
        for k in (k for k in KEYS if k.section == section.name):
            default = "required" if k.required else "-" if k.default is None else f"`{_toml(k.default)}`"
            bar = " \\| "  # a literal | inside a Markdown table cell
            meaning = k.meaning + (f" ({bar.join(k.choices)})" if k.choices else "")
            if k.when is not None:
                meaning += f"; only with `{k.when[1]} = " + bar.join(f'"{v}"' for v in k.when[2]) + "`"
            rows.append(f"| `{k.name}` | {KIND_WORDS[k.kind]} | {default} | {meaning} |")
    return "\n".join(rows)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = [k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else f'"{k}"' for k in value]  # a.b: quoted
        return (
            "{}"
            if not value
            else "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in zip(keys, value.values())) + " }"
        )
    return str(value)
