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

from bench.agent_outcome import agent_outcome
from bench.common import parse_args, set_up_environment


def split(rows: list[Mapping[str, Any]], position: int) -> dict[str, dict[str, float]]:
    """The rows by the request's language against its top tool's, each part's agent outcome
    (:func:`bench.agent_outcome.agent_outcome`: the one list of these figures)."""
    parts: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        flag = row["x"][position]
        key = "same language" if flag == 1 else "other language" if flag == 0 else "unknown"
        parts.setdefault(key, []).append(row)
    return {key: agent_outcome([r["selected"] for r in part], [r["gold"] for r in part], [r["top"] for r in part],
                               [r["minilm"] for r in part]) | {"served": float(sum(bool(r["gold"]) for r in part))}
            for key, part in parts.items()}


def tables(results: Mapping[str, Any]) -> str:
    from toolrag.decision.view import FEATURES

    def pct(v: float) -> str:
        return "n/a" if v != v else f"{100 * v:.1f}"

    position = FEATURES.index("lang_match")
    lines = [f"From {results.get('command', 'bench.decisions')} (revision {results.get('revision', '?')})", "",
             "| set | request vs top tool | rows (served) | right tool injected | top three | of top three's reach | "
             "nothing injected (no tool serves) | MiniLM threshold: nothing injected at equal reach |",
             "|---|---|---|---|---|---|---|---|"]
    for name, rows in results["rows"].items():
        for key, m in sorted(split(rows, position).items(), key=lambda kv: kv[0] != "same language"):
            lines.append(f"| {name} | {key} | {m['n']:.0f} ({m['served']:.0f}) | {pct(m['reach'])} | "
                         f"{pct(m['top3_reach'])} | {pct(m['reach_ratio'])} | {pct(m['clean'])} | "
                         f"{pct(m['base_clean'])} |")
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
