"""The JVM's stderr through the job's filter (issue 40, item 20): Spark's chatter left out, every
other line kept in order. A child process stands for the JVM; the CLI-level check that a real job's
stderr holds only what overwindow says is in tests/test_cli.py."""

import json
import subprocess
import sys
import textwrap

import pytest

from overwindow.pipeline.jvm_stderr import noise

# what PySpark 4.3's transform_with_state_driver_worker and a local JVM print, as seen on this machine
CHATTER = [
    "WARNING: Using incubator modules: jdk.incubator.vector",
    "Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties",
    "26/11/29 13:23:24 WARN Utils: Your hostname, vm, resolves to a loopback address: 127.0.0.1",
    'Setting default log level to "WARN".',
    "To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).",
    "26/11/29 13:23:26 WARN NativeCodeLoader: Unable to load native-hadoop library for your platform",
    "Starting Streaming TransformWithStateInPandas Python worker.",
    "",
    "Streaming TransformWithStateInPandas Python worker Starting execution of UDF: <bound method "
    "TransformWithStateInPandasUdfUtils.transformWithStateUDF of <object at 0x7f3811f9dd10>>.",
    "",
]
KEPT = [
    "26/11/29 13:23:30 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 7)",
    "java.lang.OutOfMemoryError: Java heap space",
    "",  # a blank line of its own is kept
    "Traceback (most recent call last):",
    "  Streaming TransformWithStateInPandas Python worker, quoted inside a line, is kept",
    "overwindow: a warning of the job's own",
]


@pytest.mark.parametrize("line", [line for line in CHATTER if line])
def test_chatter_is_noise(line):
    assert noise(line)


@pytest.mark.parametrize("line", [line for line in KEPT if line])
def test_what_says_something_is_not_noise(line):
    assert not noise(line)


def test_a_child_s_stderr_loses_the_chatter_and_keeps_the_rest_in_order(tmp_path):
    """A child started inside ``filtered_for_children`` prints chatter and other lines interleaved
    (and goes on printing after the block ends, as the JVM does); the parent's own stderr after the
    block is untouched."""
    # chatter and kept lines interleaved; KEPT's blank line follows a kept line (a blank line right
    # after chatter is taken for the chatter's own)
    lines = [CHATTER[0], *KEPT[:3], *CHATTER[1:6], *KEPT[3:5], *CHATTER[6:], KEPT[5]]
    (tmp_path / "lines.json").write_text(json.dumps(lines))
    (tmp_path / "child.py").write_text(
        textwrap.dedent("""
            import json, sys, time
            for i, line in enumerate(json.load(open(sys.argv[1]))):
                print(line, file=sys.stderr, flush=True)
                time.sleep(0.01 if i % 3 else 0)
        """)
    )
    parent = textwrap.dedent("""
        import subprocess, sys, time
        from overwindow.pipeline.jvm_stderr import filtered_for_children
        with filtered_for_children():
            child = subprocess.Popen([sys.executable, sys.argv[1], sys.argv[2]])
        child.wait()
        time.sleep(0.3)  # the copying thread drains the pipe
        print("the parent, after", file=sys.stderr)
    """)
    run = [sys.executable, "-c", parent, str(tmp_path / "child.py"), str(tmp_path / "lines.json")]
    err = subprocess.run(run, capture_output=True, text=True, check=True).stderr
    assert err.splitlines() == [*KEPT, "the parent, after"]
