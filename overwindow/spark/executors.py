"""What Spark's Python workers need to run overwindow: the right interpreter on local masters, and
the package itself on clusters.

Local masters (``local``, ``local[2]``, ...) start their Python workers with ``PYSPARK_PYTHON``, or
``python3`` from PATH when it is unset: a script run as ``.venv/bin/python script.py`` would have its
workers start a Python without overwindow (``ModuleNotFoundError`` a minute later).
:func:`use_running_python` makes them run the interpreter the driver runs, unless the user chose one.

On a cluster the workers' Python is the cluster's: :func:`ship` sends overwindow there, as a zip of
the package and its pure-Python dependencies (sqlglot, sortedcontainers) added to the session
(``SparkContext.addPyFile``; classic Spark only: through Spark Connect the server's workers need
overwindow installed). numpy, pandas and pyarrow must be on the workers already, as for any pandas
UDF. ``transformWithStateInPandas`` (the chunked layout, windows over several PARTITION BY) also
starts that interpreter on the driver's machine, to learn the processor's state variables, and
that process sees no file added to the session: :func:`on_driver_path` puts the zip on the
``PYTHONPATH`` the session's JVM starts with.

>>> sorted(SHIPPED)
['overwindow', 'sortedcontainers', 'sqlglot']
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
import zipfile

from overwindow.spark import compat

SHIPPED = ("overwindow", "sqlglot", "sortedcontainers")
log = logging.getLogger("overwindow")


def is_local(master: str | None) -> bool:
    """Whether a master URL runs executors inside the driver's machine and process tree.

    >>> is_local("local[2]"), is_local("local-cluster[2,1,1024]"), is_local("spark://h:7077")
    (True, False, False)
    """
    return bool(master) and (master == "local" or master.startswith("local["))


def use_running_python(session) -> None:
    """On a local master, run Python workers with ``sys.executable`` when the user has set neither
    ``PYSPARK_PYTHON`` nor ``spark.pyspark.python`` (PySpark's default is ``python3`` from PATH),
    and warn of Spark's default shuffle partitions (:func:`warn_default_partitions`). Classic
    sessions only: a Spark Connect server chose its workers' Python when it started."""
    sc = getattr(session, "_sc", None)
    if sc is None or not is_local(sc.master):
        return
    warn_default_partitions(session)
    if "PYSPARK_PYTHON" in os.environ:
        return
    if sc.getConf().get("spark.pyspark.python") is not None:
        return
    if sc.pythonExec != sys.executable:
        log.info("overwindow: Python workers run %s (PYSPARK_PYTHON was not set)", sys.executable)
        sc.pythonExec = sys.executable  # read by every Python function created from now on


SPARK_DEFAULT_PARTITIONS = "200"


def warn_default_partitions(session) -> None:
    """A warning (``UserWarning``, once per place as Python shows them) when a local session runs
    stateful streaming queries on Spark's default 200 shuffle partitions: each micro-batch then runs
    200 tasks of a Python worker on the machine's few cores, minutes for a few hundred rows, and a
    checkpoint keeps the partitions it started with for its life. ``overwindow run`` sets 2. O(1)."""
    import warnings

    if session.conf.get("spark.sql.shuffle.partitions", None) != SPARK_DEFAULT_PARTITIONS:
        return
    warnings.warn(
        "spark.sql.shuffle.partitions is Spark's default 200 on a local master: every micro-batch of "
        "a window query runs 200 tasks (minutes for a few hundred rows), and a checkpoint keeps its "
        "partitions for life. Set it to the cores before a query first runs, e.g. "
        'SparkSession.builder.config("spark.sql.shuffle.partitions", "2") (overwindow run sets 2)',
        UserWarning,
        stacklevel=2,  # the overwindow call that builds the query: said once
    )


# what a local master's Python workers import: overwindow and the libraries of a pandas UDF
WORKER_MODULES = ("numpy", "pandas", "pyarrow", "overwindow")
_PROBE = (
    "import importlib.util, sys\n"
    "print('%d.%d' % sys.version_info[:2])\n"
    "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))\n"
)


class WorkerPythonError(ValueError):
    """``PYSPARK_PYTHON`` names a Python that cannot run overwindow's workers."""


def check_worker_python(master: str) -> None:
    """On a local master, before the session starts: the ``PYSPARK_PYTHON`` the user set runs, is
    this Python's version (Spark refuses a worker of another) and finds WORKER_MODULES; else
    WorkerPythonError in one line naming ``PYSPARK_PYTHON``. Without the check the first micro-batch
    fails minutes later with ``ModuleNotFoundError`` deep in Spark's trace. One process start
    (some 50 ms); nothing when ``PYSPARK_PYTHON`` is unset or is this interpreter.

    >>> saved = os.environ.pop("PYSPARK_PYTHON", None)
    >>> check_worker_python("local[2]")  # unset: the job runs this Python
    >>> os.environ["PYSPARK_PYTHON"] = "/nowhere/python"
    >>> try:
    ...     check_worker_python("local[2]")
    ... except WorkerPythonError as e:
    ...     print(e)  # doctest: +ELLIPSIS
    PYSPARK_PYTHON=/nowhere/python cannot run overwindow's Python workers: ...
    >>> check_worker_python("spark://h:7077")  # a cluster's workers: not this machine's
    >>> _ = os.environ.pop("PYSPARK_PYTHON") if saved is None else os.environ.update(PYSPARK_PYTHON=saved)
    """
    import subprocess

    python = os.environ.get("PYSPARK_PYTHON")
    if not is_local(master) or not python or python == sys.executable:
        return
    try:
        probe = subprocess.run(
            [python, "-c", _PROBE, *WORKER_MODULES], capture_output=True, text=True, timeout=120
        )
        out = probe.stdout.splitlines() if probe.returncode == 0 else []
        why = None if len(out) == 2 else (probe.stderr.strip().splitlines() or ["it failed"])[-1]
    except (OSError, subprocess.SubprocessError) as e:
        why, out = f"{type(e).__name__}: {e}", []
    ours = "{}.{}".format(*sys.version_info[:2])
    if why is None and out[0] != ours:
        why = f"it is Python {out[0]}, this command runs {ours}, and Spark refuses workers of another version"
    elif why is None and out[1]:
        why = f"it lacks {', '.join(out[1].split())}"
    if why is not None:
        raise WorkerPythonError(
            f"PYSPARK_PYTHON={python} cannot run overwindow's Python workers: {why}. Point "
            f"PYSPARK_PYTHON at a Python with overwindow installed (this command runs {sys.executable}), "
            "or unset it to use that one"
        )


def ship(session) -> str:
    """Add overwindow (with sqlglot and sortedcontainers) to ``session``'s executors, so that workers
    whose Python lacks it can run ``overWindow``; returns the zip's path. Call it once per session,
    before starting queries (again is harmless). Classic Spark (``SparkContext.addPyFile``); refused on
    Spark Connect. It does not reach the Python that ``transformWithStateInPandas`` starts on the
    driver's machine: :func:`on_driver_path`, before the session starts, does."""
    path = package_zip()
    shipped = getattr(session, "_overwindow_shipped", None)
    if shipped == path:
        return path
    if compat.is_connect(session):
        # addArtifacts(path, pyfile=True) did not reach the Python workers of a streaming query in
        # overwindow's test (a local Connect server of 4.3, workers without overwindow): refuse
        # rather than promise it
        raise NotImplementedError(
            "overwindow.ship does not work through Spark Connect: install overwindow in the Python "
            "that the Connect server's workers run"
        )
    session.sparkContext.addPyFile(path)
    session._overwindow_shipped = path
    return path


def on_driver_path() -> str:
    """Put the zip of :func:`ship` on ``PYTHONPATH``, first, for the Python processes that a Spark
    session started after this call runs on the driver's machine (Spark adds that variable to
    their path); returns the zip's path. Without it, a driver whose ``PYSPARK_PYTHON`` lacks
    overwindow fails to start a ``transformWithStateInPandas`` query. O(package size) once.

    >>> import os
    >>> saved = os.environ.get("PYTHONPATH")
    >>> path = on_driver_path()
    >>> os.environ["PYTHONPATH"].split(os.pathsep)[0] == path, on_driver_path() == path
    (True, True)
    >>> if saved is None:
    ...     del os.environ["PYTHONPATH"]
    ... else:
    ...     os.environ["PYTHONPATH"] = saved
    """
    path = package_zip()
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if path not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([path, *paths])
    return path


def package_zip(folder: str | None = None) -> str:
    """A zip of the SHIPPED packages' source files (no compiled caches), named by a hash of its
    content so that a changed package gets a new name (Spark refuses a second file of one name).
    Built once per content; O(package size), about 1 MB compressed."""
    files = sorted(_sources())
    digest = hashlib.sha256()
    for path, arcname in files:
        digest.update(arcname.encode())
        with open(path, "rb") as f:
            digest.update(f.read())
    folder = folder or os.path.join(tempfile.gettempdir(), "overwindow-ship")
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, f"overwindow-{digest.hexdigest()[:16]}.zip")
    if not os.path.exists(target):
        partial = f"{target}.{os.getpid()}.tmp"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            for path, arcname in files:
                z.write(path, arcname)
        os.replace(partial, target)
    return target


def _sources():
    """(path, name in the zip) of every file of the SHIPPED packages but compiled caches."""
    for name in SHIPPED:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"cannot ship {name}: it is not installed as a package here")
        root = list(spec.submodule_search_locations)[0]
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for n in names:
                if not n.endswith((".pyc", ".pyo")):
                    path = os.path.join(folder, n)
                    yield path, os.path.join(name, os.path.relpath(path, root))


if __name__ == "__main__":  # `spark-submit --py-files "$(python -m overwindow.spark.executors)" app.py`
    print(package_zip())
