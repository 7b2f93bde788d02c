"""The package's names (overwindow/__init__.py) load on first use: each is the object its module
defines, the names type checkers see are the same, and a process importing the Kafka source's module
alone (as PySpark's data-source processes do) imports none of the rest. Fresh interpreters where
what is imported matters."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import overwindow


def _checked_names() -> dict:
    """name -> (module, name there): the imports under ``if TYPE_CHECKING`` in overwindow/__init__.py."""
    tree = ast.parse(Path(overwindow.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return {a.asname or a.name: (i.module, a.name) for i in block.body for a in i.names}


def test_every_name_is_its_modules_object_and_type_checkers_see_the_same():
    names = _checked_names()
    assert sorted(names) == overwindow.__all__
    for name, (module, there) in names.items():
        assert getattr(overwindow, name) is getattr(importlib.import_module(module), there), name
    assert set(overwindow.__all__) <= set(dir(overwindow))


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_kafka_sources_module_imports_none_of_the_rest():
    loaded = _fresh(
        "import sys, overwindow.pipeline.kafka\n"
        "print(sorted(m for m in sys.modules if m.startswith(('overwindow', 'pandas', 'sqlglot'))))"
    )
    rest = ("overwindow.spark.adapter", "overwindow.evaluator", "overwindow.streaming", "pandas", "sqlglot")
    for heavy in rest:
        assert f"'{heavy}'" not in loaded, heavy


def test_a_name_asked_for_is_imported_then_and_an_unknown_one_is_refused():
    out = _fresh(
        "import sys, pyarrow as pa, overwindow\n"
        "before = 'overwindow.evaluator' in sys.modules\n"
        "import overwindow.evaluator\n"  # the module: its own name, never the function's
        "got = overwindow.evaluate(pa.table({'t': [2, 1]}), 'row_number() OVER (ORDER BY t) AS n')\n"
        "print(before, got.column('n').to_pylist())\n"
        "try:\n"
        "    overwindow.evaluator_typo\n"
        "except AttributeError as e:\n"
        "    print(e)\n"
    )
    assert out.splitlines() == ["False [2, 1]", "module 'overwindow' has no attribute 'evaluator_typo'"]
