"""How OCR reads request images and example images: RapidOCR's batched line reading against the shipped one
(each line alone, in two threads), alternating image by image in one process.

    python -m bench.ocr                  # bench.latency's 20 request images and the pictures in assets/
    python -m bench.ocr --rounds 3

Request images are read as a search reads them (the 6 most prominent lines, detector at 480 px); the pictures
of ``assets/`` as an index reads example images (every line, detector at 960 px). Prints the time per image
(p50 and mean over all rounds) of each reading and every line whose text differs between the two.
"""

from __future__ import annotations

import argparse
import difflib
import statistics
import time
from typing import Any

from bench.common import REPO, at_least, machine, parse_args, say


def _engines() -> dict[str, Any]:
    """The shipped engine and one that reads like RapidOCR's defaults: batches of six lines, one thread."""
    from toolrag.encode.ocr import OcrEngine

    shipped, batched = OcrEngine(), OcrEngine()
    batched._engine.helper = None
    batched._engine._load_rec_model().rec_batch_num = 6
    return {"batches of six, one thread (RapidOCR's way)": batched, "line by line, two threads (shipped)": shipped}


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--rounds", type=at_least(1), default=2, help="times each image is read by each engine")

    args = parse_args("bench.ocr", __doc__, argv, options, cache=False)
    from PIL import Image

    from bench.latency import _image_queries
    from toolrag.search.query import QUERY_OCR_LINES, QUERY_OCR_SIDE

    groups = {
        "request images (bench.latency's 20)": ([img for _, img in _image_queries(20)],
                                                 {"max_lines": QUERY_OCR_LINES, "detector_side": QUERY_OCR_SIDE}),
        "example images (assets/*)": ([Image.open(p).convert("RGB") for p in sorted((REPO / "assets").glob("*"))
                                       if p.suffix.lower() in (".png", ".jpg", ".jpeg")], {}),
    }
    engines = _engines()
    first = next(iter(groups.values()))[0][0]
    for engine in engines.values():  # load the models before timing
        engine.read(first, max_lines=1)
    print(f"OCR readings on {machine()}\n")
    print("| images | reading | p50 ms per image | mean ms | images whose text differs |")
    print("|---|---|---|---|---|")
    diffs: list[str] = []
    for group, (images, options) in groups.items():
        times: dict[str, list[float]] = {name: [] for name in engines}
        texts: dict[str, list[str]] = {name: [] for name in engines}
        for rnd in range(args.rounds):
            for i, image in enumerate(images):
                order = list(engines.items())
                if (i + rnd) % 2:
                    order.reverse()
                for name, engine in order:
                    start = time.perf_counter()
                    text = engine.read(image, **options).text
                    times[name].append((time.perf_counter() - start) * 1000)
                    if rnd == 0:
                        texts[name].append(text)
        old, new = texts.values()
        differ = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
        for name, values in times.items():
            print(f"| {group} | {name} | {statistics.median(values):.0f} | {statistics.fmean(values):.0f} | "
                  f"{len(differ)} of {len(images)} |")
        for i in differ:
            changed = [line for line in difflib.unified_diff(old[i].splitlines(), new[i].splitlines(), lineterm="",
                                                             n=0) if not line.startswith(("@@", "---", "+++"))]
            diffs.append(f"{group}, image {i + 1}: " + " | ".join(changed))
    print("\nLines read differently (- batched, + shipped):")
    for line in diffs:
        print(f"- {line}")
    say("done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
