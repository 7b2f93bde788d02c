"""DECIMAL arithmetic in expressions (``+ - * / %``) against Spark SQL as the oracle: result values
and result types, and where Spark's ANSI mode fails the query (DIVIDE_BY_ZERO, REMAINDER_BY_ZERO,
an overflow), a WindowRuntimeError from overwindow naming Spark's error, never a NULL or a raw
Arrow error.

Every expression runs in both engines as the same window call text, ``lag(<expr>, 0) OVER (ORDER BY
rid)`` (each row's own value) or a ``sum``/``avg`` over a sliding frame of it, over one table. A
query that fails in Spark is retried row by row, so each row's outcome is known: its value, or the
kind of Spark's error (its class; the overflow classes as one); overwindow is run the same way and
must agree row for row. The rows: ``EDGES``, chosen by hand (30-digit DECIMAL(38,10) values,
negatives, halves at the digit a result rounds at, products past 38 digits, remainders whose
integral quotient passes 39 digits, and a product and a quotient that round to one value when
rounded twice, first to 38 digits or places and then to the result's scale, and to another when
the exact value is rounded once, as Spark 4.3 does); a few rows beside zero divisors; and random
tables drawn by hypothesis.
"""

from __future__ import annotations

import re
from decimal import Context, Decimal, localcontext

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overwindow
from overwindow import WindowRuntimeError

SCHEMA = {  # column -> Spark type
    "m": "DECIMAL(12,2)",
    "w": "DECIMAL(38,10)",
    "v": "DECIMAL(38,10)",
    "z": "DECIMAL(38,0)",
    "i": "INT",
    "l": "BIGINT",
    "f": "DOUBLE",
    "fl": "FLOAT",
}
ARROW = {
    "m": pa.decimal128(12, 2),
    "w": pa.decimal128(38, 10),
    "v": pa.decimal128(38, 10),
    "z": pa.decimal128(38, 0),
    "i": pa.int32(),
    "l": pa.int64(),
    "f": pa.float64(),
    "fl": pa.float32(),
}

EXPRESSIONS = [
    "m * 2",
    "m * -2",
    "m + w",
    "m - w",
    "w * w",
    "w * v",
    "m * w",
    "m / 3",
    "m / m",
    "w / v",
    "w / z",
    "w / 2",
    "i * m",
    "l * m",
    "m * 0.5 - w",
    "m % 3",
    "w % m",
    "i % m",
    "m * f",
    "f % 3",
    "m + 1.5 * i",
    "m * 0.5",  # 0.5 is DECIMAL(1,1)
    "m % 0.7",
    "m * -(2)",  # not a literal for Spark: the DECIMAL(10,0) of an INT
    "m * (1 + 1)",
    "1.5 * 2",
    "1.5 / 3",
    "z % v",  # integral quotients of 48 digits, 10**47 (row 5) and 3.3...e46 (the last)
    "i * fl",  # FLOAT beside an integer or a DECIMAL is DOUBLE, beside a FLOAT FLOAT
    "fl % 2",
    "fl + fl",
    "m * fl",
]
# zero divisors (Spark: DIVIDE_BY_ZERO, REMAINDER_BY_ZERO), over few rows (each fails alone)
ZERO_DIVISORS = ["m / 0", "m % 0", "i / 0", "i % 0", "f / 0", "fl % 0", "m / mz", "w % (m - m)", "1 / 0"]
# aggregates over DECIMAL expressions, in a frame that slides (sum DECIMAL(p + 10, s), avg (p + 4, s + 4))
AGGREGATES = ["sum(m * 2)", "avg(m + w)", "sum(i * m)", "avg(m / 3)", "sum(w / v)"]
FRAME = "OVER (ORDER BY rid ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"


def _decimal(unscaled: int, scale: int) -> Decimal:
    """unscaled * 10**-scale, every digit kept (Decimal's default context keeps 28)."""
    return Decimal(unscaled).scaleb(-scale, Context(prec=80))


