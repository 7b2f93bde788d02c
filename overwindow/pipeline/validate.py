"""``overwindow validate``: everything about a view that can be checked without data and without a
JVM, in view-file words; ``overwindow run`` does the same before it starts Spark.

Checked: the schema parses as Spark reads it (overwindow.pipeline.spark_strings) and every column
can cross to Python; partition, ORDER BY, row-key, op and watermark columns exist with usable types;
the calls build against the schema (the state machine and its output columns, on an empty table);
the watermark delay parses as ``withWatermark`` reads it; no column or alias takes a name the output
keeps for itself; the source folder exists; the sink's and the checkpoint's folders exist or can be
created, and lie outside the source folder; the PostgreSQL connection string is set and readable;
Kafka settings are well formed; the view matches the one its checkpoint was started with
(overwindow.pipeline.fingerprint); and across the views of one job, no two share a checkpoint or a
table. ``preflight`` (run only) then connects to what is outside: the database, the Kafka brokers.

>>> _kafka_servers_problem("broker:9092,10.0.0.7:9093") is None
True
>>> _kafka_servers_problem("broker")
"'broker' is not host:port"
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import sys
import tempfile
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.bind import bind_groups
from overwindow.logical.expr import DIALECT
from overwindow.pipeline import dsn as dsn_text
from overwindow.pipeline.spark_strings import SparkStringError, parse_delay, parse_schema, parse_trigger
from overwindow.pipeline.view import SOURCE_ORDER, View, ViewFileError, is_uri, source_order
from overwindow.pipeline.view_query import spec_problem
from overwindow.spark import compat
from overwindow.spark.bind import results_in_spark
from overwindow.spark.query import filter_problem, query_columns, result_names
from overwindow.streaming.contract import CHANGE, ROW_ID

# Kafka client settings Spark's connector refuses (it manages them itself), and the view key that
# replaces each where there is one
SPARK_MANAGED_KAFKA_OPTIONS = {
    "auto.offset.reset": "starting_offsets",
    "enable.auto.commit": None,
    "key.deserializer": None,
    "value.deserializer": None,
    "interceptor.classes": None,
    "bootstrap.servers": "bootstrap_servers",
}
BOOKKEEPING_TABLE = "_overwindow_batches"  # the sinks' table of applied batches
POSTGRES_NAME_BYTES = 63  # PostgreSQL cuts longer identifiers, silently


@dataclass
class Checked:
    """A view that passed: its input columns (Spark and Arrow) and its output columns."""

    view: View
    struct: object  # pyspark StructType of the source
    schema: pa.Schema  # the Arrow schema the state machine reads
    output: pa.Schema  # the state machine's output columns (the input's and the calls')
    watermarked: bool  # the ORDER BY column carries the watermark (emit on update evicts)
    columns: list[str] | None = None  # the table's columns: the output's, or a query's SELECT list

    def __post_init__(self):
        if self.columns is None:
            self.columns = list(self.output.names)


def warn(warning: str) -> None:
    """A view's warning, on stderr: ``validate`` and ``run`` (before Spark starts) say the same."""
    print(f"overwindow: warning: {warning}", file=sys.stderr)


def check_views(views: list[View], create: bool = False, warn=None) -> list[Checked]:
    """Check each view, then the views together; ``create``: make the sink's and checkpoint's
    folders (run does, validate does not); ``warn``: called with each warning the check adds to a
    view's ``warnings`` (validate and run say the same). Raises ViewFileError with one line per
    problem."""
    checked, problems = [], []
    for view in views:
        known = len(view.warnings)
        try:
            checked.append(check_view(view, create))
        except ViewFileError as e:
            problems.append(str(e))
        for warning in view.warnings[known:] if warn is not None else ():
            warn(warning)
    problems += _shared_places(views)
    if problems:
        raise ViewFileError("\n".join(problems))
    return checked


def check_view(view: View, create: bool = False) -> Checked:
    """Everything checkable about one view without data or a JVM (see the module docstring)."""
    from overwindow.pipeline.checkpoint import damaged_files
    from overwindow.pipeline.fingerprint import check_checkpoint

    problems: list[str] = []
    out = _columns(view, problems)
    problems += _source_problems(view)
    problems += _sink_problems(view, out, create)
    problems += _path_problems(view)
    if not problems and not is_uri(view.checkpoint):  # Spark's account names neither file nor cause
        where = view.where("sink", "checkpoint")
        problems += [f"{where}: {damage}" for damage in damaged_files(view.checkpoint)]
    if not problems:
        problems += check_checkpoint(view, out)
    if problems:
        raise ViewFileError("\n".join(problems))
    return out


