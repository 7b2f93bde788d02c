"""What a Structured Streaming checkpoint says about its query, read through Hadoop's file system
(so a checkpoint on HDFS or an object store reads as a local one): the query id Spark keeps for the
checkpoint (``metadata``), the last batch committed (``commits/``) and planned (``offsets/``), the
files the file source listed for a batch (``sources/0/``) and the shuffle partitions the query runs
on (in ``offsets/``); and the one file overwindow writes there, a batch planned to end the
input (:func:`end_input`).

These are Spark's own files, in the formats Spark has written since 2.0: ``metadata`` is one JSON
object with the query ``id``; ``commits/N`` and ``offsets/N`` exist once batch N is committed or
planned; ``sources/0/N`` (or, every ``compactInterval`` batches, ``sources/0/M.compact`` holding all
batches up to M) starts with a version line, then one JSON object per file with its ``path`` and
``batchId``.

>>> parse_source_log("v1\\n" + '{"path":"file:///in/a.json","timestamp":1,"batchId":3}', 3)
['file:///in/a.json']
"""

from __future__ import annotations

import json
import os
import re
import struct
import zlib
from dataclasses import dataclass

from overwindow.spark.grouping import partitions_count


@dataclass(frozen=True)
class CheckpointState:
    """A checkpoint as it stands: its query id (None before the query first started), the last
    committed and the last planned batch ids (None: none yet)."""

    query_id: str | None
    last_committed: int | None
    last_planned: int | None


class CheckpointFileError(RuntimeError):
    """A file of the checkpoint is not as Spark writes it (garbled, cut, or edited): the message names
    the file."""


def _damaged(path: str, why) -> CheckpointFileError:
    return CheckpointFileError(
        f"the checkpoint file {path} is not as Spark writes it ({why}): it was changed or cut short. "
        "Put back the file from a copy of the checkpoint, or start from a new checkpoint and table"
    )


def _json(text: str, path) -> dict:
    """One JSON object of a checkpoint file's line; CheckpointFileError naming ``path`` if it is none."""
    try:
        found = json.loads(text)
    except ValueError as e:
        raise _damaged(str(path), f"not JSON: {e}") from None
    if not isinstance(found, dict):
        raise _damaged(str(path), "not a JSON object")
    return found


def damaged_files(checkpoint: str) -> list[str]:
    """Why each of a local checkpoint's log files that Spark reads when the query starts (``metadata``,
    ``offsets/N``, ``commits/N``) is not as Spark writes it: a checksum Hadoop kept beside it
    (``.N.crc``, CRC32 of each 512-byte chunk) that does not match, a first line that is no version
    (``v1``), a line that is no JSON object (``-`` stands for a source without offsets). Read in
    Python, before Spark starts; Spark's own account names neither file nor cause. O(bytes in those
    files).

    >>> import tempfile, pathlib
    >>> chk = pathlib.Path(tempfile.mkdtemp())
    >>> (chk / "offsets").mkdir()
    >>> _ = (chk / "offsets" / "0").write_text('v1\\n{"batchWatermarkMs":0}\\n{"logOffset":0}')
    >>> damaged_files(str(chk))
    []
    >>> _ = (chk / "offsets" / "1").write_text('v1\\n{"batchWatermarkMs":0\\n{"logOffset":0}')
    >>> [m.split(" (")[0].replace(str(chk), "chk") for m in damaged_files(str(chk))]
    ['the checkpoint file chk/offsets/1 is not as Spark writes it']
    """
    found = []
    paths = [os.path.join(checkpoint, "metadata")]
    for folder in ("offsets", "commits"):
        where = os.path.join(checkpoint, folder)
        names = os.listdir(where) if os.path.isdir(where) else []
        paths += [os.path.join(where, n) for n in sorted(names, key=lambda n: (len(n), n)) if n.isdigit()]
    for path in paths:
        try:
            _check_file(path, metadata=path.endswith("metadata"))
        except CheckpointFileError as e:
            found.append(str(e))
        except OSError as e:
            found.append(str(_damaged(path, f"cannot be read: {e.strerror or e}")))
    return found


