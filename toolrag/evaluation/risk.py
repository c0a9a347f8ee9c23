"""The label-free risk of each tool, from requests derived from its own text and searched for real.

:mod:`toolrag.evaluation.label_free` searches, for every tool, requests nobody wrote for it (:class:`Probe`):
its own text (name, description, tags) on the index as it is, and each sentence of its description left out
of its document. This module turns those outcomes into a risk per tool (:class:`ToolRisk`) and the catalog's
estimate (:class:`LabelFreeReport`). Nothing here needs models or an index: pure functions of the probes,
tested on hand-made rows.

The estimate is a logistic model of three features of the probes (:data:`FEATURES`; :func:`risk_model`):

- ``own_first``: whether the tool's own text finds it first;
- ``own_margin``: where the tool's fused-score margin over the runner-up on its own text ranks among the
  checked tools (a percentile, 0 = the smallest margin): how far it stands from its nearest neighbour over
  every signal at once;
- ``sentence_first``: the share of its description sentences that find it first when left out of its
  document.

Its coefficients are fitted by ``python -m bench.label_free --fit`` on the labelled requests of the training
data's catalogs (never the evaluation sets), as the share of a tool's real requests that find it first (and in
the top five), and shipped as package data (:data:`RISK_MODEL_FILE`, ``toolrag/data/risk_model.json``: its
version, the coefficients, what it was fitted on and the command), written by ``python -m bench.label_free
--fit --export`` and read once per process when an estimate first needs it (:func:`risk_model`). How well it
tracks labelled results is measured by the same script on the bundled catalog and the public sets
(docs/label_free.md). Candidates that did not predict were dropped there: the nearest requests of the bundled
bank (they serve only as suggestions), the tool's name as a request, the nearest neighbour's cosine alone.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrag.errors import ModelUnavailable

__all__ = ["FEATURES", "METHOD", "OWN_TEXT", "RISK_MODEL_FILE", "SENTENCE", "TRACKED", "LabelFreeReport", "Probe",
           "RiskModel", "Suggestion", "ToolRisk", "estimate", "features", "likely_rival", "load_risk_model",
           "risk_model", "verdict"]

OWN_TEXT = "own text"
SENTENCE = "sentence"


#: The features the risk model reads, in the order its file lists them.
FEATURES = ("own_first", "own_margin", "sentence_first")
#: The shipped risk model (package data). Refit when the text models or the search change: the features are
#: read through them (docs/label_free.md).
RISK_MODEL_FILE = Path(__file__).resolve().parent.parent / "data" / "risk_model.json"
#: The command that fits the risk model and writes :data:`RISK_MODEL_FILE`.
REFIT_COMMAND = "python -m bench.label_free --fit --export"


@dataclass(frozen=True)
class RiskModel:
    """P(found first) and P(in the top five) = sigmoid(intercept + weights . features); ``version`` and
    ``command`` say which fit it is and how it was made (the shipped file carries both)."""

    first: Mapping[str, float]
    top5: Mapping[str, float]
    fitted_on: str
    version: str = ""
    command: str = ""

    @classmethod
    def from_json(cls, data: Any) -> RiskModel:
        """The model of the file's JSON; ValueError saying what is wrong for anything but :meth:`to_json`'s shape
        over :data:`FEATURES`."""
        if not isinstance(data, dict):
            raise ValueError(f"it holds {type(data).__name__}, not an object")
        missing = [k for k in ("version", "features", "first", "top5", "fitted_on", "command") if k not in data]
        if missing:
            raise ValueError(f"it lacks {', '.join(missing)}")
        if data["features"] != list(FEATURES):
            raise ValueError(f"its features {data['features']!r} are not this toolrag's {list(FEATURES)}")
        for key in ("version", "fitted_on", "command"):
            if not isinstance(data[key], str) or not data[key].strip():
                raise ValueError(f"its {key} is not a non-empty text")
        heads = {}
        for head in ("first", "top5"):
            weights = data[head]
            if not isinstance(weights, dict) or set(weights) != {"intercept", *FEATURES}:
                raise ValueError(f"its {head} coefficients must be exactly intercept, {', '.join(FEATURES)}")
            bad = [k for k, v in weights.items()
                   if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)]
            if bad:
                raise ValueError(f"its {head} coefficients {', '.join(sorted(bad))} are not finite numbers")
            heads[head] = {k: float(weights[k]) for k in ("intercept", *FEATURES)}
        return cls(heads["first"], heads["top5"], data["fitted_on"], data["version"], data["command"])

    def to_json(self) -> dict[str, Any]:
        """What :data:`RISK_MODEL_FILE` holds (:meth:`from_json` reads it back)."""
        return {"version": self.version, "features": list(FEATURES), "first": dict(self.first),
                "top5": dict(self.top5), "fitted_on": self.fitted_on, "command": self.command}


def load_risk_model(path: Path = RISK_MODEL_FILE) -> RiskModel:
    """The risk model in ``path``; ModelUnavailable naming the file and the fix when it is missing, unreadable or
    malformed (the label-free estimate cannot be made without it)."""
    fix = f"reinstall toolrag, or write it again with {REFIT_COMMAND}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelUnavailable(f"the label-free risk model {path} cannot be read ({exc.strerror or exc}); "
                               f"{fix}") from None
    try:
        return RiskModel.from_json(json.loads(text))
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise ModelUnavailable(f"the label-free risk model {path} is malformed ({exc}); {fix}") from None


@functools.lru_cache(maxsize=1)
def risk_model() -> RiskModel:
    """The shipped risk model (:data:`RISK_MODEL_FILE`), read once per process, when first needed."""
    return load_risk_model(RISK_MODEL_FILE)

#: How the estimate is made, in words (the report shows it next to the figures).
METHOD = ("estimated from the descriptions alone, through the real search: each tool's own text (its margin over "
          "the nearest tool) and its first two description sentences, each left out of its document, are searched "
          "as requests; a logistic model fitted on labelled requests of the training catalogs turns them into the "
          "chance that a real request finds the tool first (or in the top five)")


#: How well the estimate tracked labelled results where both exist (``python -m bench.label_free``,
#: docs/label_free.md); shown beside the estimate.
TRACKED = ("on the bundled catalog (77 tools, its own examples each left out) it agreed with the labelled result "
           "for 85.7% of the tools, where a constant 'fine' scores 88.3% (kappa 0.09): that labelled result barely "
           "repeats itself (split-half 0.19); on MetaTool (199 tools, 12 real requests each) 71.4% against 66.8% "
           "(kappa 0.30, AUC 0.71); over ten catalogs it ranks tools by risk better than chance (AUC 0.54 to 0.88) "
           "except the bundled one (0.44), and its level can be far off (Gorilla HF: 80% of the tools at risk, 44% "
           "flagged). Read it as where to look first, not as a measurement (docs/label_free.md)")


@dataclass(frozen=True)
class Probe:
    """One request derived from a tool's text, searched through :meth:`ToolRetriever.search`."""

    tool_id: str
    kind: str
    """``own text`` (the tool's name, description and tags, on the index as it is) or ``sentence`` (one
    description sentence, left out of the tool's document)."""
    query: str
    rank: int | None
    winner: str | None
    rival: str | None
    """The best other tool: the winner when the tool lost, the runner-up when it came first."""
    margin: float | None
    """Fused score of the tool minus the rival's (negative when it lost; None when it was not returned)."""
    signals: Mapping[str, float] = field(default_factory=dict)
    """Per signal present for both: the tool's normalised score minus the rival's."""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "query": self.query, "rank": self.rank, "winner": self.winner, "rival": self.rival,
                "margin": None if self.margin is None else round(self.margin, 6),
                "signals": {k: round(v, 6) for k, v in self.signals.items()}}


