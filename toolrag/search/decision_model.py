"""The decision model: three calibrated probabilities from the features of a whole result.

Logistic regressions over :data:`toolrag.search.features.FEATURES` give P(a permitted tool fits) (against
no tool), and among requests a tool fits P(ambiguous between the top two: ask) and P(the top tool is a right
one); a fourth, over each lower candidate's distance to the top, gives P(this candidate is also a right
tool), which sets how many schemas to inject. All three are fitted per
catalog on simulated requests (:mod:`toolrag.search.simulate`), optionally with labelled ones, and are small
enough to read: one coefficient per feature and class, stored as JSON with the index.

Fitting is Newton's method on the L2-penalised, weighted log-likelihood (pure numpy: a few dozen parameters,
a few thousand rows, 20 iterations), so no machine-learning library is needed at run time or fit time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from toolrag.search.features import FEATURES

__all__ = ["MODEL_VERSION", "DecisionModel", "fit_logistic", "predict_logistic"]

#: Version of the stored format, the features and the simulation; a stored model of another version is refitted.
MODEL_VERSION = 36


def _sigmoid(logit: float) -> float:
    """P(class 0) of a binary model, softmax([logit, 0])[0] = 1 / (1 + e^-logit), without overflow."""
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    e = math.exp(logit)
    return e / (1.0 + e)


def predict_logistic(coef: np.ndarray, intercept: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Class probabilities of a (multinomial) logistic model: softmax([x @ coef.T + intercept, 0]).

    ``coef`` has K-1 rows (the last class is the reference with all-zero coefficients), so a binary model
    has one row and returns [P(class 0), P(class 1)]. ``x`` is (n, d) or (d,); returns (n, K) or (K,).
    """
    single = x.ndim == 1
    logits = np.atleast_2d(x) @ coef.T + intercept
    logits = np.concatenate([logits, np.zeros((logits.shape[0], 1))], axis=1)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    return p[0] if single else p


def fit_logistic(x: np.ndarray, y: np.ndarray, n_classes: int, *, weights: np.ndarray | None = None,
                 l2: float = 1.0, iterations: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Weighted multinomial logistic regression with an L2 penalty on the coefficients (not the intercepts).

    Maximises sum_i w_i log p(y_i | x_i) - l2/2 * ||coef||^2 by Newton's method with step halving; the last
    class is the reference (zero coefficients). ``x`` (n, d) should be standardised; ``y`` holds class
    indices 0..n_classes-1; ``weights`` default to 1. Returns (coef (K-1, d), intercept (K-1,)). A class
    absent from ``y`` gets a very negative intercept (its probability goes to ~0), it is not an error.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"x must be (n, d) and y (n,), got {x.shape} and {y.shape}")
    if n_classes < 2 or (y.size and (y.min() < 0 or y.max() >= n_classes)):
        raise ValueError(f"y must hold class indices 0..{n_classes - 1}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite (impute missing values first)")
    n, d = x.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    k = n_classes - 1
    xb = np.concatenate([x, np.ones((n, 1))], axis=1)  # last column: intercept
    theta = np.zeros((k, d + 1))
    onehot = np.zeros((n, n_classes))
    onehot[np.arange(n), y] = 1.0
    penalty = np.full(d + 1, l2)
    penalty[-1] = 1e-6  # the intercept is (almost) free

    def objective(t: np.ndarray) -> float:
        p = predict_logistic(t[:, :-1], t[:, -1], x)
        return float(-(w * np.log(np.maximum(p[np.arange(n), y], 1e-300))).sum() + 0.5 * (penalty * t * t).sum())

    current = objective(theta)
    for _ in range(iterations):
        p = predict_logistic(theta[:, :-1], theta[:, -1], x)
        resid = (p - onehot)[:, :k] * w[:, None]
        grad = resid.T @ xb + penalty * theta  # (k, d+1)
        hess = np.zeros((k * (d + 1), k * (d + 1)))
        for a in range(k):
            for b in range(k):
                s = w * p[:, a] * ((a == b) - p[:, b])
                block = (xb * s[:, None]).T @ xb
                if a == b:
                    block += np.diag(penalty)
                hess[a * (d + 1):(a + 1) * (d + 1), b * (d + 1):(b + 1) * (d + 1)] = block
        step = np.linalg.solve(hess + 1e-9 * np.eye(len(hess)), grad.ravel()).reshape(k, d + 1)
        scale = 1.0
        while scale > 1e-4:
            trial = theta - scale * step
            value = objective(trial)
            if value <= current:
                break
            scale /= 2
        else:
            break
        theta, previous, current = trial, current, value
        if previous - current < 1e-9 * max(1.0, abs(current)):
            break
    return theta[:, :-1].copy(), theta[:, -1].copy()


