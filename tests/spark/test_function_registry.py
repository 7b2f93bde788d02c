"""Spark's function registry, read at run time: every aggregate and window function Spark lists is
either computed by overwindow over a window or refused by name with its reason
(``overwindow.logical.functions.REFUSED``), so a function a newer Spark adds fails this test until
it is one or the other. A computed one must give Spark's answer and type over a small table.

Spark tells a function's group (``agg_funcs``, ``window_funcs``) in its ``ExpressionInfo``, which
``SHOW FUNCTIONS`` and ``DESCRIBE FUNCTION`` do not print: it is read from the session's catalog
through the JVM. A function counts as computed when a call of it parses to a catalog entry and
runs over a small table with Spark's values and result type (a few need their constant
arguments: ``SAMPLES``)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from test_parity_functions import Call, disagreements

import overwindow
from overwindow.errors import WindowSpecError
from overwindow.logical.functions import REFUSED

# calls of the functions that need more than one column or constants of their own
SAMPLES = {
    "counter_diff": "counter_diff(i) OVER (ORDER BY t)",
    "lag": "lag(x) OVER (ORDER BY t)",
    "lead": "lead(x) OVER (ORDER BY t)",
    "nth_value": "nth_value(x, 2) OVER (ORDER BY t)",
    "ntile": "ntile(2) OVER (ORDER BY t)",
    "percentile": "percentile(x, 0.5) OVER ()",
    "percentile_cont": "percentile_cont(0.5) WITHIN GROUP (ORDER BY x) OVER ()",
    "percentile_disc": "percentile_disc(0.5) WITHIN GROUP (ORDER BY x) OVER ()",
    "percentile_approx": "percentile_approx(x, 0.5) OVER ()",
    "approx_percentile": "approx_percentile(x, 0.5) OVER ()",
    "histogram_numeric": "histogram_numeric(x, 3) OVER ()",
    "max_by": "max_by(x, i) OVER ()",
    "min_by": "min_by(x, i) OVER ()",
    "collect_union": "collect_union(a) OVER ()",
    "count_if": "count_if(b) OVER ()",
    "bit_and": "bit_and(i) OVER ()",
    "bit_or": "bit_or(i) OVER ()",
    "bit_xor": "bit_xor(i) OVER ()",
    "bool_and": "bool_and(b) OVER ()",
    "bool_or": "bool_or(b) OVER ()",
    "every": "every(b) OVER ()",
    "some": "some(b) OVER ()",
    "any": "any(b) OVER ()",
    "listagg": "listagg(s) OVER ()",
    "string_agg": "string_agg(s, ',') OVER ()",
}
SAMPLES.update(
    (name, f"{name}(x, i) OVER ()")
    for name in ["corr", "covar_pop", "covar_samp"]
    + [f"regr_{s}" for s in "avgx avgy count intercept r2 slope sxx sxy syy".split()]
)
RANKING = {"row_number", "rank", "dense_rank", "percent_rank", "cume_dist"}
TABLE = pa.table(
    {
        "rid": [1, 2, 3],
        "t": [1, 2, 3],
        "x": [1.5, None, 2.5],
        "i": pa.array([3, 5, None], pa.int32()),
        "s": ["a", None, "b"],
        "b": [True, False, None],
        "a": pa.array([[1, 2], None, [2, 3]], pa.list_(pa.int64())),
    }
)


def aggregate_and_window_functions(spark) -> dict[str, str]:
    """Spark's functions in the groups agg_funcs and window_funcs, by name: their group."""
    names = [r[0] for r in spark.sql("SHOW SYSTEM FUNCTIONS").collect()]
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalog()
    identifier = jvm.org.apache.spark.sql.catalyst.FunctionIdentifier
    out = {}
    for name in names:
        if not name.replace("_", "").isalnum():
            continue  # operators (+, ==, ...)
        group = catalog.lookupFunctionInfo(identifier.apply(name)).getGroup()
        if group in ("agg_funcs", "window_funcs"):
            out[name] = group
    return out


def sample(name: str) -> str:
    if name in SAMPLES:
        return SAMPLES[name]
    if name in RANKING:
        return f"{name}() OVER (ORDER BY t)"
    return f"{name}(x) OVER ()"


def test_every_aggregate_and_window_function_is_computed_or_refused_by_name(spark):
    functions = aggregate_and_window_functions(spark)
    assert {"sum", "collect_list", "row_number", "lag"} <= set(functions)  # the registry was read
    computed = []
    for name in sorted(functions):
        if name in REFUSED:
            assert len(REFUSED[name]) > 20, name  # a reason, in words
            with pytest.raises(WindowSpecError, match=f"{name}.*not computed over a window"):
                overwindow.evaluate(TABLE, f"{sample(name)} AS r")
        else:
            computed.append(Call(name, sample(name)))
    wrong = disagreements(spark, TABLE, computed, "registry")
    assert not wrong, (
        "Spark's aggregate/window functions neither computed with Spark's answer nor refused by name "
        "(add them, or to REFUSED with the reason):\n" + "\n".join(wrong)
    )


def test_the_refusals_name_only_functions_spark_lists(spark):
    """No stale refusal: every refused name is one of Spark's aggregate or window functions."""
    assert set(REFUSED) <= set(aggregate_and_window_functions(spark))
