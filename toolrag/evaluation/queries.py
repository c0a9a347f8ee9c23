"""Labelled query files: YAML (a list of rows), JSON Lines or CSV, each row a request, the tools that fit it
and optional context. Every problem raises :class:`toolrag.errors.QueryError` naming the file, row, line, field
and the fix."""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolrag.errors import QueryError
from toolrag.paths import path_problem, shown
from toolrag.search.results import Decision
from toolrag.yamlio import LineDict, LineList, YamlSyntaxError, read_yaml

__all__ = ["CSV_FIELDS", "FIELDS", "QueryRow", "load_queries"]


# ------------------------------------------------------------------------------------------------ rows
@dataclass(frozen=True)
class QueryRow:
    """One labelled query: the request, the tools that fit it (gold) and optional context."""

    query: str
    gold: tuple[str, ...]
    image: Path | None = None
    permissions: tuple[str, ...] | None = None
    role: str | None = None
    expect: Decision | None = None
    history: tuple[str, ...] = ()
    line: int | None = None
    lang: str | None = None


FIELDS = ("query", "gold", "image", "permissions", "role", "expect", "history", "lang")
#: The columns a CSV file may have (earlier turns need YAML or JSON Lines).
CSV_FIELDS = ("query", "gold", "image", "permissions", "role", "expect", "lang")
_LIST_SEPARATORS = re.compile(r"[|;,\s]+")
#: A language tag: an ISO 639 code (two or three lower-case letters), optionally with a region or script
#: ("en", "pt-BR", "zh-Hant"); what `toolrag eval` groups its per-language table by.
_LANG_TAG = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*")


class _Row:
    """Validation context of one raw row: formats errors with file, row, line and field."""

    def __init__(self, path: Path, number: int, line: int | None, field_lines: dict[str, int]) -> None:
        self.path, self.number, self.line, self.field_lines = path, number, line, field_lines

    def fail(self, field_name: str | None, message: str) -> QueryError:
        line = self.field_lines.get(field_name or "", self.line)
        where = f"{self.path}, row {self.number}" + (f", line {line}" if line else "")
        what = f", field '{field_name}'" if field_name else ""
        return QueryError(f"{where}{what}: {message}", file=str(self.path), line=line or None, field=field_name)

    def text_list(self, data: dict[str, Any], name: str, example: str) -> tuple[str, ...] | None:
        value = data.get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            hint = f"must be a list of non-empty strings, e.g. {name}: {example}; got {value!r}"
            raise self.fail(name, hint)
        return tuple(dict.fromkeys(value))


