"""Windows over a GROUP BY on a stream, in one query: ``SELECT day, sum(amount) AS total,
avg(sum(amount)) OVER (ORDER BY day ROWS 6 PRECEDING) AS avg7 FROM source GROUP BY day``.

Two stateful operators, chained in Spark's ``append`` output mode:

1. the GROUP BY (``overwindow.streaming.group_by``): Spark computes the keys and the aggregates'
   arguments (the bind step), one ``applyInPandasWithState`` per bucket of group keys keeps the
   live rows and returns a changelog of the groups (insert, update, delete of a group's row: its
   keys and aggregates);
2. the windows, run by ``overwindow.select`` on update over that changelog, keyed by the group keys
   (``rowKey``) with the changelog's op column, over the SELECT list rewritten onto the groups'
   columns (each aggregate by its column, each key expression by its key's).

HAVING filters the groups between the two, as Spark's batch SQL filters them before the windows:
its condition (over the groups' aggregates, computed by the first operator also where the SELECT
list does not show them, and keys) is Spark's to compute, on each change's new aggregates and, on
update, on the previous ones the first operator sends beside them; each change then becomes what it
does to the groups kept (``with_having``, ``group_by.having_changes``): a group entering HAVING is
inserted, one leaving deleted, so the windows see exactly the groups kept.

The result is the batch query's on update: a changelog keyed by the group keys, one change per
group whose row or window values changed. Names and types are Spark's: the query is analysed by
Spark over an empty batch table of the stream's columns first (which also refuses what Spark
refuses, in its words). O(query size) to build.

On window close each group comes out once, when the watermark passes the end of its time bucket
(``closing``: a GROUP BY key that is a bucket of the watermarked column, ``to_date(ts)``, ...):
Spark computes each row's closing time, the GROUP BY machine runs in closing mode in event time
(a timer per bucket of groups at its earliest closing time) and emits each closed group once as an
insert, and the windows run on update over those inserts. ``closing`` refuses queries where a
group closed later could change the window values of rows emitted before, so every change of the
windows is the upsert of a new group's row, and the upserts are the result, append-only.

Example (``events`` a stream)::

    run_grouped(events, parse_query("SELECT k, sum(x) AS s, lag(sum(x)) OVER (ORDER BY k) AS p "
                                    "FROM events GROUP BY k"), emit="on_update")
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pyarrow as pa
import sqlglot
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.bind import ERROR, bind_groups
from overwindow.logical.call import quote
from overwindow.logical.expr import DIALECT, Expr
from overwindow.logical.frame import BoundKind
from overwindow.logical.functions import Kind, lookup
from overwindow.logical.parse import parse_window
from overwindow.spark import compat, executors
from overwindow.spark.adapter import END_OF_INPUT_MS, log, stream_rows, with_companions
from overwindow.spark.bind import with_computed
from overwindow.spark.boundary import (
    arrow_schema,
    check_session_time_zone,
    companions_of,
    output_struct,
    to_arrow,
    with_interval_days,
)
from overwindow.spark.counts import MachineCounts, StageCounts
from overwindow.spark.grouping import bucket_grouping, bucket_of, shuffle_partitions
from overwindow.spark.handback import Handback, handback_struct, handed_back
from overwindow.spec import chosen_key_buckets, column_names
from overwindow.streaming.contract import CHANGE, END_OF_INPUT, UPSERT
from overwindow.streaming.group_by import ASIDE, DELETE, INSERT, OP, UPDATE, GroupBy, having_changes, was

_views = itertools.count()  # names of the empty tables a query is analysed over, unique per process
_AGGREGATE = "__ow_g"  # a group's aggregate in the changelog: __ow_g0, ...
_GROUP_KEY = "__ow_k"  # a GROUP BY key Spark computed (an expression), in the changelog
CLOSE = "__ow_close"  # on window close: a row's closing time, which Spark computes (``closing``)


def run_grouped(df, query, _keep=None, **options):
    """The streaming DataFrame of ``query`` (a ``Query`` with ``group_by``) over ``df``, the table
    after FROM: on update the changelog of the batch query's rows, on window close each group's row
    once, when the watermark closes it (see the module)."""
    closing_mode = options.get("emit", "on_window_close") == "on_window_close"
    # a CDC stream: the input rows' identity and op; the result stays keyed by the GROUP BY keys
    row_key, op_column = options.pop("rowKey", None), options.pop("opColumn", None)
    row_key = [row_key] if isinstance(row_key, str) else row_key
    order = column_names(options.pop("sourceOrder", None))  # the GROUP BY applies the changes
    if closing_mode and (row_key or op_column):
        raise WindowSpecError(
            "windows over a GROUP BY on window close emit each group once, when the watermark closes "
            "it, so they take no changes of rows already grouped: leave out rowKey and opColumn (a "
            f"CDC source), or write emit='on_update', in {query.text!r}"
        )
    if query.where is not None:
        df = df.where(query.where)
    names = _spark_names(df, query)
    tree = _grouped_select(query)
    keys = [_key(k, tree) for k in tree.args["group"].expressions]
    having = having_condition(tree)
    aggregates = _aggregates(tree, having)
    pre, [(bound_keys, bound)] = bind_groups([(_keyed(keys), [parse_window(s) for _, s in aggregates])])
    computed = with_computed(df, pre)
    if closing_mode:  # Spark computes each row's closing time beside the keys
        at = closing(query, watermarked_column(df))
        computed = computed.withColumn(CLOSE, compat.functions(df).expr(at.sql))
    # a row it sets aside names its group, a key Spark computed by the expression written
    shown = {name: e.sql for name, e in pre}
    previous = having is not None and not closing_mode  # HAVING on update: was the group kept before?
    grouped = group_by(
        computed, bound_keys, list(bound), _keep, row_key, op_column, closing_mode, shown, previous, order
    )
    stage_counts = getattr(grouped, "overwindow_counts", None)  # the GROUP BY stage's
    # a key Spark computed (__ow_e<n>) is a column of the changelog of its own name, kept in the result
    columns = [k if k in df.columns else f"{_GROUP_KEY}{n}" for n, k in enumerate(bound_keys)]
    grouped = grouped.withColumnsRenamed({k: c for k, c in zip(bound_keys, columns) if k != c})
    if having is not None:  # Spark computes the condition on each group's new and previous aggregates
        values = [e.alias for e in bound]
        olds = [was(v) for v in values] if previous else []
        now = _onto_changelog(having, keys, columns, aggregates, values).sql(dialect=DIALECT)
        before = (
            _onto_changelog(having, keys, columns, aggregates, olds).sql(dialect=DIALECT) if olds else None
        )
        grouped = with_having(grouped, now, before, query.having, olds)
    F = compat.functions(grouped)
    items = [
        text if window else F.expr(text)
        for text, window in _rewritten(tree.expressions, keys, columns, aggregates, bound, names)
    ]
    from overwindow.spark.select import run_items

    # on window close the windows run on update over the closed groups, each an insert: the rules
    # of ``closing`` make every upsert one of a new group's row (a closed group never changes rows
    # emitted before), so the upserts are the append-only result
    stage = dict(options, emit="on_update")
    out = run_items(grouped, items, query, _keep=_keep, rowKey=columns, opColumn=OP, _append=True, **stage)
    counts = StageCounts.of(stage_counts, getattr(out, "overwindow_counts", None))
    if not closing_mode:
        out.overwindow_counts = counts
        return out
    # a delete is a row the result leaves out (QUALIFY false, or an expression after the windows
    # failed on it: counted, or kept with its error for the job's dead letter)
    kept = F.col(CHANGE) == UPSERT
    result = out.where(kept | F.col(ERROR).isNotNull() if ERROR in out.columns else kept).drop(CHANGE)
    result.overwindow_counts = counts
    return result


def _grouped_select(query) -> exp.Select:
    """The SELECT of ``query`` that holds the GROUP BY: the query itself, or the subquery an outer
    ``SELECT <columns or *> FROM (...) WHERE <condition>`` filters (``select._outer``; the outer
    filter and columns apply to the result, in ``run_items``). O(query size).

    >>> from overwindow.spark.query import parse_query
    >>> query = parse_query("SELECT * FROM (SELECT k, sum(x) AS s FROM v GROUP BY k) WHERE s > 1")
    >>> _grouped_select(query).sql()
    'SELECT k, SUM(x) AS s FROM v GROUP BY k'
    """
    tree = sqlglot.parse_one(query.text, read=DIALECT)
    source = tree.args.get("from") or tree.args.get("from_")
    if tree.args.get("group") is None and source is not None and isinstance(source.this, exp.Subquery):
        return source.this.this
    return tree


def watermarked_column(df) -> str | None:
    """The column of ``df`` carrying Spark's event-time watermark (``withWatermark``), if any."""
    found = [f.name for f in df.schema.fields if "spark.watermarkDelayMs" in f.metadata]
    return found[0] if found else None


