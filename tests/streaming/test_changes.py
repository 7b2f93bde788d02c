"""CDC input: every documented spelling of an operation decodes to it in any case (README: insert,
delete, update; Debezium's c/r/u/d; Flink's +I/+U/-U/-D), anything else is counted as bad, and the
last change of an identity in a batch wins."""

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from overwindow.streaming.changes import Op, decode_ops, last_changes

SPELLINGS = {
    Op.INSERT: ["insert", "c", "r", "+I", "i", "create"],
    # Flink's before image -U deletes the row where it lands: in the row's old group when the update
    # moved it to another partition; in its own group the +U after it wins (the last change wins)
    Op.DELETE: ["delete", "d", "-D", "-U"],
    Op.UPDATE: ["update", "u", "+U"],
}


def test_every_spelling_in_any_case():
    for op, words in SPELLINGS.items():
        for word in words:
            for spelled in (word, word.upper(), word.lower(), word.capitalize()):
                assert decode_ops(pa.array([spelled])).tolist() == [op], spelled


def test_unknown_and_null_ops_are_bad():
    ops = decode_ops(pa.chunked_array([["upsert", None], ["", "x", "insert"]]))
    assert ops.tolist() == [Op.BAD, Op.BAD, Op.BAD, Op.BAD, Op.INSERT]


@given(st.lists(st.tuples(st.integers(0, 4), st.booleans()), max_size=30))
def test_the_last_kept_change_of_an_identity_wins(rows):
    ids = np.array([i for i, _ in rows], dtype=np.int64)
    keep = np.array([k for _, k in rows], dtype=bool)
    last_at = {i: at for at, (i, k) in enumerate(rows) if k}  # later rows overwrite earlier ones
    assert last_changes(ids, keep).tolist() == [last_at.get(i) == at for at, (i, _) in enumerate(rows)]
