"""MkDocs hooks (mkdocs.yml ``hooks``).

- BENCHMARKS.md, the index of the benchmark pages (docs/benchmarks/*.md, which benchmarks/*.py
  write into), stays at the repository's top and is served as the page benchmarks.md; its links
  into docs/ are made relative to the site. The images the pages show (benchmarks/results/*.png,
  linked from docs/benchmarks/ as ../../benchmarks/results/) are served beside those pages.
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
        uri = "benchmarks/results/" + os.path.basename(image)
        files.append(File.generated(config, uri, abs_src_path=image))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "benchmarks.md":
        markdown = markdown.replace("](docs/", "](")
    elif page.file.src_uri.startswith("benchmarks/"):
        markdown = markdown.replace("](../../benchmarks/results/", "](results/")
    return _INFO.sub(r"\1", markdown)
