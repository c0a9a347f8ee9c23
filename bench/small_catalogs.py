"""Small catalogs (1-5 tools, like many MCP servers) sampled from MetaTool and from the bundled sample catalog,
with their requests: the ``small`` set of ``python -m bench.decisions``.

Each sampled catalog is a set of tool ids of its source; its requests: two labelled requests of each of its tools
(EXECUTE: right when the decision is EXECUTE with that tool first), one request of each of three tools left out of
it and three requests that need no tool (NO_TOOL: right when the decision is NO_TOOL). Requests with images,
permissions or roles are left out. A catalog is searched as a caller that sees its tools only
(``Caller.tools``): every figure of such a search is that of a catalog holding those tools alone.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import REPO

__all__ = ["SmallRequest", "sample_catalogs"]


def _metatool(root: Path) -> tuple[dict[str, list[str]], list[str]]:
    """MetaTool's single-tool requests by tool, and Task1's no-tool requests."""
    folder = root / "sets" / "metatool"
    tools = {t["function"]["name"]: t for t in json.loads((folder / "catalog" / "tools.json").read_text("utf-8"))}
    by_tool: dict[str, list[str]] = {}
    for line in (folder / "single_full.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if len(row["gold"]) == 1 and row["gold"][0] in tools:
            by_tool.setdefault(row["gold"][0], []).append(row["query"])
    none = [json.loads(line)["query"] for line in (folder / "task1.jsonl").read_text(encoding="utf-8").splitlines()
            if not json.loads(line)["gold"]]
    return by_tool, none


def _bundled() -> tuple[dict[str, list[str]], list[str]]:
    from toolrag import load_queries

    rows = [r for r in load_queries(REPO / "sample_tools" / "queries.yaml")
            if r.image is None and not r.permissions and not r.role]
    by_tool: dict[str, list[str]] = {}
    for r in rows:
        for gold in r.gold:
            by_tool.setdefault(gold, []).append(r.query)
    return by_tool, [r.query for r in rows if not r.gold]


@dataclass(frozen=True)
class SmallRequest:
    """A request to a sampled small catalog, in the shape of a labelled row (``bench.decisions.run_rows``):
    ``gold`` its tool when the catalog holds it (EXECUTE expected), empty when its tool was left out of the
    catalog or it needs no tool (NO_TOOL expected)."""

    query: str
    gold: tuple[str, ...]
    expect: Any = None
    image: Any = None
    permissions: Any = None
    role: Any = None
    history: tuple[str, ...] = ()


def sample_catalogs(root: Path, *, sizes: Sequence[int], catalogs: int, sources: Sequence[str],
                    seed: int) -> list[tuple[str, str, tuple[str, ...], list[SmallRequest]]]:
    """Small catalogs and their requests: per source (``metatool``: the public set; ``bundled``), size and draw,
    (label, source, the catalog's tool ids, requests): two requests of each of its tools (their tool present), one
    request of each of three tools left out of it and three requests that need no tool (their tool absent)."""
    out = []
    for source in sources:
        by_tool, none = _metatool(root) if source == "metatool" else _bundled()
        names = sorted(by_tool)
        rng = random.Random(seed)
        for size in sizes:
            for n in range(catalogs):
                pick = rng.sample(names, size)
                requests = [SmallRequest(q, (t,)) for t in pick for q in rng.sample(by_tool[t], min(2, len(by_tool[t])))]
                requests += [SmallRequest(by_tool[t][0], ()) for t in rng.sample([t for t in names if t not in pick], 3)]
                requests += [SmallRequest(q, ()) for q in rng.sample(none, 3)]
                out.append((f"{source}-{size}-{n}", source, tuple(pick), requests))
    return out
