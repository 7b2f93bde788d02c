"""OverWindow refuses, when it is built, names the output keeps for itself (issue 18, item 5): an
alias ``_change`` was taken for the change marker (window close: the column vanished and rows whose
value read "delete" were dropped by the sink); and options out of their range (keyBuckets)."""

import re

import pytest

from overwindow import OverWindow, WindowSpecError


@pytest.mark.parametrize("alias", ["_change", "_CHANGE", "_row_id", "__ow_id", "__overwindow_all"])
@pytest.mark.parametrize("emit", ["on_window_close", "on_update"])
def test_aliases_that_take_the_outputs_own_names_are_refused(alias, emit):
    with pytest.raises(WindowSpecError, match=rf"an alias may not be named '{alias}'"):
        OverWindow(f"sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS {alias}", emit=emit)


def test_input_columns_are_checked_by_name_without_case():
    spec = OverWindow("sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS s")
    spec.check_columns(["t", "x", "change", "row_id", "_ow"])  # near misses are fine
    with pytest.raises(WindowSpecError, match="an input column may not be named '_Row_Id'"):
        spec.check_columns(["t", "x", "_Row_Id"])


@pytest.mark.parametrize("buckets", [0, -3, 1.5, True, "8"])
def test_key_buckets_is_a_positive_integer(buckets):
    words = f'keyBuckets must be a positive integer or "per key", got {buckets!r}'
    with pytest.raises(WindowSpecError, match=re.escape(words)):
        OverWindow("lag(x) OVER (ORDER BY t) AS p", keyBuckets=buckets)


@pytest.mark.parametrize(
    "options", [{}, {"emit": "on_update"}, {"emit": "on_update", "stateLayout": "chunked"}]
)
def test_key_buckets_runs_every_mode_and_layout(options):
    assert "keyBuckets=8" in repr(OverWindow("lag(x) OVER (ORDER BY t) AS p", keyBuckets=8, **options))


@pytest.mark.parametrize("emit", ["on_update", "on_window_close"])
def test_a_null_range_offset_is_refused_on_a_stream(emit):
    """evaluate() computes RANGE NULL PRECEDING as Spark does (tests/spark/test_parity.py); the
    streaming machines do not, and say so when the spec is built."""
    with pytest.raises(WindowSpecError, match="NULL or NaN RANGE offset"):
        OverWindow("sum(x) OVER (ORDER BY t RANGE BETWEEN NULL PRECEDING AND CURRENT ROW) AS r", emit=emit)


@pytest.mark.parametrize(
    "options, watermarked, by_columns, hosted",
    [
        ({}, True, True, 64),  # window close: its state is bounded by the watermark
        ({}, True, False, None),  # groupBy over a computed key: the key is in no row
        ({"stateLayout": "chunked"}, True, False, 64),  # splits a bucket's state: always on buckets
        ({"emit": "on_update"}, True, True, 64),
        ({"emit": "on_update"}, False, True, None),  # every live row held: a bucket moves them all
        ({"emit": "on_update", "stateLayout": "chunked"}, True, True, None),  # steps key by key
        ({"keyBuckets": 8}, True, True, 8),
        ({"keyBuckets": 8, "emit": "on_update"}, False, True, 8),
        ({"keyBuckets": "per key"}, True, True, None),
    ],
)
def test_key_buckets_not_given_are_chosen_where_the_watermark_bounds_the_state(
    options, watermarked, by_columns, hosted
):
    """keyBuckets not given: the default buckets wherever the main job would choose them (a state
    bounded by the watermark, on the whole layout or split on window close); given, as given."""
    calls = ["lag(x) OVER (ORDER BY t) AS p"]
    spec = OverWindow(*calls, rowKey="id", **options)
    assert spec.hosted(watermarked, by_columns).key_buckets == hosted


@pytest.mark.parametrize("partitions, chosen", [(1, 16), (2, 16), (4, 16), (5, 64), (8, 64), (200, 64)])
def test_chosen_buckets_follow_the_shuffle_partitions(partitions, chosen):
    """Few buckets on one machine's shuffle (a call's fixed cost outweighs parallelism there), the
    default on more partitions; hosting again for another shuffle chooses anew, a number given
    stays."""
    spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", rowKey="id")
    assert spec.hosted(True, True, partitions).key_buckets == chosen
    assert spec.hosted(True, True, 200).hosted(True, True, partitions).key_buckets == chosen
    assert spec.hosted(True, True, partitions).buckets_chosen
    given = OverWindow("lag(x) OVER (ORDER BY t) AS p", rowKey="id", keyBuckets=16)
    assert given.hosted(True, True, 200).key_buckets == 16 and not given.hosted(True, True, 2).buckets_chosen


def test_a_state_per_key_asked_for_prints_as_asked():
    assert repr(OverWindow("lag(x) OVER (ORDER BY t) AS p", keyBuckets="per key")).endswith(
        "emit='on_window_close', keyBuckets='per key')"
    )
