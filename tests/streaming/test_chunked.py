"""The chunked state layout of emit on update, per key and on buckets of keys. Oracles: the
whole-state machine (itself checked against the batch evaluator and DuckDB in test_on_update.py) fed
the same batches must emit the same changelog batch by batch, and the view kept from the chunked
changelog must equal ``overwindow.evaluate`` over the live rows. Tiny chunks (2-5 rows) put chunk
edges inside every frame, peer group and change."""

import re

import numpy as np
import pyarrow as pa
import pytest
from cdc_support import apply_changelog, random_cdc_batch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.errors import WindowSpecError
from overwindow.spec import OverWindow
from overwindow.streaming.chunked import CHUNK, CHUNK_ROWS, INDEX_KIND, MemoryBucket, MemoryChunks
from overwindow.streaming.driver import Driver
from overwindow.streaming.identity import IDENTITY
from overwindow.streaming.machines import machine_for
from overwindow.streaming.partitions import key_bytes
from overwindow.streaming.state import ChunkIndexMeta, StateFormatError, decode

SCHEMA = pa.schema(
    [("k", pa.int64()), ("id", pa.int64()), ("t", pa.int64()), ("x", pa.float64()), ("op", pa.string())]
)
CALL_SETS = [
    (
        "sum(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS s",
        "lag(x, 2) OVER (ORDER BY t) AS l",
        "lead(x) OVER (ORDER BY t) AS ld",
    ),
    (
        "avg(x) OVER (ORDER BY t RANGE BETWEEN 3 PRECEDING AND 2 FOLLOWING) AS a",
        "count(*) OVER (ORDER BY t GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE TIES) AS c",
        "max(x) OVER (ORDER BY t RANGE BETWEEN CURRENT ROW AND 4 FOLLOWING EXCLUDE GROUP) AS m",
    ),
    (
        "median(x) OVER (ORDER BY t ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING) AS med",
        "first_value(x) IGNORE NULLS OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS fv",
        "count(DISTINCT x) OVER (ORDER BY t ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) AS cd",
    ),
    (
        "sum(x) OVER (ORDER BY t DESC ROWS BETWEEN 1 PRECEDING AND 2 FOLLOWING) AS sd",
        "avg(x) OVER (ORDER BY t DESC RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) AS ad",
        "lead(x, 2) OVER (ORDER BY t DESC) AS ldd",
    ),
    (
        "mode(x) OVER (ORDER BY t ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING) AS mo",
        "last_value(x) OVER (ORDER BY t GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING) AS lv",
        "var_samp(x) OVER (ORDER BY t ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) AS vs",
        "count(*) FILTER (WHERE x > 0) OVER (ORDER BY t RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING) AS pos",
    ),
    # frames wider than many chunks: stretches widen chunk by chunk
    (
        "sum(x) OVER (ORDER BY t RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING) AS wide",
        "lag(x, 7) OVER (ORDER BY t) AS l7",
    ),
]


def _names(calls):
    return [c.rsplit(" AS ", 1)[1] for c in calls]


def _rows_by_key(table: pa.Table, names) -> list:
    """The changelog as a sorted list of (k, id, change, results), floats rounded for comparison."""
    out = []
    for r in table.to_pylist():
        vals = tuple(
            None if r[n] is None else round(r[n], 6) if isinstance(r[n], float) else r[n] for n in names
        )
        out.append((r["k"], r["id"], r["_change"], vals))
    return sorted(out, key=repr)


def _same_changelog(a: pa.Table, b: pa.Table, names):
    ra, rb = _rows_by_key(a, names), _rows_by_key(b, names)
    assert [x[:3] for x in ra] == [x[:3] for x in rb]
    for x, y in zip(ra, rb):
        for u, v in zip(x[3], y[3]):
            if u is None or v is None or (isinstance(u, float) and np.isnan(u)):
                assert (u is None or np.isnan(u)) and (v is None or np.isnan(v)), (x, y)
            else:
                assert u == pytest.approx(v, rel=1e-9, abs=1e-9), (x, y)


