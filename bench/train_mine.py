"""Mine the training folders with the shipped retriever: candidates (hard negatives), scores and vectors.

For every training folder (``bench.train_data``) the catalog is indexed by the real engine and every labelled
request is searched with the shipped settings (``ToolRetriever.search``, top 30). Kept per folder under
``<bench dir>/train/<folder>/mined/``:

    tools.json     tool ids in index order, which tools the English model reads, each tool's text
    vectors.npz    the tools' indexed vectors (dense, dense_en) and each request's query vectors
    rows.jsonl     per request: gold, the top 30 candidates with each text signal's raw and normalised score

These are the cached features the trainers read (``bench.train``): the hard negatives of a request are the
candidates the shipped retriever ranks above or near its gold tools. The retriever mines with the original
all-MiniLM-L6-v2 (:data:`MINING_SETTINGS`), not the model trained from these folders, so that the pipeline
reproduces the shipped model from its own start.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import SETS, index_dir, parse_args, prepare, say
from bench.train_data import FOLDERS, prepare_training, read_pairs

#: The retriever that mines: the shipped settings with the original MiniLM (the one the trained model starts from).
MINING_SETTINGS = {"english_model": "minilm"}

__all__ = ["mine", "mined_dir"]

TOP = 30
TEXT_SIGNALS = ("dense", "dense_en", "bm25")


def mined_dir(root: Path, folder: str) -> Path:
    return root / folder / "mined"


def _signal(c: Any, name: str) -> list[float]:
    s = c.signals.get(name)
    if s is None:
        return [math.nan, math.nan]
    return [float(s.raw), float(s.norm)]


def mine(root: Path, folder: str, *, models: Any, force: bool = False) -> Path:
    """Index one training folder and search each of its requests; returns the folder of mined files."""
    return mine_catalog(root / folder / "catalog", read_pairs(root, folder), mined_dir(root, folder),
                        data_dir=index_dir(root.parent), models=models, force=force, label=folder)


def mine_catalog(catalog: Path, pairs: list[Any], out: Path, *, data_dir: Path, models: Any, force: bool = False,
                 label: str = "") -> Path:
    """Index ``catalog`` and search each request of ``pairs`` (objects with ``query``, ``gold``, ``lang``)."""
    from toolrag.search.query import QueryAnalyzer
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    folder = label or catalog.parent.name
    if (out / "done.json").is_file() and not force:
        return out
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    retriever = ToolRetriever.from_catalog(catalog, data_dir=data_dir, models=models)
    retriever.analyzer = QueryAnalyzer(retriever.index.models, cache_size=20_000)
    snap = retriever.index.snapshot
    say(f"{folder}: {len(snap.ids)} tools indexed in {time.perf_counter() - start:.1f}s")
    cat = snap.catalog
    (out / "tools.json").write_text(json.dumps({
        "ids": list(snap.ids), "english": [bool(e) for e in snap.english],
        "texts": [cat.get(i).document_text() for i in snap.ids]}, ensure_ascii=False), encoding="utf-8")
    settings = Settings(**MINING_SETTINGS)
    retriever.prepare([p.query for p in pairs])
    qd = np.zeros((len(pairs), snap.vectors["dense"].shape[1]), dtype=np.float32)
    qe = np.full((len(pairs), snap.vectors["dense_en"].shape[1]), np.nan, dtype=np.float32)
    start = time.perf_counter()
    with (out / "rows.jsonl").open("w", encoding="utf-8") as fh:
        for n, pair in enumerate(pairs):
            result = retriever.search(pair.query, top_k=TOP, audited=False)
            features = retriever.analyzer.analyze(pair.query, settings=settings)
            qd[n] = features.vectors["dense"]
            if "dense_en" in features.vectors:
                qe[n] = features.vectors["dense_en"]
            row = {"query": pair.query, "gold": list(pair.gold), "lang": pair.lang, "gloss": features.gloss,
                   "text": features.text, "decision": result.decision.value,
                   "cands": [{"id": c.id, "fused": float(c.score), **{s: _signal(c, s) for s in TEXT_SIGNALS}}
                             for c in result.candidates]}
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            if n % 500 == 0:
                say(f"{folder}: {n}/{len(pairs)} searched")
    np.savez(out / "vectors.npz", tool_dense=snap.vectors["dense"], tool_dense_en=snap.vectors["dense_en"],
             q_dense=qd, q_dense_en=qe)
    (out / "done.json").write_text(json.dumps({"pairs": len(pairs), "seconds": time.perf_counter() - start}),
                                   encoding="utf-8")
    say(f"{folder}: {len(pairs)} requests mined in {time.perf_counter() - start:.1f}s")
    return out


@dataclass(frozen=True)
class _Row:
    query: str
    gold: tuple[str, ...]
    lang: str = "en"


#: The evaluation splits mined for offline scoring of trained models (never trained on).
EVAL_SETS = ("metatool_single", "metatool_multi", "seal_in", "seal_out", "gorilla", "metatool_task1",
             "metatool_dev", "seal_dev")


def mine_eval(bench_root: Path, name: str, *, models: Any, force: bool = False) -> Path:
    """Mine one evaluation split (``bench.datasets.SETS``) into ``<bench dir>/evalmined/<name>``: its catalog's
    vectors and the shipped retriever's top 30 per request, for scoring a trained model offline. Its labels are
    read only to score, never to fit."""
    bench_set = SETS[name]
    rows = [_Row(r["query"], tuple(r["gold"])) for r in
            (json.loads(line) for line in bench_set.queries_file(bench_root).read_text(encoding="utf-8").splitlines()
             if line.strip())]
    return mine_catalog(bench_set.catalog_dir(bench_root), rows, bench_root / "evalmined" / name,
                        data_dir=index_dir(bench_root), models=models, force=force, label=name)


def main(argv: list[str] | None = None) -> int:
    from toolrag.encode.models import load_models
    from toolrag.settings import Settings

    def options(parser: Any) -> None:
        parser.add_argument("--training", help="the training sets' folder (default ../shared/training)")
        parser.add_argument("--folders", nargs="*", default=list(FOLDERS), choices=FOLDERS)
        parser.add_argument("--eval", nargs="*", default=[], choices=EVAL_SETS,
                            help="also mine these evaluation splits (for offline scoring only)")
        parser.add_argument("--force", action="store_true")

    args = parse_args("bench.train_mine", __doc__.split("\n")[0], argv, options)
    root = prepare_training(args.training, args.bench_dir)
    models = load_models(Settings(**MINING_SETTINGS))
    for folder in args.folders:
        mine(root, folder, models=models, force=args.force)
    bench_root = prepare(None, args.bench_dir)
    for name in args.eval:
        mine_eval(bench_root, name, models=models, force=args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
