"""Decisions an agent can act on: EXECUTE / CLARIFY / NO_TOOL, P(right), the selection, per set.

The decision model ships with toolrag (``toolrag/decision/model.json``, fitted by ``python -m bench.decision_train``
on the training sets only), so every number here is on data it never saw. Each row runs through
``ToolRetriever.search`` with the shipped settings.

    python -m bench.decisions                       # every set, prints the tables
    python -m bench.decisions --sets bundled,metatool_task1 --limit 200
    python -m bench.decisions --precision-target 0.9  # another operating point
    python -m bench.decisions --write-docs          # ... and the tables of docs/decision_sets.md

The sets: ``bench.decision_sets``. For every set, first what an agent gets (``bench.agent_outcome``: a right tool
among the injected tools, nothing injected where nothing serves, tools injected per request, beside always the top
three and the MiniLM top-cosine threshold on the same rows), then decision accuracy, EXECUTE precision (EXECUTEs whose first tool
is right, rows that need no tool included), coverage (the share of rows a listed tool serves that are EXECUTEd
with it first), the operating point's figures beside those of the plain MiniLM top-cosine threshold at the same
coverage (MiniLM reads a Chinese request through its gloss; a tool MiniLM cannot read is ranked by the
multilingual cosine, below every MiniLM one), the precision-coverage curve of P(right), reliability, the
selection, and what decided (``decided_by``).
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.agent_outcome import AGENT_COLUMNS, agent_outcome, agent_row
from bench.common import REPO, engine_description, git_rev, keep_results, machine, parse_args, say
from bench.decision_sets import DECISION_SETS, SetOpener, expected_decision

__all__ = ["COVERAGES", "DECISION_SETS", "Row", "auc", "main", "precision_at", "reliability", "run_rows"]

COVERAGES = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
DOC = REPO / "docs" / "decision_sets.md"


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
    minilm: float = math.nan
    query: str = ""
    reason: str = ""
    decided_by: str = "model"
    x: tuple[float, ...] = ()
    """The decision's features (:data:`toolrag.decision.view.FEATURES`), to re-decide offline with another model."""
    cand: tuple[tuple[float, ...], ...] = ()

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


def precision_at(scores: Sequence[float], rows: Sequence[Row], coverage: float) -> float:
    """EXECUTE precision when the rows with the highest ``scores`` are EXECUTEd until ``coverage`` of the rows a
    listed tool serves are EXECUTEd right (NaN when that coverage cannot be reached)."""
    s = np.asarray(scores, dtype=np.float64)
    s = np.where(np.isfinite(s), s, -np.inf)
    order = np.argsort(-s, kind="mergesort")
    right = np.array([rows[i].right for i in order])
    served = np.array([bool(rows[i].gold) for i in order])
    if not served.any():
        return math.nan
    reached = np.cumsum(right & served) / served.sum()
    k = int(np.searchsorted(reached, coverage - 1e-12))
    return math.nan if k >= len(order) else float(right[: k + 1].mean())


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


def run_rows(retriever: Any, rows: Sequence[Any], *, top_k: int = 5, target: float | None = None,
             caller: Any = None) -> list[Row]:
    settings = retriever.settings.with_overrides(precision_target=target) if target is not None else retriever.settings
    out = []
    for row in rows:
        who = {"caller": caller} if caller is not None else {"permissions": row.permissions, "role": row.role}
        result = retriever.search(row.query, image=row.image, history=row.history, top_k=top_k, settings=settings,
                                  audited=False, **who)
        scores, f = result.scores, result.decision_features
        minilm = f.get("en_top", math.nan)
        if not math.isfinite(minilm):
            minilm = f.get("sem_top", math.nan) - 2.0  # below every MiniLM cosine
        out.append(Row(expected_decision(row), tuple(row.gold), result.decision.value, tuple(result.ids),
                       tuple(result.selected), scores.right if scores else 0.0, scores.ambiguous if scores else 0.0,
                       scores.no_tool if scores else 1.0, result.tokens.selected, result.tokens.candidates,
                       float(result.timing_ms.get("decision", math.nan)), float(minilm), row.query[:120],
                       result.decision_reason, result.decided_by.value, _features(result),
                       tuple(tuple(c.values()) for c in result.candidate_features)))
    return out


