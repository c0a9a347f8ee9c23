"""The public tool-retrieval sets as catalogs exactly as published, plus labelled query files.

The sets live in ``../shared/benchmarks`` (MetaTool, Seal-Tools, Gorilla HF; see its README and each
``FORMAT.md``); they are never copied into the repository. This module writes, under a cache folder
(``$TOOLRAG_BENCH_DIR`` or ``<temp>/toolrag-bench``)::

    sets/<source>/catalog/tools.json(l)    the tools in an import format, read with toolrag.load_catalog
    sets/<source>/<split>.jsonl            {query, gold} rows, read with toolrag.load_queries

so the benchmark goes through the real (lenient) import path, exactly like a user's ``toolrag eval`` on a
catalog they did not write. Nothing is renamed and no schema is rewritten: each upstream record is only put
into an import format, field for field, and the loader reports (``catalog.report``) what it drops or skips.

* MetaTool: an OpenAI ``tools`` list (``tools.json``): function name = tool name, description = plugin
  description.
* Seal-Tools: JSON Lines profiles: ``id`` = api_name, ``description`` = api_description, ``category`` =
  field, ``parameters`` = ``{type: object, properties: <parameters as published>, required: <required>}``.
  Seal-Tools writes Python type names (``str``, ``int``): the loader drops those ``type`` keywords (a warning
  per tool) and keeps the parameter names and descriptions.
* Gorilla HF: JSON Lines profiles: ``id`` = api_name (slashes, quotes and parentheses as published),
  ``description``, ``category`` = domain, ``tags`` = [domain, functionality]; every row is written, and the
  loader keeps the first of the 29 repeated api_names (a warning each).

Gold labels are the original names, so they always match the loaded ids.

Splits (fixed, documented; nothing is random):

* ``metatool/single_test``: every 20th row of all_clean_data.csv from row 0 (1,031 queries; reported);
  ``metatool/single_dev``: every 20th row from row 10 (1,031, disjoint; used for tuning);
  ``metatool/single_full``: all 20,614 rows; ``metatool/multi``: 497 two-tool queries (reported);
  ``metatool/task1``: 520 need-a-tool rows (gold = the tool) + 520 need-no-tool rows (gold = []);
  ``metatool/guard``: every 103rd row from row 0, first 200 (the sanity guard of tests/test_quality_guard.py).
* ``seal_tools/dev`` (700, tuning), ``seal_tools/test_in`` (700), ``seal_tools/test_out`` (654).
* ``gorilla_hf/all`` (911, reported, never tuned on); ``gorilla_hf/half_a`` / ``half_b`` (even / odd
  rows) for the per-catalog tuning demonstration (tune on one half, report the other).
"""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SETS", "BenchSet", "bench_dir", "benchmarks_dir", "metatool_rows", "metatool_tools", "prepare",
           "write_json", "write_jsonl"]

FORMAT_VERSION = "3"  # 3: the sets as published (no renaming, no schema rewriting)
GUARD_QUERIES = 200  # bump when the conversion changes: forces a rewrite of the cached files


@dataclass(frozen=True)
class BenchSet:
    """One reported or tuning split: which catalog it runs against and which query file it reads."""

    name: str
    source: str
    split: str
    label: str
    role: str  # "report", "tune" or "extra"

    def catalog_dir(self, root: Path) -> Path:
        return root / "sets" / self.source / "catalog"

    def queries_file(self, root: Path) -> Path:
        return root / "sets" / self.source / f"{self.split}.jsonl"


SETS: dict[str, BenchSet] = {s.name: s for s in (
    BenchSet("metatool_single", "metatool", "single_test", "MetaTool single (1/20, 1,031 q)", "report"),
    BenchSet("metatool_multi", "metatool", "multi", "MetaTool two-tool (497 q)", "report"),
    BenchSet("seal_in", "seal_tools", "test_in", "Seal-Tools test in-domain (700 q)", "report"),
    BenchSet("seal_out", "seal_tools", "test_out", "Seal-Tools test out-of-domain (654 q)", "report"),
    BenchSet("gorilla", "gorilla_hf", "all", "Gorilla HF (911 q)", "report"),
    BenchSet("metatool_dev", "metatool", "single_dev", "MetaTool single dev (offset 10, 1/20)", "tune"),
    BenchSet("seal_dev", "seal_tools", "dev", "Seal-Tools dev (700 q)", "tune"),
    BenchSet("metatool_task1", "metatool", "task1", "MetaTool Task1 (520 tool + 520 no-tool)", "extra"),
    BenchSet("metatool_full", "metatool", "single_full", "MetaTool single (all 20,614 q)", "extra"),
    BenchSet("metatool_guard", "metatool", "guard", "MetaTool single guard slice (every 103rd, 200 q)", "extra"),
    BenchSet("gorilla_a", "gorilla_hf", "half_a", "Gorilla HF half A (even rows)", "extra"),
    BenchSet("gorilla_b", "gorilla_hf", "half_b", "Gorilla HF half B (odd rows)", "extra"),
)}


