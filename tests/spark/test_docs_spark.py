"""The docs' ``python spark`` examples (README.md and docs/*.md; tests/docs_examples.py) run on the
session's Spark: one test, the blocks of a page in order in one namespace, as a reader runs them
one after another. Settings an example changes on the shared session are put back afterwards."""

from __future__ import annotations

import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from docs_examples import all_blocks  # noqa: E402

CHANGED = (  # what the examples may set on the session: put back afterwards
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.statefulOperator.checkCorrectness.enabled",
)


def test_the_docs_spark_examples_run(spark, tmp_path, monkeypatch, capsys):
    pages = defaultdict(list)
    for block in all_blocks():
        if block.kind == "python spark":
            pages[block.page].append(block)
    assert pages, "no python spark example found"
    monkeypatch.chdir(tmp_path)
    before = {key: spark.conf.get(key, None) for key in CHANGED}
    try:
        for found in pages.values():
            namespace = {"__name__": "__docs__"}
            for block in found:
                exec(compile(block.code, block.where, "exec"), namespace)
            assert namespace["spark"] is spark  # getOrCreate: the examples ran on this session
    finally:
        for query in spark.streams.active:
            query.stop()
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
    shown = capsys.readouterr().out
    assert "|avg3|" in shown.replace(" ", "")  # each example's show() printed its view
