"""How far the text encoders' vectors move between two builds of the same weights, and what that does to the
decision: the yardstick of the tests' margins (docs/development.md, "Decisions asserted with a margin").

    python -m bench.encoder_noise                 # the bundled catalog and its labelled requests
    python -m bench.encoder_noise --limit 60

Another CPU runs the int8 kernels of ONNX Runtime down another path (AVX-512 VNNI or AVX2, u8 or s8 activations),
so a request's vector there differs a little from this machine's. We cannot run another CPU here; we measure a
larger difference of the same kind instead: the shipped int8 build against the fp32 reference (the same weights
through sentence-transformers, ``TOOLRAG_TEXT_BACKEND=torch``), every request and tool text of the bundled catalog
searched with both. It prints, per text model, 1 - cosine between the two vectors of a text (percentiles), and for
the decision, how far P(right) and P(no tool) move and how many decisions flip. The tests perturb the request
vectors by the 99th percentile of that (tests/test_decision_margins.py) and assert only decisions whose
probabilities stand further than :data:`MARGIN` from every threshold.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO, keep_results, machine, parse_args, say

__all__ = ["main"]


def _retriever(backend: str, folder: Path) -> Any:
    """The bundled catalog's retriever with both text models run by ``backend`` (the rest as shipped)."""
    import copy

    from toolrag.encode.models import load_models
    from toolrag.encode.text import TextEncoder
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    settings = Settings()
    models = copy.copy(load_models(settings))
    models.text = TextEncoder(settings.text_model, backend=backend)
    if settings.english_model:
        models.english = TextEncoder(settings.english_model, backend=backend)
    return ToolRetriever.from_catalog(REPO / "sample_tools", data_dir=folder, models=models)


def _percentiles(values: np.ndarray) -> dict[str, float]:
    return {f"p{q}": float(np.percentile(values, q)) for q in (50, 90, 99, 100)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolrag import load_queries

    rows = load_queries(REPO / "sample_tools" / "queries.yaml")
    if args.limit:
        rows = rows[:: max(1, len(rows) // args.limit)][: args.limit]
    with tempfile.TemporaryDirectory() as tmp:
        shipped = _retriever("onnx-int8", Path(tmp) / "int8")
        reference = _retriever("torch", Path(tmp) / "torch")
        out: dict[str, Any] = {"machine": machine(), "command": args.command_line, "rows": len(rows), "vectors": {}}
        texts = [r.query for r in rows if r.query.strip()]
        for signal, space in (("dense", "dense"), ("dense_en", "dense_en")):
            pairs = [(x.vectors[signal], y.vectors[signal]) for t in texts
                     if signal in (x := shipped.analyzer.analyze(t, settings=shipped.settings)).vectors
                     and signal in (y := reference.analyzer.analyze(t, settings=reference.settings)).vectors]
            a, b = np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
            tools_a, tools_b = shipped.snapshot.vectors[space], reference.snapshot.vectors[space]
            order = [reference.snapshot.row_of[i] for i in shipped.snapshot.ids]
            out["vectors"][signal] = {"requests": _percentiles(1 - np.sum(a * b, axis=1)),
                                      "tools": _percentiles(1 - np.sum(tools_a * tools_b[order], axis=1))}
            say(f"{signal}: {out['vectors'][signal]}")
        moved_right, moved_none, flips = [], [], []
        for row in rows:
            who = {"permissions": row.permissions, "role": row.role}
            x = shipped.search(row.query, image=row.image, history=row.history, audited=False, **who)
            y = reference.search(row.query, image=row.image, history=row.history, audited=False, **who)
            if x.scores is not None and y.scores is not None:
                moved_right.append(abs(x.scores.right - y.scores.right))
                moved_none.append(abs(x.scores.no_tool - y.scores.no_tool))
            if x.decision is not y.decision:
                flips.append(f"{row.query[:60]}: {x.decision.value} / {y.decision.value}")
        out["decision"] = {"p_right": _percentiles(np.array(moved_right)),
                           "p_no_tool": _percentiles(np.array(moved_none)), "flips": flips}
    return out


def format_tables(results: dict[str, Any]) -> str:
    lines = [f"{results['rows']} bundled requests; int8 ONNX (shipped) against fp32 (sentence-transformers)", "",
             "| vectors | 1 - cos p50 | p90 | p99 | max |", "|---|---|---|---|---|"]
    for signal, parts in results["vectors"].items():
        for part, p in parts.items():
            lines.append(f"| {signal} {part} | {p['p50']:.5f} | {p['p90']:.5f} | {p['p99']:.5f} | {p['p100']:.5f} |")
    d = results["decision"]
    lines += ["", "| decision | p50 | p90 | p99 | max |", "|---|---|---|---|---|"]
    for key in ("p_right", "p_no_tool"):
        p = d[key]
        lines.append(f"| {key} moved | {p['p50']:.4f} | {p['p90']:.4f} | {p['p99']:.4f} | {p['p100']:.4f} |")
    lines += ["", f"Decisions that differ: {len(d['flips'])} of {results['rows']}"]
    lines += [f"- {f}" for f in d["flips"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--limit", type=int, default=None, help="at most this many requests (evenly spaced)")

    args = parse_args("bench.encoder_noise", "int8 against fp32 vectors and decisions", argv, options,
                      results="encoder_noise.json")
    return keep_results(args, run(args), "encoder_noise.json", format_tables)


if __name__ == "__main__":
    raise SystemExit(main())
