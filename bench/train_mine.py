"""Mine the training folders with the shipped retriever: the candidates each request finds (hard negatives).

For every training folder (``bench.train_data``) the catalog is indexed by the real engine and every labelled
request is searched with the shipped settings (``ToolRetriever.search``, top 30). Kept per folder under
``<bench dir>/train/<folder>/mined/``:

    tools.json     tool ids in index order, which tools the English model reads, each tool's text
    rows.jsonl     per request: gold, how the engine reads it (text, English gloss), the top 30 candidates

This is what the trainer reads (``bench.train``): the hard negatives of a request are the
candidates the shipped retriever ranks above or near its gold tools. The retriever mines with the original
all-MiniLM-L6-v2 (:data:`MINING_SETTINGS`), not the model trained from these folders, so that the pipeline
reproduces the shipped model from its own start.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.common import index_dir, parse_args, say
from bench.train_data import FOLDERS, prepare_training, read_pairs

#: The retriever that mines: the shipped settings with the original MiniLM (the one the trained model starts from).
MINING_SETTINGS = {"english_model": "minilm"}

__all__ = ["mine", "mined_dir"]

TOP = 30


def mined_dir(root: Path, folder: str) -> Path:
    return root / folder / "mined"


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
    start = time.perf_counter()
    with (out / "rows.jsonl").open("w", encoding="utf-8") as fh:
        for n, pair in enumerate(pairs):
            result = retriever.search(pair.query, top_k=TOP, audited=False)
            features = retriever.analyzer.analyze(pair.query, settings=settings)
            row = {"query": pair.query, "gold": list(pair.gold), "lang": pair.lang, "gloss": features.gloss,
                   "text": features.text, "decision": result.decision.value,
                   "cands": [{"id": c.id, "fused": float(c.score)} for c in result.candidates]}
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            if n % 500 == 0:
                say(f"{folder}: {n}/{len(pairs)} searched")
    (out / "done.json").write_text(json.dumps({"pairs": len(pairs), "seconds": time.perf_counter() - start}),
                                   encoding="utf-8")
    say(f"{folder}: {len(pairs)} requests mined in {time.perf_counter() - start:.1f}s")
    return out


def main(argv: list[str] | None = None) -> int:
    from toolrag.encode.models import load_models
    from toolrag.settings import Settings

    def options(parser: Any) -> None:
        parser.add_argument("--training", help="the training sets' folder (default ../shared/training)")
        parser.add_argument("--folders", nargs="*", default=list(FOLDERS), choices=FOLDERS)
        parser.add_argument("--force", action="store_true")

    args = parse_args("bench.train_mine", __doc__.split("\n")[0], argv, options)
    root = prepare_training(args.training, args.bench_dir)
    models = load_models(Settings(**MINING_SETTINGS))
    for folder in args.folders:
        mine(root, folder, models=models, force=args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
