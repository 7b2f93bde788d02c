"""Kernels: one small protocol each, chosen per call by the planner.

* aggregate kernels: ``(values, mask, frames) -> pa.Array``, one result per frame; ``mask`` marks
  rows that take part (not NULL and passing FILTER).
* ranking kernels: ``(layout, call) -> pa.Array``.
* value and offset kernels: ``(values, frames | layout, call) -> pa.Array``.
"""
