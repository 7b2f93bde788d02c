"""SESSION frames against Spark itself (docs/sessions.md). Spark has sessions only as a GROUP BY
(``session_window``): its per-session aggregates, joined back to each row of the session, are what
overwindow's ``OVER (... SESSION WITH GAP ...)`` gives every row, over random clicks with ties,
rows exactly the gap apart, NULL partition keys and NULL times (which ``session_window`` drops:
there a NULL time's session is its NULL peers, checked against Spark's GROUP BY of them)."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pyarrow as pa
from docs_examples import blocks
from test_select import _collect

import overwindow
from overwindow.logical.expr import for_spark
from overwindow.spark import compat

GAP = "INTERVAL '30' MINUTE"
CALLS = [
    f"count(*) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS n",
    f"count(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS nx",
    f"sum(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS s",
    f"avg(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS a",
    f"min(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS lo",
    f"max(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS hi",
    f"first_value(ts) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS began",
    f"last_value(ts) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS ended",
]
# the same, per session of Spark's GROUP BY
AGGREGATES = (
    "count(*) AS n, count(x) AS nx, sum(x) AS s, avg(x) AS a, min(x) AS lo, max(x) AS hi, "
    "min(ts) AS began, max(ts) AS ended"
)
NAMES = ["n", "nx", "s", "a", "lo", "hi", "began", "ended"]
SCHEMA = "rid BIGINT, k BIGINT, ts TIMESTAMP, x BIGINT"


def clicks(seed: int, n: int = 300, base: dt.datetime = dt.datetime(1969, 12, 31, 20, 0)) -> list[tuple]:
    """Random clicks from ``base`` on: minutes on a coarse grid (ties, and rows exactly 30 minutes
    apart), by default before and after 1970, NULL keys and times, NULL values."""
    rng = np.random.default_rng(seed)
    rows = []
    for rid in range(n):
        k = [None, 1, 2, 3][int(rng.integers(0, 4))]
        ts = None if rng.random() < 0.08 else base + dt.timedelta(minutes=5 * int(rng.integers(0, 200)))
        x = None if rng.random() < 0.1 else int(rng.integers(-100, 100))
        rows.append((rid, k, ts, x))
    return rows


def spark_sessions(spark, view: str, by: tuple[str, ...] = ("k",)):
    """Each row with its session's aggregates by Spark's session_window GROUP BY (per ``by``); rows
    with a NULL time with those of their (``by``, NULL time) group. Sorted by rid."""
    keys = ", ".join(by)
    on = " AND ".join(f"r.{c} <=> s.{c}" for c in by)
    per_session = spark.sql(
        f"SELECT {keys}, session_window(ts, '30 minutes') AS w, {AGGREGATES} FROM {view} "
        f"WHERE ts IS NOT NULL GROUP BY {keys}, session_window(ts, '30 minutes')"
    )
    per_session.createOrReplaceTempView("sessions")
    columns = ", ".join([f"r.{c}" for c in by if c != "k"] + ["r.rid", "r.k"])
    joined = spark.sql(
        f"SELECT {columns}, {', '.join('s.' + n for n in NAMES)} FROM {view} r JOIN sessions s "
        f"ON {on} AND r.ts >= s.w.start AND r.ts < s.w.end"
    )
    nulls = spark.sql(
        f"SELECT {columns}, {', '.join('s.' + n for n in NAMES)} FROM {view} r JOIN "
        f"(SELECT {keys}, {AGGREGATES} FROM {view} WHERE ts IS NULL GROUP BY {keys}) s "
        f"ON {on} WHERE r.ts IS NULL"
    )
    return sorted(joined.union(nulls).collect(), key=lambda r: r["rid"])


def _same(a, b) -> bool:
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):  # Arrow's UTC, Row's naive UTC
        return a.replace(tzinfo=None) == b.replace(tzinfo=None)
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))
    return a == b


def test_batch_sessions_equal_spark_session_window(spark):
    for seed in range(3):
        rows = clicks(seed)
        df = spark.createDataFrame(rows, SCHEMA)
        df.createOrReplaceTempView("clicks")
        want = spark_sessions(spark, "clicks")
        assert len(want) == len(rows)  # every row in exactly one session
        table = compat.to_arrow(df)
        got = overwindow.evaluate(table, *CALLS).sort_by("rid").to_pylist()
        for g, w in zip(got, want):
            assert g["rid"] == w["rid"]
            for name in NAMES:
                assert (g[name] is None and w[name] is None) or _same(g[name], w[name]), (name, g, w)
        # the result types are those of Spark's window functions over the same columns
        spark_types = dict(spark.sql(f"SELECT {', '.join(for_spark(c) for c in CALLS)} FROM clicks").dtypes)
        ours = overwindow.evaluate(table, *CALLS).schema
        simple = {pa.int64(): "bigint", pa.float64(): "double"}
        assert {n: simple.get(ours.field(n).type, str(ours.field(n).type)) for n in NAMES} == dict(
            spark_types, began="timestamp[us, tz=UTC]", ended="timestamp[us, tz=UTC]"
        )
        assert spark_types["began"] == spark_types["ended"] == "timestamp"


def test_on_update_streams_equal_spark_sessions(spark, tmp_path):
    """A stream of four micro-batches, later ones with rows that bridge sessions of earlier ones
    (and NULL keys and times), through ``overwindow.sql`` and through PySpark Columns with
    ``overwindow.sessionWindow``: the table each changelog leaves equals Spark's session_window
    GROUP BY over all rows, joined back to each row."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = clicks(7, n=160)
    order = np.random.default_rng(7).permutation(len(rows))  # out of time order: late rows bridge
    src = str(tmp_path / "src")
    for part in np.array_split(order, 4):
        spark.createDataFrame([rows[j] for j in part], SCHEMA).coalesce(1).write.mode("append").parquet(src)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("all_clicks")
    want = {r["rid"]: r for r in spark_sessions(spark, "all_clicks")}
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    events.createOrReplaceTempView("click_stream")
    by_sql = overwindow.sql(
        spark, f"SELECT rid, k, ts, {', '.join(CALLS)} FROM click_stream", emit="on_update", rowKey="rid"
    )
    w = Window.partitionBy("k").orderBy("ts")
    by_columns = overwindow.select(
        events,
        "rid",
        "k",
        "ts",
        overwindow.sessionWindow(F.count("*").over(w), "30 minutes").alias("n"),
        overwindow.sessionWindow(F.sum("x").over(w).alias("s"), "30 minutes"),
        overwindow.sessionWindow(F.first("ts").over(w), dt.timedelta(minutes=30)).alias("began"),
        emit="on_update",
        rowKey="rid",
    )
    for name, out, names in (("sql", by_sql, NAMES), ("columns", by_columns, ["n", "s", "began"])):
        table = {}
        for r in _collect(out, str(tmp_path / name), "update"):
            if r["_change"] == "delete":
                table.pop(r["rid"], None)
            else:
                table[r["rid"]] = r
        assert set(table) == set(want), name
        for rid, r in table.items():
            for n in names:
                assert (r[n] is None and want[rid][n] is None) or _same(r[n], want[rid][n]), (name, n, r)


