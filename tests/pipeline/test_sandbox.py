"""A view file's SQL reaches only its source's columns, through functions that read nothing else,
and its [spark] section takes only resource settings, unless [view] trusted = true (issue 40, item
1). Refused before Spark starts (no JVM: the fixture fails the test if PySpark asks for one), in
the view's words; the check holds for any function, since it allows what it knows: every function
name that reaches Spark in an allowed query is one of the allowed ones, whatever name was written."""

import re
import textwrap

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from sqlglot.dialects.dialect import Dialect

from overwindow.__main__ import main
from overwindow.logical.expr import DIALECT, read_sql
from overwindow.pipeline.sandbox import _WINDOW_FUNCTIONS, PURE_FUNCTIONS, problems
from overwindow.pipeline.validate import check_views
from overwindow.pipeline.view import ViewFileError, load_view

VIEW = """
[source]
format = "files"
path = "events"
schema = "k STRING, ts TIMESTAMP, id BIGINT, x DOUBLE, s STRING"

[watermark]
column = "ts"
delay = "10 seconds"

[view]
query = \"\"\"
SELECT k, ts, id, x, EXTRA lag(x) OVER (PARTITION BY k ORDER BY ts) AS p
FROM source
\"\"\"
emit = "on_window_close"
row_key = ["id"]

[sink]
kind = "sqlite"
path = "view.sqlite"
table = "v"
checkpoint = "chk"
"""

# the three escapes of the issue, as written there
GETENV = "reflect('java.lang.System', 'getenv', 'OVERWINDOW_POSTGRES_DSN') AS leak,"
FILE = "(SELECT max(k) FROM text.`/etc/hostname` AS t(k)) AS leak,"
EXIT = "reflect('java.lang.System', 'exit', 3) AS bye,"


@pytest.fixture
def no_jvm(monkeypatch):
    """Fails the test if anything asks PySpark for a JVM."""
    import pyspark.java_gateway
    from pyspark import SparkContext

    def refuse(*args, **kwargs):
        raise AssertionError("a JVM was started")

    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", refuse)
    monkeypatch.setattr(SparkContext, "_ensure_initialized", classmethod(refuse))


def view_file(tmp_path, extra="", text=VIEW, name="view.toml"):
    (tmp_path / "events").mkdir(exist_ok=True)
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).replace("EXTRA ", extra + " "))
    return str(path)


