"""``toolrag audit``: a one-line summary of an audit log (searches by decision, calls by outcome, latency)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from toolrag.audit import summarize
from toolrag.config import AUDIT_LOG_ENV, env
from toolrag.errors import SettingsError

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser, query: argparse.ArgumentParser) -> None:
    cmd = sub.add_parser("audit", help="summarise an audit log in one line")
    cmd.add_argument("--log", help=f"the audit log (default: {AUDIT_LOG_ENV})")
    cmd.add_argument("--json", action="store_true", help="print the summary as JSON")
    cmd.add_argument("-v", "--verbose", action="store_true", help=argparse.SUPPRESS)
    cmd.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = args.log or env(AUDIT_LOG_ENV)
    if not path:
        raise SettingsError(f"which audit log? pass --log FILE or set {AUDIT_LOG_ENV}")
    summary = summarize(path)
    print(json.dumps(dataclasses.asdict(summary)) if args.json else summary.line())
    return 0
