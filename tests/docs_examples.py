"""The code blocks of README.md and docs/**/*.md, by their info string, for tests/test_docs.py (no
Spark) and tests/spark/test_docs_spark.py (the ``python spark`` blocks).

Info strings: ``python`` runs without Spark; ``python spark`` runs in the one Spark test, the blocks
of a page in order, sharing one namespace; ``python fragment`` and ``toml fragment`` are parts of
something larger, parsed only; ``toml`` is a view file (checked as ``overwindow validate`` checks
one) or a part of one (each section and key checked against the view-file keys); ``sql`` is read as
overwindow.sql reads a query; ``bash`` and ``text`` are shown, not run.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = {"python", "python spark", "python fragment", "toml", "toml fragment", "sql", "bash", "text"}
_FENCE = re.compile(r"^```(.*)$")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository's top
    line: int  # of the opening fence, 1-based
    kind: str  # the info string
    code: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[str]:
    """README.md and every Markdown page of the docs, relative to the repository's top."""
    found = glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
    return ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in found)


def blocks(page: str) -> list[Block]:
    """The fenced code blocks of one page, in order. O(lines)."""
    out, opened, kind, body = [], None, "", []
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        for number, line in enumerate(f.read().split("\n"), 1):
            fence = _FENCE.match(line)
            if opened is None and fence:
                opened, kind, body = number, fence.group(1).strip(), []
            elif opened is not None and line.startswith("```"):
                out.append(Block(page, opened, kind, "\n".join(body) + "\n"))
                opened = None
            elif opened is not None:
                body.append(line)
    assert opened is None, f"{page}:{opened}: a code block is never closed"
    return out


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page)]
