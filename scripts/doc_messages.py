"""docs/reference/messages.md, written from the code (scripts/gen_docs.py calls ``page``): every
refusal and error message overwindow writes, and every reason a row is set aside with, as the
code words it, grouped by where a user meets it, each linked to its cause and fix on
docs/troubleshooting.md where that page has one.

What is read (``ast``, nothing imported): under overwindow/,

- every call of an overwindow error class (``WindowSpecError``, ``ViewFileError``, ... and their
  subclasses, found by their ``class`` statements), raised or returned, and of ``ValueError``,
  ``RuntimeError`` and ``TypeError`` in the modules at the user's edge (``EDGE``);
- every problem and warning a view file's checks collect (``problems.append(...)``, ``problem =
  ...``, ``warnings.append(...)``, ``LISTS``), every warning (``warn(...)``, ``print(...,
  file=sys.stderr)``), every message the functions of ``MESSAGE_FUNCTIONS`` return and the texts
  of the message tables ``TABLES``;
- the reasons a stream or a source gives a row it sets aside (``REASONS``: constants and the
  functions that word them, Spark's ``F.lit`` and ``F.format_string`` texts included).

A message is shown as its template: the text, each value it fills in as ``{name}`` (``{…}`` for
any other expression); a module's text constant as its text, in the modules that import it too.
One built elsewhere (``raise ViewFileError("\\n".join(problems))``) is shown by its parts, the
problems. O(size of overwindow/).
"""

from __future__ import annotations

import ast
import glob
import os
import re
import unicodedata
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = "docs/reference/messages.md"
TROUBLESHOOTING = "docs/troubleshooting.md"

# the error classes a user meets; their subclasses are found in the code
ERRORS = {"WindowSpecError", "WindowRuntimeError", "ViewFileError", "SinkDriftError", "StateFormatError"}
ERRORS |= {"SparkStringError", "CastError", "DsnError", "ViewRunError", "CheckpointFileError"}
ERRORS |= {"InputEndedError", "RowBoundError", "WorkerPythonError", "DivisionByZero"}
# Python's own classes count where overwindow raises them at the user's edge
PLAIN = {"ValueError", "RuntimeError", "TypeError"}
EDGE = ("overwindow/pipeline/", "overwindow/spark/", "overwindow/spec.py", "overwindow/udaf.py")
EDGE += ("overwindow/evaluator.py", "overwindow/__main__.py")
# functions whose returned strings are problems a check reports
MESSAGE_FUNCTIONS = {"_kafka_servers_problem", "_creatable", "_same_table", "kind_error", "_column_problem"}
MESSAGE_FUNCTIONS |= {"filter_problem", "_refused", "_table", "_ambiguous", "unbounded_reach", "never_closes"}
MESSAGE_FUNCTIONS |= {"spec_problem", "_classify", "check_checkpoint", "_change", "_in_use"}
MESSAGE_FUNCTIONS |= {"syntax_error", "_row_bound", "_csv_header", "set_override"}
# lists a check collects its problems or warnings in, by name (None: in every module)
LISTS = {"problems": None, "warnings": None, "found": ("overwindow/pipeline/sandbox.py",)}
# module-level dicts whose values are messages (or their ends), by file
TABLES = {"overwindow/pipeline/sandbox.py": {"_REASONS"}}
# where rows set aside get their reason: module constants and functions, by file
REASONS = {
    "overwindow/logical/bind.py": {"failure"},
    "overwindow/streaming/changes.py": {"NOT_HELD", "ops_of"},
    "overwindow/streaming/group_by.py": {"NO_CLOSE"},
    "overwindow/pipeline/late.py": {"reason"},
    "overwindow/pipeline/sources.py": {"NOT_UTF8", "_json_rows", "_checked", "_debezium_images"},
}
RUN_TIME = {"WindowRuntimeError", "CastError", "DivisionByZero", "FrameErrors"}

