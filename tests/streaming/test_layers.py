"""The streaming path reads plain columns only (issue 39): the bind step has Spark compute every
scalar expression around the windows, so neither the state machines nor the Spark adapter load the
batch evaluator's scalar interpreter (``overwindow.physical.expressions`` and the modules it hands
operators and functions to). Each check runs in a fresh interpreter, where no other test has loaded
it already."""

import subprocess
import sys
import textwrap

INTERPRETER = "overwindow.physical.expressions"
PARTS = [f"overwindow.physical.{m}" for m in ("arithmetic", "interval_arithmetic", "scalar_functions")]
LOADED = f"any(m in sys.modules for m in {[INTERPRETER, *PARTS]!r})"  # the interpreter or a part of it


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_streaming_modules_and_the_spark_adapter_do_not_import_the_interpreter():
    out = _run(
        f"""
        import importlib, pkgutil, sys
        import overwindow.streaming as streaming
        names = ["overwindow.spark.adapter"]
        names += [f"overwindow.streaming.{{m.name}}" for m in pkgutil.iter_modules(streaming.__path__)]
        for name in names:
            importlib.import_module(name)
        print(len(names), sorted(m for m in sys.modules if m.startswith("overwindow.streaming.")))
        print({LOADED})
        """
    )
    count, loaded = out.splitlines()[0].split(" ", 1)
    assert int(count) > 15 and "overwindow.streaming.on_update" in loaded  # every module was imported
    assert out.splitlines()[1] == "False"


def test_machines_over_plain_columns_run_without_the_interpreter():
    # what the Spark path hands the machines: calls over plain columns and constants only; the
    # batch evaluator, the oracle, is loaded only after the streams have run
    out = _run(
        f"""
        import sys
        import pyarrow as pa
        import pyarrow.compute as pc
        from overwindow.spec import OverWindow
        from overwindow.streaming.driver import Driver

        calls = [
            "lag(x, 1, 0) OVER (ORDER BY t) AS p",
            "sum(x) FILTER (WHERE b) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
            "count(*) OVER (ORDER BY t RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) AS c",
            "rank() OVER (ORDER BY t) AS r",
        ]
        schema = pa.schema([("k", pa.int64()), ("t", pa.int64()), ("x", pa.int64()), ("b", pa.bool_())])
        batches = [
            pa.table(
                {{"k": [1, 1, 2], "t": [1, 2, 1], "x": [5, 6, 7], "b": [True, False, None]}}, schema=schema
            ),
            pa.table(
                {{"k": [1, 2, 1], "t": [4, 3, 3], "x": [8, None, 1], "b": [True, True, True]}}, schema=schema
            ),
        ]
        outputs = {{}}
        runs = [("on_update", "whole", calls), ("on_update", "chunked", calls[:3])]  # rank: whole only
        for emit, layout, some in [*runs, ("on_window_close", "whole", calls)]:
            driver = Driver(OverWindow(*some, emit=emit, stateLayout=layout), schema, ["k"], watermarked=True)
            got = [driver.feed(b, watermark=w) for b, w in [(batches[0], 0), (batches[1], 1), (None, 100)]]
            outputs[emit, layout] = pa.concat_tables(got)
        print({LOADED})

        from overwindow.evaluator import evaluate
        rows = pa.concat_tables(batches)
        want = [evaluate(rows.filter(pc.equal(rows["k"], k)), *calls).to_pylist() for k in (1, 2)]
        got = outputs["on_window_close", "whole"].select(list(want[0][0])).to_pylist()
        key = lambda r: tuple(str(v) for v in r.values())
        same = sorted(want[0] + want[1], key=key) == sorted(got, key=key)
        print(same, all(o.num_rows for o in outputs.values()))
        """
    )
    assert out.splitlines() == ["False", "True True"], out


