"""Real traffic back to the tool author: the requests of the audit log that found no tool, were asked about, or
were called with little confidence, grouped by the tool each came closest to, and one action that labels one.

:func:`find_unmatched` reads audit records (``kind: search``; :mod:`toolrag.audit` writes them) and keeps those
that ended NO_TOOL or CLARIFY, or EXECUTE with P(right) below ``below``; identical requests of one role are
merged with a count. A log that keeps only hashes (``TOOLRAG_AUDIT_REQUESTS=hash``) still groups and counts,
but its requests cannot be read or labelled. ``toolrag audit --unmatched`` prints the report; the Evaluate tab
shows it. A request is labelled either as a row of the catalog's labelled queries (:func:`add_labelled_query`:
a validated append, written atomically under the catalog's edit lock) or as an example of a tool
(:func:`add_example`, through :class:`toolrag.catalog.editor.CatalogEditor`: validated, versioned, the index
updated); the evaluation re-run then shows what the label changed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from toolrag.audit import read_log
from toolrag.catalog.editor import LOCK_FILE, CatalogEditor, SaveOutcome
from toolrag.errors import QueryError, SettingsError
from toolrag.evaluation.queries import load_queries
from toolrag.files import FileLock, write_atomic
from toolrag.search.results import Decision

__all__ = ["UnmatchedGroup", "UnmatchedReport", "UnmatchedRequest", "add_example", "add_labelled_query",
           "find_unmatched", "read_unmatched"]

_LISTED = (Decision.NO_TOOL.value, Decision.CLARIFY.value)


@dataclass(frozen=True)
class UnmatchedRequest:
    """One request (identical ones of one role merged), why it is listed and the tool it came closest to."""

    text: str | None
    """The request, or ``None`` when the log keeps only its hash."""
    sha256: str
    decision: str
    p_right: float | None
    nearest: str | None
    role: str | None
    count: int
    last_seen: str | None

    @property
    def label(self) -> str:
        return self.text if self.text is not None else f"(redacted: sha256 {self.sha256[:12]}…)"

    @property
    def why(self) -> str:
        if self.decision in _LISTED:
            return self.decision
        return f"P(right) {self.p_right:.2f}" if self.p_right is not None else self.decision


@dataclass(frozen=True)
class UnmatchedGroup:
    """The unmatched requests whose nearest tool is ``tool_id`` (``None``: no tool came back at all)."""

    tool_id: str | None
    requests: tuple[UnmatchedRequest, ...]

    @property
    def count(self) -> int:
        return sum(r.count for r in self.requests)


@dataclass(frozen=True)
class UnmatchedReport:
    """The unmatched requests of a log, by nearest tool (most requests first)."""

    groups: tuple[UnmatchedGroup, ...]
    searches: int
    redacted: int
    """Searches whose request the log keeps only as a hash."""
    below: float | None
    skipped: int = 0
    """Lines of the log that are not audit records (skipped, not counted as searches)."""

    @property
    def listed(self) -> int:
        return sum(g.count for g in self.groups)

    def summary(self) -> str:
        rule = "NO_TOOL, CLARIFY" + (f" or P(right) below {self.below:g}" if self.below is not None else "")
        text = (f"{self.listed} of {self.searches} searches unmatched ({rule}), "
                f"{sum(len(g.requests) for g in self.groups)} distinct requests near {len(self.groups)} tools")
        if self.redacted:
            text += (f"; {self.redacted} searches keep only a hash of the request (TOOLRAG_AUDIT_REQUESTS=hash): "
                     "grouped and counted, not readable")
        if self.skipped:
            text += f"; {self.skipped} line(s) that are not audit records skipped"
        return text

    def lines(self) -> list[str]:
        """What ``toolrag audit --unmatched`` prints: a summary, then each group and its requests."""
        out = [self.summary()]
        for group in self.groups:
            out.append(f"{group.count:>5}  near {group.tool_id or '(no tool came back)'}")
            for r in group.requests:
                role = f" [{r.role}]" if r.role else ""
                out.append(f"{r.count:>9}  {r.why:<16} {r.label}{role}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"searches": self.searches, "listed": self.listed, "redacted": self.redacted, "below": self.below,
                "skipped": self.skipped,
                "groups": [{"tool": g.tool_id, "count": g.count, "requests": [
                    {"request": r.text, "sha256": r.sha256, "decision": r.decision, "p_right": r.p_right,
                     "role": r.role, "count": r.count, "last_seen": r.last_seen} for r in g.requests]}
                    for g in self.groups]}


def find_unmatched(records: Iterable[Mapping[str, Any]], *, below: float | None = None) -> UnmatchedReport:
    """The unmatched requests among audit ``records``: search records (``kind: search``) only; calls, searches
    refused before they ran (an unknown bearer token) and anything else are not counted as searches."""
    if below is not None and not 0.0 <= below <= 1.0:
        raise SettingsError(f"P(right) threshold {below!r}: use a probability between 0 and 1")
    merged: dict[tuple[str, str | None], dict[str, Any]] = {}
    searches = redacted = 0
    for record in records:
        if record.get("kind") != "search" or record.get("outcome") == "refused":
            continue
        searches += 1
        text = record.get("request") if isinstance(record.get("request"), str) else None
        sha = (hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None
               else str(record.get("request_sha256") or ""))
        redacted += text is None
        decision = str(record.get("decision"))
        p_right = _p_right(record)
        if not (decision in _LISTED or (below is not None and p_right is not None and p_right < below)):
            continue
        returned = record.get("returned") or []
        nearest = returned[0].get("id") if returned and isinstance(returned[0], dict) else None
        role = record.get("role") if isinstance(record.get("role"), str) else None
        entry = merged.setdefault((sha, role), {"text": text, "count": 0})
        entry.update(decision=decision, p_right=p_right, nearest=nearest, last_seen=record.get("time"))
        entry["count"] += 1
    by_tool: dict[str | None, list[UnmatchedRequest]] = {}
    for (sha, role), e in merged.items():
        by_tool.setdefault(e["nearest"], []).append(UnmatchedRequest(
            e["text"], sha, e["decision"], e["p_right"], e["nearest"], role, e["count"], e["last_seen"]))
    groups = [UnmatchedGroup(tool, tuple(sorted(rs, key=lambda r: (-r.count, r.label))))
              for tool, rs in by_tool.items()]
    groups.sort(key=lambda g: (-g.count, g.tool_id or "~"))
    return UnmatchedReport(tuple(groups), searches, redacted, below)


def read_unmatched(path: str | Path, *, below: float | None = None) -> UnmatchedReport:
    """:func:`find_unmatched` over a log and its rotated files, read by :func:`toolrag.audit.read_log` (a file
    that is not an audit log is refused as ``toolrag audit`` refuses it; its lines that are not audit records are
    counted in ``skipped``)."""
    records, skipped = read_log(path)
    return replace(find_unmatched(records, below=below), skipped=skipped)


def _p_right(record: Mapping[str, Any]) -> float | None:
    probabilities = record.get("probabilities")
    value = probabilities.get("right") if isinstance(probabilities, Mapping) else None
    return float(value) if isinstance(value, int | float) else None


# ------------------------------------------------------------------------------------------------ labelling

def add_labelled_query(file: str | Path, query: str, *, gold: Sequence[str], expect: Decision | None = None,
                       role: str | None = None, catalog_tools: Iterable[str] | None = None) -> Path:
    """Append one labelled row to ``file`` (YAML, JSON Lines or CSV; a new YAML file when it does not exist),
    under the catalog folder's edit lock. The file as it would be is read back with :func:`load_queries` before
    it replaces the old one (atomically), so a row that would break the file is refused and nothing changes.
    ``catalog_tools``: the catalog's ids, to refuse a gold id it does not have."""
    path = Path(file)
    if not isinstance(query, str) or not query.strip():
        raise QueryError("a labelled request needs its text (a redacted request cannot be labelled)")
    if catalog_tools is not None:
        unknown = sorted(set(gold) - set(catalog_tools))
        if unknown:
            raise QueryError(f"gold tool {unknown[0]!r} is not in the catalog; pick one of its tools or no tool")
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".jsonl", ".json", ".csv"):
        raise QueryError(f"{path}: unknown queries format '{suffix}'; use .yaml/.yml, .jsonl/.json or .csv")
    row: dict[str, Any] = {"query": query, "gold": list(gold)}
    if expect is not None:
        row["expect"] = Decision(expect).value
    if role:
        row["role"] = role
    with FileLock(path.parent / LOCK_FILE, what=f"the labelled requests {path}", error=QueryError):
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        new = old + ("" if not old or old.endswith("\n") else "\n") + _row_text(suffix, row, header=not old)
        _check(path, new)
        write_atomic(path, new, error=QueryError)
    return path


