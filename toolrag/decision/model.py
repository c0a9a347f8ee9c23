"""The decision model: one model learned across many catalogs, shipped as package data (``model.json``).

Trained by ``python -m bench.decision_train`` on decision episodes built from the public training sets and
validated leave-one-source-out (docs/decisions.md): two heads, each gradient-boosted trees (or a logistic model,
whichever won there) over :data:`toolrag.decision.view.FEATURES`, monotone where the answer must be (a request
that stands out more for the top tool never lowers P(call)): ``none``, P(no listed tool serves the request), and
``call``, P(the top tool serves it and can be called | a listed tool serves it). They compose one distribution
over what an agent can do, which sums to one: P(right) = (1 - P(none)) P(call), P(ambiguous) = (1 - P(none))
(1 - P(call)) (a tool fits, but which one or what to pass is open: ask), P(no tool). A request with an image is
read by a second pair of heads, fitted with the image episodes too (``image_heads``), and one with earlier turns by
a third (``history_heads``, fitted with conversations too: ``bench.decision_conversations``); the text heads are
fitted on text episodes alone, so drawn pictures and conversations move no decision about a request without them.
A small selection model gives each lower candidate's P(also needed). The file also holds the operating points
measured on held-out sources (the P(right) threshold of each EXECUTE precision target, the P(no tool) threshold of
each share of requests nothing serves kept clean) and its own version: nothing is fitted per catalog.

Evaluated with numpy alone (every tree walked at once, a level per step: about 0.1 ms); no scikit-learn at run
time. A missing or damaged file is reported by :func:`load_model` and the decision falls back
(:data:`toolrag.decision.outcome.DecisionSource.FALLBACK`).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.decision.view import FEATURES, SELECTION_FEATURES

__all__ = ["HEADS", "MODEL_FILE", "DecisionModel", "Ensemble", "load_model", "shipped_model"]

MODEL_FILE = Path(__file__).resolve().parent / "model.json"
#: The heads of the model: P(no tool), P(call | a listed tool serves the request).
HEADS = ("none", "call")
_IMAGE, _HISTORY = FEATURES.index("image"), FEATURES.index("history")


@dataclass(frozen=True)
class Ensemble:
    """A model over a fixed feature list: boosted trees (``kind`` "trees": every tree's nodes in flat arrays,
    raw score per class = baseline + the sum of its trees' leaves; softmax, or a sigmoid for one output) or a
    logistic model (``kind`` "logistic": standardised inputs, NaN read as the training mean)."""

    kind: str
    outputs: int
    baseline: np.ndarray
    arrays: Mapping[str, np.ndarray]

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, inputs: int | None = None) -> Ensemble:
        """The ensemble written by :meth:`to_json`, checked (:meth:`check`) against ``inputs`` features."""
        kind = str(data["kind"])
        if kind not in ("trees", "logistic"):
            raise ValueError(f"unknown model kind {kind!r}")
        arrays = {k: np.asarray(v, dtype=np.int64 if k in _INTS else bool if k in _BOOLS else np.float64)
                  for k, v in data["arrays"].items()}
        ensemble = cls(kind, int(data["outputs"]), np.asarray(data["baseline"], dtype=np.float64), arrays)
        ensemble.check(inputs)
        return ensemble

    def check(self, inputs: int | None) -> None:
        """Raise ``ValueError`` when the arrays cannot be evaluated (a field missing, an index out of range), so
        a damaged file is refused when loaded rather than failing every search."""
        need = ("mean", "scale", "coef") if self.kind == "logistic" else (
            "roots", "depth", "feature", "threshold", "missing_left", "leaf", "left", "right", "output", "value")
        missing = [k for k in need if k not in self.arrays]
        if missing:
            raise ValueError(f"a {self.kind} model lacks {', '.join(missing)}")
        if self.kind == "trees":
            a, nodes = self.arrays, len(self.arrays["leaf"])
            inner = ~a["leaf"]
            for k in ("roots", "left", "right"):
                rows = a[k] if k == "roots" else a[k][inner]
                if len(rows) and (rows.min() < 0 or rows.max() >= nodes):
                    raise ValueError(f"its trees point outside their {nodes} nodes ({k})")
            if len(a["output"]) and (a["output"].min() < 0 or a["output"].max() >= len(self.baseline)):
                raise ValueError("its trees write outside their outputs")
            if inputs is not None and inner.any() and a["feature"][inner].max() >= inputs:
                raise ValueError(f"its trees read a feature beyond the {inputs} it has")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "outputs": self.outputs, "baseline": self.baseline.tolist(),
                "arrays": {k: v.tolist() for k, v in self.arrays.items()}}

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Raw scores (before softmax / sigmoid) of one feature vector."""
        if self.kind == "logistic":
            a = self.arrays
            z = np.where(np.isfinite(x), (x - a["mean"]) / a["scale"], 0.0)
            return np.asarray(self.baseline + a["coef"] @ z)
        a = self.arrays
        node = a["roots"].copy()
        for _ in range(int(a["depth"][0])):
            value = x[a["feature"][node]]
            left = np.where(np.isnan(value), a["missing_left"][node], value <= a["threshold"][node])
            node = np.where(a["leaf"][node], node, np.where(left, a["left"][node], a["right"][node]))
        out = self.baseline.copy()
        np.add.at(out, a["output"], a["value"][node])
        return out

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        raw = self.raw(np.asarray(x, dtype=np.float64))
        if self.outputs == 1:
            return np.array([1.0 / (1.0 + math.exp(-float(raw[0])))])
        shifted = np.exp(raw - raw.max())
        return np.asarray(shifted / shifted.sum())


_INTS = frozenset({"roots", "feature", "left", "right", "output", "depth"})
_BOOLS = frozenset({"missing_left", "leaf"})


@dataclass(frozen=True)
class DecisionModel:
    """The shipped decision model: its heads, the selection model, the operating points and provenance."""

    heads: Mapping[str, Ensemble]
    selection: Ensemble
    points: tuple[tuple[float, float], ...]
    """(EXECUTE precision target, P(right) threshold that reached it on held-out sources), by target."""
    default_target: float
    clean_points: tuple[tuple[float, float], ...]
    """(share of requests nothing serves that get no tool injected, the P(no tool) threshold that kept that share
    clean on held-out sources), by target: the candidates are injected (CLARIFY) below the threshold."""
    default_clean: float
    select_threshold: float
    version: str
    trained: Mapping[str, Any]
    """Provenance: sources, episode counts, held-out results (shown in the app's decision accordion)."""
    image_heads: Mapping[str, Ensemble] = field(default_factory=dict)
    """The heads read when the request has an image (fitted with the image episodes as well): the text heads
    stay those fitted on text alone, so drawn pictures move no decision about a request without one."""
    history_heads: Mapping[str, Ensemble] = field(default_factory=dict)
    """The heads read for a request with earlier turns (and no image): fitted with conversations that moved on
    and follow-ups too, so they read the request's own standing beside the mixed one."""
    history_points: tuple[tuple[float, float], ...] = ()
    """:attr:`points` of the history heads, measured on held-out episodes with earlier turns (empty: the text
    heads' points serve them too). The clean points stay shared: read off the history heads' own held-out
    episodes, they kept more requests that moved on clean but withheld the tool from a third of the follow-ups
    (docs/decision_changes.md)."""

    def operating_point(self, target: float, *, history: bool = False) -> tuple[float, float]:
        """(measured target, its P(right) threshold) serving an EXECUTE precision ``target`` (0-1): the smallest
        measured target at or above it, the highest for a target beyond all (the reason quotes which);
        ``history``: for a request the history heads read (:meth:`reads_history`)."""
        return _nearest(self.history_points if history and self.history_points else self.points, target)

    def execute_threshold(self, target: float, *, history: bool = False) -> float:
        """The P(right) threshold of :meth:`operating_point` for ``target``."""
        return self.operating_point(target, history=history)[1]

    def clean_point(self, target: float) -> tuple[float, float]:
        """(measured share, its P(no tool) threshold) keeping a share ``target`` (0-1) of the requests nothing
        serves clean: the smallest measured share at or above it, the highest for a target beyond all."""
        return _nearest(self.clean_points, target)

    def reads_history(self, features: np.ndarray) -> bool:
        """Whether the history heads read this :data:`FEATURES` vector: earlier turns and no image."""
        x = np.asarray(features, dtype=np.float64)
        return bool(self.history_heads and x[_HISTORY] > 0 and not (self.image_heads and x[_IMAGE] > 0))

    def probabilities(self, features: np.ndarray) -> dict[str, float]:
        """The distribution over what to do for one :data:`FEATURES` vector, summing to one: ``right`` (call the
        top tool), ``ask`` (a tool fits, the call is open), ``none`` (no listed tool serves the request)."""
        x = np.asarray(features, dtype=np.float64)
        heads = self.image_heads if self.image_heads and x[_IMAGE] > 0 else \
            self.history_heads if self.reads_history(x) else self.heads
        none = float(heads["none"].probabilities(x)[0])
        call = float(heads["call"].probabilities(x)[0])
        return {"right": (1.0 - none) * call, "ask": (1.0 - none) * (1.0 - call), "none": none}

    def also_needed(self, rows: np.ndarray) -> list[float]:
        """P(also needed) of each lower candidate (rows of :data:`SELECTION_FEATURES`)."""
        return [float(self.selection.probabilities(row)[0]) for row in rows]

    def also_selected(self, rows: np.ndarray) -> int:
        """How many of the lower candidates ``rows`` (best first, rows of :data:`SELECTION_FEATURES`) an EXECUTE
        injects beside the top tool: the run of them whose P(also needed) reaches :attr:`select_threshold`."""
        count = 0
        for q in self.also_needed(rows):
            if q < self.select_threshold:
                break
            count += 1
        return count

    @classmethod
    def from_json(cls, text: str) -> DecisionModel:
        data = json.loads(text)
        if tuple(data["features"]) != FEATURES or tuple(data["selection_features"]) != SELECTION_FEATURES:
            raise ValueError("its features are not this toolrag's: rebuild it with python -m bench.decision_train")
        points, clean, turn_points = (tuple(sorted((float(t), float(v)) for t, v in data.get(key, ())))
                                      for key in ("operating_points", "clean_points", "history_operating_points"))
        heads = {name: Ensemble.from_json(data["heads"][name], inputs=len(FEATURES)) for name in HEADS}
        pictured, turns = ({name: Ensemble.from_json(data[key][name], inputs=len(FEATURES)) for name in HEADS}
                           if data.get(key) else {} for key in ("image_heads", "history_heads"))
        if any(head.outputs != 1 for head in (*heads.values(), *pictured.values(), *turns.values())):
            raise ValueError("each head must give one probability")
        if not points or not clean or (turn_points and not turns):
            raise ValueError("it has no operating points, or points for the history heads it lacks")
        model = cls(heads, Ensemble.from_json(data["selection"], inputs=len(SELECTION_FEATURES)), points,
                    float(data["default_target"]), clean, float(data["default_clean"]),
                    float(data["select_threshold"]), str(data["version"]), dict(data.get("trained", {})), pictured,
                    turns, turn_points)
        # every tree read once on neutral inputs: a damaged tree (a missing field, an index out of range) fails
        # here, where the decision can fall back, not in every search
        read = [model.probabilities(np.zeros(len(FEATURES)))]
        read += [model.probabilities(np.where(np.arange(len(FEATURES)) == flag, 1.0, 0.0))
                 for flag, extra in ((_IMAGE, pictured), (_HISTORY, turns)) if extra]
        needed = model.also_needed(np.zeros((1, len(SELECTION_FEATURES))))
        if not all(0.0 <= p <= 1.0 for p in (*(v for r in read for v in r.values()), *needed)):
            raise ValueError("its probabilities fall outside 0-1")
        return model

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "features": list(FEATURES),
                           "selection_features": list(SELECTION_FEATURES),
                           "heads": {name: head.to_json() for name, head in self.heads.items()},
                           "image_heads": {name: head.to_json() for name, head in self.image_heads.items()},
                           "history_heads": {name: head.to_json() for name, head in self.history_heads.items()},
                           "selection": self.selection.to_json(), "operating_points": [list(p) for p in self.points],
                           "default_target": self.default_target, "clean_points": [list(p) for p in self.clean_points],
                           "default_clean": self.default_clean,
                           **({"history_operating_points": [list(p) for p in self.history_points]}
                              if self.history_points else {}),
                           "select_threshold": self.select_threshold, "trained": dict(self.trained)},
                          separators=(",", ":"))


def _nearest(points: tuple[tuple[float, float], ...], target: float) -> tuple[float, float]:
    """(measured target, threshold): the smallest measured target at or above ``target``, else the highest."""
    for measured, threshold in points:
        if measured >= target - 1e-9:
            return measured, threshold
    return points[-1]


def load_model(path: Path = MODEL_FILE) -> tuple[DecisionModel | None, str]:
    """The decision model in ``path`` and ``""``, or ``None`` and a note saying why it cannot be used (missing,
    unreadable, damaged, built for other features): the decision then falls back, and says so."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return None, f"the decision model {path.name} cannot be read ({exc.strerror or exc}); reinstall toolrag"
    try:
        model = DecisionModel.from_json(text)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        return None, f"the decision model {path.name} is damaged ({exc}); reinstall toolrag"
    return model, ""


@functools.lru_cache(maxsize=1)
def shipped_model() -> tuple[DecisionModel | None, str]:
    """:func:`load_model` of the packaged file, read once per process (every retriever and the app share it)."""
    return load_model(MODEL_FILE)