def test_a_bound_spec_runs_without_the_interpreter_as_spark_hosts_it():
    # the adapter's split: the bind step names what Spark computes before the windows (here the
    # test computes it with pyarrow, in Spark's place) and what it computes after them; the machine
    # runs the rest over plain columns. The batch evaluator of the spec as written is the oracle.
    out = _run(
        f"""
        import sys
        import pyarrow as pa
        import pyarrow.compute as pc
        from overwindow.logical.bind import bind
        from overwindow.spark.bind import results_in_spark
        from overwindow.spec import OverWindow
        from overwindow.streaming.driver import Driver

        written = [
            "sum(x * 2) FILTER (WHERE x > 0) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s",
            "x - lag(x, 1, CAST(0 AS BIGINT)) OVER (ORDER BY t) AS d",
        ]
        spec = OverWindow(*written, emit="on_window_close")
        bound = bind(spec.expressions)
        spec, post, _ = results_in_spark(spec.over(bound.expressions, bound.pre))
        computed = {{"x * 2": lambda t: pc.multiply(t["x"], 2), "x > 0": lambda t: pc.greater(t["x"], 0),
                    "CAST(0 AS BIGINT)": lambda t: pa.array([0] * t.num_rows, pa.int64())}}
        rows = pa.table({{"k": [1, 1, 1, 2], "t": [1, 2, 3, 1], "x": [4, -1, 6, 7]}})
        pre = rows
        for name, e in bound.pre:
            pre = pre.append_column(name, computed[e.sql](rows))
        driver = Driver(spec, pre.schema, ["k"], watermarked=True)
        got = pa.concat_tables([driver.feed(pre, watermark=0), driver.feed(None, watermark=100)])
        print({LOADED}, [name for name, _ in post])

        from overwindow.evaluator import evaluate
        from overwindow.physical.expressions import evaluate_expr
        for name, e in post:  # what Spark computes after the windows
            got = got.append_column(name, evaluate_expr(e, got))
        want = [evaluate(rows.filter(pc.equal(rows["k"], k)), *written) for k in (1, 2)]
        want = pa.concat_tables(want).to_pylist()
        key = lambda r: (r["k"], r["t"])
        print(sorted(want, key=key) == sorted(got.select(list(want[0])).to_pylist(), key=key))
        """
    )
    assert out.splitlines() == ["False ['d']", "True"], out


def test_a_qualify_runs_in_spark_and_its_machine_checks_the_top_n_bound_without_the_interpreter():
    # Spark applies QUALIFY after the windows (with_filter); the machine keeps, of it, the bound on
    # its ranking column, compared without the interpreter, on update and on window close
    out = _run(
        f"""
        import sys
        import pyarrow as pa
        from overwindow.spark.bind import results_in_spark
        from overwindow.spec import OverWindow
        from overwindow.streaming.driver import Driver

        rows = pa.table({{"k": [1, 1, 1, 2], "t": [1, 2, 3, 1], "rid": [0, 1, 2, 3], "x": [4, -1, 6, 7]}})
        got = []
        for emit in ("on_update", "on_window_close"):
            spec = OverWindow("rank() OVER (ORDER BY t) AS r", emit=emit, rowKey="rid",
                              qualify="r <= 2 AND x > 0 AND r < 9")
            machine, post, condition = results_in_spark(spec)
            driver = Driver(machine, rows.schema, ["k"], watermarked=True)
            out = pa.concat_tables([driver.feed(rows, watermark=0), driver.feed(None, watermark=100)])
            got.append(sorted((r["rid"], r["r"]) for r in out.to_pylist()))
        print({LOADED}, machine.qualify.sql, condition)
        print(got)
        """
    )
    # rid 2 (rank 3 in k=1) is past the bound; x > 0 is Spark's to apply
    assert out.splitlines() == [
        "False r <= 2 r <= 2 AND x > 0 AND r < 9",
        str([[(0, 1), (1, 2), (3, 1)]] * 2),
    ], out
