"""How far a micro-batch reads each Kafka partition: end offsets that keep the partitions together
in event time (the planning of overwindow's Python Kafka reader; pure Python, no Kafka, no Spark).

Spark's watermark is one for the whole stream: the newest event time it has seen, less the delay. A
micro-batch that reads one partition further in event time than another moves the watermark past
rows the other has not delivered yet, and they are late although they were in order in their own
partition. So each micro-batch takes, from every partition, the records up to one event-time
*cutoff* (``plan``):

- the cutoff is the smallest, over the partitions that *hold* it, of the newest event time known in
  the partition (read in earlier micro-batches, or waiting in the records scanned for this one),
  but never below the newest event time read so far (a partition back from idle behind it holds
  the others there, not further back);
- a partition holds the cutoff while records wait in it and, once it has none, until it has been
  idle (no new record) for the reader's idle timeout, so a quiet partition stops the others for
  that long at most; a partition without a readable event time yet (never written, or only bad
  records) holds nothing back;
- each partition gives its records in offset order up to the first one past the cutoff; under a
  read limit, the limit's worth with the smallest such times (ties shared by backlog).

What it guarantees: a record whose event time is less than the watermark delay behind the newest
record before it in its partition (in order, within the delay) is never late, unless its partition
was idle past the timeout, or had no readable event time yet, before the record arrived. Why: let
M be the newest event time of every micro-batch so far (the watermark is M less the delay) and,
for a partition p that holds, F_p the larger of its newest event time read and the time of its
first record not read yet. Each micro-batch keeps M <= F_p: the cutoff is at most every holder's
newest known time, a partition that stops before the cutoff stops at a record past it, and one read
to the end of what was scanned has its newest known time, at least the cutoff, as its newest read.
A later record of p in order within the delay is above F_p less the delay, so above M less the
delay.

>>> import numpy as np
>>> fast = Pending(0, np.array([0, 1, 2]), np.array([10, 20, 30]), log_end=3, newest=None, live=True)
>>> slow = Pending(0, np.array([0]), np.array([15]), log_end=1, newest=None, live=True)
>>> plan({"0": fast, "1": slow}, limit=None)  # partition 0 waits at 15 for partition 1
({'0': 1, '1': 1}, {'0': 10, '1': 15})
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass

import numpy as np

NO_TIME = int(np.iinfo(np.int64).min)  # a record whose event time the reader cannot read
_EPOCH = dt.datetime(1970, 1, 1)
# the ISO-8601 text Spark's JSON reader takes for a TIMESTAMP: a date, then optionally a time with
# up to 9 digits of fraction (kept to microseconds) and a zone offset; no zone is the session's
# (UTC, which the job requires)
_ISO = re.compile(
    r"\s*([+-]?\d{4,6})-(\d{1,2})-(\d{1,2})"
    r"(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?)?"
    r"\s*(?:Z|UTC|GMT|([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?)?\s*",
    re.IGNORECASE,
)


def parse_time(value) -> int:
    """A JSON value as Spark's JSON reader reads it into a TIMESTAMP, in UTC microseconds:
    ISO-8601 text, or a whole number of seconds since 1970; NO_TIME for anything else. O(1).

    >>> parse_time("2024-03-15T13:30:10.492Z"), parse_time("1970-01-01 00:00:01+01:00"), parse_time(2)
    (1710509410492000, -3599000000, 2000000)
    >>> parse_time("yesterday") == parse_time(1.5) == NO_TIME
    True
    """
    if isinstance(value, bool):
        return NO_TIME
    if isinstance(value, int):
        return value * 1_000_000
    if not isinstance(value, str):
        return NO_TIME
    m = _ISO.fullmatch(value)
    if m is None:
        return NO_TIME
    year, month, day, hour, minute, second, fraction, sign, zone_h, zone_m, zone_s = m.groups()
    try:
        at = dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
    except ValueError:  # a day or hour that does not exist (or a year past Python's 9999)
        return NO_TIME
    micros = (at - _EPOCH) // dt.timedelta(microseconds=1) + int((fraction or "").ljust(6, "0")[:6])
    if sign:
        offset = (int(zone_h) * 3600 + int(zone_m or 0) * 60 + int(zone_s or 0)) * 1_000_000
        micros -= offset if sign == "+" else -offset
    return micros


def event_time(value: bytes | None, column: str, envelope: str = "none") -> int:
    """The event time of one Kafka record's value (JSON text) as the view's source reads it, in UTC
    microseconds: the record's ``column``; the newest of a JSON array's records; for a Debezium
    envelope (``envelope = "debezium"``) the newest of its before and after images. NO_TIME where
    there is none. O(the value's length).

    >>> event_time(b'{"k": "a", "ts": "2024-01-01T00:00:01Z"}', "ts")
    1704067201000000
    >>> event_time(b'{"payload": {"before": null, "after": {"ts": 3}, "op": "c"}}', "ts", "debezium")
    3000000
    >>> event_time(b"not json", "ts") == NO_TIME
    True
    """
    try:
        doc = json.loads(value)
    except (TypeError, ValueError):
        return NO_TIME
    newest = NO_TIME
    for record in doc if isinstance(doc, list) else [doc]:
        if not isinstance(record, dict):
            continue
        images = [record]
        if envelope == "debezium":
            change = record.get("payload") if isinstance(record.get("payload"), dict) else record
            images = [change.get(side) for side in ("before", "after")]
        for image in images:
            if isinstance(image, dict):
                newest = max(newest, parse_time(image.get(column)))
    return newest


@dataclass
class Pending:
    """One Kafka partition as a micro-batch is planned: where it starts; the records scanned past the
    start (their offsets, and event times in UTC microseconds, NO_TIME where unknown); where its log
    ends if the scan reached the end (None: more records lie past the scan); the newest event time
    read in earlier micro-batches (None: none known); and whether it holds the cutoff while no
    record waits in it (it is not idle)."""

    start: int
    offsets: np.ndarray
    times: np.ndarray
    log_end: int | None
    newest: int | None
    live: bool


def plan(parts: dict[str, Pending], limit: int | None) -> tuple[dict[str, int], dict[str, int]]:
    """The next micro-batch's end offset of every partition, and each partition's newest event time
    read once it has run (partitions without one left out), as the module docstring describes; at
    most ``limit`` records in all (None: no limit). O(records scanned).

    >>> import numpy as np
    >>> a = Pending(5, np.array([5, 6, 7]), np.array([1, 2, 9]), log_end=8, newest=0, live=True)
    >>> b = Pending(0, np.array([], int), np.array([], int), log_end=0, newest=4, live=True)
    >>> plan({"a": a, "b": b}, limit=None)  # b holds the cutoff at 4, its newest time
    ({'a': 7, 'b': 0}, {'a': 2, 'b': 4})
    >>> b.live = False  # idle: a reads on
    >>> plan({"a": a, "b": b}, limit=None)
    ({'a': 8, 'b': 0}, {'a': 9, 'b': 4})
    """
    # a record is taken when every record before it in its partition is at or below the cutoff
    keys = {p: np.maximum.accumulate(q.times) if len(q.times) else q.times for p, q in parts.items()}
    known = {p: _newest(q.newest, keys[p][-1] if len(keys[p]) else NO_TIME) for p, q in parts.items()}
    holds = [known[p] for p, q in parts.items() if known[p] is not None and (len(q.offsets) or q.live)]
    read = [q.newest for q in parts.values() if q.newest is not None]
    cutoff = max(min(holds), max(read, default=NO_TIME)) if holds else None
    take = {
        p: len(k) if cutoff is None else int(np.searchsorted(k, cutoff, "right")) for p, k in keys.items()
    }
    if limit is not None and sum(take.values()) > limit:
        take = _smallest(keys, take, limit)
    ends, newest = {}, {}
    for p, q in parts.items():
        n = take[p]
        if n < len(q.offsets):
            ends[p] = int(q.offsets[n])
        elif q.log_end is not None:
            ends[p] = max(int(q.log_end), q.start)
        else:
            ends[p] = int(q.offsets[-1]) + 1 if n else q.start
        read = _newest(q.newest, keys[p][n - 1] if n else NO_TIME)
        if read is not None:
            newest[p] = read
    return ends, newest


def _newest(before: int | None, scanned) -> int | None:
    scanned = int(scanned)
    if scanned == NO_TIME:
        return before
    return scanned if before is None else max(before, scanned)


def _smallest(keys: dict[str, np.ndarray], take: dict[str, int], limit: int) -> dict[str, int]:
    """Of each partition's first ``take`` records (their keys ascending), the ``limit`` with the
    smallest keys: all below the limit's key, and its ties shared by backlog. O(records)."""
    heads = {p: keys[p][:n] for p, n in take.items()}
    bound = np.partition(np.concatenate(list(heads.values())), limit - 1)[limit - 1]
    below = {p: int(np.searchsorted(h, bound, "left")) for p, h in heads.items()}
    ties = {p: int(np.searchsorted(h, bound, "right")) - below[p] for p, h in heads.items()}
    shared = share_limit({}, ties, limit - sum(below.values()))
    return {p: below[p] + shared[p] for p in heads}


def share_limit(start: dict[str, int], ends: dict[str, int], limit: int) -> dict[str, int]:
    """End offsets that take at most ``limit`` records in all, shared in proportion to each
    partition's backlog (largest remainders first, so the whole limit is used). O(partitions).

    >>> share_limit({"0": 0, "1": 0}, {"0": 30, "1": 10}, 20)
    {'0': 15, '1': 5}
    """
    backlog = {p: max(0, ends[p] - start.get(p, 0)) for p in ends}
    total = sum(backlog.values())
    if total <= limit:
        return dict(ends)
    quota = {p: backlog[p] * limit // total for p in backlog}
    spare = limit - sum(quota.values())
    for p in sorted(backlog, key=lambda p: (-(backlog[p] * limit % total), p))[:spare]:
        quota[p] += 1
    return {p: start.get(p, 0) + quota[p] for p in ends}
