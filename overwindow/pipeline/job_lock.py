"""One job per checkpoint: ``overwindow run`` holds a lock in each view's local checkpoint folder
while it runs, so a second job on the same checkpoint is refused before Spark starts, in one line
naming the checkpoint and the job that holds it.

Two Spark queries on one checkpoint both plan the same batches: the second dies on Spark's
``Rename destination .../_metadata/schema already exists`` or, worse, both write the sink. The lock
is ``flock`` on ``overwindow-job.lock`` in the checkpoint folder, which the system releases when
the process ends, however it ends (SIGKILL too): nothing stale is left to clean. The file holds
who holds it (pid, host, view files, start time) for the message. A checkpoint on a remote file
system (``s3a://...``) is not locked. O(views).

>>> import tempfile, os
>>> from overwindow.pipeline.view import View
>>> chk = tempfile.mkdtemp()
>>> v = View("v.toml", {}, None, [], [], "on_update", None, None, {}, chk)
>>> with hold([v]):
...     try:
...         with hold([v]):
...             pass
...     except CheckpointInUseError as e:
...         print(str(e).replace(chk, "chk").split(" (pid")[0])
v.toml: [sink] checkpoint: the checkpoint chk is in use by another job
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time

from overwindow.pipeline.view import View, ViewFileError, is_uri

FILE = "overwindow-job.lock"


class CheckpointInUseError(ViewFileError):
    """Another job runs on a view's checkpoint."""


@contextlib.contextmanager
def hold(views: list[View]):
    """Lock each view's local checkpoint for the block (creating its folder); raises
    CheckpointInUseError, one line per checkpoint another job holds, and holds none then."""
    held, problems = [], []
    try:
        for view in views:
            if is_uri(view.checkpoint):
                continue
            os.makedirs(view.checkpoint, exist_ok=True)
            fd = os.open(os.path.join(view.checkpoint, FILE), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                problems.append(_in_use(view, _holder(fd)))
                os.close(fd)
                continue
            held.append(fd)
            _write_holder(fd, views)
        if problems:
            raise CheckpointInUseError("\n".join(problems))
        yield
    finally:
        for fd in held:  # closing releases the lock; the file stays (removing it would race)
            os.close(fd)


def _write_holder(fd: int, views: list[View]) -> None:
    me = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "views": [os.path.abspath(v.path) for v in views],
        "since": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(me).encode(), 0)


def _holder(fd: int) -> dict:
    """Who holds the lock, as far as its file says (empty while the holder is writing it)."""
    try:
        found = json.loads(os.pread(fd, 1 << 16, 0) or b"{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _in_use(view: View, holder: dict) -> str:
    who = ", ".join(
        part
        for part in (
            f"pid {holder['pid']}" if "pid" in holder else "",
            f"on {holder['host']}" if holder.get("host") not in (None, socket.gethostname()) else "",
            f"running {' '.join(holder['views'])}" if holder.get("views") else "",
            f"since {holder['since']}" if "since" in holder else "",
        )
        if part
    )
    return (
        f"{view.where('sink', 'checkpoint')}: the checkpoint {view.checkpoint} is in use by another job"
        f"{f' ({who})' if who else ''}: two jobs on one checkpoint would plan the same batches. Stop "
        "that job first, or give this view its own [sink] checkpoint and table"
    )
