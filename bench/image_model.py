"""The image model in ONNX Runtime against PyTorch: what the first image a process reads costs, its memory, and
the time per image after it. Each backend runs in its own new process, alternating, so each pays its loads.

    python -m bench.image_model              # 3 rounds, the pictures in assets/
    python -m bench.image_model --rounds 5 --searches 20

The ONNX model is exported first if this data dir has none (not timed). Prints one row per backend: the first
image (load included; median over the rounds), the memory the load added (resident set, MB), the p50 per
image of the pictures after it, and whether torch was imported. ``--searches N`` also reads bench.latency's N
request images as a search reads them (OCR and the image model side by side, the query analyser's image cache
emptied before each), every backend in turn in this process, ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from bench.common import REPO, at_least, machine, parse_args, say

_CHILD = """
import json, sys, time
import numpy as np
from PIL import Image
from toolrag.encode.vision import ImageFeatureEncoder

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

paths = sys.argv[2:]
images = [Image.open(p).convert("RGB") for p in paths]
encoder = ImageFeatureEncoder(backend=sys.argv[1])
before, start = rss_mb(), time.perf_counter()
encoder.features(images[:1])
first, added = time.perf_counter() - start, rss_mb() - before
each = []
for image in images:
    start = time.perf_counter()
    encoder.features([image])
    each.append(time.perf_counter() - start)
print(json.dumps({"first_ms": first * 1000, "rss_mb": added, "p50_ms": float(np.median(each)) * 1000,
                  "torch": "torch" in sys.modules}))
"""


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--rounds", type=at_least(1), default=3, help="new processes per backend")
        parser.add_argument("--searches", type=at_least(0), default=0,
                            help="request images read as a search reads them (0: none)")

    args = parse_args("bench.image_model", __doc__, argv, options, cache=False)
    from toolrag.encode.vision import ImageFeatureEncoder

    pictures = sorted(str(p) for p in (REPO / "assets").iterdir() if p.suffix in {".png", ".jpg"})
    ImageFeatureEncoder(backend="onnx").features(pictures[:1])  # the one-time export, outside the timing
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    runs: dict[str, list[dict[str, float]]] = {"onnx": [], "torch": []}
    for round_ in range(args.rounds):
        for backend in runs:
            say(f"round {round_ + 1}/{args.rounds}: {backend}")
            out = subprocess.run([sys.executable, "-c", _CHILD, backend, *pictures], env=env, check=True,
                                 capture_output=True, encoding="utf-8")
            runs[backend].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{len(pictures)} pictures (assets/), {args.rounds} new processes per backend; {machine()}")
    print("| backend | first image ms (load included) | memory added MB | p50 ms per image after it | torch imported |")
    print("|---|---|---|---|---|")
    for backend, rows in runs.items():
        med = {key: statistics.median(float(r[key]) for r in rows) for key in ("first_ms", "rss_mb", "p50_ms")}
        print(f"| {backend} | {med['first_ms']:.0f} | {med['rss_mb']:.0f} | {med['p50_ms']:.1f} | "
              f"{'yes' if rows[0]['torch'] else 'no'} |")
    if args.searches:
        _searches(args.searches, args.rounds)
    return 0


def _searches(n: int, rounds: int) -> None:
    from bench.latency import _image_queries
    from toolrag.encode.models import load_models
    from toolrag.encode.vision import ImageFeatureEncoder
    from toolrag.search.query import QueryAnalyzer
    from toolrag.settings import Settings

    settings = Settings()
    models = load_models(settings)
    models.get_ocr()
    queries = _image_queries(n)
    encoders = {b: ImageFeatureEncoder(backend=b) for b in ("onnx", "torch")}
    spent: dict[str, list[float]] = {b: [] for b in encoders}
    for round_ in range(rounds):
        for backend, encoder in encoders.items():
            say(f"searches, round {round_ + 1}/{rounds}: {backend}")
            models.image = encoder
            analyzer = QueryAnalyzer(models)
            analyzer.analyze(queries[0][0], image=queries[0][1], settings=settings)  # loads the model: not timed
            for text, image in queries:
                analyzer._images = type(analyzer._images)(analyzer.cache_size)  # nothing cached
                start = time.perf_counter()
                analyzer.analyze(text, image=image, settings=settings)
                spent[backend].append((time.perf_counter() - start) * 1000)
    print(f"\n{n} request images (bench.latency's) read as a search reads them, {rounds} rounds in turn")
    print("| backend | p50 ms | mean ms |")
    print("|---|---|---|")
    for backend, times in spent.items():
        print(f"| {backend} | {statistics.median(times):.0f} | {statistics.mean(times):.0f} |")


if __name__ == "__main__":
    raise SystemExit(main())