def benchmarks_dir(explicit: str | Path | None = None) -> Path:
    """Where the public sets are: the argument, ``$TOOLRAG_BENCHMARKS``, else ``shared/benchmarks`` beside the
    repository (``<repo>/../shared/benchmarks``) or beside one of its parent folders, nearest first."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    from toolrag import config, env_vars  # here, not at the top: bench.common picks which toolrag first

    given = config.env(env_vars.BENCHMARKS_ENV)
    if given:
        return Path(given).expanduser().resolve()
    repo = Path(__file__).resolve().parent.parent
    default = repo.parent / "shared" / "benchmarks"
    for folder in repo.parents:
        candidate = folder / "shared" / "benchmarks"
        if candidate.is_dir():
            return candidate.resolve()
    return default


def bench_dir(explicit: str | Path | None = None) -> Path:
    """The cache folder for converted sets and indexes: the argument, ``$TOOLRAG_BENCH_DIR`` or
    ``<temp>/toolrag-bench`` (never inside the repository)."""
    from toolrag import config, env_vars

    raw = explicit or config.env(env_vars.BENCH_DIR_ENV) or Path(tempfile.gettempdir()) / "toolrag-bench"
    path = Path(raw).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(path)
    return n


def write_json(path: Path, data: Any) -> int:
    """Write ``data`` as JSON (atomically); returns how many items a list held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(path)
    return len(data) if isinstance(data, list) else 1


# ------------------------------------------------------------------------------------------------ MetaTool
def metatool_tools(plugin_des: Path) -> list[dict[str, Any]]:
    """MetaTool's ``plugin_des.json`` as an OpenAI ``tools`` list: name = tool name, description as published."""
    des: dict[str, str] = json.loads(plugin_des.read_text(encoding="utf-8"))
    return [{"type": "function", "function": {"name": n, "description": d}} for n, d in des.items()]


def metatool_rows(csv_file: Path) -> list[dict[str, Any]]:
    """MetaTool's single-tool query CSV (columns ``Query,Tool``) as labelled rows ``{query, gold}``."""
    with csv_file.open(encoding="utf-8", newline="") as fh:
        return [{"query": r["Query"].strip(), "gold": [r["Tool"]]} for r in csv.DictReader(fh)]


def _metatool(src: Path, out: Path) -> dict[str, int]:
    folder = src / "metatool"
    counts = {"tools": write_json(out / "catalog" / "tools.json", metatool_tools(folder / "plugin_des.json"))}
    single = metatool_rows(folder / "all_clean_data.csv")
    counts["single_full"] = write_jsonl(out / "single_full.jsonl", single)
    counts["single_test"] = write_jsonl(out / "single_test.jsonl", single[0::20])
    counts["single_dev"] = write_jsonl(out / "single_dev.jsonl", single[10::20])
    counts["guard"] = write_jsonl(out / "guard.jsonl", single[::103][:GUARD_QUERIES])
    multi = json.loads((folder / "multi_tool_query_golden.json").read_text(encoding="utf-8"))
    counts["multi"] = write_jsonl(out / "multi.jsonl", (
        {"query": m["query"].strip(), "gold": list(dict.fromkeys(m["tool"]))} for m in multi))
    task1 = json.loads((folder / "Task1.json").read_text(encoding="utf-8"))
    counts["task1"] = write_jsonl(out / "task1.jsonl", (
        {"query": t["query"].strip(), "gold": [t["tool"]] if t["label"] == "positive" else []}
        for t in task1))
    return counts


