"""Example requests kept beside a catalog: ``extra_examples.yaml``, a mapping of tool id to requests.

Imported catalogs (an MCP server's ``tools.json``, an OpenAI ``tools`` file) are rewritten by the next import
and are not edited by hand, so the example requests an author adds to them live in this file of the catalog's
folder, which the loader reads after the profiles and adds to each tool's own examples (a request the tool
already has is not added twice)::

    # extra_examples.yaml
    read_file:
      - show me what's in config.yaml
      - 打开 notes.txt 看看
    "slack_post_message": ["post 'deploy done' to #ops"]

``toolrag report --suggest-examples FILE`` writes suggested requests in this shape, and the app's Profiles tab
adds an accepted suggestion to the catalog's own file (:func:`add_examples`). A tool id the catalog no longer
has (removed upstream since) is a warning of the load report, an error only when loading with ``--strict``.
A file that is not a mapping of ids to lists of requests is an error naming its line.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from toolrag.catalog.profile import Catalog, Example
from toolrag.errors import CatalogError
from toolrag.files import write_atomic
from toolrag.yamlio import LineDict, LineList, YamlSyntaxError, read_yaml

__all__ = ["EXTRA_EXAMPLES_FILE", "add_examples", "apply_extra_examples", "dump_examples", "file_examples",
           "merged_examples", "read_extra_examples"]

EXTRA_EXAMPLES_FILE = "extra_examples.yaml"
_HEADER = ("# Example requests by tool id, added to each tool's own examples when the catalog loads\n"
           "# (toolrag: extra_examples.yaml beside the catalog's profiles; edit freely).\n")


def read_extra_examples(file: Path) -> dict[str, list[tuple[str, int]]]:
    """The requests of each tool id in ``file``, with their lines; raises ``CatalogError`` naming the line of
    anything that is not a mapping of ids to lists of requests."""
    try:
        data = read_yaml(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{file}: cannot read the file ({exc}); check it is UTF-8 text") from None
    except YamlSyntaxError as exc:
        raise CatalogError(f"{file}:{exc.line}: invalid YAML: {exc.problem}; fix the syntax") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CatalogError(f"{file}: expected a mapping of tool ids to lists of requests (read_file: [\"...\"])")
    out: dict[str, list[tuple[str, int]]] = {}
    key_lines = data.key_lines if isinstance(data, LineDict) else {}
    for tool_id, requests in data.items():
        line = key_lines.get(str(tool_id), 0)
        if isinstance(requests, str):
            requests = [requests]
        if not isinstance(requests, list):
            raise CatalogError(f"{file}:{line}: tool {tool_id!r}: expected a list of requests, got "
                               f"{type(requests).__name__}")
        lines = requests.item_lines if isinstance(requests, LineList) else [line] * len(requests)
        for item, item_line in zip(requests, lines, strict=True):
            query = item.get("query") if isinstance(item, dict) else item
            if not isinstance(query, str) or not query.strip():
                raise CatalogError(f"{file}:{item_line}: tool {tool_id!r}: a request must be non-empty text "
                                   "(or {query: ...})")
            out.setdefault(str(tool_id), []).append((query.strip(), item_line))
    return out


def apply_extra_examples(catalog: Catalog, file: Path, *, strict: bool) -> tuple[Catalog, list[str]]:
    """``catalog`` with the requests of ``file`` added to its tools' examples, and the warnings (unknown ids;
    an error instead when ``strict``)."""
    extras = read_extra_examples(file)
    warnings: list[str] = []
    added: dict[str, list[str]] = {}
    for tool_id, requests in extras.items():
        tool = catalog.get(tool_id)
        if tool is None:
            close = difflib.get_close_matches(tool_id, catalog.ids, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            text = (f"{file}:{requests[0][1]}: no tool has id {tool_id!r}{hint}; its {len(requests)} example "
                    "request(s) are not used: remove them or fix the id")
            if strict:
                raise CatalogError(text)
            warnings.append(text)
            continue
        have = {ex.query.casefold() for ex in tool.examples}
        for query, _ in requests:
            if query.casefold() not in have:
                have.add(query.casefold())
                added.setdefault(tool_id, []).append(query)
    if not added and not warnings:
        return catalog, []
    tools = tuple(replace(t, examples=(*t.examples, *(Example(q) for q in added[t.id]))) if t.id in added else t
                  for t in catalog.tools)
    report = replace(catalog.report, warnings=(*catalog.report.warnings, *warnings))
    return replace(catalog, tools=tools, report=report), warnings


def dump_examples(examples: Mapping[str, Sequence[str]]) -> str:
    """The text of an extra-examples file (ids and requests in the order given; JSON strings are valid YAML)."""
    lines = [_HEADER.rstrip("\n")]
    for tool_id, requests in examples.items():
        if requests:
            lines.append(f"{json.dumps(tool_id, ensure_ascii=False)}:")
            lines += [f"  - {json.dumps(q, ensure_ascii=False)}" for q in requests]
    return "\n".join(lines) + "\n"


def merged_examples(current: Mapping[str, Sequence[str]], additions: Mapping[str, Sequence[str]]
                    ) -> dict[str, list[str]]:
    """``current`` with ``additions`` appended (a request already there, in any case, is not added twice)."""
    out = {tool_id: list(requests) for tool_id, requests in current.items()}
    for tool_id, requests in additions.items():
        have = out.setdefault(tool_id, [])
        known = {q.casefold() for q in have}
        for query in requests:
            if query.strip() and query.strip().casefold() not in known:
                known.add(query.strip().casefold())
                have.append(query.strip())
    return out


def file_examples(file: Path) -> dict[str, list[str]]:
    """The requests of an extra-examples file by tool id (empty when the file does not exist)."""
    return {t: [q for q, _ in rows] for t, rows in read_extra_examples(file).items()} if file.is_file() else {}


def add_examples(file: Path, examples: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Add requests to an extra-examples file (created when missing), keeping what it holds. Written
    atomically: a failed write leaves the file as it was. Returns the file's whole content by tool id."""
    merged = merged_examples(file_examples(file), examples)
    write_atomic(file, dump_examples(merged), error=CatalogError)
    return merged