def test_window_close_stream_emits_closed_sessions_as_spark(spark, rocksdb, chained, tmp_path):
    """On window close, watermarked on ts: four micro-batches in time order (out of order inside
    each, sessions spanning two files), none late. Each row whose session Spark's session_window
    ends before the last watermark (the newest time) is emitted once, with Spark's values; none
    whose session ends after it. The query also holds a RANGE window over the same PARTITION BY
    and ORDER BY (its own machine: the session machine runs SESSION calls alone), equal to Spark's
    batch window. The times lie after 1970: Spark's watermark never goes below the epoch, so an
    earlier time is late once a watermark exists."""
    rows = clicks(11, n=160, base=dt.datetime(2024, 3, 1, 8, 0))
    timed = sorted((r for r in rows if r[2] is not None), key=lambda r: r[2])
    rng = np.random.default_rng(11)
    src = str(tmp_path / "src")
    for part in np.array_split(np.arange(len(timed)), 4):
        chunk = [timed[i] for i in rng.permutation(part)]
        spark.createDataFrame(chunk, SCHEMA).coalesce(1).write.mode("append").parquet(src)
    spark.createDataFrame(timed, SCHEMA).createOrReplaceTempView("timed_clicks")
    want = {r["rid"]: r for r in spark_sessions(spark, "timed_clicks")}
    recent = (
        "count(*) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)"
    )
    recents = dict(spark.sql(f"SELECT rid, {recent} FROM timed_clicks").collect())
    newest = max(r[2] for r in timed)
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    events.withWatermark("ts", "0 seconds").createOrReplaceTempView("timed_stream")
    out = overwindow.sql(
        spark, f"SELECT rid, k, ts, {', '.join(CALLS)}, {recent} AS recent FROM timed_stream", rowKey="rid"
    )
    got = _collect(out, str(tmp_path / "chk"), "append")
    rids = [r["rid"] for r in got]
    assert len(rids) == len(set(rids))  # once
    gap = dt.timedelta(minutes=30)
    for rid, w in want.items():
        end = w["ended"] + gap
        if end < newest:
            assert rid in rids, (rid, w)
        elif end > newest:
            assert rid not in rids, (rid, w)
    assert rids
    for r in got:
        for n in NAMES:
            assert (r[n] is None and want[r["rid"]][n] is None) or _same(r[n], want[r["rid"]][n]), (n, r)
        assert r["recent"] == recents[r["rid"]], r


