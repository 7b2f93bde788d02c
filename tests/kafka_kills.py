"""Runs the command line as ``python -m overwindow`` does, stopped by SIGKILL right after the Kafka
sink's n-th flush (environment: ``KAFKA_KILL_AT_FLUSH``; a batch flushes twice: its records, then
its record of the batch), so an odd n stops a batch whose records are on the broker and whose
transaction holds no record of it yet."""

import os
import signal
import sys

if __name__ == "__main__":
    from overwindow.__main__ import main
    from overwindow.pipeline.kafka_sink import KafkaSink

    real, calls = KafkaSink._flush, []

    def flush(self, batch_id):
        real(self, batch_id)
        calls.append(batch_id)
        if len(calls) == int(os.environ["KAFKA_KILL_AT_FLUSH"]):
            os.kill(os.getpid(), signal.SIGKILL)

    KafkaSink._flush = flush
    sys.exit(main(sys.argv[1:]))
