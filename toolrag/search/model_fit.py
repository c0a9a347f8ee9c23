"""Fitting a catalog's decision model on its simulated (and labelled) requests, and its operating point.

:func:`fit_model` turns a :class:`toolrag.search.simulate.Simulation` into a
:class:`toolrag.search.decision_model.DecisionModel`; :mod:`toolrag.search.calibration` decides when to fit,
stores the result and serves it. Pure numpy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from toolrag.search import simulate
from toolrag.search.decision_model import (
    DecisionModel,
    class_weights,
    fit_logistic,
    predict_logistic,
    standardisation,
)
from toolrag.search.features import FEATURES

__all__ = ["LabelledCase", "ambiguous_lead", "fit_model"]

#: Weight of a "tool removed" case relative to the other NO_TOOL cases: the nearest remaining tool is often
#: a sibling that a real request for the removed tool would reasonably be asked about.
REMOVED_WEIGHT = 0.25
#: L2 penalty of the decision and right-tool models (standardised features).
L2 = 10.0
#: Weight of one labelled request against one simulated request when a catalog owner refines the model.
LABEL_WEIGHT = 4.0
#: Shares of the simulated EXECUTE requests the operating point may turn away: asked about for looking
#: ambiguous, and not called for a low P(right) (the execute floor).
CLARIFY_SHARE = 0.04
FLOOR_SHARE = 0.02
#: A request is asked about only when its top tool leads the second by no more than this quantile of the leads
#: among the catalog's simulated ambiguous requests (``clarify_max_gap``). Their largest lead (1.0) is set by one
#: request; the upper quartile did better on every set and the median cost CLARIFY recall (docs/measurements.md).
LEAD_QUANTILE = 0.75
#: Share of the simulated two-tool requests completed by the top five that the selection must complete too.
SELECTION_KEEP = 0.92
#: Features the "a tool fits" model does not read, because in the simulation their link to the class comes from
#: how the cases are made, not from the catalog: on a catalog without Chinese text every Chinese case is a
#: bundled no-tool request (the model would learn "Chinese means no tool"), and a pseudo-request keeps few of
#: its description's words and adds names no tool knows (so word coverage says little there, while real
#: requests that need a tool cover many catalog words). The right-tool model still reads them, the ambiguity model
#: all but ``unknown`` (:data:`AMBIGUITY_FEATURES`).
TOOL_SKIPS = ("cjk", "cover", "cover2", "unknown")
#: What the "a tool fits" model reads when it is fitted from the catalog alone: how strongly the best tool
#: matches (each signal's top score and best z, the fused top score, the image evidence) and how close the request
#: comes to requests that need no tool, plus the request's length and whether it is an image. Not the leads of the
#: top tool over the next ones, the signals' agreement, the look-alike cosine or the change-reader flag: they say
#: how the top tools compare with each other, which is the ambiguity and right-tool models' question; read by the
#: "a tool fits" model they followed how the simulated cases are made (docs/measurements.md). Labelled requests
#: (:func:`fit_model`'s ``labelled``) are real ones: with them it reads every feature but :data:`TOOL_SKIPS`.
TOOL_FEATURES = ("sem_top_raw", "sem_max_z", "en_top_raw", "en_max_z", "kw_top_log", "kw_max_z", "fused_top",
                 "chat_sim", "chat_sim_en", "image", "image_top", "length")
#: What the ambiguity model reads when it is fitted from the catalog alone: how the top tools compare (the leads
#: per signal and fused, the agreement of the signals, the look-alike cosine, how much of the request each of the
#: top two covers), with the fused top score, the request's length and language. Not how strongly the best tool
#: matches or how close the request comes to requests that need no tool, which is the "a tool fits" model's
#: question (docs/measurements.md). With labelled requests it reads every feature.
AMBIGUITY_FEATURES = ("sem_gap_z", "en_gap_z", "kw_gap_z", "fused_top", "fused_gap", "fused_gap3", "agree",
                      "lookalike", "cover", "cover2", "length", "cjk")
#: Folds of the cross-fitting that gives held-out probabilities of the simulated requests.
FOLDS = 5


class LabelledCase:
    """A labelled request's features, the class it should get and whether its top tool was a right one."""

    __slots__ = ("features", "label", "right")

    def __init__(self, features: np.ndarray, label: int, right: bool) -> None:
        self.features, self.label, self.right = np.asarray(features, dtype=np.float64), int(label), bool(right)