@dataclass(frozen=True)
class Suggestion:
    """A request of the bank that the real search sends to the tool, to accept as an example."""

    query: str
    source: str
    margin: float
    """Fused score of the tool over the runner-up for this request."""

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "source": self.source, "margin": round(self.margin, 6)}


@dataclass(frozen=True)
class ToolRisk:
    """One tool's label-free estimate and what to do about it."""

    tool_id: str
    name: str
    p_first: float
    p_top5: float
    rival: str | None
    """The tool most likely to win its requests instead."""
    rival_cosine: float | None
    shared_words: tuple[str, ...]
    """The words of the tool's text that score for the rival too (BM25), most alike first."""
    fields: tuple[str, ...]
    """Lint codes of missing or generic fields (``description-repeats-name``, ``short-description``, ...)."""
    probes: tuple[Probe, ...]
    suggestions: tuple[Suggestion, ...] = ()

    @property
    def at_risk(self) -> bool:
        """A real request is estimated more likely to land elsewhere than on this tool first."""
        return self.p_first < 0.5

    @property
    def verdict(self) -> str:
        return verdict(self.p_first, self.p_top5, self.rival)

    def reason(self) -> str:
        """Why, in one line: the rival, the margin on its own text and the words they share."""
        own = next((p for p in self.probes if p.kind == OWN_TEXT), None)
        parts = []
        if own is not None and own.rank != 1 and own.winner:
            parts.append(f"its own description finds {own.winner} first")
        elif own is not None and own.margin is not None and self.rival:
            parts.append(f"its own description leads {self.rival} by only {own.margin:.2f}")
        sentences = [p for p in self.probes if p.kind == SENTENCE]
        if sentences:
            parts.append(f"{sum(p.rank == 1 for p in sentences)}/{len(sentences)} description sentences find it "
                         "first when left out")
        if self.shared_words:
            parts.append("shared words: " + ", ".join(self.shared_words))
        if self.rival_cosine is not None and self.rival:
            parts.append(f"text cosine with {self.rival} {self.rival_cosine:.2f}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"tool_id": self.tool_id, "name": self.name, "p_first": round(self.p_first, 4),
                "p_top5": round(self.p_top5, 4), "at_risk": self.at_risk, "verdict": self.verdict,
                "rival": self.rival, "rival_cosine": None if self.rival_cosine is None else round(self.rival_cosine, 4),
                "shared_words": list(self.shared_words), "fields": list(self.fields), "reason": self.reason(),
                "probes": [p.to_json() for p in self.probes], "suggestions": [s.to_json() for s in self.suggestions]}


