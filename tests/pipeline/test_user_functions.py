"""``[view] functions``: a view file's pandas_udfs, named ``module:attribute``, imported from beside
the view file and joined to overwindow's catalog when the file is read, or refused naming the key
(untrusted views, objects that are no grouped-aggregate pandas_udf, names of built-ins). No Spark
session: a pandas_udf is made without one."""

import textwrap

import pytest

from overwindow.logical.functions import lookup
from overwindow.pipeline.view import ViewFileError, load_view

MODULE = """
import pandas as pd
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import DoubleType


@pandas_udf(DoubleType())
def spread(v: pd.Series) -> float:
    return float(v.max() - v.min()) if len(v) else None


@pandas_udf(DoubleType())
def doubled(v: pd.Series) -> pd.Series:
    return v * 2


def plain(v):
    return v
"""


TEXT_TYPE = """
from pyspark.sql.functions import pandas_udf


@pandas_udf("double")
def spread(v):
    return v.max()
"""


def _view(tmp_path, functions: str, trusted: bool = True, call: str = "uf_spread(x)"):
    (tmp_path / "uf_module.py").write_text(MODULE)
    (tmp_path / "uf_text_type.py").write_text(TEXT_TYPE)
    path = tmp_path / "view.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "files"
        path = "events"
        schema = "k STRING, id BIGINT, ts TIMESTAMP, x DOUBLE"

        [view]
        query = "SELECT id, k, {call} OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING) AS s FROM source"
        emit = "on_update"
        row_key = ["id"]
        trusted = {str(trusted).lower()}
        functions = {functions}

        [sink]
        kind = "sqlite"
        path = "view.sqlite"
        table = "v"
        checkpoint = "chk"
    """)
    )
    return load_view(str(path))


def test_a_trusted_view_joins_its_pandas_udf_to_the_catalog_under_its_name(tmp_path):
    view = _view(tmp_path, '{ uf_spread = "uf_module:spread" }')
    assert set(view.functions) == {"uf_spread"}
    info = lookup("uf_spread")
    assert info.kind_words == "the pandas_udf" and info.frame_units == ("ROWS", "RANGE")


@pytest.mark.parametrize(
    "functions, trusted, words",
    [
        (
            '{ uf_spread = "uf_module:spread" }',
            False,
            r"\(line 12\): importing a module runs its code",
        ),
        ('{ uf_plain = "uf_module:plain" }', True, r"uf_plain: uf_module:plain is not a pandas_udf"),
        (
            '{ uf_doubled = "uf_module:doubled" }',
            True,
            r"uf_module:doubled is not a grouped-aggregate pandas_udf",
        ),
        ('{ uf_gone = "uf_module:gone" }', True, r"uf_module has no gone"),
        ('{ uf_x = "uf_nowhere:f" }', True, r"cannot import uf_nowhere"),
        ('{ uf_x = "uf_module" }', True, r'name the function as "module:attribute"'),
        ('{ sum = "uf_module:spread" }', True, r"sum is the name of one of overwindow's functions"),
    ],
)
def test_what_cannot_be_a_views_function_is_refused_naming_the_key(tmp_path, functions, trusted, words):
    with pytest.raises(ViewFileError, match=r"\[view\] functions .*" + words):
        _view(tmp_path, functions, trusted)
