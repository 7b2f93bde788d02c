"""Random CDC micro-batches for the emit-on-update tests: inserts, deletes and updates (which may
move a row in time) over a dict of the live rows the test keeps as its oracle's input."""


def random_cdc_batch(rng, live: dict, next_id: int, size: int, t_hi: int = 15):
    """``size`` changes: 60% inserts (new ids), 20% deletes and 20% updates of live rows; ``live``
    ((k, id) -> row) is updated to match. Returns (the rows with their ``op``, the next free id)."""
    batch = []
    for _ in range(size):
        choice = rng.random()
        x = None if rng.random() < 0.15 else float(rng.integers(-20, 20))
        if choice < 0.6 or not live:
            row = {
                "k": int(rng.integers(0, 3)),
                "id": next_id,
                "t": int(rng.integers(0, t_hi)),
                "x": x,
                "op": "insert",
            }
            next_id += 1
        else:
            old = live[list(live)[int(rng.integers(0, len(live)))]]
            row = (
                dict(old, op="delete")
                if choice < 0.8
                else dict(old, t=int(rng.integers(0, t_hi)), x=x, op="update")
            )
        batch.append(row)
        key = (row["k"], row["id"])
        if row["op"] == "delete":
            live.pop(key, None)
        else:
            live[key] = {c: row[c] for c in ("k", "id", "t", "x")}
    return batch, next_id