@dataclass(frozen=True)
class LabelFreeReport:
    """The label-free estimate of the checked tools (those without example requests, or every tool)."""

    tools: tuple[ToolRisk, ...]
    method: str = METHOD
    fitted_on: str = field(default_factory=lambda: risk_model().fitted_on)
    searched: int = 0
    encoded: int = 0
    seconds: float = 0.0

    @property
    def at_risk(self) -> tuple[str, ...]:
        return tuple(t.tool_id for t in self.tools if t.at_risk)

    def tool(self, tool_id: str) -> ToolRisk | None:
        return next((t for t in self.tools if t.tool_id == tool_id), None)

    def figures(self) -> dict[str, float | None]:
        """``estimated_found_first`` / ``estimated_found_top5``: the mean estimate over the checked tools (None
        when no tool was checked)."""
        n = len(self.tools)
        return {"estimated_found_first": sum(t.p_first for t in self.tools) / n if n else None,
                "estimated_found_top5": sum(t.p_top5 for t in self.tools) / n if n else None}

    def suggestions(self) -> dict[str, list[str]]:
        """The suggested example requests by tool id (at-risk tools first, in report order)."""
        return {t.tool_id: [s.query for s in t.suggestions] for t in self.tools if t.suggestions}

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "fitted_on": self.fitted_on,
                **{k: None if v is None else round(v, 6) for k, v in self.figures().items()},
                "at_risk": list(self.at_risk), "tools": [t.to_json() for t in self.tools],
                "cost": {"searched": self.searched, "encoded": self.encoded, "seconds": round(self.seconds, 3)}}


def verdict(p_first: float, p_top5: float, rival: str | None) -> str:
    """``found first``, ``top five`` (not first, but in the top five) or ``lost to <rival>``."""
    if p_first >= 0.5:
        return "found first"
    if p_top5 >= 0.5:
        return "top five"
    return f"lost to {rival}" if rival else "lost"


def features(probes: Mapping[str, Sequence[Probe]]) -> dict[str, dict[str, float]]:
    """The model's features of each tool's probes (see the module docstring); percentiles over these tools.

    A tool whose own text was not returned at all has the smallest margin; a tool without description
    sentences to leave out takes ``own_first`` as its ``sentence_first``."""
    margins: dict[str, float] = {}
    out: dict[str, dict[str, float]] = {}
    for tool_id, rows in probes.items():
        own = next((p for p in rows if p.kind == OWN_TEXT), None)
        own_first = 1.0 if own is not None and own.rank == 1 else 0.0
        sentences = [p for p in rows if p.kind == SENTENCE]
        margins[tool_id] = own.margin if own is not None and own.margin is not None else -math.inf
        out[tool_id] = {"own_first": own_first,
                        "sentence_first": sum(p.rank == 1 for p in sentences) / len(sentences) if sentences
                        else own_first}
    for tool_id, pct in _percentiles(margins).items():
        out[tool_id]["own_margin"] = pct
    return out


def _percentiles(values: Mapping[str, float]) -> dict[str, float]:
    """Mid-rank percentile of each value in (0, 1): ties share their mean rank; one value gives 0.5."""
    order = sorted(values.items(), key=lambda kv: kv[1])
    n = len(order)
    out: dict[str, float] = {}
    i = 0
    while i < n:
        j = i
        while j + 1 < n and order[j + 1][1] == order[i][1]:
            j += 1
        pct = ((i + j) / 2 + 0.5) / n
        for k in range(i, j + 1):
            out[order[k][0]] = pct
        i = j + 1
    return out


def estimate(feats: Mapping[str, float], model: RiskModel | None = None) -> tuple[float, float]:
    """(P(found first), P(in the top five)) of one tool's features under ``model`` (default: the shipped
    :func:`risk_model`); the second is never below the first."""
    model = model if model is not None else risk_model()
    def prob(weights: Mapping[str, float]) -> float:
        z = weights.get("intercept", 0.0) + sum(w * feats.get(k, 0.0) for k, w in weights.items() if k != "intercept")
        return 1.0 / (1.0 + math.exp(-z))

    first = prob(model.first)
    return first, max(first, prob(model.top5))


def likely_rival(rows: Sequence[Probe]) -> str | None:
    """The tool that most often won the probes the tool lost, else its runner-up on its own text."""
    lost = Counter(p.winner for p in rows if p.rank != 1 and p.winner)
    if lost:
        return sorted(lost.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    own = next((p for p in rows if p.kind == OWN_TEXT), None)
    return own.rival if own is not None else None
