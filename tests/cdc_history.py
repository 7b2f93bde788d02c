"""Random row changes (inserts, updates that move rows between partitions, NULL included, and in
time, deletes) and the Debezium change events that carry them: shared by the CDC tests and the
recovery test's on-update views."""

import numpy as np


def history(seed, changes=90, keys=(None, "a", "b", "c"), time=int, once_in=None):
    """Random changes over a few ids: [(kind, before, after)] with kind insert, update (which may move
    the row to another partition, NULL included, and in time) or delete. Rows are {k, ts, x, id},
    k one of ``keys``, ts ``time`` of 0 to 39 (ties), x NULL one time in ten. ``once_in``: each id
    changes at most once in each run of that many changes (one micro-batch); None: no limit (an id
    may change several times in a batch)."""
    rng = np.random.default_rng(seed)
    live, out, next_id, changed = {}, [], 0, set()
    for n in range(changes):
        if once_in and n % once_in == 0:
            changed = set()
        free = [i for i in live if not once_in or i not in changed]
        row = {
            "k": keys[int(rng.integers(0, len(keys)))],
            "ts": time(int(rng.integers(0, 40))),
            "x": None if rng.random() < 0.1 else float(rng.integers(-9, 9)),
        }
        choice = rng.random()
        if choice < 0.35 or not free:
            changed.add(next_id)
            live[next_id] = dict(row, id=next_id)
            out.append(("insert", None, live[next_id]))
            next_id += 1
        else:
            old = live[free[int(rng.integers(0, len(free)))]]
            changed.add(old["id"])
            if choice < 0.5:
                out.append(("delete", live.pop(old["id"]), None))
            else:
                live[old["id"]] = dict(row, id=old["id"])
                out.append(("update", old, live[old["id"]]))
    return out


def flink(history):
    """Flink changelog records (+I, -U, +U, -D), each row with its op: an update is its old image's
    -U and its new image's +U, so a row that moves leaves its old partition or group."""
    records = []
    for kind, before, after in history:
        if kind == "insert":
            records.append(dict(after, op="+I"))
        elif kind == "delete":
            records.append(dict(before, op="-D"))
        else:
            records += [dict(before, op="-U"), dict(after, op="+U")]
    return records


def debezium(history, rng):
    """Debezium change events; some wrapped in "payload" (JSON converter with schemas), and updates
    that keep the partition sometimes without a before image (REPLICA IDENTITY DEFAULT)."""
    records = []
    for kind, before, after in history:
        if kind == "update" and before["k"] == after["k"] and rng.random() < 0.3:
            before = None
        event = {"before": before, "after": after, "op": {"insert": "c", "update": "u", "delete": "d"}[kind]}
        records.append({"schema": {}, "payload": event} if rng.random() < 0.3 else event)
    return records


def changed_twice(batches) -> int:
    """How many times an id changes more than once in one batch of ``batches`` (Debezium events or
    Flink rows with their op; a Flink update's two images count as one change): the data must
    hold such batches, where the order of one id's changes decides the result."""
    n = 0
    for batch in batches:
        ids = []
        for record in batch:
            event = record.get("payload", record)
            if "before" in event:
                ids.append((event["after"] or event["before"])["id"])
            elif event["op"] != "-U":
                ids.append(event["id"])
        n += len(ids) - len(set(ids))
    return n


def live_rows(history) -> dict:
    """id -> the row the changes leave."""
    live = {}
    for kind, before, after in history:
        if kind == "delete":
            live.pop(before["id"])
        else:
            live[after["id"]] = after
    return live


def cut(records, rng, parts):
    """``records`` in ``parts`` runs of random lengths, in order."""
    cuts = sorted(rng.choice(np.arange(1, len(records)), parts - 1, replace=False))
    return [records[a:b] for a, b in zip([0, *cuts], [*cuts, len(records)])]
