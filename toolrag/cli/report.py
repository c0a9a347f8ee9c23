"""``toolrag report``: the catalog report (retrievability, labelled requests, tuning) as HTML, JSON or text.

The same library call as the app's Evaluate tab (:func:`toolrag.evaluation.report.build_report`). ``--out``
writes one self-contained HTML page (opens offline), ``--json`` prints the data, and ``--fail-under`` gates on
the health figures (``found_first``, ``found_top5``, ``mrr``, ``tools_found``) and, with ``--queries``, on the
labelled metrics, so a catalog owner's CI fails when a new tool cannot be found.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from toolrag.cli.common import codes, load_inputs, open_retriever
from toolrag.cli.evaluate import parse_gate
from toolrag.config import data_dir as default_data_dir
from toolrag.errors import SettingsError
from toolrag.evaluation.html_report import render_html
from toolrag.evaluation.loo import RetrievabilityChecker
from toolrag.evaluation.queries import load_queries
from toolrag.evaluation.report import CatalogReport, build_report
from toolrag.evaluation.retrievability import HEALTH_FIGURES
from toolrag.evaluation.visibility import caller_codes
from toolrag.files import write_atomic
from toolrag.search.request import unknown_codes

__all__ = ["format_report", "parse_report_gate", "register"]


def register(sub: Any, common: argparse.ArgumentParser, query: argparse.ArgumentParser) -> None:
    cmd = sub.add_parser("report", parents=[common, query],
                         help="how findable every tool is (no labels needed), plus labelled requests and tuning")
    cmd.add_argument("--queries", help="labelled requests: YAML, JSON Lines or CSV of {query, gold, ...}")
    cmd.add_argument("--out", help="write a self-contained HTML page here (opens offline)")
    cmd.add_argument("--tune", action="store_true",
                     help="also tune the text weights and the no-tool threshold on --queries (the figures of "
                          "toolrag tune; rows x 66 searches)")
    cmd.add_argument("--fail-under", action="append", default=[], metavar="FIGURE=VALUE",
                     help="exit 1 when FIGURE is below VALUE (a fraction or a percentage): "
                          f"{', '.join(HEALTH_FIGURES)}, or a labelled metric such as recall@5")
    cmd.set_defaults(handler=run)


def parse_report_gate(item: str) -> tuple[str, float]:
    """``FIGURE=VALUE``: a health figure or any metric ``toolrag eval --fail-under`` accepts."""
    name, _, value = item.partition("=")
    name = name.strip().lower()
    if name not in HEALTH_FIGURES:
        try:
            return parse_gate(item)
        except SettingsError as exc:
            raise SettingsError(f"{exc}; or a health figure: {', '.join(HEALTH_FIGURES)}") from None
    try:
        number = float(value.strip().rstrip("%"))
    except ValueError:
        raise SettingsError(f"--fail-under {item!r}: expected FIGURE=VALUE, e.g. found_first=0.8") from None
    return name, number / 100 if number > 1 or value.strip().endswith("%") else number


def run(args: argparse.Namespace) -> int:
    gates = [parse_report_gate(item) for item in args.fail_under]
    rows = load_queries(Path(args.queries)) if args.queries else None
    needs_rows = [name for name, _ in gates if name not in HEALTH_FIGURES]
    if needs_rows and rows is None:
        raise SettingsError(f"--fail-under {needs_rows[0]} needs labelled requests: add --queries FILE")
    catalog, settings = load_inputs(args)
    permissions = codes(args.permissions) or None
    unknown = unknown_codes(catalog, permissions or ())
    if unknown:
        raise SettingsError(f"--permissions: code {unknown[0]!r} is used by no tool or role of catalog "
                            f"{catalog.name!r}; fix the spelling (it would grant nothing)")
    held = caller_codes(catalog, role=args.role, permissions=permissions)  # an unknown role fails here
    if held is not None:
        hidden = sum(1 for t in catalog.tools if not set(t.permissions) <= held)
        print(f"report as {'role ' + repr(args.role) if args.role else 'the given permissions'}: the {hidden} "
              "tools it may not use are left out of every section", file=sys.stderr)
    retriever = open_retriever(args, settings, catalog)
    cache = Path(args.data_dir) if args.data_dir else default_data_dir()
    report = build_report(retriever, rows=rows, tune=args.tune, role=args.role, permissions=permissions,
                          checker=RetrievabilityChecker(cache_dir=cache / "retrievability"))
    if args.out:
        out = Path(args.out)
        write_atomic(out, render_html(report), error=SettingsError)
        print(f"wrote {out}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        print(format_report(report))
    figures = report.figures()
    failed = [f"{name} = {figures.get(name, float('nan')):.4f} < {value:.4f}" for name, value in gates
              if not figures.get(name, float("-inf")) >= value]
    for line in failed:
        print(f"toolrag: fail-under: {line}", file=sys.stderr)
    return 1 if failed else 0


def format_report(report: CatalogReport) -> str:
    """A short text summary: health, the tools at risk and the main confusions, the labelled metrics."""
    r = report.retrievability
    h = r.health
    lines = [f"{h.n_tools} tools, {h.n_examples} example requests (each left out of its tool's document)",
             *(f"  {name:<12} {100 * value:6.2f}%" for name, value in h.figures().items()),
             f"at risk (never found first): {', '.join(h.at_risk) or 'none'}"]
    if r.confusions:
        lines.append("confusions (expected -> won instead, examples, text cosine):")
        lines += [f"  {c.expected} -> {c.winner}  x{c.count}  {c.cosine:.3f}{'  look-alike' if c.lookalike else ''}"
                  for c in r.confusions[:10]]
    if report.evaluation is not None:
        lines += ["labelled requests:", report.evaluation.format_table()]
    if report.tuning is not None:
        lines.append(report.tuning.summary())
    if report.threshold is not None:
        lines.append(report.threshold.summary())
    return "\n".join(lines)
