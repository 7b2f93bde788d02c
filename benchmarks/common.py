"""What every benchmark script shares: the machine note, rewriting its own section of its topic's
page (docs/benchmarks/*.md; BENCHMARKS.md is their index), and a Spark session set up like the
tests'."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "benchmarks"  # one page per topic; BENCHMARKS.md indexes them


def machine_note(*packages: str, measured: bool = True) -> list[str]:
    """Two Markdown bullets: the machine, and the versions of Python, ``packages`` and (``measured``)
    overwindow's git revision (marked when overwindow/ has uncommitted changes)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass

    versions = ", ".join(f"{name} {metadata.version(name)}" for name in packages)
    return [
        f"- Machine: {os.cpu_count()} cores ({cpu}){mem}, {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}, {versions}"
        + (f"; overwindow at git `{revision()}`" if measured else ""),
    ]


def revision() -> str:
    """overwindow's git revision, short (marked when overwindow/ has uncommitted changes)."""

    def git(*cmd: str) -> str:
        try:
            return subprocess.run(
                ["git", "-C", str(ROOT), *cmd], capture_output=True, text=True, check=False
            ).stdout.strip()
        except OSError:
            return ""

    rev = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--", "overwindow"):
        rev += " + uncommitted changes under overwindow/"
    return rev


def section_head(
    begin: str, title: str, script: str, command: str, seconds: float, *packages: str, measured: bool = True
) -> list[str]:
    """The first lines of a script-written section of a topic page: marker, title, who writes it,
    the command, the machine and versions (``packages``); ``measured``: overwindow's revision now is
    the one measured (False: a section written from records, which name their own)."""
    return [
        begin,
        f"## {title}",
        "",
        f"_This section is written by `{script}`; edit the script, not the text._",
        "",
        f"- Command: `{command}` (run from the repository root; total wall time {seconds:.0f} s)",
        *machine_note(*packages, measured=measured),
    ]


def page_of(begin: str) -> Path:
    """The topic page under docs/benchmarks/ that holds the ``begin`` marker (a script's section
    lives on exactly one). O(pages)."""
    found = [page for page in sorted(PAGES.glob("*.md")) if begin in page.read_text()]
    if len(found) != 1:
        where = ", ".join(str(p.relative_to(ROOT)) for p in found) or "no page"
        raise SystemExit(
            f"{begin} is on {where}: put the section's two markers on the one topic page under "
            f"{PAGES.relative_to(ROOT)}/ it belongs to (and list the page in BENCHMARKS.md and mkdocs.yml)"
        )
    return found[0]


def write_section(section: str, begin: str, end: str, path: Path | None = None) -> Path:
    """Replace the text between the ``begin`` and ``end`` markers (``section`` includes them) on
    ``path``, by default the topic page holding them (``page_of``); return the page written."""
    path = path or page_of(begin)
    text = path.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{path} has no {begin} ... {end} markers to write between")
    head, rest = text.split(begin, 1)
    path.write_text(head + section + rest.split(end, 1)[1])
    return path


def publish(section: str, begin: str, end: str, write: bool) -> None:
    """Print a script's section and, when ``write``, put it on its topic page (``write_section``)."""
    print(section)
    if write:
        print(f"wrote {write_section(section, begin, end).relative_to(ROOT)}")


def spark_session(app: str, warehouse: Path, max_records: int = 10_000, driver_memory: str = "4g"):
    """A local[2] session with the tests' settings (UTC, 2 shuffle partitions, Arrow without
    fallback, no UI), workers on this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from overwindow.spark.adapter import WORKER_WARNINGS

    session = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(max_records))
        .config("spark.sql.streaming.minBatchesToRetain", "5")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.host", "127.0.0.1")
        .config(*WORKER_WARNINGS)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.sparkContext.addPyFile(__file__)  # the workers unpickle Passthrough from this module
    return session


class Passthrough:
    """The no-op stateful function: yields its input chunks unchanged and stores one binary value
    per key, read and rewritten whole every call: one byte; or (``bytes_per_row``) a blob that grows
    by that many bytes per row seen, as a per-key state of all rows would; or, with ``window`` rows
    too, a blob of ``bytes_per_row`` x (the call's rows + ``window``), as a state holding the rows
    not yet released plus a frame's history would."""

    def __init__(self, bytes_per_row: int = 0, window: int | None = None):
        self.bytes_per_row, self.window = bytes_per_row, window

    def __call__(self, key, pdfs, state):
        held = state.get[0] if state.exists else b"\x00"
        rows = 0
        for pdf in pdfs:
            rows += len(pdf)
            yield pdf
        if self.window is not None:
            state.update((bytes((rows + self.window) * self.bytes_per_row),))
        else:
            state.update((held + bytes(rows * self.bytes_per_row),))


def passthrough(grouped, schema, output_mode: str, bytes_per_row: int = 0, window: int | None = None):
    """``grouped.applyInPandasWithState`` with the no-op function: the floor Spark imposes on any
    applyInPandasWithState query (event-time timeouts in append mode, none in update mode)."""
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark.sql.types import BinaryType, StructField, StructType

    state = StructType([StructField("state", BinaryType(), False)])
    timeout = GroupStateTimeout.EventTimeTimeout if output_mode == "append" else GroupStateTimeout.NoTimeout
    return grouped.applyInPandasWithState(
        Passthrough(bytes_per_row, window), schema, state, output_mode, timeout
    )


def tws_passthrough(grouped, schema):
    """``grouped.transformWithStateInPandas`` with a no-op processor (yields its input, keeps one
    byte per key in a ValueState): the floor Spark imposes on any transformWithStateInPandas query,
    which the chunked state layout runs on. Needs the RocksDB state store (``adapter.use_rocksdb``)."""
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    class NoOp(StatefulProcessor):
        def init(self, handle):
            self.held = handle.getValueState("held", StructType([StructField("value", BinaryType())]))

        def handleInputRows(self, key, rows, timerValues):
            if not self.held.exists():
                self.held.update((b"\x00",))
            yield from rows

        def close(self):
            pass

    return grouped.transformWithStateInPandas(NoOp(), schema, "Update", "None")
