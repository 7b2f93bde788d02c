"""One job per checkpoint (issue 40, item 12): the lock goes with its job, however that job ends. A
second `overwindow run` on the checkpoint of a running job (a Spark job) is refused before Spark
starts, in one line naming the checkpoint and the other job: tests/test_cli.py, whose job also
checks its stderr and Ctrl-C (one Spark start for the three)."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

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
