"""State bytes: states written by an earlier release of this format still load and the stream goes on
exactly (the oracle: the batch evaluator over every row); today's machines write the same tables
and counters for the same input (window close in its format 5: the same rows, the counters in a
table of partitions, and what it can rebuild left out); what this release cannot read is refused
with a clear error.

``data/format2_states.json`` holds states written by overwindow at git 36aaea1 (format 2, before the
counters became dataclasses) for the inputs stored beside them: a window-close state with pruned
and pending rows, an emit-on-update state after eviction, and a chunked store (index, chunks and
identity map); ``data/format3_states.json`` and ``data/format4_states.json`` window-close states
written at git e969405 (format 3) and 5fe88e2 (format 4), one per key and one bucket of three keys."""

import base64
import datetime
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.spec import OverWindow
from overwindow.streaming.chunked import MemoryChunks
from overwindow.streaming.contract import CHANGE, DELETE, END_OF_INPUT
from overwindow.streaming.identity import IDENTITY
from overwindow.streaming.machines import machine_for
from overwindow.streaming.on_update import OnUpdate
from overwindow.streaming.state import StateFormatError, WindowCloseMeta, decode, encode

SCHEMA = pa.schema([("k", pa.int64()), ("id", pa.int64()), ("t", pa.float64()), ("u", pa.int64())])
CDC = pa.schema(
    [("k", pa.int64()), ("rid", pa.int64()), ("t", pa.int64()), ("x", pa.float64()), ("op", pa.string())]
)
ROWS = CDC.remove(CDC.get_field_index("op"))
OLD = json.loads((Path(__file__).parent / "data" / "format2_states.json").read_text())


def _header(state: bytes) -> dict:
    n = int.from_bytes(state[:4], "little")
    return json.loads(state[4 : 4 + n])


def _tables(state: bytes) -> list[pa.Table]:
    """The tables of state bytes, read by the layout documented in overwindow.streaming.state."""
    pos, out = 4 + int.from_bytes(state[:4], "little"), []
    while pos < len(state):
        size = int.from_bytes(state[pos : pos + 8], "little")
        out.append(pa.ipc.open_stream(state[pos + 8 : pos + 8 + size]).read_all())
        pos += 8 + size
    return out


def _same_state(new: bytes, old: bytes):
    """The same header (kind, table names, counters; format 3 where format 2 was written) and the
    same tables, less the identities format 3 leaves out under a row key; held results in today's
    result types (Spark's since ranks became INT: the old state's BIGINT ranks cast)."""
    assert _header(old)["version"] == 2 and _header(new) == {**_header(old), "version": 3}
    for a, b in zip(_tables(new), _tables(old), strict=True):
        if IDENTITY in b.column_names and IDENTITY not in a.column_names:
            b = b.drop_columns([IDENTITY])
        assert a.column_names == b.column_names
        assert a.equals(b.cast(a.schema))


def _equal_values(got: dict, want: dict, names):
    for name in names:
        a, b = got[name], want[name]
        assert (a is None and b is None) or a == pytest.approx(b, rel=1e-12), (name, got, want)


def _names(calls):
    return [c.rsplit(" AS ", 1)[1] for c in calls]


