"""Calibrate and report the EXECUTE / CLARIFY / NO_TOOL decision on the sample catalog's labelled queries.

Every query runs once through the real retriever (shipped defaults); the decision is then re-derived offline
for a grid of ``clarify_gap`` and ``no_tool_threshold`` values. Rows with an even index are the tuning half,
odd rows the held-out half: the table reports both, so the chosen thresholds are judged on rows they were
not chosen on.

    python -m bench.decisions [--catalog sample_tools] [--queries sample_tools/queries.yaml] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolrag.evaluation.queries import load_queries
from toolrag.search.decide import decide
from toolrag.search.retriever import ToolRetriever


@dataclass(frozen=True)
class _Scored:
    index: int
    expect: str
    scores: tuple[float, ...]
    names: tuple[str, ...]
    confidence: float


def _accuracy(rows: Sequence[_Scored], gap: float, threshold: float) -> float:
    hits = 0
    for r in rows:
        outcome = decide(scores=list(r.scores), names=list(r.names), summaries=[""] * len(r.names),
                         confidence=r.confidence, no_tool_threshold=threshold, clarify_gap=gap)
        hits += outcome.decision.value == r.expect
    return hits / max(len(rows), 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", default="sample_tools")
    parser.add_argument("--queries", default="sample_tools/queries.yaml")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    retriever = ToolRetriever.from_catalog(args.catalog, data_dir=args.data_dir)
    rows = [r for r in load_queries(Path(args.queries)) if r.expect is not None]
    scored = []
    for i, row in enumerate(rows):
        result = retriever.search(row.query, image=row.image, permissions=row.permissions, history=row.history,
                                  top_k=5)
        scored.append(_Scored(i, row.expect.value, tuple(c.score for c in result.candidates),  # type: ignore[union-attr]
                              tuple(c.name for c in result.candidates), result.confidence))
    tune = [s for s in scored if s.index % 2 == 0]
    held = [s for s in scored if s.index % 2 == 1]
    cfg = retriever.settings
    threshold = cfg.effective_no_tool_threshold()
    print(f"decision accuracy on {len(rows)} labelled sample queries (tuning half {len(tune)}, held-out half "
          f"{len(held)})\n")
    print("| clarify_gap | no_tool_threshold | tuning half | held-out half |")
    print("|---|---|---|---|")
    for gap in (0.0, 0.01, 0.02, 0.04, 0.08):
        for thr in (threshold - 0.02, threshold, threshold + 0.02):
            mark = " (shipped)" if (gap, thr) == (cfg.clarify_gap, threshold) else ""
            print(f"| {gap:.2f} | {thr:.3f}{mark} | {100 * _accuracy(tune, gap, thr):.1f} | "
                  f"{100 * _accuracy(held, gap, thr):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
