"""Decisions asserted with a margin: a real model's decision is asserted only where it would stay the same if
its probabilities moved by :data:`MARGIN`, more than the cross-machine noise of the encoders moves them
(``python -m bench.encoder_noise``; docs/development.md, "Decisions asserted with a margin"). A case whose
probabilities sit nearer a threshold asserts what the ranking and the invariants guarantee instead."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from toolrag.decision.outcome import Decision, DecisionScores, DecisionSource
from toolrag.decision.policy import choose, operating_point

__all__ = ["MARGIN", "NOISE", "NoisyAnalyzer", "assert_decided", "assert_reaches", "robust"]

#: How far P(right) and P(no tool) may move before an asserted decision must still hold: the 99th percentile of
#: how far they moved between the int8 and the fp32 build of the same encoders on the bundled requests
#: (``python -m bench.encoder_noise``: 0.14 for both; docs/development.md), an upper bound of what another CPU's
#: int8 kernels move.
MARGIN = 0.15
#: Per text signal, the relative size of the perturbation of a request's vector in the noise test (L2 norm of the
#: added noise over the vector's norm): bench.encoder_noise's 99th percentile of 1 - cos between the int8 and the
#: fp32 request vectors (e5 0.0046, MiniLM 0.0115) as a distance, sqrt(2 (1 - cos)).
NOISE = {"dense": 0.096, "dense_en": 0.152}


def robust(result: Any, model: Any, *, margin: float = MARGIN, target: float | None = None,
           clean: float | None = None) -> bool:
    """Whether the policy gives ``result``'s decision for every move of P(right) and P(no tool) by up to
    ``margin`` (an invariant's decision does not read them: always robust)."""
    if result.decided_by is not DecisionSource.MODEL:
        return True
    point = operating_point(model, target=target, clean=clean)
    s = result.scores
    reader = result.decision_features.get("change_reader", 0.0) > 0
    seen = set()
    for dr in (-margin, 0.0, margin):
        for dn in (-margin, 0.0, margin):
            moved = DecisionScores(float(np.clip(s.right + dr, 0, 1)), s.ambiguous,
                                   float(np.clip(s.no_tool + dn, 0, 1)))
            seen.add(choose(moved, point, change_reader=reader))  # the tests' catalogs hold no stuffed tool
    return seen == {result.decision}


def assert_decided(result: Any, expected: Decision, model: Any, **point: Any) -> None:
    """``result`` was decided ``expected`` with the margin :func:`robust` checks."""
    why = f"{result.decision.value} ({result.scores}, {result.decision_reason})"
    assert result.decision is expected, why
    assert robust(result, model, **point), f"decided {expected.value} within {MARGIN} of a threshold: {why}"


def assert_reaches(result: Any, tool: str, model: Any) -> None:
    """``tool`` ranks first and reaches the agent (EXECUTE calls it, CLARIFY offers it), and P(no tool) stays
    :data:`MARGIN` below the point where nothing would be injected: whichever of the two the model picks."""
    point = operating_point(model)
    why = f"{result.decision.value} ({result.scores}, {result.decision_reason})"
    assert result.ids[0] == tool and tool in result.selected, why
    assert result.scores.no_tool < point.inject_below - MARGIN, f"within {MARGIN} of injecting nothing: {why}"


@dataclass
class NoisyAnalyzer:
    """A retriever's query analysis with every request vector moved by a random direction of relative size
    ``size`` (renormalised): what another machine's encoders could give (:data:`NOISE`)."""

    inner: Any
    size: Mapping[str, float]
    seed: int

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def analyze(self, query: str, **kwargs: Any) -> Any:
        """The analysis with every vector moved: the mixed ones and the request's own (``own``, with earlier
        turns), each by its own draw."""
        features = self.inner.analyze(query, **kwargs)
        rng = np.random.default_rng([self.seed, len(query), sum(map(ord, query))])
        return replace(features, vectors=self._moved(features.vectors, rng), own=self._moved(features.own, rng))

    def _moved(self, vectors: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        moved = {}
        for name, vector in vectors.items():
            v = np.asarray(vector, dtype=np.float64)
            noise = rng.normal(size=v.shape)
            noise *= self.size.get(name, 0.0) * np.linalg.norm(v) / max(float(np.linalg.norm(noise)), 1e-12)
            w = v + noise
            w *= np.linalg.norm(v) / max(float(np.linalg.norm(w)), 1e-12)
            moved[name] = w.astype(np.asarray(vector).dtype)
        return moved