def test_window_close_state_written_by_format_2_goes_on():
    old = OLD["window_close"]
    spec = OverWindow(*old["calls"], rowKey="rid")
    machine = machine_for(spec, ROWS)
    batch1, batch2 = (pa.Table.from_pylist(old[b], schema=ROWS) for b in ("batch1", "batch2"))
    first = machine.step(None, batch1, old["watermark1"])
    state = base64.b64decode(old["state"])
    # today's format holds the same rows, the columns no call reads NULL in the rows emitted
    # already (format 6); the partition's counters moved from the header to ``parts`` (as int32
    # where they fit), and the newest ORDER BY key seen is kept under stateTtl
    was, now = _header(state)["meta"], _header(first.state)["meta"]
    assert now == {**{k: was[k] for k in ("released_upto", "late_rows")}, "buckets": None}
    rows, parts = _tables(first.state)
    old_rows = _tables(state)[0].cast(rows.schema)
    emitted = was["emitted"]
    assert rows.select(["t", "x"]).equals(old_rows.select(["t", "x"]))
    for c in ("k", "rid"):  # read by no call: kept only where a row waits to be emitted
        assert rows.column(c).to_pylist() == [None] * emitted + old_rows.column(c).to_pylist()[emitted:]
    counters = {"n": rows.num_rows, **{k: was[k] for k in ("emitted", "pruned_rows", "pruned_groups")}}
    assert parts.to_pylist() == [counters]
    ttl = machine_for(OverWindow(*old["calls"], rowKey="rid", stateTtl=100), ROWS)
    newest = max(r["t"] for r in old["batch1"])
    assert _tables(ttl.step(None, batch1, old["watermark1"]).state)[1].to_pylist() == [
        {**counters, "newest": newest}
    ]
    assert was["pruned_rows"] > 0  # row_number and rank go on counting them
    second = machine.step(state, batch2, old["watermark2"])
    last = machine.step(second.state, None, 10**6)
    assert second.late_rows == 0
    out = pa.concat_tables([first.output, second.output, last.output])
    everything = pa.concat_tables([batch1, batch2])
    want = {r["rid"]: r for r in overwindow.evaluate(everything, *spec.partitioned(("k",))).to_pylist()}
    # every row but the last closes (ROWS 1 FOLLOWING waits for a row after it), none twice
    assert out.num_rows == len(set(out.column("rid").to_pylist())) == len(want) - 1
    for r in out.to_pylist():
        _equal_values(r, want[r["rid"]], _names(old["calls"]))


@pytest.mark.parametrize("bucketed", [False, True])
@pytest.mark.parametrize("version", [3, 4])
def test_window_close_state_written_by_format_3_or_4_goes_on(version, bucketed):
    """``data/format3_states.json``: window-close states written at git e969405 (format 3, before
    each partition kept its newest ORDER BY key); ``data/format4_states.json``: at git 5fe88e2
    (format 4, every column of both tables, before format 5 left out what it can rebuild); each
    one per key and one bucket of three keys. They go on exactly (the batch evaluator over all rows)
    and, read under ``stateTtl``, a partition is forgotten no earlier than a TTL after its newest
    row."""
    old = json.loads((Path(__file__).parent / "data" / f"format{version}_states.json").read_text())
    prefix = "bucket_" if bucketed else ""
    spec = OverWindow(*old["calls"], rowKey="rid", keyBuckets=4 if bucketed else None)
    machine = machine_for(spec, ROWS, keys=("k",) if bucketed else ())
    state = base64.b64decode(old[f"{prefix}state"])
    assert _header(state)["version"] == version
    batch1, batch2 = (pa.Table.from_pylist(old[f"{prefix}{b}"], schema=ROWS) for b in ("batch1", "batch2"))
    first = machine.step(None, batch1, old["watermark1"])
    second = machine.step(state, batch2, old["watermark2"])
    last = machine.step(second.state, None, END_OF_INPUT)
    out = pa.concat_tables([first.output, second.output, last.output])
    everything = pa.concat_tables([batch1, batch2])
    want = {r["rid"]: r for r in overwindow.evaluate(everything, *spec.partitioned(("k",))).to_pylist()}
    assert sorted(out.column("rid").to_pylist()) == sorted(want)
    for r in out.to_pylist():
        _equal_values(r, want[r["rid"]], _names(old["calls"]))
    # under a TTL of 5, the newest row held (pending or not) decides: kept at watermark newest + 5,
    # forgotten past it
    ttl = OverWindow(*old["calls"], rowKey="rid", keyBuckets=spec.key_buckets, stateTtl=5)
    newest = max(r["t"] for r in old[f"{prefix}batch1"])
    keep = machine_for(ttl, ROWS, keys=("k",) if bucketed else ()).step(state, None, newest + 5)
    gone = machine_for(ttl, ROWS, keys=("k",) if bucketed else ()).step(state, None, newest + 6)
    assert keep.counters.state_rows > 0 and gone.empty


