"""Per-query raw scores of every text signal against every tool, computed once with the engine's own code.

For each split this runs ``retriever.analyzer.analyze`` (the models encode the query once) and
``toolrag.search.scoring.score_signals`` over the whole catalog, and stores the matrices in
``<bench dir>/scores/<set>.npz``: ``dense``, ``dense_en`` (NaN where the signal is absent: Chinese query or
non-English tool), ``bm25`` (n_queries x n_tools, float32), ``gold`` (a ragged list as offsets + indices),
``cjk`` and the tool ids. ``bench/tune.py`` re-fuses these offline for every candidate weighting, so no
model runs per configuration.

    python bench/scores.py [--sets metatool_dev,seal_dev,...] [--benchmarks DIR] [--bench-dir DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ENGINE, SETS, open_retriever, parse_args, prepare, say

__all__ = ["extract", "load_scores"]

DEFAULT_SETS = ("metatool_dev", "metatool_single", "metatool_multi", "metatool_task1", "seal_dev", "seal_in",
                "seal_out", "gorilla")


def extract(retriever: Any, rows: list[Any]) -> dict[str, np.ndarray]:
    """Raw full-catalog scores of each text signal for ``rows`` (QueryRow list), through the engine."""
    from toolrag.search.scoring import score_signals
    from toolrag.settings import Settings

    snap = retriever.index.snapshot
    cfg = Settings()
    all_rows = np.arange(len(snap.ids))
    n_q, n_t = len(rows), len(snap.ids)
    out = {name: np.full((n_q, n_t), np.nan, dtype=np.float32) for name in ("dense", "dense_en", "bm25")}
    cjk = np.zeros(n_q, dtype=bool)
    qvec = {name: np.full((n_q, snap.vectors[name].shape[1]), np.nan, dtype=np.float32)
            for name in ("dense", "dense_en") if name in snap.vectors}
    encode_ms = np.zeros(n_q, dtype=np.float32)
    for i, row in enumerate(rows):
        start = time.perf_counter()
        features = retriever.analyzer.analyze(row.query, settings=cfg)
        encode_ms[i] = (time.perf_counter() - start) * 1000
        cjk[i] = features.cjk
        for name, vec in qvec.items():
            if name in features.vectors:
                vec[i] = features.vectors[name]
        scores = score_signals(snap, all_rows, features, history_weight=cfg.history_weight)
        for name in out:
            if name in scores.raw:
                out[name][i] = np.where(scores.present[name], scores.raw[name], np.nan)
        if (i + 1) % 500 == 0:
            say(f"  {i + 1}/{n_q} queries scored (median encode {np.median(encode_ms[:i + 1]):.1f} ms)")
    position = {tool_id: n for n, tool_id in enumerate(snap.ids)}
    gold_idx = [[position[g] for g in row.gold if g in position] for row in rows]
    missing = sum(1 for row in rows for g in row.gold if g not in position)
    if missing:
        raise ValueError(f"{missing} gold ids are not in the catalog: the conversion is broken")
    out["gold_offsets"] = np.cumsum([0] + [len(g) for g in gold_idx]).astype(np.int64)
    out["gold_flat"] = np.array([x for g in gold_idx for x in g], dtype=np.int64)
    out["cjk"] = cjk
    for name, vec in qvec.items():
        out[f"query_{name}"] = vec
    out["encode_ms"] = encode_ms
    out["ids"] = np.array(snap.ids, dtype=object)
    return out


def load_scores(root: Path, name: str) -> dict[str, Any]:
    """The stored matrices of one set, with ``gold`` as a list of index arrays."""
    data = dict(np.load(root / "scores" / f"{name}.npz", allow_pickle=True))
    offsets, flat = data.pop("gold_offsets"), data.pop("gold_flat")
    data["gold"] = [flat[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
    return data


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sets", default=",".join(DEFAULT_SETS))
        parser.add_argument("--force", action="store_true", help="recompute sets already stored")

    args = parse_args("bench.scores", __doc__.splitlines()[0], argv, options, benchmarks=True)
    from toolrag import load_queries
    from toolrag.encode.models import load_models
    from toolrag.settings import Settings

    root = prepare(args.benchmarks, args.bench_dir)
    (root / "scores").mkdir(exist_ok=True)
    models = load_models(Settings())
    retrievers: dict[str, Any] = {}
    for name in args.sets.split(","):
        spec = SETS[name]
        target = root / "scores" / f"{name}{'-' + Path(ENGINE).name if ENGINE else ''}.npz"
        if target.exists() and not args.force:
            say(f"{name}: already stored")
            continue
        if spec.source not in retrievers:
            retrievers[spec.source] = open_retriever(root, spec.source, models=models)
        rows = load_queries(spec.queries_file(root))
        say(f"{name}: scoring {len(rows)} queries")
        data = extract(retrievers[spec.source], rows)
        np.savez(target, **data)
        say(f"{name}: stored {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
