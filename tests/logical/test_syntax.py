"""The SQL text checked token by token by Spark's grammar before sqlglot reads it, and the spellings
sqlglot's reader refuses rewritten (logical/syntax.py); the messages as a user meets them through
``parse_window``: tests/logical/test_errors.py."""

from __future__ import annotations

import pytest

from overwindow import WindowSpecError
from overwindow.logical.expr import spark_tokens
from overwindow.logical.syntax import check_over_clauses, flagged_value_functions, groups_without_order_by


def check(text: str) -> None:
    check_over_clauses(spark_tokens(text), text)


@pytest.mark.parametrize(
    "text,words",
    [
        # sqlglot reads these as if the comma were not there, or as a frame ending at CURRENT ROW
        ("sum(x) OVER (PARTITION BY k, ORDER BY t) AS s", "at or near 'ORDER BY': expected an expression"),
        ("sum(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING) AS s", r"at or near '\)': expected AND"),
        ("sum(x) OVER AS s", "OVER needs a window specification"),
        ("sum(x,) OVER () AS s", "nothing after the comma at 6"),
        ("sum(,x) OVER () AS s", "nothing before the comma at 5"),
        ("first_value(x, 'true') OVER (ORDER BY t) AS f", "must be the literal TRUE or FALSE"),
        ("first_value(x, true, 1) OVER (ORDER BY t) AS f", r"takes at most 2 arguments, got 3"),
        ("percentile_cont(x, 0.5) OVER () AS p", r"takes one argument, the fraction"),
        ("percentile_cont(0.5) OVER () AS p", r"needs WITHIN GROUP \(ORDER BY x\) after it"),
        ("percentile(x, 0.5, 2) OVER () AS p", "with the frequency 1 only"),
        ("sum(x) OVER (SESSION WITH GAP 5) AS s", "SESSION WITH GAP needs ORDER BY"),
        ("sum(x) OVER (ORDER BY t SESSION WITH GAP 5 ROWS 1 PRECEDING) AS s", "takes no ROWS bounds"),
        ("sum(x) OVER (ORDER BY t RANGE INTERVAL '1 day xyz' PRECEDING) AS s", "cannot read INTERVAL"),
    ],
)
def test_text_spark_refuses_is_refused_naming_the_token(text, words):
    with pytest.raises(WindowSpecError, match=words):
        check(text)


@pytest.mark.parametrize(
    "text",
    [
        "sum(x) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES) AS s",
        "sum(x) OVER (PARTITION BY session ORDER BY t) AS s",  # a column named session is no clause
        "percentile(x, 0.5, 1) OVER () AS p",
        "first_value(x, true) OVER (ORDER BY t) AS f",
    ],
)
def test_text_spark_reads_passes(text):
    check(text)


@pytest.mark.parametrize(
    "text,want",
    [
        ("lag() OVER (ORDER BY t) AS l", "lag(NULL) OVER (ORDER BY t) AS l"),
        ("last_value(x, false) OVER (ORDER BY t) AS l", "last(x, false) OVER (ORDER BY t) AS l"),
        ("first_value(f(a, b)) OVER (ORDER BY t) AS l", "first_value(f(a, b)) OVER (ORDER BY t) AS l"),
    ],
)
def test_spellings_sqlglot_refuses_are_rewritten(text, want):
    assert flagged_value_functions(text, spark_tokens(text)) == want


def test_groups_without_order_by():
    assert groups_without_order_by("sum(x) OVER (GROUPS 1 PRECEDING) AS s")
    assert not groups_without_order_by("sum(x) OVER (ORDER BY t GROUPS 1 PRECEDING) AS s")
    assert not groups_without_order_by("'")  # not tokenized