CDC_SCHEMA = "rid BIGINT, k BIGINT, ts TIMESTAMP, x BIGINT, op STRING"
CDC_BASE = dt.datetime(2024, 3, 1, 8, 0)
DELAY = dt.timedelta(hours=3)
EPOCH = dt.datetime(1970, 1, 1)  # Spark's watermark before the first batch ends


def _bridges(live: dict) -> list[tuple]:
    """The live rows whose delete splits their session: alone at their time, within 30 minutes of
    the rows before and after, which lie more than 30 minutes apart."""
    times: dict = {}
    for (k, rid), r in live.items():
        if r["ts"] is not None:
            times.setdefault(k, []).append((r["ts"], rid))
    out, gap = [], dt.timedelta(minutes=30)
    for k, rows in times.items():
        rows.sort()
        for (a, _), (t, rid), (b, _) in zip(rows, rows[1:], rows[2:]):
            if a < t < b and t - a <= gap and b - t <= gap and b - a > gap:
                out.append((k, rid))
    return out


def cdc_batches(seed: int) -> list[list[dict]]:
    """Four micro-batches of changes of clicks: 100 inserts (a few with a NULL time), then changes
    in a window of times moving 2 hours a batch: inserts, deletes of rows bridging two halves of a
    session (splits), other deletes, updates moving a row in time, and moves to another partition
    (NULL included) as a -U/+U pair. A row changes at most once a batch, and only where both models
    (``apply_changes`` without and with the watermark of ``watermarks``) hold it alike; updates move
    only rows at or above that watermark (a row of a closed session, evicted, is never updated
    above it: docs/sessions.md says what comes of that)."""
    rng = np.random.default_rng(seed)
    batches, next_id = [], 0
    live, held = {}, {}  # the live rows without and with the watermark

    def at(slot):
        return CDC_BASE + dt.timedelta(minutes=5 * int(slot))

    def value():
        return None if rng.random() < 0.1 else int(rng.integers(-100, 100))

    keys = [None, 1, 2, 3]
    first = []
    for _ in range(100):
        ts = None if rng.random() < 0.04 else at(rng.integers(0, 96))
        first.append(
            {"rid": next_id, "k": keys[int(rng.integers(0, 4))], "ts": ts, "x": value(), "op": "insert"}
        )
        next_id += 1
    for b in range(4):
        if b:
            mark = watermarks([*batches, []])[-1]
            lo = 24 * b
            batch, changed = [], set()
            alike = [key for key in live if held.get(key) == live[key]]
            for key in [key for key in _bridges(live) if key in alike][:3]:
                batch.append(dict(live[key], op="delete"))
                changed.add(key[1])
            for _ in range(36):
                choice = rng.random()
                free = [key for key in alike if key[1] not in changed]
                movable = [key for key in free if live[key]["ts"] is not None and live[key]["ts"] >= mark]
                if choice < 0.4 or not free:
                    k = keys[int(rng.integers(0, 4))]
                    batch.append(
                        {
                            "rid": next_id,
                            "k": k,
                            "ts": at(rng.integers(lo, lo + 96)),
                            "x": value(),
                            "op": "insert",
                        }
                    )
                    changed.add(next_id)
                    next_id += 1
                    continue
                if choice < 0.6 or not movable:
                    old = live[free[int(rng.integers(0, len(free)))]]
                    batch.append(dict(old, op="delete"))
                else:
                    old = live[movable[int(rng.integers(0, len(movable)))]]
                    new = dict(old, ts=at(rng.integers(lo, lo + 96)), x=value())
                    if choice < 0.8:
                        batch.append(dict(new, op="update"))
                    else:
                        new["k"] = keys[(keys.index(old["k"]) + int(rng.integers(1, 4))) % 4]
                        batch += [dict(old, op="-U"), dict(new, op="+U")]
                changed.add(old["rid"])
        else:
            batch, mark = first, EPOCH
        batches.append(batch)
        apply_changes(live, batch, None)
        apply_changes(held, batch, mark)
    return batches


