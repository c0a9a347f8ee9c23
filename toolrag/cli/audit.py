"""``toolrag audit``: a one-line summary of an audit log (searches by decision, calls by outcome, latency), or with
``--unmatched`` the real requests that found no tool, were asked about or fell below a P(right), grouped by the
tool each came closest to (:mod:`toolrag.evaluation.unmatched`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from toolrag.audit import summarize
from toolrag.config import env
from toolrag.env_vars import AUDIT_LOG_ENV
from toolrag.errors import SettingsError
from toolrag.evaluation.unmatched import read_unmatched

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser, query: argparse.ArgumentParser) -> None:
    cmd = sub.add_parser("audit", help="summarise an audit log in one line, or list its unmatched requests")
    cmd.add_argument("--log", help=f"the audit log (default: {AUDIT_LOG_ENV})")
    cmd.add_argument("--json", action="store_true", help="print the summary as JSON")
    cmd.add_argument("--unmatched", action="store_true",
                     help="list the requests that ended NO_TOOL or CLARIFY (or below --below), by nearest tool")
    cmd.add_argument("--below", type=float, default=None, metavar="P",
                     help="with --unmatched: also list EXECUTE requests whose P(right) is below P (0..1)")
    cmd.add_argument("-v", "--verbose", action="store_true", help=argparse.SUPPRESS)
    cmd.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = args.log or env(AUDIT_LOG_ENV)
    if not path:
        raise SettingsError(f"which audit log? pass --log FILE or set {AUDIT_LOG_ENV}")
    if args.below is not None and not args.unmatched:
        raise SettingsError("--below filters the unmatched requests: add --unmatched")
    if args.unmatched:
        report = read_unmatched(path, below=args.below)
        print(json.dumps(report.to_json(), ensure_ascii=False) if args.json else "\n".join(report.lines()))
        return 0
    summary = summarize(path)
    print(json.dumps(dataclasses.asdict(summary)) if args.json else summary.line())
    return 0
