"""Rewrite the configuration tables of docs/configuration.md from :data:`toolrag.env_vars.ENV_VARS` and
``LIBRARY_ENV``.

``python -m scripts.env_table`` replaces what lies between the two markers of docs/configuration.md;
``tests/test_config.py`` fails while the page and the table differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

from toolrag.env_vars import env_table_markdown

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
BEGIN = "<!-- env-table: begin (python -m scripts.env_table) -->"
END = "<!-- env-table: end -->"


def section(text: str) -> str:
    """What the page holds between the markers (ValueError naming the marker when one is missing)."""
    for marker in (BEGIN, END):
        if marker not in text:
            raise ValueError(f"docs/configuration.md has no {marker!r} line; put the two markers around its tables")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def rendered(text: str) -> str:
    """``text`` with the section between the markers replaced by the rendered tables."""
    section(text)
    head, rest = text.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{env_table_markdown()}{END}{rest.split(END, 1)[1]}"


def main() -> int:
    text = PAGE.read_text(encoding="utf-8")
    new = rendered(text)
    if new != text:
        PAGE.write_text(new, encoding="utf-8")
        print(f"rewrote the configuration tables of docs/{PAGE.name}")
    else:
        print(f"docs/{PAGE.name} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
