"""Random changelogs for the sink tests: upserts and deletes keyed by (k, id) with NULLs in both key
columns, and the table they leave (a dict in which None is a key value like any other, as SQL's
PARTITION BY puts NULL keys in one partition)."""

import datetime as dt
import decimal

import pyarrow as pa
from hypothesis import strategies as st

KEY_VALUES = st.sampled_from(["a", "b", None])
IDS = st.sampled_from([1, 2, None])
CHANGE = st.tuples(
    KEY_VALUES, IDS, st.one_of(st.none(), st.floats(-5, 5)), st.sampled_from(["upsert", "delete"])
)
CHANGELOG = st.lists(st.lists(CHANGE, max_size=8), min_size=1, max_size=5)


def batches(changelog):
    """The changelog's micro-batches as the tables an emit-on-update view hands its sink (each key
    changes at most once a batch, as the state machine emits it)."""
    for changes in changelog:
        last = {(k, i): (s, c) for k, i, s, c in changes}
        yield pa.table(
            {
                "k": pa.array([k for k, _ in last], pa.string()),
                "id": pa.array([i for _, i in last], pa.int64()),
                "s": pa.array([s for s, _ in last.values()], pa.float64()),
                "_change": pa.array([c for _, c in last.values()], pa.string()),
            }
        )


def model(changelog) -> list[tuple]:
    """The table the changelog leaves: rows (k, id, s), sorted with None first."""
    table = {}
    for changes in changelog:
        for k, i, s, c in changes:
            if c == "delete":
                table.pop((k, i), None)
            else:
                table[(k, i)] = s
    return sorted(((k, i, s) for (k, i), s in table.items()), key=sort_key)


def sort_key(row):
    return tuple((v is not None, v if v is not None else 0) for v in row)


# the column types a view writes (Arrow, as the job hands them to its sink), and for each another
# type a table could hold instead
VIEW_TYPES = [
    pa.int32(),
    pa.int64(),
    pa.float64(),
    pa.bool_(),
    pa.string(),
    pa.decimal128(12, 2),
    pa.decimal128(30, 5),
    pa.timestamp("us"),
    pa.timestamp("us", tz="UTC"),
    pa.date32(),
    pa.duration("us"),
    pa.binary(),
]
SCHEMAS = st.lists(st.sampled_from(VIEW_TYPES), min_size=1, max_size=6).map(
    lambda types: pa.schema(
        [("k", pa.string())] + [(f"c{i}", t) for i, t in enumerate(types)] + [("_change", pa.string())]
    )
)


def one_row(schema: pa.Schema) -> pa.Table:
    """A row of NULLs (the key "a") in ``schema``, upserted."""
    return pa.table(
        {
            f.name: pa.array(["a"])
            if f.name == "k"
            else pa.array(["upsert"])
            if f.name == "_change"
            else pa.nulls(1, f.type)
            for f in schema
        },
        schema=schema,
    )


# a row of the types a view writes that formats keep in their own ways: DECIMAL with 30 digits, a
# date before 1970, UTC and naive timestamps, binary, a boolean
TYPED_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("d", pa.decimal128(30, 4)),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("b", pa.binary()),
        ("f", pa.bool_()),
        ("_change", pa.string()),
    ]
)
TYPED_ROW = {
    "id": 1,
    "d": decimal.Decimal("12345678901234567890123456.7891"),
    "day": dt.date(1901, 12, 31),
    "ts": dt.datetime(1969, 7, 20, 20, 17, 40, 5, tzinfo=dt.timezone.utc),
    "ntz": dt.datetime(2024, 3, 15, 18, 0, 36),
    "b": b"\x00\xff",
    "f": True,
    "_change": "upsert",
}


# a view's columns, and tables drifted from them, each with the words of its refusal after the
# table's name
SCHEMA = pa.schema([("k", pa.string()), ("id", pa.int64()), ("s", pa.float64()), ("_change", pa.string())])
DRIFTED = [
    (pa.table({"k": ["a"], "id": [1]}), " has no column s (the view writes DOUBLE)"),
    (pa.table({"k": ["a"], "id": [1], "s": [1]}), ": column s is BIGINT there, the view writes DOUBLE"),
    (
        pa.table({"k": ["a"], "id": pa.array([1], pa.int32()), "s": [1.0]}),
        ": column id is INT there, the view writes BIGINT",
    ),
]
