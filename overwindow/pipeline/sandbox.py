"""What a view file's SQL may reach: its source's columns, and functions of them that read nothing else.

A view file is data the job reads, not code it trusts: by default its ``query`` (and its ``calls``)
may compute only from the columns of its own ``[source]`` (``FROM source``), with operators and
built-in functions that read no outside state, and its ``[spark]`` section may set only resource
settings. ``[view] trusted = true`` lifts both: the query then runs with Spark's own rules, as
``overwindow.sql`` in a user's own session does.

The check reads the parsed SQL (sqlglot, Spark's dialect) and allows what it knows, so it holds for
whatever a later release lets a view's query say: every node of the tree must be one of the
structural kinds a window query is made of (columns, literals, operators, CASE, CAST, windows and
their frames, the one derived table of ``SELECT * FROM (...) WHERE``), every table ``source``
itself, and every function one of ``PURE_FUNCTIONS`` (Spark's deterministic built-ins of their
arguments) or overwindow's window functions. So ``reflect`` / ``java_method`` / ``try_reflect``
(Java calls), ``read_files`` and path tables (``text.`/etc/passwd```), subqueries, other tables and
views, joins, CTEs, ``LATERAL``, table functions, user or temporary functions, functions in another
catalog (``cat.db.f(x)``), ``input_file_name`` (the file read), ``current_user`` (the job's user),
the clock (``now()``, ``current_timestamp``) and random numbers (which a replayed micro-batch would
not repeat) are refused, as is ``${...}`` anywhere in the text, which Spark replaces with settings
and environment variables (``'${env:OVERWINDOW_POSTGRES_DSN}'``) before it reads the query.

Cost: O(nodes of the query) to check; the allowed kinds are derived once, at import, from sqlglot's
reading of each allowed function name.

>>> problems("SELECT k, reflect('java.lang.System', 'getenv', 'HOME') AS e FROM source")
["reflect('java.lang.System', 'getenv', 'HOME'): reflect calls a Java method"]
>>> problems("SELECT k, abs(x) AS a, lag(x) OVER (PARTITION BY k ORDER BY ts) AS p FROM source")
[]
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from overwindow.logical.expr import DIALECT, read_sql
from overwindow.logical.functions import ALIASES, BUILTINS

KEY = "trusted"  # [view] trusted = true: the view file is trusted code, run with Spark's rules
LIFT = f"[view] {KEY} = true runs a view file you trust with Spark's rules"

# Spark's built-in functions of their arguments alone (deterministic; no file, clock, session,
# environment, Java class or random source), by the names Spark knows them; a view may call these
PURE_FUNCTIONS = frozenset(
    """
    abs acos acosh asin asinh atan atan2 atanh bin bround cbrt ceil ceiling conv cos cosh cot csc
    degrees e exp expm1 factorial floor greatest hex hypot least ln log log10 log1p log2 negative pi
    pmod positive pow power radians rint round sec sign signum sin sinh sqrt tan tanh try_add
    try_divide try_multiply try_subtract try_mod unhex width_bucket mod nanvl isnan isnull isnotnull
    nullif nvl nvl2 ifnull coalesce if zeroifnull nullifzero equal_null try_to_number to_number
    to_char to_varchar bit_count bit_get getbit shiftleft shiftright shiftrightunsigned
    ascii base64 bit_length btrim char char_length character_length chr concat concat_ws contains
    decode elt encode endswith find_in_set format_number format_string initcap instr lcase left len
    length levenshtein locate lower lpad ltrim luhn_check mask octet_length overlay position printf
    regexp regexp_count regexp_extract regexp_extract_all regexp_instr regexp_like regexp_replace
    regexp_substr repeat replace reverse right rlike rpad rtrim sentences soundex space split
    split_part startswith substr substring substring_index to_binary translate trim try_to_binary
    ucase unbase64 upper like ilike url_decode url_encode try_url_decode parse_url try_parse_url
    crc32 hash md5 sha sha1 sha2 xxhash64
    add_months date_add date_diff date_format date_from_unix_date date_part date_sub date_trunc
    dateadd datediff datepart day dayofmonth dayofweek dayofyear extract from_unixtime
    from_utc_timestamp hour last_day make_date make_dt_interval make_interval make_timestamp
    make_timestamp_ltz make_timestamp_ntz make_ym_interval minute month monthname dayname
    months_between next_day quarter second timestamp_micros timestamp_millis timestamp_seconds
    to_date to_timestamp to_timestamp_ltz to_timestamp_ntz to_unix_timestamp to_utc_timestamp trunc
    try_make_interval try_make_timestamp try_to_timestamp unix_date unix_micros unix_millis
    unix_seconds unix_timestamp weekday weekofyear year
    array array_append array_compact array_contains array_distinct array_except array_insert
    array_intersect array_join array_max array_min array_position array_prepend array_remove
    array_repeat array_size array_sort array_union arrays_overlap arrays_zip cardinality element_at
    try_element_at exists filter flatten forall get map map_concat map_contains_key map_entries
    map_filter map_from_arrays map_from_entries map_keys map_values map_zip_with named_struct reduce
    aggregate sequence size slice sort_array str_to_map struct transform transform_keys
    transform_values zip_with
    from_json to_json get_json_object json_array_length json_object_keys schema_of_json from_csv
    to_csv schema_of_csv parse_json try_parse_json variant_get try_variant_get is_variant_null
    schema_of_variant
    typeof bigint binary boolean date decimal double float int smallint string timestamp tinyint
    """.split()
)
# the functions above (and window functions) that may be called without arguments
_NO_ARGUMENTS = ("pi", "e", "array", "map", "struct", "row_number", "rank", "dense_rank", "percent_rank")
_NO_ARGUMENTS += ("cume_dist", "lag", "lead")

# why some well-known functions are refused (any other is "not among the functions a view may call")
_REASONS = {
    **dict.fromkeys(("reflect", "java_method", "try_reflect"), "calls a Java method"),
    **dict.fromkeys(
        ("input_file_name", "input_file_block_start", "input_file_block_length"), "reads the file being read"
    ),
    **dict.fromkeys(("current_user", "user", "session_user", "current_role"), "reads the job's user"),
    **dict.fromkeys(
        ("current_database", "current_schema", "current_catalog", "version"), "reads the session"
    ),
    **dict.fromkeys(
        ("now", "current_timestamp", "current_date", "current_time", "localtimestamp", "curdate"),
        "reads the clock (a replayed micro-batch would differ)",
    ),
    **dict.fromkeys(
        ("rand", "randn", "random", "uuid", "shuffle", "randstr", "uniform", "monotonically_increasing_id"),
        "is random (a replayed micro-batch would differ)",
    ),
    **dict.fromkeys(("read_files", "secret", "try_secret"), "reads outside the source"),
}


def _parsed_kinds(names, arguments) -> tuple[set[type], set[str]]:
    """The sqlglot node kinds (and names of functions sqlglot does not know) that calling each of
    ``names`` with the given argument lists reads as."""
    kinds: set[type] = set()
    anonymous: set[str] = set()
    for name in names:
        for args in arguments:
            try:
                node = read_sql(f"{name}({args})")
            except Exception:  # not with these arguments (sqlglot's builders raise what they raise)
                continue
            for found in node.walk():
                if isinstance(found, exp.Anonymous):
                    anonymous.add(found.name.lower())
                elif isinstance(found, exp.Func):
                    kinds.add(type(found))
    return kinds, anonymous


_WINDOW_FUNCTIONS = (set(BUILTINS) | set(ALIASES)) - {"count_star", "count_distinct"}
_FUNC_KINDS, _FUNC_NAMES = _parsed_kinds(sorted(PURE_FUNCTIONS | _WINDOW_FUNCTIONS), ["a", "a, b", "a, b, c"])
_ZERO_KINDS, _ZERO_NAMES = _parsed_kinds(_NO_ARGUMENTS, [""])
# a kind a refused function reads as is never allowed, whatever allowed name also reads as it
_REFUSED_KINDS, _ = _parsed_kinds(sorted(_REASONS), ["", "a", "a, b", "a, b, c"])
_FUNC_KINDS -= _REFUSED_KINDS
_ZERO_KINDS -= _REFUSED_KINDS
_FUNC_KINDS |= {exp.Cast, exp.TryCast, exp.Case, exp.If, exp.Count, exp.Extract, exp.Trim}
_FUNC_NAMES |= _ZERO_NAMES

# the parts of a window query that are no function: each is checked for what it holds
_STRUCTURE = (
    exp.Select, exp.From, exp.Where, exp.Group, exp.Having, exp.Qualify, exp.Subquery, exp.Table,
    exp.TableAlias, exp.Alias, exp.Column, exp.Identifier, exp.Star, exp.Literal, exp.Boolean, exp.Null,
    exp.HexString, exp.Paren,
    exp.Neg, exp.Not, exp.BitwiseNot, exp.And, exp.Or, exp.Xor, exp.Add, exp.Sub, exp.Mul, exp.Div,
    exp.IntDiv, exp.Mod, exp.DPipe, exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor,
    exp.BitwiseLeftShift, exp.BitwiseRightShift, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
    exp.NullSafeEQ, exp.NullSafeNEQ, exp.Is, exp.In, exp.Between, exp.Like, exp.ILike, exp.Escape,
    exp.Interval, exp.Var, exp.DataType, exp.DataTypeParam, exp.ColumnDef, exp.Window, exp.WindowSpec,
    exp.Order, exp.Ordered, exp.Filter, exp.WithinGroup, exp.IgnoreNulls, exp.RespectNulls,
    exp.Distinct, exp.Lambda, exp.Bracket, exp.Dot, exp.PropertyEQ, exp.Kwarg, exp.Tuple, exp.JSONPath,
    exp.JSONPathRoot, exp.JSONPathKey, exp.JSONPathSubscript, exp.JSONPathWildcard,
)  # fmt: skip
# where sqlglot's free words (Var: an interval's unit, EXTRACT's field) may stand
_VAR_PARENTS = (exp.Interval, exp.Extract, exp.Kwarg, exp.DataType, exp.DataTypeParam, exp.WindowSpec)


def problems(
    query: str | exp.Expression, columns: list[str] | None = None, source: str = "source"
) -> list[str]:
    """Why the view's SQL ``query`` (text, or sqlglot's tree of it) reaches past its source's columns
    (empty: it does not); a problem per offending part (not its parts again), each naming it.
    ``columns``: the source's columns, which a bare name such as ``user`` means before Spark's
    function of that name. Text sqlglot cannot read is left to the query's own reader, which says
    why. O(nodes).

    >>> problems("SELECT k, user AS u FROM source", ["k", "x"])
    ["user: Spark reads it as a function when the source has no such column: the job's user"]
    """
    found: list[str] = []
    text = query if isinstance(query, str) else ""
    if isinstance(query, str):
        try:
            query = read_sql(query)
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
            return []
    if query is None:
        return []
    words = (n.this for n in query.walk() if isinstance(n, (exp.Literal, exp.Identifier, exp.Var)))
    if "${" in text or any(isinstance(w, str) and "${" in w for w in words):
        found.append(
            "${...}: Spark replaces it with a setting or an environment variable before it reads the "
            "SQL, so a view's SQL may not hold it (not in a string either)"
        )
    if not isinstance(query, (exp.Select, exp.Alias, exp.Window, exp.Condition)):
        return found + [f"{_short(query)}: a view's SQL is one SELECT ... FROM source"]
    known = None if columns is None else {c.lower() for c in columns}
    stack = [query]
    while stack:  # depth first, a refused part's own parts left unread
        node = stack.pop()
        reason = _refused(node, source, query, known)
        if reason is None:
            stack.extend(reversed(list(node.iter_expressions())))
        elif reason not in found:
            found.append(reason)
    return found


def _refused(node: exp.Expression, source: str, root: exp.Expression, columns: set | None) -> str | None:
    """Why ``node`` may not be in a view's SQL (None: it may)."""
    if isinstance(node, exp.Func) and not isinstance(node, _STRUCTURE):
        anonymous = isinstance(node, exp.Anonymous)
        name = node.name.lower() if anonymous else _func_name(node)
        if anonymous and isinstance(node.parent, exp.Dot):
            return (
                f"{_short(node.parent)}: a view calls Spark's own functions, not one of a catalog or schema"
            )
        if name not in _FUNC_NAMES if anonymous else type(node) not in _FUNC_KINDS:
            return (
                f"{_short(node)}: {name} {_REASONS.get(name, 'is not among the functions a view may call')}"
            )
        if not _arguments(node) and (name not in _ZERO_NAMES if anonymous else type(node) not in _ZERO_KINDS):
            return f"{_short(node)}: {name}() without arguments reads nothing of the row"
        return None
    if not isinstance(node, _STRUCTURE):
        what = next((words for kind, words in _CLAUSES.items() if isinstance(node, kind)), None)
        if what:
            return f"{_short(node)}: {what}; a view reads only its [source] (FROM source)"
        return (
            f"{_short(node)}: a view's SQL is SELECT ... FROM source [WHERE ...] [GROUP BY ... [HAVING ...]] "
            "[QUALIFY ...]; this is not"
        )
    if isinstance(node, exp.Table):
        return _table(node, source)
    if isinstance(node, (exp.Select, exp.Subquery)) and node is not root and not _derived(node):
        return f"{_short(node)}: a subquery reads past the view's own rows; a view reads only its source"
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        return f"{_short(node)}: a subquery reads past the view's own rows; a view reads only its source"
    if isinstance(node, exp.Var) and not isinstance(node.parent, (*_VAR_PARENTS, exp.Func)):
        return f"{_short(node)}: not a column of the source or a function of them"
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
        return f"{_short(node)}: a view calls Spark's own functions, not one of a catalog or schema"
    if (
        columns is not None
        and isinstance(node, exp.Column)
        and not node.table
        and node.name.lower() in _PARENTHESIS_FREE
        and node.name.lower() not in columns
    ):
        reads = _PARENTHESIS_FREE[node.name.lower()]
        return f"{_short(node)}: Spark reads it as a function when the source has no such column: {reads}"
    return None


