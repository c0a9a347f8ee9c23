"""Experiment (docs/decisions.md, bilingual catalogs): HammerBench episodes in a mixed catalog, each tool's profile
drawn from its English or its Chinese version (847 shared ids), requests in both languages, appended to a
searched text-episode cache so ``bench.decision_train --text-episodes`` fits on both::

    python -m bench.mixed_episodes <bench dir>/decision-episodes-115589bbc1bb1531.pkl \
        <bench dir>/decision-episodes-mixed.pkl 900

900 requests per language, each as an EXECUTE episode (its gold tool among distractors of the mixed catalog,
drawn as ``bench.decision_episodes`` draws them) and a NO_TOOL one (the same without the gold tool).
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
from pathlib import Path

import numpy as np

from bench.common import index_dir, parse_args, say, set_up_environment
from bench.datasets import bench_dir, write_jsonl


def main(argv: list[str] | None = None) -> int:
    set_up_environment()

    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--episodes", required=True, help="a searched text-episode cache (decision-episodes-*.pkl)")
        parser.add_argument("--out", required=True, help="the cache written: those episodes and the mixed ones")
        parser.add_argument("--per-language", type=int, default=900, help="HammerBench requests drawn per language")

    args = parse_args("bench.mixed_episodes", __doc__ or "", argv, options)
    from bench import decision_episodes as de
    from bench import decision_train as dt
    from bench.train_data import prepare_training
    from toolrag.encode.models import load_models
    from toolrag.search.query import QueryAnalyzer
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    source, out, per_lang = Path(args.episodes), Path(args.out), args.per_language
    root = prepare_training(None, args.bench_dir)
    rng = random.Random(11)
    tools = {lang: {json.loads(line)["id"]: json.loads(line)
                    for line in (root / f"hammerbench_{lang}" / "catalog" / "tools.jsonl").read_text("utf-8").splitlines()
                    if line.strip()} for lang in ("en", "zh")}
    shared = [t for t in tools["en"] if t in tools["zh"]]
    mixed = [tools[rng.choice(("en", "zh"))][t] for t in shared]
    folder = root / "hammerbench_mix" / "catalog"
    write_jsonl(folder / "tools.jsonl", mixed)
    say(f"mixed catalog: {len(mixed)} tools, {sum(m is tools['zh'][m['id']] for m in mixed)} of them Chinese")
    models = load_models(Settings())
    retriever = ToolRetriever.from_catalog(folder, data_dir=index_dir(bench_dir(args.bench_dir)) / "train",
                                           models=models)
    retriever.analyzer = QueryAnalyzer(models, cache_size=20_000)
    snap = retriever.snapshot
    space = de.Space(list(snap.ids), snap.vectors["dense"], snap.vectors.get("dense_en"),
                     np.asarray(snap.english, dtype=bool))
    position = {t: i for i, t in enumerate(space.ids)}
    de.GROUPS["hammerbench_mix"] = "hammerbench"  # type: ignore[index]
    episodes = []
    for lang in ("en", "zh"):
        pairs = [json.loads(line) for line in (root / f"hammerbench_{lang}" / "pairs.jsonl").read_text("utf-8").splitlines()
                 if line.strip()]
        rng.shuffle(pairs)
        for pair in pairs[:per_lang]:
            gold = tuple(g for g in pair["gold"] if g in position)
            if not gold:
                continue
            visible = de._catalog(rng, gold, space, position)
            episodes.append(de.Episode("hammerbench_mix", "mixed", pair["query"], (), visible, gold, "EXECUTE",
                                       pair.get("lang", lang)))
            siblings = tuple(t for t in visible if t not in gold) or de._nearest(gold, space, position, 1, rng)
            episodes.append(de.Episode("hammerbench_mix", "mixed_sibling", pair["query"], (), siblings, gold,
                                       "NO_TOOL", pair.get("lang", lang)))
    records = dt._search_all({"hammerbench_mix": retriever}, episodes, out.with_suffix(".new.pkl"), histories=False)
    with source.open("rb") as fh:
        old = pickle.load(fh)
    with out.open("wb") as fh:
        pickle.dump(old + records, fh)
    say(f"{len(old)} + {len(records)} episodes -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
