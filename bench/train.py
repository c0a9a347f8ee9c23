"""Train an English text model for tool requests from the public training sets (docs/models.md, "Models trained here").

    python -m bench.train                 # every stage: data, mine, english (CPU; time in docs/models.md)
    python -m bench.train --stage english # one stage

Stages (each reads what the previous wrote under ``<bench dir>/train``; a finished stage is not redone):

1. ``data``: ``../shared/training`` as catalogs and pairs (``bench.train_data``).
2. ``mine``: every request searched by the retriever with the original MiniLM (``bench.train_mine``): the hard
   negatives.
3. ``english``: all-MiniLM-L6-v2 fine-tuned on the requests, their tools and the mined negatives
   (``bench.train_bi``) into ``<bench dir>/train/models/minilm-tools``, a sentence-transformers folder that
   ``TOOLRAG_ENGLISH_MODEL`` can name. It is not shipped: it ranks better and decides worse than the packaged
   all-MiniLM-L6-v2 on the evaluation sets (docs/models.md).

Nothing from ``../shared/benchmarks`` is trained on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import parse_args, say
from bench.train_data import FOLDERS, prepare_training

__all__ = ["main"]

STAGES = ("data", "mine", "english")


def english(root: Path, *, epochs: float) -> Path:
    """Fine-tune all-MiniLM-L6-v2 on every mined training folder; returns the model's folder."""
    from bench.train_bi import BiConfig, fit_bi
    from bench.train_mine import mined_dir
    from bench.train_sets import load_mined
    from toolrag.encode.resolve import resolve_text_model

    base = Path(resolve_text_model("minilm").location)
    data = [load_mined(mined_dir(root, folder), folder) for folder in FOLDERS]
    for m in data:
        say(f"{m.name}: {len(m.rows)} requests, {len(m.ids)} tools")
    return fit_bi(base, data, BiConfig(epochs=epochs), root / "models" / "minilm-tools")


def main(argv: list[str] | None = None) -> int:
    def options(parser: Any) -> None:
        parser.add_argument("--stage", choices=STAGES, action="append", help="run only these stages (repeatable)")
        parser.add_argument("--training", help="the training sets' folder (default ../shared/training)")
        parser.add_argument("--epochs", type=float, default=1.0, help="epochs of the English model (default 1)")

    args = parse_args("bench.train", __doc__.split("\n")[0], argv, options)
    stages = args.stage or list(STAGES)
    root = prepare_training(args.training, args.bench_dir)
    if "mine" in stages:
        from bench.train_mine import main as mine_main

        mine_main([*(["--training", args.training] if args.training else []),
                   *(["--bench-dir", args.bench_dir] if args.bench_dir else [])])
    if "english" in stages:
        say(f"English model: {english(root, epochs=args.epochs)} (try it: TOOLRAG_ENGLISH_MODEL=<that folder>)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
