"""``toolrag search``: the tools for one request, as a readable table or the result JSON."""

from __future__ import annotations

import argparse
from typing import Any

from toolrag.cli.common import codes, load_inputs, open_retriever, warn
from toolrag.images import load_image
from toolrag.search.request import prepare_request
from toolrag.search.results import SearchResult
from toolrag.signals import SIGNALS

__all__ = ["format_result", "register"]


def register(sub: Any, common: argparse.ArgumentParser, query: argparse.ArgumentParser) -> None:
    cmd = sub.add_parser("search", parents=[common, query], help="find the tools for a request")
    cmd.add_argument("query", nargs="?", default="")
    cmd.add_argument("--image", help="an image file to search with")
    cmd.add_argument("--history", action="append", default=[], help="an earlier user turn (repeatable)")
    cmd.add_argument("--category", action="append", help="only this category (repeatable)")
    cmd.add_argument("--include-deprecated", action="store_true")
    cmd.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    catalog, settings = load_inputs(args)
    request = prepare_request(catalog, args.query, image=args.image, history=args.history,
                              permissions=codes(args.permissions), role=args.role, categories=args.category,
                              include_deprecated=args.include_deprecated)
    if args.image:
        load_image(args.image)  # a missing or broken image is refused before the models load
    warn(request.notes)
    retriever = open_retriever(args, settings, catalog)
    result = retriever.search(args.query, image=args.image, history=args.history, caller=request.caller)
    if retriever.reranker_fallback:  # the reranker loads on the first reranked search
        warn([retriever.reranker_fallback])
    print(result.to_json_str() if args.json else format_result(result))
    return 0


def format_result(result: SearchResult) -> str:
    """A readable text rendering of a SearchResult: decision, ranked table with per-signal scores."""
    lines = [f"decision: {result.decision.value}" + (f" - {result.clarification}" if result.clarification else "")]
    if result.decision_reason:
        lines.append(f"why: {result.decision_reason}")
    if result.scores is not None:
        p = result.scores
        lines.append(f"P(right) {p.right:.2f}  P(ambiguous) {p.ambiguous:.2f}  P(no tool) {p.no_tool:.2f}"
                     + (f"  ({note})" if (note := result.decided_by.view_note()) else ""))
    lines.append("inject: " + (", ".join(result.selected) if result.selected else "nothing (answer without a tool)"))
    signals = [s for s in SIGNALS if any(s in c.signals for c in result.candidates)]
    header = f"{'#':>2}  {'tool':<40} {'score':>6}  " + "  ".join(f"{s:>16}" for s in signals)
    lines += [header, "-" * len(header)]
    for n, c in enumerate(result.candidates, start=1):
        cells = []
        for s in signals:
            sc = c.signals.get(s)
            cells.append(f"{'-':>16}" if sc is None else f"{sc.raw:7.3f} ({sc.norm:4.2f}) r{sc.rank:<2}"[:16].rjust(16))
        lines.append(f"{n:>2}  {c.id[:40]:<40} {c.score:6.3f}  " + "  ".join(cells))
    if result.absent_signals:
        lines.append("absent signals: " + "; ".join(f"{k}: {v}" for k, v in result.absent_signals.items()))
    lines.append(f"schema tokens: {result.tokens.selected} for the {len(result.selected)} selected, "
                 f"{result.tokens.candidates} for all {len(result.candidates)} candidates, {result.tokens.all} "
                 f"for the whole catalog ({result.tokens.saving:.0%} saved, {result.tokens.tokenizer})")
    if result.filtered_out:
        lines.append(f"filtered out by category/deprecation: {result.filtered_out}")
    lines.append("timing ms: " + ", ".join(f"{k} {v:.1f}" for k, v in result.timing_ms.items()))
    lines.extend(result.notes)
    return "\n".join(lines)