def _derived(node: exp.Expression) -> bool:
    """Whether a SELECT (or its parentheses) is the derived table of ``SELECT ... FROM (<it>)``."""
    if isinstance(node, exp.Select):
        node = node.parent
    return isinstance(node, exp.Subquery) and isinstance(node.parent, exp.From)


# parts of a SELECT that bring in rows of other tables or queries, in SQL words
_CLAUSES = {
    exp.Join: "JOIN reads another table",
    exp.Lateral: "LATERAL reads rows of another query",
    exp.With: "WITH defines other tables",
    exp.CTE: "WITH defines other tables",
    exp.Union: "UNION reads another query",
    exp.Values: "VALUES is a table of its own",
}
# names Spark reads as functions without parentheses where no column has the name
_PARENTHESIS_FREE = {
    "user": "the job's user",
    "current_time": "the clock",
    "localtimestamp": "the clock",
    "current_catalog": "the session",
    "current_schema": "the session",
    "current_database": "the session",
    "current_timezone": "the session",
}


def _table(node: exp.Table, source: str) -> str | None:
    """Why a table may not be read: only ``source`` itself, unqualified, as it is."""
    if not isinstance(node.this, exp.Identifier):
        return f"FROM {_short(node)}: a table function reads outside the source; a view reads FROM source"
    if re.search(r"[/:\\]", node.name):
        return f"FROM {_short(node)}: a path reads files; a view reads only its [source] (FROM source)"
    qualified = node.args.get("db") is not None or node.args.get("catalog") is not None
    if qualified or node.name.lower() != source:
        return f"FROM {_short(node)}: a view reads only its [source] (FROM source)"
    extra = [k for k in ("sample", "version", "joins", "laterals", "pivots", "when") if node.args.get(k)]
    if extra:
        return f"FROM {_short(node)}: {extra[0].upper()} is not part of a view's SQL"
    return None