def _check_file(path: str, metadata: bool) -> None:
    if not os.path.isfile(path):
        if os.path.exists(path):
            raise _damaged(path, "not a file")
        return
    with open(path, "rb") as f:
        data = f.read()
    crc = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.crc")
    if os.path.isfile(crc):
        with open(crc, "rb") as f:
            sums = f.read()
        if sums[:4] == b"crc\0" and len(sums) >= 8:
            size = struct.unpack(">i", sums[4:8])[0]
            kept = [struct.unpack(">I", sums[i : i + 4])[0] for i in range(8, len(sums) - 3, 4)]
            if size > 0 and kept != [zlib.crc32(data[i : i + size]) for i in range(0, len(data), size)]:
                raise _damaged(path, f"its checksum in {crc} does not match")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _damaged(path, "not UTF-8 text") from None
    lines = text.split("\n")
    if metadata:
        _json(lines[0], path)
        return
    if not re.fullmatch(r"v[1-9][0-9]*", lines[0].strip()):
        raise _damaged(path, f"its first line is {lines[0][:40]!r}, not a version such as v1")
    for line in lines[1:]:
        if line.strip() and line.strip() != "-":
            _json(line, path)


class _Fs:
    """Hadoop's FileSystem for one checkpoint (or file-source) path, through the session's JVM."""

    def __init__(self, spark, path: str):
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()
        self._root = self._path(path)

    def _path(self, path: str):
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def child(self, *parts: str):
        return self._jvm.org.apache.hadoop.fs.Path(self._root, "/".join(parts))

    def exists(self, path) -> bool:
        return bool(path.getFileSystem(self._conf).exists(path))

    def read(self, path) -> str | None:
        """The file's text (None: there is none); CheckpointFileError naming it if it cannot be read
        (Hadoop checks the checksum it keeps beside a file)."""
        if not self.exists(path):
            return None
        try:
            stream = path.getFileSystem(self._conf).open(path)
            try:
                return self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
            finally:
                stream.close()
        except Exception as e:
            cause = getattr(e, "java_exception", None)
            raise _damaged(
                str(path), f"cannot be read: {cause.toString() if cause is not None else e}"
            ) from None

    def write(self, path, text: str) -> None:
        """A new file holding ``text`` (refused if it exists)."""
        stream = path.getFileSystem(self._conf).create(path, False)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def batch_ids(self, folder: str) -> list[int]:
        """The numbered files of a checkpoint log folder (``commits``, ``offsets``)."""
        path = self.child(folder)
        if not self.exists(path):
            return []
        names = [s.getPath().getName() for s in path.getFileSystem(self._conf).listStatus(path)]
        return sorted(int(n) for n in names if n.isdigit())


def checkpoint_state(spark, checkpoint: str) -> CheckpointState:
    """The state of the checkpoint at ``checkpoint`` (a missing folder is a new checkpoint). O(batches
    retained)."""
    fs = _Fs(spark, checkpoint)
    meta = fs.read(fs.child("metadata"))
    query_id = _json(meta.splitlines()[0], fs.child("metadata")).get("id") if meta and meta.strip() else None
    commits, offsets = fs.batch_ids("commits"), fs.batch_ids("offsets")
    return CheckpointState(query_id, commits[-1] if commits else None, offsets[-1] if offsets else None)


def parse_source_log(text: str, batch_id: int) -> list[str]:
    """The file paths (URIs) of ``batch_id`` in a file-source log file's text."""
    paths = []
    for line in text.splitlines()[1:]:
        if line.strip():
            entry = json.loads(line)
            if entry.get("batchId") == batch_id:
                paths.append(entry["path"])
    return paths


