"""Where a bilingual catalog loses its requests: the agent's outcome of ``bench.decisions`` split by whether a
served request is written in the language of the tool ranked first (the decision's ``lang_match`` feature).

A request in English whose best tool is described in Chinese (or the other way round) is read by the
multilingual model and BM25 only: the English model scores no Chinese document, so every ``en_*`` feature of the
top tool is missing. This table shows what that costs on the rows of a ``bench.decisions`` run::

    python -m bench.decisions --sets bundled,mcp_zh,mcp_en --out <bench dir>/decisions-lang.json
    python -m bench.decision_language --results <bench dir>/decisions-lang.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.common import parse_args, set_up_environment


def split(rows: list[Mapping[str, Any]], position: int) -> dict[str, dict[str, float]]:
    """Served rows by the request's language against its top tool's: rows, right tool injected, top three."""
    out: dict[str, list[int]] = {}
    for row in rows:
        if not row["gold"]:
            continue
        flag = row["x"][position]
        key = "same language" if flag == 1 else "other language" if flag == 0 else "unknown"
        injected = set(row["selected"]) if row["decision"] != "NO_TOOL" else set()
        counts = out.setdefault(key, [0, 0, 0])
        counts[0] += 1
        counts[1] += bool(injected & set(row["gold"]))
        counts[2] += bool(set(row["top"][:3]) & set(row["gold"]))
    return {key: {"rows": n, "reached": 100 * hit / n, "top3": 100 * top / n} for key, (n, hit, top) in out.items()}


def tables(results: Mapping[str, Any]) -> str:
    from toolrag.decision.view import FEATURES

    position = FEATURES.index("lang_match")
    lines = [f"From {results.get('command', 'bench.decisions')} (revision {results.get('revision', '?')})", "",
             "| set | request vs top tool | served rows | right tool injected | top three | of top three's reach |",
             "|---|---|---|---|---|---|"]
    for name, rows in results["rows"].items():
        for key, m in sorted(split(rows, position).items(), key=lambda kv: kv[0] != "same language"):
            share = 100 * m["reached"] / m["top3"] if m["top3"] else float("nan")
            lines.append(f"| {name} | {key} | {m['rows']:.0f} | {m['reached']:.1f} | {m['top3']:.1f} | {share:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    set_up_environment()

    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--results", required=True, help="a results JSON written by python -m bench.decisions")

    args = parse_args("bench.decision_language", __doc__ or "", argv, options, cache=False)
    print(tables(json.loads(Path(args.results).read_text("utf-8"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
