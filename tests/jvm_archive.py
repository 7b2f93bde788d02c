"""A class-data-sharing archive (Java's CDS) of the classes a small `overwindow run` job loads, for
the JVMs the tests start in subprocesses (`overwindow run`, the kill tests, Spark Connect): each maps
Spark's classes from the archive where it would read, parse and verify them from the jars. Measured
on this project's 2-core machine, a PySpark start and a first grouped job: 15.7 s with Spark's JVM
defaults, 11.7 s with the C1 compiler alone (as the tests' subprocesses run), 7.9 s with this archive
beside it. Nothing Spark does changes: the classes are the jars' own, and a JVM whose class path
differs from the archive's (a test adding jars) runs without it (``-Xshare:auto``, its warning off).

The archive is built once per Java, PySpark and JVM options (a key of them names it, under
``~/.cache/overwindow-tests``), by one small job in both emit modes run with
``-XX:ArchiveClassesAtExit``, which costs about one job's run: scripts/test builds it before the
Spark tests (``python tests/jvm_archive.py``), tests/conftest.py gives it to the subprocesses'
JVMs where it is there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CACHE = Path.home() / ".cache" / "overwindow-tests"
SILENT = "-Xlog:cds*=off"  # a JVM that cannot map the archive says so on its stdout: a job's output

_VIEW = """
[source]
format = "files"
path = "events"
file_format = "json"
schema = "k STRING, ts TIMESTAMP, id BIGINT, x BIGINT"

[watermark]
column = "ts"
delay = "5 seconds"

[view]
partition_by = ["k"]
calls = ["sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s", "lag(x) OVER (ORDER BY ts) AS p"]
emit = "{emit}"
row_key = ["id"]

[sink]
kind = "sqlite"
path = "view.sqlite"
table = "v_{emit}"
checkpoint = "chk-{emit}"
"""


def options(jvm_options: str) -> str:
    """The options that give a JVM started with ``jvm_options`` the archive where it is built; ""
    without one (the JVMs then run as before). O(jars)."""
    found = archive(jvm_options, build=False)
    return f"-XX:SharedArchiveFile={found} {SILENT}" if found else ""


def archive(jvm_options: str, build: bool) -> Path | None:
    """The archive for JVMs started with ``jvm_options``, first built where it is missing and
    ``build`` is true; None without one. O(jars) once built."""
    try:
        path = CACHE / f"spark-{_key(jvm_options)}.jsa"
    except ImportError:  # no PySpark here (a batch-only install): no JVM to give it to
        return None
    if not path.exists() and not (build and _build(path, jvm_options)):
        return None
    return path


def _key(jvm_options: str) -> str:
    """What the archive depends on: the java binary, the jars PySpark starts Spark with, the
    options."""
    import pyspark

    home = os.environ.get("JAVA_HOME")  # the java Spark's launcher runs
    java = os.path.realpath(
        (home and shutil.which("java", path=os.path.join(home, "bin"))) or shutil.which("java") or "java"
    )
    jars = Path(pyspark.__file__).parent / "jars"
    stamp = [java, os.path.getmtime(java) if os.path.exists(java) else 0, pyspark.__version__, str(jars)]
    stamp += sorted((p.name, p.stat().st_size) for p in jars.glob("*.jar"))
    return hashlib.sha256(json.dumps([stamp, jvm_options]).encode()).hexdigest()[:16]


def _build(archive: Path, jvm_options: str) -> bool:
    """Runs the small job with ``-XX:ArchiveClassesAtExit``; whether the archive is there after.
    Written beside its place, then moved there: another run never maps a part-written one."""
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # no cache folder to keep it in
        return False
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / "events").mkdir()
        rows = [{"k": f"k{i % 3}", "ts": f"2024-01-01T00:00:{i:02d}", "id": i, "x": i} for i in range(40)]
        (folder / "events" / "e.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        views = []
        for emit in ("on_update", "on_window_close"):
            views.append(folder / f"{emit}.toml")
            views[-1].write_text(_VIEW.format(emit=emit))
        part = folder / "archive.jsa"
        env = dict(os.environ, SPARK_SUBMIT_OPTS=f"{jvm_options} -XX:ArchiveClassesAtExit={part} {SILENT}")
        run = subprocess.run(
            [sys.executable, "-m", "overwindow", "run", *map(str, views), "--once", "--quiet"],
            cwd=folder,
            env=env,
            capture_output=True,
            timeout=600,
        )
        if run.returncode != 0 or not part.exists():
            return False
        shutil.move(str(part), str(archive.with_suffix(".part")))
        os.replace(archive.with_suffix(".part"), archive)
    return True


if __name__ == "__main__":
    import time

    from conftest import JVM_OPTIONS

    start = time.monotonic()
    built = archive(JVM_OPTIONS, build=True)
    print(f"tests/jvm_archive.py: {built or 'no archive'} ({time.monotonic() - start:.0f} s)")