def _names_a_field(node, empty: pa.Table) -> bool:
    """Whether a column reference reads a field of a struct, map or array column of ``empty``."""
    names = {c.lower(): c for c in empty.column_names}
    return any(
        p.name.lower() in names and pa.types.is_nested(empty.schema.field(names[p.name.lower()]).type)
        for p in node.parts[:-1]
    )


def _columns(view: View, problems: list[str]) -> Checked | None:
    """The schema, the key columns and the calls against it; None when the schema cannot be read."""
    from pyspark.sql import types as T

    from overwindow.physical.columns import column_of, resolve_column
    from overwindow.spark.boundary import arrow_schema
    from overwindow.streaming.assemble import Assembler
    from overwindow.streaming.machines import machine_for

    try:
        struct = parse_schema(view.source["schema"])
    except SparkStringError as e:
        problems.append(f"{view.where('source', 'schema')}: Spark cannot read it: {e}")
        return None
    names = [f.name for f in struct.fields]
    folded: dict[str, str] = {}
    for name in names:
        if name.lower() in folded:
            problems.append(
                f"{view.where('source', 'schema')}: columns `{folded[name.lower()]}` and `{name}` differ "
                "only in case; Spark and SQLite do not tell them apart"
            )
        folded[name.lower()] = name
    if view.source.get("envelope") == "debezium":  # the source adds each row image's op as a column
        op = view.op_column
        if op.lower() in folded:
            problems.append(
                f"{view.where('source', 'schema')}: `{folded[op.lower()]}` is the op column the Debezium "
                f"source adds itself ([view] op_column, default _op): leave it out of the schema, which "
                "describes the row images, or name another op_column"
            )
        struct = T.StructType([*struct.fields, T.StructField(op, T.StringType(), True)])
        names.append(op)
    for _, spec in view.groups:
        try:
            spec.check_columns(names)
        except WindowSpecError as e:
            problems.append(f"{view.where('source', 'schema')}: {e}")
    fields = []
    for f in struct.fields:
        try:
            fields.append(arrow_schema(T.StructType([f])).field(0))
        except Exception as e:
            problems.append(
                f"{view.where('source', 'schema')}: column `{f.name}` of type {f.dataType.simpleString()} "
                f"cannot be handed to Python (Arrow): {str(e).splitlines()[0]}"
            )
    if problems:
        return None
    schema = pa.schema(fields)
    empty = schema.empty_table()

    def column(section: str, key: str, name: str) -> str | None:
        try:
            return resolve_column(empty, name)
        except WindowSpecError as e:
            problems.append(f"{view.where(section, key)}: {e}")
            return None

    partition_key = "query" if view.query is not None else "partition_by"
    # what the query's * gives: on update the op column is no part of a row (select's ``hidden``)
    op = (view.op_column or "").lower() if view.emit == "on_update" else ""
    starred = [n for n in names if n.lower() != op]
    if view.query is not None:  # every column the query names is a [source] column
        windowed = {
            id(c) for e in view.query.columns for w in e.find_all(exp.Window) for c in w.find_all(exp.Column)
        }
        seen = set()
        for node in query_columns(view.query):
            key = (node.sql(dialect=DIALECT), id(node) in windowed)
            if key in seen:
                continue
            seen.add(key)
            try:
                column_of(node, empty)
            except WindowSpecError as e:
                # outside the windows Spark itself computes a struct's field (WHERE s.a > 0)
                if id(node) in windowed or not _names_a_field(node, empty):
                    problems.append(f"{view.where('view', 'query')}: {e}")
        problem = filter_problem(view.query, result_names(view.query, starred))
        if problem:
            problems.append(f"{view.where('view', 'query')}: {problem}")
    for name in dict.fromkeys(k for keys, _ in view.groups for k in keys):
        if not isinstance(name, str):  # an expression: Spark computes it, over [source] columns
            continue  # (query_columns above checked them)
        found = column("view", partition_key, name)
        if found is not None and not _groupable(struct[found].dataType):
            problems.append(
                f"{view.where('view', partition_key)}: Spark cannot group by `{found}` of type "
                f"{struct[found].dataType.simpleString()} (maps and variants are not comparable)"
            )
    for name in view.row_key or []:
        column("view", "row_key", name)
    if view.op_column:
        found = column("view", "op_column", view.op_column)
        if found is not None and not pa.types.is_string(schema.field(found).type):
            problems.append(
                f"{view.where('view', 'op_column')}: `{found}` must be a STRING of insert/update/delete "
                f"(or c/u/d, +I/-U/+U/-D), not {struct[found].dataType.simpleString()}"
            )
    watermarked = False
    if view.watermark:
        found = column("watermark", "column", view.watermark["column"])
        if found is not None and not isinstance(struct[found].dataType, T.TimestampType):
            problems.append(
                f"{view.where('watermark', 'column')}: Spark puts a watermark only on a TIMESTAMP column; "
                f"`{found}` is {struct[found].dataType.simpleString().upper()}"
            )
        try:
            parse_delay(view.watermark["delay"])
        except SparkStringError as e:
            problems.append(f"{view.where('watermark', 'delay')}: Spark cannot read it: {e}")
        watermarked = found is not None
        for order in dict.fromkeys(spec.order_column for _, spec in view.groups):
            ordered = None
            if order is not None:
                try:
                    ordered = resolve_column(empty, order)
                except WindowSpecError:
                    ordered = None  # the calls' own check below names it
            watermarked = watermarked and found == ordered
            if found is not None and ordered is not None and found != ordered:
                if view.emit == "on_window_close":
                    problems.append(
                        f"{view.where('watermark', 'column')}: emit on window close follows the watermark "
                        f"on the ORDER BY column `{ordered}`, not on `{found}`"
                    )
                else:
                    view.warnings.append(
                        f"{view.where('watermark', 'column')}: the watermark is on `{found}`, not on the "
                        f"ORDER BY column `{ordered}`: no row is ever late and the state keeps every row"
                    )
    if problems:
        return None
    # the machines as the job builds them: over what Spark computes ahead of them (bind), typed
    # here by the batch evaluator's expressions; an expression they lack (regexp_replace(...)) is
    # typed by Spark when the job starts, which builds the machines again before any row is read
    pre, groups = bind_groups([(keys, spec.expressions) for keys, spec in view.groups])
    typed = _typed(pre, schema)
    if typed is not None and source_order(view):  # beside each change the source puts its place
        typed = pa.schema([*typed, *arrow_schema(parse_schema(SOURCE_ORDER[view.source["format"]]))])
    # each machine computes its calls; Spark what they go into (x - lag(x) OVER w), after them
    runs = [
        (keys, results_in_spark(spec.over(run))[0]) for (keys, run), (_, spec) in zip(groups, view.groups)
    ]
    try:
        if typed is None:
            machines = pa.schema([])
        elif view.several:
            machines = Assembler.of(runs, typed, watermarked).output_schema
        else:
            keys, machine = runs[0]
            keys = keys if view.spec.key_buckets else ()  # as the adapter groups
            machines = machine_for(machine, typed, watermarked, keys=keys).output_schema
    except WindowSpecError as e:
        problems.append(spec_problem(view, e))
        return None
    # the input's columns, the windows' and what Spark computes from them (typed where known)
    types = dict(zip(machines.names, machines.types))
    output = pa.schema([pa.field(n, types.get(n, pa.null())) for n in _output_names(view, schema)])
    seen: dict[str, str] = {}
    for name in output.names:
        if name.lower() in seen:
            problems.append(
                f"{view.where('view', view.calls_key)}: the output has two columns named "
                f"`{seen[name.lower()]}` and `{name}` (an alias repeats an input column or another alias)"
            )
        seen[name.lower()] = name
    columns = None
    if view.query is not None:  # what run_query selects: the SELECT list, then the changelog's columns
        listed = list(view.query.outer or result_names(view.query, starred))
        columns = listed + [c for c in (CHANGE, ROW_ID) if c in output.names]
    return Checked(view, struct, schema, output, watermarked, columns)


