"""Issue 44, item 5: may a catalog's own example requests move the decision's thresholds?

Every text example of the bundled catalog is searched twice through the real retriever: leave-one-out (its tool's
document without it, :mod:`toolrag.evaluation.loo`: a request its tool serves) and with its tool hidden from the
caller (the issue's stand-in for a request nothing serves). From those searches a catalog's own operating point
is read: the P(right) threshold at which EXECUTE is right for the precision target, the P(no tool) threshold that
keeps the clean target of the hidden-tool searches clean. It is compared with the shipped model's global point

- on the examples themselves, two folds by tool (a point read from one half's tools, applied to the other's), the
  guard the issue names: kept only when its per-example gain beats the standard error;
- on the bundled labelled queries (sample_tools/queries.yaml: no example equals one of them), the test.

What a decision injects is read as the policy injects it: EXECUTE the tools the search selected when it called
(else the top tool), CLARIFY the first three candidates, NO_TOOL nothing.

    python -m bench.example_points
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bench.agent_outcome import agent_outcome
from bench.common import REPO, index_dir, keep_results, machine, parse_args, say, set_up_environment

#: (precision target, clean target) pairs compared: the shipped default first.
POINTS = ((0.85, 0.85), (0.80, 0.80), (0.90, 0.90))
#: An EXECUTE threshold is read only where at least this many searches are called at it.
MIN_CALLED = 10


def search_examples(retriever: Any, *, hide_alike: float = 2.0) -> list[dict[str, Any]]:
    """Each text example searched leave-one-out (``served``) and with its tool hidden, with every tool at least
    ``hide_alike`` close to it (multilingual profile vectors; the default hides the tool alone)."""
    from toolrag.catalog.caller import Caller
    from toolrag.evaluation.loo import left_out_examples

    author = Caller.author(retriever.snapshot.catalog)
    ids = frozenset(t.id for t in retriever.snapshot.catalog.tools)
    order, vectors = retriever.tool_vectors()
    near = vectors @ vectors.T
    alike = {tool: {order[j] for j in np.flatnonzero(near[i] >= hide_alike)} | {tool} for i, tool in enumerate(order)}
    rows = []
    for tool, query, view in left_out_examples(retriever):
        for served in (True, False):
            who = author if served else dataclasses.replace(author, tools=ids - alike[tool])
            result = retriever.search(query, caller=who, top_k=5, snapshot=view if served else None,
                                      audited=False)
            rows.append(_row(result, tool=tool, served=served, gold=[tool] if served else []))
    return rows


def search_queries(retriever: Any) -> list[dict[str, Any]]:
    from toolrag import load_queries

    rows = []
    for q in load_queries(REPO / "sample_tools" / "queries.yaml"):
        result = retriever.search(q.query, image=q.image, history=q.history, permissions=q.permissions, role=q.role,
                                  top_k=5, audited=False)
        expect = q.expect.value if q.expect else ("EXECUTE" if q.gold else "NO_TOOL")
        rows.append(_row(result, gold=list(q.gold), expect=expect, image=q.image is not None))
    return rows


def _row(result: Any, **extra: Any) -> dict[str, Any]:
    s = result.scores
    return {"right": s.right if s else 0.0, "none": s.no_tool if s else 1.0, "ids": list(result.ids),
            "decision": result.decision.value, "selected": list(result.selected), "by": result.decided_by.value,
            **extra}


def global_point(model: Any, target: float, clean: float) -> tuple[float, float]:
    from toolrag.decision.policy import operating_point

    point = operating_point(model, target=target, clean=clean)
    return point.execute_at, point.inject_below


def catalog_point(rows: Sequence[Mapping[str, Any]], target: float, clean: float, *,
                  served_only: bool = False) -> tuple[float, float] | None:
    """The thresholds the example searches give: the lowest P(right) threshold at which EXECUTE is right for
    ``target`` of the searches it calls (served and hidden-tool searches alike, or the served ones alone), the
    highest P(no tool) threshold that leaves ``clean`` of the hidden-tool searches with nothing injected."""
    from toolrag.decision.policy import NO_TOOL_AT

    called = [r for r in rows if r["served"] or not served_only]
    execute_at = None
    for t in sorted({r["right"] for r in called}):
        hits = [r["served"] and r["ids"][:1] == r["gold"] for r in called if r["right"] >= t and r["none"] < NO_TOOL_AT]
        if len(hits) >= MIN_CALLED and np.mean(hits) >= target:
            execute_at = t
            break
    none = np.array([r["none"] for r in rows if not r["served"]])
    if execute_at is None or not len(none):
        return None
    kept = [u for u in sorted(set(none.tolist()) | {1.0 + 1e-9}) if np.mean(none >= u) >= clean]
    return execute_at, (max(kept) if kept else float(none.min()))


def outcome(row: Mapping[str, Any], point: tuple[float, float]) -> tuple[str, list[str]]:
    """The decision at ``point`` (the one policy) and the tools it injects."""
    from toolrag.decision.outcome import Decision, DecisionScores
    from toolrag.decision.policy import OperatingPoint, choose

    if row["by"] != "model":
        decision = Decision(row["decision"])
    else:
        scores = DecisionScores(row["right"], 1.0 - row["right"] - row["none"], row["none"])
        decision = choose(scores, OperatingPoint(point[0], point[1], 0.0, 0.0))
    if decision is Decision.EXECUTE:
        return decision.value, list(row["selected"]) if row["decision"] == "EXECUTE" else row["ids"][:1]
    return decision.value, row["ids"][:3] if decision is Decision.CLARIFY else []


def measure(rows: Sequence[Mapping[str, Any]], point: tuple[float, float]) -> dict[str, Any]:
    """The agent's outcome at ``point`` (:func:`bench.agent_outcome.agent_outcome`: right tool injected, nothing
    injected where nothing serves, tools per request), decision accuracy (labelled queries: the expected decision,
    as ``bench.decisions`` counts it) and per row whether the agent got what it needed (for the paired
    comparison)."""
    decided = [outcome(r, point) for r in rows]
    injected = [tools for _, tools in decided]
    figures = agent_outcome(injected, [r["gold"] for r in rows], [r["ids"] for r in rows], [math.nan] * len(rows))
    right = [decision == r["expect"] for (decision, _), r in zip(decided, rows, strict=True) if "expect" in r]
    per_row = [float(bool(set(tools) & set(r["gold"])) if r["gold"] else not tools)
               for tools, r in zip(injected, rows, strict=True)]
    return {"reach": figures["reach"], "clean": figures["clean"], "tools": figures["injected"],
            "accuracy": float(np.mean(right)) if right else math.nan, "rows": per_row}


def folds(examples: Sequence[Mapping[str, Any]], model: Any, target: float, clean: float) -> dict[str, float]:
    """Two folds by tool: each half's point applied to the other half; the paired per-example gain of the
    catalog point over the global one (balanced: served and hidden-tool searches weigh the same) and its
    standard error."""
    tools = sorted({r["tool"] for r in examples})
    half = {t: i % 2 for i, t in enumerate(tools)}
    gains: list[float] = []
    for k in (0, 1):
        fit = [r for r in examples if half[r["tool"]] == k]
        test = [r for r in examples if half[r["tool"]] != k]
        point = catalog_point(fit, target, clean)
        if point is None:
            continue
        ours, theirs = measure(test, point)["rows"], measure(test, global_point(model, target, clean))["rows"]
        gains.extend(a - b for a, b in zip(ours, theirs, strict=True))
    g = np.array(gains)
    return {"gain": float(g.mean()) if len(g) else float("nan"),
            "stderr": float(g.std(ddof=1) / np.sqrt(len(g))) if len(g) > 1 else float("nan")}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolrag.encode.models import load_models
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    retriever = ToolRetriever.from_catalog(REPO / "sample_tools", data_dir=index_dir(args.bench_root) / "bundled",
                                           models=load_models(Settings()))
    model = retriever.decider.model
    start = time.perf_counter()
    examples = search_examples(retriever, hide_alike=args.hide_alike)
    say(f"{len(examples)} example searches in {time.perf_counter() - start:.0f}s")
    queries = search_queries(retriever)
    results: dict[str, Any] = {"machine": machine(), "command": args.command_line, "examples": len(examples) // 2,
                               "points": []}
    for target, clean in POINTS:
        points = {"global": global_point(model, target, clean), "catalog": catalog_point(examples, target, clean),
                  "catalog, EXECUTE from served examples": catalog_point(examples, target, clean, served_only=True)}
        for name, point in points.items():
            if point is None:
                continue
            if name != "catalog":  # the served-only variant keeps the global clean threshold
                point = (point[0], global_point(model, target, clean)[1])
            entry = {"target": target, "clean": clean, "point": name, "execute_at": point[0],
                     "inject_below": point[1], "examples": _public(measure(examples, point))}
            for part, pictured in (("text rows", False), ("image rows", True)):
                entry[part] = _public(measure([q for q in queries if q["image"] == pictured], point))
            if name == "catalog":
                entry["folds"] = folds(examples, model, target, clean)
            results["points"].append(entry)
    return results


def _public(m: Mapping[str, Any]) -> dict[str, float]:
    return {k: v for k, v in m.items() if k != "rows"}


def tables(results: Mapping[str, Any]) -> str:
    def pct(v: float) -> str:
        return "n/a" if v != v else f"{100 * v:.1f}"

    lines = [f"{results['examples']} examples, each searched leave-one-out and with its tool hidden; "
             f"{results['machine']}", "",
             "| targets (precision / clean) | point | P(right) >= | P(no tool) < | examples: reached / clean | "
             "text rows: reached / clean / accuracy | image rows: reached / clean / accuracy | two folds: gain "
             "(stderr) |", "|---|---|---|---|---|---|---|---|"]
    for e in results["points"]:
        ex, tx, im = e["examples"], e["text rows"], e["image rows"]
        fold = f"{pct(e['folds']['gain'])} ({pct(e['folds']['stderr'])})" if "folds" in e else ""
        lines.append(f"| {e['target']:.2f} / {e['clean']:.2f} | {e['point']} | {e['execute_at']:.3f} | "
                     f"{e['inject_below']:.3f} | {pct(ex['reach'])} / {pct(ex['clean'])} | {pct(tx['reach'])} / "
                     f"{pct(tx['clean'])} / {pct(tx['accuracy'])} | {pct(im['reach'])} / {pct(im['clean'])} / "
                     f"{pct(im['accuracy'])} | {fold} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    set_up_environment()
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--hide-alike", type=float, default=2.0,
                            help="hide every tool at least this close to the example's (profile cosine) in its "
                                 "nothing-serves search; default: the tool alone")

    args = parse_args("bench.example_points", __doc__ or "", argv, options, results="example_points.json")
    from bench.datasets import bench_dir

    args.bench_root = bench_dir(args.bench_dir)
    return keep_results(args, run(args), "example_points.json", tables)


if __name__ == "__main__":
    raise SystemExit(main())