def _parse_row(ctx: _Row, data: object, folder: Path) -> QueryRow:
    if not isinstance(data, dict):
        raise ctx.fail(None, f"each row must be a mapping like {{query: ..., gold: [...]}}, got {data!r}")
    for key in data:
        if key not in FIELDS:
            close = difflib.get_close_matches(str(key), FIELDS, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'?" if close else f"valid fields: {', '.join(FIELDS)}"
            raise ctx.fail(str(key), f"unknown field '{key}'; {hint}")
    image: Path | None = None
    if data.get("image") is not None:
        raw = data["image"]
        if not isinstance(raw, str) or not raw.strip():
            raise ctx.fail("image", f"must be a file path relative to {folder}, got {raw!r}")
        if (problem := path_problem(raw)) is not None:
            raise ctx.fail("image", f"{shown(raw)} {problem}; give a file path relative to {folder}")
        image = Path(raw).expanduser()
        image = image if image.is_absolute() else folder / image
        if not image.is_file():
            raise ctx.fail("image", f"file {image} does not exist (paths are relative to {folder})")
    if "query" not in data:
        raise ctx.fail("query", "missing; add query: <the user's request> ('' is allowed only with an image)")
    query = data["query"]
    if query is None and image is not None:
        query = ""
    if not isinstance(query, str):
        raise ctx.fail("query", f"must be text (quote it in YAML), got {query!r}")
    if not query.strip() and image is None:
        raise ctx.fail("query", "is empty and no image is given; write the request or add image: <file>")
    if "gold" not in data:
        raise ctx.fail("gold", "missing; list the ids of the tools that fit, or gold: [] when no tool fits")
    gold = ctx.text_list(data, "gold", "[erp.inventory.query_stock]")
    if gold is None:
        raise ctx.fail("gold", "is null; list the tool ids that fit, or write gold: [] when no tool fits")
    role = data.get("role")
    if role is not None and (not isinstance(role, str) or not role.strip()):
        raise ctx.fail("role", f"must be a role name such as role: finance, got {role!r}")
    expect = _parse_expect(ctx, data.get("expect"))
    if expect is Decision.NO_TOOL and gold:
        raise ctx.fail("expect", "is NO_TOOL but gold lists tools; use gold: [] or another expect")
    if expect is Decision.EXECUTE and not gold:
        raise ctx.fail("expect", "is EXECUTE but gold is empty; list the tool to execute in gold")
    return QueryRow(
        query=query,
        gold=gold,
        image=image,
        permissions=ctx.text_list(data, "permissions", "[finance.read]"),
        role=role,
        expect=expect,
        history=ctx.text_list(data, "history", '["my earlier message"]') or (),
        line=ctx.line,
        lang=_parse_lang(ctx, data.get("lang")),
    )


def _parse_lang(ctx: _Row, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _LANG_TAG.fullmatch(value.strip()):
        raise ctx.fail("lang", f"{value!r} is not a language tag; write an ISO 639 code such as lang: ru "
                               "(two or three lower-case letters, optionally a region: pt-BR)")
    return value.strip()


def _parse_expect(ctx: _Row, value: object) -> Decision | None:
    if value is None:
        return None
    choices = [d.value for d in Decision]
    key = str(value).strip().upper().replace("-", "_").replace(" ", "_")
    if isinstance(value, str) and key in choices:
        return Decision(key)
    close = difflib.get_close_matches(key, choices, n=1, cutoff=0.4)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ctx.fail("expect", f"{value!r} is not valid{hint}; use one of {', '.join(choices)}")


def _yaml_rows(path: Path, text: str) -> list[tuple[int | None, dict[str, int], object]]:
    try:
        data = read_yaml(text)
    except YamlSyntaxError as exc:
        where = f", line {exc.line}, column {exc.column}" if exc.line else ""
        raise QueryError(f"{path}{where}: invalid YAML ({exc.problem}); fix the syntax there", file=str(path),
                         line=exc.line or None) from None
    if data is None:
        return []
    if isinstance(data, dict) and set(data) == {"queries"}:  # also accept `queries: [...]`
        data = data["queries"]
    if not isinstance(data, LineList):
        raise QueryError(f"{path}: the file must be a YAML list of queries (rows starting with '- query:')")
    return [(line, dict(item.key_lines) if isinstance(item, LineDict) else {}, item)
            for line, item in zip(data.item_lines, data, strict=True)]


def _jsonl_rows(path: Path, text: str) -> list[tuple[int | None, dict[str, int], object]]:
    if text.lstrip().startswith("["):  # a whole-file JSON array is accepted too (no per-row lines)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"{path}, line {exc.lineno}, column {exc.colno}"
            raise QueryError(f"{where}: invalid JSON ({exc.msg}); fix the syntax there", file=str(path),
                             line=exc.lineno) from None
        return [(None, {}, item) for item in data]
    rows: list[tuple[int | None, dict[str, int], object]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, {}, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise QueryError(
                f"{path}, line {number}, column {exc.colno}: invalid JSON ({exc.msg}); "
                "JSON Lines needs one complete object per line"
            ) from None
    return rows


def _csv_rows(path: Path, text: str) -> list[tuple[int | None, dict[str, int], object]]:
    """Rows of a CSV file with a header naming its columns; ``gold`` and ``permissions`` cells list ids
    separated by ``|``, ``;``, ``,`` or spaces (an empty ``gold`` cell: no tool fits); empty cells are absent."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        return []
    except csv.Error as exc:
        raise QueryError(f"{path}, line 1: invalid CSV ({exc})", file=str(path), line=1) from None
    for name in header:
        if name not in CSV_FIELDS:
            close = difflib.get_close_matches(name, CSV_FIELDS, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'?" if close else f"valid columns: {', '.join(CSV_FIELDS)}"
            raise QueryError(f"{path}, line 1: unknown column '{name}'; {hint}", file=str(path), line=1, field=name)
    missing = [name for name in ("query", "gold") if name not in header]
    if missing:
        raise QueryError(f"{path}, line 1: the header needs the columns query and gold (missing: "
                         f"{', '.join(missing)}), e.g. query,gold")
    rows: list[tuple[int | None, dict[str, int], object]] = []
    line = reader.line_num + 1
    try:
        for cells in reader:
            if any(c.strip() for c in cells):
                if len(cells) > len(header):
                    raise QueryError(f"{path}, line {line}: {len(cells)} cells for {len(header)} columns; quote "
                                     'a cell that contains a comma ("...")')
                data: dict[str, Any] = {}
                for name, cell in zip(header, cells, strict=False):
                    if name in ("gold", "permissions"):
                        data[name] = [v for v in _LIST_SEPARATORS.split(cell.strip()) if v]
                    elif name == "query" or cell.strip():
                        data[name] = cell
                data.setdefault("gold", [])
                rows.append((line, {}, data))
            line = reader.line_num + 1
    except csv.Error as exc:
        raise QueryError(f"{path}, line {line}: invalid CSV ({exc})", file=str(path), line=line) from None
    return rows


def load_queries(path: Path) -> list[QueryRow]:
    """Read labelled queries from YAML (a list of mappings), JSON Lines (.jsonl/.json, one object a line) or
    CSV (.csv, a header row naming the columns; ids in a cell separated by ``|``, ``;``, ``,`` or spaces).

    Fields: ``query`` (text; "" only with ``image``), ``gold`` (tool ids; [] = no tool fits), optional
    ``image`` (relative to the file's folder; must exist), ``permissions``, ``role``, ``expect``
    (EXECUTE/CLARIFY/NO_TOOL, any case), ``history`` (earlier user turns) and ``lang`` (the request's
    language, an ISO 639 code such as ``ru`` or ``pt-BR``: ``toolrag eval`` reports each language apart).
    Every problem raises QueryError naming the file, row, line, field and the fix.
    """
    path = Path(path)
    if (problem := path_problem(path)) is not None:
        raise QueryError(f"queries file {shown(path)} {problem}; give the path of a .yaml, .jsonl or .csv file")
    if not path.is_file():
        raise QueryError(f"queries file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".jsonl", ".json", ".csv"):
        raise QueryError(f"{path}: unknown queries format '{suffix}'; use .yaml/.yml, .jsonl/.json or .csv")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise QueryError(f"{path}: cannot read the file as UTF-8 text ({exc})") from None
    if suffix in (".yaml", ".yml"):
        raw_rows = _yaml_rows(path, text)
    else:
        raw_rows = _csv_rows(path, text) if suffix == ".csv" else _jsonl_rows(path, text)
    if not raw_rows:
        raise QueryError(f"{path}: contains no queries; add rows like {{query: ..., gold: [...]}}")
    return [
        _parse_row(_Row(path, number, line, field_lines), data, path.parent)
        for number, (line, field_lines, data) in enumerate(raw_rows, start=1)
    ]
