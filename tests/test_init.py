"""The package's names (overwindow/__init__.py) load on first use: each is the object its module
defines, the names type checkers see and ``__all__`` are the same, and neither ``import overwindow``
nor a process importing the Kafka source's module alone (as PySpark's data-source processes do)
imports the rest. Fresh interpreters where what is imported matters."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import overwindow


def _checked_names() -> dict:
    """name -> (module, name there): the imports under ``if _typing.TYPE_CHECKING`` in
    overwindow/__init__.py."""
    tree = ast.parse(Path(overwindow.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test))
    return {a.asname or a.name: (i.module, a.name) for i in block.body for a in i.names}


def test_every_name_is_its_modules_object_and_the_three_lists_agree():
    names = _checked_names()
    assert names == overwindow._NAMES
    assert sorted(names) == sorted(overwindow.__all__)
    for name, (module, there) in names.items():
        assert getattr(overwindow, name) is getattr(importlib.import_module(module), there), name


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


REST = ("overwindow.spark.adapter", "overwindow.evaluator", "overwindow.streaming", "pandas", "sqlglot")
LOADED = "print(sorted(m for m in sys.modules if m.startswith(('overwindow', 'pandas', 'sqlglot'))))"


def test_the_kafka_sources_module_and_the_package_import_none_of_the_rest():
    for module in ("overwindow.pipeline.kafka", "overwindow"):
        loaded = _fresh(f"import sys, {module}\n{LOADED}")
        assert f"'{module}'" in loaded
        for heavy in REST:
            assert f"'{heavy}'" not in loaded, (module, heavy)


def test_a_name_asked_for_imports_its_module_then_and_an_unknown_one_is_refused():
    out = _fresh(
        "import sys, pyarrow as pa, overwindow\n"
        "print('overwindow.evaluator' in sys.modules)\n"
        "got = overwindow.evaluate(pa.table({'t': [2, 1]}), 'row_number() OVER (ORDER BY t) AS n')\n"
        "print('overwindow.evaluator' in sys.modules, got.column('n').to_pylist())\n"
        "import overwindow.evaluator\n"  # the module: its own name, never the function's
        "print(overwindow.evaluate is overwindow.evaluator.evaluate)\n"
        "try:\n"
        "    overwindow.evaluator_typo\n"
        "except AttributeError as e:\n"
        "    print(e)\n"
    )
    assert out.splitlines() == [
        "False",
        "True [2, 1]",
        "True",
        "module 'overwindow' has no attribute 'evaluator_typo'",
    ]
