"""Logical layer: what to compute. Frozen descriptions that print back as SQL."""

from overwindow.logical.call import SortKey, WindowCall, WindowExpression
from overwindow.logical.expr import Expr
from overwindow.logical.frame import Bound, BoundKind, Exclude, Frame, FrameUnit, Interval
from overwindow.logical.parse import parse_window

__all__ = [
    "Bound",
    "BoundKind",
    "Exclude",
    "Expr",
    "Frame",
    "FrameUnit",
    "Interval",
    "SortKey",
    "WindowCall",
    "WindowExpression",
    "parse_window",
]
