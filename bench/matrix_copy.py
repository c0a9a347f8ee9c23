"""What an edit at 100,000 tools pays to copy the vector matrices of its new snapshot, one after the other or
side by side (what ``toolrag.index.text_sync.sync_texts`` does after an edit).

    python -m bench.matrix_copy                   # 100,000 x 384 float32, two matrices (the two text models)
    python -m bench.matrix_copy --rows 10000

A snapshot a search holds is immutable, so an edit builds new matrices: the previous ones copied plus the rows
just written. numpy copies without holding the GIL, so two copies in two threads use both cores.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bench.common import machine, parse_args

__all__ = ["main"]


def _median_ms(fn: Callable[[], None], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--rows", type=int, default=100_000)
        parser.add_argument("--dim", type=int, default=384)
        parser.add_argument("--repeat", type=int, default=9)

    args = parse_args("bench.matrix_copy", __doc__.split("\n\n")[0], argv, options, cache=False)
    rng = np.random.default_rng(0)
    first = rng.random((args.rows, args.dim), dtype=np.float32)
    second = rng.random((args.rows, args.dim), dtype=np.float32)
    first.copy(), second.copy()  # warm the allocator
    with ThreadPoolExecutor(max_workers=2) as pool:
        def one_after_the_other() -> None:
            first.copy(), second.copy()

        def side_by_side() -> None:
            job = pool.submit(first.copy)
            second.copy()
            job.result()

        serial = _median_ms(one_after_the_other, args.repeat)
        parallel = _median_ms(side_by_side, args.repeat)
    mb = first.nbytes / 2**20
    print(f"{machine()}\n")
    print("| matrices | MB each | one after the other, median ms | side by side (2 threads), median ms |")
    print("|---|---|---|---|")
    print(f"| 2 x {args.rows:,} x {args.dim} float32 | {mb:.0f} | {serial:.0f} | {parallel:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