def _row_text(suffix: str, row: dict[str, Any], *, header: bool) -> str:
    if suffix in (".jsonl", ".json"):
        return json.dumps(row, ensure_ascii=False) + "\n"
    if suffix == ".csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        if header:
            writer.writerow(["query", "gold", "expect", "role"])
        writer.writerow([row["query"], "|".join(row["gold"]), row.get("expect", ""), row.get("role", "")])
        return out.getvalue()
    lines = [f"- query: {json.dumps(row['query'], ensure_ascii=False)}",
             f"  gold: {json.dumps(row['gold'], ensure_ascii=False)}"]
    lines += [f"  {key}: {json.dumps(row[key], ensure_ascii=False)}" for key in ("expect", "role") if key in row]
    return "\n".join(lines) + "\n"


def _check(path: Path, text: str) -> None:
    """Read ``text`` as ``path``'s format from a temporary file beside it (image paths resolve the same)."""
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=path.suffix, dir=path.parent,
                                     prefix=".toolrag-label-", delete=False) as handle:
        handle.write(text)
    tmp = Path(handle.name)
    try:
        load_queries(tmp)
    except QueryError as exc:
        raise QueryError(f"{path}: the labelled row was not added: {str(exc).replace(str(tmp), str(path))}") from None
    finally:
        tmp.unlink(missing_ok=True)


def add_example(editor: CatalogEditor, tool_id: str, query: str) -> SaveOutcome:
    """Add ``query`` to the examples of ``tool_id`` through the catalog editor (validated, the previous version
    kept in the history, the index updated). The tool's item is written back as YAML (its comments are not
    kept)."""
    if not isinstance(query, str) or not query.strip():
        raise QueryError("an example needs the request's text (a redacted request cannot be labelled)")
    current = editor.read_profile(tool_id)
    data = yaml.safe_load(current.text)
    item = data[0] if isinstance(data, list) else data
    examples = list(item.get("examples") or [])
    if any((e.get("query") if isinstance(e, dict) else e) == query for e in examples):
        raise QueryError(f"{query!r} is already an example of {tool_id}")
    examples.append({"query": query})
    item["examples"] = examples
    text = yaml.safe_dump(item, allow_unicode=True, sort_keys=False, width=100)
    return editor.save(tool_id, text, base_version=current.version)
