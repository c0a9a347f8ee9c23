"""Decisions on small catalogs (2-13 tools, like many MCP servers): the shipped rule for a few tools against the
decision model, on catalogs sampled from MetaTool and from the bundled sample catalog.

    python -m bench.small_catalogs                       # sizes 2,3,5,8,13, 5 catalogs per size and source
    python -m bench.small_catalogs --sizes 3,5 --catalogs 8
    python -m bench.small_catalogs --sizes 8,13 --few 13   # the few-tools rule tried on larger catalogs

Each sampled catalog gets its own index and decision model (fitted from the catalog itself, as always). Its
requests: two labelled requests of each of its tools (EXECUTE: right when the decision is EXECUTE with that tool
first), one request of each of three tools left out of it and three requests that need no tool (NO_TOOL: right
when the decision is NO_TOOL). Requests with images, permissions or roles are left out. Reported: accuracy on
each kind and their mean (balanced), for the shipped decision (up to ``FEW_TOOLS`` permitted tools the top
tool's z against the bundled no-tool requests decides) and for the decision model alone (``FEW_TOOLS`` set to 0
for a second pass over the same catalogs and requests).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import REPO, machine, parse_args, say
from bench.datasets import prepare

__all__ = ["SmallRequest", "main", "sample_catalogs"]


def _metatool(root: Path) -> tuple[dict[str, Any], dict[str, list[str]], list[str]]:
    """MetaTool's tools (OpenAI entries by name), single-tool requests by tool, and Task1's no-tool requests."""
    folder = root / "sets" / "metatool"
    tools = {t["function"]["name"]: t for t in json.loads((folder / "catalog" / "tools.json").read_text("utf-8"))}
    by_tool: dict[str, list[str]] = {}
    for line in (folder / "single_full.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if len(row["gold"]) == 1 and row["gold"][0] in tools:
            by_tool.setdefault(row["gold"][0], []).append(row["query"])
    none = [json.loads(line)["query"] for line in (folder / "task1.jsonl").read_text(encoding="utf-8").splitlines()
            if not json.loads(line)["gold"]]
    return tools, by_tool, none


def _bundled() -> tuple[Any, dict[str, list[str]], list[str]]:
    from toolrag import load_catalog, load_queries

    catalog = load_catalog(REPO / "sample_tools")
    rows = [r for r in load_queries(REPO / "sample_tools" / "queries.yaml")
            if r.image is None and not r.permissions and not r.role]
    by_tool: dict[str, list[str]] = {}
    for r in rows:
        for gold in r.gold:
            by_tool.setdefault(gold, []).append(r.query)
    return catalog, by_tool, [r.query for r in rows if not r.gold]


def _catalog(source: str, pick: list[str], data: Any, folder: Path) -> Any:
    from toolrag.catalog.profile import Catalog

    if source == "metatool":
        (folder / "tools.json").write_text(json.dumps([data[n] for n in pick]), "utf-8")
        return folder
    chosen = set(pick)
    return Catalog(tools=tuple(t for t in data.tools if t.id in chosen), name=folder.name, root=data.root,
                   assets_dir=data.assets_dir)


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


def sample_catalogs(root: Path, work: Path, *, sizes: Sequence[int], catalogs: int, sources: Sequence[str],
                    seed: int) -> list[tuple[str, Any, list[SmallRequest]]]:
    """Small catalogs and their requests: per source (``metatool``: the public set; ``bundled``), size and draw,
    (label, catalog folder or Catalog, requests): two requests of each of its tools (their tool present), one
    request of each of three tools left out of it and three requests that need no tool (their tool absent)."""
    out = []
    for source in sources:
        data, by_tool, none = _metatool(root) if source == "metatool" else _bundled()
        names = sorted(by_tool)
        rng = random.Random(seed)
        for size in sizes:
            for n in range(catalogs):
                pick = rng.sample(names, size)
                requests = [SmallRequest(q, (t,)) for t in pick for q in rng.sample(by_tool[t], min(2, len(by_tool[t])))]
                requests += [SmallRequest(by_tool[t][0], ()) for t in rng.sample([t for t in names if t not in pick], 3)]
                requests += [SmallRequest(q, ()) for q in rng.sample(none, 3)]
                folder = work / f"{source}-{size}-{n}"
                folder.mkdir(parents=True)
                out.append((f"{source}-{size}-{n}", _catalog(source, pick, data, folder), requests))
    return out


def _score(retriever: Any, requests: list[tuple[str, str | None]], tally: dict[str, list[int]]) -> None:
    for query, gold in requests:
        result = retriever.search(query, audited=False)
        top = result.candidates[0] if result.candidates else None
        decided = result.decision.value
        key = "exec" if gold else "none"
        ok = (decided == "EXECUTE" and top is not None and gold in (top.id, top.name)) if gold else decided == "NO_TOOL"
        tally[key][0] += int(ok)
        tally[key][1] += 1


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sizes", default="2,3,5,8,13")
        parser.add_argument("--catalogs", type=int, default=5, help="catalogs per size and source")
        parser.add_argument("--sources", default="metatool,bundled")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--few", type=int, default=None,
                            help="FEW_TOOLS for the 'shipped' pass (default: the shipped value), to try another boundary")

    args = parse_args("bench.small_catalogs", __doc__.split("\n\n")[0], argv, options, benchmarks=True)
    from toolrag.encode.models import load_models
    from toolrag.search import decision_step
    from toolrag.search import retriever as retriever_module
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    models = load_models(Settings())
    shipped = decision_step.FEW_TOOLS
    trial = shipped if args.few is None else args.few
    work = Path(tempfile.mkdtemp(prefix="toolrag-small-"))
    lines = []
    try:
        for source in args.sources.split(","):
            for size in (int(s) for s in args.sizes.split(",")):
                tallies = {mode: {"exec": [0, 0], "none": [0, 0]} for mode in ("shipped", "model")}
                drawn = sample_catalogs(prepare(args.benchmarks, args.bench_dir), work / f"{source}-{size}",
                                        sizes=[size], catalogs=args.catalogs, sources=[source], seed=args.seed + size)
                for label, catalog, requests in drawn:
                    retriever = ToolRetriever.from_catalog(catalog, data_dir=work / f"{source}-{size}" / label / "data",
                                                           models=models)
                    pairs = [(r.query, r.gold[0] if r.gold else None) for r in requests]
                    for mode in ("shipped", "model"):
                        few = trial if mode == "shipped" else 0
                        decision_step.FEW_TOOLS = retriever_module.FEW_TOOLS = few  # type: ignore[misc]
                        _score(retriever, pairs, tallies[mode])
                    decision_step.FEW_TOOLS = retriever_module.FEW_TOOLS = shipped  # type: ignore[misc]
                for mode, tally in tallies.items():
                    ex, no = (tally[k][0] / max(tally[k][1], 1) for k in ("exec", "none"))
                    lines.append(f"| {source} | {size} | {mode} | {100 * ex:.1f} ({tally['exec'][1]}) | "
                                 f"{100 * no:.1f} ({tally['none'][1]}) | {50 * (ex + no):.1f} |")
                say(f"{source}: size {size} done")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"machine: {machine()}; FEW_TOOLS = {trial} (shipped: {shipped})")
    print("| source | tools | decision | EXECUTE rows right | NO_TOOL rows right | balanced |")
    print("|---|---|---|---|---|---|")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
