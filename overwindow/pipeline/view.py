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

Every key the file may hold is one row of ``KEYS`` (``overwindow.pipeline.view_keys``: section,
name, kind, default, meaning, where it applies), the docs' key reference (docs/reference/view-keys.md).
A key or section the table does not know is refused with the line it is on and the nearest
known name; a known key that does not apply to the view (``topic`` of a file source) is a warning.
Relative paths are relative to the view file.
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
from overwindow.pipeline.view_keys import (
    CHOSEN,
    KEYS,
    KEYS_BY_NAME,
    SECTIONS,
    SECTIONS_BY_NAME,
    key_applies,
    key_lines,
    kind_error,
    set_override,
    suggest,
)
from overwindow.spark.boundary import utc_always
from overwindow.spark.query import Query
from overwindow.spec import (
    PER_KEY,
    OverWindow,
    watermark_bounds_state,
)
from overwindow.streaming.contract import ROW_ID


class ViewFileError(ValueError):
    """A view file that cannot run; each line of the message names the file, key and line."""


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
    trigger: str = "1 second"  # [sink] trigger: how often the micro-batches start (without --once)
    # what the buckets overwindow chooses group by (overwindow.spark.grouping.BUCKET_VALUES): as
    # the checkpoint was started (fingerprint.started_bucket_values)
    bucket_values: str = "spread"

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
        reason = set_override(doc, dotted, value)
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
        applies = key_applies(key, doc)
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
        reason = kind_error(key, value)
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
    view.trigger = view.sink.pop("trigger")
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
    from overwindow.pipeline.fingerprint import started_bucket_values

    view.bucket_values = started_bucket_values(view.checkpoint)
    # the query's reader imports View: it is imported here, as fingerprint's is in _key_buckets
    from overwindow.pipeline.view_query import check_sandbox, read_query, spec_problem

    given = doc.get("view", {})
    if "query" in v:
        read_query(view, v["query"], given)
    elif "calls" in v:
        view.calls = v["calls"]
        check_sandbox(view, view.calls)
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
