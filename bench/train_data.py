"""The public TRAINING sets as catalogs and labelled pairs, for the models trained in ``bench.train``.

The sets live in ``../shared/training`` (9 folders; read its README and each ``FORMAT.md``: provenance,
licences, decontamination against every evaluation set). They are never copied into the repository. Each
folder becomes, under ``<bench dir>/train/<folder>/``::

    catalog/tools.jsonl     the tools as JSON Lines profiles, read with toolrag's lenient importer
    pairs.jsonl             {query, gold, lang} rows (gold = tool ids of that folder)

exactly as ``bench.datasets`` puts the evaluation sets into an import format: ``id``, ``name`` and
``description`` as published, ``parameters`` as published (the lenient loader drops what is not a JSON
Schema, with a warning), ``category`` from the source's domain or category, ``tags`` from Gorilla's domain
and functionality. Nothing here is evaluation data: a result on these folders is never reported as a
benchmark (``bench.train`` fits on them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.datasets import bench_dir, write_jsonl

__all__ = ["FOLDERS", "TrainPair", "prepare_training", "read_pairs", "training_dir"]

FORMAT_VERSION = "1"

#: The training folders, in a fixed order.
FOLDERS = ("gorilla_torchhub", "gorilla_apizoo", "apibank_lv3", "hammerbench_en", "hammerbench_zh",
           "acebench_en", "acebench_zh", "callnavi", "toolalpaca_eval", "tau_bench", "restbench",
           "glaive_toolcall_en", "glaive_toolcall_zh")


@dataclass(frozen=True)
class TrainPair:
    """One labelled request of a training folder."""

    folder: str
    query: str
    gold: tuple[str, ...]
    lang: str


def training_dir(explicit: str | Path | None = None) -> Path:
    """Where the training sets are: the argument, ``$TOOLRAG_TRAINING``, else ``shared/training`` beside the
    repository or one of its parent folders, nearest first."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    from toolrag import config, env_vars

    env = config.env(env_vars.TRAINING_ENV)
    if env:
        return Path(env).expanduser().resolve()
    repo = Path(__file__).resolve().parent.parent
    for folder in repo.parents:
        candidate = folder / "shared" / "training"
        if candidate.is_dir():
            return candidate.resolve()
    return repo.parent / "shared" / "training"


def _profile(tool: dict[str, Any]) -> dict[str, Any]:
    """One source tool as a profile, field for field."""
    profile: dict[str, Any] = {"id": tool["id"], "name": tool.get("name") or tool["id"],
                               "description": tool.get("description") or ""}
    if tool.get("parameters") is not None:
        profile["parameters"] = tool["parameters"]
    category = tool.get("domain") or tool.get("category")
    if isinstance(category, str) and category.strip():
        profile["category"] = category.strip()
    tags = [t for t in (tool.get("domain"), tool.get("functionality")) if isinstance(t, str) and t.strip()]
    if tags and "api_call" in tool:  # Gorilla's records, as bench.datasets converts Gorilla HF
        profile["tags"] = list(dict.fromkeys(t.strip() for t in tags))
    return profile


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def prepare_training(source: str | Path | None = None, out: str | Path | None = None) -> Path:
    """Convert every training folder (only when its files or this conversion changed); returns
    ``<bench dir>/train``. Raises FileNotFoundError naming a missing folder."""
    src = training_dir(source)
    root = bench_dir(out) / "train"
    for name in FOLDERS:
        folder = src / name
        if not folder.is_dir():
            raise FileNotFoundError(f"training set {folder} not found: put the training sets in "
                                    "<repo>/../shared/training, set TOOLRAG_TRAINING or pass --training")
        stamp = "|".join([FORMAT_VERSION] + [f"{p.name}:{p.stat().st_size}:{int(p.stat().st_mtime)}"
                                             for p in sorted(folder.iterdir()) if p.is_file()])
        target = root / name
        marker = target / "converted.json"
        if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")).get("stamp") == stamp:
            continue
        tools = write_jsonl(target / "catalog" / "tools.jsonl", (_profile(t) for t in _read_jsonl(folder / "tools.jsonl")))
        pairs = write_jsonl(target / "pairs.jsonl", (
            {"query": p["query"].strip(), "gold": list(p["gold"]), "lang": p.get("lang", "en")}
            for p in _read_jsonl(folder / "pairs.jsonl") if p.get("query", "").strip() and p.get("gold")))
        marker.write_text(json.dumps({"stamp": stamp, "tools": tools, "pairs": pairs}), encoding="utf-8")
    return root


def read_pairs(root: Path, folder: str) -> list[TrainPair]:
    """The labelled pairs of one converted folder."""
    return [TrainPair(folder, r["query"], tuple(r["gold"]), r.get("lang", "en"))
            for r in _read_jsonl(root / folder / "pairs.jsonl")]


if __name__ == "__main__":
    import sys

    where = prepare_training(sys.argv[1] if len(sys.argv) > 1 else None)
    for marker in sorted(where.glob("*/converted.json")):
        print(marker.parent.name, json.loads(marker.read_text(encoding="utf-8")))
