"""Decisions an agent can act on: EXECUTE / CLARIFY / NO_TOOL, P(right), the selection, per set.

Every catalog's decision model is fitted from the catalog alone (its simulated requests, see
``toolrag/search/simulate.py``) when the retriever opens it; no row of any set below is used to fit it, so every
number is on data the model never saw. Each row runs through ``ToolRetriever.search`` with the shipped settings.

    python -m bench.decisions                       # every set, prints the tables
    python -m bench.decisions --sets bundled,metatool_task1 --limit 200
    python -m bench.decisions --write-docs          # ... and the tables of docs/decisions.md

Sets: ``bundled`` (sample_tools/queries.yaml: 223 rows with an expected decision), ``metatool_task1`` (520
need-a-tool + 520 need-no-tool requests: a row needs no tool when its gold is empty), the single-tool test
splits of MetaTool, Seal-Tools (in and out of domain) and Gorilla HF (every row needs a tool), and MetaTool
two-tool (the selection against the top five). ``small``: catalogs of 1-5 tools (MetaTool's public tools and the
bundled catalog, :data:`SMALL_SIZES`), each request with its tool present (EXECUTE expected) or left out of the
catalog, or needing no tool (NO_TOOL expected): what most MCP clients send (``bench.small_catalogs``). ``bundled_refined`` also reports the bundled catalog's model
refined with the labelled even rows (``ToolRetriever.refine_decisions``), on the odd rows. ``mcp_zh`` and ``mcp_en``:
50 requests written for this project, in Chinese and the same in English, to the 31 English tools of
tests/data/published_mcp (35 need a tool, 15 none): a Chinese request to a catalog without Chinese.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import math
import pickle
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    REPO,
    SETS,
    engine_description,
    git_rev,
    index_dir,
    keep_results,
    machine,
    open_retriever,
    parse_args,
    prepare,
    say,
)

__all__ = ["DECISION_SETS", "SetOpener", "auc", "expected_decision", "main", "reliability", "risk_coverage"]

#: set name -> (catalog source, query split or the bundled file)
DECISION_SETS = ("bundled", "bundled_refined", "mcp_zh", "mcp_en", "metatool_task1", "metatool_single",
                 "metatool_multi", "seal_in", "seal_out", "gorilla", "small")
#: The small catalogs of the ``small`` set (``bench.small_catalogs.sample_catalogs``): 1-5 tools, 4 draws per size
#: and source (MetaTool's public tools, the bundled catalog).
SMALL_SIZES = (1, 2, 3, 4, 5)
SMALL_DRAWS = 4
#: Sets kept in this repository: set name -> (catalog, labelled queries), relative to the repository.
REPO_SETS = {
    "mcp_zh": ("tests/data/published_mcp/tools.json", "tests/data/published_mcp/queries_zh.yaml"),
    "mcp_en": ("tests/data/published_mcp/tools.json", "tests/data/published_mcp/queries_en.yaml"),
}
COVERAGES = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
DOC = REPO / "docs" / "decisions.md"


@dataclass(frozen=True)
class Row:
    """One request's outcome: what was expected and what the decision said."""

    expect: str | None
    gold: tuple[str, ...]
    decision: str
    top: tuple[str, ...]
    selected: tuple[str, ...]
    p_right: float
    p_ambiguous: float
    p_no_tool: float
    tokens_selected: int
    tokens_top: int
    decision_ms: float
    query: str = ""
    reason: str = ""
    decided_by: str = "model"

    @property
    def right(self) -> bool:
        return bool(self.top) and self.top[0] in self.gold


