"""``OverWindow``: the window calls of a streaming view and how to emit them.

The partition comes from ``groupBy``; calls carry ORDER BY and frame. Everything that can be checked
without data is checked here, in SQL words.

>>> spec = OverWindow("avg(x) OVER (ORDER BY ts ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING) AS a")
>>> spec.order_column
'ts'
"""

from __future__ import annotations

import copy
import datetime
import decimal
import math
import re
from dataclasses import replace

from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.evaluator import as_window_expression
from overwindow.logical.call import WindowCall, WindowExpression
from overwindow.logical.expr import Expr
from overwindow.logical.frame import Interval
from overwindow.logical.functions import register_user_aggregate, user_aggregate_class
from overwindow.logical.parse import parse_window

EMIT_MODES = ("on_window_close", "on_update")
STATE_LAYOUTS = ("whole", "chunked")
# keyBuckets not given: this many buckets where the state is bounded by the watermark (``hosted``;
# docs/design/many-keys.md: from 1,000 keys on faster than any per-key hosting); PER_KEY: a state per key
DEFAULT_KEY_BUCKETS = 64  # at most 127: chosen buckets are a TINYINT grouping key (grouping.bucket_grouping)
# ... and FEW_KEY_BUCKETS on a shuffle of at most FEW_PARTITIONS partitions (one machine), where a
# Python call's fixed cost outweighs the parallelism more buckets would give (docs/design/many-keys.md)
FEW_KEY_BUCKETS = 16
FEW_PARTITIONS = 4
PER_KEY = "per key"


def chosen_key_buckets(partitions: int | None) -> int:
    """The buckets ``OverWindow.hosted`` chooses for a stateful shuffle of ``partitions`` partitions
    (Spark's ``spark.sql.shuffle.partitions``, which a checkpoint keeps for its life; None: not
    known, as where only whether the query runs on buckets matters). O(1).

    >>> chosen_key_buckets(2), chosen_key_buckets(200), chosen_key_buckets(None)
    (16, 64, 64)
    """
    return FEW_KEY_BUCKETS if partitions is not None and partitions <= FEW_PARTITIONS else DEFAULT_KEY_BUCKETS


def watermark_bounds_state(emit: str, layout: str, watermarked: bool) -> bool:
    """Whether the watermark bounds a view's state, where buckets are chosen when not given: emit
    on window close, or emit on update with a watermark on the whole layout (without one it holds
    every live row, which a bucket would move whole every micro-batch; the chunked layout on update
    steps key by key on buckets, docs/design/many-keys.md). O(1).

    >>> [watermark_bounds_state("on_update", layout, True) for layout in ("whole", "chunked")]
    [True, False]
    """
    return emit == "on_window_close" or (watermarked and layout == "whole")


# output columns the machines and sinks add (the change marker, the row identity) and the prefix of
# the columns they use inside; compared without case, as Spark and SQLite compare names
RESERVED_NAMES = ("_change", "_row_id")
RESERVED_PREFIXES = ("__ow_", "__overwindow")


def reserved(names) -> list[str]:
    """The names among ``names`` that overwindow's output keeps for itself.

    >>> reserved(["x", "_Change", "__ow_id"])
    ['_Change', '__ow_id']
    """
    return [n for n in names if n.lower() in RESERVED_NAMES or n.lower().startswith(RESERVED_PREFIXES)]


