"""Packaging and extras: the wheel and sdist build cleanly and declare PySpark only as an extra; a
venv with the wheel and no extras (no PySpark, no matplotlib) imports overwindow and evaluates, and
its commands name the extra they need."""

import email
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPTIONAL = ("pyspark", "matplotlib", "psycopg", "confluent_kafka", "grpc", "deltalake")


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    # without PYTHONDONTWRITEBYTECODE, which makes setuptools warn that it does not byte-compile
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), ROOT], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, done.stdout + done.stderr


def test_wheel_and_sdist_build_without_warnings(dist):
    out, log = dist
    assert sorted(p.name for p in out.iterdir()) == [
        "overwindow-0.1.0-py3-none-any.whl",
        "overwindow-0.1.0.tar.gz",
    ]
    assert "warning" not in log.lower(), [line for line in log.splitlines() if "warning" in line.lower()]


def test_pyspark_and_matplotlib_are_extras_only(dist):
    out, _ = dist
    wheel = zipfile.ZipFile(out / "overwindow-0.1.0-py3-none-any.whl")
    meta = email.message_from_bytes(wheel.read("overwindow-0.1.0.dist-info/METADATA"))
    requires = meta.get_all("Requires-Dist")
    unconditional = [r for r in requires if "extra ==" not in r]
    assert not [r for r in unconditional if r.split()[0].lower().startswith(("pyspark", "matplotlib"))]
    assert any(r.startswith("pyspark") and 'extra == "spark"' in r for r in requires)
    assert {"spark", "chart", "postgres", "kafka", "delta", "connect", "demo", "test"} <= set(
        meta.get_all("Provides-Extra")
    )
    names = wheel.namelist()
    assert "overwindow/data/plant_daily.csv" in names and "overwindow/spark/executors.py" in names
    assert not [n for n in names if n.startswith("tests/")]
    sdist = tarfile.open(out / "overwindow-0.1.0.tar.gz").getnames()
    assert "overwindow-0.1.0/pyproject.toml" in sdist and "overwindow-0.1.0/README.md" in sdist


@pytest.fixture(scope="module")
def batch_only_venv(dist, tmp_path_factory):
    """A venv with the built wheel and its required dependencies only: every package of this venv is
    linked in but the optional ones (PySpark, matplotlib, ...) and overwindow itself."""
    out, _ = dist
    root = tmp_path_factory.mktemp("batch-only")
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    site = next(root.glob("lib/python*/site-packages"))
    ours = sysconfig.get_paths()["purelib"]
    hidden = ("overwindow", "__editable__", "pip", "_distutils_hack", "distutils-precedence") + OPTIONAL
    for entry in os.listdir(ours):
        if not entry.lower().startswith(hidden) and not (site / entry).exists():
            (site / entry).symlink_to(os.path.join(ours, entry))
    python = str(root / "bin" / "python")
    wheel = str(out / "overwindow-0.1.0-py3-none-any.whl")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", wheel], check=True)
    check = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout  # the wheel's requirements are all met without PySpark
    return python


def test_a_batch_only_install_imports_and_evaluates(batch_only_venv, tmp_path):
    script = (
        "import importlib.util, sys, pandas as pd, overwindow\n"
        f"assert not [m for m in {OPTIONAL!r} if importlib.util.find_spec(m)]\n"
        "assert overwindow.__file__.startswith(sys.prefix)\n"
        "out = overwindow.evaluate(pd.DataFrame({'t': [1, 2, 3], 'x': [1.0, 2.0, 4.0]}),\n"
        "                          'avg(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS a')\n"
        "print(out['a'].tolist())\n"
    )
    done = subprocess.run([batch_only_venv, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[1.0, 1.5, 3.0]"  # 1, (1+2)/2, (2+4)/2


@pytest.mark.parametrize(
    "command, extra",
    [
        (["run", "view.toml", "--once"], "spark"),
        (["demo"], "chart"),
        (["produce", "--bootstrap-servers", "127.0.0.1:9", "--topic", "t"], "kafka"),
    ],
)
def test_commands_name_the_extra_they_need(batch_only_venv, tmp_path, command, extra):
    (tmp_path / "view.toml").write_text("")
    done = subprocess.run(
        [batch_only_venv, "-m", "overwindow", *command], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"pip install 'overwindow[{extra}]'" in done.stderr