def auc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """P(a positive scores above a negative), ties counting one half."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positive, dtype=bool)
    pos, neg = s[y], s[~y]
    if not len(pos) or not len(neg):
        return math.nan
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def risk_coverage(rows: Sequence[Row]) -> list[tuple[float, float, float, int]]:
    """EXECUTE precision when only the share ``c`` of requests with the highest P(right) is called:
    (coverage, P(right) threshold, precision, n called) for each c in COVERAGES."""
    p = np.array([r.p_right for r in rows])
    right = np.array([r.right for r in rows])
    order = np.argsort(-p, kind="mergesort")
    out = []
    for c in COVERAGES:
        n = max(1, round(c * len(rows)))
        chosen = order[:n]
        out.append((c, float(p[chosen].min()), float(right[chosen].mean()), n))
    return out


def reliability(rows: Sequence[Row], bins: int = 10) -> tuple[list[tuple[float, float, float, int]], float]:
    """Reliability of P(right): per bin of predicted probability (mean predicted, observed right rate, count)
    and the expected calibration error (count-weighted mean |predicted - observed|)."""
    p = np.array([r.p_right for r in rows])
    right = np.array([r.right for r in rows], dtype=float)
    edges = np.linspace(0, 1, bins + 1)
    out = []
    ece = 0.0
    for i in range(bins):
        sel = (p >= edges[i]) & ((p < edges[i + 1]) if i < bins - 1 else (p <= 1))
        if sel.any():
            out.append((float(p[sel].mean()), float(right[sel].mean()), float(edges[i]), int(sel.sum())))
            ece += sel.sum() / len(p) * abs(p[sel].mean() - right[sel].mean())
    return out, float(ece)


def expected_decision(row: Any) -> str:
    """A labelled row's expected decision: its own ``expect``, else EXECUTE when it has gold tools, else NO_TOOL."""
    return row.expect.value if row.expect is not None else ("EXECUTE" if row.gold else "NO_TOOL")


def run_rows(retriever: Any, rows: Sequence[Any], *, top_k: int = 5, execute_share: float | None = None
             ) -> list[Row]:
    settings = retriever.settings if execute_share is None else \
        retriever.settings.with_overrides(execute_share=execute_share)
    out = []
    for row in rows:
        result = retriever.search(row.query, image=row.image, permissions=row.permissions, role=row.role,
                                  history=row.history, top_k=top_k, settings=settings)
        scores = result.scores
        out.append(Row(expected_decision(row), tuple(row.gold), result.decision.value, tuple(result.ids), tuple(result.selected),
                       scores.right if scores else 0.0, scores.ambiguous if scores else 0.0,
                       scores.no_tool if scores else 1.0, result.tokens.selected, result.tokens.candidates,
                       float(result.timing_ms.get("decision", math.nan)), row.query[:120], result.decision_reason,
                       result.decided_by.value))
    return out