@pytest.mark.parametrize(
    "extra, words",
    [
        (
            GETENV,
            "reflect('java.lang.System', 'getenv', 'OVERWINDOW_POSTGRES_DSN'): reflect calls a Java method",
        ),
        (
            FILE,
            "(SELECT MAX(k) FROM text.`/etc/hostname` AS t(k)): a subquery reads past the view's own rows",
        ),
        (EXIT, "reflect('java.lang.System', 'exit', 3): reflect calls a Java method"),
    ],
    ids=["getenv", "file", "exit"],
)
def test_validate_and_run_refuse_the_three_escapes_before_spark(tmp_path, no_jvm, capsys, extra, words):
    path = view_file(tmp_path, extra)
    for command in (["validate", path], ["run", "--once", path]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"overwindow: {path}: [view] query (line 12): {words}" in err, err
        assert "[view] trusted = true runs a view file you trust with Spark's rules" in err
    assert not (tmp_path / "chk").exists()
    # a trusted view file runs with Spark's rules: validate has nothing to say against it
    assert main(["validate", path, "--set", "view.trusted=true"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, words",
    [
        ("java_method('java.lang.System', 'getenv', 'HOME') AS e,", "java_method calls a Java method"),
        ("try_reflect('java.lang.System', 'getenv', 'HOME') AS e,", "try_reflect calls a Java method"),
        ("input_file_name() AS f,", "input_file_name reads the file being read"),
        ("current_user() AS u,", "current_user reads the job's user"),
        ("current_user AS u,", "current_user reads the job's user"),
        ("user AS u,", "user: Spark reads it as a function when the source has no such column"),
        ("session_user() AS u,", "session_user reads the job's user"),
        ("now() AS t,", "now reads the clock"),
        ("current_timestamp AS t,", "current_timestamp reads the clock"),
        ("unix_timestamp() AS t,", "current_timestamp reads the clock"),
        ("rand() AS r,", "rand is random"),
        ("uuid() AS r,", "uuid is random"),
        ("version() AS v,", "version reads the session"),
        ("current_database() AS d,", "reads the session"),
        (
            "spark_catalog.default.f(x) AS f,",
            "a view calls Spark's own functions, not one of a catalog or schema",
        ),
        ("builtin.abs(x) AS f,", "not one of a catalog or schema"),
        ("my_udf(x) AS f,", "my_udf is not among the functions a view may call"),
        ("xpath(s, '/a') AS f,", "xpath is not among the functions a view may call"),
        ("secret('scope', 'key') AS f,", "secret reads outside the source"),
        ("x IN (SELECT id FROM other) AS f,", "a subquery reads past the view's own rows"),
        ("EXISTS (SELECT 1 FROM other) AS f,", "a subquery reads past the view's own rows"),
        (
            "'${env:OVERWINDOW_POSTGRES_DSN}' AS f,",
            "${...}: Spark replaces it with a setting or an environment variable",
        ),
        ("'$\\\\{env:HOME}' AS f,", "${...}: Spark replaces it"),
        ("`${system:user.name}` AS f,", "${...}: Spark replaces it"),
        ("x > :p AS f,", ":p: a view's SQL is SELECT ... FROM source"),
    ],
)
def test_escapes_in_the_select_list_are_refused(tmp_path, no_jvm, extra, words):
    with pytest.raises(ViewFileError) as e:
        load_view(view_file(tmp_path, extra))
    assert "[view] query (line 12): " in str(e.value) and words in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "old, new, words",
    [
        ("FROM source", "FROM source JOIN other ON source.id = other.id", "JOIN"),
        ("FROM source", "FROM source, LATERAL (SELECT 1 AS one)", "JOIN"),
        ("FROM source", "FROM source LATERAL VIEW explode(array(1)) t AS e", "LATERAL VIEW"),
        ("SELECT k", "WITH o AS (SELECT * FROM other) SELECT k", "WITH"),
        ("FROM source", "FROM source WHERE x > (SELECT max(x) FROM source)", "a subquery reads past"),
        ("FROM source", "FROM text.`/etc/passwd`", "FROM text.`/etc/passwd`"),
        ("FROM source", "FROM read_files('/etc')", "FROM READ_FILES('/etc')"),
        ("FROM source", "FROM TABLE(other)", "FROM TABLE(other)"),
        ("FROM source", "FROM other", "FROM other"),
        ("FROM source", "FROM global_temp.source", "FROM global_temp.source"),
        ("FROM source", "FROM source UNION SELECT k, ts, id, x, 0 AS p FROM other", "UNION"),
    ],
)
def test_other_tables_and_queries_are_refused(tmp_path, no_jvm, old, new, words):
    with pytest.raises(ViewFileError) as e:
        load_view(view_file(tmp_path, text=VIEW.replace(old, new, 1)))
    assert "[view] query (line " in str(e.value) and words in str(e.value), str(e.value)


def test_the_sandbox_refuses_what_a_later_reader_might_accept():
    """The check does not lean on today's query reader (which refuses JOIN, WITH, UNION itself):
    given the parsed SQL, it refuses every way out on its own, and statements that are no query."""
    for sql in [
        "SELECT * FROM source JOIN other ON source.k = other.k",
        "WITH s AS (SELECT * FROM other) SELECT * FROM s",
        "SELECT * FROM source WHERE x > 0 UNION SELECT * FROM other",
        "SELECT * FROM source, LATERAL (SELECT 1)",
        "SELECT * FROM (SELECT * FROM other) t",
        "SELECT * FROM (SELECT * FROM source JOIN other ON true) t",
        "CREATE TEMPORARY FUNCTION f AS 'com.example.F'",
        "SELECT 1; SELECT reflect('java.lang.System', 'exit', 3)",
        "SELECT x FROM source LIMIT (SELECT count(*) FROM other)",
    ]:
        assert problems(read_sql(sql)), sql


def test_having_is_part_of_a_views_query_and_its_functions_are_checked():
    having = "SELECT k, sum(x) AS t, lag(sum(x)) OVER (ORDER BY k) AS p FROM source GROUP BY k HAVING {}"
    assert problems(having.format("count(*) > 2 AND t > 0 AND max(abs(x)) < 9")) == []
    assert problems(having.format("max(reflect('java.lang.System', 'getenv', s)) > ''")) == [
        "reflect('java.lang.System', 'getenv', s): reflect calls a Java method"
    ]
    assert problems(having.format("count(*) > (SELECT count(*) FROM other)"))


def test_a_call_of_a_calls_view_is_checked_too(tmp_path, no_jvm):
    text = VIEW.replace(
        'query = """',
        "partition_by = [\"k\"]\ncalls = [\"lag(reflect('a', 'b')) OVER (ORDER BY ts) AS p\"]\n#",
    )
    text = re.sub(r'#\nSELECT.*\n"""\n', "", text.replace("FROM source\n", ""), flags=re.S)
    with pytest.raises(ViewFileError) as e:
        load_view(view_file(tmp_path, text=text))
    assert "[view] calls (line " in str(e.value) and "reflect calls a Java method" in str(e.value)


@pytest.mark.parametrize(
    "extra",
    [
        "abs(x) AS a, round(x, 2) AS r, coalesce(x, 0) AS c, nvl(s, '') AS n, if(x > 0, 1, 0) AS i,",
        "CASE WHEN x > 0 THEN 'up' ELSE 'down' END AS d, CAST(x AS DECIMAL(10, 2)) AS dx,",
        "substr(s, 1, 2) AS s2, upper(s) AS u, concat_ws('-', k, s) AS c, regexp_extract(s, 'a(.)', 1) AS r,",
        "date_trunc('HOUR', ts) AS h, hour(ts) AS hh, date_add(CAST(ts AS DATE), 1) AS d1,",
        "unix_timestamp(ts) AS u,",
        "ts + INTERVAL 1 DAY AS later, extract(YEAR FROM ts) AS y, date_format(ts, 'yyyy') AS yy,",
        "hash(k) AS h, xxhash64(k) AS h64, sha2(s, 256) AS sh, get_json_object(s, '$.a') AS j,",
        "from_json(s, 'a INT') AS js, transform(array(x), v -> v + 1) AS t, named_struct('a', x) AS st,",
        "x BETWEEN 1 AND 2 AS b, s LIKE 'a%' AS l, s RLIKE 'a' AS rl, k IN ('a', 'b') AS i, x IS NULL AS n,",
        "`user` AS u2, count(x) OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING) AS c2,",
    ],
)
def test_functions_of_the_row_are_allowed(tmp_path, no_jvm, extra):
    view = load_view(view_file(tmp_path, extra, text=VIEW.replace("s STRING", "s STRING, `user` STRING")))
    assert view.query is not None and not problems(view.query.text, ["k", "ts", "id", "x", "s", "user"])


def test_the_readme_and_demo_queries_pass():
    from overwindow.pipeline.demo import TICK_QUERY

    assert problems(TICK_QUERY) == []
    assert (
        problems(
            "SELECT * FROM (SELECT k, row_number() OVER (PARTITION BY k ORDER BY ts) AS n FROM source) t "
            "WHERE n <= 3"
        )
        == []
    )


_SPARK_FUNCTIONS = sorted(
    set(Dialect.get_or_raise(DIALECT).parser_class.FUNCTIONS)
    | set(Dialect.get_or_raise(DIALECT).parser_class.FUNCTION_PARSERS)
)
_NAME = st.one_of(st.sampled_from(_SPARK_FUNCTIONS), st.from_regex(r"[a-z][a-z_0-9]{0,12}", fullmatch=True))
# what sqlglot writes for CAST, CASE, EXTRACT, ... and the operators it writes as functions; and
# the clause words a parenthesised expression can follow (`OR(x)` reads as the expression `(x)`)
_KEYWORDS = {"cast", "try_cast", "case", "extract", "trim", "if", "struct", "array", "map", "interval"}
_KEYWORDS |= {"select", "and", "or", "not", "in", "over", "from", "where", "on", "by", "as"}


@given(name=_NAME, arguments=st.sampled_from(["x", "x, y", "x, y, z", ""]))
@example(name="OR", arguments="x")
def test_an_allowed_query_hands_spark_only_allowed_functions(name, arguments):
    """Whatever function name is written (sqlglot's and made-up ones), a query the check lets
    through reaches Spark (as sqlglot writes it for Spark, which is what the job hands Spark) calling
    only the allowed functions."""
    try:
        tree = read_sql(f"SELECT {name}({arguments}) AS v FROM source")
    except Exception:  # not SQL sqlglot reads: the query's reader refuses it
        return
    if problems(tree):
        return
    try:
        sent = tree.sql(dialect=DIALECT)
    except Exception:  # sqlglot cannot write it: neither can the job
        return
    called = {f.lower() for f in re.findall(r"([A-Za-z_][A-Za-z_0-9]*)\s*\(", sent)}
    assert called <= PURE_FUNCTIONS | _WINDOW_FUNCTIONS | _KEYWORDS, (name, sent)


# -- [spark]: resource settings only, unless trusted --------------------------------------------------


@pytest.mark.parametrize(
    "setting",
    [
        '"spark.pyspark.python" = "/bin/sh"',
        '"spark.jars" = "/tmp/x.jar"',
        '"spark.driver.extraJavaOptions" = "-Dx=1"',
        '"spark.python.daemon.module" = "evil"',
        '"spark.sql.extensions" = "com.example.X"',
        '"spark.hadoop.fs.file.impl" = "com.example.Fs"',
        '"spark.executorEnv.X" = "1"',
    ],
)
def test_spark_settings_beyond_resources_need_a_trusted_view(tmp_path, no_jvm, capsys, setting):
    text = VIEW.replace("EXTRA ", "") + f"\n[spark]\n{setting}\n"
    path = view_file(tmp_path, text=text)
    assert main(["validate", path]) == 2
    err = capsys.readouterr().err
    assert "[spark] " in err and "a view file sets only resource settings" in err, err
    assert "OVERWINDOW_SPARK_CONF" in err
    assert main(["validate", path, "--set", "view.trusted=true"]) == 0, capsys.readouterr().err


def test_resource_settings_pass_and_the_operator_can_refuse_a_trusted_file(tmp_path, no_jvm, capsys):
    text = (
        VIEW.replace("EXTRA ", "")
        + '\n[spark]\n"spark.driver.memory" = "2g"\n"sql.shuffle.partitions" = "4"\n'
    )
    view = load_view(view_file(tmp_path, text=text))
    assert view.spark == {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "4"}
    check_views([view])
    # a view file that trusts itself is refused where the command line says otherwise
    trusting = VIEW.replace('emit = "on_window_close"', 'emit = "on_window_close"\ntrusted = true')
    path = view_file(tmp_path, GETENV, text=trusting, name="trusting.toml")
    assert main(["validate", path]) == 0
    capsys.readouterr()
    assert main(["validate", path, "--set", "view.trusted=false"]) == 2
    assert "reflect calls a Java method" in capsys.readouterr().err