def test_window_close_format_5_leaves_out_what_it_rebuilds_and_keeps_every_value():
    """A bucket's state moves whole through Spark every micro-batch, so format 5 leaves out what it
    can rebuild: the key columns of the rows (each partition's row of ``parts`` holds its key), the
    counters that are 0 everywhere, ``newest`` without stateTtl, and stores counters as int32 where
    they fit. A float key stays in the rows: -0.0 and 0.0 are one partition but two values, and the
    stream goes on with each row's own (the oracle: the batch evaluator over every row)."""
    schema = pa.schema([("k", pa.string()), ("f", pa.float64()), ("rid", pa.int64()), ("t", pa.int64())])
    calls = ("sum(rid) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",)
    spec = OverWindow(*calls, rowKey="rid", keyBuckets=2)
    machine = machine_for(spec, schema, keys=("k", "f"))
    keys = {"k": ["a", "a", None, "b"], "f": [0.0, -0.0, 1.5, float("nan")]}
    batch1 = pa.table({**keys, "rid": [1, 2, 3, 4], "t": [1, 2, 3, 4]}, schema=schema)
    batch2 = pa.table({"k": ["a", "b"], "f": [-0.0, float("nan")], "rid": [5, 6], "t": [9, 9]}, schema=schema)
    first = machine.step(None, batch1, 2)
    rows, parts = _tables(first.state)
    assert rows.column_names == ["f", "rid", "t"]  # the string key left out, the float key kept
    assert parts.column_names == ["k", "f", "n", "emitted"]  # nothing pruned yet, no stateTtl
    assert parts.schema.field("n").type == pa.int32()
    second = machine.step(first.state, batch2, 5)
    last = machine.step(second.state, None, END_OF_INPUT)
    out = pa.concat_tables([first.output, second.output, last.output])
    everything = pa.concat_tables([batch1, batch2])
    want = overwindow.evaluate(everything, *spec.partitioned(("k", "f")))
    key = lambda r: r["rid"]  # noqa: E731
    got, exp = sorted(out.to_pylist(), key=key), sorted(want.to_pylist(), key=key)
    assert [r["s"] for r in got] == [r["s"] for r in exp]
    # each row keeps its own -0.0 or 0.0 (compared by sign: -0.0 == 0.0)
    assert [(r["k"], str(r["f"])) for r in got] == [(r["k"], str(r["f"])) for r in exp]


def test_window_close_format_5_keeps_counters_past_int32():
    """A counter past int32 stays int64 in the stored ``parts``, and reads back whole."""
    schema = pa.schema([("k", pa.int64()), ("rid", pa.int64()), ("t", pa.int64())])
    spec = OverWindow("lag(rid) OVER (ORDER BY t) AS p", rowKey="rid", keyBuckets=2)
    machine = machine_for(spec, schema, keys=("k",))
    done = machine.advance(*machine._load(None), pa.table({"k": [7], "rid": [1], "t": [1]}, schema=schema), 1)
    at = done.parts.column_names.index("pruned_rows")
    parts = done.parts.set_column(at, "pruned_rows", pa.array([2**40], pa.int64()))
    stored = machine._stored(done.table, parts)
    assert stored["parts"].schema.field("pruned_rows").type == pa.int64()
    rows, loaded, _ = machine._load(encode(stored, "window_close", done.meta))
    assert rows.equals(done.table)
    assert loaded.drop_columns(["newest"]).equals(parts.drop_columns(["newest"]))  # newest: stateTtl only


def _changelog_view(outputs, view: dict):
    for out in outputs:
        for r in out.to_pylist():
            if r[CHANGE] == DELETE:
                view.pop(r["rid"], None)
            else:
                view[r["rid"]] = r
    return view