def column_names(value: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """A keyword naming one column or several (``sourceOrder``), as a tuple; none: empty. O(names).

    >>> column_names("offset"), column_names(["partition", "offset"]), column_names(None)
    (('offset',), ('partition', 'offset'), ())
    """
    return (value,) if isinstance(value, str) else tuple(value or ())


class OverWindow:
    """Window calls (SQL text or WindowCall, without PARTITION BY) and an emit mode.

    ``rowKey``: columns that identify a row; they break ties in ORDER BY so replays give identical
    output, and (emit on update) key the changelog (default: all input columns).
    ``opColumn`` (emit on update): a column saying insert, delete or update per row (CDC input;
    Debezium's c/u/d/r and Flink's +I/-U/+U/-D spellings are understood); needs ``rowKey``.
    ``sourceOrder`` (emit on update, with ``rowKey``): the column (or columns, compared in turn) that
    give each change's place in its source, such as a Kafka record's ``partition`` and ``offset``:
    a row key's changes in one micro-batch apply in that order (ascending, NULL last, ties as they
    came), whatever order Spark hands them over in. Without it they apply in the order they come, so
    the DataFrame must keep each row key's changes in order. Its columns are not part of the rows:
    they never reach the output.
    ``stateLayout``: ``"whole"`` (default) keeps a key's rows (or a bucket's) as one state value,
    which Spark moves whole in every micro-batch that touches the key; ``"chunked"`` runs on Spark's
    transformWithStateInPandas with the RocksDB state store and reads and writes only what a batch
    reaches: on update, a key's rows in chunks, only those its changes reach (per-batch cost
    independent of the rows held; needs frames of bounded reach); on window close (with
    ``keyBuckets``), each key's history as an entry of its bucket, read only when the key releases
    rows (per-batch cost independent of the keys held).
    ``maxRowsPerKey``: the most rows one partition (groupBy key) may hold in state; a step that
    leaves more fails naming the bound and the key (None: no bound).
    ``keyBuckets``: hash the groupBy keys into this many buckets and serve all the keys of a bucket
    with one state and one Python call per micro-batch, so the cost follows rows rather than keys;
    ``"per key"``: one state and one call per key; not given: buckets where the state is bounded by
    the watermark (emit on window close; emit on update with a watermark on the whole layout) and
    the keys are columns, 16 on a shuffle of at most 4 partitions and 64 on more
    (``chosen_key_buckets``), else a state per key (``hosted``). With the chunked
    layout, a bucket keeps each key's index, chunks and row identities as entries of its own, and a
    call reads only the keys it steps. Fixed for a checkpoint's life.
    ``stateTtl`` (emit on window close): forget a partition once the watermark is more than this
    past its newest row: rows still waiting for later rows are emitted as at the end of input
    (``lead`` NULL, frames cut) and its state is removed; a later row of its key starts it anew
    (``row_number`` from 1, ``lag`` NULL, frames without the forgotten rows, so ``RANGE`` frames that
    reach back no further than the TTL are unchanged). An interval for a DATE or TIMESTAMP ORDER BY
    (``"7 days"``, ``"INTERVAL 1 HOUR"``, a ``datetime.timedelta``), a number in the key's units
    otherwise (None: keep every partition).
    ``qualify``: a condition on each result row, SQL over the input columns and the calls' aliases
    (``"rn <= 3"``: Top-N, ``"rn = 1"``: one row per key), as SQL's ``QUALIFY``: only rows where it
    is true are the result. On window close a row failing it is not emitted; on update the changelog
    keeps exactly the rows passing it: an upsert when a row enters (or changes inside), a delete
    when it leaves, nothing for a row outside that stays outside (None: every row).
    """

    def __init__(
        self,
        *calls,
        emit: str = "on_window_close",
        rowKey: str | list[str] | tuple[str, ...] | None = None,
        opColumn: str | None = None,
        sourceOrder: str | list[str] | tuple[str, ...] | None = None,
        stateLayout: str = "whole",
        maxRowsPerKey: int | None = None,
        keyBuckets: int | str | None = None,
        stateTtl=None,
        qualify: str | None = None,
    ):
        if not calls:
            raise WindowSpecError("OverWindow needs at least one window call")
        if emit not in EMIT_MODES:
            raise WindowSpecError(f"emit must be one of {', '.join(EMIT_MODES)}, got {emit!r}")
        self.emit = emit
        self.row_key = (rowKey,) if isinstance(rowKey, str) else tuple(rowKey) if rowKey else None
        self.op_column = opColumn
        if opColumn is not None and emit != "on_update":
            raise WindowSpecError("opColumn (inserts, deletes, updates) needs emit='on_update'")
        if opColumn is not None and not self.row_key:
            raise WindowSpecError(
                f"opColumn={opColumn!r} needs rowKey: deletes and updates find their row by it"
            )
        self.source_order = column_names(sourceOrder)
        if self.source_order and (emit != "on_update" or not self.row_key):
            raise WindowSpecError(
                f"sourceOrder={sourceOrder!r} orders each row's changes in a micro-batch: it needs "
                "emit='on_update' and rowKey (the rows the changes apply to)"
            )
        self.expressions: tuple[WindowExpression, ...] = tuple(as_window_expression(c) for c in calls)
        self.check_columns(self.aliases, "an alias")
        for e in self.expressions:
            for c in e.calls:
                # a NULL or NaN offset's bound sits where the sort puts NULL or NaN keys, not at a
                # distance from the row: the machines' reaches and eviction measure distances
                odd = [
                    b
                    for b in (c.frame.start, c.frame.end)
                    if b.has_offset and (b.offset is None or b.offset != b.offset)  # NULL, NaN
                ]
                if odd and c.info.uses_frame:
                    raise WindowSpecError(
                        f"a NULL or NaN RANGE offset ({odd[0]}) is computed by evaluate() only, not "
                        f"on a stream; write UNBOUNDED PRECEDING or FOLLOWING, in {e.alias} ({e})"
                    )
                if c.partition_by:
                    raise WindowSpecError(
                        f"PARTITION BY comes from groupBy(...); remove it from {e.alias} ({e})"
                    )
        if stateLayout not in STATE_LAYOUTS:
            raise WindowSpecError(
                f"stateLayout must be one of {', '.join(STATE_LAYOUTS)}, got {stateLayout!r}"
            )
        self.state_layout = stateLayout
        if maxRowsPerKey is not None and (
            isinstance(maxRowsPerKey, bool) or not isinstance(maxRowsPerKey, int) or maxRowsPerKey < 1
        ):
            raise WindowSpecError(f"maxRowsPerKey must be a positive integer, got {maxRowsPerKey!r}")
        self.max_rows_per_key = maxRowsPerKey
        if keyBuckets is not None and keyBuckets != PER_KEY:
            if isinstance(keyBuckets, bool) or not isinstance(keyBuckets, int) or keyBuckets < 1:
                raise WindowSpecError(
                    f'keyBuckets must be a positive integer or "{PER_KEY}", got {keyBuckets!r}'
                )
        # None: a state per key; ``buckets_given``: keyBuckets was given (else ``hosted`` chooses)
        self.key_buckets = None if keyBuckets == PER_KEY else keyBuckets
        self.buckets_given = keyBuckets is not None
        self.state_ttl = _state_ttl(stateTtl)
        if self.state_ttl is not None and emit != "on_window_close":
            raise WindowSpecError(
                "stateTtl forgets a key by event time, which emit='on_window_close' follows with its "
                "watermark; emit on update removes the rows no change can reach with a watermark "
                "instead (its state per key stays until the key gets rows again)"
            )
        if stateLayout == "chunked" and emit == "on_window_close":
            if keyBuckets == PER_KEY:
                raise WindowSpecError(
                    "stateLayout='chunked' on emit on window close keeps each key's history as an "
                    f'entry of its key bucket: it needs keyBuckets, not "{PER_KEY}" (a state per key '
                    "already holds only its own rows)"
                )
            if self.state_ttl is not None:
                raise WindowSpecError(
                    "stateTtl runs on stateLayout='whole': the chunked layout reads a key's history only "
                    "when it releases rows, so it cannot see which keys have gone quiet"
                )
        elif stateLayout == "chunked":
            reasons = [f"{c.alias}: {c.unbounded_reach}" for c in self.calls if c.unbounded_reach]
            if reasons:
                raise WindowSpecError(
                    "stateLayout='chunked' needs every call's frame to reach a bounded number of rows "
                    "or ORDER BY values around the current row; "
                    + "; ".join(reasons)
                    + " (use stateLayout='whole' for these)"
                )
        self.qualify = _qualify(qualify)
        if emit == "on_window_close":
            _check_window_close(self)
        elif len({c.order_by for c in self.calls}) > 1:
            raise WindowSpecError(
                "emit on update needs every call to share one ORDER BY; put calls with another "
                "ORDER BY in a second overWindow"
            )
        self.written: dict[str, str] = {}  # columns Spark computes ahead of the windows: their SQL
        # the input columns the result carries besides those the calls read (None: all of them);
        # the machines hold only those (``carrying``; sessions and the split layout hold all)
        self.carried: tuple[str, ...] | None = None
        # Python aggregates travel with the spec to Spark's workers, where the registry is empty
        self.user_aggregates = {
            c.function: user_aggregate_class(c.function)
            for c in self.calls
            if user_aggregate_class(c.function) is not None
        }

    def hosted(self, watermarked: bool, by_columns: bool, partitions: int | None = None) -> OverWindow:
        """The spec as a query runs it: keyBuckets as given, or where not given
        ``chosen_key_buckets(partitions)`` when the watermark bounds the state
        (``watermark_bounds_state``) and the groupBy keys are columns (``by_columns``; the chunked
        layout on window close always runs on buckets), else a state per key. Hosting a hosted
        spec chooses anew. O(1).

        >>> OverWindow("lag(x) OVER (ORDER BY t) AS p").hosted(True, True, partitions=2).key_buckets
        16
        >>> OverWindow("lag(x) OVER (ORDER BY t) AS p", emit="on_update").hosted(False, True).key_buckets
        >>> OverWindow("lag(x) OVER (ORDER BY t) AS p", keyBuckets="per key").hosted(True, True).key_buckets
        """
        if self.buckets_given:
            return self
        bounded = watermark_bounds_state(self.emit, self.state_layout, watermarked)
        needed = self.emit == "on_window_close" and self.state_layout == "chunked"
        return self.on_chosen_buckets(
            chosen_key_buckets(partitions) if bounded and (by_columns or needed) else None
        )

    def on_chosen_buckets(self, buckets: int | None) -> OverWindow:
        """The spec, keyBuckets not given, hosted on ``buckets`` chosen for it (None: per key), which
        its machines record in state; the spec itself where keyBuckets was given. O(1)."""
        if self.buckets_given:
            return self
        out = copy.copy(self)
        out.key_buckets = buckets
        return out

    def carrying(self, columns) -> OverWindow:
        """The spec whose result carries only ``columns`` of the input besides the columns its calls,
        row key and condition read (``overwindow.select`` and ``overwindow.sql`` know them): the
        machines then hold and emit only those (``contract.held_schema``; sessions and window
        close's split layout hold every column), emit on update after telling rows apart by all
        input columns (without a row key a row is its whole input row, whatever the result shows
        of it). O(1).

        >>> OverWindow("lag(x) OVER (ORDER BY t) AS p", emit="on_update").carrying(["k"]).carried
        ('k',)
        """
        out = copy.copy(self)
        out.carried = tuple(columns)
        return out

    def over(self, expressions, written=(), **qualify) -> OverWindow:
        """The spec with its window expressions replaced by ``expressions``, the same calls over
        other columns (``overwindow.logical.bind``: over the columns Spark computes ahead of the
        windows, ``written``: each such column's (name, expression), for messages), or its calls
        alone (``overwindow.spark.bind.results_in_spark``: Spark computes what they go into, and
        with ``qualify=None`` the condition too). O(1)."""
        out = copy.copy(self)
        out.expressions = tuple(expressions)
        out.written = {**self.written, **{name: e.sql for name, e in written}}
        if qualify:
            out.qualify = _qualify(qualify["qualify"])
        return out

    def as_written(self, text: str) -> str:
        """``text`` (SQL over the spec's columns) with each column Spark computes ahead of the
        windows written as the expression the user wrote (``over``'s ``written``). O(len(text)).

        >>> from overwindow.logical.expr import Expr
        >>> spec = OverWindow("lag(x) OVER (ORDER BY t) AS p")
        >>> spec.over((), written=[("__ow_e0", Expr.of("x % 2"))]).as_written("lag(`__ow_e0`)")
        'lag(x % 2)'
        """
        for name, sql in self.written.items():
            text = re.sub(rf"`{name}`|\b{name}\b", lambda _: sql, text)
        return text

    @property
    def buckets_chosen(self) -> bool:
        """Whether this spec runs on buckets ``hosted`` chose (keyBuckets not given)."""
        return bool(self.key_buckets) and not self.buckets_given

    def check_columns(self, names, what: str = "an input column") -> None:
        """Refuses names the output keeps for itself (``_change``, ``_row_id``, ``__ow_...``); the
        ``sourceOrder`` columns never reach the output, and may have such names."""
        taken = [n for n in reserved(names) if n not in self.source_order]
        if taken:
            raise WindowSpecError(
                f"{what} may not be named {', '.join(map(repr, taken))}: overwindow's output uses "
                f"{', '.join(RESERVED_NAMES)} and names starting with {' or '.join(RESERVED_PREFIXES)}; "
                "rename it"
            )

    def register_user_aggregates(self) -> None:
        """Register this spec's Python aggregates in this process (a Spark worker) if missing."""
        for name, cls in self.user_aggregates.items():
            if user_aggregate_class(name) is None:
                register_user_aggregate(name, cls)

    @property
    def calls(self) -> tuple[WindowCall, ...]:
        return tuple(c for e in self.expressions for c in e.calls)

    @property
    def order_column(self) -> str | None:
        """The single ORDER BY column shared by every call (None when no call orders)."""
        keys = {c.order_by for c in self.calls if c.order_by}
        if not keys:
            return None
        (key,) = keys
        cols = key[0].expr.columns()
        return cols[0] if cols else None

    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(e.alias for e in self.expressions)

    def partitioned(self, keys: tuple) -> list[WindowExpression]:
        """The same calls with ``PARTITION BY keys`` (column names, or expressions as ``Expr``): the
        batch query this view maintains."""
        part = tuple(k if isinstance(k, Expr) else Expr.of(exp.column(k, quoted=True)) for k in keys)
        out = []
        for e in self.expressions:
            calls = tuple(replace(c, partition_by=part) for c in e.calls)
            out.append(WindowExpression(e.alias, calls, e.expr, e.text))
        return out

    def __repr__(self) -> str:
        layout = f", stateLayout={self.state_layout!r}" if self.state_layout != "whole" else ""
        buckets = f", keyBuckets={self.key_buckets}" if self.key_buckets else ""
        if self.buckets_given and not self.key_buckets:
            buckets = f", keyBuckets={PER_KEY!r}"
        ttl = f", stateTtl={str(self.state_ttl)!r}" if self.state_ttl is not None else ""
        qualify = f", qualify={self.qualify.sql!r}" if self.qualify is not None else ""
        calls = ", ".join(repr(str(e)) for e in self.expressions)
        return f"OverWindow({calls}, emit={self.emit!r}{layout}{buckets}{ttl}{qualify})"


def _qualify(condition: str | None) -> Expr | None:
    """``qualify`` as an expression; refused: text that is not a SQL condition, or one holding a
    window call (name the call and filter on its alias). O(condition size)."""
    if condition is None:
        return None
    if not isinstance(condition, str):
        raise WindowSpecError(f"qualify takes a SQL condition as text, got {type(condition).__name__}")
    try:
        expr = Expr.of(condition)
    except WindowSpecError as e:
        raise WindowSpecError(f"qualify={condition!r}: {e}") from None
    if expr.node.find(exp.Window) is not None:
        raise WindowSpecError(
            f"qualify={condition!r}: name the window call among the calls (row_number() OVER (...) AS "
            "rn) and write the condition on its alias (qualify='rn <= 3')"
        )
    return expr


def _state_ttl(value):
    """``stateTtl`` as a RANGE offset (an ``Interval`` or a number), read as SQL reads one: a string
    is a number, an ``INTERVAL`` literal, or a Spark delay such as ``"7 days"``. O(1).

    >>> _state_ttl("90 minutes"), _state_ttl(10)
    (Interval(months=0, days=0, micros=5400000000, fields='MINUTE'), 10)
    """
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        micros = value.seconds * 10**6 + value.microseconds
        offset = Interval(0, value.days, micros, "DAY TO SECOND")
    elif isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[0-9.eE+-]+|(?i:interval)\b.*", text) and "'" not in text:
            text = f"INTERVAL '{text}'"  # a Spark delay ("10 minutes", as withWatermark takes)
        try:
            call = parse_window(
                f"count(*) OVER (ORDER BY t RANGE BETWEEN {text} PRECEDING AND CURRENT ROW) AS ttl"
            )
        except Exception:  # whatever the SQL reader says of it (a tokenizer error too): not an offset
            call = None
        if call is None or len(call.calls) != 1:
            raise WindowSpecError(
                f"stateTtl={value!r} is not an interval ('7 days', 'INTERVAL 1 HOUR') or a number"
            ) from None
        offset = call.calls[0].frame.start.offset
    elif isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        offset = value
    else:
        raise WindowSpecError(f"stateTtl must be an interval or a number, got {value!r}")
    if isinstance(offset, Interval):
        parts = (offset.months, offset.days, offset.micros)
        positive = min(parts) >= 0 and max(parts) > 0
    else:
        try:
            positive = offset > 0 and math.isfinite(offset)
        except (ArithmeticError, ValueError):  # Decimal NaN
            positive = False
    if not positive:
        raise WindowSpecError(f"stateTtl must be a positive, finite interval or number, got {value!r}")
    return offset


def _check_window_close(spec: OverWindow) -> None:
    """Emit on window close needs one ascending ORDER BY column (the watermarked event time), the
    same for every call, and frames that reach a bounded distance into the future."""
    orders = {c.order_by for c in spec.calls}
    if len(orders) > 1 or () in orders:
        raise WindowSpecError(
            "emit on window close needs every call to have the same ORDER BY <event-time column>; got "
            + "; ".join(
                f"{c.alias}: ORDER BY {', '.join(map(str, c.order_by)) or '(none)'}" for c in spec.calls
            )
        )
    (order,) = orders
    if len(order) != 1 or order[0].descending or not isinstance(order[0].expr.node, exp.Column):
        raise WindowSpecError(
            "emit on window close needs ORDER BY exactly one column, ascending (the watermarked event "
            f"time); got ORDER BY {', '.join(map(str, order))}"
        )
    for c in spec.calls:
        if c.never_closes:
            raise WindowSpecError(f"{c.never_closes}; use emit='on_update' in {c.alias}")