def listed_files(spark, checkpoint: str, batch_id: int, compact_interval: int = 10) -> list[str]:
    """The files the (only) file source of the query listed for ``batch_id``, as URIs."""
    fs = _Fs(spark, checkpoint)
    text = fs.read(fs.child("sources", "0", str(batch_id)))
    if text is None:  # folded into the next compact file: batch ids up to it, every compact_interval
        compact = (batch_id // compact_interval + 1) * compact_interval - 1
        text = fs.read(fs.child("sources", "0", f"{compact}.compact")) or ""
    return parse_source_log(text, batch_id)


def missing_files(spark, checkpoint: str, batch_id: int) -> list[str]:
    """The files listed for ``batch_id`` that do not exist (now): Spark skips a file that is gone when
    it builds the batch, with only a log warning, so their rows never reach the view."""
    fs = _Fs(spark, checkpoint)
    return [
        uri
        for uri in listed_files(spark, checkpoint, batch_id)
        if not fs.exists(spark._jvm.org.apache.hadoop.fs.Path(spark._jvm.java.net.URI(uri)))
    ]


def end_input(spark, checkpoint: str, watermark_ms: int) -> bool:
    """Plan one more batch of the checkpoint's query: no new rows, the event-time watermark at
    ``watermark_ms``. Spark runs a planned, uncommitted batch first when the query next starts, so
    every key whose timeout lies before ``watermark_ms`` times out in it. False (nothing written)
    for a checkpoint with no batch yet, an uncommitted batch, or a watermark already there. O(1).

    ``offsets/N`` is a version line, the batch's metadata as one JSON object (``batchWatermarkMs``
    among it), then one line per source offset: batch N+1 repeats batch N's offsets (no rows)."""
    fs = _Fs(spark, checkpoint)
    state = checkpoint_state(spark, checkpoint)
    if state.last_planned is None or state.last_planned != state.last_committed:
        return False
    text = fs.read(fs.child("offsets", str(state.last_planned)))
    planned = _with_watermark(text, watermark_ms)
    if planned is None:
        return False
    fs.write(fs.child("offsets", str(state.last_planned + 1)), planned)
    return True


def ended_batch(spark, checkpoint: str, at_ms: int) -> int | None:
    """The checkpoint's last committed batch when its watermark is at or past ``at_ms`` (the input
    was ended, ``end_input``), else None. O(batches retained)."""
    fs = _Fs(spark, checkpoint)
    committed = fs.batch_ids("commits")
    if not committed:
        return None
    path = fs.child("offsets", str(committed[-1]))
    meta = (fs.read(path) or "").split("\n")
    watermark = _json(meta[1], path).get("batchWatermarkMs", 0) if len(meta) > 1 and meta[1].strip() else 0
    return committed[-1] if watermark >= at_ms else None


def new_input_since(spark, checkpoint: str, ended: int, batch_id: int) -> bool:
    """Whether batch ``batch_id`` reads input past where batch ``ended`` stood (its sources' offsets
    differ). O(1)."""
    fs = _Fs(spark, checkpoint)
    then, now = (fs.read(fs.child("offsets", str(b))) or "" for b in (ended, batch_id))
    return then.split("\n")[2:] != now.split("\n")[2:]


def shuffle_partitions(spark, checkpoint: str) -> int | None:
    """The shuffle partitions Spark runs the checkpoint's stateful operators on: the
    ``spark.sql.shuffle.partitions`` its last planned batch recorded, which Spark keeps for the
    checkpoint's life whatever the session says; None for a checkpoint with no batch yet, or none
    recorded as a number (then Spark runs the session's, as overwindow chooses by). O(batches
    retained).

    >>> _recorded_partitions('v1\\n{"batchWatermarkMs":0,"conf":{"spark.sql.shuffle.partitions":"2"}}\\n{}')
    2
    >>> auto = 'v1\\n{"conf":{"spark.sql.shuffle.partitions":"auto"}}'
    >>> [_recorded_partitions(t) for t in ("v1", 'v1\\n{"conf":null}', 'v1\\n{}', auto)]
    [None, None, None, None]
    """
    fs = _Fs(spark, checkpoint)
    planned = fs.batch_ids("offsets")
    if not planned:
        return None
    path = fs.child("offsets", str(planned[-1]))
    return _recorded_partitions(fs.read(path) or "", path)


def _recorded_partitions(offsets: str, path="offsets") -> int | None:
    """``spark.sql.shuffle.partitions`` in an ``offsets/N`` text's metadata (None: not there)."""
    lines = offsets.split("\n")
    if len(lines) < 2 or not lines[1].strip():
        return None
    return partitions_count((_json(lines[1], path).get("conf") or {}).get("spark.sql.shuffle.partitions"))


def _with_watermark(offsets: str, watermark_ms: int) -> str | None:
    """An ``offsets/N`` text with its batch's watermark at ``watermark_ms`` (None: it is there).

    >>> _with_watermark('v1\\n{"batchWatermarkMs":5,"batchTimestampMs":9}\\n{"logOffset":3}', 7)
    'v1\\n{"batchWatermarkMs":7,"batchTimestampMs":9}\\n{"logOffset":3}'
    """
    version, meta, *sources = offsets.split("\n")
    fields = json.loads(meta)
    if fields.get("batchWatermarkMs", 0) >= watermark_ms:
        return None
    fields["batchWatermarkMs"] = watermark_ms
    return "\n".join([version, json.dumps(fields, separators=(",", ":")), *sources])