def _arguments(node: exp.Func) -> bool:
    """Whether the call has an argument (``pi()``, ``now()`` have none)."""
    if isinstance(node, exp.Anonymous):
        return bool(node.expressions)
    return any(v not in (None, [], False) for v in node.args.values())


def _func_name(node: exp.Func) -> str:
    """The function's name as Spark reads it (sqlglot prints it so for Spark)."""
    try:
        m = re.match(r"\s*([A-Za-z_][A-Za-z_0-9]*)", node.sql(dialect=DIALECT))
    except Exception:  # sqlglot's generator refuses some trees it parsed
        m = None
    return (m.group(1) if m else node.key).lower()


def _short(node: exp.Expression, limit: int = 80) -> str:
    """The node as SQL, cut to ``limit`` characters (its kind where sqlglot cannot print it)."""
    try:
        text = re.sub(r"\s+", " ", node.sql(dialect=DIALECT, normalize_functions=False))
    except Exception:  # sqlglot's generator refuses some trees it parsed
        return node.key.upper()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def refuse(text: str | exp.Expression, where: str, columns: list[str] | None = None) -> list[str]:
    """``problems`` of a view's SQL as view-file lines: ``where`` (the key and line), the part and
    why, and how a trusted view lifts it."""
    return [f"{where}: {p}; {LIFT}" for p in problems(text, columns)]


