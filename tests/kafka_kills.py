"""Runs the command line as ``python -m overwindow`` does, the Kafka sink's n-th commit
(environment: ``KAFKA_KILL_AT_COMMIT``) stopped by SIGKILL once the batch's records are on the broker
and before its transaction commits."""

import os
import signal
import sys

if __name__ == "__main__":
    from overwindow.__main__ import main
    from overwindow.pipeline.kafka_sink import KafkaSink

    real, calls = KafkaSink._commit, []

    def commit(self):
        calls.append(1)
        if len(calls) == int(os.environ["KAFKA_KILL_AT_COMMIT"]):
            os.kill(os.getpid(), signal.SIGKILL)
        real(self)

    KafkaSink._commit = commit
    sys.exit(main(sys.argv[1:]))