def _typed(pre, schema: pa.Schema) -> pa.Schema | None:
    """``schema`` with the columns Spark computes ahead of the windows (``pre``), typed by the batch
    evaluator's expressions; None when one is beyond them (Spark types it). O(expressions)."""
    from overwindow.physical.expressions import evaluate_expr

    empty = schema.empty_table()
    fields = list(schema)
    for name, e in pre:
        try:
            fields.append(pa.field(name, evaluate_expr(e, empty).type))
        except WindowSpecError:
            return None
    return pa.schema(fields)


def _output_names(view: View, schema: pa.Schema) -> list[str]:
    """The output's columns: the input's, each window column's (a column of a query that combines
    windows after its calls'), and on update the changelog's (whose op the op column said)."""
    op = (view.op_column or "").lower() if view.emit == "on_update" else ""
    names = [n for n in schema.names if n.lower() != op]
    names += [e.alias for _, spec in view.groups for e in spec.expressions]
    names += [e.alias for e in view.computed]
    if view.emit == "on_update":
        names += [CHANGE] + ([] if view.row_key else [ROW_ID])
    return names


def _groupable(t) -> bool:
    from pyspark.sql import types as T

    if isinstance(t, (T.MapType, getattr(T, "VariantType", T.MapType))):  # VARIANT: PySpark 4.0 on
        return False
    if isinstance(t, T.ArrayType):
        return _groupable(t.elementType)
    if isinstance(t, T.StructType):
        return all(_groupable(f.dataType) for f in t.fields)
    return True