def watermarks(batches: list) -> list:
    """Spark's watermark during each batch with a 3-hour delay: the newest time of the batches before
    it minus the delay (the epoch before any)."""
    out, newest = [], None
    for batch in batches:
        out.append(newest - DELAY if newest is not None else EPOCH)
        times = [r["ts"] for r in batch if r["ts"] is not None]
        newest = max([newest, *times] if newest is not None else times)
    return out


def apply_changes(live: dict, batch: list, mark) -> int:
    """Apply a batch to the live rows ((k, rid) -> row) as emit on update takes it: under a
    watermark ``mark`` (None: none declared) a change below it is late (counted, not applied) and
    one with a NULL time is set aside. Returns the late changes."""
    late = 0
    for r in batch:
        if mark is not None and (r["ts"] is None or r["ts"] < mark):
            late += r["ts"] is not None
            continue
        key = (r["k"], r["rid"])
        if r["op"] in ("delete", "-U"):
            live.pop(key, None)
        else:
            live[key] = {c: r[c] for c in ("rid", "k", "ts", "x")}
    return late


def test_on_update_cdc_splits_and_moves_equal_spark_sessions_after_every_micro_batch(spark, tmp_path):
    """A CDC stream (a JSON file a micro-batch): deletes of the rows bridging sessions (splits),
    updates moving rows in time, -U/+U pairs moving rows to another partition (NULL keys too), ties,
    NULL times. After every micro-batch the table the changelog leaves, keyed by (k, rid), equals
    Spark's session_window GROUP BY over the live rows joined back to each row: without a watermark,
    and with one (3 hours behind the newest time), where changes below it are late (the machine's
    late count is the model's) and closed sessions leave the state."""
    batches = cdc_batches(5)
    marks = watermarks(batches)
    src = tmp_path / "src"
    src.mkdir()
    for i, batch in enumerate(batches):
        path = src / f"part-{i}.json"
        path.write_text(
            "".join(json.dumps(dict(r, ts=r["ts"] and r["ts"].isoformat())) + "\n" for r in batch)
        )
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    # every batch's live rows in both variants, and Spark's sessions over them in one query
    expected, live, lives, late, splits = [], {"plain": {}, "watermarked": {}}, [], 0, 0
    moves = sum(r["op"] == "-U" for batch in batches for r in batch)
    for i, batch in enumerate(batches):
        bridges = set(_bridges(live["plain"]))
        splits += sum(r["op"] == "delete" and (r["k"], r["rid"]) in bridges for r in batch)
        apply_changes(live["plain"], batch, None)
        late += apply_changes(live["watermarked"], batch, marks[i])
        for v in live:
            expected += [dict(r, v=v, b=i) for r in live[v].values()]
        lives.append({v: set(rows) for v, rows in live.items()})
    assert splits > 0 and late > 0 and moves > 0
    columns = ("v", "b", "rid", "k", "ts", "x")
    rows = [tuple(r[c] for c in columns) for r in expected]
    spark.createDataFrame(rows, "v STRING, b INT, " + SCHEMA).createOrReplaceTempView("cdc_live")
    want = {(r["v"], r["b"], r["k"], r["rid"]): r for r in spark_sessions(spark, "cdc_live", ("v", "b", "k"))}
    events = spark.readStream.schema(CDC_SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))
    for variant in ("plain", "watermarked"):
        stream = events.withWatermark("ts", "3 hours") if variant == "watermarked" else events
        stream.createOrReplaceTempView("cdc_stream")
        out = overwindow.sql(
            spark,
            f"SELECT rid, k, ts, {', '.join(CALLS)} FROM cdc_stream",
            emit="on_update",
            rowKey="rid",
            opColumn="op",
        )
        table, after = {}, {}

        def apply(df, batch_id, table=table, after=after):
            for r in compat.to_arrow(df).to_pylist():
                if r["_change"] == "delete":
                    table.pop((r["k"], r["rid"]), None)
                else:
                    table[(r["k"], r["rid"])] = r
            after[batch_id] = dict(table)

        q = (
            out.writeStream.foreachBatch(apply)
            .option("checkpointLocation", str(tmp_path / variant))
            .outputMode("update")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        assert set(range(len(batches))) <= set(after), variant
        for b in range(len(batches)):
            assert set(after[b]) == lives[b][variant], (variant, b)
            for (k, rid), r in after[b].items():
                w = want[(variant, b, k, rid)]
                for n in NAMES:
                    assert (r[n] is None and w[n] is None) or _same(r[n], w[n]), (variant, b, n, r, w)
        if variant == "watermarked" and out.overwindow_counts is not None:
            assert out.overwindow_counts.take()[0] == late


def test_the_docs_view_file_sessionizes_clicks_in_both_modes_in_one_job(spark, tmp_path):
    """docs/sessions.md's view file, as written (emit on update; a micro-batch a file) and on window
    close (a 2-hour watermark added), run as one ``overwindow run`` job of both views over two files
    of clicks, the second bridging sessions of the first (none late); ``--once --final`` closes every
    session. Both tables hold every click with its session's size, start and end as Spark's
    session_window GROUP BY gives them, NULL users included."""
    (text,) = [b.code for b in blocks("docs/sessions.md") if b.kind == "toml"]
    text = text.replace("[source]\n", "[source]\nmax_files_per_trigger = 1\n")  # a micro-batch a file
    closing = text.replace('emit = "on_update"', 'emit = "on_window_close"')
    closing = closing.replace('"sessions.sqlite"', '"closed.sqlite"').replace('"chk"', '"chk_closed"')
    closing += '\n[watermark]\ncolumn = "ts"\ndelay = "2 hours"\n'
    assert 'emit = "on_window_close"' in closing and '"closed.sqlite"' in closing
    (tmp_path / "update.toml").write_text(text)
    (tmp_path / "close.toml").write_text(closing)
    rng = np.random.default_rng(3)
    base = dt.datetime(2024, 3, 1, 8, 0)
    clicks, source = [], tmp_path / "clicks"
    source.mkdir()
    for part, (lo, hi) in enumerate([(0, 48), (25, 72)]):  # 5-minute slots; the watermark: slot 24
        rows = []
        for _ in range(60):
            user = [None, "ann", "bob"][int(rng.integers(0, 3))]
            ts = base + dt.timedelta(minutes=5 * int(rng.integers(lo, hi)))
            rows.append({"click_id": len(clicks) + len(rows), "user": user, "ts": ts, "page": "p"})
        path = source / f"part-{part}.json"
        path.write_text("".join(json.dumps(dict(r, ts=r["ts"].isoformat())) + "\n" for r in rows))
        os.utime(path, (1_700_000_000 + part, 1_700_000_000 + part))
        clicks += rows
    job = subprocess.run(
        [
            sys.executable,
            "-m",
            "overwindow",
            "run",
            "update.toml",
            "close.toml",
            "--once",
            "--final",
            "--quiet",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
    )
    assert job.returncode == 0, job.stderr[-4000:]
    spark.createDataFrame(
        [(r["click_id"], r["user"], r["ts"], 1) for r in clicks],
        "rid BIGINT, k STRING, ts TIMESTAMP, x BIGINT",
    ).createOrReplaceTempView("all_view_clicks")
    want = {r["rid"]: r for r in spark_sessions(spark, "all_view_clicks")}
    assert len({(w["k"], w["began"]) for w in want.values()}) < len(want)  # sessions of several clicks
    for name in ("sessions.sqlite", "closed.sqlite"):
        con = sqlite3.connect(tmp_path / name)
        got = con.execute("SELECT click_id, user, clicks, began, ended FROM click_sessions").fetchall()
        con.close()
        assert sorted(g[0] for g in got) == sorted(want), name
        for rid, user, n, began, ended in got:
            w = want[rid]
            assert (user, n) == (w["k"], w["n"]), (name, rid)
            times = [
                dt.datetime.fromisoformat(t).astimezone(dt.timezone.utc).replace(tzinfo=None)
                for t in (began, ended)
            ]
            assert times == [w["began"].replace(tzinfo=None), w["ended"].replace(tzinfo=None)], (name, rid)