def _identities_point_at_their_chunks(driver: Driver) -> None:
    """The identity map of every partition points each row held at the chunk that holds it, and
    holds nothing else (rows deleted or evicted are forgotten)."""
    for store in _partitions(driver):
        index = decode(store.index, INDEX_KIND, ChunkIndexMeta)[0]["index"]
        for cid in index.column(CHUNK).to_pylist():
            held = driver.machine.machine.load(store.chunks[cid])[0]
            assert all(store.rows[h] == cid for h in held.column(IDENTITY).to_pylist()), held.column(
                "id"
            ).to_pylist()
        assert set(store.chunks) == set(index.column(CHUNK).to_pylist())
        assert len(store.rows) == sum(index.column(CHUNK_ROWS).to_pylist())


def _partitions(driver: Driver) -> list[MemoryChunks]:
    """The chunked stores of a driver's partitions holding rows, per key or in its buckets."""
    if driver.buckets is None:
        return list(driver.states.values())
    return [p for bucket in driver.states.values() for p in bucket.held().values()]


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    calls=st.sampled_from(CALL_SETS),
    n_batches=st.integers(1, 8),
    batch_size=st.integers(1, 30),
    chunk=st.integers(2, 5),
    guess=st.booleans(),
    buckets=st.sampled_from([None, 1, 2]),
)
def test_chunked_changelog_equals_whole_state_and_batch(
    seed, calls, n_batches, batch_size, chunk, guess, buckets
):
    """Per key, and on 1 or 2 buckets of 5 keys, one of them NULL (keys without changes in a batch,
    keys whose rows all go while others of their bucket stay, the same id under two keys)."""
    rng = np.random.default_rng(seed)
    options = dict(emit="on_update", rowKey="id", opColumn="op", keyBuckets=buckets)
    whole = Driver(OverWindow(*calls, **options), SCHEMA, ["k"])
    spec = OverWindow(*calls, stateLayout="chunked", **options)
    chunked = Driver(spec, SCHEMA, ["k"], rows_per_chunk=chunk)
    if not guess:  # load no neighbours at first: every stretch grows by NeedRows alone
        chunked.machine.margin = 0
    live, view, next_id = {}, {}, 0
    names = _names(calls)
    for _ in range(n_batches):
        batch, next_id = random_cdc_batch(rng, live, next_id, batch_size, keys=5, null_key=True)
        if buckets and rng.random() < 0.3:  # an id again under another key: another row there
            again = [dict(r, k=(r["k"] or 0) + 1, op="insert") for r in batch if r["op"] == "insert"][:2]
            live.update(((r["k"], r["id"]), {c: r[c] for c in ("k", "id", "t", "x")}) for r in again)
            batch += again
        table = pa.Table.from_pylist(batch, schema=SCHEMA)
        got = chunked.feed(table)
        _same_changelog(got, whole.feed(table), names)
        apply_changelog(view, got)
    assert set(view) == set(live)
    assert chunked.state_rows() == len(live)
    assert len(_partitions(chunked)) == len({k for k, _ in live})  # a key whose rows all went: no entries
    if live:
        rows = pa.Table.from_pylist(list(live.values()), schema=SCHEMA.remove(SCHEMA.get_field_index("op")))
        # ties in ORDER BY fall by the row key, as the machines break them
        rows = rows.sort_by([("t", "ascending"), ("id", "ascending")])
        batch = overwindow.evaluate(rows, *spec.partitioned(("k",)))
        want = pa.Table.from_pylist([dict(r, _change="upsert") for r in batch.to_pylist()])
        have = pa.Table.from_pylist([view[(r["k"], r["id"])] for r in batch.to_pylist()])
        _same_changelog(have, want, names)
    _identities_point_at_their_chunks(chunked)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    calls=st.sampled_from(CALL_SETS[:3] + CALL_SETS[4:]),
    chunk=st.integers(2, 6),
    row_key=st.booleans(),
    guess=st.booleans(),
    buckets=st.sampled_from([None, 1, 2]),
)
def test_chunked_eviction_equals_whole_state(seed, calls, chunk, row_key, guess, buckets):
    """With a watermark, both layouts evict the same rows, drop the same late rows and emit the same;
    on 1 or 2 buckets of 4 keys (one NULL), each key evicts when it gets rows, as a key of the
    whole layout with a state per key does."""
    rng = np.random.default_rng(seed)
    schema = SCHEMA.remove(SCHEMA.get_field_index("op"))
    key = {"rowKey": "id"} if row_key else {}
    whole = Driver(OverWindow(*calls, emit="on_update", **key), schema, ["k"], watermarked=True)
    chunked = Driver(
        OverWindow(*calls, emit="on_update", stateLayout="chunked", keyBuckets=buckets, **key),
        schema,
        ["k"],
        watermarked=True,
        rows_per_chunk=chunk,
    )
    if not guess:
        chunked.machine.margin = 0
    next_id, high = 0, 0
    for b in range(10):
        n = int(rng.integers(1, 25))
        t = high + rng.integers(-8, 6, n)  # mostly forward, some late
        k = rng.integers(0, 4 if buckets else 2, n)
        rows = pa.table(
            {
                "k": pa.array(k, mask=(k == 0) if buckets else None),
                "id": np.arange(next_id, next_id + n),
                "t": t,
                "x": rng.integers(-5, 5, n).astype(float),
            },
            schema=schema,
        )
        next_id += n
        watermark = high - 6 if b else None
        _same_changelog(chunked.feed(rows, watermark), whole.feed(rows, watermark), _names(calls))
        high = max(high, int(t.max()))
        assert chunked.state_rows() == whole.state_rows()
        assert chunked.late_rows == whole.late_rows
    if row_key:
        _identities_point_at_their_chunks(chunked)