@dataclass(frozen=True)
class DecisionModel:
    """A fitted decision model: standardisation, three binary logistic models and the operating point.

    * ``tool``: P(a permitted tool fits) against P(no tool fits);
    * ``ambiguous``: among requests a tool fits, P(ambiguous between the top two);
    * ``right``: among requests a tool fits, P(the top tool is a right one).

    Each is a (1, d) coefficient row on standardised features plus an intercept; class 0 is the event named.
    """

    key: str
    mean: np.ndarray
    scale: np.ndarray
    tool_coef: np.ndarray
    tool_intercept: np.ndarray
    ambiguous_coef: np.ndarray
    ambiguous_intercept: np.ndarray
    right_coef: np.ndarray
    right_intercept: np.ndarray
    select_coef: np.ndarray
    select_intercept: np.ndarray
    select_threshold: float
    no_tool_threshold: float
    """NO_TOOL when P(no tool) reaches this."""
    ambiguous_threshold: float
    """CLARIFY when P(ambiguous) reaches this (set so few simulated clear requests are asked about)."""
    execute_floor: float
    """EXECUTE needs P(top tool right) at least this (else the agent is asked to clarify)."""
    clarify_max_gap: float = math.inf
    """CLARIFY (from P(ambiguous)) only when the top tool leads the second by at most this share of its fused
    score: the upper quartile of the leads among the catalog's own simulated ambiguous requests
    (:data:`toolrag.search.model_fit.LEAD_QUANTILE`). A request whose top tool is far ahead is not a choice
    between the two, however alike the two tools are."""
    reference: Mapping[str, float] = field(default_factory=dict)
    """Typical values of the simulated cases, for the reasons in words (e.g. the examples' top cosine)."""
    summary: Mapping[str, Any] = field(default_factory=dict)
    features: tuple[str, ...] = FEATURES

    def standardise(self, x: np.ndarray) -> np.ndarray:
        """(x - mean) / scale with missing values (NaN) set to the mean."""
        x = np.asarray(x, dtype=np.float64)
        filled = np.where(np.isnan(x), self.mean, x)
        return (filled - self.mean) / self.scale

    def probabilities(self, x: np.ndarray) -> tuple[float, float, float]:
        """(P(the top tool is right), P(ambiguous between the top two), P(no tool fits)) for one feature vector
        (or arrays of them for a matrix). P(ambiguous) = P(a tool fits) * P(ambiguous | a tool fits), and the
        same for P(right)."""
        z = self.standardise(x)
        if z.ndim == 1:
            # one search: the three rows in one product, the softmax of [logit, 0] as a sigmoid (a few numpy
            # calls fewer per search; the same numbers as the matrix path below, tested)
            fit_l, ambiguous_l, right_l = (self._stacked_coef @ z + self._stacked_intercept).tolist()
            fit_p = _sigmoid(fit_l)
            return fit_p * _sigmoid(right_l), fit_p * _sigmoid(ambiguous_l), 1.0 - fit_p
        fits = predict_logistic(self.tool_coef, self.tool_intercept, z)[..., 0]
        ambiguous = predict_logistic(self.ambiguous_coef, self.ambiguous_intercept, z)[..., 0]
        right = predict_logistic(self.right_coef, self.right_intercept, z)[..., 0]
        return fits * right, fits * ambiguous, 1.0 - fits  # type: ignore[return-value]

    @cached_property
    def _stacked_coef(self) -> np.ndarray:
        return np.vstack([self.tool_coef[0], self.ambiguous_coef[0], self.right_coef[0]]).astype(np.float64)

    @cached_property
    def _stacked_intercept(self) -> np.ndarray:
        return np.array([self.tool_intercept[0], self.ambiguous_intercept[0], self.right_intercept[0]],
                        dtype=np.float64)

    def select_probability(self, candidate: np.ndarray) -> float:
        """P(a lower candidate is also a right tool) from its :data:`SELECTION_FEATURES` row."""
        logit = float(self.select_coef[0] @ np.asarray(candidate, dtype=np.float64)) + float(self.select_intercept[0])
        return _sigmoid(logit)

    def coefficients(self) -> dict[str, dict[str, float]]:
        """Per model, the coefficient of each standardised feature: what the model reads."""
        return {name: {f: round(float(v), 4) for f, v in zip(self.features, coef[0], strict=True)}
                for name, coef in (("tool", self.tool_coef), ("ambiguous", self.ambiguous_coef),
                                   ("right", self.right_coef))}

    def to_json(self) -> str:
        def arr(a: np.ndarray) -> list[Any]:
            return list(np.round(np.asarray(a, dtype=np.float64), 8).tolist())

        return json.dumps({
            "version": MODEL_VERSION, "key": self.key, "features": list(self.features),
            "mean": arr(self.mean), "scale": arr(self.scale),
            **{f"{name}_{part}": arr(getattr(self, f"{name}_{part}")) for name in _MODELS
               for part in ("coef", "intercept")},
            "select_threshold": self.select_threshold, "no_tool_threshold": self.no_tool_threshold,
            "ambiguous_threshold": self.ambiguous_threshold, "execute_floor": self.execute_floor,
            "clarify_max_gap": self.clarify_max_gap if math.isfinite(self.clarify_max_gap) else None,
            "reference": dict(self.reference), "summary": dict(self.summary),
        }, ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text: str) -> DecisionModel | None:
        """The model stored by :meth:`to_json`; ``None`` when it is of another version or feature set (refit)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return None
        if not isinstance(data, dict) or data.get("version") != MODEL_VERSION or \
                tuple(data.get("features", ())) != FEATURES:
            return None
        try:
            def get(name: str) -> np.ndarray:
                return _array(data[name], 2 if name.endswith("_coef") else 1)

            return cls(
                key=str(data["key"]), mean=get("mean"), scale=get("scale"), tool_coef=get("tool_coef"),
                tool_intercept=get("tool_intercept"), ambiguous_coef=get("ambiguous_coef"),
                ambiguous_intercept=get("ambiguous_intercept"), right_coef=get("right_coef"),
                right_intercept=get("right_intercept"), select_coef=get("select_coef"),
                select_intercept=get("select_intercept"),
                select_threshold=float(data["select_threshold"]), no_tool_threshold=float(data["no_tool_threshold"]),
                ambiguous_threshold=float(data["ambiguous_threshold"]), execute_floor=float(data["execute_floor"]),
                clarify_max_gap=math.inf if data.get("clarify_max_gap") is None else float(data["clarify_max_gap"]),
                reference={str(k): float(v) for k, v in data.get("reference", {}).items()},
                summary=dict(data.get("summary", {})),
            )
        except (KeyError, TypeError, ValueError):
            return None


_MODELS = ("tool", "ambiguous", "right", "select")


def _array(values: Sequence[Any], ndim: int = 1) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64)
    if out.ndim != ndim or not np.all(np.isfinite(out)):
        raise ValueError("bad array")
    return out


def standardisation(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means (ignoring NaN; 0 for an all-NaN column) and standard deviations (1 where constant)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        counts = np.sum(~np.isnan(x), axis=0)
        mean = np.where(counts > 0, np.nansum(x, axis=0) / np.maximum(counts, 1), 0.0)
    filled = np.where(np.isnan(x), mean, x)
    scale = filled.std(axis=0)
    scale[~(scale > 1e-9)] = 1.0
    return mean, scale


def class_weights(y: np.ndarray, n_classes: int, *, priors: Sequence[float] | None = None) -> np.ndarray:
    """Per-row weights that give each class the total weight priors[c] * n (equal shares by default)."""
    y = np.asarray(y)
    shares = np.full(n_classes, 1.0 / n_classes) if priors is None else np.asarray(priors, dtype=np.float64)
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    per_class = np.where(counts > 0, shares * len(y) / np.maximum(counts, 1), 0.0)
    return per_class[y]


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log-likelihood of the true classes."""
    return float(-np.mean(np.log(np.maximum(p[np.arange(len(y)), y], 1e-12)))) if len(y) else math.nan