def fit_model(sim: simulate.Simulation, key: str, *, labelled: Sequence[LabelledCase] = ()) -> DecisionModel:
    """Fit the models on simulated (and labelled) requests and choose the operating point.

    * tool model: every case, "a tool fits" (EXECUTE, CLARIFY) against NO_TOOL, the two balanced, "tool
      removed" cases at :data:`REMOVED_WEIGHT`; NO_TOOL from P(no tool) >= 0.5. Reads :data:`TOOL_FEATURES`
      (with labelled rows, every feature but :data:`TOOL_SKIPS`).
    * ambiguous model: the cases a tool fits, CLARIFY against EXECUTE, balanced; its threshold lets at most
      :data:`CLARIFY_SHARE` of the simulated EXECUTE cases be asked about (held out by cross-fitting). Reads
      :data:`AMBIGUITY_FEATURES` (with labelled rows, every feature).
    * right model: the cases a tool fits, top tool right or not, unweighted (the simulated rate); the execute
      floor lets at most :data:`FLOOR_SHARE` of the simulated EXECUTE cases be asked about for it.
    * selection model: lower candidates of EXECUTE cases, a right tool or not; threshold 0.5.
    Labelled rows count :data:`LABEL_WEIGHT` times a simulated one.
    """
    start = time.perf_counter()
    kinds = np.array(sim.kinds + ("labelled",) * len(labelled))
    x = np.concatenate([sim.features, np.array([c.features for c in labelled]).reshape(-1, len(FEATURES))])
    y = np.concatenate([sim.label, np.array([c.label for c in labelled], dtype=np.int64)])
    right = np.concatenate([sim.right, np.array([c.right for c in labelled], dtype=bool)])
    mean, scale = standardisation(x)
    z = (np.where(np.isnan(x), mean, x) - mean) / scale
    extra = np.where(kinds == "removed", REMOVED_WEIGHT, 1.0) * np.where(kinds == "labelled", LABEL_WEIGHT, 1.0)
    if labelled:
        skips: tuple[tuple[str, ...], tuple[str, ...]] = (TOOL_SKIPS, ())
    else:
        skips = (tuple(f for f in FEATURES if f not in TOOL_FEATURES),
                 tuple(f for f in FEATURES if f not in AMBIGUITY_FEATURES))
    models = _fit_models(z, y, right, extra, skips)
    if len(sim.selection_y) and 0 < sim.selection_y.sum() < len(sim.selection_y):
        select_coef, select_intercept = fit_logistic(sim.selection_x, 1 - sim.selection_y, 2, l2=0.1)
        select_threshold = _select_threshold(sim, select_coef, select_intercept)
    else:  # nothing to learn from: inject the top tool only
        select_coef, select_intercept = np.zeros((1, sim.selection_x.shape[1])), np.array([-10.0])
        select_threshold = 0.5
    # Held-out probabilities (cross-fitting) for the operating point and the reliability curve.
    held = np.zeros((len(y), 3))  # right, ambiguous, no tool
    folds = np.arange(len(y)) % FOLDS
    for fold in range(FOLDS):
        train, test = folds != fold, folds == fold
        held[test] = np.stack(_probabilities(_fit_models(z[train], y[train], right[train], extra[train], skips),
                                             z[test]), axis=1)
    clear = (y == simulate.EXECUTE) & (held[:, 2] < 0.5)
    ambiguous_threshold = float(np.quantile(held[clear, 1], 1 - CLARIFY_SHARE)) if clear.any() else 0.5
    clarify_max_gap = ambiguous_lead(x[y == simulate.CLARIFY])
    called = clear & (held[:, 1] < ambiguous_threshold)
    floor = float(np.quantile(held[called, 0], FLOOR_SHARE)) if called.any() else 0.0
    wants = y != simulate.NO_TOOL
    ok = wants & right & np.isin(kinds, ("example", "description"))
    reference = {
        "example_cosine": float(np.median(x[ok, FEATURES.index("sem_top_raw")])) if ok.any() else math.nan,
        "chat_sim": float(np.nanmedian(x[kinds == "no_tool", FEATURES.index("chat_sim")]))
        if (kinds == "no_tool").any() else math.nan,
    }
    decided = np.where(held[:, 2] >= 0.5, simulate.NO_TOOL,
                       np.where(held[:, 1] >= ambiguous_threshold, simulate.CLARIFY, simulate.EXECUTE))
    summary = {
        "cases": {str(k): int((kinds == k).sum()) for k in dict.fromkeys(kinds.tolist())},
        "heldout_accuracy": round(float((decided == y).mean()), 4),
        "labelled": len(labelled),
        "fit_seconds": round(time.perf_counter() - start, 3),
        # held-out P(right) and whether the top tool was right, for the requests a tool fits
        "heldout_right": [[round(float(p), 3), int(r)] for p, r in zip(held[wants, 0], right[wants], strict=True)],
    }
    (tool_coef, tool_b), (amb_coef, amb_b), (right_coef, right_b) = models
    return DecisionModel(
        key=key, mean=mean, scale=scale, tool_coef=tool_coef, tool_intercept=tool_b, ambiguous_coef=amb_coef,
        ambiguous_intercept=amb_b, right_coef=right_coef, right_intercept=right_b, select_coef=select_coef,
        select_intercept=select_intercept, select_threshold=select_threshold, no_tool_threshold=0.5,
        ambiguous_threshold=ambiguous_threshold, execute_floor=floor, clarify_max_gap=clarify_max_gap,
        reference={k: v for k, v in reference.items() if math.isfinite(v)}, summary=summary)