# (key, heading, what it covers, files by prefix)
GROUPS = [
    (
        "view",
        "View files: `overwindow validate` and `run`, before Spark starts",
        "A view file's keys, its SQL and what it names (folders, tables, brokers, environment "
        "variables); each problem names the file, the key and its line.",
        ("overwindow/pipeline/view.py", "overwindow/pipeline/view_query.py")
        + ("overwindow/pipeline/view_keys.py", "overwindow/pipeline/validate.py")
        + ("overwindow/pipeline/sandbox.py",)
        + ("overwindow/pipeline/spark_strings.py", "overwindow/pipeline/dsn.py", "overwindow/__main__.py"),
    ),
    (
        "query",
        "SQL, window calls and the Python API, when the query is built",
        "`WindowSpecError` (and `TypeError` for a wrong argument) from `overwindow.evaluate`, "
        "`OverWindow`, `overWindow`, `overwindow.select` and `overwindow.sql`; a view file's "
        "calls and query get the same words with the file and line in front.",
        (),
    ),
    (
        "checkpoint",
        "The checkpoint, its state and the table it pairs with",
        "When a job starts on a checkpoint, or a stream reads the state it left.",
        ("overwindow/pipeline/checkpoint.py", "overwindow/pipeline/fingerprint.py")
        + ("overwindow/pipeline/job_lock.py", "overwindow/streaming/state.py"),
    ),
    (
        "values",
        "A row's values, at run time",
        "`WindowRuntimeError` from `overwindow.evaluate`; on a stream the row is set aside with "
        "this message as its reason, counted and (with `dead_letter`) kept, and the query goes on.",
        (),
    ),
    (
        "aside",
        "Rows set aside: the reasons a dead letter gives",
        "The `reason` of a record in the dead-letter folder, besides the messages above.",
        (),  # REASONS says where these are
    ),
    (
        "run",
        "Running a job",
        "While `overwindow run` or a query runs: its workers, its input, its bounds.",
        ("overwindow/pipeline/job.py", "overwindow/pipeline/session.py", "overwindow/pipeline/failures.py")
        + ("overwindow/spark/executors.py",),
    ),
    (
        "sinks",
        "Sinks",
        "Writing a view's rows: PostgreSQL, SQLite, Parquet, Delta Lake, Iceberg and Kafka tables.",
        ("overwindow/pipeline/sinks.py", "overwindow/pipeline/delta.py", "overwindow/pipeline/iceberg.py")
        + ("overwindow/pipeline/table_formats.py", "overwindow/pipeline/kafka_sink.py"),
    ),
    (
        "kafka",
        "Kafka sources and `overwindow produce`",
        "Reading a topic (the Python reader), its records, and the demo's producer.",
        ("overwindow/pipeline/kafka.py", "overwindow/pipeline/kafka_alignment.py")
        + ("overwindow/pipeline/kafka_records.py", "overwindow/pipeline/producer.py"),
    ),
]


@dataclass(frozen=True)
class Message:
    group: str
    text: str  # the template
    where: str  # file and function


def _template(node: ast.AST, constants: dict[str, str]) -> str | None:
    """The text of a message expression, each value it fills in as {name}; None for no text."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = ""
        for part in node.values:
            if isinstance(part, ast.Constant):
                out += str(part.value)
            elif _default(part.value) is not None:
                out += _default(part.value)
            elif isinstance(part.value, ast.IfExp) and isinstance(part.value.body, ast.Constant):
                out += str(part.value.body.value)  # the words it adds in the case they matter
            else:
                simple = isinstance(part.value, (ast.Name, ast.Attribute))
                expr = ast.unparse(part.value) if simple else "…"
                out += "{" + (expr if len(expr) <= 24 else "…") + "}"
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left, constants), _template(node.right, constants)
        if left is None and right is None:
            return None
        return (left if left is not None else "{…}") + (right if right is not None else "{…}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _template(node.left, constants)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _template(node.func.value, constants)
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, ast.IfExp):
        return _template(node.body, constants) or _template(node.orelse, constants)
    return None


def _default(node: ast.AST) -> str | None:
    """The text ``table.get(key, "text")`` falls back on (the message most keys get)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        if len(node.args) == 2 and isinstance(node.args[1], ast.Constant):
            return node.args[1].value if isinstance(node.args[1].value, str) else None
    return None


