"""Nexmark's events (persons, auctions, bids), generated as Nexmark's generator makes them, with numpy.

Event ``n`` (from 0) is, by ``n % 50``, a person (0), an auction (1 to 3) or a bid (4 to 49): the
proportions 1:3:46. Ids follow the events: the person and auction ``n`` is the latest of (its
"last" id) start at 1000, so an event's ids depend only on ``n``. Event times are Nexmark's
constant-rate ones: ``n * 1e6 / rate`` microseconds after ``base_ms`` (``rate`` = 10,000 events a
second, Nexmark's default first event rate: 100 us between events), in milliseconds. What is drawn
follows Nexmark's generator, from one numpy ``Generator`` seeded with ``seed`` (so the same
arguments give the same events, not Java's ``Random`` sequence):

- a bid's auction is the hot one (the latest auction id rounded down to a multiple of 100) half the
  time, else one of the 100 auctions before the latest or the 10 after it; its bidder is the hot
  one (the latest person id rounded down to a multiple of 100, plus 1) 3 times in 4, else one of
  the last 1,000 persons or the 10 after them; its price is ``round(10 ** (6 u) * 100)`` for a
  uniform ``u``; its channel one of 4 hot channels half the time, else one of 10,000;
- an auction's seller is the hot one (as the hot bidder, without the 1) 3 times in 4, else a
  recent person as for bids; its category one of 5, its initial bid a price and its reserve a
  second price above it, expiring up to 20 s after it starts;
- ``extra`` is a text of 0 to the kind's average size in Nexmark (bids 100 bytes, auctions 500,
  persons 200), half of it on average.

Everything is vectorized: ``bids(events(2_000_000, seed=1))`` takes about a second.

>>> ev = events(100, seed=7)
>>> [int(k) for k in np.bincount(ev.kind, minlength=3)]   # persons, auctions, bids
[2, 6, 92]
>>> int(bids(ev).column("auction")[0].as_py()) >= FIRST_AUCTION_ID
True
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

PERSON, AUCTION, BID = 0, 1, 2
PROPORTIONS = (1, 3, 46)  # persons : auctions : bids
TOTAL = sum(PROPORTIONS)
FIRST_PERSON_ID = FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID, CATEGORIES = 10, 5
HOT_AUCTION_RATIO = HOT_BIDDER_RATIO = HOT_SELLER_RATIO = 100
HOT_AUCTIONS_ONE_IN, HOT_BIDDERS_ONE_IN, HOT_SELLERS_ONE_IN = 2, 4, 4  # not hot 1 in n
IN_FLIGHT_AUCTIONS, AUCTION_ID_LEAD = 100, 10
ACTIVE_PEOPLE, PERSON_ID_LEAD = 1000, 10
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
CHANNELS = 10_000
AVERAGE_BYTES = {PERSON: 200, AUCTION: 500, BID: 100}
RATE = 10_000  # events per second of event time
BASE_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z

BID_SCHEMA = pa.schema(
    [
        ("auction", pa.int64()),
        ("bidder", pa.int64()),
        ("price", pa.int64()),
        ("channel", pa.string()),
        ("url", pa.string()),
        ("dateTime", pa.timestamp("ms", tz="UTC")),
        ("extra", pa.string()),
    ]
)
BID_DDL = (
    "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, dateTime TIMESTAMP, "
    "extra STRING"
)


@dataclass(frozen=True)
class Events:
    """``n`` events as columns: ``kind`` (PERSON, AUCTION, BID), ``time_ms`` (event time, epoch ms)
    and the drawn fields of every kind (each event's own kind's fields are the ones that count)."""

    kind: np.ndarray
    time_ms: np.ndarray
    person: np.ndarray  # the latest person id (a person event's own id)
    auction: np.ndarray  # a bid's auction; an auction event's own id
    bidder: np.ndarray  # a bid's bidder; an auction's seller
    price: np.ndarray  # a bid's price; an auction's initial bid
    reserve: np.ndarray
    category: np.ndarray
    expires_ms: np.ndarray
    channel: np.ndarray  # index: < 4 a hot channel, else channel - 4 of CHANNELS
    extra_len: np.ndarray


def kinds(n: np.ndarray) -> np.ndarray:
    """The kind of event number ``n``: PERSON, AUCTION or BID by ``n % 50``."""
    offset = n % TOTAL
    return np.where(
        offset < PROPORTIONS[0], PERSON, np.where(offset < PROPORTIONS[0] + PROPORTIONS[1], AUCTION, BID)
    )


def last_person(n: np.ndarray) -> np.ndarray:
    """The 0-based id of the latest person at event ``n`` (Nexmark's lastBase0PersonId)."""
    offset = np.minimum(n % TOTAL, PROPORTIONS[0] - 1)
    return n // TOTAL * PROPORTIONS[0] + offset


def last_auction(n: np.ndarray) -> np.ndarray:
    """The 0-based id of the latest auction at event ``n`` (Nexmark's lastBase0AuctionId)."""
    epoch, offset = n // TOTAL, n % TOTAL
    before = offset < PROPORTIONS[0]  # a person event: the previous epoch's last auction
    epoch = np.where(before, epoch - 1, epoch)
    offset = np.where(
        before | (offset >= PROPORTIONS[0] + PROPORTIONS[1]), PROPORTIONS[1] - 1, offset - PROPORTIONS[0]
    )
    return np.maximum(epoch * PROPORTIONS[1] + offset, 0)


def _recent_person(rng: np.random.Generator, latest: np.ndarray) -> np.ndarray:
    """One of the last ACTIVE_PEOPLE persons or the PERSON_ID_LEAD after them (0-based)."""
    people = latest + 1
    active = np.minimum(people, ACTIVE_PEOPLE)
    return people - active + (rng.random(len(latest)) * (active + PERSON_ID_LEAD)).astype(np.int64)


def _price(rng: np.random.Generator, size: int) -> np.ndarray:
    return np.round(10.0 ** (rng.random(size) * 6.0) * 100.0).astype(np.int64)


def events(count: int, seed: int, rate: float = RATE, base_ms: int = BASE_MS) -> Events:
    """Events 0 to ``count - 1``, drawn from ``seed`` (see the module's docstring); O(count)."""
    rng = np.random.default_rng(seed)
    n = np.arange(count, dtype=np.int64)
    person, auction_now = last_person(n), last_auction(n)
    hot_auction = auction_now // HOT_AUCTION_RATIO * HOT_AUCTION_RATIO
    low = np.maximum(auction_now - IN_FLIGHT_AUCTIONS, 0)
    recent_auction = low + (rng.random(count) * (auction_now - low + 1 + AUCTION_ID_LEAD)).astype(np.int64)
    bid_auction = np.where(rng.integers(0, HOT_AUCTIONS_ONE_IN, count) > 0, hot_auction, recent_auction)
    hot_person = person // HOT_BIDDER_RATIO * HOT_BIDDER_RATIO
    recent = _recent_person(rng, person)
    bidder = np.where(rng.integers(0, HOT_BIDDERS_ONE_IN, count) > 0, hot_person + 1, recent)
    seller = np.where(rng.integers(0, HOT_SELLERS_ONE_IN, count) > 0, hot_person, recent)
    kind = kinds(n)
    is_auction = kind == AUCTION
    time_ms = base_ms + (n * (1e6 / rate)).astype(np.int64) // 1000
    price = _price(rng, count)
    sizes = np.array([AVERAGE_BYTES[PERSON], AVERAGE_BYTES[AUCTION], AVERAGE_BYTES[BID]]) // 2
    hot_channel = rng.integers(0, 2, count) > 0
    return Events(
        kind=kind,
        time_ms=time_ms,
        person=person + FIRST_PERSON_ID,
        auction=np.where(is_auction, auction_now, bid_auction) + FIRST_AUCTION_ID,
        bidder=np.where(is_auction, seller, bidder) + FIRST_PERSON_ID,
        price=price,
        reserve=price + _price(rng, count),
        category=FIRST_CATEGORY_ID + rng.integers(0, CATEGORIES, count),
        expires_ms=time_ms + rng.integers(1, 20_000, count),
        channel=np.where(
            hot_channel,
            rng.integers(0, len(HOT_CHANNELS), count),
            len(HOT_CHANNELS) + rng.integers(0, CHANNELS, count),
        ),
        extra_len=(rng.random(count) * 2 * sizes[kind]).astype(np.int64),
    )


_PAD = "".join(chr(ord("a") + i % 26) for i in range(7919)) * 2  # extra's text: slices of it


def _texts(prefix: str, values: np.ndarray) -> pa.Array:
    return pa.array([f"{prefix}{v}" for v in values.tolist()], pa.string())


def _extras(lengths: np.ndarray, starts: np.ndarray) -> pa.Array:
    return pa.array(
        [_PAD[s : s + n] for s, n in zip((starts % 7919).tolist(), lengths.tolist())], pa.string()
    )


def bids(ev: Events) -> pa.Table:
    """The bids of ``ev`` in event order, as BID_SCHEMA (Nexmark's bid: auction, bidder, price,
    channel, url, dateTime, extra)."""
    b = ev.kind == BID
    channel = ev.channel[b]
    names = np.array([*HOT_CHANNELS, *(f"channel-{i}" for i in range(CHANNELS))], dtype=object)[channel]
    return pa.table(
        {
            "auction": ev.auction[b],
            "bidder": ev.bidder[b],
            "price": ev.price[b],
            "channel": pa.array(names, pa.string()),
            "url": pa.array(
                [f"https://www.nexmark.com/{c}/item.htm?query=1" for c in names.tolist()], pa.string()
            ),
            "dateTime": pa.array(ev.time_ms[b], pa.timestamp("ms", tz="UTC")),
            "extra": _extras(ev.extra_len[b], ev.price[b]),
        },
        schema=BID_SCHEMA,
    )


def auctions(ev: Events) -> pa.Table:
    """The auctions of ``ev``: id, itemName, description, initialBid, reserve, dateTime, expires,
    seller, category, extra."""
    a = ev.kind == AUCTION
    ids = ev.auction[a]
    return pa.table(
        {
            "id": ids,
            "itemName": _texts("item-", ids),
            "description": _texts("description of item-", ids),
            "initialBid": ev.price[a],
            "reserve": ev.reserve[a],
            "dateTime": pa.array(ev.time_ms[a], pa.timestamp("ms", tz="UTC")),
            "expires": pa.array(ev.expires_ms[a], pa.timestamp("ms", tz="UTC")),
            "seller": ev.bidder[a],
            "category": ev.category[a],
            "extra": _extras(ev.extra_len[a], ids),
        }
    )


def persons(ev: Events) -> pa.Table:
    """The persons of ``ev``: id, name, emailAddress, creditCard, city, state, dateTime, extra."""
    p = ev.kind == PERSON
    ids = ev.person[p]
    return pa.table(
        {
            "id": ids,
            "name": _texts("person-", ids),
            "emailAddress": _texts("person@", ids),
            "creditCard": _texts("4000 0000 0000 ", ids % 10_000),
            "city": _texts("city-", ids % 50),
            "state": _texts("state-", ids % 10),
            "dateTime": pa.array(ev.time_ms[p], pa.timestamp("ms", tz="UTC")),
            "extra": _extras(ev.extra_len[p], ids),
        }
    )


def write_json_files(table: pa.Table, folder: Path, files: int, prefix: str = "bids") -> list[Path]:
    """``table`` as JSON lines in ``files`` files of about equal rows, in order, their modification
    times one second apart in that order (a file source takes them in this order); timestamps as
    ISO-8601 local text, ``2024-01-01T00:00:00.100`` (UTC), read alike by Spark and Flink. Returns
    the paths in order."""
    folder.mkdir(parents=True, exist_ok=True)
    frame = table.to_pandas()
    for column, typ in zip(table.column_names, table.schema.types):
        if pa.types.is_timestamp(typ):
            ms = table.column(column).cast(pa.int64()).to_numpy().astype("datetime64[ms]")
            frame[column] = np.datetime_as_string(ms, unit="ms")
    bounds = np.linspace(0, len(frame), files + 1).astype(np.int64)
    now, paths = time.time(), []
    for n in range(files):
        path = folder / f"{prefix}-{n:05d}.json"
        frame.iloc[bounds[n] : bounds[n + 1]].to_json(path, orient="records", lines=True)
        t = now - files + n
        os.utime(path, (t, t))
        paths.append(path)
    return paths
