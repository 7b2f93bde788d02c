"""The Nexmark window queries of issue 44 over bids, in overwindow's SQL and in Flink SQL.

Each query: its overwindow SQL over the streaming view ``bids`` (``overwindow.sql``), the emit
modes it runs in, and the Flink SQL selecting the same rows from the table ``bid`` (Flink emits
Top-N and deduplication as updates, and ``OVER`` aggregates once the watermark passes a row, as
overwindow's window close). Flink takes one window per SELECT and ``LAG`` only without a frame, so
q6's two windows are two SELECTs into two sinks of one job (``flink`` is then a tuple). Both
engines read bids with the watermark ``dateTime - 4 seconds``, as Nexmark's Flink DDL declares.
"""

from __future__ import annotations

from dataclasses import dataclass

WATERMARK_S = 4
# the key buckets overwindow chooses on 2 shuffle partitions (spread over them), given to q19 whose
# ORDER BY is not the watermarked time (unchosen, it would run a Python call per auction)
KEY_BUCKETS = 16
BID_COLUMNS = "auction, bidder, price, channel, url, dateTime, extra"
FLINK_COLUMNS = BID_COLUMNS.replace("dateTime", "`dateTime`")


@dataclass(frozen=True)
class Query:
    name: str
    what: str
    overwindow: str
    emits: tuple
    flink: tuple  # SELECT statements, each into a sink of its own, in one job
    # Spark's own streaming SQL for the same rows where Spark has one (update mode), for the
    # ceiling any operator hosted on Spark works under: q18 as Spark's streaming aggregate
    spark: str | None = None
    keys: tuple = ()  # its PARTITION BY columns
    key_buckets: int | None = None  # overwindow's keyBuckets given (None: the buckets it chooses)


QUERIES = (
    Query(
        "q18",
        "a bidder's latest bid per auction (deduplication)",
        f"SELECT * FROM (SELECT {BID_COLUMNS}, row_number() OVER "
        "(PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rn FROM bids) WHERE rn = 1",
        ("on_update",),
        (
            f"SELECT {FLINK_COLUMNS} FROM (SELECT *, ROW_NUMBER() OVER "
            "(PARTITION BY bidder, auction ORDER BY `dateTime` DESC) AS rn FROM bid) WHERE rn <= 1",
        ),
        "SELECT bidder, auction, max_by(struct(price, channel, url, dateTime, extra), dateTime) AS bid "
        "FROM bids GROUP BY bidder, auction",
        keys=("bidder", "auction"),
    ),
    Query(
        "q19",
        "the 10 highest bids per auction (Top-N)",
        f"SELECT * FROM (SELECT {BID_COLUMNS}, row_number() OVER "
        "(PARTITION BY auction ORDER BY price DESC) AS rn FROM bids) WHERE rn <= 10",
        ("on_update",),
        (
            f"SELECT {FLINK_COLUMNS}, rn FROM (SELECT *, ROW_NUMBER() OVER "
            "(PARTITION BY auction ORDER BY price DESC) AS rn FROM bid) WHERE rn <= 10",
        ),
        keys=("auction",),
        key_buckets=KEY_BUCKETS,
    ),
    Query(
        "q6",
        "avg(price) of a bidder's last 10 bids, and price - lag(price)",
        "SELECT auction, bidder, price, dateTime, "
        "avg(price) OVER (PARTITION BY bidder ORDER BY dateTime "
        "ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS avg10, "
        "price - lag(price) OVER (PARTITION BY bidder ORDER BY dateTime) AS diff FROM bids",
        ("on_window_close", "on_update"),
        (
            "SELECT auction, bidder, price, `dateTime`, AVG(CAST(price AS DOUBLE)) OVER (PARTITION BY bidder "
            "ORDER BY `dateTime` ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS avg10 FROM bid",
            "SELECT auction, bidder, price, `dateTime`, "
            "price - LAG(price) OVER (PARTITION BY bidder ORDER BY `dateTime`) AS diff FROM bid",
        ),
        keys=("bidder",),
    ),
    Query(
        "range",
        "bids per auction in the last 10 seconds (RANGE frame)",
        "SELECT auction, bidder, price, dateTime, count(*) OVER (PARTITION BY auction ORDER BY dateTime "
        "RANGE BETWEEN INTERVAL 10 SECONDS PRECEDING AND CURRENT ROW) AS bids10s FROM bids",
        ("on_window_close", "on_update"),
        (
            "SELECT auction, bidder, price, `dateTime`, COUNT(*) OVER (PARTITION BY auction "
            "ORDER BY `dateTime` RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) "
            "AS bids10s FROM bid",
        ),
        keys=("auction",),
    ),
)
