"""The job's steps that need no Spark session (tests/test_cli.py runs the job on Spark)."""

import pytest
from test_view import GOOD, write

from overwindow.pipeline import job
from overwindow.pipeline.view import load_view

KEY = "spark.sql.shuffle.partitions"


class _Session:
    """A session's conf, as much of it as ``job._checkpoint_partitions`` uses."""

    def __init__(self, partitions: str):
        self.conf = self
        self.values = {KEY: partitions}

    def get(self, key):
        return self.values[key]

    def set(self, key, value):
        self.values[key] = value


def test_a_started_checkpoints_partitions_hold_while_the_query_is_built(tmp_path, monkeypatch):
    """Chosen buckets are built for the partitions Spark keeps for the checkpoint, and the session's
    own setting is back afterwards, also when building fails."""
    monkeypatch.setattr(job, "shuffle_partitions", lambda spark, checkpoint: 2)
    view, session = load_view(write(tmp_path, GOOD)), _Session("8")
    with job._checkpoint_partitions(session, view):
        assert session.get(KEY) == "2"
    assert session.get(KEY) == "8"
    with pytest.raises(RuntimeError), job._checkpoint_partitions(session, view):
        raise RuntimeError("the query could not be built")
    assert session.get(KEY) == "8"
    monkeypatch.setattr(job, "shuffle_partitions", lambda spark, checkpoint: None)  # not started
    with job._checkpoint_partitions(session, view):
        assert session.get(KEY) == "8"


@pytest.mark.parametrize(
    "change",
    [
        ('emit = "on_window_close"', 'emit = "on_window_close"\nkey_buckets = 64'),
        ('emit = "on_window_close"', 'emit = "on_window_close"\nkey_buckets = "per key"'),
        ('checkpoint = "chk"', 'checkpoint = "s3a://bucket/chk"'),
    ],
)
def test_the_checkpoint_is_not_read_for_buckets_given_per_key_or_remote(tmp_path, monkeypatch, change):
    """Buckets given or a state per key do not follow the partitions; a remote checkpoint keeps no
    record of how its buckets came about, so its count follows the session's."""

    def unread(spark, checkpoint):
        raise AssertionError(f"{checkpoint} read")

    monkeypatch.setattr(job, "shuffle_partitions", unread)
    view, session = load_view(write(tmp_path, GOOD.replace(*change))), _Session("8")
    with job._checkpoint_partitions(session, view):
        assert session.get(KEY) == "8"
