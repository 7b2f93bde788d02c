"""MkDocs hooks (mkdocs.yml ``hooks``).

- BENCHMARKS.md stays at the repository's top (benchmarks/*.py write into it) and is served as the
  page benchmarks.md, with the images it shows (benchmarks/results/*.png).
- A code block's info string may say more than its language (```python fragment, ```python spark:
  how tests/test_docs.py runs it); Markdown's fenced blocks take one word, so the rest is dropped
  before the page is rendered.
"""

from __future__ import annotations

import glob
import os
import re

from mkdocs.structure.files import File

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INFO = re.compile(r"^(```[\w+-]+) [\w ]+$", flags=re.M)


def on_files(files, config):
    files.append(File.generated(config, "benchmarks.md", abs_src_path=os.path.join(ROOT, "BENCHMARKS.md")))
    for image in glob.glob(os.path.join(ROOT, "benchmarks", "results", "*.png")):
        uri = os.path.relpath(image, ROOT).replace(os.sep, "/")
        files.append(File.generated(config, uri, abs_src_path=image))
    return files


def on_page_markdown(markdown, page, config, files):
    return _INFO.sub(r"\1", markdown)