def summarise(name: str, rows: Sequence[Row], *, fit: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every number of one set (fractions, not percent)."""
    decisions = np.array([r.decision for r in rows])
    expect = np.array([r.expect for r in rows])
    execute = decisions == "EXECUTE"
    wants = np.array([bool(r.gold) for r in rows])
    out: dict[str, Any] = {"n": len(rows), "fit": fit or {}}
    out["accuracy"] = float((decisions == expect).mean())
    out["confusion"] = {e: {d: int(((expect == e) & (decisions == d)).sum()) for d in ("EXECUTE", "CLARIFY", "NO_TOOL")}
                        for e in ("EXECUTE", "CLARIFY", "NO_TOOL") if (expect == e).any()}
    out["decided_by"] = dict(sorted(Counter(r.decided_by for r in rows).items(), key=lambda kv: (-kv[1], kv[0])))
    out["execute_coverage"] = float(execute.mean())
    out["execute_precision"] = float(np.mean([r.right for r, e in zip(rows, execute, strict=True) if e])) \
        if execute.any() else math.nan
    if (expect == "CLARIFY").any():
        out["clarify_recall"] = float((decisions[expect == "CLARIFY"] == "CLARIFY").mean())
    if (expect == "EXECUTE").any():
        out["execute_right"] = float(np.mean([d == "EXECUTE" and r.right for r, d, e in zip(rows, decisions, expect,
                                                                                         strict=True) if e == "EXECUTE"]))
        out["clarify_on_execute"] = float((decisions[expect == "EXECUTE"] == "CLARIFY").mean())
    tool_rows = [r for r in rows if r.gold]
    if tool_rows:
        out["risk_coverage"] = risk_coverage(tool_rows)
        out["reliability"], out["ece"] = reliability(tool_rows)
        out["top1"] = float(np.mean([r.right for r in tool_rows]))
    if (~wants).any() and wants.any():
        out["no_tool_auc"] = auc([r.p_no_tool for r in rows], ~wants)
        out["no_tool_accuracy"] = float(((decisions == "NO_TOOL") == ~wants).mean())
        out["no_tool_recall"] = float((decisions[~wants] == "NO_TOOL").mean())
        out["tool_recall"] = float((decisions[wants] != "NO_TOOL").mean())
    chosen = [r for r in rows if r.decision != "NO_TOOL" and r.gold]
    if chosen:
        out["selection_size"] = float(np.mean([len(r.selected) for r in chosen]))
        out["selection_completeness"] = float(np.mean([set(r.gold) <= set(r.selected) for r in tool_rows]))
        out["top5_completeness"] = float(np.mean([set(r.gold) <= set(r.top[:5]) for r in tool_rows]))
        out["tokens_selected"] = float(np.mean([r.tokens_selected for r in chosen]))
        out["tokens_top5"] = float(np.mean([r.tokens_top for r in chosen]))
    out["decision_ms"] = float(np.nanmean([r.decision_ms for r in rows]))
    return out


def _bundled(args: argparse.Namespace, models: Any) -> Any:
    from toolrag import load_queries
    from toolrag.search.retriever import ToolRetriever

    root = index_dir(Path(args.bench_dir) if args.bench_dir else _root(args))
    retriever = ToolRetriever.from_catalog(REPO / "sample_tools", data_dir=root / "bundled", models=models)
    return retriever, load_queries(REPO / "sample_tools" / "queries.yaml")


def _root(args: argparse.Namespace) -> Path:
    from bench.datasets import bench_dir

    return bench_dir(args.bench_dir)


def _limit(rows: list[Any], limit: int | None) -> list[Any]:
    if not limit or len(rows) <= limit:
        return rows
    return rows[:: max(1, len(rows) // limit)][:limit]


class _CachedAnalyzer:
    """The retriever's query analysis behind a pickle cache in the bench folder (per model set): re-running
    the benchmark after a change of the decision code encodes and OCRs nothing again."""

    def __init__(self, analyzer: Any, file: Path) -> None:
        self.analyzer, self.file = analyzer, file
        self.models = analyzer.models
        self.cache: dict[Any, Any] = {}
        if file.is_file():
            with file.open("rb") as fh:
                self.cache = pickle.load(fh)
        self.dirty = False

    def analyze(self, query: str, *, image: Any = None, history: Sequence[str] = (), settings: Any) -> Any:
        key = (query, str(image), tuple(history), settings.history_weight)
        if key not in self.cache:
            self.cache[key] = self.analyzer.analyze(query, image=image, history=history, settings=settings)
            self.dirty = True
        return self.cache[key]

    def save(self) -> None:
        if self.dirty:
            tmp = self.file.with_suffix(".tmp")
            with tmp.open("wb") as fh:
                pickle.dump(self.cache, fh)
            tmp.replace(self.file)
            self.dirty = False


def _cache(retriever: Any, root: Path, name: str) -> _CachedAnalyzer:
    models = retriever.models
    tag = hashlib.sha256(f"{models.text.fingerprint}|{getattr(models.english, 'fingerprint', '-')}".encode())
    for module in ("toolrag.search.query", "toolrag.search.addresses", "toolrag.search.gloss", "toolrag.text"):
        # a change of how a request is read (its cleaning, what stands in for an address) reads it again
        tag.update(Path(importlib.import_module(module).__file__ or "").read_bytes())
    cached = _CachedAnalyzer(retriever.analyzer, root / f"query-features-{name}-{tag.hexdigest()[:12]}.pkl")
    retriever.analyzer = cached
    return cached


class SetOpener:
    """Opens each set's retriever once per catalog (with its query-analysis cache) and yields its labelled rows,
    the model fitted from its catalog alone (:func:`run`; ``bench.ceilings`` reads the same rows)."""

    def __init__(self, args: argparse.Namespace, models: Any) -> None:
        self.args, self.models = args, models
        self.root: Path | None = None
        self.retrievers: dict[str, Any] = {}
        self.caches: list[_CachedAnalyzer] = []

    def rows(self, name: str) -> tuple[Any, list[Any], dict[str, Any]]:
        """(retriever, labelled rows, fit summary) of set ``name``; ``bundled_refined`` refines the bundled
        catalog's model with the even rows and returns the odd ones (:meth:`restore` undoes the refinement)."""
        from toolrag import load_queries

        args, models = self.args, self.models
        if name in ("bundled", "bundled_refined"):
            if "bundled" not in self.retrievers:
                self.retrievers["bundled"] = _bundled(args, models)
                self.caches.append(_cache(self.retrievers["bundled"][0], _root(args), "bundled"))
            retriever, rows = self.retrievers["bundled"]
            fit = {"seconds": round(retriever.decisions.last_fit_seconds, 1), **retriever.decision_model().summary}
            if name == "bundled_refined":
                retriever.refine_decisions(rows[0::2])
                rows = rows[1::2]
                fit = {"refined_with": len(rows), **retriever.decision_model().summary}
            return retriever, _limit(rows, args.limit), fit
        if name in REPO_SETS:
            catalog, queries = REPO_SETS[name]
            if catalog not in self.retrievers:
                from toolrag.search.retriever import ToolRetriever

                folder = index_dir(Path(args.bench_dir) if args.bench_dir else _root(args)) / "repo" / Path(catalog).stem
                self.retrievers[catalog] = ToolRetriever.from_catalog(REPO / catalog, data_dir=folder, models=models)
                self.caches.append(_cache(self.retrievers[catalog], _root(args), "published_mcp"))
            retriever = self.retrievers[catalog]
            query_file = REPO / queries
        else:
            self.root = self.root or prepare(args.benchmarks, args.bench_dir)
            spec = SETS[name]
            if spec.source not in self.retrievers:
                self.retrievers[spec.source] = open_retriever(self.root, spec.source, models=models)
                self.caches.append(_cache(self.retrievers[spec.source], self.root, spec.source))
            retriever = self.retrievers[spec.source]
            query_file = spec.queries_file(self.root)
        fit = {"seconds": round(retriever.decisions.last_fit_seconds, 1), **retriever.decision_model().summary}
        return retriever, _limit(load_queries(query_file), args.limit), fit

    def restore(self, name: str) -> None:
        """Back to the catalog-only model after ``bundled_refined``, for later sets."""
        if name == "bundled_refined":
            retriever = self.retrievers["bundled"][0]
            retriever.decisions.fit(retriever.index.snapshot, retriever.settings)

    def save(self) -> None:
        for cache in self.caches:
            cache.save()


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolrag.encode.models import load_models
    from toolrag.settings import Settings

    opener = SetOpener(args, load_models(Settings()))
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(), "revision": git_rev(),
                               "engine": engine_description(), "command": args.command_line, "sets": {}}
    for name in args.sets.split(","):
        start = time.perf_counter()
        if name == "small":
            outcome, fit = _small(args, opener.models), {}
        else:
            retriever, rows, fit = opener.rows(name)
            outcome = run_rows(retriever, rows, execute_share=args.execute_share)
            opener.restore(name)
            opener.save()
        results["sets"][name] = summarise(name, outcome, fit=fit)
        results.setdefault("rows", {})[name] = [r.__dict__ for r in outcome]
        say(f"{name}: {len(outcome)} rows in {time.perf_counter() - start:.0f}s: " + ", ".join(
            f"{k} {v:.3f}" for k, v in results["sets"][name].items() if isinstance(v, float)))
    return results


