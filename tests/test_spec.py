"""OverWindow refuses, when it is built, names the output keeps for itself (issue 18, item 5): an
alias ``_change`` was taken for the change marker (window close: the column vanished and rows whose
value read "delete" were dropped by the sink); and options out of their range (keyBuckets)."""

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
    with pytest.raises(WindowSpecError, match=f"keyBuckets must be a positive integer, got {buckets!r}"):
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
