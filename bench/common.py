"""Shared helpers of the benchmark scripts: environment, machine description, one retriever per catalog.

Each benchmark catalog is indexed once per model set into ``<bench dir>/index`` (the index re-uses vectors by
content hash, so later runs encode nothing). The retriever's query-vector cache is enlarged to hold every
query of a run, so evaluating several fusion settings encodes each query once per model.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
#: Optional folder holding another ``toolrag`` package to measure (e.g. the engine with a proposed patch);
#: its indexes are kept apart from the repository engine's (``index-<name>``). It decides which toolrag is
#: imported, so it is read before any toolrag import: the one read of the environment outside toolrag.config
#: (whose table, ``ENV_VARS``, lists it as ``TOOLRAG_BENCH_ENGINE``).
ENGINE = os.environ.get("TOOLRAG_BENCH_ENGINE", "").strip()
if ENGINE:
    sys.path.insert(0, str(Path(ENGINE).resolve()))

from toolrag import config, env_vars  # noqa: E402


def set_up_environment() -> None:
    """What every benchmark script runs under: telemetry off, the Hub offline unless
    :func:`toolrag.config.is_online`, and one intra-op thread unless told otherwise (on this shared 2-core
    machine torch's default, one busy-waiting OpenMP thread per core, made query encoding 7x slower under
    load: 1,758 vs 256 ms/query)."""
    config.configure_environment()
    config.set_default(env_vars.THREADS_ENV, config.env(env_vars.BENCH_THREADS_ENV) or "1")


set_up_environment()  # before any script imports torch, chromadb or transformers

from bench.datasets import SETS, BenchSet, bench_dir, prepare  # noqa: E402

__all__ = ["ENGINE", "REPO", "SETS", "BenchSet", "at_least", "engine_description", "index_dir", "keep_results",
           "machine", "model_ids", "open_retriever", "parse_args", "prepare", "say", "shown_command"]

#: Options whose value is a path of the machine that ran a command: not written into docs/.
PATH_OPTIONS = ("--out", "--bench-dir", "--benchmarks", "--training", "--relevance-dir", "--skimage-data")
#: Options naming a file of the bench folder: shown by its name alone (which cache a result was fitted on).
NAME_OPTIONS = ("--text-episodes",)

_T0 = time.perf_counter()


def shown_command(module: str, raw: Sequence[str]) -> str:
    """The command as docs/ show it: ``python -m <module>`` and ``raw`` (its arguments) without the options that
    name a path of this machine (:data:`PATH_OPTIONS`, as ``--out F`` or ``--out=F``)."""
    shown: list[str] = []
    skip = name = False
    for arg in raw:
        if skip:
            skip = False
            continue
        if name:
            name = False
            shown.append(f"<bench dir>/{Path(arg).name}")
            continue
        if arg in NAME_OPTIONS:
            name = True
            shown.append(arg)
            continue
        if arg in PATH_OPTIONS:
            skip = True
            continue
        if any(arg.startswith(f"{option}=") for option in PATH_OPTIONS):
            continue
        shown.append(arg)
    return " ".join([f"python -m {module}", *shown])


def parse_args(module: str, description: str, argv: Sequence[str] | None,
               options: Callable[[argparse.ArgumentParser], None] = lambda parser: None, *, cache: bool = True,
               benchmarks: bool = False, results: str | None = None, docs: str | None = None) -> argparse.Namespace:
    """The arguments of a benchmark script (``python -m <module>``), the one scaffold of every ``main()``.

    The shared options come first, with one spelling and help: ``--bench-dir`` (``cache``), ``--benchmarks``
    (``benchmarks``), ``--out`` (``results``: the JSON file's name in the bench folder) and ``--write-docs``
    (``docs``: what it updates); ``options`` adds the script's own. ``argv`` defaults to the command line. The
    result also holds ``argv`` (the raw arguments) and ``command_line`` (the command as docs/ show it)."""
    raw = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    if cache:
        parser.add_argument("--bench-dir", help="cache folder (default $TOOLRAG_BENCH_DIR or <temp>/toolrag-bench)")
    if benchmarks:
        parser.add_argument("--benchmarks", help="folder of the public sets (default $TOOLRAG_BENCHMARKS, else "
                                                 "shared/benchmarks beside the repository or a parent folder)")
    if results:
        parser.add_argument("--out", help=f"results JSON (default <bench dir>/{results})")
    if docs:
        parser.add_argument("--write-docs", action="store_true", help=f"update {docs}")
    options(parser)
    args = parser.parse_args(raw)
    args.argv, args.command_line = raw, shown_command(module, raw)
    return args


def keep_results(args: argparse.Namespace, results: dict[str, Any], name: str, tables: Callable[[dict[str, Any]], str],
                 write_docs: Callable[[dict[str, Any]], None] | None = None) -> int:
    """The end of a script that measures (after :func:`parse_args` with ``results=name``): the results as JSON in
    ``--out`` or ``<bench dir>/<name>``, their tables on stdout and, with ``--write-docs``, ``write_docs(results)``.
    Returns the exit status (0)."""
    out = Path(args.out) if getattr(args, "out", None) else bench_dir(getattr(args, "bench_dir", None)) / name
    out.write_text(json.dumps(results, indent=1, default=float), "utf-8")
    say(f"wrote {out}")
    print(tables(results))
    if write_docs is not None and getattr(args, "write_docs", False):
        write_docs(results)
    return 0


def at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``low`` (the message names the bound and the value)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def say(message: str) -> None:
    """Progress on stderr with the elapsed time (stdout is kept for tables)."""
    print(f"[{time.perf_counter() - _T0:7.1f}s] {message}", file=sys.stderr, flush=True)


def machine() -> str:
    """A one-line description of the machine the numbers come from."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text("utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text("utf-8").split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs{mem}, Linux {platform.release()}, Python {platform.python_version()}"


def git_rev() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             encoding="utf-8", timeout=10, check=False)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "toolrag"], capture_output=True,
                               encoding="utf-8", timeout=10, check=False).stdout.strip()
        return out.stdout.strip() + (" + uncommitted changes in toolrag/" if dirty else "")
    except OSError:
        return "unknown"