def _live(batches) -> dict:
    live = {}
    for batch in batches:
        for r in batch:
            if r["op"] == "delete":
                live.pop(r["rid"], None)
            else:
                live[r["rid"]] = {c: r[c] for c in ROWS.names}
    return live


@pytest.mark.parametrize("layout", ["whole", "chunked"])
def test_on_update_state_written_by_format_2_goes_on(layout):
    old = OLD["on_update" if layout == "whole" else "chunked"]
    spec = OverWindow(*old["calls"], emit="on_update", rowKey="rid", opColumn="op", stateLayout=layout)
    machine = machine_for(spec, CDC, watermarked=True, rows_per_chunk=old.get("rows_per_chunk"))
    batch1, batch2 = (pa.Table.from_pylist(old[b], schema=CDC) for b in ("batch1", "batch2"))
    if layout == "whole":
        first = [machine.step(None, batch1, None)]
        first.append(machine.step(first[0].state, None, old["watermark1"]))
        state = base64.b64decode(old["state"])
        _same_state(first[-1].state, state)
        assert _header(state)["meta"]["evicted_rows"] > 0
        second = machine.step(state, batch2, old["watermark2"])
    else:
        store = MemoryChunks()
        first = [machine.step(store, batch1, None), machine.step(store, None, old["watermark1"])]
        _same_state(store.index, base64.b64decode(old["index"]))
        state = MemoryChunks()  # the store as the old release left it
        state.index = base64.b64decode(old["index"])
        state.chunks = {int(c): base64.b64decode(v) for c, v in old["chunks"].items()}
        state.rows = {int(i): c for i, c in old["rows"].items()}
        assert set(state.chunks) == set(store.chunks) and state.rows == store.rows
        for c, data in state.chunks.items():
            _same_state(store.chunks[c], data)
        second = machine.step(state, batch2, old["watermark2"])
    # changes below the watermark are late: their rows stay as they were
    taken = [r for r in old["batch2"] if r["t"] >= old["watermark2"]]
    assert second.late_rows == len(old["batch2"]) - len(taken) > 0
    view = _changelog_view([s.output for s in first] + [second.output], {})
    live = _live([old["batch1"], taken])
    assert set(view) == set(live)
    everything = pa.Table.from_pylist(list(live.values()), schema=ROWS)
    for r in overwindow.evaluate(everything, *spec.partitioned(("k",))).to_pylist():
        _equal_values(view[r["rid"]], r, _names(old["calls"]))
    assert second.counters.state_rows < len(live)  # evicted rows are gone, answers unchanged


KEYED = pa.schema(
    [
        ("k", pa.string()),
        ("f", pa.float64()),
        ("d", pa.decimal128(38, 6)),
        ("ts", pa.timestamp("us")),
        ("t", pa.int64()),
        ("x", pa.float64()),
        ("op", pa.string()),
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from([None, "a", "b", "é"]),
            st.sampled_from([None, 0.0, -0.0, float("nan"), float("inf"), -1.5]),
            st.sampled_from(
                [None, decimal.Decimal("12345678901234567890123456789012.000001"), decimal.Decimal(0)]
            ),
            st.sampled_from(
                [None, datetime.datetime(1969, 12, 31, 23, 59, 59, 1), datetime.datetime(2024, 1, 1)]
            ),
            st.integers(0, 5),
        ),
        min_size=1,
        max_size=30,
    ),
    buckets=st.sampled_from([None, 3]),
)
def test_format_3_hashes_the_row_key_again_to_the_identities_rows_came_with(rows, buckets):
    """Format 3 leaves the identities out under a row key; read back, every held row has the
    identity its input row was given, whatever the row key's types and values (NULL, NaN, -0.0,
    30-digit DECIMAL, times before 1970), so deletes and updates still find their rows."""
    spec = OverWindow(
        "lag(x) OVER (ORDER BY t) AS p",
        emit="on_update",
        rowKey=["f", "d", "ts"],
        opColumn="op",
        keyBuckets=buckets,
    )
    machine = OnUpdate(spec, KEYED, keys=("k",) if buckets else ())
    images = [dict(zip(["k", "f", "d", "ts", "t"], r), x=float(i)) for i, r in enumerate(rows)]
    batch = pa.Table.from_pylist([{**r, "op": "insert"} for r in images], schema=KEYED)
    state = machine.step(None, batch).state
    assert _header(state)["version"] == 3 and IDENTITY not in _tables(state)[0].column_names
    given_ids = machine.changes(batch, None).inserts  # the last image of each identity
    held = machine.load(state)[0]
    assert held.num_rows == given_ids.num_rows
    by_x = dict(zip(given_ids.column("x").to_pylist(), given_ids.column(IDENTITY).to_pylist(), strict=True))
    assert dict(zip(held.column("x").to_pylist(), held.column(IDENTITY).to_pylist(), strict=True)) == by_x
    # a delete of every row's image finds it: nothing is left
    deletes = pa.Table.from_pylist([{**r, "op": "delete"} for r in images], schema=KEYED)
    assert machine.step(state, deletes).counters.state_rows == 0


