"""The Python Kafka reader's planning (overwindow.pipeline.kafka_alignment), without Kafka or Spark:
event times read from record values as Spark's JSON reader reads them, and end offsets that never
make a record late that is in order within its own partition, whatever the partitions' rates, read
limits and backlogs (a stream of micro-batches simulated with Spark's watermark rule)."""

import datetime as dt
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from overwindow.pipeline.kafka_alignment import NO_TIME, Pending, event_time, parse_time, plan, share_limit


@given(
    st.dictionaries(st.sampled_from("0123"), st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1),
    st.integers(1, 120),
)
def test_share_limit_takes_the_limit_or_everything(ranges, limit):
    start = {p: min(a, b) for p, (a, b) in ranges.items()}
    ends = {p: max(a, b) for p, (a, b) in ranges.items()}
    got = share_limit(start, ends, limit)
    assert set(got) == set(ends)
    assert all(start[p] <= got[p] <= ends[p] for p in ends)
    assert sum(got[p] - start[p] for p in ends) == min(limit, sum(ends[p] - start[p] for p in ends))


@given(
    st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)),
    st.sampled_from(["T", " "]),
    st.integers(0, 6),
    st.sampled_from(["", "Z", "+00:00", "+05:30", "-0800", "+01"]),
)
def test_iso_text_is_read_as_python_reads_it(moment, sep, digits, zone):
    text = moment.isoformat(sep=sep, timespec="microseconds")
    text = text[: len(text) - 6 + digits] if digits else text[:-7]
    offset = {"": 0, "Z": 0, "+00:00": 0, "+05:30": 330, "-0800": -480, "+01": 60}[zone]
    want = dt.datetime.fromisoformat(text) - dt.timedelta(minutes=offset)
    assert parse_time(text + zone) == (want - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


@pytest.mark.parametrize(
    "value, want",
    [
        ('{"ts": "2024-03-15T13:30:10.492Z"}', 1710509410492000),
        ('{"ts": "2024-03-15"}', 1710460800000000),
        ('{"ts": 1710509410}', 1710509410000000),
        ('[{"ts": "2024-03-15"}, {"ts": "2024-03-16"}]', 1710547200000000),  # an array: its newest
        ('{"ts": null}', NO_TIME),
        ('{"ts": "2024-02-30"}', NO_TIME),  # no such day: Spark makes it NULL, a bad record
        ('{"ts": 1.5}', NO_TIME),
        ('{"TS": "2024-03-15"}', NO_TIME),
        ("[1, 2]", NO_TIME),
        ("not json", NO_TIME),
    ],
)
def test_event_times_of_values(value, want):
    assert event_time(value.encode(), "ts") == want


def test_debezium_event_times_are_the_newest_image():
    before, after = {"ts": "2024-03-15"}, {"ts": "2024-03-16"}
    for event in (
        {"before": before, "after": after, "op": "u"},
        {"payload": {"before": before, "after": after}},
    ):
        assert event_time(json.dumps(event).encode(), "ts", "debezium") == parse_time("2024-03-16")
    delete = {"before": before, "after": None, "op": "d"}
    assert event_time(json.dumps(delete).encode(), "ts", "debezium") == parse_time("2024-03-15")
    assert event_time(json.dumps(delete).encode(), "ts") == NO_TIME  # not a row of the schema


# a partition's records: (round it arrives in, event time); times of a partition go up by steps that
# may step back by less than DELAY (in order within the delay) or, rarely, further (truly late)
DELAY = 10


@st.composite
def streams(draw):
    partitions = draw(st.integers(1, 4))
    out = []
    for _ in range(partitions):
        n = draw(st.integers(0, 30))
        steps = draw(st.lists(st.integers(-DELAY + 1, 25), min_size=n, max_size=n))
        start = draw(st.integers(0, 100))
        times = list(np.cumsum([start, *steps])[:n])
        unknown = (
            draw(st.lists(st.booleans(), min_size=n, max_size=n)) if draw(st.booleans()) else [False] * n
        )
        rounds = sorted(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)))
        out.append([(r, NO_TIME if u else int(t)) for r, t, u in zip(rounds, times, unknown)])
    return out


def _simulate(parts, limit, live, rounds=40):
    """Micro-batches planned by ``plan`` over records arriving by round; returns the event times of
    each micro-batch by partition, where each partition ended, and the partitions that stopped
    holding the others back (idle with nothing waiting, or no event time known in it yet: the
    docs/deployment.md's exceptions) with the number of their records that arrived before."""
    start = [0] * len(parts)
    newest: dict[str, int] = {}
    batches, dropped = [], {}
    for r in range(rounds):
        arrived = [[t for at, t in p if at <= r] for p in parts]
        for i, a in enumerate(arrived):
            waiting = a[start[i] :]
            unknown = str(i) not in newest and all(t == NO_TIME for t in waiting)  # empty, or bad records
            if (not waiting and not live(i, r, arrived)) or unknown:
                dropped.setdefault(i, len(a))
        pending = {
            str(i): Pending(
                start[i],
                np.arange(start[i], len(a)),
                np.array(a[start[i] :], dtype=np.int64),
                log_end=len(a),
                newest=newest.get(str(i)),
                live=live(i, r, arrived),
            )
            for i, a in enumerate(arrived)
        }
        ends, newest = plan(pending, limit)
        got = {i: arrived[i][start[i] : ends[str(i)]] for i in range(len(parts))}
        for i in range(len(parts)):
            assert start[i] <= ends[str(i)] <= len(arrived[i])
        if limit is not None:
            assert sum(len(g) for g in got.values()) <= limit
        batches.append(got)
        start = [ends[str(i)] for i in range(len(parts))]
    return batches, start, dropped