# ---------------------------------------------------------------------------------------------- Seal-Tools
def _seal_profile(tool: dict[str, Any]) -> dict[str, Any]:
    """One Seal-Tools record as a profile, field for field (the parameters wrapped in an object schema)."""
    profile: dict[str, Any] = {"id": tool.get("api_name"), "description": tool.get("api_description"),
                               "category": tool.get("field")}
    schema: dict[str, Any] = {"type": "object", "properties": tool.get("parameters") or {}}
    if tool.get("required"):
        schema["required"] = tool["required"]
    profile["parameters"] = schema
    return profile


def _seal(src: Path, out: Path) -> dict[str, int]:
    folder = src / "seal_tools"
    tools = [json.loads(line) for line in (folder / "tool.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    counts = {"tools": write_jsonl(out / "catalog" / "tools.jsonl", (_seal_profile(t) for t in tools))}
    for split, file in (("dev", "dev.jsonl"), ("test_in", "test_in_domain.jsonl"),
                        ("test_out", "test_out_domain.jsonl")):
        rows = [json.loads(line) for line in (folder / file).read_text(encoding="utf-8").splitlines()
                if line.strip()]
        counts[split] = write_jsonl(out / f"{split}.jsonl", (
            {"query": r["query"].strip(), "gold": list(dict.fromkeys(c["api"] for c in r["calling"]))}
            for r in rows))
    return counts


# ---------------------------------------------------------------------------------------------- Gorilla HF
def _gorilla_query(code: str) -> str:
    text = code.split("###Instruction:", 1)[-1]
    return text.split("###Output:", 1)[0].strip()


def _text(value: Any) -> str:
    """A field that upstream sometimes stores as a list of strings, as one string."""
    if isinstance(value, list):
        return " ".join(str(v).strip() for v in value if str(v).strip())
    return str(value).strip() if value is not None else ""


def _gorilla(src: Path, out: Path) -> dict[str, int]:
    folder = src / "gorilla_hf"
    profiles: list[dict[str, Any]] = []
    for line in (folder / "huggingface_api.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        api = json.loads(line)  # every row, repeated api_names too: the loader keeps the first (FORMAT.md)
        domain = _text(api.get("domain"))
        tags = list(dict.fromkeys(t for t in (domain, _text(api.get("functionality"))) if t))
        profiles.append({"id": api.get("api_name"), "description": _text(api.get("description")),
                         "category": domain or None, "tags": tags})
    counts = {"tools": write_jsonl(out / "catalog" / "tools.jsonl", profiles)}
    rows = []
    for line in (folder / "huggingface_eval.json").read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            rows.append({"query": _gorilla_query(item["code"]), "gold": [item["api_data"]["api_name"]]})
    counts["all"] = write_jsonl(out / "all.jsonl", rows)
    counts["half_a"] = write_jsonl(out / "half_a.jsonl", rows[0::2])
    counts["half_b"] = write_jsonl(out / "half_b.jsonl", rows[1::2])
    return counts


_CONVERTERS = {"metatool": _metatool, "seal_tools": _seal, "gorilla_hf": _gorilla}


def prepare(source_dir: str | Path | None = None, out_dir: str | Path | None = None) -> Path:
    """Convert every set (only when the source files or the conversion changed) and return the cache root.

    Raises FileNotFoundError naming the missing folder when the public sets are not where expected.
    """
    src = benchmarks_dir(source_dir)
    root = bench_dir(out_dir)
    for name, convert in _CONVERTERS.items():
        if not (src / name).is_dir():
            raise FileNotFoundError(
                f"benchmark set {src / name} not found: put the public sets in <repo>/../shared/benchmarks, "
                "set TOOLRAG_BENCHMARKS or pass --benchmarks")
        stamp = _stamp(src / name)
        target = root / "sets" / name
        marker = target / "converted.json"
        if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")).get("stamp") == stamp:
            continue
        shutil.rmtree(target / "catalog", ignore_errors=True)  # an earlier conversion's files must not linger
        counts = convert(src, target)
        marker.write_text(json.dumps({"stamp": stamp, "counts": counts}, indent=1), encoding="utf-8")
    return root


def _stamp(folder: Path) -> str:
    parts = [FORMAT_VERSION] + [f"{p.name}:{p.stat().st_size}:{int(p.stat().st_mtime)}"
                                for p in sorted(folder.rglob("*")) if p.is_file()]
    return "|".join(parts)


if __name__ == "__main__":
    import sys

    where = prepare(sys.argv[1] if len(sys.argv) > 1 else None)
    for marker in sorted(where.glob("sets/*/converted.json")):
        print(marker.parent.name, json.loads(marker.read_text(encoding="utf-8"))["counts"])
