"""The keys a view file may hold: one ``Key`` per key (section, name, kind, default, meaning, where
it applies) in ``KEYS``, the checks of a value against its key's kind, where each key sits in the
file (``key_lines``) and the nearest known name to an unknown one (``suggest``). The docs' key
reference (docs/reference/view-keys.md) is ``key_reference()`` of the table; ``overwindow.pipeline.view``
reads a file with it.

>>> KEYS_BY_NAME["view", "partition_by"].default
[]
>>> suggest("partiton_by", "view")
'partition_by'
>>> kind_error(KEYS_BY_NAME["view", "max_rows_per_key"], 0)
'a positive whole number, got 0'
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from overwindow.spec import (
    DEFAULT_KEY_BUCKETS,
    EMIT_MODES,
    FEW_KEY_BUCKETS,
    FEW_PARTITIONS,
    PER_KEY,
    STATE_LAYOUTS,
)

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
        "trigger",
        "text",
        "how often the view's micro-batches start, each a commit into the sink ('500 milliseconds'; "
        "'0 seconds': each as soon as the one before ends): shorter lowers the latency of emit on "
        "update (docs/performance.md, Latency); ignored by --once",
        "1 second",
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


def kind_error(key: Key, value) -> str | None:
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


def key_applies(key: Key, doc: dict) -> bool:
    """Whether ``key`` applies to the parsed file ``doc``: it has no ``when``, or the key its
    ``when`` names holds (or defaults to) one of the values. O(1)."""
    if key.when is None:
        return True
    section, name, values = key.when
    found = doc.get(section, {}).get(name, KEYS_BY_NAME[section, name].default)
    return found in values


def set_override(doc: dict, dotted: str, value) -> str | None:
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


# a key's kind (``Key.kind``, which ``kind_error`` checks) as the key reference shows its type
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
            default = "required" if k.required else "-" if k.default is None else f"`{toml_value(k.default)}`"
            bar = " \\| "  # a literal | inside a Markdown table cell
            meaning = k.meaning + (f" ({bar.join(k.choices)})" if k.choices else "")
            if k.when is not None:
                meaning += f"; only with `{k.when[1]} = " + bar.join(f'"{v}"' for v in k.when[2]) + "`"
            rows.append(f"| `{k.name}` | {KIND_WORDS[k.kind]} | {default} | {meaning} |")
    return "\n".join(rows)


def toml_value(value) -> str:
    """``value`` (a key's default, or a value a view file gives) written as TOML.

    >>> toml_value({"a.b": [1, True]})
    '{ "a.b" = [1, true] }'
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = [k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else f'"{k}"' for k in value]  # a.b: quoted
        return (
            "{}"
            if not value
            else "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in zip(keys, value.values())) + " }"
        )
    return str(value)