def _features(result: Any) -> tuple[float, ...]:
    from toolrag.decision.view import FEATURES

    return tuple(float(result.decision_features.get(f, math.nan)) for f in FEATURES)


def summarise(rows: Sequence[Row], **extra: Any) -> dict[str, Any]:
    """Every number of one set (fractions, not percent)."""
    decisions = np.array([r.decision for r in rows])
    expect = np.array([r.expect for r in rows])
    execute = decisions == "EXECUTE"
    wants = np.array([bool(r.gold) for r in rows])
    out: dict[str, Any] = {"n": len(rows), **extra}
    out["agent"] = agent_outcome([r.selected for r in rows], [r.gold for r in rows], [r.top for r in rows],
                                 [r.minilm for r in rows])
    out["accuracy"] = float((decisions == expect).mean())
    out["confusion"] = {e: {d: int(((expect == e) & (decisions == d)).sum()) for d in ("EXECUTE", "CLARIFY", "NO_TOOL")}
                        for e in ("EXECUTE", "CLARIFY", "NO_TOOL") if (expect == e).any()}
    out["decided_by"] = dict(sorted(Counter(r.decided_by for r in rows).items(), key=lambda kv: (-kv[1], kv[0])))
    out["execute_precision"] = float(np.mean([r.right for r, e in zip(rows, execute, strict=True) if e])) \
        if execute.any() else math.nan
    out["coverage"] = float(np.mean([e and r.right for r, e in zip(rows, execute, strict=True) if r.gold])) \
        if wants.any() else math.nan
    out["baseline_precision"] = precision_at([r.minilm for r in rows], rows, out["coverage"]) \
        if wants.any() and out["coverage"] > 0 else math.nan
    out["curve"] = [(c, precision_at([r.p_right for r in rows], rows, c), precision_at([r.minilm for r in rows],
                                                                                      rows, c)) for c in COVERAGES]
    if (expect == "CLARIFY").any():
        out["clarify_recall"] = float((decisions[expect == "CLARIFY"] == "CLARIFY").mean())
    if (expect == "EXECUTE").any():
        out["clarify_on_execute"] = float((decisions[expect == "EXECUTE"] == "CLARIFY").mean())
    tool_rows = [r for r in rows if r.gold]
    if tool_rows:
        out["reliability"], out["ece"] = reliability(tool_rows)
        out["top1"] = float(np.mean([r.right for r in tool_rows]))
    if (~wants).any():
        out["no_tool_kept_out"] = float((~execute[~wants]).mean())
        if wants.any():
            out["no_tool_auc"] = auc([r.p_no_tool for r in rows], ~wants)
    chosen = [r for r in rows if r.decision != "NO_TOOL" and r.gold]
    if chosen:
        out["selection_size"] = float(np.mean([len(r.selected) for r in chosen]))
        out["selection_completeness"] = float(np.mean([set(r.gold) <= set(r.selected) for r in tool_rows]))
        out["top5_completeness"] = float(np.mean([set(r.gold) <= set(r.top[:5]) for r in tool_rows]))
        out["tokens_selected"] = float(np.mean([r.tokens_selected for r in chosen]))
        out["tokens_top5"] = float(np.mean([r.tokens_top for r in chosen]))
    out["decision_ms"] = float(np.nanmean([r.decision_ms for r in rows]))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolrag.encode.models import load_models
    from toolrag.settings import Settings

    opener = SetOpener(args, load_models(Settings()))
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(), "revision": git_rev(),
                               "engine": engine_description(), "command": args.command_line, "sets": {}}
    for name in args.sets.split(","):
        start = time.perf_counter()
        extra: dict[str, Any] = {}
        if name == "small":
            outcome = [row for retriever, caller, requests in opener.small()
                       for row in run_rows(retriever, requests, target=args.precision_target, caller=caller)]
        else:
            target = args.precision_target
            if name == "bundled_tuned":
                target, extra["tuned"] = opener.tuned_target()
            retriever, rows = opener.rows(name)
            outcome = run_rows(retriever, rows, target=target)
            opener.save()
        parts = {name: outcome}
        if name == "multilingual":  # one set per language, English first: the same rows in each
            langs = [row.lang or "en" for row in rows]
            parts = {f"{name}_{lang}": [r for r, x in zip(outcome, langs, strict=True) if x == lang]
                     for lang in sorted(set(langs), key=lambda x: (x != "en", x))}
        if name == "bundled":  # issue 44 asks for the text rows and the image rows each
            pictured = [row.image is not None for row in rows]
            parts |= {f"{name}_text": [r for r, p in zip(outcome, pictured, strict=True) if not p],
                      f"{name}_images": [r for r, p in zip(outcome, pictured, strict=True) if p]}
        for part, got in parts.items():
            results["sets"][part] = summarise(got, **extra)
            results.setdefault("rows", {})[part] = [r.__dict__ for r in got]
        say(f"{name}: {len(outcome)} rows in {time.perf_counter() - start:.0f}s")
    return results


