"""The docs (README.md and the MkDocs site in docs/): the site builds with warnings as errors, the
generated reference pages match the code, every code example runs or is checked by its info string
(tests/docs_examples.py; the ``python spark`` ones run in tests/spark/test_docs_spark.py), the
README's relative links resolve, and the troubleshooting page quotes messages the code still
writes. No Spark."""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from docs_examples import KINDS, ROOT, all_blocks, blocks  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BLOCKS = all_blocks()


def _gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", os.path.join(ROOT, "scripts", "gen_docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    """mkdocs build --strict: a broken link or anchor, a page outside the nav, a docstring the API
    reference cannot read, fail it."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "functions" / "index.html").exists()
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    assert "OverWindow" in api and "emit" in api  # the docstrings were read


def test_the_generated_reference_pages_are_current():
    gen = _gen_docs()
    stale = gen.stale()
    assert not stale, f"stale: {', '.join(stale)}; regenerate them with `{gen.COMMAND}`"


def test_the_generator_says_what_a_stream_keeps_as_its_docstring_shows():
    import doctest

    assert doctest.testmod(_gen_docs(), raise_on_error=True).attempted
    assert doctest.testmod(_gen_docs().messages(), raise_on_error=True).attempted


def test_every_code_block_says_what_it_is():
    unknown = [f"{b.where}: ```{b.kind}" for b in BLOCKS if b.kind not in KINDS]
    assert not unknown, f"code blocks need one of {sorted(KINDS)} as info string: {unknown}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "python"], ids=lambda b: b.where)
def test_python_examples_run(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(block.code, block.where, "exec"), {"__name__": "__docs__"})


def test_python_fragments_and_spark_examples_parse():
    for block in BLOCKS:
        if block.kind in ("python fragment", "python spark"):
            compile(block.code, block.where, "exec")


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "sql"], ids=lambda b: b.where)
def test_sql_examples_are_queries_overwindow_sql_reads(block):
    """Read as overwindow.sql and a view's query read them (Spark's dialect; other clauses refused)."""
    from overwindow.spark.query import parse_query

    query = parse_query(block.code)
    assert query.columns and query.table


def _check_view(text: str, folder, where: str) -> None:
    """A whole view file, checked as ``overwindow validate`` checks one, in ``folder`` (its source
    folder made, a PostgreSQL connection string set)."""
    from overwindow.pipeline.validate import check_view
    from overwindow.pipeline.view import load_view

    doc = tomllib.loads(text)
    if doc["source"].get("format") == "files":
        os.makedirs(folder / doc["source"]["path"], exist_ok=True)
    path = folder / "view.toml"
    path.write_text(text)
    check_view(load_view(str(path)))


def _check_keys(doc: dict, where: str) -> None:
    """A part of a view file: every section and key is one the view-file reader knows."""
    from overwindow.pipeline.view_keys import KEYS_BY_NAME, SECTIONS_BY_NAME

    for section, body in doc.items():
        assert section in SECTIONS_BY_NAME, f"{where}: no section [{section}]"
        if SECTIONS_BY_NAME[section].free:
            continue
        for key in body:
            assert (section, key) in KEYS_BY_NAME, f"{where}: no key [{section}] {key}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind.startswith("toml")], ids=lambda b: b.where)
def test_toml_examples_are_view_files_or_parts_of_one(block, tmp_path, monkeypatch):
    doc = tomllib.loads(block.code)
    if block.kind == "toml fragment":
        return
    if {"source", "view", "sink"} <= set(doc):
        monkeypatch.setenv("OVERWINDOW_POSTGRES_DSN", "postgresql://docs@localhost:5432/views")
        monkeypatch.setenv("KAFKA_PASSWORD", "secret")
        _check_view(block.code, tmp_path, block.where)
    else:
        _check_keys(doc, block.where)


def _anchors(path: str) -> set[str]:
    slug = _gen_docs().messages().slug  # a heading's anchor as MkDocs makes it
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def test_the_readme_links_resolve_and_it_stays_short():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert len(text.split("\n")) <= 250, "the README is the first five screens: move detail into docs/"
    for target in re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)", text):
        path, anchor = target
        if re.match(r"\w+://", path):
            continue
        full = os.path.join(ROOT, path)
        assert os.path.exists(full), f"README links to {path}, which does not exist"
        if anchor:
            assert anchor in _anchors(full), f"README links to {path}#{anchor}: no such heading"


def test_the_readme_keeps_the_two_commands():
    (shown,) = [b for b in blocks("README.md") if b.kind == "bash"][:1]
    for command in ("bash scripts/demo", "bash scripts/test"):
        assert command in shown.code
        assert os.path.exists(os.path.join(ROOT, command.split()[1]))


def test_every_message_the_code_writes_is_on_the_messages_page():
    """docs/reference/messages.md lists every refusal, error, warning and dead-letter reason the code
    writes (scripts/doc_messages.py): a new one fails here until the page is regenerated."""
    new, gone = _gen_docs().messages().stale_rows()
    how = (
        "run `python scripts/gen_docs.py`: it writes docs/reference/messages.md from the code, each "
        "message in the table of where users meet it. If users will meet a new one often, also give "
        "it a heading on docs/troubleshooting.md, `### `a part of the message that does not change``, "
        "with its cause and fix: the page links the two."
    )
    assert not new and not gone, (
        "docs/reference/messages.md is stale; "
        + how
        + "".join(f"\nnew in the code, not on the page: {row}" for row in new)
        + "".join(f"\non the page, no longer in the code: {row}" for row in gone)
    )


def test_troubleshooting_quotes_what_the_code_says():
    with open(os.path.join(ROOT, "docs", "troubleshooting.md"), encoding="utf-8") as f:
        quoted = re.findall(r"^### `([^`]+)`$", f.read(), flags=re.M)
    assert len(quoted) >= 20
    source = ""
    for path in glob.glob(os.path.join(ROOT, "overwindow", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            source += f.read()
    missing = [q for q in quoted if q not in source]
    assert not missing, f"docs/troubleshooting.md quotes messages the code no longer writes: {missing}"


def test_each_benchmark_script_writes_its_section_on_one_topic_page(tmp_path):
    """benchmarks/*.py write their sections between their markers on the topic page that holds them
    (``common.write_section``); each page is in the site's nav and BENCHMARKS.md's index, and no
    line of it is a wall of text."""
    path = os.path.join(ROOT, "benchmarks", "common.py")
    spec = importlib.util.spec_from_file_location("bench_common", path)
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    scripts = ""
    for path in glob.glob(os.path.join(ROOT, "benchmarks", "*.py")):
        with open(path, encoding="utf-8") as f:
            scripts += f.read()
    markers = re.findall(r'"(<!-- [\w-]+: ?begin -->)", "(<!-- [\w-]+: ?end -->)"', scripts)
    assert len(markers) >= 12
    with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as f:
        nav = f.read()
    with open(os.path.join(ROOT, "BENCHMARKS.md"), encoding="utf-8") as f:
        index = f.read()
    for begin, end in markers:
        page = common.page_of(begin)
        name = os.path.relpath(page, os.path.join(ROOT, "docs"))
        assert f": {name}\n" in nav, f"{name} is not in mkdocs.yml's nav"
        assert f"(docs/{name})" in index, f"BENCHMARKS.md does not link to docs/{name}"
        text = page.read_text()
        section = begin + text.split(begin, 1)[1].split(end, 1)[0] + end
        copy = tmp_path / "page.md"
        copy.write_text(text.replace(section, f"{begin}\nold\n{end}"))
        common.write_section(section, begin, end, copy)
        assert copy.read_text() == text
    for page in glob.glob(os.path.join(ROOT, "docs", "benchmarks", "*.md")):
        with open(page, encoding="utf-8") as f:
            long = [n for n, line in enumerate(f, 1) if len(line) > 2000]
        assert not long, f"{page}: lines {long} are over 2,000 characters"