def _kafka_servers_problem(servers: str) -> str | None:
    for server in servers.split(","):
        server = server.strip()
        m = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(\d+)", server)
        if m is None:
            return f"{server!r} is not host:port"
        if not 0 < int(m.group(2)) < 65536:
            return f"{server!r}: the port is 1 to 65535"
    return None


def _source_problems(view: View) -> list[str]:
    src = view.source
    problems = []
    if src["format"] == "files":
        path = src["path"]
        if not is_uri(path):
            base = re.split(r"[*?\[{]", path, maxsplit=1)[0]  # a glob: its fixed part must exist
            base = base if base == path else os.path.dirname(base)
            if not os.path.isdir(base):
                what = "is a file, not a folder" if os.path.exists(base) else "does not exist"
                problems.append(f"{view.where('source', 'path')}: {base} {what}")
        return problems
    problems += _kafka_problems(view, "source")
    try:
        parse_delay(src["idle_timeout"])
    except SparkStringError as e:
        problems.append(f"{view.where('source', 'idle_timeout')}: {e} (e.g. '30 seconds')")
    connector = "spark-sql-kafka" in os.environ.get("OVERWINDOW_SPARK_PACKAGES", "")
    if src["reader"] == "python" or (src["reader"] == "auto" and not connector):
        try:  # the Python reader is what runs: refused before a broker is asked, on PySpark 3.5
            compat.require_python_kafka_reader()
        except compat.SparkVersionError as e:
            problems.append(f"{view.where('source', 'reader')}: {e}")
    if src["reader"] == "python" and importlib.util.find_spec("confluent_kafka") is None:
        need = "overwindow's Kafka reader needs confluent-kafka: pip install 'overwindow[kafka]'"
        problems.append(f"{view.where('source', 'reader')}: {need}")
    for key in src.get("options", {}):
        if key in SPARK_MANAGED_KAFKA_OPTIONS:
            instead = SPARK_MANAGED_KAFKA_OPTIONS[key]
            problems.append(
                f"{view.where('source', 'options')}: {key} is managed by the job"
                + (f"; set [source] {instead} instead" if instead else "; remove it")
            )
    return problems


def _kafka_problems(view: View, section: str) -> list[str]:
    """What is wrong with a Kafka source's or sink's brokers, topic and ``env:`` options."""
    place = view.section(section)
    problems = []
    reason = _kafka_servers_problem(place["bootstrap_servers"])
    if reason:
        problems.append(f"{view.where(section, 'bootstrap_servers')}: {reason} (e.g. broker:9092)")
    topic = place["topic"]
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", topic) or topic in (".", ".."):
        problems.append(
            f"{view.where(section, 'topic')}: {topic!r} is not a Kafka topic name (one topic; letters, "
            "digits, '.', '_', '-', up to 249)"
        )
    for key, value in place.get("options", {}).items():
        if isinstance(value, str) and value.startswith("env:") and value[4:] not in os.environ:
            problems.append(
                f"{view.where(section, 'options')}: options.{key} reads the environment variable "
                f"{value[4:]}, which is not set"
            )
    return problems


def _creatable(path: str) -> str | None:
    """Why a folder cannot be made at ``path`` (None when it exists or can be made)."""
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return f"{probe} is a file, not a folder"
    if probe != path and not os.access(probe, os.W_OK | os.X_OK):
        return f"{path} cannot be created: {probe} is not writable"
    if probe == path and not os.access(path, os.W_OK | os.X_OK):
        return f"{path} is not writable"
    return None