def ambiguous_lead(features: np.ndarray, quantile: float = LEAD_QUANTILE) -> float:
    """The ``quantile`` of the relative lead of the top tool over the second, (fused_top - fused_second) /
    |fused_top|, among feature rows (:data:`FEATURES` order; numpy's linear interpolation between sorted leads);
    infinity without rows (no limit). Example: leads 0.1, 0.2, 0.3, 0.5, 0.9 (fused (2.0, 1.8), ...) at 0.75:
    position 0.75 x (5 - 1) = 3 of the sorted leads, 0.5."""
    if not len(features):
        return math.inf
    top = features[:, FEATURES.index("fused_top")]
    gap = features[:, FEATURES.index("fused_gap")]
    lead = gap / np.maximum(np.abs(top), 1e-9)
    lead = lead[np.isfinite(lead)]
    return float(np.quantile(lead, quantile)) if len(lead) else math.inf


Pair = tuple[np.ndarray, np.ndarray]


def _select_threshold(sim: simulate.Simulation, coef: np.ndarray, intercept: np.ndarray) -> float:
    """The highest threshold on P(also a right tool) whose selection still completes at least
    :data:`SELECTION_KEEP` of the simulated two-tool requests that the top five complete.

    Selection of a case = the top tool plus candidates 2, 3, ... while their probability reaches the threshold;
    complete = every right tool selected.
    """
    if not len(sim.selection_case):
        return 0.5
    probs = predict_logistic(coef, intercept, sim.selection_x)[:, 0]
    pairs = [c for c in np.unique(sim.selection_case) if sim.kinds[c] == "pair"]
    rows = {c: np.flatnonzero(sim.selection_case == c) for c in pairs}
    complete_top = [c for c in pairs if (sim.selection_y[rows[c]].sum() >= 1 and sim.right[c])
                    or sim.selection_y[rows[c]].sum() >= 2]
    if not complete_top:
        return 0.5
    for threshold in np.linspace(0.9, 0.05, 18):
        done = 0
        for c in complete_top:
            chosen = 1
            for p in probs[rows[c]]:
                if p < threshold:
                    break
                chosen += 1
            needed = np.flatnonzero(sim.selection_y[rows[c]])
            done += int(not len(needed) or needed.max() + 2 <= chosen)
        if done >= SELECTION_KEEP * len(complete_top):
            return float(threshold)
    return 0.05


def _fit_models(z: np.ndarray, y: np.ndarray, right: np.ndarray, extra: np.ndarray,
                skips: tuple[tuple[str, ...], tuple[str, ...]]) -> tuple[Pair, Pair, Pair]:
    """(tool, ambiguous, right) logistic models; class 0 is the event each one names.

    The tool and ambiguity models do not read the features of ``skips`` (one tuple each: their columns are
    zeroed, so their coefficients are exactly 0)."""
    fits = np.where(y == simulate.NO_TOOL, 1, 0)
    tool = fit_logistic(_without(z, skips[0]), fits, 2, weights=class_weights(fits, 2) * extra, l2=L2)
    wants = y != simulate.NO_TOOL
    amb = np.where(y[wants] == simulate.CLARIFY, 0, 1)
    if 0 < amb.sum() < len(amb):
        ambiguous = fit_logistic(_without(z[wants], skips[1]), amb, 2, weights=class_weights(amb, 2) * extra[wants],
                                 l2=L2)
    else:
        ambiguous = (np.zeros((1, z.shape[1])), np.array([-10.0]))
    good = np.where(right[wants], 0, 1)
    if 0 < good.sum() < len(good):
        right_model = fit_logistic(z[wants], good, 2, weights=extra[wants], l2=L2)
    else:
        right_model = (np.zeros((1, z.shape[1])), np.array([10.0 if good.sum() == 0 else -10.0]))
    return tool, ambiguous, right_model


def _without(z: np.ndarray, features: tuple[str, ...]) -> np.ndarray:
    """``z`` with the columns of ``features`` zeroed (a copy when there are any)."""
    if not features:
        return z
    out = z.copy()
    out[:, [FEATURES.index(f) for f in features]] = 0.0
    return out


def _probabilities(models: tuple[Pair, Pair, Pair], z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P(right), P(ambiguous), P(no tool)) of each row, as :meth:`DecisionModel.probabilities`."""
    (tc, tb), (ac, ab), (rc, rb) = models
    fits = predict_logistic(tc, tb, z)[:, 0]
    return fits * predict_logistic(rc, rb, z)[:, 0], fits * predict_logistic(ac, ab, z)[:, 0], 1.0 - fits
