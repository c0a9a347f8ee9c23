"""Speed of the retrievability report (``toolrag report`` / the Evaluate tab): cold, warm and after one edit.

    python -m bench.retrievability                          # the bundled catalog
    python -m bench.retrievability --synthetic 1000         # 1,000 synthetic tools, 4 examples each
    python -m bench.retrievability --print                  # the table of every stored run (Markdown)

Each run opens the catalog's index (built once under ``<bench dir>/index``; its build is not part of the
report's time) and then times, in one process with the models loaded:

- **cold**: a new checker with an empty leave-one-out cache: every example's leave-one-out document is
  encoded by both text models, every request encoded, every example searched;
- **warm**: a new checker on the cache the cold run saved (what a second ``toolrag report`` costs);
- **after one edit**: one tool's description changed and re-indexed (``reload``, timed apart), then the
  incremental update of the checker's report (its own examples re-encoded, only what the edit can move
  searched again); over ``--edits`` tools, the median.

Results go to ``<bench dir>/retrievability/<name>.json`` with the command, machine and revision. Under load
the numbers are noisy: say so next to them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, engine_description, machine, parse_args, say
from bench.datasets import bench_dir
from bench.synthetic import ACTIONS, make_catalog

__all__ = ["main"]

_TEMPLATES = ("please {a} the {o} in {d}", "I need to {a} a {o} ({d})", "can you {a} my {d} {o}",
              "{a} {o} for {d} now", "how do I {a} the {o} of {d}", "{d}: {a} this {o}")


def synthetic_catalog(root: Path, n_tools: int, n_examples: int) -> Path:
    """``n_tools`` synthetic tools (bench.synthetic) with ``n_examples`` paraphrased example requests each and
    no ``embedding_text``, so the examples are part of the embedded document as in a real catalog."""
    folder = root / f"examples-{n_tools}x{n_examples}"
    stamp = folder / "stamp.json"
    if stamp.is_file():
        return folder / "catalog"
    base = make_catalog(root / f"plain-{n_tools}", n_tools, image_every=0)
    rng = random.Random(13)
    paraphrase = dict(ACTIONS)
    (folder / "catalog").mkdir(parents=True, exist_ok=True)
    (folder / "catalog" / "catalog.yaml").write_text(f"name: synthetic-{n_tools}x{n_examples}\n", encoding="utf-8")
    with (folder / "catalog" / "tools.jsonl").open("w", encoding="utf-8") as out:
        for line in (base / "tools.jsonl").read_text(encoding="utf-8").splitlines():
            tool = json.loads(line)
            tool.pop("embedding_text", None)
            action = tool["name"].split("_", 1)[0]
            domain, obj = tool["tags"]
            words = (action, paraphrase.get(action, action))
            tool["examples"] = [{"query": t.format(a=words[i % 2], o=obj, d=domain)}
                                for i, t in enumerate(rng.sample(_TEMPLATES, n_examples))]
            out.write(json.dumps(tool) + "\n")
    stamp.write_text(json.dumps({"n_tools": n_tools, "n_examples": n_examples}), encoding="utf-8")
    return folder / "catalog"


def _timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolrag.config import configure_environment

    configure_environment()
    from toolrag.evaluation.loo import RetrievabilityChecker
    from toolrag.search.retriever import ToolRetriever

    root = bench_dir(args.bench_dir)
    if args.synthetic:
        catalog, name = synthetic_catalog(root / "retrievability", args.synthetic, args.examples), \
            f"synthetic-{args.synthetic}x{args.examples}"
    else:
        catalog, name = REPO / "sample_tools", "bundled"
    retriever, built = _timed(lambda: ToolRetriever.from_catalog(catalog, data_dir=root / "index"))
    say(f"{name}: {len(retriever.catalog)} tools indexed in {built:.1f}s ({retriever.index.encoded_last_sync} encoded)")
    with tempfile.TemporaryDirectory(prefix="toolrag-loo-") as cache:
        cold, t_cold = _timed(lambda: RetrievabilityChecker(cache_dir=cache).check(retriever))
        say(f"cold: {t_cold:.1f}s ({cold.searched} searched, {cold.encoded} encoded)")
        checker = RetrievabilityChecker(cache_dir=cache)
        warm, t_warm = _timed(lambda: checker.check(retriever))
        say(f"warm: {t_warm:.1f}s ({warm.encoded} encoded)")
        edits = []
        rng = random.Random(5)
        original = retriever.catalog
        for tool in rng.sample([t for t in original.tools if t.examples and not t.deprecated], args.edits):
            edited = dataclasses.replace(tool, description=tool.description + " Also works on archived records.")
            _, t_reload = _timed(lambda e=edited: retriever.reload(retriever.catalog.with_tool(e)))
            report, t_update = _timed(lambda: checker.check(retriever))
            edits.append({"tool": tool.id, "reload_s": t_reload, "update_s": t_update, "searched": report.searched,
                          "encoded": report.encoded})
            say(f"edit {tool.id}: reload {t_reload:.2f}s + update {t_update:.2f}s ({report.searched} searched)")
            retriever.reload(original)
            checker.check(retriever)  # back to the original catalog before the next edit
    h = cold.health
    return {
        "name": name, "tools": len(original), "examples": h.n_examples,
        "cold_s": t_cold, "cold_encoded": cold.encoded, "warm_s": t_warm,
        "edit_reload_s": statistics.median(e["reload_s"] for e in edits) if edits else None,
        "edit_update_s": statistics.median(e["update_s"] for e in edits) if edits else None,
        "edit_searched": statistics.median(e["searched"] for e in edits) if edits else None,
        "edits": edits, "found_first": h.found_first, "found_top5": h.found_top5,
        "command": args.command_line, "machine": machine(),
        "engine": engine_description(), "date": time.strftime("%Y-%m-%d"),
    }


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| catalog | tools | examples | cold s (encoded) | warm s | one edit: re-index s + update s (searched) "
             "| found first / top 5 | date, command |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        edit = (f"{r['edit_reload_s']:.2f} + {r['edit_update_s']:.2f} ({r['edit_searched']:.0f})"
                if r["edit_update_s"] is not None else "–")
        lines.append(f"| {r['name']} | {r['tools']} | {r['examples']} | {r['cold_s']:.1f} ({r['cold_encoded']}) | "
                     f"{r['warm_s']:.1f} | {edit} | {100 * r['found_first']:.1f}% / {100 * r['found_top5']:.1f}% | "
                     f"{r['date']}, `{r['command']}` |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--synthetic", type=int, help="a synthetic catalog of this many tools")
        parser.add_argument("--examples", type=int, default=4, help="example requests per synthetic tool")
        parser.add_argument("--edits", type=int, default=3, help="tools edited one after the other")
        parser.add_argument("--print", action="store_true", help="print the table of the stored runs")

    args = parse_args("bench.retrievability", "speed of the retrievability report", argv, options)
    out = bench_dir(args.bench_dir) / "retrievability"
    out.mkdir(parents=True, exist_ok=True)
    if not args.print:
        result = run(args)
        (out / f"{result['name']}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    results = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("*.json"))]
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
