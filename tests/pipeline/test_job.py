"""The job's steps that need no Spark session (tests/test_cli.py runs the job on Spark)."""

import pytest
from test_view import GOOD, write

from overwindow.pipeline import job
from overwindow.pipeline.view import load_view
from overwindow.spark.grouping import BUCKET_VALUES

KEY = "spark.sql.shuffle.partitions"


class _Session:
    """A session's conf, as much of it as ``job._as_started`` uses."""

    def __init__(self, partitions: str):
        self.conf = self
        self.values = {KEY: partitions}

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        self.values[key] = value

    def unset(self, key):
        del self.values[key]


def test_a_started_checkpoints_partitions_hold_while_the_query_is_built(tmp_path, monkeypatch):
    """Chosen buckets are built for the partitions Spark keeps for the checkpoint, and the session's
    own setting is back afterwards, also when building fails."""
    monkeypatch.setattr(job, "shuffle_partitions", lambda spark, checkpoint: 2)
    view, session = load_view(write(tmp_path, GOOD)), _Session("8")
    with job._as_started(session, view):
        assert session.get(KEY) == "2"
    assert session.get(KEY) == "8"
    with pytest.raises(RuntimeError), job._as_started(session, view):
        raise RuntimeError("the query could not be built")
    assert session.get(KEY) == "8"
    monkeypatch.setattr(job, "shuffle_partitions", lambda spark, checkpoint: None)  # not started
    with job._as_started(session, view):
        assert session.get(KEY) == "8"


@pytest.mark.parametrize("values", ["numbered", "spread"])
def test_the_bucket_values_a_checkpoint_was_started_with_hold_while_the_query_is_built(
    tmp_path, monkeypatch, values
):
    """What the buckets overwindow chooses group by, as the view's checkpoint was started, is the
    session's while its query is built; the session's own (none) is back afterwards."""
    monkeypatch.setattr(job, "shuffle_partitions", lambda spark, checkpoint: None)
    view, session = load_view(write(tmp_path, GOOD)), _Session("8")
    view.bucket_values = values
    with job._as_started(session, view):
        assert session.get(BUCKET_VALUES) == values
    assert session.get(BUCKET_VALUES) is None


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
    with job._as_started(session, view):
        assert session.get(KEY) == "8"


class _Query:
    """A streaming query that has ended, failed with ``failure`` (None: it ran to its end)."""

    isActive = False

    def __init__(self, failure: Exception | None):
        self.failure = failure

    def exception(self):
        return self.failure

    def stop(self):
        pass


WORKER_LATE = "org.apache.spark.SparkException: Python worker failed to connect back."


@pytest.mark.parametrize(
    "starts, restarts, failure",
    [
        # the second start runs: one restart, no failure
        ([_Query(RuntimeError(WORKER_LATE)), _Query(None)], 1, None),
        # the worker misses its time at every start: 3 restarts, then the view fails
        ([_Query(RuntimeError(WORKER_LATE))] * 4, 3, "Python worker failed to connect back"),
        # another failure is the view's failure: no restart
        ([_Query(RuntimeError("java.lang.OutOfMemoryError: Java heap space"))], 0, "OutOfMemoryError"),
        # the view cannot start again (its sink is gone): that is its failure
        ([_Query(RuntimeError(WORKER_LATE)), ValueError("the table's folder is gone")], 1, "folder is gone"),
    ],
)
def test_a_view_starts_again_only_when_a_python_worker_missed_its_start(
    tmp_path, monkeypatch, capsys, starts, restarts, failure
):
    """What the job does with each way a view's query ends (no Spark: the queries are stand-ins)."""
    view = load_view(write(tmp_path, GOOD))
    left = list(starts)

    def start_view(spark, v, once, quiet, json_lines=False, name=None, sink_errors=None, lost=None):
        started = left.pop(0)
        if isinstance(started, Exception):
            raise started
        return started, None

    monkeypatch.setattr(job, "start_view", start_view)
    failed: dict = {}
    assert job._run_round(None, [view], True, True, False, False, {}, failed) is False
    assert not left  # every start the case holds was made
    err = capsys.readouterr().err
    assert err.count("the view starts again from its checkpoint") == restarts
    if failure is None:
        assert failed == {}
    else:
        assert list(failed) == [view.path] and failure in failed[view.path]