# the [spark] settings an untrusted view file may give: resources and batch sizes, none of which
# names a class, a program, a file or a place to read (OVERWINDOW_SPARK_CONF, the operator's, takes any)
RESOURCE_SETTINGS = frozenset(
    """
    spark.driver.memory spark.driver.cores spark.driver.maxResultSize spark.driver.memoryOverhead
    spark.executor.memory spark.executor.cores spark.executor.instances spark.executor.memoryOverhead
    spark.executor.pyspark.memory spark.cores.max spark.task.cpus spark.default.parallelism
    spark.memory.fraction spark.memory.storageFraction spark.memory.offHeap.enabled
    spark.memory.offHeap.size spark.python.worker.memory spark.python.worker.reuse
    spark.network.timeout spark.locality.wait spark.dynamicAllocation.enabled
    spark.dynamicAllocation.minExecutors spark.dynamicAllocation.maxExecutors
    spark.dynamicAllocation.initialExecutors spark.sql.shuffle.partitions
    spark.sql.files.maxPartitionBytes spark.sql.execution.arrow.maxRecordsPerBatch
    spark.sql.session.timeZone spark.sql.streaming.minBatchesToRetain
    spark.sql.streaming.numRecentProgressUpdates
    """.split()
)
# tuning numbers of the RocksDB state store the job uses for some views
_RESOURCE_PREFIXES = ("spark.sql.streaming.stateStore.rocksdb.",)


def resource_setting(name: str) -> bool:
    """Whether an untrusted view file's ``[spark]`` may give the setting ``name``.

    >>> resource_setting("spark.driver.memory"), resource_setting("spark.pyspark.python")
    (True, False)
    """
    return name in RESOURCE_SETTINGS or name.startswith(_RESOURCE_PREFIXES)