def _pct(v: Any) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def format_tables(results: dict[str, Any]) -> str:
    """The markdown tables of docs/decision_sets.md (values in percent)."""
    sets = results["sets"]
    lines = ["What the agent gets: a right tool among the injected tools (rows a listed tool serves), nothing "
             "injected (rows nothing listed serves), tools injected per request; beside always injecting the top "
             "three, and the MiniLM top-cosine threshold (inject the top three at cosine >= t) at the t that "
             "reaches the same share:", "",
             "| set | rows | " + " | ".join(title for _, title in AGENT_COLUMNS) + " |",
             "|---|---|" + "---|" * len(AGENT_COLUMNS)]
    lines += [agent_row(name, s["agent"]) for name, s in sets.items()]
    lines += ["", "| set | rows | decision accuracy | EXECUTE precision | coverage (served, EXECUTEd right) | MiniLM "
             "top-cosine precision at that coverage | NO_TOOL-expected rows not EXECUTEd | CLARIFY recall | "
             "CLARIFY on EXECUTE rows | no-tool AUC | top-1 right | ECE of P(right) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in sets.items():
        lines.append(f"| {name} | {s['n']} | {_pct(s['accuracy'])} | {_pct(s['execute_precision'])} | "
                     f"{_pct(s['coverage'])} | {_pct(s['baseline_precision'])} | {_pct(s.get('no_tool_kept_out'))} | "
                     f"{_pct(s.get('clarify_recall'))} | {_pct(s.get('clarify_on_execute'))} | "
                     f"{_pct(s.get('no_tool_auc'))} | {_pct(s.get('top1'))} | {_pct(s.get('ece'))} |")
    lines += ["", "Confusion (expected -> decided):", ""]
    for name, s in sets.items():
        cells = "; ".join(f"{e}: " + ", ".join(f"{d} {n}" for d, n in row.items()) for e, row in s["confusion"].items())
        lines.append(f"- {name}: {cells}")
    lines += ["", "What decided (`decided_by`: the model's probabilities, or an invariant):", ""]
    for name, s in sets.items():
        lines.append(f"- {name}: " + ", ".join(f"{k} {n}" for k, n in s.get("decided_by", {}).items()))
    lines += ["", "EXECUTE precision at each coverage (the share of rows a listed tool serves that are EXECUTEd "
              "right), P(right) / the plain MiniLM top-cosine threshold:", "",
              "| set | " + " | ".join(f"{int(100 * c)}%" for c in COVERAGES) + " |",
              "|---|" + "---|" * len(COVERAGES)]
    for name, s in sets.items():
        lines.append(f"| {name} | " + " | ".join(f"{_pct(p)} / {_pct(b)}" for _, p, b in s["curve"]) + " |")
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
    if any("tuned" in s for s in sets.values()):
        lines += ["", "bundled_tuned: " + next(s["tuned"] for s in sets.values() if "tuned" in s)]
    lines += ["", "Decision step, mean ms per search (measured on a shared machine): " + ", ".join(
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
        parser.add_argument("--precision-target", type=float, default=None,
                            help="the operating point (Settings.precision_target; default: the model's)")

    args = parse_args("bench.decisions", "decision accuracy, precision against coverage, reliability, selection", argv,
                      options, benchmarks=True, results="decisions.json", docs="the tables of docs/decision_sets.md")
    return keep_results(args, run(args), "decisions.json", format_tables, write_docs)


if __name__ == "__main__":
    raise SystemExit(main())
