"""MkDocs hooks (mkdocs.yml): the site's home page is the README itself, made at build time,
so the front page and the site's home never disagree and nothing is kept twice."""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

README = Path(__file__).resolve().parent.parent / "README.md"


def home_page() -> str:
    """The README with its links into docs/ made relative to the site's root."""
    text = README.read_text(encoding="utf-8")
    return re.sub(r"\]\(docs/", "](", text)


def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "index.md", content=home_page()))
    return files