def _sink_problems(view: View, out: Checked | None, create: bool) -> list[str]:
    sink = view.sink
    problems = []
    folders = [("sink", "checkpoint", view.checkpoint)]
    if sink["kind"] == "sqlite":
        if os.path.isdir(sink["path"]):
            problems.append(f"{view.where('sink', 'path')}: {sink['path']} is a folder, not a database file")
        folders.append(("sink", "path", os.path.dirname(sink["path"])))
    if sink["kind"] in ("parquet", "delta"):
        folders.append(("sink", "path", sink["path"]))
    if sink["kind"] == "iceberg":
        folders += [
            ("sink", "catalog", os.path.dirname(sink["catalog"])),
            ("sink", "warehouse", sink["warehouse"]),
        ]
        if not re.fullmatch(r"[^.]+(\.[^.]+)+", sink["table"]):
            problems.append(f"{view.where('sink', 'table')}: an Iceberg table is named namespace.table")
    for section, key, folder in folders:
        if is_uri(folder):
            continue
        reason = _creatable(folder)
        if reason:
            problems.append(f"{view.where(section, key)}: {reason}")
        elif create:
            os.makedirs(folder, exist_ok=True)
    try:
        parse_trigger(view.trigger)
    except SparkStringError as e:
        problems.append(f"{view.where('sink', 'trigger')}: {e} (e.g. '500 milliseconds')")
    table = sink.get("table")
    if table is not None and table.lower() == BOOKKEEPING_TABLE:
        problems.append(f"{view.where('sink', 'table')}: {table} is the sinks' own table of applied batches")
    if sink["kind"] == "sqlite" and table is not None and table.lower().startswith("sqlite_"):
        problems.append(f"{view.where('sink', 'table')}: SQLite keeps names starting with sqlite_ for itself")
    if sink["kind"] == "delta" and out is not None:
        unknown = [c for c in sink.get("partition_by") or [] if c not in out.columns]
        if unknown:
            problems.append(
                f"{view.where('sink', 'partition_by')}: the view writes no column {unknown[0]} "
                f"(it writes {', '.join(c for c in out.columns if c != CHANGE)})"
            )
    if sink["kind"] == "kafka":
        problems += _kafka_problems(view, "sink")
        if importlib.util.find_spec("confluent_kafka") is None:
            need = "the Kafka sink writes with confluent-kafka: pip install 'overwindow[kafka]'"
            problems.append(f"{view.where('sink', 'kind')}: {need}")
    if sink["kind"] == "postgres":
        long = [n for n in [table] + (out.columns if out else []) if len(n.encode()) > POSTGRES_NAME_BYTES]
        if long:
            problems.append(
                f"{view.where('sink', 'table')}: PostgreSQL cuts names longer than {POSTGRES_NAME_BYTES} "
                f"bytes, so two could become one: {', '.join(map(repr, long))}"
            )
        problems += _dsn_problems(view)
    return problems


def _dsn_problems(view: View) -> list[str]:
    env = view.sink["dsn_env"]
    value = os.environ.get(env)
    if not value:
        return [
            f'{view.where("sink", "dsn_env")}: kind = "postgres" reads its connection string from the '
            f"environment variable {env}, which is not set"
        ]
    try:
        import psycopg  # noqa: F401
    except ImportError:
        need = "the PostgreSQL sink needs psycopg: pip install 'overwindow[postgres]'"
        return [f"{view.where('sink', 'kind')}: {need}"]
    try:
        dsn_text.parse(value)
    except dsn_text.DsnError as e:
        return [f"{view.where('sink', 'dsn_env')}: the connection string in {env}: {e}"]
    return []


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _path_problems(view: View) -> list[str]:
    """Nothing the job writes may lie in the source folder: Spark would read it back as input. That
    covers the sink, the checkpoint and Spark's scratch folder; the working folder (where a shell
    puts a log) is a warning."""
    if view.source["format"] != "files" or is_uri(view.source["path"]):
        return []
    source = view.source["path"]
    problems = [
        f"{view.where(section, key)}: {path} lies in the source folder {source}, whose every file Spark "
        "reads as input; put it elsewhere"
        for section, key, path in view.written_paths()
        if _inside(path, source)
    ]
    scratch = os.environ.get("SPARK_LOCAL_DIRS", tempfile.gettempdir()).split(",")[0]
    if _inside(scratch, source):
        problems.append(
            f"{view.where('source', 'path')}: the source folder {source} holds {scratch}, where Spark "
            "writes its scratch files, which it would read back as input; use a folder of its own"
        )
    if _inside(os.getcwd(), source):
        view.warnings.append(
            f"{view.where('source', 'path')}: the job runs inside its source folder {source}: a log or "
            "any other file written here is read as input"
        )
    return problems


