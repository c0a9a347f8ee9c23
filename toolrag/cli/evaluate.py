"""``toolrag eval`` and ``toolrag tune``: measure retrieval on labelled requests, and choose weights from them."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from toolrag.cli.common import codes, load_inputs, open_retriever
from toolrag.errors import SettingsError
from toolrag.evaluation.evaluator import Evaluator
from toolrag.evaluation.metrics import DECISION_ACCURACY, METRIC_NAMES, metric
from toolrag.evaluation.queries import load_queries
from toolrag.evaluation.report import tune_with_threshold
from toolrag.evaluation.tune import save_settings

__all__ = ["parse_gate", "register"]


def register(sub: Any, common: argparse.ArgumentParser, query: argparse.ArgumentParser) -> None:
    ev = sub.add_parser("eval", parents=[common, query], help="measure retrieval on labelled queries")
    ev.add_argument("--queries", required=True, help="YAML, JSON Lines or CSV of {query, gold, ...}")
    ev.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                    help="exit 1 when METRIC (e.g. recall@5) is below VALUE (a fraction or a percentage)")
    ev.set_defaults(handler=run_eval)
    tune = sub.add_parser("tune", parents=[common, query],
                          help="choose the text-signal weights from labelled queries of this catalog")
    tune.add_argument("--queries", required=True, help="YAML, JSON Lines or CSV of {query, gold, ...}")
    tune.add_argument("--metric", default="ndcg@10", help="what to maximise (default ndcg@10)")
    tune.add_argument("--step", type=float, default=0.1, help="grid step of the weights (default 0.1)")
    tune.add_argument("--out", help="write the chosen weights into this settings YAML (read it with --settings)")
    tune.set_defaults(handler=run_tune)


def run_eval(args: argparse.Namespace) -> int:
    gates = [parse_gate(item) for item in args.fail_under]
    catalog, settings = load_inputs(args)
    evaluator = Evaluator(load_queries(Path(args.queries)), permissions=codes(args.permissions) or None,
                          role=args.role)
    evaluator.check(catalog)  # unknown gold ids, roles or permission codes: refused before the models load
    retriever = open_retriever(args, settings, catalog)
    report = retriever.evaluate(evaluator)
    if args.json:
        print(json.dumps(report.to_json(n_tools=len(retriever.catalog)), ensure_ascii=False, indent=2))
    else:
        print(report.format_table())
        if report.languages():
            print("\nper language (rows that name it; in brackets: points against the same rows in English)")
            print(report.format_languages())
    unmeasured = [m for m, _ in gates if m not in report.metrics]
    if unmeasured:  # a gate on nothing measured neither passes nor fails silently
        raise SettingsError(f"--fail-under {unmeasured[0]}: {report.unmeasured(unmeasured[0])}")
    failed = [f"{m} = {report.metrics[m]:.4f} < {v:.4f}" for m, v in gates if not report.metrics[m] >= v]
    for line in failed:
        print(f"toolrag: fail-under: {line}", file=sys.stderr)
    return 1 if failed else 0


def run_tune(args: argparse.Namespace) -> int:
    catalog, settings = load_inputs(args)
    rows = load_queries(Path(args.queries))
    Evaluator(rows).check(catalog)
    retriever = open_retriever(args, settings, catalog)
    # The decision's operating point is calibrated too when the rows hold both kinds (rows that need no tool, rows
    # that need one): a catalog's own rows move only its threshold, never the shipped model.
    result, point = tune_with_threshold(retriever, rows, step=args.step, metric=args.metric)
    if args.json:
        print(json.dumps({"summary": result.summary(), "changed": result.changed, "metric": result.metric,
                          "base_score": result.base_score, "best_score": result.best_score,
                          "gain_stderr": result.gain_stderr, "weights": dict(result.settings.weights),
                          "top": [{"weights": c.weights, "score": c.score} for c in result.candidates[:10]],
                          "precision_target": dataclasses.asdict(point) if point else None}, indent=2))
    else:
        print(result.summary())
        for cand in result.candidates[:5]:
            weights = ", ".join(f"{s}={w:g}" for s, w in cand.weights.items())
            print(f"  {args.metric} {100 * cand.score:6.2f}  {weights}")
        print(point.summary() if point else "precision_target: not calibrated (the queries need rows with "
                                            "'expect: no_tool' and rows with gold tools)")
    if args.out:
        changes: dict[str, Any] = {"weights": {s: round(float(w), 4) for s, w in result.settings.weights.items()}}
        if point is not None and point.changed:
            changes["precision_target"] = round(point.target, 4)
        summary = result.summary() + ("; " + point.summary() if point else "")
        print(f"wrote {save_settings(args.out, changes, comment=summary)}", file=sys.stderr)
    return 0


def parse_gate(item: str) -> tuple[str, float]:
    """``METRIC=VALUE`` of ``--fail-under``: a fraction (0.8) or a percentage (80, 80%)."""
    name, _, value = item.partition("=")
    name = name.strip().lower()
    if name != DECISION_ACCURACY:
        try:
            metric(name)
        except ValueError:
            raise SettingsError(f"--fail-under {item!r}: unknown metric {name!r}; metrics: "
                                f"{', '.join(METRIC_NAMES)}") from None
    try:
        number = float(value.strip().rstrip("%"))
    except ValueError:
        raise SettingsError(f"--fail-under {item!r}: expected METRIC=VALUE, e.g. recall@5=0.8") from None
    return name, number / 100 if number > 1 or value.strip().endswith("%") else number