def model_ids(retriever: Any) -> dict[str, str]:
    """The model ids behind each text signal of a retriever (for the report)."""
    models = retriever.models
    out = {"dense": getattr(models.text, "model_id", str(models.text))}
    if models.english is not None:
        out["dense_en"] = getattr(models.english, "model_id", str(models.english))
    return out


def index_dir(root: Path) -> Path:
    """Where the benchmark indexes live: one folder per engine, so two engines never overwrite vectors."""
    return root / (f"index-{Path(ENGINE).name}" if ENGINE else "index")


def engine_description() -> str:
    """Which toolrag package the numbers come from (no machine path: the text goes into docs/)."""
    if ENGINE:
        return f"the toolrag package in TOOLRAG_BENCH_ENGINE ({Path(ENGINE).name})"
    return f"this repository's toolrag, revision {git_rev()}"


def open_retriever(root: Path, source: str, *, settings: Any = None, models: Any = None,
                   cache_size: int = 60_000, chroma_url: str | None = None) -> Any:
    """A ToolRetriever over one converted catalog, indexed under ``root/index`` (encodes only what changed),
    with a query-vector cache of ``cache_size`` entries."""
    from toolrag.search.query import QueryAnalyzer
    from toolrag.search.retriever import ToolRetriever

    start = time.perf_counter()
    retriever = ToolRetriever.from_catalog(root / "sets" / source / "catalog", settings=settings,
                                           data_dir=index_dir(root), models=models, chroma_url=chroma_url)
    retriever.analyzer = QueryAnalyzer(retriever.index.models, cache_size=cache_size)
    say(f"{source}: {len(retriever.index.catalog)} tools ready in {time.perf_counter() - start:.1f}s "
        f"({retriever.index.encoded_last_sync} encoded)")
    return retriever
