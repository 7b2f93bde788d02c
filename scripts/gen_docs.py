"""The docs' generated reference pages, written from the code (never kept by hand):

- docs/reference/functions.md: every function of the catalog (``overwindow.logical.functions``:
  what it accepts, its result type, its reach) with its kernel (``overwindow.physical.registry``),
  and, for it and for each frame and option, whether it runs in batch (``overwindow.evaluate`` on a
  small table), on window close, on update and on the chunked layouts (an ``OverWindow`` built for
  each mode: the refusal is the one a user gets) and what a stream keeps in state for it (from the
  call's reach);
- docs/reference/view-keys.md: every view-file key, from the table the view-file reader checks
  (``overwindow.pipeline.view_keys.key_reference``, which ``overwindow keys`` prints).
- docs/reference/messages.md: every message the code writes (refusals, errors, warnings, the
  reasons of rows set aside), grouped by where a user meets it (scripts/doc_messages.py).

    python scripts/gen_docs.py            # rewrite the three pages
    python scripts/gen_docs.py --check    # exit 1 naming the stale pages (tests/test_docs.py)
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = "python scripts/gen_docs.py"

# one call per function, in SQL, over the columns of TABLE ("{over}" is its OVER clause)
CALLS = {
    "count_star": "count(*)",
    "count_distinct": "count(DISTINCT x)",
    "bool_and": "bool_and(b)",
    "bool_or": "bool_or(b)",
    "bit_and": "bit_and(i)",
    "bit_or": "bit_or(i)",
    "bit_xor": "bit_xor(i)",
    "percentile_cont": "percentile_cont(0.5) WITHIN GROUP (ORDER BY x)",
    "percentile_disc": "percentile_disc(0.5) WITHIN GROUP (ORDER BY x)",
    "collect_union": "collect_union(a)",
    "listagg": "listagg(s, ',')",
    "max_by": "max_by(x, y)",
    "min_by": "min_by(x, y)",
    "percentile_approx": "percentile_approx(x, 0.5)",
    "histogram_numeric": "histogram_numeric(x, 3)",
    "nth_value": "nth_value(x, 2)",
    "ntile": "ntile(2)",
    "counter_diff": "counter_diff(x)",
}
TWO_ARGS = ("covar_pop", "covar_samp", "corr")
SLIDING = "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW"

# (what, call): frames and options, shown with sum(x) unless the call names another function
FRAMES = [
    ("ORDER BY alone: the default frame, running (RANGE, peers included)", "sum(x) OVER (ORDER BY t)"),
    ("sliding back", f"sum(x) OVER (ORDER BY t {SLIDING})"),
    ("around the row", "sum(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING)"),
    ("ahead", "sum(x) OVER (ORDER BY t ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING)"),
    ("running ROWS", "sum(x) OVER (ORDER BY t ROWS UNBOUNDED PRECEDING)"),
    ("to the end", "sum(x) OVER (ORDER BY t ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"),
    (
        "whole partition, ordered",
        "sum(x) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)",
    ),
    ("whole partition, no ORDER BY", "sum(x) OVER ()"),
    ("RANGE by value, back", "sum(x) OVER (ORDER BY t RANGE BETWEEN 10 PRECEDING AND CURRENT ROW)"),
    ("RANGE by value, around", "sum(x) OVER (ORDER BY t RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING)"),
    ("GROUPS (more of SQL)", "sum(x) OVER (ORDER BY t GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW)"),
    ("EXCLUDE (more of SQL)", f"sum(x) OVER (ORDER BY t {SLIDING} EXCLUDE CURRENT ROW)"),
    ("FILTER", f"sum(x) FILTER (WHERE y > 0) OVER (ORDER BY t {SLIDING})"),
    ("DISTINCT (more of SQL)", f"count(DISTINCT x) OVER (ORDER BY t {SLIDING})"),
    ("lag IGNORE NULLS", "lag(x) IGNORE NULLS OVER (ORDER BY t)"),
    ("last_value IGNORE NULLS", f"last_value(x) IGNORE NULLS OVER (ORDER BY t {SLIDING})"),
    ("lag with a default", "lag(x, 3, 0.0) OVER (ORDER BY t)"),
    ("an expression over a window", "x - lag(x) OVER (ORDER BY t)"),
    ("SESSION WITH GAP ([Sessions](../sessions.md))", "sum(x) OVER (ORDER BY t SESSION WITH GAP 10)"),
]

# (column, emit, layout): the streaming modes, as OverWindow takes them
MODES = [
    ("window close", "on_window_close", "whole"),
    ("window close, chunked", "on_window_close", "chunked"),
    ("on update", "on_update", "whole"),
    ("on update, chunked", "on_update", "chunked"),
]


def _table() -> pa.Table:
    """A few rows of every column the sample calls read."""
    return pa.table(
        {
            "t": pa.array([1, 2, 3, 4, 5], pa.int64()),
            "x": [1.5, None, 3.0, 4.0, 2.0],
            "y": [2.0, 1.0, None, 5.0, 3.0],
            "b": [True, False, None, True, True],
            "i": pa.array([1, 3, 7, None, 2], pa.int64()),
            "a": [[1], [2, 3], None, [], [4]],
            "s": ["a", "b", None, "d", "e"],
        }
    )


def _sample(name: str) -> str:
    """The sample call of a catalog function, with its OVER clause."""
    from overwindow.logical.functions import Kind, lookup

    info = lookup(name)
    text = CALLS.get(name)
    if text is None:
        if info.kind is Kind.RANKING:
            text = f"{name}()"
        elif info.n_args == 2 or name in TWO_ARGS:
            text = f"{name}(y, x)"
        else:
            text = f"{name}(x)"
    frame = f" {SLIDING}" if info.uses_frame else ""
    return f"{text} OVER (ORDER BY t{frame})"


def _cell(text: str) -> str:
    """Text as one Markdown table cell (outside code spans, < and > are not HTML tags)."""
    parts = text.replace("|", "\\|").replace("\n", " ").split("`")
    parts[::2] = [p.replace("<", "&lt;").replace(">", "&gt;") for p in parts[::2]]
    return "`".join(parts)


class Refusals:
    """The refusals a table quotes, numbered in order of first use: a cell says "no (n)", the list
    below the table says why."""

    def __init__(self):
        self.numbers: dict[str, int] = {}

    def cell(self, run: str) -> str:
        if not run.startswith("no: "):
            return run
        number = self.numbers.setdefault(run[4:], len(self.numbers) + 1)
        return f"no ({number})"

    def notes(self) -> list[str]:
        out = ["", "Refusals, as the user gets them (`v` is the call's alias):", ""]
        return out + [f"{n}. {_cell(text)}" for text, n in self.numbers.items()]


def _runs(call: str) -> dict[str, str]:
    """Per mode (batch and MODES): "yes", or "no: " and the refusal a user gets (for the alias v)."""
    from overwindow.errors import WindowSpecError
    from overwindow.evaluator import evaluate
    from overwindow.spec import OverWindow

    out = {}
    try:
        evaluate(_table(), f"{call} AS v")
        out["batch"] = "yes"
    except WindowSpecError as e:
        out["batch"] = f"no: {e}"
    for column, emit, layout in MODES:
        try:
            OverWindow(f"{call} AS v", emit=emit, stateLayout=layout, rowKey="t")
            out[column] = "yes"
        except WindowSpecError as e:
            out[column] = f"no: {e}"
    return out


def _back(bound, unit) -> str | None:
    """How far back from a row its reads go, in words (None: nothing before it)."""
    from overwindow.logical.frame import BoundKind

    if bound.kind is BoundKind.UNBOUNDED_PRECEDING:
        return "every row before"
    if bound.kind is not BoundKind.PRECEDING:
        return None
    if unit.value == "RANGE":
        return f"the rows up to {bound.offset} before in ORDER BY value"
    what = "peer group" if unit.value == "GROUPS" else "row"
    return f"the last {what}" if bound.offset == 1 else f"the last {bound.offset} {what}s"


def state_kept(call: str, emit: str) -> str:
    """What a stream keeps in state per partition for one call, in words, from its reach (the rows a
    change alters) and what its kernels read (``WindowCall.reach``, ``reads``). O(1).

    >>> state_kept("lag(x, 3) OVER (ORDER BY t)", "on_window_close")
    'rows the watermark has not released; the last 3 rows'
    >>> state_kept("sum(x) OVER (ORDER BY t SESSION WITH GAP 10)", "on_update")
    'with a watermark: the rows of the sessions it has not closed; without one, every live row'
    """
    from overwindow.logical.frame import BoundKind
    from overwindow.logical.functions import Counts
    from overwindow.logical.parse import parse_window

    (c,) = parse_window(f"{call} AS v").calls
    reads, reach = c.reads, c.reach
    counts = {Counts.ROWS: "a count of the rows before", Counts.GROUPS: "a count of the peer groups before"}
    count = counts.get(c.info.counts)
    if c.frame.is_session:  # a session closes once the watermark is past its last row + the gap
        if emit == "on_window_close":
            return "the rows of the sessions the watermark has not closed"
        return "with a watermark: the rows of the sessions it has not closed; without one, every live row"
    if emit == "on_window_close":
        parts = ["rows the watermark has not released"]
        end = reach.end
        if end.kind is BoundKind.FOLLOWING:
            wait = (
                f"the watermark to pass the key + {end.offset}"
                if reach.unit.value == "RANGE"
                else f"{end.offset} later {'peer group' if reach.unit.value == 'GROUPS' else 'row'}(s)"
            )
            parts.append(f"released rows waiting for {wait}")
        back = _back(reads.start, reads.unit)
        if back == "every row before":
            parts = ["every row of the partition"]
        elif back:
            parts.append(back)
        if count:
            parts.append(count)
        return "; ".join(parts)
    if reach.start.kind is BoundKind.UNBOUNDED_PRECEDING and count is None or reads.is_whole_partition:
        return "every live row"
    if c.unbounded_reach and count is None:
        return "every live row"
    parts = ["with a watermark: rows at or above it"]
    if reach.end.kind is BoundKind.FOLLOWING:
        parts.append(f"the rows whose frame reaches it ({reach.end.offset} {reach.unit.value} FOLLOWING)")
    back = _back(reads.start, reads.unit)
    if back:
        parts.append(back)
    if count:
        parts.append(count)
    return "; ".join(parts) + "; without one, every live row"


def functions_page() -> str:
    from overwindow.logical.functions import ALIASES, BUILTINS
    from overwindow.physical.registry import KERNELS

    aliases: dict[str, list[str]] = {}
    for alias, name in ALIASES.items():
        aliases.setdefault(name, []).append(alias)
    modes = ["batch"] + [m[0] for m in MODES]
    out = [
        "# Functions and emit modes",
        "",
        f"<!-- generated by `{COMMAND}` from the function catalog; do not edit by hand -->",
        "",
        "Which function, frame and option runs where, and what a stream keeps in state for it. "
        "*batch* is `overwindow.evaluate`; *window close* and *on update* are the emit modes of "
        "`overWindow`, `overwindow.select`, `overwindow.sql` and view files ([Concepts](../concepts.md)); "
        '*chunked* is `stateLayout="chunked"` (`state_layout` in a view file). A *no* cell quotes the '
        "refusal you get, when the query is built (a view file: before Spark starts). Each cell was "
        "computed by building the call in that mode.",
        "",
        "## Functions",
        "",
        "Each function with a sliding frame (`" + SLIDING + "`) where it takes a frame. Frames and "
        "options: [below](#frames-and-options).",
        "",
        "| function | arguments | result | reach | kernel | " + " | ".join(modes) + " |",
        "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in modes) + " |",
    ]
    refusals = Refusals()
    for name, info in BUILTINS.items():
        call = _sample(name)
        runs = _runs(call)
        shown = name + (f" ({', '.join(aliases[name])})" if name in aliases else "")
        args = ", ".join(a.value for a in info.args) or "-"
        if info.params:
            args += "; " + ", ".join(info.params)
        cells = [args, info.result.value, info.reach.value, KERNELS[name].name]
        cells += [refusals.cell(runs[m]) for m in modes]
        out.append(f"| `{shown}`<br>`{_cell(call)}` | " + " | ".join(_cell(c) for c in cells) + " |")
    out += refusals.notes()
    refusals = Refusals()
    out += [
        "",
        "## Frames and options",
        "",
        "| frame or option | call | " + " | ".join(modes) + " |",
        "| --- | --- | " + " | ".join("---" for _ in modes) + " |",
    ]
    for what, call in FRAMES:
        runs = _runs(call)
        cells = [what, f"`{call}`"] + [refusals.cell(runs[m]) for m in modes]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    out += refusals.notes()
    out += [
        "",
        "## What a stream keeps in state",
        "",
        "Per partition (a `groupBy` key), for one call; a query keeps the union over its calls. Emit "
        "on update keeps every live row without a watermark; with one on its ORDER BY column it "
        "evicts the rows no change at or above the watermark can reach. `stateTtl` (window close) "
        "forgets a partition once the watermark passes its newest row by the TTL; `maxRowsPerKey` "
        "bounds the rows a partition may hold ([Concepts](../concepts.md#bounded-state-for-top-n-on-update) "
        "for Top-N).",
        "",
        "| call | window close keeps | on update keeps |",
        "| --- | --- | --- |",
    ]
    seen = set()
    for call in [_sample(n) for n in ("row_number", "dense_rank", "ntile", "lag", "lead", "sum")] + [
        c for _, c in FRAMES if "()" not in c and "x - " not in c
    ]:
        if call in seen:
            continue
        seen.add(call)
        runs = _runs(call)
        close = state_kept(call, "on_window_close") if runs["window close"] == "yes" else "(refused)"
        update = state_kept(call, "on_update")
        out.append(f"| `{_cell(call)}` | {_cell(close)} | {_cell(update)} |")
    out += [
        "",
        "Grouped-aggregate `pandas_udf`s run over `ROWS` and `RANGE` frames in both emit modes "
        "([SQL and PySpark Columns](../sql-and-columns.md)); Python aggregates registered with "
        "`overwindow.register_aggregate` run wherever the built-in aggregates do.",
    ]
    return "\n".join(out) + "\n"


def _examples() -> dict[tuple[str, str], tuple[str, str]]:
    """Per view-file key, the first value the view files of README.md and docs/ give it, as TOML,
    and the page it is on."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from docs_examples import all_blocks

    from overwindow.pipeline.view import tomllib
    from overwindow.pipeline.view_keys import KEYS_BY_NAME, toml_value

    found: dict[tuple[str, str], tuple[str, str]] = {}
    for block in all_blocks():
        if block.kind != "toml":
            continue
        for section, body in tomllib.loads(block.code).items():
            for key, value in body.items():
                if (section, key) in KEYS_BY_NAME and (section, key) not in found:
                    found[section, key] = (f"{key} = {toml_value(value)}", block.page)
    return found


