"""The machines holding only the columns a result carries (``OverWindow.carrying``,
``contract.held_schema``). Emit on update: rows that differ only in a column the result leaves out
stay distinct rows (the same ``_row_id``s as the machine holding all columns: a row without a row
key is its whole input row), the view equals the batch evaluator over every row after every batch.
Emit on window close: the rows it emits are the batch evaluator's. Both: a state written holding
all columns (an earlier release's) goes on under ``carrying``."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.spec import OverWindow
from overwindow.streaming.contract import CHANGE, END_OF_INPUT, ROW_ID
from overwindow.streaming.machines import machine_for
from overwindow.streaming.state import StateFormatError

SCHEMA = pa.schema([("k", pa.int64()), ("t", pa.int64()), ("x", pa.float64()), ("u", pa.string())])
CALLS = (
    "count(*) OVER (ORDER BY t RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) AS c",
    "avg(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS a",
    "lag(x) OVER (ORDER BY t) AS l",
)


def _batches(seed: int, n_batches: int, size: int, keys) -> list[pa.Table]:
    """Rows with few distinct (k, t) and a ``u`` of their own: many rows equal but for ``u`` (``x``
    follows (k, t): a NULL, NaN or number, so peers in ORDER BY are equal and their order is not
    seen); ``k`` 0 to 2 on a bucket of ``keys``, else 0 (a machine per key)."""
    rng = np.random.default_rng(seed)
    xs = rng.integers(0, 3, (3, 6)).astype(float)
    xs[rng.random((3, 6)) < 0.2] = np.nan
    nulls = rng.random((3, 6)) < 0.15
    xs = np.concatenate([xs] * (n_batches + 3), axis=1)  # x for t up to 2 n_batches + 5
    nulls = np.concatenate([nulls] * (n_batches + 3), axis=1)
    out, n = [], 0
    for b in range(n_batches):  # t from 2b on: the watermark 2b - 1 makes no row late
        k, t = rng.integers(0, 3 if keys else 1, size), rng.integers(2 * b, 2 * b + 6, size)
        out.append(
            pa.table(
                {
                    "k": pa.array(k, pa.int64()),
                    "t": pa.array(t, pa.int64()),
                    "x": pa.array(xs[k, t], pa.float64(), mask=nulls[k, t]),
                    "u": [f"row {n + i}" for i in range(size)],
                },
                schema=SCHEMA,
            )
        )
        n += size
    return out


def _spec(keys: tuple[str, ...], emit: str = "on_update") -> OverWindow:
    return OverWindow(*CALLS, emit=emit, keyBuckets=2 if keys else "per key")


def _run(spec, batches, keys, state=None, start=0):
    """Each batch's output (the ``start``-th batch first: on window close, the watermark before it
    is ``2 start - 1``), and the last state."""
    machine = machine_for(spec, SCHEMA, False, keys=keys)
    outputs = []
    for b, rows in enumerate(batches, start):
        step = machine.step(state, rows, 2 * b - 1 if spec.emit == "on_window_close" else None)
        state = step.state
        outputs.append(step.output)
    return outputs, state


def _closed(spec, batches, keys, state=None, start=0):
    """Window close's rows emitted over ``batches`` and at the end of input, and the last state
    before the end."""
    outputs, state = _run(spec, batches, keys, state, start)
    end = machine_for(spec, SCHEMA, False, keys=keys).step(state, None, END_OF_INPUT)
    return pa.concat_tables([*outputs, end.output]), state


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_batches=st.integers(1, 5), size=st.integers(1, 20))
@pytest.mark.parametrize("keys", [(), ("k",)])
def test_held_columns_keep_every_row_and_the_view_the_batch(keys, seed, n_batches, size):
    batches = _batches(seed, n_batches, size, keys)
    full, full_state = _run(_spec(keys), batches, keys)
    held, held_state = _run(_spec(keys).carrying(["k"]), batches, keys)
    assert all(c.schema.names == [n for n in w.schema.names if n != "u"] for c, w in zip(held, full))
    assert len(held_state) < len(full_state)
    _same_views(full, held, batches, keys)


@pytest.mark.parametrize("keys", [(), ("k",)])
def test_a_state_holding_every_column_goes_on_holding_the_carried_ones(keys):
    batches = _batches(7, 6, 15, keys)
    full, _ = _run(_spec(keys), batches, keys)
    before, written = _run(_spec(keys), batches[:3], keys)
    after, _ = _run(_spec(keys).carrying(["k"]), batches[3:], keys, state=written)
    _same_views(full, before + after, batches, keys)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_batches=st.integers(1, 5), size=st.integers(1, 20))
@pytest.mark.parametrize("keys", [(), ("k",)])
def test_window_close_holding_the_carried_columns_emits_the_batch(keys, seed, n_batches, size):
    batches = _batches(seed, n_batches, size, keys)
    spec = _spec(keys, "on_window_close")
    emitted, held_state = _closed(spec.carrying(["k"]), batches, keys)
    _, full_state = _closed(spec, batches, keys)
    assert emitted.column_names == ["k", "t", "x", "c", "a", "l"]
    assert held_state is None or len(held_state) < len(full_state)
    _same_rows(emitted, batches, keys)


@pytest.mark.parametrize("keys", [(), ("k",)])
def test_window_close_goes_on_from_a_state_holding_every_column(keys):
    batches = _batches(11, 6, 15, keys)
    spec = _spec(keys, "on_window_close")
    before, written = _run(spec, batches[:3], keys)
    after, _ = _closed(spec.carrying(["k"]), batches[3:], keys, state=written, start=3)
    _same_rows(pa.concat_tables([*(b.drop_columns(["u"]) for b in before), after]), batches, keys)


def _same_rows(emitted: pa.Table, batches, keys):
    names = ["k", "t", "x", "c", "a", "l"]
    batch = overwindow.evaluate(pa.concat_tables(batches), *_spec(()).partitioned(keys))
    assert sorted(_key(r, names) for r in emitted.to_pylist()) == sorted(
        _key(r, names) for r in batch.to_pylist()
    )


@pytest.mark.parametrize("emit", ["on_update", "on_window_close"])
def test_a_state_lacking_a_column_the_query_now_keeps_is_refused_naming_it(emit):
    spec = _spec((), emit)
    batches = _batches(3, 2, 10, ())
    _, written = _run(spec.carrying(["k"]), batches[:1], ())
    with pytest.raises(StateFormatError, match="no column 'u'.*new checkpoint"):
        _run(spec.carrying(["k", "u"]), batches[1:], (), state=written, start=1)


def test_a_row_key_and_what_is_computed_after_the_windows_stay_held():
    spec = OverWindow("lag(x) OVER (ORDER BY t) AS l", emit="on_update", rowKey="u", qualify="x > 0")
    machine = machine_for(spec.carrying([]), SCHEMA, False)
    assert machine.schema.names == ["t", "x", "u"]


def _same_views(full, held, batches, keys):
    """After every batch, the view ``held``'s changelogs keep has the rows (by ``_row_id``: a row
    is its whole input row) of the one ``full``'s keep, and equals the batch evaluator over every
    row so far (peers in ORDER BY are equal in every held column, so their order is not seen)."""
    full_view, view = {}, {}
    names = ["k", "t", "x", "c", "a", "l"]
    for n, (whole, carried) in enumerate(zip(full, held)):
        _apply(full_view, whole)
        _apply(view, carried)
        assert set(view) == set(full_view)
        every = pa.concat_tables(batches[: n + 1])
        batch = overwindow.evaluate(every, *_spec(()).partitioned(keys))
        assert sorted(_key(r, names) for r in view.values()) == sorted(
            _key(r, names) for r in batch.to_pylist()
        )


def _apply(view: dict, changes: pa.Table) -> None:
    for r in changes.to_pylist():
        if r[CHANGE] == "delete":
            view.pop(r[ROW_ID], None)
        else:
            view[r[ROW_ID]] = r


def _key(row: dict, names) -> tuple:
    """A row as a sortable tuple: NULL and NaN apart from numbers, floats rounded (avg's sums)."""
    out = []
    for n in names:
        v = row[n]
        out.append((0, 0.0) if v is None else (1, 0.0) if np.isnan(v) else (2, round(float(v), 9)))
    return tuple(out)