def test_a_key_whose_rows_are_all_deleted_keeps_no_state():
    """Once every row of a key is deleted, the chunked layout keeps nothing for it (no index, no
    chunk, no identity), as the whole layout removes its state; the key's later rows start afresh
    and both layouts emit the same changelog."""
    calls = CALL_SETS[0]
    drivers = [
        Driver(
            OverWindow(*calls, emit="on_update", rowKey="id", opColumn="op", stateLayout=layout),
            SCHEMA,
            ["k"],
            rows_per_chunk=2,
        )
        for layout in ("whole", "chunked")
    ]

    def rows(ids, op, t0=0):
        n = len(ids)
        return pa.table(
            {
                "k": [1] * n,
                "id": ids,
                "t": [t0 + i for i in range(n)],
                "x": [float(i) for i in ids],
                "op": [op] * n,
            },
            schema=SCHEMA,
        )

    for batch in (
        rows([1, 2, 3, 4, 5], "insert"),
        rows([1, 2, 3, 4, 5], "delete"),
        rows([6, 7], "insert", 10),
    ):
        whole, chunked = (d.feed(batch) for d in drivers)
        _same_changelog(chunked, whole, _names(calls))
        if batch["op"][0].as_py() == "delete":
            assert not drivers[0].states and not drivers[1].states
    store = drivers[1].states[(1,)]
    assert len(store.chunks) == 1 and len(store.rows) == 2  # the identities of 6 and 7


