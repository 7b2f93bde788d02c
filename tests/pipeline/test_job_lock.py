"""One job per checkpoint (issue 40, item 12): a second `overwindow run` on a checkpoint a running job
holds is refused before Spark starts, in one line naming the checkpoint and the other job; the lock
goes with its job, however that job ends."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from overwindow.__main__ import main
from overwindow.pipeline import job
from overwindow.pipeline.job_lock import hold
from overwindow.pipeline.view import load_view

VIEW = """
[source]
format = "files"
path = "events"
file_format = "json"
schema = "k STRING, ts TIMESTAMP, x BIGINT"

[view]
partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s"]
emit = "on_update"
row_key = ["ts"]

[sink]
kind = "sqlite"
path = "view.sqlite"
table = "v"
checkpoint = "chk"
"""


def _view(folder) -> str:
    (folder / "events").mkdir(parents=True, exist_ok=True)
    (folder / "events" / "a.json").write_text('{"k": "a", "ts": "2024-01-01T00:00:00", "x": 1}\n')
    path = folder / "view.toml"
    path.write_text(textwrap.dedent(VIEW))
    return str(path)


@pytest.fixture
def no_second_spark(monkeypatch):
    """A run that gets as far as starting Spark fails the test (one Spark runs: the other job's)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the second job started Spark")

    monkeypatch.setattr(job, "local_spark", refuse)


def test_a_second_job_on_a_running_jobs_checkpoint_is_refused_before_spark(
    no_spark, no_second_spark, tmp_path, capsys
):
    view = _view(tmp_path)
    first = subprocess.Popen(
        [sys.executable, "-m", "overwindow", "run", view],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
        start_new_session=True,
    )
    try:
        for line in first.stdout:  # the first job has run a batch: Spark holds the checkpoint
            if line.startswith("batch 0:"):
                break
        else:  # it ended without one
            pytest.fail(f"the first job ended with {first.wait()}: {first.stderr.read()[-3000:]}")
        assert main(["run", view, "--once"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        checkpoint = os.path.join(tmp_path, "chk")
        assert len(err) == 1, err
        assert err[0].startswith(
            f"overwindow: {view}: [sink] checkpoint (line 18): the checkpoint {checkpoint} is in use by "
            f"another job (pid {first.pid}, running {view}, since "
        ), err
        assert err[0].endswith("Stop that job first, or give this view its own [sink] checkpoint and table")
        assert main(["validate", view]) == 0  # validate reads, and runs nothing
    finally:
        os.killpg(first.pid, signal.SIGINT)
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert "stopped." in out


def test_the_lock_goes_with_its_job_however_it_ends(tmp_path):
    view = load_view(_view(tmp_path))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from overwindow.pipeline.job_lock import hold\n"
            "from overwindow.pipeline.view import load_view\n"
            "with hold([load_view(sys.argv[1])]):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(600)\n",
            view.path,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(Exception, match=f"in use by another job \\(pid {holder.pid}"):
            with hold([view]):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with hold([view]):  # killed: the system released its lock
        with pytest.raises(Exception, match=f"in use by another job \\(pid {os.getpid()}"):
            with hold([view]):
                pass
    with hold([view]):  # and released at the end of the block
        pass
