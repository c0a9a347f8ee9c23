"""Signal weights chosen from a small labelled sample of the user's own catalog.

No fixed weighting is best for every catalog (docs/benchmarks.md): keyword search wins where requests
reuse the tools' own words (Seal-Tools), the English dense model wins where they paraphrase (MetaTool,
Gorilla). With a few dozen labelled queries of their own (the same file ``toolrag eval`` reads), a
catalog owner can let :func:`tune_weights` pick the weighting that ranks their gold tools best.

Method: every weighting on a grid over the simplex of the text signals (step ``step``) is tried on every
labelled row through :meth:`ToolRetriever.search` itself (so the result is exactly what users will get);
rows are the outer loop, so each query is encoded once and re-ranked from the retriever's query-vector
cache. The best weighting by ``metric`` replaces the starting one only when its per-query gain is
significant: mean paired gain > ``z`` x its standard error. On a small or noisy sample the current
weights are kept, which is the guard against over-fitting a handful of queries.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from toolrag.catalog.profile import Catalog
from toolrag.decision.decider import may_inject
from toolrag.decision.model import DecisionModel
from toolrag.decision.outcome import Decision, DecisionSource
from toolrag.decision.policy import choose, operating_point
from toolrag.decision.view import FEATURES
from toolrag.errors import QueryError, SettingsError
from toolrag.evaluation.evaluator import Evaluator
from toolrag.evaluation.metrics import metric as parse_metric
from toolrag.evaluation.queries import QueryRow
from toolrag.files import write_atomic
from toolrag.search.results import SearchResult
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import TEXT_SIGNALS, Settings
from toolrag.signals import ModelRole
from toolrag.stats import significant_gain

__all__ = ["ThresholdPoint", "ThresholdResult", "TuneResult", "TunedCandidate", "calibrate_target", "decision_at",
           "save_settings",
           "simplex_grid", "tune_weights"]

log = logging.getLogger(__name__)

#: What ``tune_weights`` may maximise (any ``recall@K``, ``ndcg@K``, ``mrr@K``, ``completeness@K`` works).
TUNABLE_METRICS = ("recall@5", "recall@10", "ndcg@5", "ndcg@10", "mrr@10", "completeness@5")


@dataclass(frozen=True)
class TunedCandidate:
    """One weighting tried: its text-signal weights and its mean metric on the sample."""

    weights: dict[str, float]
    score: float


@dataclass(frozen=True)
class TuneResult:
    """The chosen settings and the evidence for them."""

    settings: Settings
    """``base`` with the chosen text weights (identical to ``base`` when nothing beat it significantly)."""
    metric: str
    base_score: float
    best_score: float
    gain_stderr: float
    changed: bool
    n_queries: int
    candidates: list[TunedCandidate] = field(default_factory=list)
    """Every weighting tried, best first."""

    def save(self, path: str | Path) -> Path:
        """Write the chosen weights into a settings YAML that ``--settings`` (CLI) or ``Settings.from_yaml`` reads
        (see :func:`save_settings`)."""
        weights = {s: round(float(w), 4) for s, w in self.settings.weights.items()}
        return save_settings(path, {"weights": weights}, comment=self.summary())

    def summary(self) -> str:
        """One line for a CLI: what was chosen and why."""
        chosen = ", ".join(f"{s}={w:g}" for s, w in self.settings.weights.items() if s in TEXT_SIGNALS)
        verdict = "new weights" if self.changed else "kept the current weights (no significant gain)"
        return (f"{verdict}: {chosen}; {self.metric} {100 * self.base_score:.2f} -> {100 * self.best_score:.2f} "
                f"(gain stderr {100 * self.gain_stderr:.2f}) on {self.n_queries} labelled queries")


def simplex_grid(signals: Sequence[str], step: float) -> list[dict[str, float]]:
    """Every weighting of ``signals`` with weights in multiples of ``step`` that sum to 1 (at least one > 0).

    E.g. 3 signals at step 0.1 give 66 weightings. Raises SettingsError for a step outside (0, 1].
    """
    if not 0 < step <= 1:
        raise SettingsError(f"grid step must be in (0, 1], got {step}")
    units = round(1 / step)
    if not math.isclose(units * step, 1.0, abs_tol=1e-9):
        raise SettingsError(f"grid step {step} must divide 1 evenly (e.g. 0.05, 0.1, 0.25)")
    if not signals:
        raise SettingsError("simplex_grid needs at least one signal")
    out: list[dict[str, float]] = []

    def fill(prefix: list[int], left: int) -> None:
        if len(prefix) == len(signals) - 1:
            parts = [*prefix, left]
            out.append({s: round(p / units, 6) for s, p in zip(signals, parts, strict=True)})
            return
        for p in range(left, -1, -1):
            fill([*prefix, p], left - p)

    fill([], units)
    return out


def tune_weights(
    retriever: ToolRetriever,
    rows: Sequence[QueryRow],
    *,
    base: Settings | None = None,
    signals: Sequence[str] | None = None,
    step: float = 0.1,
    metric: str = "ndcg@10",
    z: float = 1.0,
    progress: Callable[[float, str], None] | None = None,
) -> TuneResult:
    """Choose the text-signal weights that rank the gold tools of ``rows`` best on this catalog.

    ``retriever`` is a :class:`toolrag.search.retriever.ToolRetriever`; ``rows`` are labelled queries (rows with an
    empty gold list are skipped: they carry no ranking signal). ``signals`` defaults to the text signals the
    retriever can compute (``dense``, ``dense_en`` when the English model is loaded, ``bm25``); image
    weights are left as they are. The sum of the text weights of ``base`` is kept, so the text/image balance
    does not move. Cost: ``len(rows) * len(grid)`` searches without encoding (66 weightings at step 0.1).
    """
    if not isinstance(retriever, ToolRetriever):
        raise TypeError(f"tune_weights needs a ToolRetriever, got {type(retriever).__name__}")
    try:
        fn, k = parse_metric(metric)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    if z < 0:
        raise SettingsError(f"z must be >= 0, got {z}")
    base = base or retriever.settings
    labelled = [r for r in rows if r.gold]
    if not labelled:
        raise QueryError("tune_weights needs labelled queries with at least one gold tool each")
    if signals is None:
        signals = [s for s in TEXT_SIGNALS if s != "dense_en" or retriever.models.has(ModelRole.ENGLISH)]
    unknown = [s for s in signals if s not in TEXT_SIGNALS]
    if unknown:
        raise SettingsError(f"tune_weights tunes text signals only ({', '.join(TEXT_SIGNALS)}); got {unknown}")
    total = sum(base.weights.get(s, 0.0) for s in signals) or 1.0
    grid = simplex_grid(list(signals), step)
    base_weights = {s: base.weights.get(s, 0.0) / total for s in signals}
    configs = [base] + [base.with_overrides(weights={s: w * total for s, w in g.items()}) for g in grid]
    per_query: list[list[float]] = [[] for _ in configs]
    depth = max(k, base.top_k)
    say = progress or (lambda f, m: None)
    evaluator = Evaluator(labelled)
    for n, row in enumerate(labelled):
        for c, cfg in enumerate(configs):
            value = fn(evaluator.run_row(retriever, row, settings=cfg, top_k=depth).ids, row.gold, k)
            per_query[c].append(0.0 if value is None else float(value))
        say((n + 1) / len(labelled), f"tuned on {n + 1}/{len(labelled)} queries")
    means = [sum(v) / len(v) for v in per_query]
    order = sorted(range(1, len(configs)), key=lambda c: (-means[c], _distance(grid[c - 1], base_weights)))
    best = order[0]
    gains = [b - a for a, b in zip(per_query[0], per_query[best], strict=True)]
    mean_gain, stderr, changed = significant_gain(gains, z)
    chosen = configs[best] if changed else base
    log.info("tune_weights: %s %.4f -> %.4f (gain %.4f, stderr %.4f) %s", metric, means[0], means[best],
             mean_gain, stderr, "changed" if changed else "kept")
    return TuneResult(
        settings=chosen, metric=metric, base_score=means[0], best_score=means[best] if changed else means[0],
        gain_stderr=stderr, changed=changed, n_queries=len(labelled),
        candidates=[TunedCandidate(grid[c - 1], means[c]) for c in order],
    )


def _distance(a: dict[str, float], b: dict[str, float]) -> float:
    """L1 distance between two weightings: among equally good grid points, the one nearest the start wins."""
    return sum(abs(a.get(s, 0.0) - b.get(s, 0.0)) for s in set(a) | set(b))


def save_settings(path: str | Path, changes: Mapping[str, Any], *, comment: str = "") -> Path:
    """Merge ``changes`` (setting name -> value) into a settings YAML, creating it when missing.

    The other settings of an existing file are kept (its comments are not). The file is checked first and
    replaced atomically, so a bad file is reported by name and a failed write leaves it as it was.
    """
    file = Path(path)
    data: dict[str, Any] = {}
    if file.exists():
        Settings.from_yaml(file)  # a file that is not a settings file is refused, naming it
        data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    data.update(changes)
    Settings().with_overrides(**data)
    header = f"# toolrag tune: {comment}\n" if comment else ""
    write_atomic(file, header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), error=SettingsError)
    return file


@dataclass(frozen=True)
class ThresholdPoint:
    """One candidate EXECUTE precision target: the share of rows it decides right, of rows that need a tool it
    does not call (``missed``) and of rows that need none it calls (``false_calls``)."""

    target: float
    accuracy: float
    missed: float
    false_calls: float


@dataclass(frozen=True)
class ThresholdResult:
    """The decision's operating point (``precision_target``) chosen from labelled rows, and the evidence."""

    target: float
    """The chosen target (``base_target`` when nothing beat it significantly)."""
    base_target: float
    accuracy: float
    """Share of rows decided as expected (EXECUTE with a right tool first, CLARIFY, NO_TOOL)."""
    base_accuracy: float
    gain_stderr: float
    changed: bool
    n_tool: int
    n_no_tool: int
    curve: tuple[ThresholdPoint, ...] = ()
    """Every candidate target tried, in increasing order: the trade-off the choice was made on."""

    def summary(self) -> str:
        verdict = "new precision_target" if self.changed else "kept the precision_target (no significant gain)"
        return (f"{verdict}: {self.target:.2f}; accuracy {100 * self.base_accuracy:.2f} -> "
                f"{100 * self.accuracy:.2f} (gain stderr {100 * self.gain_stderr:.2f}) on {self.n_tool} rows "
                f"that need a tool and {self.n_no_tool} that need none")


