"""Errors raised by overwindow, worded in SQL terms.

`WindowSpecError` is raised while a window call is built or planned (bad SQL, unknown function or
column, an impossible frame); `WindowRuntimeError` while it runs (an integer sum that overflows).
"""


class WindowSpecError(ValueError):
    """A window call that cannot be evaluated, e.g. ``RANGE with an offset needs exactly one ORDER BY
    column``."""


class WindowRuntimeError(ArithmeticError):
    """A window call that failed on the data, e.g. ``sum(x) overflows BIGINT``."""