def _late(parts, batches, dropped):
    """Records in order within DELAY of their partition (or its first) that Spark's watermark (the
    newest event time of the earlier micro-batches less DELAY; late at or below it) would drop."""
    late, newest = [], None
    position = [0] * len(parts)
    for got in batches:
        watermark = None if newest is None else newest - DELAY
        for i, times in got.items():
            for t in times:
                n = position[i]
                before = [x for _, x in parts[i][:n] if x != NO_TIME]
                in_order = t != NO_TIME and (not before or t > max(before) - DELAY)
                if in_order and watermark is not None and t <= watermark and n < dropped.get(i, n + 1):
                    late.append((i, n, t, watermark))
                position[i] += 1
        seen = [t for times in got.values() for t in times if t != NO_TIME]
        if seen:
            newest = max(seen + ([newest] if newest is not None else []))
    return late


@given(streams(), st.one_of(st.none(), st.integers(1, 12)))
def test_no_record_in_order_in_its_partition_is_late(parts, limit):
    """Partitions that never go idle: every record within DELAY of its partition's newest before it
    stays above the watermark (but in a partition whose first records had no event time), and once
    nothing more arrives every record is read."""
    batches, ends, dropped = _simulate(parts, limit, live=lambda i, r, arrived: True)
    assert _late(parts, batches, dropped) == []
    # the stream stops and every partition goes idle: what is left is read, the partitions still
    # holding the cutoff with records waiting one after the other
    newest = {}
    for got in batches:
        for i, times in got.items():
            known = [t for t in times if t != NO_TIME]
            if known:
                newest[str(i)] = max(known + ([newest[str(i)]] if str(i) in newest else []))
    for _ in range(len(parts) + 1):
        left = {
            str(i): Pending(
                ends[i],
                np.arange(ends[i], len(p)),
                np.array([t for _, t in p[ends[i] :]], dtype=np.int64),
                len(p),
                newest.get(str(i)),
                False,
            )
            for i, p in enumerate(parts)
        }
        final, newest = plan(left, None)
        ends = [final[str(i)] for i in range(len(parts))]
    assert ends == [len(p) for p in parts]


@given(streams(), st.one_of(st.none(), st.integers(1, 12)), st.data())
def test_only_records_of_a_partition_back_from_idle_can_be_late(parts, limit, data):
    """An empty partition that is not live (idle past the timeout) stops holding the others: its
    later records may be late, nobody else's."""
    idle = data.draw(st.sets(st.tuples(st.integers(0, 3), st.integers(0, 40))))
    batches, _, dropped = _simulate(parts, limit, live=lambda i, r, arrived: (i, r) not in idle)
    assert _late(parts, batches, dropped) == []


def test_a_read_limit_takes_the_smallest_times_and_shares_ties():
    a = Pending(0, np.arange(4), np.array([1, 5, 5, 9]), log_end=4, newest=None, live=True)
    b = Pending(0, np.arange(4), np.array([5, 5, 6, 20]), log_end=4, newest=None, live=True)
    assert plan({"a": a, "b": b}, limit=2) == ({"a": 2, "b": 0}, {"a": 5})
    ends, _ = plan({"a": a, "b": b}, limit=4)
    assert ends == {"a": 3, "b": 1} or ends == {"a": 2, "b": 2}  # 1, then three of the four 5s
    assert plan({"a": a, "b": b}, limit=6)[0] == {"a": 3, "b": 3}  # 9 waits for b past its 6


def test_a_partition_behind_what_was_read_holds_the_others_only_there():
    """A partition back from idle with records older than the newest read holds the others at that
    newest time, not at its own (so the others do not wait for it to read what is late anyway), and
    only until it goes idle again."""
    behind = Pending(0, np.arange(2), np.array([3, 4]), log_end=2, newest=2, live=True)
    ahead = Pending(10, np.arange(10, 13), np.array([30, 40, 70]), log_end=13, newest=35, live=True)
    assert plan({"0": behind, "1": ahead}, None) == ({"0": 2, "1": 11}, {"0": 4, "1": 35})
    behind = Pending(2, np.arange(2, 2), np.array([], np.int64), log_end=2, newest=4, live=True)
    assert plan({"0": behind, "1": ahead}, None)[0] == {"0": 2, "1": 11}
    behind.live = False
    assert plan({"0": behind, "1": ahead}, None)[0] == {"0": 2, "1": 13}