def key_names(query) -> list[str | None]:
    """The result's name of each GROUP BY key of ``query`` (the SELECT item that is the key), None
    for a key the SELECT list does not show; what keys the changelog of a view's table. O(query
    size).

    >>> from overwindow.spark.query import parse_query
    >>> key_names(parse_query("SELECT to_date(ts) AS day, k, sum(x) AS s FROM v GROUP BY k, 1, j"))
    ['k', 'day', None]
    """
    tree = _grouped_select(query)
    shown = {e.unalias().sql(dialect=DIALECT): e.alias_or_name for e in tree.expressions}
    return [shown.get(_key(k, tree).sql(dialect=DIALECT)) for k in tree.args["group"].expressions]


def key_columns(query) -> list[str]:
    """The columns the GROUP BY keys of ``query`` read (a positional key: its SELECT item's), in
    order of first use: what places a row in its group. O(query size).

    >>> from overwindow.spark.query import parse_query
    >>> key_columns(parse_query("SELECT to_date(ts) AS day, count(*) AS n FROM v GROUP BY 1, k"))
    ['ts', 'k']
    """
    tree = _grouped_select(query)
    keys = [_key(k, tree) for k in tree.args["group"].expressions]
    return list(dict.fromkeys(c.name for k in keys for c in k.find_all(exp.Column)))