def _shared_places(views: list[View]) -> list[str]:
    """Two views of one job may not share a checkpoint or a table, nor write into each other's source."""
    problems = []
    for i, a in enumerate(views):
        for b in views[i + 1 :]:
            if _inside(a.checkpoint, b.checkpoint) or _inside(b.checkpoint, a.checkpoint):
                problems.append(
                    f"{b.where('sink', 'checkpoint')}: the checkpoint of {a.path} too; one per view"
                )
            same = _same_table(a, b)
            if same:  # a folder's views name it by path
                key = {"parquet": "path", "delta": "path", "kafka": "topic"}.get(b.sink["kind"], "table")
                problems.append(f"{b.where('sink', key)}: {same}")
            for x, y in ((a, b), (b, a)):
                if y.source["format"] == "files" and not is_uri(y.source["path"]):
                    for section, key, path in x.written_paths():
                        if _inside(path, y.source["path"]):
                            problems.append(
                                f"{x.where(section, key)}: {path} lies in the source folder of {y.path}"
                            )
    return problems


def _same_table(a: View, b: View) -> str | None:
    """Why ``a`` and ``b`` write one table (None when they do not)."""
    kind = a.sink["kind"]
    if kind == b.sink["kind"] == "kafka":
        where = [(v.sink["bootstrap_servers"], v.sink["topic"]) for v in (a, b)]
        return f"the Kafka topic {a.sink['topic']} of {a.path} too" if where[0] == where[1] else None
    if kind != b.sink["kind"] or kind not in ("sqlite", "postgres", "parquet", "delta", "iceberg"):
        return None
    if kind == "iceberg":
        same = (a.sink["catalog"], a.sink["table"]) == (b.sink["catalog"], b.sink["table"])
        return f"the Iceberg table {a.sink['table']} of {a.path} too" if same else None
    if kind in ("parquet", "delta"):
        if _inside(a.sink["path"], b.sink["path"]) or _inside(b.sink["path"], a.sink["path"]):
            return f"the {kind.capitalize()} folder of {a.path} too"
        return None
    ta, tb = a.sink["table"], b.sink["table"]
    if kind == "sqlite":
        if os.path.realpath(a.sink["path"]) == os.path.realpath(b.sink["path"]) and ta.lower() == tb.lower():
            return f"{tb!r} is the table {ta!r} of {a.path} (SQLite ignores case in names)"
        return None
    same_server = os.environ.get(a.sink["dsn_env"]) == os.environ.get(b.sink["dsn_env"])
    if same_server and ta.encode()[:POSTGRES_NAME_BYTES] == tb.encode()[:POSTGRES_NAME_BYTES]:
        return (
            f"{tb!r} is the table {ta!r} of {a.path} (PostgreSQL keeps the first {POSTGRES_NAME_BYTES} bytes)"
        )
    return None


def preflight(views: list[View], timeout: float = 10.0) -> None:
    """What ``run`` checks outside the machine before Spark starts: each PostgreSQL sink accepts a
    connection, and some Kafka broker of each Kafka source and sink answers on its port."""
    problems = []
    for view in views:
        if view.sink["kind"] == "postgres":
            try:
                dsn_text.try_connect(os.environ[view.sink["dsn_env"]], int(timeout))
            except dsn_text.DsnError as e:
                problems.append(
                    f"{view.where('sink', 'dsn_env')}: PostgreSQL from {view.sink['dsn_env']}: {e}"
                )
        for section in [s for s in ("source", "sink") if view.section(s).get("bootstrap_servers")]:
            reasons = []
            for server in view.section(section)["bootstrap_servers"].split(","):
                host, _, port = server.strip().rpartition(":")
                try:
                    socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
                    break
                except OSError as e:
                    reasons.append(f"{server.strip()}: {e.strerror or e}")
            else:
                where = view.where(section, "bootstrap_servers")
                problems.append(f"{where}: no Kafka broker answers ({'; '.join(reasons)})")
    if problems:
        raise ViewFileError("\n".join(problems))