def test_a_batch_reads_only_the_chunks_its_changes_reach():
    """Appending to a 20,000-row partition in 64-row chunks reads a few chunks, however many are held."""
    schema = pa.schema([("k", pa.int64()), ("id", pa.int64()), ("t", pa.int64()), ("x", pa.float64())])
    spec = OverWindow(
        "sum(x) OVER (ORDER BY t ROWS BETWEEN 100 PRECEDING AND CURRENT ROW) AS s",
        "lag(x) OVER (ORDER BY t) AS p",
        emit="on_update",
        rowKey="id",
        stateLayout="chunked",
    )
    driver = Driver(spec, schema, ["k"], rows_per_chunk=64)
    n = 20_000
    driver.feed(
        pa.table(
            {"k": np.zeros(n, np.int64), "id": np.arange(n), "t": np.arange(n) * 2, "x": np.ones(n)},
            schema=schema,
        )
    )
    store: MemoryChunks = driver.states[(0,)]
    assert len(store.chunks) >= n // 128
    reads, writes = store.reads, store.writes
    out = driver.feed(
        pa.table(
            {"k": [0, 0], "id": [n, n + 1], "t": [2 * n + 1, 2 * n - 101], "x": [5.0, 3.0]}, schema=schema
        )
    )
    # the new rows' chunks and the ones their 100-row frames and the rows after them reach
    assert store.reads - reads <= 8 and store.writes - writes <= 4
    by_id = {r["id"]: r for r in out.to_pylist()}
    assert by_id[n]["s"] == 99 + 3.0 + 5.0 and by_id[n]["p"] == 1.0  # 99 ones, the 3.0, itself
    assert by_id[n + 1]["s"] == 100 + 3.0  # 100 ones before it, itself
    assert driver.state_rows() == n + 2


def test_chunked_layout_is_refused_for_unbounded_reach():
    for call, words in [
        ("rank() OVER (ORDER BY t) AS r", "rank() numbers rows"),
        ("sum(x) OVER (ORDER BY t) AS s", "UNBOUNDED"),
        ("sum(x) OVER () AS s", "without ORDER BY"),
        ("lag(x) IGNORE NULLS OVER (ORDER BY t) AS l", "IGNORE NULLS"),
    ]:
        with pytest.raises(WindowSpecError, match=f"stateLayout=.chunked.*{re.escape(words)}"):
            OverWindow(call, emit="on_update", stateLayout="chunked")
    # on window close the chunked layout splits a bucket's state: it needs keyBuckets
    with pytest.raises(WindowSpecError, match='needs keyBuckets, not "per key"'):
        OverWindow("lag(x) OVER (ORDER BY t) AS l", stateLayout="chunked", keyBuckets="per key")
    with pytest.raises(WindowSpecError, match="stateLayout must be one of whole, chunked"):
        OverWindow("lag(x) OVER (ORDER BY t) AS l", emit="on_update", stateLayout="pieces")


def test_an_update_that_moves_a_row_far_emits_no_delete():
    """A row moved across the partition leaves one chunk and joins another far away: one upsert for
    it (as the whole-state layout emits), no delete, and the identity map follows it."""
    schema = SCHEMA
    calls = (
        "sum(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
        "lag(x) OVER (ORDER BY t) AS l",
    )
    n = 1_000
    rows = pa.table(
        {
            "k": np.zeros(n, np.int64),
            "id": np.arange(n),
            "t": np.arange(n) * 2,
            "x": np.ones(n),
            "op": ["insert"] * n,
        },
        schema=schema,
    )
    move = pa.table({"k": [0], "id": [5], "t": [2 * n - 1], "x": [7.0], "op": ["update"]}, schema=schema)
    outs = []
    for layout in ("whole", "chunked"):
        driver = Driver(
            OverWindow(*calls, emit="on_update", rowKey="id", opColumn="op", stateLayout=layout),
            schema,
            ["k"],
            rows_per_chunk=8,
        )
        driver.feed(rows)
        outs.append(driver.feed(move))
    whole, chunked = outs
    _same_changelog(chunked, whole, _names(calls))
    assert "delete" not in chunked.column("_change").to_pylist()
    assert {r["id"]: r["s"] for r in chunked.to_pylist()}[5] == 1 + 1 + 7.0
    store = driver.states[(0,)]
    index = decode(store.index, INDEX_KIND, ChunkIndexMeta)[0]["index"]
    last = index.column(CHUNK).to_pylist()[-1]
    held_5 = [h for h, c in store.rows.items() if c == last]
    assert len(held_5) == index.column(CHUNK_ROWS).to_pylist()[-1]


class _Watched(MemoryBucket):
    """A MemoryBucket noting which partitions a step opens."""

    def __init__(self):
        super().__init__()
        self.opened = []

    def partition(self, key):
        self.opened.append(key)
        return super().partition(key)


