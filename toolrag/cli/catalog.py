"""``toolrag index`` and ``toolrag lint``: build the index of a catalog, and check a catalog's profiles."""

from __future__ import annotations

import argparse
import json
from typing import Any

from toolrag.catalog.lint import image_problems, lint_catalog, refuse_unusable_images, role_problems
from toolrag.catalog.loader import META_FILE, load_catalog
from toolrag.cli.common import cli_progress, load_inputs, load_mode, open_retriever, terminate_cleanly
from toolrag.config import index_name
from toolrag.env_vars import INDEX_ENV
from toolrag.errors import ProfileError, SettingsError
from toolrag.index.client import StoreConfig, chroma_url, open_client

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser, query: argparse.ArgumentParser) -> None:
    index = sub.add_parser("index", parents=[common], help="build or refresh the index (with --index: push it to the "
                                                           "Chroma server under that name, for replicas)")
    index.add_argument("--index", dest="index_name", metavar="NAME",
                       help=f"publish the catalog as index NAME on the Chroma server (default: {INDEX_ENV}); "
                            "replicas started with --index NAME serve each version pushed")
    index.set_defaults(handler=run_index)
    lint = sub.add_parser("lint", parents=[common], help="validate the catalog (every problem; exit 2 on any in "
                                                         "strict mode) and print quality warnings")
    lint.add_argument("--json", action="store_true")
    lint.set_defaults(handler=run_lint)


def run_index(args: argparse.Namespace) -> int:
    name = index_name(args.index_name)
    if name:
        return push_index(args, name)
    catalog, settings = load_inputs(args)
    retriever = open_retriever(args, settings, catalog)
    print(f"indexed {len(retriever.catalog)} tools from {args.catalog} "
          f"({retriever.index.encoded_last_sync} texts/images encoded, the rest unchanged)")
    return 0


def push_index(args: argparse.Namespace, name: str) -> int:
    """``toolrag index --index NAME``: the catalog pushed as the next version of a published index (nothing when
    the manifest names its version already); it waits while another process builds the same version."""
    from toolrag.encode.models import load_models
    from toolrag.index.published import check_index_name
    from toolrag.index.push import open_pusher

    check_index_name(name)
    url = chroma_url(args.chroma_url)
    if not url:
        raise SettingsError(f"--index {name}: a published index lives on a Chroma server; give --chroma-url "
                            "http://host:port (or TOOLRAG_CHROMA_URL)")
    catalog, settings = load_inputs(args)
    refuse_unusable_images(catalog)
    open_client(StoreConfig(url=url))  # a closed port fails here, before the models load
    with terminate_cleanly():  # SIGTERM, as SIGINT, releases the build's lease on its way out
        pusher = open_pusher(url, name, load_models(settings, progress=cli_progress), progress=cli_progress)
        result = pusher.push(catalog)
    what = "pushed" if result.flipped else "already pushed"
    print(f"index {name}: version {result.version} {what} (serial {result.manifest.serial}; {len(catalog)} tools "
          f"from {args.catalog}, {result.encoded} texts/images encoded here)")
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