def _texts(node: ast.AST, constants: dict[str, str]) -> list[str]:
    """Each message a node words: both sides of a conditional, each item of a list; text without
    two words in a row (a name, a path) is none. O(size of the node).

    >>> node = ast.parse('f"{view.path}: {n} rows, more than {limit + 1}" if n else "no rows"').body[0]
    >>> _texts(node.value, {})
    ['{view.path}: {n} rows, more than {…}', 'no rows']
    """
    if isinstance(node, ast.IfExp):
        return _texts(node.body, constants) + _texts(node.orelse, constants)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [t for e in node.elts for t in _texts(e, constants)]
    if isinstance(node, (ast.DictComp, ast.ListComp, ast.GeneratorExp)):
        return _texts(node.value if isinstance(node, ast.DictComp) else node.elt, constants)
    text = _template(node, constants)
    return [text] if text is not None and re.search(r"[A-Za-z]{2,} [A-Za-z{]", text) else []


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _error_classes(trees: dict[str, ast.Module]) -> set[str]:
    """ERRORS and every class of the code that derives from one of them."""
    found, grew = set(ERRORS), True
    while grew:
        grew = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in found:
                    if any(_name(b) in found for b in node.bases):
                        found.add(node.name)
                        grew = True
    return found


def _group(path: str, cls: str | None) -> str:
    for key, _, _, files in GROUPS:
        if any(path.startswith(f) for f in files):
            return key
    if cls in RUN_TIME:
        return "values"
    if cls == "StateFormatError":
        return "checkpoint"
    if cls in ("RowBoundError", "WorkerPythonError", "ViewRunError", "InputEndedError"):
        return "run"
    running = path.startswith(("overwindow/streaming/", "overwindow/pipeline/"))
    if running and cls not in (None, "WindowSpecError"):
        return "run"
    return "query"


def _constants(tree: ast.Module) -> dict[str, str]:
    """A module's text constants, by name (``NAME = "text"``)."""
    return {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(getattr(n.value, "value", None), str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }


def _imported(tree: ast.Module, constants: dict[str, dict[str, str]]) -> dict[str, str]:
    """The text constants a module imports by name from another of overwindow's (``constants``: each
    module's own, by file), under the names it imports them as."""
    out = {}
    for n in tree.body:
        if isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").startswith("overwindow."):
            theirs = constants.get(n.module.replace(".", "/") + ".py", {})
            out |= {a.asname or a.name: theirs[a.name] for a in n.names if a.name in theirs}
    return out


class _Finder(ast.NodeVisitor):
    """The messages of one module (module docstring); ``imported``: the text constants it imports."""

    def __init__(self, path: str, tree: ast.Module, errors: set[str], imported: dict[str, str]):
        self.path, self.errors, self.found = path, errors, []
        self.constants = _constants(tree)
        self.reasons = REASONS.get(path, set())
        self.stack: list[str] = []
        for name in self.reasons & set(self.constants):
            self._add("aside", [self.constants[name]], name)
        self.constants = imported | self.constants
        for n in tree.body:
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict):
                names = {_name(target) for target in n.targets} & TABLES.get(path, set())
                for name in names:
                    for value in n.value.values:
                        self._add(_group(path, None), _texts(value, self.constants), name)
        self.visit(tree)

    def _add(self, group: str, texts: list[str], where: str | None = None) -> None:
        where = f"`{self.path}` ({where or (self.stack[-1] if self.stack else 'module')})"
        self.found += [Message(group, t, where) for t in texts]

    def visit_FunctionDef(self, node):
        self.stack.append(node.name)
        if node.name in self.reasons:
            self._reasons(node)
        elif node.name in MESSAGE_FUNCTIONS:
            for n in ast.walk(node):
                if isinstance(n, ast.Return) and n.value is not None:
                    self._add(_group(self.path, None), _texts(n.value, self.constants))
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _reasons(self, node) -> None:
        """Every message-like text of a function that words reasons (REASONS)."""
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and _name(n.func) in ("lit", "format_string") and n.args:
                # Spark's format_string fills in %s and %d; a text ending ": " is followed by one
                texts = [re.sub(r"%[sd]", "{…}", s) for s in _texts(n.args[0], self.constants)]
                self._add("aside", [s + "{…}" if s.endswith(": ") else s for s in texts])
            elif isinstance(n, (ast.Return, ast.Assign)) and n.value is not None:
                if not isinstance(n.value, ast.Call):
                    self._add("aside", _texts(n.value, self.constants))

    def visit_Call(self, node):
        cls = _name(node.func)
        plain = cls in PLAIN and self.path.startswith(EDGE)
        if (cls in self.errors or plain) and node.args:
            self._add(_group(self.path, cls), _texts(node.args[0], self.constants))
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "extend") and node.args:
            files = LISTS.get(_name(node.func.value), ())
            if files is None or self.path in files:
                self._add(_group(self.path, None), _texts(node.args[0], self.constants))
        elif cls == "warn" and node.args:
            self._add(_group(self.path, None), _texts(node.args[0], self.constants))
        elif (
            cls == "print"
            and node.args
            and any(k.arg == "file" and ast.unparse(k.value) == "sys.stderr" for k in node.keywords)
        ):
            self._add(_group(self.path, None), _texts(node.args[0], self.constants))
        self.generic_visit(node)

    def visit_Assign(self, node):
        if any(_name(t) == "problem" for t in node.targets):
            self._add(_group(self.path, None), _texts(node.value, self.constants))
        self.generic_visit(node)


