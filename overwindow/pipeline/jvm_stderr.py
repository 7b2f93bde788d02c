"""The JVM's stderr without Spark's chatter: the job starts Spark's JVM with its stderr through a pipe
that a thread copies to the job's own stderr, leaving out the lines that say nothing to a view's
user (PySpark's transformWithStateInPandas worker announcing each call with whole function reprs,
and the JVM's start-up banner, printed before the job can turn Spark's log off). Everything else
(exceptions, the workers' own errors, warnings the job prints) passes through, in order.

A line costs one match of a short compiled pattern: O(length) per line.

>>> noise("Starting Streaming TransformWithStateInPandas Python worker.")
True
>>> noise("java.lang.OutOfMemoryError: Java heap space")
False
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading

# what PySpark's transform_with_state_driver_worker prints on every first batch (each followed by a
# blank line), and the banner a local JVM prints before setLogLevel can run
_NOISE = re.compile(
    r"(Starting )?Streaming TransformWithStateInPandas Python worker"
    r"|WARNING: Using incubator modules: "
    r"|Using Spark's default log4j profile: "
    r"|Setting default log level to "
    r"|To adjust logging level use sc\.setLogLevel"
    r"|\S+ \S+ WARN (NativeCodeLoader|Utils): "
)


def noise(line: str) -> bool:
    """Whether a line of the JVM's stderr is chatter the job leaves out."""
    return _NOISE.match(line) is not None


def _copy(source: int, target: int) -> None:
    """Copies lines from ``source`` to ``target`` until end of input, leaving out noise and the
    blank line PySpark prints after each of its worker's lines."""
    after_noise = False
    with os.fdopen(source, "rb") as lines, contextlib.suppress(OSError):
        for raw in lines:
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            if noise(text) or (after_noise and not text.strip()):
                after_noise = noise(text)
                continue
            after_noise = False
            os.write(target, raw)
    os.close(target)


@contextlib.contextmanager
def filtered_for_children():
    """Processes started inside (Spark's JVM, and the Python workers it starts) write their stderr
    through the filter for as long as they run; this process's own writes pass through it only
    while inside, so a traceback at exit never waits on the thread. The thread ends when the last
    child holding the pipe exits.

    >>> import subprocess
    >>> with filtered_for_children():
    ...     subprocess.run(["true"], check=True).returncode
    0
    """
    read, write = os.pipe()
    target = os.dup(2)  # where the copies go: this process's stderr as it is now
    threading.Thread(target=_copy, args=(read, target), name="overwindow-jvm-stderr", daemon=True).start()
    saved = os.dup(2)
    sys.stderr.flush()
    os.dup2(write, 2)  # what children inherit as their stderr
    os.close(write)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
