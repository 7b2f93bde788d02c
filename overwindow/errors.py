"""Errors raised by overwindow, worded in SQL terms.

`WindowSpecError` is raised while a window call is built or planned (bad SQL, unknown function or
column, an impossible frame); `WindowRuntimeError` while it runs (an integer sum that overflows).
"""


class WindowSpecError(ValueError):
    """A window call that cannot be evaluated, e.g. ``RANGE with an offset needs exactly one ORDER BY
    column``."""


class WindowRuntimeError(ArithmeticError):
    """A window call that failed on the data, e.g. ``sum(x) overflows BIGINT``."""


class FrameErrors(WindowRuntimeError):
    """A user's function failed on some rows' frames (a pandas_udf raised): ``result`` holds every
    row's value (NULL where it failed), ``reasons`` per row why it failed (None where it did not).
    The batch evaluator raises the first reason; a stream sets those rows aside
    (``overwindow.streaming.aside``)."""

    def __init__(self, result, reasons):
        super().__init__(next(r for r in reasons if r is not None))
        self.result, self.reasons = result, reasons