def messages() -> list[Message]:
    """Every message of the code (module docstring), once per group, text and place."""
    paths = sorted(glob.glob(os.path.join(ROOT, "overwindow", "**", "*.py"), recursive=True))
    trees = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            trees[os.path.relpath(path, ROOT).replace(os.sep, "/")] = ast.parse(f.read())
    errors = _error_classes(trees)
    constants = {path: _constants(tree) for path, tree in trees.items()}
    found: list[Message] = []
    for path, tree in trees.items():
        found += _Finder(path, tree, errors, _imported(tree, constants)).found
    return found


def slug(text: str) -> str:
    """A heading's anchor as MkDocs (Python-Markdown's toc) makes it."""
    text = re.sub(r"<[^>]*>|`", "", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def explained() -> list[str]:
    """The messages docs/troubleshooting.md explains: the quoted part of each ``### `...` `` heading."""
    with open(os.path.join(ROOT, TROUBLESHOOTING), encoding="utf-8") as f:
        return re.findall(r"^### `([^`]+)`$", f.read(), flags=re.M)


def _code(text: str) -> str:
    """Text as a code span inside a table cell."""
    text = text.replace("\n", " ").replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


def rows(group: str, found: list[Message], quotes: list[str]) -> list[str]:
    """The table rows of one group: each message once, where it is written, its troubleshooting
    entry if any."""
    places: dict[str, list[str]] = {}
    for m in found:
        if m.group == group and m.where not in places.setdefault(m.text, []):
            places[m.text].append(m.where)
    out = []
    for text in sorted(places, key=lambda t: (t.lower().lstrip("{…}: "), t)):
        fixes = [q for q in quotes if q in text]
        fix = ", ".join(f"[{q}](../troubleshooting.md#{slug(q)})" for q in fixes) or ""
        out.append(f"| {_code(text)} | {fix} | {'<br>'.join(sorted(places[text]))} |")
    return out


def page() -> str:
    found, quotes = messages(), explained()
    out = [
        "# Every message",
        "",
        "<!-- generated by `python scripts/gen_docs.py` from the messages in overwindow/'s code "
        "(scripts/doc_messages.py says what it reads); do not edit by hand -->",
        "",
        "Every refusal and error overwindow writes, and every reason it gives a row it sets aside, "
        "as the code words it: `{name}` stands for a value the message fills in (`{…}` for one "
        "the code computes), often the view file and line or the call's SQL. The common ones have their "
        "cause and fix on [Troubleshooting](../troubleshooting.md), linked from the second column; "
        "the rest say what to change in their own words. A message Spark or a library writes "
        "(PySpark's errors, a broker's, PostgreSQL's) comes through unchanged and is not listed.",
        "",
    ]
    for key, heading, what, _ in GROUPS:
        group_rows = rows(key, found, quotes)
        out += [f"## {heading}", "", what, "", "| message | cause and fix | written in |"]
        out += ["| --- | --- | --- |", *group_rows, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def stale_rows() -> tuple[list[str], list[str]]:
    """(the rows the page lacks: messages new to the code, the rows it holds that the code no longer
    gives), against the committed page."""
    path = os.path.join(ROOT, PAGE)
    old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    new = page()
    old_rows = {line for line in old.splitlines() if line.startswith("| `")}
    new_rows = {line for line in new.splitlines() if line.startswith("| `")}
    return sorted(new_rows - old_rows), sorted(old_rows - new_rows)
