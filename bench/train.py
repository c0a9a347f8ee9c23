"""Train the models shipped in ``toolrag/data/models/`` from the public training sets, on this CPU.

    python -m bench.train                 # every stage: data, mine, relevance, query, export (CPU, see docs/models.md)
    python -m bench.train --stage mine    # one stage

Stages (each reads what the previous wrote under ``<bench dir>/train``; a finished stage is not redone):

1. ``data``: ``../shared/training`` as catalogs and pairs (``bench.train_data``).
2. ``mine``: every request searched by the shipped retriever (``bench.train_mine``): hard negatives, vectors.
3. ``relevance``: the cross-encoder (``bench.train_cross``), from the packaged all-MiniLM-L6-v2 weights.
4. ``export``: the trained model to ONNX int8 under ``toolrag/data/models/`` with its checks.

Nothing from ``../shared/benchmarks`` is trained on.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.common import say
from bench.train_data import FOLDERS, prepare_training

__all__ = ["main"]

STAGES = ("data", "mine", "relevance", "export")


def _mined(root: Path) -> list[tuple[object, list[str]]]:
    from bench.train_cross import cards_of
    from bench.train_mine import mined_dir
    from bench.train_sets import load_mined

    data = []
    for folder in FOLDERS:
        m = load_mined(mined_dir(root, folder), folder)
        data.append((m, cards_of(root / folder / "catalog", m.ids)))
        say(f"{folder}: {len(m.rows)} requests, {len(m.ids)} tools")
    return data


def relevance(root: Path, *, epochs: float, out: Path) -> Path:
    from bench.train_cross import CrossConfig, fit_cross
    from toolrag.encode.resolve import resolve_text_model

    base = Path(resolve_text_model("minilm").location)
    return fit_cross(base, _mined(root), CrossConfig(epochs=epochs), out)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.train", description=__doc__.split("\n")[0])
    parser.add_argument("--stage", choices=STAGES, action="append", help="run only these stages (repeatable)")
    parser.add_argument("--training", help="the training sets' folder (default ../shared/training)")
    parser.add_argument("--bench-dir", help="cache folder (default $TOOLRAG_BENCH_DIR or <temp>/toolrag-bench)")
    parser.add_argument("--epochs", type=float, default=1.0, help="epochs of the relevance model (default 1)")
    args = parser.parse_args(argv)
    stages = args.stage or list(STAGES)
    root = prepare_training(args.training, args.bench_dir)
    if "mine" in stages:
        from bench.train_mine import main as mine_main

        mine_main([*(["--training", args.training] if args.training else []),
                   *(["--bench-dir", args.bench_dir] if args.bench_dir else [])])
    if "relevance" in stages:
        out = relevance(root, epochs=args.epochs, out=root / "models" / "relevance")
        say(f"relevance model: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