def test_format_1_state_is_refused_with_a_clear_error():
    """Format 1 hashed identities with pandas; its identities cannot match new rows' any more."""

    spec = OverWindow("lag(u) OVER (ORDER BY t) AS p", emit="on_update", rowKey="id")
    machine = OnUpdate(spec, SCHEMA)
    state = machine.step(
        None, pa.Table.from_pylist([{"k": 0, "id": 1, "t": 1.0, "u": 1}], schema=SCHEMA)
    ).state
    old = state.replace(b'"version": 3', b'"version": 1')
    with pytest.raises(
        StateFormatError,
        match="format 1, this overwindow reads 'on_update' format 2 to 3; start the query from a new "
        "checkpoint",
    ):
        machine.step(old, None)


# State values that fail to decode are StateFormatErrors with a clear message, whatever the damage
# (issue 18, item 8): a truncated or overwritten value raised IndexError, ArrowInvalid or
# AttributeError deep inside Spark's worker before.
DAMAGE_TABLES = {
    "rows": pa.table({"k": [1, 2, None], "s": ["a", None, "ccc"], "x": [0.5, float("nan"), -0.0]}),
    "more": pa.table({"t": pa.array([0, 10**12], pa.timestamp("us"))}),
}
GOOD = encode(DAMAGE_TABLES, "window_close", WindowCloseMeta(late_rows=3))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_damaged_state_is_refused_as_state(data):
    damage = data.draw(st.sampled_from(["truncate", "overwrite", "append", "header"]))
    value = bytearray(GOOD)
    if damage == "truncate":
        value = value[: data.draw(st.integers(0, len(value) - 1))]
    elif damage == "overwrite":
        for _ in range(data.draw(st.integers(1, 8))):
            value[data.draw(st.integers(0, len(value) - 1))] = data.draw(st.integers(0, 255))
    elif damage == "append":
        value += data.draw(st.binary(min_size=1, max_size=16))
    else:
        value[4 : 4 + 8] = data.draw(st.binary(min_size=8, max_size=8))
    try:
        tables, meta = decode(bytes(value), "window_close", WindowCloseMeta)
    except StateFormatError as e:
        assert "new checkpoint" in str(e) or "not overwindow state" in str(e)
    else:  # damage that leaves a well-formed value (a changed number, a renamed table) goes unseen
        assert len(tables) == len(DAMAGE_TABLES) and all(isinstance(t, pa.Table) for t in tables.values())


def test_state_of_another_kind_names_both():
    with pytest.raises(StateFormatError, match="format 6, this overwindow reads 'other' format 1 to 6"):
        decode(GOOD, "other", WindowCloseMeta)