def _double_rounded_product() -> tuple[Decimal, Decimal]:
    """(w, v) whose product rounds to another value twice than once: it has 19 integer and 20
    fraction digits, 39 in all; rounded half up to 38 digits first (fraction digits 7 to 19 are
    4999999999999 and the 20th is 5, so this carries) and then to w * v's scale 6, the carried 5
    rounds up; the exact product rounds down. Spark 4.3's Decimal truncates a product to 39
    digits (MathContext(39, DOWN)) and then rounds once."""
    fraction = 123456_4999999999999_5  # the 20 fraction digits of the product
    v = 7  # unscaled; w's unscaled value is chosen so that w * v ends in those digits
    low = fraction * pow(v, -1, 10**20) % 10**20
    w = low + 2 * 10**37 // 10**20 * 10**20
    return _decimal(w, 10), _decimal(v, 10)


def _double_rounded_quotient() -> tuple[Decimal, Decimal]:
    """(w, z) whose quotient w / z (DECIMAL(38,10)) rounds to another value twice than once: to 38
    places first, 0.00000000004999...(28 nines)... carries up to 0.00000000005, then to scale 10:
    1E-10; the exact quotient rounds to 0, as in Spark 4.3 (it truncates to 39 places first)."""
    z = 3 * 10**28
    return _decimal(5 * z // 10 - 1, 10), Decimal(z)


_W2, _V2 = _double_rounded_product()
_W3, _Z3 = _double_rounded_quotient()
D = Decimal
# m, w, v, z, i, l, f, fl (rid: the row's position)
EDGES = [
    (D("1.25"), D("12345678901234567890.1234567890"), D("3.0000000000"), D(7), 3, 2, 1.5, 1.5),
    (D("-1.25"), D("-12345678901234567890.1234567895"), D("-0.0000000005"), D(-7), -3, -(2**40), -2.5, -0.1),
    (D("0.05"), D("0.0000000005"), D("0.0000000015"), D(3), 2**31 - 1, 2**63 - 1, 1e20, 3.4e38),
    (D("-0.05"), D("-0.0000000005"), D("-1.0000000015"), D(-3), -(2**31), -(2**63), -1e20, -(2.0**-149)),
    (
        D("9999999999.99"),
        D("9999999999999999999999999999.9999999999"),
        D("2.0000000000"),
        D(1),
        1,
        1,
        3.0,
        2.5,
    ),
    (D("-9999999999.99"), D("1.0000000000"), D("0.0000000001"), D(10**37), 7, 10, -0.0, -0.0),
    (D("0.00"), D("0E-10"), D("1.0000000000"), D(1), 0, 0, 0.0, 0.0),
    (D("0.01"), _W2, _V2, _Z3, 5, 3, 0.5, 16777217.0),
    (D("3.33"), _W3, D("0.3333333333"), _Z3, -5, -3, -0.5, 0.3),
    (None, D("1.5000000000"), None, None, None, None, None, None),
    (D("2.50"), None, D("-2.5000000000"), D(2), None, 5, float("nan"), float("inf")),
    (D("1.00"), D("1.0000000000"), D("0.0000000003"), D(10**37 + 1), 1, 1, 1.0, 1.0),  # z % v: 47 digits
]


def make_table(rows) -> pa.Table:
    cols = {"rid": pa.array(range(len(rows)), pa.int64())}
    for j, name in enumerate(ARROW):
        cols[name] = pa.array([r[j] for r in rows], ARROW[name])
    return pa.table(cols)


_OVERFLOW = ("NUMERIC_VALUE_OUT_OF_RANGE", "ARITHMETIC_OVERFLOW")


def _kind(message: str, spark: bool) -> str | None:
    """The kind of an arithmetic failure: Spark's error class (``[DIVIDE_BY_ZERO] ...``), which
    overwindow's message names (``(Spark: DIVIDE_BY_ZERO)``); the overflow classes are one kind, as
    Spark names a DECIMAL overflow differently where it happens in a sum."""
    found = re.search(r"\[([A-Z_]+)" if spark else r"\(Spark: ([A-Z_]+|[A-Z][a-z ]+)\)", message)
    if found is None and spark and "Division impossible" in message:
        return "Division impossible"  # Java's, from BigDecimal.remainder: no class of Spark's
    if found is None:
        return None
    return "overflow" if found.group(1) in _OVERFLOW else found.group(1)


def run_spark(spark, table: pa.Table, items: dict) -> tuple[dict, dict]:
    """(Spark's type of each item by alias, its outcome per row: a value or ``("error", kind)``).
    One SELECT of every item; where it fails, one per item, and where that fails, one per row."""
    spark.createDataFrame(table).createOrReplaceTempView("dec_arith")

    def select(aliases, where=""):
        columns = ", ".join(f"{items[a]} AS {a}" for a in aliases)
        return spark.sql(f"SELECT rid, {columns} FROM dec_arith {where} ORDER BY rid")

    schema = select(items).schema  # analysis only, no job
    types = {a: schema[a].dataType for a in items}
    try:
        rows = select(items).collect()
        return types, {a: [r[a] for r in rows] for a in items}
    except Exception:  # noqa: BLE001 - some item fails on some row: find which
        pass
    outcomes = {}
    for a in items:
        try:
            outcomes[a] = [r[a] for r in select([a]).collect()]
            continue
        except Exception:  # noqa: BLE001 - row by row below
            outcomes[a] = []
        for rid in range(table.num_rows):
            try:
                outcomes[a] += [r[a] for r in select([a], f"WHERE rid = {rid}").collect()]
            except Exception as e:  # noqa: BLE001 - the row's outcome
                kind = _kind(str(e), spark=True)
                assert kind, f"{items[a]}: Spark failed otherwise: {str(e)[:600]}"
                outcomes[a].append(("error", kind))
    return types, outcomes


def run_overwindow(table: pa.Table, items: dict) -> tuple[dict, dict]:
    """As ``run_spark``, from ``overwindow.evaluate`` (the types from the same call over no rows)."""
    types, outcomes = {}, {}
    for alias, text in items.items():
        types[alias] = overwindow.evaluate(table.slice(0, 0), f"{text} AS r").schema.field("r").type
        try:
            outcomes[alias] = overwindow.evaluate(table, f"{text} AS r").sort_by("rid")["r"].to_pylist()
        except WindowRuntimeError:
            outcomes[alias] = []
            for rid in range(table.num_rows):
                try:
                    row = overwindow.evaluate(table.slice(rid, 1), f"{text} AS r")
                    outcomes[alias] += row["r"].to_pylist()
                except WindowRuntimeError as e:
                    kind = _kind(str(e), spark=False)
                    assert kind, f"{text}: a WindowRuntimeError that names no Spark error: {e}"
                    outcomes[alias].append(("error", kind))
    return types, outcomes


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (a != a and b != b) or (a == b and str(a)[0] == str(b)[0])  # NaN; -0.0 apart from 0.0
    return type(a) is type(b) and a == b


def compare(spark, table: pa.Table, items: dict) -> list[str]:
    from pyspark.sql.pandas.types import from_arrow_type

    want_types, want = run_spark(spark, table, items)
    got_types, got = run_overwindow(table, items)
    msgs = []
    for alias, text in items.items():
        assert len(got[alias]) == len(want[alias]) == table.num_rows, text
        if from_arrow_type(got_types[alias]) != want_types[alias]:
            msgs.append(f"{text}: type {got_types[alias]}, Spark's {want_types[alias].simpleString()}")
        for rid, (g, w) in enumerate(zip(got[alias], want[alias])):
            if not _same(g, w):
                row = {k: table[k][rid].as_py() for k in SCHEMA}
                msgs.append(f"{text}, rid {rid} {row}: {g!r}, Spark {w!r}")
    return msgs


def _items(expressions, aggregates) -> dict:
    items = {f"e{j}": f"lag({e}, 0) OVER (ORDER BY rid)" for j, e in enumerate(expressions)}
    items.update({f"a{j}": f"{a} {FRAME}" for j, a in enumerate(aggregates)})
    return items


def test_the_double_roundings_are_real():
    """The two rows built for it do round to other values twice (first to 38 digits or places)
    than once. (A check of the data, so that the test below does tell the two apart.)"""
    with localcontext() as ctx:
        ctx.prec = 100
        product, quotient = _W2 * _V2, _W3 / _Z3
        assert len(product.as_tuple().digits) == 39
        once = product.quantize(D("1E-6"), rounding="ROUND_HALF_UP")
        twice = product.quantize(D("1E-19"), rounding="ROUND_HALF_UP").quantize(D("1E-6"), "ROUND_HALF_UP")
        assert once != twice
        once = quotient.quantize(D("1E-10"), rounding="ROUND_HALF_UP")
        twice = quotient.quantize(D("1E-38"), "ROUND_HALF_UP").quantize(D("1E-10"), "ROUND_HALF_UP")
        assert once != twice


def test_decimal_edges_agree_with_spark(spark):
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    msgs = compare(spark, make_table(EDGES), _items(EXPRESSIONS, AGGREGATES))
    assert not msgs, f"{len(msgs)} disagreement(s) with Spark:\n" + "\n".join(msgs)


def test_zero_divisors_agree_with_spark(spark):
    """A zero divisor fails beside a dividend that is not NULL, whatever the types (DOUBLE and
    FLOAT too); NULL beside it is NULL."""
    table = make_table([EDGES[0], EDGES[9], EDGES[10], EDGES[5]])
    table = table.append_column(
        "mz", pa.array([Decimal("0.00"), Decimal("0.00"), None, Decimal("0.00")]).cast(ARROW["m"])
    )
    msgs = compare(spark, table, _items(ZERO_DIVISORS, ["sum(m / mz)"]))
    assert not msgs, f"{len(msgs)} disagreement(s) with Spark:\n" + "\n".join(msgs)


def _decimals(digits: int, scale: int):
    """DECIMAL(digits, scale) values: any, a few digits, or a half (5) at the last place or two."""
    top = 10**digits - 1
    unscaled = st.one_of(
        st.integers(-top, top),
        st.integers(-999, 999),
        st.sampled_from([5, -5, 15, -15, 50, -50, 0, top, -top]),
    )
    return st.one_of(st.none(), unscaled.map(lambda u: _decimal(u, scale)))


ROW = st.tuples(
    _decimals(12, 2),
    _decimals(38, 10),
    _decimals(38, 10),
    _decimals(38, 0),
    st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1), st.integers(-9, 9)),
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.integers(-9, 9)),
    st.one_of(st.none(), st.sampled_from([0.5, -2.0, 1e20, 3.0])),
    st.one_of(st.none(), st.sampled_from([0.5, -2.0, 0.1, 3.0])),
)


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(rows=st.lists(ROW, min_size=1, max_size=6), pick=st.randoms(use_true_random=False))
def test_random_decimals_agree_with_spark(spark, rows, pick):
    expressions = pick.sample(EXPRESSIONS, 6)
    msgs = compare(spark, make_table(rows), _items(expressions, pick.sample(AGGREGATES, 1)))
    assert not msgs, f"{len(msgs)} disagreement(s) with Spark:\n" + "\n".join(msgs)


@pytest.mark.parametrize(
    "text, kind",
    [
        ("lag(m / 0, 0) OVER (ORDER BY rid)", "DIVIDE_BY_ZERO"),
        ("lag(m % 0, 0) OVER (ORDER BY rid)", "REMAINDER_BY_ZERO"),
        ("lag(w * w, 0) OVER (ORDER BY rid)", "overflow"),
        ("lag(z % v, 0) OVER (ORDER BY rid)", "Division impossible"),
    ],
)
def test_failures_are_window_runtime_errors(text, kind):
    """Spark's ANSI mode fails these (checked by the tests above); overwindow raises
    WindowRuntimeError naming Spark's error, not an Arrow error and not NULL."""
    with pytest.raises(WindowRuntimeError) as e:
        overwindow.evaluate(make_table([EDGES[0], EDGES[-1]]), f"{text} AS r")
    assert _kind(str(e.value), spark=False) == kind