def view_keys_page() -> str:
    from overwindow.pipeline.view_keys import KEYS, key_reference

    examples = _examples()
    out = [
        "# View-file keys",
        "",
        f"<!-- generated by `{COMMAND}` from overwindow/pipeline/view_keys.py's KEYS and the docs' view "
        "files; do not edit by hand -->",
        "",
        "Every key a view file may hold; `overwindow keys` prints the same table. Relative paths are "
        "relative to the view file, `~` is the home folder; an empty value is refused. A key the "
        "table does not know is refused with its line and the nearest known key (`partiton_by`); a "
        "known key that does not apply to the view (`topic` of a file source) is a warning. "
        "`--set section.key=value` overrides a key on the command line.",
        "",
        key_reference(),
        "",
        "## Examples",
        "",
        "Each key as the view files of these pages first give it (every one checked by the tests).",
        "",
        "| section | example | from |",
        "| --- | --- | --- |",
    ]
    for k in KEYS:
        if (k.section, k.name) in examples:
            text, page = examples[k.section, k.name]
            link = os.path.relpath(page, "docs/reference") if page.startswith("docs/") else page
            shown = f"[{page}]({link})" if page.startswith("docs/") else page
            out.append(f"| `[{k.section}]` | {_cell(f'`{text}`')} | {shown} |")
    missing = [f"`[{k.section}] {k.name}`" for k in KEYS if (k.section, k.name) not in examples]
    if missing:
        out += ["", "Not in any view file of these pages yet: " + ", ".join(missing) + "."]
    return "\n".join(out) + "\n"


def messages():
    """scripts/doc_messages.py, which writes the page of every message the code writes."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import doc_messages

    return doc_messages


def pages() -> dict[str, str]:
    """Each generated page's path (from the repository's top) and text."""
    return {
        "docs/reference/functions.md": functions_page(),
        "docs/reference/view-keys.md": view_keys_page(),
        messages().PAGE: messages().page(),
    }


def stale() -> list[str]:
    """The generated pages whose committed text differs from what the code gives now."""
    out = []
    for path, text in pages().items():
        full = os.path.join(ROOT, path)
        if not os.path.exists(full) or open(full, encoding="utf-8").read() != text:
            out.append(path)
    return out


def main(argv: list[str]) -> int:
    if "--check" in argv:
        old = stale()
        for path in old:
            print(f"{path} is stale: run `{COMMAND}`", file=sys.stderr)
        return 1 if old else 0
    for path, text in pages().items():
        full = os.path.join(ROOT, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main(sys.argv[1:]))
