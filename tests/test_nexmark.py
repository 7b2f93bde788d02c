"""The Nexmark event generator of the benchmarks (benchmarks/nexmark_events.py): Nexmark's
proportions, ids, hot keys and event times, checked against the rules Nexmark states (not against
values the generator printed), and the same events from the same seed; the latency harness's feed
and arithmetic (benchmarks/nexmark_latency.py) on tiny inputs. No Spark."""

import doctest
import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

_benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, _benchmarks / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


ne = _load("nexmark_events")
nl = _load("nexmark_latency")

N = 50_000


@pytest.fixture(scope="module")
def ev():
    return ne.events(N, seed=11)


def test_proportions_are_1_3_46_in_every_block_of_50(ev):
    counts = np.bincount(ev.kind, minlength=3)
    assert counts.tolist() == [N // 50, 3 * N // 50, 46 * N // 50]
    blocks = ev.kind.reshape(-1, 50)
    assert (blocks == blocks[0]).all()
    assert blocks[0].tolist() == [0, 1, 1, 1] + [2] * 46


def test_same_seed_same_events_other_seed_other_bids(ev):
    again = ne.events(N, seed=11)
    assert ne.bids(again).equals(ne.bids(ev))
    assert ne.auctions(again).equals(ne.auctions(ev)) and ne.persons(again).equals(ne.persons(ev))
    other = ne.bids(ne.events(N, seed=12))
    assert not other.column("price").equals(ne.bids(ev).column("price"))
    # the ids and times do not depend on the seed: only what is drawn does
    assert other.column("dateTime").equals(ne.bids(ev).column("dateTime"))


def test_person_and_auction_ids_count_up_from_1000(ev):
    persons, auctions = ne.persons(ev), ne.auctions(ev)
    assert persons.column("id").to_pylist() == list(range(1000, 1000 + N // 50))
    assert auctions.column("id").to_pylist() == list(range(1000, 1000 + 3 * N // 50))


def test_event_times_are_rate_spaced_and_in_order(ev):
    # 10,000 events a second: event n at n / 10 ms (truncated to the millisecond)
    assert (ev.time_ms - ne.BASE_MS == np.arange(N) // 10).all()
    slow = ne.events(1000, seed=11, rate=100)
    assert (np.diff(slow.time_ms) == 10).all()


def test_bids_refer_to_auctions_and_persons_that_exist_or_are_just_ahead(ev):
    """Nexmark lets a bid name an auction up to 10 ids past the latest and a person up to 10 past
    the latest (the lead); never one more than 100 auctions or 1,000 persons back, unless hot."""
    b = ev.kind == ne.BID
    n = np.arange(N)[b]
    auction = ev.auction[b] - 1000
    latest = ne.last_auction(n)
    hot = auction == latest // 100 * 100
    assert (auction <= latest + 10).all()
    assert (auction[~hot] >= latest[~hot] - 100).all()
    bidder = ev.bidder[b] - 1000
    people = ne.last_person(n)
    assert (bidder <= people + 10).all()
    hot_bidder = bidder == people // 100 * 100 + 1
    assert (bidder[~hot_bidder] >= people[~hot_bidder] + 1 - 1000).all()


def test_hot_auctions_and_bidders_take_their_nexmark_shares(ev):
    """Half of the bids go to the hot auction and three in four to the hot bidder (plus the share
    of the others that land on them by chance): within 3 standard deviations."""
    b = ev.kind == ne.BID
    n = np.arange(N)[b]
    bids = b.sum()
    hot_auction = (ev.auction[b] - 1000 == ne.last_auction(n) // 100 * 100).mean()
    hot_bidder = (ev.bidder[b] - 1000 == ne.last_person(n) // 100 * 100 + 1).mean()
    for share, expected in ((hot_auction, 0.5), (hot_bidder, 0.75)):
        sigma = np.sqrt(expected * (1 - expected) / bids)
        assert expected - 3 * sigma <= share <= expected + 0.03 + 3 * sigma


def test_prices_span_100_to_100_million_log_uniformly(ev):
    price = ne.bids(ev).column("price").to_numpy()
    assert price.min() >= 100 and price.max() <= 100_000_000
    decades = np.bincount(np.floor(np.log10(price) - 2).clip(0, 5).astype(int), minlength=6) / len(price)
    assert np.allclose(decades, 1 / 6, atol=0.02)


def test_bid_files_hold_every_bid_once_in_order_as_json_lines(ev, tmp_path):
    table = ne.bids(ne.events(2_000, seed=3))
    assert table.schema == ne.BID_SCHEMA
    assert [f.name for f in table.schema] == [c.split()[0] for c in ne.BID_DDL.split(", ")]
    paths = ne.write_json_files(table, tmp_path, files=3)
    assert [p.name for p in sorted(paths, key=lambda p: p.stat().st_mtime)] == [p.name for p in paths]
    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines()]
    assert len(rows) == table.num_rows
    expected = table.to_pylist()
    for got, want in zip(rows, expected):
        assert got["dateTime"] == want["dateTime"].strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        assert {k: v for k, v in got.items() if k != "dateTime"} == {
            k: v for k, v in want.items() if k != "dateTime"
        }


def test_latency_feed_renames_every_file_in_order_on_its_schedule(tmp_path):
    """At 400 bids a second, a file every 0.01 s: each file lands whole in the watched folder, in
    order, no earlier than due; every bid gets its file's arrival; a commit 0.5 s after each arrival
    reads as 0.5 s, and bids without a row are counted apart."""
    table = nl.bids_at(rate=400, seconds=0.2, seed=5)
    plan = nl.chunks(table, rate=400, chunk_s=0.01)
    assert [c.stop - c.start for c in plan[:-1]] == [4] * (len(plan) - 1)
    assert plan[-1].stop == table.num_rows
    folder = tmp_path / "in"
    folder.mkdir()
    paths = nl.stage(table, plan, tmp_path / "stage")
    feeder = nl.Feeder(paths, plan, folder)
    feeder.start()
    feeder.join(30)
    landed = sorted(folder.iterdir())
    assert [p.name for p in landed] == [p.name for p in paths]
    rows = [json.loads(line) for p in landed for line in p.read_text().splitlines()]
    assert len(rows) == table.num_rows
    arrived = np.array(feeder.arrived)
    assert (np.diff(arrived) >= 0).all()
    assert arrived[-1] - arrived[0] >= plan[-1].due_s - 0.005
    bids = nl.arrivals(table, plan, feeder.arrived)
    committed = bids.iloc[::2].assign(sink=0, commit=lambda f: f["arrival"] + 0.5)
    got = nl.latency(bids, committed[[*nl.KEY, "sink", "commit"]], (0.0, 1.0))
    assert got["p50"] == pytest.approx(0.5) and got["p99"] == pytest.approx(0.5)
    assert got["measured"] == len(committed) and got["without_row"] == len(bids) - len(committed)


def test_flink_print_lines_read_as_commits_of_the_rows_keys():
    """PyFlink's print sink lines: inserts and the new side of updates count, retractions do not;
    timestamps with and without seconds; the sink's number from its identifier."""
    q19 = "1000, 1001, 250, Google, https://x/item.htm?query=1, 2024-01-01T00:00:01.250, ab, 1]"
    lines = [
        (1.0, f"sink0:1> +I[{q19}"),
        (2.0, f"sink0:2> -U[{q19}"),
        (3.0, "sink1:2> +U[7, 8, 9, 2024-01-01T00:00, 7.5]"),
        (4.0, "READY"),
    ]
    got = nl.flink_commits(lines)
    assert got.to_dict("list") == {
        "auction": [1000, 7],
        "bidder": [1001, 8],
        "price": [250, 9],
        "t_ms": [ne.BASE_MS + 1250, ne.BASE_MS],
        "sink": [0, 1],
        "commit": [1.0, 3.0],
    }
    assert isinstance(got, pd.DataFrame)


def _source_log(chk: Path, read: dict[int, list[str]], up_to: list[int], committed: dict[int, float]):
    """A checkpoint as Spark writes it: the file source's log (``read``: its own batch -> file names;
    the batches up to 1 compacted, as Spark compacts them), the query's offset log (micro-batch N read
    the file source's batches up to ``up_to[N]``) and commit log entries with their times."""
    (chk / "sources" / "0").mkdir(parents=True)
    (chk / "offsets").mkdir()
    (chk / "commits").mkdir()
    entry = '{{"path":"file:///x/in/{}","timestamp":1,"batchId":{}}}'
    lines = {b: [entry.format(name, b) for name in names] for b, names in read.items()}
    (chk / "sources" / "0" / "1.compact").write_text("\n".join(["v1", *lines.get(0, []), *lines.get(1, [])]))
    for b in (b for b in read if b > 1):
        (chk / "sources" / "0" / str(b)).write_text("\n".join(["v1", *lines[b]]))
        (chk / "sources" / "0" / f".{b}.crc").write_bytes(b"\x00")
    for batch, listed in enumerate(up_to):
        meta = '{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}'
        (chk / "offsets" / str(batch)).write_text(f'v1\n{meta}\n{{"logOffset":{listed}}}')
    for batch, at in committed.items():
        (chk / "commits" / str(batch)).write_text("v1\n{}")
        os.utime(chk / "commits" / str(batch), (at, at))


def test_on_update_bids_commit_with_the_micro_batch_that_read_their_file(tmp_path):
    """The file source's log in a checkpoint, as Spark writes it (a compacted file and a later
    batch's), maps each bid's file to its micro-batch and that batch's commit log entry's time; a
    file of a micro-batch not committed yet gives its bids no commit."""
    chk = tmp_path / "chk"
    read = {0: ["part00000-00000.json"], 1: ["part00001-00000.json"], 2: ["part00002-00000.json"]}
    _source_log(chk, read, up_to=[0, 1, 2], committed={0: 100.0, 1: 101.5})
    table = pa.table(
        {
            "auction": [1, 2, 3, 4, 5],
            "bidder": [1, 1, 1, 1, 1],
            "price": [1, 1, 1, 1, 1],
            "dateTime": pa.array([0, 1, 2, 3, 4], pa.timestamp("ms")),
        }
    )
    plan = [nl.Chunk(0, 2, 0.0), nl.Chunk(2, 4, 0.25), nl.Chunk(4, 5, 0.5)]
    paths = [tmp_path / f"part{n:05d}-00000.json" for n in range(3)]
    got = nl.read_commits(table, plan, paths, chk)
    assert got["auction"].tolist() == [1, 2, 3, 4] and got["commit"].tolist() == [100.0, 100.0, 101.5, 101.5]


def test_a_micro_batch_without_files_moves_the_files_to_later_micro_batches(tmp_path):
    """Micro-batch 1 read no file (Spark runs one when the watermark moves past a stateful
    aggregate): the file source's batch 1 was read by micro-batch 2 and its batch 2 by micro-batch 3,
    committed at their own times, never at the earlier micro-batch's of the same number."""
    chk = tmp_path / "chk"
    read = {0: ["w.json"], 1: ["a.json", "b.json"], 2: ["c.json"], 3: ["d.json"]}
    _source_log(chk, read, up_to=[0, 0, 1, 2, 2], committed={0: 10.0, 1: 11.0, 2: 12.5, 3: 14.0, 4: 15.0})
    assert nl.micro_batch_commits(chk) == {"w.json": 10.0, "a.json": 12.5, "b.json": 12.5, "c.json": 14.0}


def test_latency_module_examples():
    assert doctest.testmod(nl).failed == 0