def test_a_bucket_step_reads_only_the_keys_with_rows():
    """A bucket of 50 keys: a micro-batch with rows of two keys (one NULL) opens those two keys'
    entries and no other (with a watermark too: a key evicts when it gets rows); its chunk reads
    stay within the keys' frames."""
    schema = SCHEMA.remove(SCHEMA.get_field_index("op"))
    spec = OverWindow(CALL_SETS[0][0], emit="on_update", rowKey="id", stateLayout="chunked", keyBuckets=1)
    machine = machine_for(spec, schema, watermarked=True, rows_per_chunk=4, keys=("k",))
    bucket = _Watched()
    n = 50 * 20
    k = np.arange(n) % 50
    machine.step(
        bucket,
        pa.table(
            {"k": pa.array(k, mask=k == 0), "id": np.arange(n), "t": np.arange(n) // 50, "x": np.ones(n)},
            schema=schema,
        ),
    )
    assert len(bucket.held()) == 50
    reads = {key: p.reads for key, p in bucket.parts.items()}
    bucket.opened.clear()
    rows = pa.table({"k": [7, None], "id": [n, n + 1], "t": [20, 20], "x": [2.0, 3.0]}, schema=schema)
    step = machine.step(bucket, rows, watermark=15)
    assert sorted(bucket.opened) == sorted(key_bytes(rows.select(["k"])))
    assert all(p.reads == reads[key] for key, p in bucket.parts.items() if key not in bucket.opened)
    by_id = {r["id"]: r["s"] for r in step.output.to_pylist()}  # ROWS 2 PRECEDING AND 1 FOLLOWING
    assert (by_id[n], by_id[n + 1], len(by_id)) == (1 + 1 + 2.0, 1 + 1 + 3.0, 4)  # and the rows before
    assert bucket.rows_held() < n + 2  # the two keys evicted behind the watermark, the others kept


@pytest.mark.parametrize(("then", "keys"), [(None, ()), (8, ("k",)), (4, ("id",))])
def test_a_chunked_state_written_with_buckets_is_refused_under_other_buckets_or_keys(then, keys):
    """Buckets are fixed for a checkpoint's life, in the whole layout's words: a chunked state written
    with keyBuckets=4 over k is refused under other buckets, other keys or per key (in Spark a
    bucket's value and a key's index are the same state variable, ``index``, of its group: modelled
    here by handing one's value to the other), and a state per key is refused on buckets."""
    schema = SCHEMA.remove(SCHEMA.get_field_index("op"))
    rows = pa.table({"k": [1, 2], "id": [1, 2], "t": [5, 6], "x": [1.0, 2.0]}, schema=schema)
    call = CALL_SETS[0][0]

    def machine(buckets, keys):
        spec = OverWindow(call, emit="on_update", rowKey="id", stateLayout="chunked", keyBuckets=buckets)
        return machine_for(spec, schema, keys=keys)

    bucket = MemoryBucket()
    machine(4, ("k",)).step(bucket, rows)
    shown = then or '"per key"'
    words = rf"written with keyBuckets=4 \(keys \('k',\)\) .* now runs keyBuckets={shown}"
    later = machine(then, keys)
    held = MemoryChunks() if then is None else MemoryBucket()
    if then is None:
        held.index = bucket.meta
    else:
        held.meta = bucket.meta
    with pytest.raises(StateFormatError, match=words):
        later.step(held, rows)
    if then is not None:  # a key's own entries record them too
        held = MemoryBucket()
        held.parts = bucket.parts
        with pytest.raises(StateFormatError, match=words):
            later.step(held, rows)
    per_key = MemoryChunks()
    machine(None, ()).step(per_key, rows)
    continued = MemoryBucket()
    continued.meta = per_key.index
    with pytest.raises(StateFormatError, match=r'written with keyBuckets="per key" \(keys \(\)\)'):
        machine(4, ("k",)).step(continued, rows)
