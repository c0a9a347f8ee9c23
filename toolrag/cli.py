"""The ``toolrag`` command line: ``index``, ``search``, ``eval``, ``lint``, ``tune``.

Thin by design: parse arguments, call one library function, print its result. Every ``ToolragError`` becomes
a one-line message on stderr and exit status 2; ``eval --fail-under`` exits 1 when a metric falls short.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolrag.errors import ToolragError
from toolrag.settings import SIGNALS, Fusion, Settings

__all__ = ["main"]

_METRICS = ("recall@1", "recall@5", "recall@10", "ndcg@5", "ndcg@10", "mrr@10", "completeness@5",
            "decision_accuracy")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolrag", description="Retrieval-augmented tool selection.")
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--catalog", required=True, help="catalog folder or file (YAML, JSONL, OpenAI, MCP)")
    common.add_argument("--data-dir", help="index folder (default: TOOLRAG_DATA_DIR or ~/.cache/toolrag)")
    common.add_argument("--chroma-url", help="use a Chroma server, e.g. http://127.0.0.1:8000 "
                                             "(default: TOOLRAG_CHROMA_URL, else an embedded index)")
    common.add_argument("--settings", help="YAML file of settings (weights, thresholds, models)")
    common.add_argument("--text-model", help="multilingual text model: e5, a path or a Hub id")
    common.add_argument("--english-model", help="English text model: minilm, a path, a Hub id, or none")
    common.add_argument("--clip-model", help="open_clip model (ARCH:TAG, hf-hub:ID, random:ARCH, none)")
    common.add_argument("--rerank-model", help="cross-encoder path or Hub id (none = off)")
    common.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    query_opts = argparse.ArgumentParser(add_help=False)
    query_opts.add_argument("--permissions", default="", help="comma-separated permission codes of the caller")
    query_opts.add_argument("--role", help="a role named in the catalog's catalog.yaml")
    query_opts.add_argument("--top-k", type=int)
    query_opts.add_argument("--fusion", choices=[f.value for f in Fusion])
    query_opts.add_argument("--weight", action="append", default=[], metavar="SIGNAL=W",
                            help=f"signal weight, repeatable; signals: {', '.join(SIGNALS)}")
    query_opts.add_argument("--rerank", action="store_true", help="rerank the top candidates")
    query_opts.add_argument("--clarify-gap", type=float)
    query_opts.add_argument("--no-tool-threshold", type=float)
    query_opts.add_argument("--json", action="store_true", help="print JSON")

    sub.add_parser("index", parents=[common], help="build or refresh the index")
    lint = sub.add_parser("lint", parents=[common], help="validate the catalog and print quality warnings")
    lint.add_argument("--json", action="store_true")
    search = sub.add_parser("search", parents=[common, query_opts], help="find the tools for a request")
    search.add_argument("query", nargs="?", default="")
    search.add_argument("--image", help="an image file to search with")
    search.add_argument("--history", action="append", default=[], help="an earlier user turn (repeatable)")
    search.add_argument("--category", action="append", help="only this category (repeatable)")
    search.add_argument("--include-deprecated", action="store_true")
    ev = sub.add_parser("eval", parents=[common, query_opts], help="measure retrieval on labelled queries")
    ev.add_argument("--queries", required=True, help="YAML or JSON Lines of {query, gold, ...}")
    ev.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                    help="exit 1 when METRIC (e.g. recall@5) is below VALUE (a fraction or a percentage)")
    tune = sub.add_parser("tune", parents=[common, query_opts],
                          help="choose the text-signal weights from labelled queries of this catalog")
    tune.add_argument("--queries", required=True, help="YAML or JSON Lines of {query, gold, ...}")
    tune.add_argument("--metric", default="ndcg@10", help="what to maximise (default ndcg@10)")
    tune.add_argument("--step", type=float, default=0.1, help="grid step of the weights (default 0.1)")
    tune.add_argument("--out", help="write the chosen weights into this settings YAML (read it with --settings)")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    base = Settings.from_yaml(args.settings) if args.settings else Settings()
    weights: dict[str, float] = {}
    for item in getattr(args, "weight", []):
        name, _, value = item.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise ToolragError(f"--weight {item!r}: expected SIGNAL=NUMBER, e.g. bm25=0.3") from None
    english = args.english_model
    changes: dict[str, Any] = {
        "text_model": args.text_model,
        "clip_model": args.clip_model,
        "rerank_model": args.rerank_model,
        "top_k": getattr(args, "top_k", None),
        "fusion": getattr(args, "fusion", None),
        "weights": weights or None,
        "clarify_gap": getattr(args, "clarify_gap", None),
        "no_tool_threshold": getattr(args, "no_tool_threshold", None),
        "rerank": True if getattr(args, "rerank", False) else None,
    }
    settings = base.with_overrides(**changes)
    if english is not None:
        off = english.strip().lower() in ("none", "off")
        settings = dataclasses.replace(settings, english_model=None if off else english)
    return settings


def _retriever(args: argparse.Namespace, settings: Settings) -> Any:
    import os

    from toolrag.retriever import ToolRetriever

    def progress(fraction: float, message: str) -> None:
        logging.getLogger("toolrag.cli").info("%3.0f%% %s", fraction * 100, message)

    return ToolRetriever.from_catalog(
        args.catalog, settings=settings, data_dir=args.data_dir,
        chroma_url=args.chroma_url or os.environ.get("TOOLRAG_CHROMA_URL") or None, progress=progress,
    )


def _codes(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def _cmd_search(args: argparse.Namespace) -> int:
    settings = _settings(args)
    retriever = _retriever(args, settings)
    result = retriever.search(
        args.query, image=args.image, history=args.history, permissions=_codes(args.permissions),
        role=args.role, categories=args.category, include_deprecated=args.include_deprecated,
    )
    if args.json:
        print(result.to_json_str())
    else:
        print(format_result(result))
    return 0


def format_result(result: Any) -> str:
    """A readable text rendering of a SearchResult: decision, ranked table with per-signal scores."""
    lines = [f"decision: {result.decision.value}" + (f" - {result.clarification}" if result.clarification else "")]
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
    lines.append(f"schema tokens: {result.tokens.selected} selected vs {result.tokens.all} for the whole "
                 f"catalog ({result.tokens.saving:.0%} saved, {result.tokens.tokenizer})")
    if result.filtered_out:
        lines.append(f"filtered out by category/deprecation: {result.filtered_out}")
    lines.append("timing ms: " + ", ".join(f"{k} {v:.1f}" for k, v in result.timing_ms.items()))
    lines.extend(result.notes)
    return "\n".join(lines)


def _cmd_eval(args: argparse.Namespace) -> int:
    from toolrag.evaluate import load_queries

    gates = [_gate(item) for item in args.fail_under]
    rows = load_queries(Path(args.queries))
    settings = _settings(args)
    retriever = _retriever(args, settings)
    if args.permissions or args.role:
        rows = [r if r.permissions is not None or r.role else
                type(r)(**{**r.__dict__, "permissions": tuple(_codes(args.permissions)), "role": args.role})
                for r in rows]
    report = retriever.evaluate(rows)
    if args.json:
        print(json.dumps(report.to_json(n_tools=len(retriever.index.catalog)), ensure_ascii=False, indent=2))
    else:
        print(report.format_table())
    failed = [f"{m} = {report.metrics.get(m, float('nan')):.4f} < {v:.4f}" for m, v in gates
              if not report.metrics.get(m, float("-inf")) >= v]
    for line in failed:
        print(f"toolrag: fail-under: {line}", file=sys.stderr)
    return 1 if failed else 0


def _cmd_tune(args: argparse.Namespace) -> int:
    from toolrag.decision import Decision
    from toolrag.evaluate import load_queries
    from toolrag.tune import calibrate_no_tool, save_settings, tune_weights

    rows = load_queries(Path(args.queries))
    retriever = _retriever(args, _settings(args))
    result = tune_weights(retriever, rows, step=args.step, metric=args.metric)
    no_tool = None
    kinds = {r.expect is Decision.NO_TOOL for r in rows if r.gold or r.expect is Decision.NO_TOOL}
    if kinds == {True, False}:  # rows that need no tool and rows that need one: calibrate the threshold too
        no_tool = calibrate_no_tool(retriever, rows, base=result.settings)
    if args.json:
        print(json.dumps({"summary": result.summary(), "changed": result.changed, "metric": result.metric,
                          "base_score": result.base_score, "best_score": result.best_score,
                          "gain_stderr": result.gain_stderr, "weights": dict(result.settings.weights),
                          "top": [{"weights": c.weights, "score": c.score} for c in result.candidates[:10]],
                          "no_tool": dataclasses.asdict(no_tool) if no_tool else None}, indent=2))
    else:
        print(result.summary())
        for cand in result.candidates[:5]:
            weights = ", ".join(f"{s}={w:g}" for s, w in cand.weights.items())
            print(f"  {args.metric} {100 * cand.score:6.2f}  {weights}")
        print(no_tool.summary() if no_tool else "no_tool_threshold: not calibrated (the queries need rows with "
                                                "'expect: no_tool' and rows with gold tools)")
    if args.out:
        changes: dict[str, Any] = {"weights": {s: round(float(w), 4) for s, w in result.settings.weights.items()}}
        if no_tool is not None and no_tool.changed:
            changes["no_tool_threshold"] = round(no_tool.threshold, 4)
        summary = result.summary() + ("; " + no_tool.summary() if no_tool else "")
        print(f"wrote {save_settings(args.out, changes, comment=summary)}", file=sys.stderr)
    return 0


def _gate(item: str) -> tuple[str, float]:
    name, _, value = item.partition("=")
    name = name.strip().lower()
    if name not in _METRICS:
        raise ToolragError(f"--fail-under {item!r}: unknown metric {name!r}; metrics: {', '.join(_METRICS)}")
    try:
        number = float(value.strip().rstrip("%"))
    except ValueError:
        raise ToolragError(f"--fail-under {item!r}: expected METRIC=VALUE, e.g. recall@5=0.8") from None
    return name, number / 100 if number > 1 or value.strip().endswith("%") else number


def _cmd_index(args: argparse.Namespace) -> int:
    settings = _settings(args)
    retriever = _retriever(args, settings)
    index = retriever.index
    print(f"indexed {len(index.catalog)} tools from {args.catalog} "
          f"({index.encoded_last_sync} texts/images encoded, the rest unchanged)")
    return 0


def _cmd_lint(args: argparse.Namespace) -> int:
    from toolrag.errors import ProfileError
    from toolrag.lint import lint_catalog
    from toolrag.loader import load_catalog

    try:
        catalog = load_catalog(args.catalog)
    except ProfileError as exc:
        for problem in getattr(exc, "problems", [str(exc)]):
            print(problem)
        raise
    warnings = lint_catalog(catalog)
    if args.json:
        print(json.dumps({"n_tools": len(catalog), "warnings": [w.to_json() for w in warnings]},
                         ensure_ascii=False, indent=2))
    else:
        for w in warnings:
            print(f"{w.tool_id}: {w.message}")
        print(f"{len(catalog)} tools, {len(warnings)} warnings")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s",
                        stream=sys.stderr)
    commands = {"search": _cmd_search, "eval": _cmd_eval, "index": _cmd_index, "lint": _cmd_lint, "tune": _cmd_tune}
    try:
        return commands[args.command](args)
    except ToolragError as exc:
        print(f"toolrag: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
