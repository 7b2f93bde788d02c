"""The column reader (overwindow.physical.columns): what the state machines and the Spark adapter
read out of a batch. Plain columns by Spark's case rules, constants with Spark's literal types
(Spark's SQL reference: ``1`` INT, ``2147483648`` BIGINT, ``1.5`` DECIMAL(2, 1)), and nothing else."""

import decimal

import pyarrow as pa
import pytest

from overwindow.errors import WindowSpecError
from overwindow.logical.bind import bind
from overwindow.logical.expr import Expr
from overwindow.logical.parse import parse_window
from overwindow.physical.columns import NotPlainColumn, read_column

TABLE = pa.table({"x": [1, None, 3], "Price": [1.5, 2.0, None], "s": [{"a": 1}, None, {"a": 3}]})


def test_a_column_is_read_by_name_exact_first_then_ignoring_case():
    assert read_column(Expr.of("x"), TABLE).to_pylist() == [1, None, 3]
    assert read_column(Expr.of("price"), TABLE).to_pylist() == [1.5, 2.0, None]
    assert read_column(Expr.of("`Price`"), TABLE).to_pylist() == [1.5, 2.0, None]
    assert read_column(Expr.of("(x)"), TABLE).to_pylist() == [1, None, 3]
    both = pa.table({"a": [1], "A": [2]})
    assert read_column(Expr.of("A"), both).to_pylist() == [2]
    with pytest.raises(WindowSpecError, match="ambiguous"):
        read_column(Expr.of("Ab"), pa.table({"ab": [1], "AB": [2]}))
    with pytest.raises(WindowSpecError, match="`y` does not exist; available columns: x, Price, s"):
        read_column(Expr.of("y"), TABLE)


def test_a_column_of_several_chunks_is_one_array():
    t = pa.concat_tables([TABLE.select(["x"]), TABLE.select(["x"])])
    assert isinstance(read_column(Expr.of("x"), t), pa.Array)


@pytest.mark.parametrize(
    "text, value, kind",
    [
        ("1", 1, pa.int32()),
        ("-1", -1, pa.int32()),
        ("2147483648", 2147483648, pa.int64()),
        ("1.5", decimal.Decimal("1.5"), pa.decimal128(2, 1)),
        ("'a'", "a", pa.string()),
        ("TRUE", True, pa.bool_()),
        ("NULL", None, pa.null()),
    ],
)
def test_a_constant_has_sparks_literal_type_on_every_row(text, value, kind):
    got = read_column(Expr.of(text), TABLE)
    assert got.type == kind and got.to_pylist() == [value] * TABLE.num_rows


@pytest.mark.parametrize("text", ["x + 1", "s.a", "upper(s)", "CAST(1 AS INT)", "10L", "x IS NULL"])
def test_anything_else_is_refused_by_name(text):
    with pytest.raises(NotPlainColumn, match=r"is not a plain column or constant") as e:
        read_column(Expr.of(text), TABLE)
    assert str(e.value).startswith(Expr.of(text).sql)


def test_what_the_bind_step_leaves_is_read():
    # every argument, FILTER, default and key a bound call reads is a plain column or a constant
    keys = "OVER (PARTITION BY s.a ORDER BY -x)"
    bound = bind(
        [
            parse_window(f"lag(x * 2, 1, -1) {keys} AS p"),
            parse_window(f"sum(x) FILTER (WHERE x > 0) {keys} AS m"),
        ]
    )
    table = TABLE
    for name in bound.names:
        table = table.append_column(name, pa.array([1, 2, 3]))
    for call in (c for w in bound.expressions for c in w.calls):
        for e in [
            *call.args,
            call.filter,
            call.default,
            *call.partition_by,
            *(k.expr for k in call.order_by),
        ]:
            assert e is None or len(read_column(e, table)) == TABLE.num_rows
