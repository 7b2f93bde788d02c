"""The view a checkpoint belongs to: a fingerprint of everything that shapes its state and its sink,
kept in the checkpoint folder and compared before a run starts.

A view changed under an existing checkpoint would otherwise run on state of another shape (an added
call, another emit mode), or Spark's state schema check would stop it with advice that corrupts
state when followed. The fingerprint holds the source's columns and place (the folder of a file
source: Spark's checkpoint keeps absolute file paths, so a moved folder is read again), the
partition, the calls (as SQL, so layout and spacing do not count), the query, the row key, the op
column, the emit mode, the state layout, key buckets and format, the watermark column, and the sink's kind,
place and table; not the watermark delay or batch sizes, which a checkpoint may change. It is
recorded when a run starts; a checkpoint Spark has not committed to yet is free to take another
view.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

from overwindow.pipeline.view import View, is_uri
from overwindow.pipeline.view_keys import CHOSEN

FILE = "overwindow-view.json"
VERSION = 1
# fingerprint field -> the view-file key it comes from
KEYS = {
    "schema": "[source] schema",
    "source": "[source] path / topic",
    "partition_by": "[view] partition_by",
    "calls": "[view] calls",
    "query": "[view] query",
    "row_key": "[view] row_key",
    "op_column": "[view] op_column",
    "emit": "[view] emit",
    "state_layout": "[view] state_layout",
    "key_buckets": "[view] key_buckets",
    "state_format": "overwindow's state format",
    "watermark_column": "[watermark] column",
    "sink": "[sink] kind / path / table",
}


def fingerprint(checked) -> dict:
    """The fingerprint of a checked view (overwindow.pipeline.validate.Checked)."""
    from overwindow.streaming.state import FORMAT_VERSION

    view: View = checked.view
    src, sink = view.source, view.sink
    return {
        "version": VERSION,
        "view_file": os.path.abspath(view.path),
        "schema": [f"{f.name} {f.dataType.simpleString()}" for f in checked.struct.fields],
        "source": src["path"] if src["format"] == "files" else f"kafka topic {src['topic']}",
        "partition_by": list(view.partition_by),
        "calls": [_sql(e) for e in _written(view.spec.expressions, view.computed)]
        if not view.several  # several window groups: each call with its PARTITION BY
        else [
            _sql(e)
            for keys, spec in view.groups
            for e in spec.over(_written(spec.expressions, view.computed)).partitioned(tuple(keys))
        ],
        "query": _query_sql(view),
        "row_key": list(view.row_key) if view.row_key else None,
        "op_column": view.op_column,
        "emit": view.emit,
        "state_layout": view.spec.state_layout,
        "key_buckets": CHOSEN if view.spec.buckets_chosen else view.spec.key_buckets,
        "key_bucket_values": view.bucket_values,
        "state_format": FORMAT_VERSION,
        "watermark_column": view.watermark["column"] if view.watermark else None,
        "sink": {k: sink[k] for k in ("kind", "path", "table") if k in sink},
    }


def _written(expressions, computed) -> list:
    """A window group's expressions as the query wrote them: where Spark computes a column over
    calls of this group alone (``x - lag(x) OVER w AS d``: the machine runs each call as a column of
    its own, ``computed``), the column in place of its calls. O(expressions).

    >>> from overwindow.spec import OverWindow
    >>> from overwindow.spark.bind import results_in_spark
    >>> d = OverWindow("x - lag(x) OVER (ORDER BY t) AS d").expressions[0]
    >>> machine, _, _ = results_in_spark(OverWindow(str(d)))
    >>> [e.alias for e in _written(machine.expressions, (d,))]
    ['d']
    """
    owner = {c.alias: w for w in computed for c in w.calls}
    aliases = {e.alias for e in expressions}
    out = []
    for e in expressions:
        w = owner.get(e.alias)
        if w is None or not all(c.alias in aliases for c in w.calls):
            out.append(e)  # a call of its own, or of a column over several groups: kept as a call
        elif w.alias not in {x.alias for x in out}:  # its calls' PARTITION BY is the group's
            out.append(replace(w, calls=tuple(replace(c, partition_by=()) for c in w.calls)))
    return out


def _sql(expression) -> str:
    """A window expression as normalized SQL (defaults spelt out), so rewording does not count."""
    from overwindow.logical.call import quote

    if expression.expr is None:
        return str(expression.calls[0])
    sql = expression.expr.sql
    for call in expression.calls:
        sql = sql.replace(f"`{call.alias}`", call.alias).replace(
            call.alias, f"{call.function_sql()} OVER ({call.over_sql()})"
        )
    return f"{sql} AS {quote(expression.alias)}"


def _query_sql(view: View) -> str | None:
    """The view's query as normalized SQL (its WHERE, SELECT list and filter shape the table), its
    windows as ``WINDOW`` (they are compared as the calls, where frames are spelt out), or None."""
    if view.query is None:
        return None
    from sqlglot import exp

    from overwindow.logical.expr import DIALECT, read_sql

    tree = read_sql(view.query.text)  # its literals as Spark reads them: 'it''s' is not 'it' 's'
    for window in list(tree.find_all(exp.Window)):
        window.replace(exp.var("WINDOW"))
    return tree.sql(dialect=DIALECT)


def _started(checkpoint: str) -> bool:
    """Spark has written offsets into the checkpoint (so it holds a position and maybe state)."""
    offsets = os.path.join(checkpoint, "offsets")
    return os.path.isdir(offsets) and any(not n.startswith(".") for n in os.listdir(offsets))


def started_key_buckets(checkpoint: str):
    """The key buckets a started checkpoint runs: the count given, ``CHOSEN``, or ``PER_KEY`` for a
    state per key (also for one started before fingerprints were kept); None for a checkpoint not
    started (or on a remote file system, which is not read here: a remote checkpoint started per key
    by an older overwindow needs ``key_buckets = "per key"``)."""
    from overwindow.spec import PER_KEY

    if is_uri(checkpoint) or not _started(checkpoint):
        return None
    try:
        buckets = _recorded(checkpoint).get("key_buckets")
    except (OSError, ValueError):
        return PER_KEY  # no fingerprint: an older overwindow, which hosted a state per key
    return PER_KEY if buckets is None else buckets


def started_bucket_values(checkpoint: str) -> str:
    """What the buckets overwindow chooses group by on a started local checkpoint: what its
    fingerprint records, ``NUMBERED`` where its fingerprint records none (an earlier release's);
    ``SPREAD_NAME`` as this release chooses on a checkpoint not started, without a readable
    fingerprint (an older overwindow's per key, or one lost, whose ``key_buckets = "chosen"``
    written out asks for this release's choice), or remote (not read). Where that is not how the
    checkpoint was started, Spark refuses the grouping key, and ``spark.overwindow.keyBucketValues``
    set to "numbered" runs an earlier release's (``failures`` says so).

    >>> started_bucket_values("s3a://bucket/chk"), started_bucket_values("/no/such/checkpoint")
    ('spread', 'spread')
    """
    from overwindow.spark.grouping import NUMBERED, SPREAD_NAME

    if is_uri(checkpoint) or not _started(checkpoint):
        return SPREAD_NAME
    try:
        return _recorded(checkpoint).get("key_bucket_values", NUMBERED)
    except (OSError, ValueError):
        return SPREAD_NAME


def _recorded(checkpoint: str) -> dict:
    """The fingerprint recorded in ``checkpoint`` (FileNotFoundError: none; OSError, ValueError:
    unreadable)."""
    with open(os.path.join(checkpoint, FILE)) as f:
        return json.load(f)


def _show(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def check_checkpoint(view: View, checked) -> list[str]:
    """Why the view may not run on its checkpoint (empty: it may). A started checkpoint without a
    fingerprint (made by an older overwindow) is accepted with a warning and fingerprinted at run."""
    if is_uri(view.checkpoint) or not _started(view.checkpoint):
        return []
    try:
        old = _recorded(view.checkpoint)
    except FileNotFoundError:
        view.warnings.append(
            f"{view.where('sink', 'checkpoint')}: the checkpoint does not say which view it belongs to "
            "(started by an older overwindow); it is taken to be this one"
        )
        return []
    except (OSError, ValueError) as e:
        return [f"{view.where('sink', 'checkpoint')}: cannot read {FILE} in the checkpoint: {e}"]
    new = fingerprint(checked)
    moved = _moved(old, new)
    if moved:
        return [
            f"{view.where('sink', 'checkpoint')}: the view folder moved from {moved[0]} to {moved[1]}: "
            f"Spark's checkpoint keeps absolute file paths, so every file in the source folder would be "
            f"read again and emitted twice. Move the folder back, or start a new checkpoint and table "
            f"(new [sink] checkpoint and table names)"
        ]
    changes = [
        _change(field, label, old.get(field), new[field])
        for field, label in KEYS.items()
        if old.get(field) != new[field]
    ]
    if not changes:
        return []
    return [
        f"{view.where('sink', 'checkpoint')}: the checkpoint {view.checkpoint} was started by another "
        f"view: {'; '.join(changes)}. Its state and table fit that view only: either run this view "
        "with a new checkpoint and a new table (new [sink] checkpoint and table names), or go back "
        "to the view the checkpoint was started with"
    ]


def _change(field: str, label: str, old, new) -> str:
    """What changed in one fingerprint field: of the calls and the schema's columns, only those that
    changed, by name (a view of ten calls changing one names one). O(calls + columns).

    >>> _change("calls", "[view] calls", ["a(x) AS a", "b(x) AS b"], ["a(x) AS a", "b(y) AS b", "c(x) AS c"])
    '[view] calls: `b` was "b(x) AS b", is now "b(y) AS b"; added "c(x) AS c"'
    >>> _change("schema", "[source] schema", ["k string", "x bigint"], ["x double", "k string"])
    '[source] schema: column `x` was bigint, is now double; in another order'
    >>> _change("emit", "[view] emit", "on_update", "on_window_close")
    '[view] emit was "on_update", is now "on_window_close"'
    """
    named = {"calls": lambda c: c.rsplit(" AS ", 1)[-1], "schema": lambda c: c.split(" ", 1)[0]}.get(field)
    if named is None or not isinstance(old, list) or not all(isinstance(x, str) for x in old):
        return f"{label} was {_show(old)}, is now {_show(new)}"
    before, after = {named(x): x for x in old}, {named(x): x for x in new}
    parts = []
    for name, text in after.items():
        if name not in before:
            parts.append(f"added {_show(text)}" if field == "calls" else f"column `{name}` added")
        elif before[name] != text and field == "calls":
            parts.append(f"`{name}` was {_show(before[name])}, is now {_show(text)}")
        elif before[name] != text:
            parts.append(
                f"column `{name}` was {before[name].split(' ', 1)[1]}, is now {text.split(' ', 1)[1]}"
            )
    parts += [
        f"removed {_show(text)}" if field == "calls" else f"column `{name}` removed"
        for name, text in before.items()
        if name not in after
    ]
    common = [n for n in before if n in after]
    if common != [n for n in after if n in before]:
        parts.append("in another order")
    return f"{label}: {'; '.join(parts)}"


def _moved(old: dict, new: dict) -> tuple[str, str] | None:
    """(old folder, new folder) when the file source moved together with the view file."""
    before, after = old.get("source"), new["source"]
    if before == after or not isinstance(before, str) or not os.path.isabs(before):
        return None
    old_dir, new_dir = os.path.dirname(old.get("view_file", "")), os.path.dirname(new["view_file"])
    if old_dir != new_dir and os.path.relpath(before, old_dir) == os.path.relpath(after, new_dir):
        return old_dir, new_dir
    return None


def record(checked) -> None:
    """Write the view's fingerprint into its checkpoint folder (atomically), unless Spark has
    started the checkpoint for a view already fingerprinted."""
    view = checked.view
    if is_uri(view.checkpoint):
        return
    path = os.path.join(view.checkpoint, FILE)
    if _started(view.checkpoint) and os.path.exists(path):
        return
    os.makedirs(view.checkpoint, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(fingerprint(checked), f, indent=1, ensure_ascii=False)
    os.replace(tmp, path)
