"""Where a fresh build's time goes: one build of a synthetic catalog with the real models, split into its
phases (wall and CPU seconds of this process) and the process's peak resident memory, for a before/after check
of an indexing change.

    python -m bench.build_phases --tools 10000            # the latency run's synthetic catalog, a new index
    python -m bench.build_phases --tools 3000 --image-every 500
    python -m bench.build_phases --tools 100000 --encoder standin   # what a build spends beside the text models

Compare two revisions by running this from a worktree of each, alternating (the host's speed drifts). The
index is built in a temporary folder under the bench folder and deleted afterwards; the models are loaded
before the clock starts. CPU seconds above the wall seconds mean both cores were busy.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import REPO, machine, parse_args  # also sets the offline, no-telemetry environment
from bench.datasets import bench_dir
from bench.synthetic import make_catalog

__all__ = ["ceiling_line", "main"]

#: (label, module, attribute): the phases of ToolIndex._sync.
_PHASES = (
    ("tool texts: both text models, Chroma writes", "toolrag.index.tool_index", "sync_texts"),
    ("example images: image features", "toolrag.index.image_sync", "ImageSync.sync"),
    ("example images: OCR and its text vectors", "toolrag.index.image_sync", "ImageSync.sync_text"),
    ("BM25 keyword index", "toolrag.index.tool_index", "ToolIndex._build_bm25"),
)


def _timed(spent: dict[str, list[float]], label: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return func(*args, **kwargs)
        finally:
            got = spent.setdefault(label, [0.0, 0.0])
            got[0] += time.perf_counter() - wall
            got[1] += time.process_time() - cpu

    return timed


def _instrument(spent: dict[str, list[float]]) -> None:
    import importlib

    for label, module_name, attribute in _PHASES:
        owner: Any = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, _timed(spent, label, getattr(owner, name)))


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--tools", type=int, default=10_000)
        parser.add_argument("--image-every", type=int, default=500, help="one example image per this many tools")
        parser.add_argument("--encoder", choices=("real", "standin"), default="real",
                            help="real text models, or bench.latency's hashing stand-ins (what is left beside encoding)")

    args = parse_args("bench.build_phases", __doc__.split("\n\n")[0], argv, options)
    import chromadb  # noqa: F401  (imported before the clock starts, as in a running app)

    from toolrag import load_catalog
    from toolrag.encode.models import load_models
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    root = bench_dir(args.bench_dir) / "synthetic" / str(args.tools)
    folder = make_catalog(root, args.tools, image_every=args.image_every, assets=REPO / "assets")
    settings = Settings()
    if args.encoder == "real":
        models = load_models(settings)
    else:
        from bench.latency import _standin_models

        models = _standin_models(english=True)
    catalog = load_catalog(folder)
    spent: dict[str, list[float]] = {}
    _instrument(spent)
    data_dir = Path(tempfile.mkdtemp(prefix="build-", dir=root))
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        ToolRetriever.from_catalog(catalog, settings=settings, data_dir=data_dir, models=models)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"{args.tools:,} tools, one example image per {args.image_every}, {args.encoder} text models; {machine()}")
    print("| phase | wall s | CPU s |")
    print("|---|---|---|")
    for label, _, _ in _PHASES:
        if label in spent:
            print(f"| {label} | {spent[label][0]:.1f} | {spent[label][1]:.1f} |")
    rest = wall - sum(w for w, _ in spent.values())
    print(f"| everything else | {rest:.1f} | {cpu - sum(c for _, c in spent.values()):.1f} |")
    print(f"| **build** ({args.tools / wall:.1f} tools/s) | {wall:.1f} | {cpu:.1f} |")
    print(f"peak resident memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
    text = spent.get(_PHASES[0][0])
    if text:
        print(ceiling_line(args.tools, text_wall=text[0], cpu=cpu, cores=os.cpu_count() or 1))
    return 0


def ceiling_line(tools: int, *, text_wall: float, cpu: float, cores: int) -> str:
    """What this build's own numbers allow: the rate if the tool-text phase were all there is
    (``tools / text_wall``), and the rate if the build's CPU seconds were spread over every core with no idle
    moment (``tools * cores / cpu``). A rate target above either cannot be met by scheduling the same work
    differently: only by doing less of it."""
    return (f"ceilings: the tool texts alone {tools / text_wall:.1f} tools/s; this build's {cpu:.1f} CPU s on "
            f"{cores} cores with no idle moment {tools * cores / cpu:.1f} tools/s")


if __name__ == "__main__":
    raise SystemExit(main())
