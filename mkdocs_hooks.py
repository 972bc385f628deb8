"""MkDocs hook: include BENCHMARKS.md (kept at the repo root) as the site's benchmarks page.

The project's Markdown nests lists by 2 spaces, which GitHub renders but Python-Markdown does
not (it needs 4), so the included text has the indentation inside its lists doubled. Links to
``docs/...`` are made relative to ``docs/``. Pages written in ``docs/`` itself are left alone:
they nest by 4 spaces.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

#: page in docs/ -> file at the repo root whose text replaces the page's
INCLUDES = {"benchmarks.md": "BENCHMARKS.md"}

_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_FENCE = re.compile(r"^\s*(```|~~~)")


def nest_by_four(text: str) -> str:
    """Double the leading spaces of indented lines inside lists, outside fenced code.

    An item that follows a deeper-indented line gets a blank line before it, or Python-Markdown
    would read it as a lazy continuation of that line.

    >>> nest_by_four("- a\\n  - b\\n    c\\n\\n  | t |\\ntext\\n  d")
    '- a\\n    - b\\n        c\\n\\n    | t |\\ntext\\n  d'
    >>> nest_by_four("- a\\n  more\\n- b")
    '- a\\n    more\\n\\n- b'
    """
    out: list[str] = []
    in_list = in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.strip():
            indent = len(line) - len(line.lstrip(" "))
            if indent == 0:
                in_list = bool(_ITEM.match(line))
            elif in_list:
                line = " " * (2 * indent) + line[indent:]
            if in_list and _ITEM.match(line) and out and out[-1].strip():
                before = out[-1]
                if len(before) - len(before.lstrip(" ")) > len(line) - len(line.lstrip(" ")):
                    out.append("")  # an item after an item's deeper block: not a lazy line
        out.append(line)
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    name = INCLUDES.get(page.file.src_uri)
    if name is None:
        return markdown
    root = Path(config.config_file_path).parent
    text = (root / name).read_text(encoding="utf-8")
    return nest_by_four(text).replace("](docs/", "](")
