"""``toolrag index`` and ``toolrag lint``: build the index of a catalog, and check a catalog's profiles."""

from __future__ import annotations

import argparse
import json
from typing import Any

from toolrag.catalog.lint import image_problems, lint_catalog, role_problems
from toolrag.catalog.loader import META_FILE, load_catalog
from toolrag.cli.common import load_inputs, load_mode, open_retriever
from toolrag.errors import ProfileError

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser, query: argparse.ArgumentParser) -> None:
    sub.add_parser("index", parents=[common], help="build or refresh the index").set_defaults(handler=run_index)
    lint = sub.add_parser("lint", parents=[common], help="validate the catalog (every problem; exit 2 on any in "
                                                         "strict mode) and print quality warnings")
    lint.add_argument("--json", action="store_true")
    lint.set_defaults(handler=run_lint)


def run_index(args: argparse.Namespace) -> int:
    catalog, settings = load_inputs(args)
    retriever = open_retriever(args, settings, catalog)
    print(f"indexed {len(retriever.catalog)} tools from {args.catalog} "
          f"({retriever.index.encoded_last_sync} texts/images encoded, the rest unchanged)")
    return 0


def run_lint(args: argparse.Namespace) -> int:
    """Every problem of the catalog: strict ones refuse it (listed, exit 2), lenient ones were dropped or
    skipped (listed as warnings), then the quality warnings of the tools that loaded."""
    try:
        catalog = load_catalog(args.catalog, mode=load_mode(args))
        problems = image_problems(catalog)  # what the index would refuse, too
        if problems:
            raise ProfileError(str(problems[0]) + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""),
                               problems)
    except ProfileError as exc:
        for problem in exc.problems:
            print(problem)
        raise
    report = catalog.report
    warnings = lint_catalog(catalog)
    meta = catalog.root / META_FILE if catalog.root is not None else META_FILE
    roles = [f"{meta}: {found}" for found in role_problems(catalog)]
    if args.json:
        print(json.dumps({"n_tools": len(catalog), "load": report.to_json(),
                          "warnings": [w.to_json() for w in warnings], "roles": roles}, ensure_ascii=False, indent=2))
    else:
        for warning in report.warnings:
            print(warning)
        for w in warnings:
            print(f"{w.tool_id}: {w.message}")
        for role_line in roles:
            print(role_line)
        print(f"{report.summary()}; {len(warnings)} quality warnings" +
              (f"; {len(roles)} role warning{'s' if len(roles) > 1 else ''}" if roles else ""))
    return 0
