"""Re-decide the rows a ``bench.decisions`` run stored, with this checkout's decision model and policy, without
searching again: for choosing an operating point or comparing a retrained model in seconds.

    python -m bench.decision_rescore <bench dir>/decisions.json
    python -m bench.decision_rescore decisions.json --precision-target 0.8 --clean-target 0.9

Each row keeps its search (ranking, features); a row an invariant decided keeps its decision. Approximations,
said so in the output: a CLARIFY injects the top three (the question about one tool's missing parameters, which
injects that tool alone, is not told apart) and every tool may be injected (no stuffing flags are stored). The
numbers for the docs come from ``python -m bench.decisions`` itself, through the real retriever.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import parse_args
from bench.decisions import Row, format_tables, summarise

__all__ = ["main", "rescore"]


def rescore(rows: list[Row], *, target: float | None, clean: float | None) -> list[Row]:
    """``rows`` decided again by the shipped model at the operating point ``target`` / ``clean``."""
    from toolrag.decision.model import shipped_model
    from toolrag.decision.outcome import Decision, DecisionScores
    from toolrag.decision.policy import choose, operating_point
    from toolrag.decision.view import FEATURES

    model, note = shipped_model()
    if model is None:
        raise SystemExit(f"no decision model: {note}")
    points = {history: operating_point(model, target=target, clean=clean, history=history)
              for history in (False, True)}
    reader = FEATURES.index("change_reader")
    out = []
    for row in rows:
        if row.decided_by != "model" or not row.x:
            out.append(row)
            continue
        x = np.array(row.x, dtype=np.float64)
        p = model.probabilities(x)
        scores = DecisionScores(p["right"], p["ask"], p["none"])
        decision = choose(scores, points[model.reads_history(x)], change_reader=bool(np.nan_to_num(x[reader]) > 0))
        if decision is Decision.EXECUTE:
            also = model.also_selected(np.array(row.cand, dtype=np.float64)) if row.cand else 0
            selected = list(row.top[: 1 + also])
        else:
            selected = list(row.top[:3]) if decision is Decision.CLARIFY else []
        out.append(Row(**{**row.__dict__, "decision": decision.value, "selected": tuple(selected),
                          "p_right": scores.right, "p_ambiguous": scores.ambiguous, "p_no_tool": scores.no_tool}))
    return out


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("results", type=Path, help="a bench.decisions results file (JSON)")
        parser.add_argument("--precision-target", type=float, default=None)
        parser.add_argument("--clean-target", type=float, default=None)

    args = parse_args("bench.decision_rescore", "stored bench.decisions rows decided again, offline", argv, options)
    stored: dict[str, Any] = json.loads(args.results.read_text(encoding="utf-8"))
    sets = {}
    for name, raw in stored.get("rows", {}).items():
        rows = [Row(**{k: tuple(tuple(c) for c in v) if k == "cand" else tuple(v) if isinstance(v, list) else v
                       for k, v in r.items()}) for r in raw]
        extra = {"tuned": stored["sets"][name]["tuned"]} if "tuned" in stored["sets"].get(name, {}) else {}
        sets[name] = summarise(rescore(rows, target=args.precision_target, clean=args.clean_target), **extra)
    if not sets:
        print(f"{args.results}: no stored rows", file=sys.stderr)
        return 2
    print("Re-decided offline (CLARIFY injects the top three; no stuffing flags): "
          f"precision target {args.precision_target or 'default'}, clean target {args.clean_target or 'default'}")
    print(format_tables({"sets": sets, "date": "", "machine": "", "engine": "", "command": ""}))
    return 0 if all(math.isfinite(s["n"]) for s in sets.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