def _small(args: argparse.Namespace, models: Any) -> list[Row]:
    """The ``small`` set: every request of every sampled small catalog, each catalog with its own index and
    decision model (fitted from the catalog alone, as always)."""
    import shutil
    import tempfile

    from bench.small_catalogs import sample_catalogs
    from toolrag.search.retriever import ToolRetriever

    work = Path(tempfile.mkdtemp(prefix="toolrag-small-"))
    try:
        out: list[Row] = []
        for label, catalog, requests in sample_catalogs(prepare(args.benchmarks, args.bench_dir), work,
                                                        sizes=SMALL_SIZES, catalogs=SMALL_DRAWS,
                                                        sources=("metatool", "bundled"), seed=7):
            retriever = ToolRetriever.from_catalog(catalog, data_dir=work / label / "data", models=models)
            out += run_rows(retriever, requests, execute_share=args.execute_share)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _pct(v: Any) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def _fit_time(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return "n/a"
    # 0.0: the model stored with the index was loaded (fitted by an earlier run), nothing was fitted now
    return f"{seconds} s" if seconds > 0 else "stored model loaded"


def format_tables(results: dict[str, Any]) -> str:
    """The markdown tables of docs/decisions.md (values in percent)."""
    sets = results["sets"]
    lines = ["| set | rows | decision accuracy | EXECUTE precision | EXECUTE coverage | CLARIFY recall | "
             "CLARIFY on EXECUTE rows | no-tool AUC | no-tool accuracy | NO_TOOL on no-tool rows | "
             "EXECUTEd right on tool rows | top-1 right | ECE of P(right) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in sets.items():
        lines.append(f"| {name} | {s['n']} | {_pct(s['accuracy'])} | {_pct(s['execute_precision'])} | "
                     f"{_pct(s['execute_coverage'])} | {_pct(s.get('clarify_recall'))} | "
                     f"{_pct(s.get('clarify_on_execute'))} | {_pct(s.get('no_tool_auc'))} | "
                     f"{_pct(s.get('no_tool_accuracy'))} | {_pct(s.get('no_tool_recall'))} | "
                     f"{_pct(s.get('execute_right'))} | {_pct(s.get('top1'))} | {_pct(s.get('ece'))} |")
    lines += ["", "Confusion (expected -> decided):", ""]
    for name, s in sets.items():
        cells = "; ".join(f"{e}: " + ", ".join(f"{d} {n}" for d, n in row.items()) for e, row in s["confusion"].items())
        lines.append(f"- {name}: {cells}")
    lines += ["", "What decided (`decided_by`: the model's probabilities, or a rule that does not read them):", ""]
    for name, s in sets.items():
        lines.append(f"- {name}: " + ", ".join(f"{k} {n}" for k, n in s.get("decided_by", {}).items()))
    lines += ["", "Risk-coverage: EXECUTE precision when only the requests with the highest P(right) are called "
              "(rows that need a tool):", "",
              "| set | " + " | ".join(f"{int(100 * c)}%" for c in COVERAGES) + " |",
              "|---|" + "---|" * len(COVERAGES)]
    for name, s in sets.items():
        if "risk_coverage" in s:
            lines.append(f"| {name} | " + " | ".join(_pct(p) for _, _, p, _ in s["risk_coverage"]) + " |")
    lines += ["", "Reliability of P(right) (rows that need a tool): mean predicted -> observed right rate (rows)", ""]
    for name, s in sets.items():
        if "reliability" in s:
            cells = ", ".join(f"{_pct(p)} -> {_pct(o)} ({n})" for p, o, _, n in s["reliability"])
            lines.append(f"- {name}: {cells}")
    lines += ["", "| set | selection size | selection Completeness | top-5 Completeness | schema tokens of the "
              "selection | of the top 5 |", "|---|---|---|---|---|---|"]
    for name, s in sets.items():
        if "selection_size" in s:
            lines.append(f"| {name} | {s['selection_size']:.2f} | {_pct(s['selection_completeness'])} | "
                         f"{_pct(s['top5_completeness'])} | {s['tokens_selected']:.0f} | {s['tokens_top5']:.0f} |")
    lines += ["", "Fitting (catalog-only model; seconds on this machine, not final): " + "; ".join(
        f"{name} {_fit_time(s['fit'].get('seconds'))}, cases {s['fit'].get('cases', {})}" for name, s in sets.items())]
    lines += ["", "Decision step, mean ms per search (not final; measured on a shared machine): " + ", ".join(
        f"{name} {s['decision_ms']:.2f}" for name, s in sets.items())]
    return "\n".join(lines)


def write_docs(results: dict[str, Any]) -> None:
    from bench.report import write_section

    header = [f"Command: `{results['command']}`  ", f"Date: {results['date']}; machine: {results['machine']}  ",
              f"Engine: {results['engine']}", "", ""]
    write_section("decisions", "\n".join(header) + format_tables(results), doc=DOC)


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sets", default=",".join(DECISION_SETS))
        parser.add_argument("--limit", type=int, default=None, help="at most this many rows per set (evenly spaced)")
        parser.add_argument("--execute-share", type=float, default=None,
                            help="rule 5's operating point (Settings.execute_share; shipped 0.2; 0 turns it off) to "
                                 "measure the trade-off of EXECUTE precision against coverage")

    args = parse_args("bench.decisions", "decision accuracy, risk-coverage, reliability and selection", argv,
                      options, benchmarks=True, results="decisions.json", docs="the tables of docs/decisions.md")
    return keep_results(args, run(args), "decisions.json", format_tables, write_docs)


if __name__ == "__main__":
    raise SystemExit(main())
