"""Writing a fitted decision model as package data (``toolrag/decision/model.json``), read by numpy alone.

scikit-learn's gradient-boosted trees keep their trees in ``_predictors`` (an array of nodes per tree: feature,
threshold, children, where a missing value goes, leaf value); they are flattened into the arrays of
:class:`toolrag.decision.model.Ensemble`, and the written model is checked against scikit-learn's own
``predict_proba`` on the training rows before the file is replaced: a change of scikit-learn's internals fails
here, never in a search. A logistic model is written as its standardisation and coefficients.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bench.common import REPO

__all__ = ["ensemble_json", "write_model"]


def ensemble_json(model: Any, x: np.ndarray, columns: Sequence[int]) -> dict[str, Any]:
    """The :class:`toolrag.decision.model.Ensemble` JSON of a classifier fitted on ``x[:, columns]``, reading
    full feature rows; checked on ``x``."""
    from toolrag.decision.model import Ensemble

    classes = len(model.classes_)
    outputs = 1 if classes == 2 else classes
    width = x.shape[1]
    if hasattr(model, "toolrag_mean"):
        coef = np.zeros((np.asarray(model.coef_).shape[0], width))
        coef[:, columns] = np.asarray(model.coef_)
        mean, scale = np.zeros(width), np.ones(width)
        mean[columns], scale[columns] = model.toolrag_mean, model.toolrag_scale
        data = {"kind": "logistic", "outputs": outputs, "baseline": np.asarray(model.intercept_).tolist(),
                "arrays": {"mean": mean.tolist(), "scale": scale.tolist(), "coef": coef.tolist()}}
    else:
        data = _trees(model, outputs, columns)
    ensemble = Ensemble.from_json(data)
    expected = np.asarray(_proba(model, x[: min(len(x), 3000)][:, columns]))
    got = np.array([ensemble.probabilities(row) for row in x[: len(expected)]])
    got = np.column_stack([1 - got[:, 0], got[:, 0]]) if outputs == 1 else got
    worst = float(np.max(np.abs(expected - got))) if len(got) else 0.0
    if worst > 1e-6:
        raise RuntimeError(f"the exported model differs from scikit-learn's by {worst:.2e}: not written")
    return data


def _proba(model: Any, x: np.ndarray) -> np.ndarray:
    if hasattr(model, "toolrag_mean"):
        z = np.where(np.isfinite(x), x, model.toolrag_mean)
        return np.asarray(model.predict_proba((z - model.toolrag_mean) / model.toolrag_scale))
    return np.asarray(model.predict_proba(x))


def _trees(model: Any, outputs: int, columns: Sequence[int]) -> dict[str, Any]:
    feature, threshold, left, right, missing, leaf, value, roots, output = [], [], [], [], [], [], [], [], []
    depth = 0
    for per_iteration in model._predictors:
        for k, predictor in enumerate(per_iteration):
            nodes = predictor.nodes
            offset = len(feature)
            roots.append(offset)
            output.append(k)
            depth = max(depth, int(nodes["depth"].max()))
            for node in nodes:
                is_leaf = bool(node["is_leaf"])
                feature.append(0 if is_leaf else int(columns[int(node["feature_idx"])]))
                threshold.append(float(node["num_threshold"]))
                left.append(offset + int(node["left"]) if not is_leaf else 0)
                right.append(offset + int(node["right"]) if not is_leaf else 0)
                missing.append(bool(node["missing_go_to_left"]))
                leaf.append(is_leaf)
                value.append(float(node["value"]))
    baseline = np.asarray(model._baseline_prediction, dtype=np.float64).ravel()
    return {"kind": "trees", "outputs": outputs, "baseline": baseline.tolist(),
            "arrays": {"roots": roots, "feature": feature, "threshold": threshold, "left": left, "right": right,
                       "missing_left": missing, "leaf": leaf, "value": value, "output": output,
                       "depth": [depth + 1]}}


def write_model(heads: Mapping[str, Mapping[str, Any]], selection: Mapping[str, Any], *,
                image_heads: Mapping[str, Mapping[str, Any]] | None = None,
                history_heads: Mapping[str, Mapping[str, Any]] | None = None, points: Sequence[tuple[float, float]],
                default_target: float, clean_points: Sequence[tuple[float, float]], default_clean: float,
                select_threshold: float, trained: Mapping[str, Any],
                history_points: Sequence[tuple[float, float]] = ()) -> dict[str, Any]:
    """Write ``toolrag/decision/model.json`` (atomically) and return what was written besides the arrays;
    ``history_points``: the history heads' own EXECUTE thresholds (as ``points``)."""
    from toolrag.decision.model import MODEL_FILE, DecisionModel, Ensemble
    from toolrag.files import write_atomic

    parts = (heads, image_heads, selection, points, clean_points) + ((history_heads,) if history_heads else ()) \
        + ((history_points,) if history_points else ())
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:8]
    version = f"{time.strftime('%Y-%m-%d')}-{digest}"
    model = DecisionModel({k: Ensemble.from_json(v) for k, v in heads.items()}, Ensemble.from_json(selection),
                          tuple(points), default_target, tuple(clean_points), default_clean, select_threshold, version,
                          dict(trained), {k: Ensemble.from_json(v) for k, v in (image_heads or {}).items()},
                          {k: Ensemble.from_json(v) for k, v in (history_heads or {}).items()},
                          tuple(history_points))
    write_atomic(MODEL_FILE, model.to_json())
    return {"file": str(MODEL_FILE.relative_to(REPO)), "version": version, "bytes": MODEL_FILE.stat().st_size}
