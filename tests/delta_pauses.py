"""Runs the command line as ``python -m overwindow`` does, with the Delta (or Iceberg) sink's second
apply of each table in the run stopped where the recovery test kills the job (environment:
``DELTA_PAUSE``, and ``DELTA_PAUSED``, a folder). ``before``: the apply waits before it writes;
``after``: it waits once its commit is in the table (Spark's checkpoint has not committed the batch
yet); ``inside``: the process kills itself with SIGKILL 0 to 60 ms into the write (inside the
library's write and commit). Each stopped apply creates ``<DELTA_PAUSED>/<its view's folder>-<batch
id>`` where it stops (``after``: once the commit is done)."""

import os
import random
import signal
import sys
import threading
import time


def _patched(real):
    calls, lock = {}, threading.Lock()

    def apply(self, rows, batch_id, query_id):
        with lock:
            calls[self.name] = calls.get(self.name, 0) + 1
            stage = os.environ["DELTA_PAUSE"] if calls[self.name] == 2 else None
        folder = os.path.basename(os.path.dirname(getattr(self, "path", None) or self.catalog_location))
        marker = os.path.join(os.environ.get("DELTA_PAUSED", ""), f"{folder}-{batch_id}")
        if stage in ("before", "inside"):
            open(marker, "w").close()
        if stage == "before":
            time.sleep(600)
        if stage == "inside":
            threading.Timer(random.uniform(0, 0.06), os.kill, (os.getpid(), signal.SIGKILL)).start()
        done = real(self, rows, batch_id, query_id)
        if stage == "after":  # the commit is in the table's log
            open(marker, "w").close()
            time.sleep(600)
        return done

    return apply


if __name__ == "__main__":
    from overwindow.__main__ import main
    from overwindow.pipeline.table_formats import TableFormatSink

    TableFormatSink.apply = _patched(TableFormatSink.apply)
    sys.exit(main(sys.argv[1:]))
