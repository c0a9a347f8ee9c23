"""``toolrag report``: the catalog report (retrievability, labelled requests, tuning) as HTML, JSON or text.

The same library call as the app's Evaluate tab (:func:`toolrag.evaluation.report.build_report`). ``--out``
writes one self-contained HTML page (opens offline), ``--json`` prints the data, and ``--fail-under`` gates on
the health figures (``found_first``, ``found_top5``, ``mrr``, ``tools_found``), the label-free estimates
(``estimated_found_first``, ``estimated_found_top5``) and, with ``--queries``, on the labelled metrics, so a
catalog owner's CI fails when a new tool cannot be found. A gate on a figure that could not be measured (no
example requests to search, no labelled requests) is an error saying why (exit 2), never a pass.
``--suggest-examples FILE`` writes the suggested example requests of the tools at risk as an
``extra_examples.yaml`` the catalog reads (:mod:`toolrag.catalog.extra_examples`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from toolrag.catalog.extra_examples import EXTRA_EXAMPLES_FILE, add_examples
from toolrag.cli.common import codes, load_inputs, open_retriever
from toolrag.cli.evaluate import parse_gate
from toolrag.config import data_dir as default_data_dir
from toolrag.errors import SettingsError
from toolrag.evaluation.html_report import render_html
from toolrag.evaluation.label_free import LabelFreeChecker
from toolrag.evaluation.loo import RetrievabilityChecker
from toolrag.evaluation.queries import load_queries
from toolrag.evaluation.report import ESTIMATE_FIGURES, CatalogReport, LabelFreeScope, build_report
from toolrag.evaluation.retrievability import HEALTH_FIGURES
from toolrag.evaluation.visibility import report_caller
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
                          f"{', '.join((*HEALTH_FIGURES, *ESTIMATE_FIGURES))}, or a labelled metric such as "
                          "recall@5; a figure that could not be measured is an error (exit 2)")
    cmd.add_argument("--label-free", choices=[s.value for s in LabelFreeScope], default=LabelFreeScope.AUTO.value,
                     help="estimate findability from the descriptions alone for the tools without example requests "
                          "(auto, the default), for every tool (all) or for none (off)")
    cmd.add_argument("--suggest-examples", metavar="FILE",
                     help=f"write the suggested example requests of the tools at risk to FILE, as an "
                          f"{EXTRA_EXAMPLES_FILE} the catalog reads (put it in the catalog's folder; an existing "
                          "FILE keeps its requests and gains the new ones)")
    cmd.set_defaults(handler=run)


def parse_report_gate(item: str) -> tuple[str, float]:
    """``FIGURE=VALUE``: a health figure or any metric ``toolrag eval --fail-under`` accepts."""
    name, _, value = item.partition("=")
    name = name.strip().lower()
    if name not in (*HEALTH_FIGURES, *ESTIMATE_FIGURES):
        try:
            return parse_gate(item)
        except SettingsError as exc:
            raise SettingsError(f"{exc}; or a health figure: {', '.join((*HEALTH_FIGURES, *ESTIMATE_FIGURES))}"
                                ) from None
    try:
        number = float(value.strip().rstrip("%"))
    except ValueError:
        raise SettingsError(f"--fail-under {item!r}: expected FIGURE=VALUE, e.g. found_first=0.8") from None
    return name, number / 100 if number > 1 or value.strip().endswith("%") else number


def run(args: argparse.Namespace) -> int:
    gates = [parse_report_gate(item) for item in args.fail_under]
    rows = load_queries(Path(args.queries)) if args.queries else None
    needs_rows = [name for name, _ in gates if name not in (*HEALTH_FIGURES, *ESTIMATE_FIGURES)]
    if needs_rows and rows is None:
        raise SettingsError(f"--fail-under {needs_rows[0]} needs labelled requests: add --queries FILE")
    if args.suggest_examples and args.label_free == LabelFreeScope.OFF.value:
        raise SettingsError("--suggest-examples needs the label-free check: drop --label-free off")
    catalog, settings = load_inputs(args)
    permissions = codes(args.permissions) or None
    unknown = unknown_codes(catalog, permissions or ())
    if unknown:
        raise SettingsError(f"--permissions: code {unknown[0]!r} is used by no tool or role of catalog "
                            f"{catalog.name!r}; fix the spelling (it would grant nothing)")
    caller = report_caller(catalog, role=args.role, permissions=permissions)  # an unknown role fails here
    if caller is not None:
        print(f"report as {'role ' + repr(args.role) if args.role else 'the given permissions'}: every section is "
              "what that caller's own searches give", file=sys.stderr)
    retriever = open_retriever(args, settings, catalog)
    cache = Path(args.data_dir) if args.data_dir else default_data_dir()
    report = build_report(retriever, rows=rows, tune=args.tune, label_free=args.label_free, role=args.role,
                          permissions=permissions, checker=RetrievabilityChecker(cache_dir=cache / "retrievability"),
                          label_free_checker=LabelFreeChecker(cache_dir=cache / "label_free"))
    if args.suggest_examples:
        suggested = report.label_free.suggestions() if report.label_free is not None else {}
        out_file = Path(args.suggest_examples)
        add_examples(out_file, suggested)
        print(f"wrote {sum(map(len, suggested.values()))} suggested example request(s) of {len(suggested)} tool(s) "
              f"to {out_file}; review them, then keep the file as {EXTRA_EXAMPLES_FILE} in the catalog's folder",
              file=sys.stderr)
    if args.out:
        out = Path(args.out)
        write_atomic(out, render_html(report), error=SettingsError)
        print(f"wrote {out}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        print(format_report(report))
    failed = [line for name, value in gates if (line := report.gate(name, value)) is not None]
    for line in failed:
        print(f"toolrag: fail-under: {line}", file=sys.stderr)
    return 1 if failed else 0


def format_report(report: CatalogReport) -> str:
    """A short text summary: health, the tools at risk and the main confusions, the labelled metrics."""
    r = report.retrievability
    h = r.health
    unmeasured = h.unmeasured()
    lines = [f"{h.n_tools} tools, {h.n_examples} example requests (each left out of its tool's document)",
             *(f"  {name:<12} {100 * value:6.2f}%" for name, value in h.figures().items() if value is not None)]
    if unmeasured:
        lines.append(f"  {', '.join(unmeasured)}: n/a, {next(iter(unmeasured.values()))}")
    lines.append(f"at risk (never found first): {', '.join(h.at_risk) or 'none'}")
    if r.confusions:
        lines.append("confusions (expected -> won instead, examples, text cosine):")
        lines += [f"  {c.expected} -> {c.winner}  x{c.count}  {c.cosine:.3f}{'  look-alike' if c.lookalike else ''}"
                  for c in r.confusions[:10]]
    lines += _label_free_lines(report)
    if report.evaluation is not None:
        lines += ["labelled requests:", report.evaluation.format_table()]
    if report.tuning is not None:
        lines.append(report.tuning.summary())
    if report.threshold is not None:
        lines.append(report.threshold.summary())
    return "\n".join(lines)


def _label_free_lines(report: CatalogReport) -> list[str]:
    """The label-free estimate: its figures, how it was made, and each tool at risk with what to do."""
    lf = report.label_free
    if lf is None or not lf.tools:
        return []
    figures = lf.figures()
    lines = [f"estimated without examples ({len(lf.tools)} tools; {lf.method}):",
             *(f"  {name:<22} {100 * value:6.2f}%" for name, value in figures.items() if value is not None),
             f"at risk (estimated): {len(lf.at_risk)} tool(s)"]
    for tool in lf.tools:
        if not tool.at_risk:
            continue
        lines.append(f"  {tool.tool_id}: {tool.verdict} (found first {100 * tool.p_first:.0f}%, top five "
                     f"{100 * tool.p_top5:.0f}%): {tool.reason()}")
        if tool.fields:
            lines.append(f"    fields: {', '.join(tool.fields)}")
        for suggestion in tool.suggestions:
            lines.append(f"    suggested example: {suggestion.query}")
    return lines