def calibrate_target(retriever: ToolRetriever, rows: Sequence[QueryRow], *, base: Settings | None = None,
                     z: float = 1.0) -> ThresholdResult:
    """Choose the decision's ``precision_target`` from labelled rows that need no tool (``expect: no_tool``) and
    rows that need one: a catalog's own rows adjust only the operating point of the shipped decision model,
    never the model.

    Each row is searched once with ``base``; under a target t a row the model decided gets what a search with t
    decides (:func:`decision_at`: the one policy, :func:`toolrag.decision.policy.choose`); a row an invariant
    decided keeps its decision. A row is right when that is its expected decision (EXECUTE: with a gold tool first). The
    targets tried are those the model measured on held-out sources; the most accurate (ties: the nearest to
    the current one) replaces the current target only when its mean per-row gain exceeds ``z`` x its standard
    error, the guard against fitting a handful of rows.
    """
    if not isinstance(retriever, ToolRetriever):
        raise TypeError(f"calibrate_target needs a ToolRetriever, got {type(retriever).__name__}")
    if z < 0:
        raise SettingsError(f"z must be >= 0, got {z}", field="z")
    model = retriever.decider.model
    if model is None:
        raise SettingsError(f"the decision model cannot be read ({retriever.decider.note}): nothing to calibrate")
    base = base or retriever.settings
    used = [r for r in rows if r.expect is not None or r.gold]
    expected = [r.expect if r.expect is not None else (Decision.EXECUTE if r.gold else Decision.NO_TOOL)
                for r in used]
    needs_none = np.array([e is Decision.NO_TOOL for e in expected], dtype=bool)
    if not needs_none.any() or needs_none.all():
        raise QueryError("calibrating the decision needs labelled rows of both kinds: some with "
                         "'expect: no_tool' and some with gold tools")
    evaluator = Evaluator(used)
    results = [evaluator.run_row(retriever, row, settings=base) for row in used]
    current = base.precision_target if base.precision_target is not None else model.default_target
    targets = sorted({current, *(t for t, _ in model.points)})
    decided = np.array([[decision_at(model, r, retriever.catalog, target=t, clean=base.clean_target)
                         for r in results] for t in targets], dtype=object)
    expect = np.array(expected, dtype=object)
    first_right = np.array([bool(r.ids) and r.ids[0] in set(row.gold) for r, row in zip(results, used, strict=True)])
    right = (decided == expect[None, :]) & ((decided != Decision.EXECUTE) | first_right[None, :])
    accuracy = right.mean(axis=1)
    start = targets.index(current)
    best = min(range(len(targets)), key=lambda i: (-accuracy[i], abs(targets[i] - current)))
    _, stderr, changed = significant_gain(right[best].astype(np.float64) - right[start].astype(np.float64), z)
    pick = best if changed else start
    calls = decided == Decision.EXECUTE
    missed = (~calls & ~needs_none[None, :]).sum(axis=1) / max(int((~needs_none).sum()), 1)
    false_calls = (calls & needs_none[None, :]).sum(axis=1) / max(int(needs_none.sum()), 1)
    curve = tuple(ThresholdPoint(float(t), float(accuracy[i]), float(missed[i]), float(false_calls[i]))
                  for i, t in enumerate(targets))
    return ThresholdResult(target=float(targets[pick]), base_target=float(current), accuracy=float(accuracy[pick]),
                           base_accuracy=float(accuracy[start]), gain_stderr=stderr, changed=changed,
                           n_tool=int((~needs_none).sum()), n_no_tool=int(needs_none.sum()), curve=curve)


def decision_at(model: DecisionModel, result: SearchResult, catalog: Catalog, *, target: float | None,
                clean: float | None) -> Decision:
    """The decision a search at the operating point ``target`` / ``clean`` (None: the model's) gives ``result``
    (searched at another one): :func:`toolrag.decision.policy.choose`, the policy the search applies."""
    if result.decided_by is not DecisionSource.MODEL or result.scores is None or not result.ids:
        return result.decision
    eligible = [may_inject(tool) for tool_id in result.ids if (tool := catalog.get(tool_id)) is not None]
    features = np.array([result.decision_features.get(name, math.nan) for name in FEATURES], dtype=np.float64)
    return choose(result.scores, operating_point(model, target=target, clean=clean,
                                                 history=model.reads_history(features)),
                  change_reader=result.decision_features.get("change_reader", 0.0) > 0,
                  top_eligible=bool(eligible and eligible[0]), offer=any(eligible))
