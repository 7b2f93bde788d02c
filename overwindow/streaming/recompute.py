"""Recompute and diff for emit on update: the results of the rows a batch's changes reach, evaluated
with the batch kernels on the slices their frames read, and which of them differ from what the
state last emitted for the same identity (only those are emitted).

>>> equal(pa.array([1.0, None, float("nan")]), pa.array([1.0, None, float("nan")])).tolist()
[True, True, True]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.logical.call import WindowExpression
from overwindow.streaming.arrays import find, run_numbers, runs
from overwindow.streaming.aside import project_failing
from overwindow.streaming.merge import Merged
from overwindow.streaming.reach import FrameReach
from overwindow.streaming.stretch import evaluate_stretch

GAP = 4096  # ranges whose slices lie closer than this share one kernel call
FAILED = "__ow_failed"  # recomputed rows: why an expression over window results failed (NULL: fine)


def recompute(
    rows: pa.Table,
    reach: FrameReach,
    at: np.ndarray,
    expressions: list[WindowExpression],
    rows_before: int | np.ndarray,
    groups_before: int | np.ndarray,
    parts: np.ndarray | None = None,
) -> pa.Table | None:
    """The rows at positions ``at`` (sorted, distinct) of the sorted partition ``rows`` with every
    expression's column and ``FAILED`` (``aside.project_failing``: the expressions' columns are
    NULL where it is not), computed on the slices ``[first_frame_start, last_frame_end)`` their
    frames read (``reach.spans`` of their runs); runs whose slices overlap or lie within ``GAP`` rows
    of each other share one slice (one kernel call costs more than a few more rows).
    ``rows_before`` / ``groups_before``: the partition's rows and peer groups before ``rows``
    (evicted). ``parts``: each row's partition when ``rows`` holds several one after another; the
    counts before are then per row (its partition's), and each partition's runs share one slice,
    all slices evaluated in one kernel call (``_gathered``). Kernel work O(rows recomputed x frame
    reach), bookkeeping vectorised over the runs, Python per slice."""
    if not len(at):
        return None
    lo, hi = runs(at)
    fs, fe = reach.spans(lo, hi)
    if parts is not None:
        return _gathered(rows, reach, at, parts[lo], fs, fe, expressions, rows_before, groups_before, parts)
    reach_to = np.maximum.accumulate(fe)
    first_run = np.flatnonzero(np.append(True, fs[1:] > reach_to[:-1] + GAP))  # each slice's first run
    slice_fs = np.minimum.reduceat(fs, first_run)
    slice_fe = np.maximum.reduceat(fe, first_run)
    split = np.searchsorted(at, lo[first_run])
    pieces = []
    for s, e, take in zip(slice_fs.tolist(), slice_fe.tolist(), np.split(at, split[1:])):
        part = rows.slice(s, e - s)
        # the rows are sorted by the calls' ORDER BY and reach.groups are its peer groups: no sort;
        # positions count from the partition's first row
        groups = reach.groups[s:e]
        results = evaluate_stretch(
            part, expressions, groups - groups[0], s + rows_before, int(groups[0]) + groups_before
        )
        done = _failing(part, expressions, results)
        if take[-1] - take[0] + 1 == len(take):  # one run: a zero-copy slice
            pieces.append(done.slice(int(take[0]) - s, len(take)))
        else:
            pieces.append(done.take(pa.array(take - s)))
    return pa.concat_tables(pieces)


def _gathered(rows, reach, at, run_part, fs, fe, expressions, rows_before, groups_before, parts) -> pa.Table:
    """``recompute`` over several partitions (``parts``; ``run_part``: each run's): per partition
    one slice, from its first run's frame start to its last's frame end, all of them taken into one
    table and evaluated in one kernel call. The partitions between two changes are left out, where
    slices of one table would span them (a bucket's changes lie far apart among its many
    partitions' rows). O(rows in the slices x log rows)."""
    first = np.flatnonzero(np.append(True, run_part[1:] != run_part[:-1]))  # each partition's first run
    seg_fs, seg_fe = np.minimum.reduceat(fs, first), np.maximum.reduceat(fe, first)
    # a run across a partition's edge reaches into the next one's slice: overlapping slices join
    joined = np.flatnonzero(np.append(True, seg_fs[1:] >= np.maximum.accumulate(seg_fe)[:-1]))
    seg_fs, seg_fe = seg_fs[joined], np.maximum.reduceat(seg_fe, joined)
    sizes = seg_fe - seg_fs
    start = np.repeat(seg_fs, sizes)  # each taken row's slice's first row
    idx = start + np.arange(len(start)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    # the rows and peer groups of its partition before its slice (cut: the partition's first row)
    cut = np.searchsorted(parts, parts[idx], "left")
    inside = cut < start
    rb = rows_before[idx] + np.where(inside, start - cut, 0)
    gb = groups_before[idx] + np.where(inside, reach.groups[start] - reach.groups[cut], 0)
    taken = rows.take(pa.array(idx))
    groups = run_numbers(reach.groups[idx])  # numbered anew from 0 without gaps: the slices' are apart
    results = evaluate_stretch(taken, expressions, groups, rb, gb, parts[idx])
    return _failing(taken, expressions, results).take(pa.array(np.searchsorted(idx, at)))


def _failing(rows: pa.Table, expressions: list[WindowExpression], results) -> pa.Table:
    """``rows`` with the expressions' columns and ``FAILED`` (``aside.project_failing``)."""
    done, why = project_failing(rows, expressions, results)
    return done.append_column(FAILED, why if why is not None else pa.nulls(done.num_rows, pa.string()))


def held_before(
    merged: Merged, at_new: np.ndarray, old_ids: np.ndarray, new_ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For the rows at new positions ``at_new`` (identities ``new_ids``): (the old position of what
    the state last emitted for each identity, -1 for a new one; whether that is a row an update
    replaced, whose own columns may differ). O(k log k) for k replaced rows."""
    prev = merged.from_old[at_new]
    fresh = np.flatnonzero(prev < 0)
    moved = np.zeros(len(prev), dtype=bool)
    if len(fresh) and len(merged.replaced_old):
        at = find(old_ids[merged.replaced_old], new_ids[fresh])
        prev[fresh[at >= 0]] = merged.replaced_old[at[at >= 0]]
        moved[fresh[at >= 0]] = True
    return prev, moved


def changed(
    new: pa.Table,
    old: pa.Table,
    old_res: pa.Table,
    prev: np.ndarray,
    moved: np.ndarray,
    results: list[str],
    columns: list[str],
) -> np.ndarray:
    """Which recomputed rows ``new`` differ from what the state held for their identity (``prev``:
    its old position in ``old`` / ``old_res``, -1 for a new identity): in the ``results`` columns,
    and for ``moved`` rows (an update replaced them; other held rows are unchanged copies) in the
    input ``columns`` too. NULL equals NULL and NaN equals NaN. O(rows x columns)."""
    out = prev < 0
    if out.all():
        return out
    at = pa.array(np.maximum(prev, 0))
    same = ~out
    for name in results:
        same &= equal(new.column(name), old_res.column(name).take(at))
    if moved.any():
        at = pa.array(np.maximum(prev[moved], 0))
        rows = pa.array(np.flatnonzero(moved))
        for name in columns:
            same[moved] &= equal(new.column(name).take(rows), old.column(name).take(at))
    return ~same


def equal(a, b) -> np.ndarray:
    """Per-row equality of two arrays where NULL equals NULL and NaN equals NaN, elementwise in lists
    and fieldwise in structs (collect_list, histogram_numeric). O(n + nested values)."""
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    b = b.combine_chunks() if isinstance(b, pa.ChunkedArray) else b
    if pa.types.is_list(a.type) or pa.types.is_large_list(a.type):
        return _equal_lists(a, b)
    if pa.types.is_struct(a.type):
        same = np.ones(len(a), dtype=bool)
        for i in range(a.type.num_fields):
            same &= equal(a.field(i), b.field(i))
        valid_a, valid_b = (x.is_valid().to_numpy(zero_copy_only=False) for x in (a, b))
        return (valid_a == valid_b) & (same | ~valid_a)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    eq = pc.fill_null(pc.equal(a, b), False)
    if pa.types.is_floating(a.type):
        eq = pc.or_(eq, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
    return pc.or_(eq, both_null).to_numpy(zero_copy_only=False)


def _equal_lists(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Rows of two list arrays that are both NULL, or both not NULL with equal lengths and equal
    elements."""
    valid_a, valid_b = (x.is_valid().to_numpy(zero_copy_only=False) for x in (a, b))
    lengths = [pc.list_value_length(x).fill_null(0).to_numpy(zero_copy_only=False) for x in (a, b)]
    comparable = valid_a & valid_b & (lengths[0] == lengths[1])
    same = valid_a == valid_b
    same &= ~(valid_a & ~comparable)
    keep = pa.array(comparable)
    items = equal(pc.list_flatten(a.filter(keep)), pc.list_flatten(b.filter(keep)))
    n = lengths[0][comparable]
    bad = np.concatenate(([0], np.cumsum(~items)))  # elements that differ, per row of ``comparable``
    ends = np.cumsum(n)
    rows_ok = (bad[ends] - bad[ends - n]) == 0
    same[comparable] &= rows_ok
    return same
