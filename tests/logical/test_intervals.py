"""INTERVAL literals and interval text read as Spark reads them (logical/intervals.py): each literal
as one interval with Spark's fields; against Spark itself: tests/spark/test_parity.py and
tests/spark/test_parity_refusals.py."""

from __future__ import annotations

import pytest
import sqlglot

from overwindow import Interval, WindowSpecError
from overwindow.logical.expr import DIALECT
from overwindow.logical.intervals import interval_from_text, interval_literal, span_fields, unit_words


def literal(text: str) -> Interval:
    return interval_literal(sqlglot.parse_one(text, read=DIALECT))


@pytest.mark.parametrize(
    "text,want",
    [
        ("INTERVAL 3 DAYS", Interval(days=3, fields="DAY")),
        ("INTERVAL 2 WEEKS", Interval(days=14, fields="DAY")),
        ("INTERVAL '1-1' YEAR TO MONTH", Interval(months=13, fields="YEAR TO MONTH")),
        ("INTERVAL '-1 02' DAY TO HOUR", Interval(days=-1, micros=-7_200_000_000, fields="DAY TO HOUR")),
        (
            "INTERVAL '1 02:03:04.5' DAY TO SECOND",
            Interval(days=1, micros=7_384_500_000, fields="DAY TO SECOND"),
        ),
        ("INTERVAL 1.5 SECONDS", Interval(micros=1_500_000, fields="SECOND")),
        ("INTERVAL 3 MILLISECONDS", Interval(micros=3_000, fields="SECOND")),
        # a sum of intervals (sqlglot) and a string of units: one interval from the largest field
        ("INTERVAL 1 DAY 2 HOURS", Interval(days=1, micros=7_200_000_000, fields="DAY TO HOUR")),
        ("INTERVAL '1 day 3 hours'", Interval(days=1, micros=10_800_000_000, fields="DAY TO HOUR")),
    ],
)
def test_literals_have_spark_fields(text, want):
    assert literal(text) == want


@pytest.mark.parametrize(
    "text,words",
    [
        ("INTERVAL 1 MONTH 2 DAYS", "mixes months with days"),
        ("INTERVAL '1.5' DAY", "whole number of days"),
        ("INTERVAL 1 FORTNIGHT", "unsupported INTERVAL unit"),
    ],
)
def test_literals_spark_refuses_are_refused(text, words):
    with pytest.raises(WindowSpecError, match=words):
        literal(text)


def test_every_word_of_a_unit_string_is_read():
    """Spark reads the whole string: ``'1 day xyz'`` is an error, where sqlglot keeps ``1 day``."""
    assert unit_words("1 day") == Interval(days=1, fields="DAY")
    with pytest.raises(WindowSpecError, match="cannot read INTERVAL '1 day xyz'"):
        unit_words("1 day xyz")


@pytest.mark.parametrize(
    "text,fields,want",
    [
        ("3", "DAY", Interval(days=3, fields="DAY")),
        ("36", "HOUR", Interval(micros=36 * 3_600_000_000, fields="HOUR")),
        ("1.5", "SECOND", Interval(micros=1_500_000, fields="SECOND")),
        (" -1 02:00:00 ", "DAY TO SECOND", Interval(days=-1, micros=-7_200_000_000, fields="DAY TO SECOND")),
        ("INTERVAL '3' DAY", "DAY", Interval(days=3, fields="DAY")),  # the whole literal, of that type
    ],
)
def test_text_cast_to_a_day_time_interval(text, fields, want):
    assert interval_from_text(text, fields) == want


@pytest.mark.parametrize("text,fields", [("1.5", "DAY"), ("abc", "DAY"), ("INTERVAL '3' HOUR", "DAY")])
def test_text_that_is_no_such_interval_is_refused(text, fields):
    with pytest.raises(WindowSpecError, match="INVALID_INTERVAL_FORMAT"):
        interval_from_text(text, fields)


def test_fields_side_by_side_span_from_the_largest_to_the_smallest():
    assert span_fields("DAY", "HOUR") == "DAY TO HOUR"
    assert span_fields("SECOND", "DAY TO HOUR") == "DAY TO SECOND"
    assert span_fields("YEAR TO MONTH") == "YEAR TO MONTH"