# date_trunc's units as Spark spells them, to the unit of timestampadd that steps one bucket on
_UNITS = {
    **{u: u for u in ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND")},
    **{u: u for u in ("MILLISECOND", "MICROSECOND")},
    **{"YYYY": "YEAR", "YY": "YEAR", "MON": "MONTH", "MM": "MONTH", "DD": "DAY"},
}
_CLOSING_KEYS = "the column itself, to_date({0}), CAST({0} AS DATE) or date_trunc('<unit>', {0})"


@dataclass(frozen=True)
class Closing:
    """When a group of a GROUP BY closes on window close: ``key``, the GROUP BY key (its SQL) that
    every window's ORDER BY starts with, a time bucket of the watermarked column; ``sql``, Spark SQL
    of the TIMESTAMP at which its bucket ends (rows of the bucket are late once the watermark
    reaches it, as Spark's rows are late below the watermark)."""

    key: str
    sql: str


def closing(query, watermarked: str | None) -> Closing:
    """How the groups of ``query`` (a ``Query`` with ``group_by``) close on window close, the stream's
    watermark being on the column ``watermarked`` (None: none); WindowSpecError, in SQL words,
    where they cannot, or where a group closed later could change rows emitted before: every
    window's ORDER BY must start with one GROUP BY time key ascending, and reach no row after the
    current one (no FOLLOWING, no lead, no function of the whole partition: the catalog's reach).
    O(query size).

    >>> from overwindow.spark.query import parse_query
    >>> closing(parse_query("SELECT to_date(ts) AS day, k, lag(sum(x)) OVER (PARTITION BY k ORDER BY "
    ...                     "to_date(ts)) AS p FROM v GROUP BY 1, k"), "ts")
    Closing(key='TO_DATE(ts)', sql='CAST(DATE_ADD(TO_DATE(ts), 1) AS TIMESTAMP)')
    """
    tree = _grouped_select(query)
    keys = [_key(k, tree) for k in tree.args["group"].expressions]
    times = {k.sql(dialect=DIALECT): c for k in keys if (c := _closes_at(k, watermarked)) is not None}
    if not times:
        keys_text = ", ".join(k.sql(dialect=DIALECT) for k in keys)
        if watermarked is None:
            why = "the stream has no watermark (withWatermark on its event-time column)"
        else:
            why = f"a GROUP BY key must be a time bucket of `{watermarked}`: " + _CLOSING_KEYS.format(
                watermarked
            )
        raise WindowSpecError(
            f"GROUP BY {keys_text} on window close: a group closes when the watermark passes its "
            f"time, and {why}; or write emit='on_update'"
        )
    leading = {_leading_key(w, times, query.text) for w in tree.find_all(exp.Window)}
    if len(leading) > 1:
        raise WindowSpecError(
            f"windows over a GROUP BY on window close order by one time key first, to emit each group "
            f"once; these start with {', '.join(sorted(leading))}, in {query.text!r}"
        )
    key = leading.pop() if leading else next(iter(times))  # no window: select refuses the query
    return Closing(key, times[key])


def _closes_at(key, watermarked: str | None) -> str | None:
    """The SQL of the end of ``key``'s time bucket, if ``key`` is one of the column ``watermarked``."""

    def watermarked_column(node) -> bool:
        return _is_column(node) and watermarked is not None and node.name.lower() == watermarked.lower()

    text = key.sql(dialect=DIALECT)
    if watermarked_column(key):  # late iff ts < watermark: its group closes past ts itself
        return f"timestampadd(MICROSECOND, 1, {text})"
    date = isinstance(key, exp.TsOrDsToDate) and key.args.get("format") is None
    date |= isinstance(key, (exp.Cast, exp.TryCast)) and key.to.this is exp.DataType.Type.DATE
    if date and watermarked_column(key.this):
        return f"CAST(DATE_ADD({text}, 1) AS TIMESTAMP)"
    if isinstance(key, exp.TimestampTrunc) and watermarked_column(key.this):
        unit = _UNITS.get(key.unit.name.upper()) if key.unit is not None else None
        return None if unit is None else f"timestampadd({unit}, 1, {text})"
    return None


def _leading_key(window, times: dict, text: str) -> str:
    """The time key ``window``'s ORDER BY starts with (ascending), once its reach is checked."""
    order = window.args.get("order")
    first = order.expressions[0] if order is not None and order.expressions else None
    lead = first.this.sql(dialect=DIALECT) if first is not None else None
    call = window.sql(dialect=DIALECT)
    if lead not in times or first.args.get("desc"):
        raise WindowSpecError(
            f"{call} on window close: windows over a GROUP BY emit each group once, when the watermark "
            "closes it, so a group closed later must sort after those emitted before: start the ORDER BY "
            f"with a GROUP BY time key ascending ({', '.join(times)}); or write emit='on_update'"
        )
    body = window.copy()
    for node in list(body.find_all(exp.AggFunc, exp.Anonymous)):  # a group's aggregate: a column
        if node is not body.this and not isinstance(node.parent, exp.Window) and _is_aggregate(node):
            node.replace(exp.column("__ow_g"))
    (parsed,) = parse_window(f"{body.sql(dialect=DIALECT)} AS w").calls
    end = parsed.reach.end.kind
    if end not in (BoundKind.PRECEDING, BoundKind.CURRENT_ROW):
        reach = parsed.never_closes or f"its value reads rows after the current one ({parsed.reach})"
        raise WindowSpecError(
            f"{call} on window close: {reach}; windows over a GROUP BY emit each group once, so a row's "
            f"value may read only the rows up to it; or write emit='on_update', in {text!r}"
        )
    return lead


def _is_aggregate(node) -> bool:
    return not isinstance(node, exp.Anonymous) or _aggregate_name(node.name)


def _spark_names(df, query) -> list[str]:
    """The batch query's column names, as Spark's analysis of it over an empty table of ``df``'s
    columns gives them; Spark's own error where it refuses the query (a column neither grouped nor
    aggregated, ...)."""
    spark = df.sparkSession
    view = f"__overwindow_grouped_{next(_views)}"
    spark.createDataFrame([], df.schema).createOrReplaceTempView(view)
    tree = _grouped_select(query)
    (tree.args.get("from") or tree.args.get("from_")).this.replace(exp.to_table(view))
    tree.set("where", None)
    tree.set("qualify", None)
    try:
        return spark.sql(tree.sql(dialect=DIALECT)).columns
    finally:
        spark.catalog.dropTempView(view)


def _is_column(node) -> bool:
    return isinstance(node, exp.Column) and not node.table


def _key(node, tree):
    """A GROUP BY key as an expression: ``GROUP BY 1`` is the first SELECT item's expression."""
    if isinstance(node, exp.Literal) and not node.is_string:
        return tree.expressions[int(node.this) - 1].unalias()
    return node


def _keyed(keys) -> tuple:
    """The keys as ``bind_groups`` takes them: a column's name, else the expression."""
    return tuple(k.name if _is_column(k) else Expr.of(k) for k in keys)


_KEPT, _KEPT_BEFORE, _HAVING_CHANGE = "__ow_kept", "__ow_kept_before", "__ow_having"


def with_having(changes, now: str, before: str | None, written: str, dropped=()):
    """``changes`` (the GROUP BY's changelog: keys, aggregates, ``OP``) as the changelog of the
    groups HAVING keeps: ``now``, the condition over a group's aggregates, and ``before``, over its
    previous ones (None: no previous values, every change an insert, as on window close), both Spark
    SQL over the changelog's columns, which Spark computes; each change becomes the changes
    ``having_changes`` lists for it (none, one, or a delete and the row set aside), a lookup Spark
    makes per row and explodes. A group ``now`` fails on (an ANSI error) is kept aside by the
    windows' machine: its row, with ``__ow_error`` naming ``HAVING <written>``. ``dropped``: the
    columns of previous values, left out after. O(1) to build; per change, the condition twice.

    Example (``changes`` the changelog of ``GROUP BY day`` with ``previous``)::

        with_having(changes, "`__ow_g0` > 2", "`__ow_g0__was` > 2", "count(*) > 2", ["__ow_g0__was"])
    """
    F = compat.functions(changes)
    if before is None:
        out = changes.withColumn(_KEPT_BEFORE, F.lit(False))
    else:  # a failure on the previous values failed when they were new: the group was set aside
        out = with_computed(changes, ((_KEPT_BEFORE, Expr.of(f"coalesce({before}, false)")),))
        out = out.drop(ERROR)
    out = with_computed(out, ((_KEPT, Expr.of(now)),))
    outcome = (
        F.when(F.col(ERROR).isNotNull(), F.lit("failed"))
        .when(F.coalesce(F.col(_KEPT), F.lit(False)), F.lit("true"))
        .otherwise(F.lit("false"))
    )
    listed = F.array().cast("array<string>")  # no change
    for (op, kept, state), made in _HAVING_TABLE.items():
        if made:
            case = (F.col(OP) == F.lit(op)) & (F.col(_KEPT_BEFORE) == F.lit(kept)) & (outcome == F.lit(state))
            listed = F.when(case, F.array(*map(F.lit, made))).otherwise(listed)
    out = out.withColumn(_HAVING_CHANGE, F.explode(listed))
    change = F.col(_HAVING_CHANGE)
    out = out.withColumns(
        {
            OP: F.when(change == F.lit(ASIDE), F.lit(INSERT)).otherwise(change),
            ERROR: F.when(change == F.lit(ASIDE), F.lit(f"HAVING {written}")),
        }
    )
    return out.drop(_HAVING_CHANGE, _KEPT, _KEPT_BEFORE, *dropped)


# having_changes of every (op, kept before, outcome now), the outcome as the lookup in Spark names it
_HAVING_TABLE = {
    (op, kept, state): having_changes(op, kept, now)
    for op in (INSERT, UPDATE, DELETE)
    for kept in (False, True)
    for state, now in (("true", True), ("false", False), ("failed", None))
}


def having_condition(tree):
    """The HAVING condition of ``tree`` (None: none) with each name of a SELECT item outside an
    aggregate's arguments replaced by the item's expression, as Spark resolves HAVING against the
    SELECT list first (``HAVING total > 2`` over ``sum(amount) AS total``). O(query size).

    >>> tree = sqlglot.parse_one("SELECT k, sum(x) AS s FROM v GROUP BY k HAVING s > 2 AND max(s) > 0")
    >>> print(having_condition(tree).sql(dialect=DIALECT))
    SUM(x) > 2 AND MAX(s) > 0
    """
    having = tree.args.get("having")
    if having is None:
        return None
    named = {e.alias_or_name.lower(): e.unalias() for e in tree.expressions if not isinstance(e, exp.Star)}

    def swap(node):
        item = named.get(node.name.lower()) if _is_column(node) else None
        if item is None or item.find(exp.Window) is not None:
            return node
        parent = node.parent
        while parent is not None:  # an aggregate's argument names an input column
            if isinstance(parent, (exp.AggFunc, exp.Anonymous)) and _is_aggregate(parent):
                return node
            parent = parent.parent
        return item.copy()

    return having.this.copy().transform(swap)


def _aggregates(tree, having=None) -> list[tuple[str, str]]:
    """Each aggregate the query computes per group (not a window's own function, but an argument of
    one: ``sum(amount)`` in ``avg(sum(amount)) OVER w``), in its SELECT list or its ``having``
    condition, once: (its SQL, the window call computing it over the whole group, named
    ``__ow_g<n>``)."""
    found: dict[str, str] = {}
    for item in [*tree.expressions, *([] if having is None else [having])]:
        for node in item.find_all(exp.AggFunc, exp.Anonymous):
            if isinstance(node, exp.Anonymous) and not _aggregate_name(node.name):
                continue
            target = node.parent if isinstance(node.parent, exp.Filter) else node
            if isinstance(target.parent, exp.Window):
                continue  # a window's own function
            text = target.sql(dialect=DIALECT)
            found.setdefault(text, f"{text} OVER () AS {_AGGREGATE}{len(found)}")
    return list(found.items())


def _aggregate_name(name: str) -> bool:
    try:
        return lookup(name).kind is Kind.AGGREGATE
    except WindowSpecError:
        return False


def _rewritten(items, keys, columns, aggregates, bound, names) -> list[tuple[str, bool]]:
    """The SELECT list over the changelog's columns (``_onto_changelog``), each item named as Spark
    names it: (its SQL, whether it holds a window)."""
    out = []
    for item, name in zip(items, names):
        body = _onto_changelog(item.unalias(), keys, columns, aggregates, [e.alias for e in bound])
        out.append((f"{body.sql(dialect=DIALECT)} AS {quote(name)}", body.find(exp.Window) is not None))
    return out


def _onto_changelog(node, keys, columns, aggregates, values):
    """``node`` (an expression of the query) over the changelog's columns: each aggregate of
    ``aggregates`` (outside a window's own call) by its column of ``values``, each key expression
    of ``keys`` by its column of ``columns``. O(size of ``node``)."""
    by_text = {text: value for (text, _), value in zip(aggregates, values)}
    by_key = {k.sql(dialect=DIALECT): c for k, c in zip(keys, columns)}

    def swap(n):
        text = n.sql(dialect=DIALECT)
        if text in by_text and not isinstance(n.parent, exp.Window):
            return exp.column(by_text[text], quoted=True)
        if text in by_key:
            return exp.column(by_key[text], quoted=True)
        return n

    return node.copy().transform(swap)


def group_by(
    df,
    keys: tuple[str, ...],
    aggregates: list,
    keep=None,
    row_key=None,
    op_column=None,
    closes=False,
    shown: dict | None = None,
    previous: bool = False,
    source_order: tuple[str, ...] = (),
):
    """The changelog of ``df`` grouped by the columns ``keys``, with each aggregate of
    ``aggregates`` (window expressions over the whole group) per group: the keys, the aggregates and
    ``OP`` (insert, update, delete); ``row_key``, ``op_column``, ``source_order``: a CDC stream's,
    as ``GroupBy`` takes them (a row updated into another group reaches its old group as a delete of
    its before image, as a Debezium source gives it, and its new one as an insert). One
    ``transformWithStateInPandas`` in the ``append`` output mode over buckets of the keys (chosen as
    ``overWindow`` chooses them), one state value per bucket: Spark chains it before the windows'
    ``applyInPandasWithState``, where it refuses two of those. ``closes``: the machine's closing mode
    over the column ``CLOSE``, in Spark's event time, with one timer per bucket at its least closing
    time (its wakeup); every group an insert; ``shown``: the names a row set aside shows its group
    keys under, in its dead-letter origin (``GROUP BY, group day=...``; by default the columns');
    ``previous``: each change also carries the group's aggregates as last emitted (``GroupBy``).
    PySpark 4 with the RocksDB state store. O(1) to build."""
    from overwindow.spark.adapter import check_rocksdb
    from overwindow.spark.counts import Stage

    what = "windows over a GROUP BY"
    compat.require_transform_with_state(df, what)
    check_rocksdb(df.sparkSession, what)
    executors.use_running_python(df.sparkSession)
    check_session_time_zone(df)
    schema = arrow_schema(df.schema)
    machine = GroupBy(
        schema,
        keys,
        aggregates,
        row_key,
        op_column,
        CLOSE if closes else None,
        previous=previous,
        source_order=source_order,
    )
    buckets = chosen_key_buckets(shuffle_partitions(df.sparkSession))
    grouped = bucket_grouping(df, bucket_of(keys, buckets), buckets, True)
    companions = companions_of(schema)
    grouped = with_companions(grouped, companions)
    stage = Stage("GROUP BY, group", dict(shown or {}))
    output = output_struct(df.schema, machine.output_schema)
    back = Handback.of(output, stream_rows(df.sparkSession))
    counts = MachineCounts.of(df.sparkSession, keep)
    step = _GroupStep(machine, schema, companions, counts, keys, stage, back)
    time_mode = "EventTime" if closes else "None"
    out = grouped.transformWithStateInPandas(_processor(step, closes), handback_struct(), "Append", time_mode)
    out = with_interval_days(handed_back(out, output), machine.output_schema)
    out.overwindow_counts = step.counts
    return out


class _GroupStep:
    """A bucket's step: its rows (pandas, from Spark) through the machine (pickled with it); ``back``:
    how its changes go back to Spark."""

    def __init__(
        self, machine: GroupBy, schema: pa.Schema, companions, counts, keys=(), stage=None, back=None
    ):
        self.machine, self.schema, self.companions, self.counts = machine, schema, tuple(companions), counts
        self.keys, self.stage = tuple(keys), stage  # the group keys in its rows, for their origin
        self.back = back or Handback(machine.output_schema)

    def __call__(self, key, prior: bytes | None, pdfs, wm_ms=None):
        """The machine's step; ``wm_ms``: Spark's watermark (UTC ms; closing mode), as microseconds
        of the closing times (UTC wall-clock: ``check_session_time_zone``)."""
        tables = [to_arrow(p, self.schema, self.companions) for p in pdfs if len(p)]
        watermark = (
            None if not wm_ms or wm_ms <= 0 else END_OF_INPUT if wm_ms >= END_OF_INPUT_MS else wm_ms * 1000
        )
        step = self.machine.step(prior, pa.concat_tables(tables) if tables else None, watermark)
        if self.counts is not None:
            self.counts.add(step, key, self.keys, self.stage)
        if step.late_rows:
            log.warning(
                "overwindow: dropped %d late rows of a GROUP BY (their groups had closed)", step.late_rows
            )
        if step.aside:
            log.warning(
                "overwindow: set aside %d rows of a GROUP BY: %s", len(step.aside), step.aside.reasons[0]
            )
        return step


def _processor(step: _GroupStep, closes: bool = False):
    """A StatefulProcessor running ``step`` with one state value per bucket; ``closes``: with the
    watermark, and one event-time timer per bucket at its wakeup (defined here so that importing
    overwindow does not import pyspark)."""
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    from overwindow.spark.timers import BucketTimer

    binary = StructType([StructField("value", BinaryType())])

    class GroupProcessor(StatefulProcessor):
        def init(self, handle):
            self.rows = handle.getValueState("groups", binary)
            if closes:
                self.timer = BucketTimer(handle)

        def handleInputRows(self, key, rows, timerValues):
            yield from self._step(key, rows, timerValues)

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            self.timer.fired(expiredTimerInfo)
            yield from self._step(key, iter(()), timerValues)

        def _step(self, key, rows, timerValues):
            wm_ms = timerValues.getCurrentWatermarkInMs() if closes else None
            done = step(key, self.rows.get()[0] if self.rows.exists() else None, rows, wm_ms)
            if done.empty:
                self.rows.clear()
            else:
                self.rows.update((done.state,))
            if closes:  # the bucket's timer at its least closing time, in UTC ms rounded up
                wake = None if done.wakeup is None else max(-(-done.wakeup // 1000), (wm_ms or 0) + 1)
                self.timer.move(wake)
            yield from step.back.frames(done.output)

        def close(self):
            pass

    return GroupProcessor()
