"""Retrieval settings: one frozen object with documented, measured defaults, validated field by field.

The CLI flags, the app's sliders, settings files and library callers all produce a ``Settings``
(:meth:`Settings.with_overrides` or :meth:`Settings.from_yaml`), so every entry point runs the same retrieval
with the same defaults. The default weights and thresholds come from ``bench/tune.py`` (see
``docs/benchmarks.md``), not from taste. Every bad value raises :class:`toolrag.errors.SettingsError` naming
the setting, the value and what is valid.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from toolrag.config import env_setting, optional_setting
from toolrag.env_vars import ENGLISH_MODEL_ENV, TEXT_MODEL_ENV
from toolrag.errors import SettingsError
from toolrag.files import read_yaml_file
from toolrag.signals import IMAGE_SIGNALS, SIGNALS, TEXT_SIGNALS
from toolrag.strict import Section

__all__ = [
    "IMAGE_SIGNALS", "PACKAGED_MODELS", "SIGNALS", "TEXT_SIGNALS",
    "Fusion", "Normalization", "Settings", "settings_or",
]


class Fusion(str, Enum):
    """How signals are combined: see :mod:`toolrag.search.fusion` for the formulas."""

    LATE = "late"    # normalise each signal's scores, then a weighted sum
    EARLY = "early"  # combine the query vectors of one embedding space before scoring, then late-fuse the rest
    RRF = "rrf"      # reciprocal-rank fusion of the per-signal rankings


class Normalization(str, Enum):
    """How raw signal scores are put on one scale before late fusion (see
    :func:`toolrag.search.fusion.normalize`)."""

    STANDARD = "standard"  # standard score z = (x - mean) / std, unbounded; the retriever takes mean and std
    # from the permitted catalog's scores (toolrag.search.adaptive): the shipped default
    MINMAX = "minmax"  # (x - min) / (max - min) in [0, 1]; keeps score gaps, sensitive to outliers
    LOGISTIC = "logistic"  # logistic(z) in (0, 1); robust to one outlier, the mean maps to 0.5
    RANK = "rank"  # 1 - (rank - 1) / n_present in (0, 1]; only the order counts (like RRF)
    NONE = "none"  # identity: for signals already calibrated (probabilities)

    @classmethod
    def _missing_(cls, value: object) -> Normalization | None:
        # "zscore" named the logistic of the z-score before 0.2; settings files that say so keep working.
        return cls.LOGISTIC if isinstance(value, str) and value.strip().lower() == "zscore" else None


#: The model of each role that ships inside the installed packages, by its setting: what every measurement in
#: docs/ was made with, the default everywhere (online or not, on a Space or not), and what an opt-in Hub model
#: of the same role falls back to when it cannot be loaded (:mod:`toolrag.encode.fallback`). ``None``: no
#: packaged weights for that role, so it is off unless set (and a failed opt-in turns it off). The text model
#: has one always: every index needs it.
_PACKAGED_TEXT = "e5"
PACKAGED_MODELS: Mapping[str, str | None] = {
    "text_model": _PACKAGED_TEXT, "english_model": "minilm", "clip_model": None, "rerank_model": None}

# Text signals share 0.7 and image signals 0.3 when an image is given (the seeds' split); within each group
# the split was measured (docs/benchmarks.md). Absent signals' weight is redistributed per candidate.
_DEFAULT_WEIGHTS = {
    "dense": 0.21,
    "dense_en": 0.28,
    "bm25": 0.21,
    "ocr": 0.14,
    "visual": 0.08,
    "concepts": 0.04,
    "clip": 0.04,
}
MAX_WEIGHT = 10.0


def _default_weights() -> dict[str, float]:
    return dict(_DEFAULT_WEIGHTS)


@dataclass(frozen=True)
class Settings:
    """Everything that changes what a search returns. Defaults are the measured, shipped configuration."""

    text_model: str = field(default_factory=lambda: env_setting(TEXT_MODEL_ENV, _PACKAGED_TEXT) or _PACKAGED_TEXT)
    """Multilingual text encoder: ``e5`` (packaged weights, everywhere), a local path or a Hub id (an opt-in
    that falls back to ``e5`` when it cannot be loaded) (env ``TOOLRAG_TEXT_MODEL``)."""
    english_model: str | None = field(
        default_factory=lambda: env_setting(ENGLISH_MODEL_ENV, PACKAGED_MODELS["english_model"]))
    """Second dense encoder used for English queries against English tools: ``minilm`` (packaged), a path or a
    Hub id (falls back to ``minilm``); ``None`` (``none``/``off``/``null`` in files and flags) turns it off
    (env ``TOOLRAG_ENGLISH_MODEL``)."""
    clip_model: str | None = None
    """open_clip setting; ``None`` = ``TOOLRAG_CLIP_MODEL``, else off (no CLIP weights ship in a package)."""
    rerank_model: str | None = None
    """Cross-encoder for reranking; ``None`` = ``TOOLRAG_RERANK_MODEL``, else off (none ship in a package)."""
    fusion: Fusion = Fusion.LATE
    normalization: Normalization = Normalization.STANDARD
    weights: Mapping[str, float] = field(default_factory=_default_weights)
    top_k: int = 5
    candidates: int = 50
    """How many tools each signal proposes before exact scoring and fusion (the candidate pool)."""
    rerank: bool = False
    rerank_top_n: int = 20
    precision_target: float | None = None
    """The decision's operating point: EXECUTE only where the decision model's P(right) reaches the threshold
    that gave this EXECUTE precision on held-out sources (0.5-0.99; ``None``: the model's default, see
    docs/decisions.md). Higher: fewer, surer calls, more questions and answers without a tool."""
    clean_target: float | None = None
    """The decision's other operating point: the share of requests no listed tool serves that get no tool
    injected, as measured on held-out sources (0.5-0.99; ``None``: the model's default). Below the P(no tool)
    threshold it gives, a request the model would not call gets the candidates and a question (CLARIFY) rather
    than nothing. Higher: fewer stray tools, more requests a tool serves answered without one."""
    rrf_k: int = 60
    history_weight: float = 0.35
    """Share of the query vector taken by earlier user turns (conversation-aware search)."""

    def __post_init__(self) -> None:
        if not isinstance(self.text_model, str) or not self.text_model.strip():
            raise SettingsError(f"text_model is {self.text_model!r}; give 'e5', 'minilm', a local "
                                "sentence-transformers folder or a Hugging Face Hub id")
        object.__setattr__(self, "text_model", self.text_model.strip())
        for name in ("english_model", "clip_model", "rerank_model"):
            object.__setattr__(self, name, optional_setting(getattr(self, name), name=name))
        object.__setattr__(self, "weights", _weights(self.weights))
        if not any(w > 0 for w in self.weights.values()):
            raise SettingsError("every signal weight is 0: no signal would score a tool (each would score 0.0, "
                                "listed in catalog order); give at least one signal a weight above 0, e.g. "
                                "weights: {dense: 0.21, bm25: 0.21}")
        object.__setattr__(self, "fusion", _enum(Fusion, self.fusion, "fusion"))
        object.__setattr__(self, "normalization", _enum(Normalization, self.normalization, "normalization"))
        object.__setattr__(self, "top_k", _check_int("top_k", self.top_k, 1, 1000))
        object.__setattr__(self, "candidates", _check_int("candidates", self.candidates, 1, 10_000))
        object.__setattr__(self, "rerank_top_n", _check_int("rerank_top_n", self.rerank_top_n, 1, 1000))
        object.__setattr__(self, "rrf_k", _check_int("rrf_k", self.rrf_k, 1, 10_000))
        object.__setattr__(self, "history_weight", _check_number("history_weight", self.history_weight, 0.0, 1.0))
        if not isinstance(self.rerank, bool):
            raise SettingsError(f"rerank is {self.rerank!r}; use true or false")
        if self.precision_target is not None:
            object.__setattr__(self, "precision_target",
                               _check_number("precision_target", self.precision_target, 0.5, 0.99))
        if self.clean_target is not None:
            object.__setattr__(self, "clean_target", _check_number("clean_target", self.clean_target, 0.5, 0.99))

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with the given fields changed (``None`` is a value: it turns an optional model off or
        restores a per-model default); ``weights`` may be partial (other signals keep their weight)."""
        removed = sorted(set(changes) & set(REMOVED))
        if removed:
            raise SettingsError(f"setting {removed[0]!r} is gone: {REMOVED[removed[0]]}")
        unknown = sorted(set(changes) - _FIELD_NAMES)
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(_FIELD_NAMES), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else "settings: " + ", ".join(sorted(_FIELD_NAMES))
            raise SettingsError(f"unknown setting {unknown[0]!r}; {hint}")
        if "weights" in changes:
            partial = changes["weights"]
            if not isinstance(partial, Mapping):
                raise SettingsError(f"weights is {partial!r}; give a mapping of signal to weight, e.g. "
                                    "weights: {bm25: 0.3}")
            changes["weights"] = {**self.weights, **partial}
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_yaml(cls, path: str | Path) -> Settings:
        """Load settings from a YAML mapping whose keys are the field names above; a bad value names the
        file, its line and the setting."""
        file = Path(path)
        top = Section.of(read_yaml_file(file, "settings file"), file,
                         what="setting names to values, e.g. top_k: 5")
        gone = [k for k in top.names() if k in REMOVED]
        if gone:
            raise SettingsError(f"{top.where(gone[0])}: setting {gone[0]!r} is gone: {REMOVED[gone[0]]}",
                                file=str(file), line=top.line_of(gone[0]), field=str(gone[0]))
        top.check_keys(sorted(_FIELD_NAMES))
        settings = cls()
        for key in top.names():
            try:
                settings = settings.with_overrides(**{key: _plain(top.raw(key))})
            except SettingsError as exc:
                raise SettingsError(f"{top.where(key)}: {exc}", file=str(file), line=top.line_of(key),
                                    field=str(key)) from None
        return settings

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["fusion"] = self.fusion.value
        out["normalization"] = self.normalization.value
        out["weights"] = dict(self.weights)
        return out


_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(Settings))
_DECISION_MODEL = ("the decision is one model learned across many catalogs now (docs/decisions.md); set "
                   "precision_target (0.5-0.99) to trade calls for questions and answers without a tool")
#: Settings of the per-catalog decision rules that the learned decision model replaced, and what to use instead.
REMOVED: Mapping[str, str] = {"clarify_gap": _DECISION_MODEL, "no_tool_threshold": _DECISION_MODEL,
                              "execute_share": _DECISION_MODEL}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _weights(weights: Any) -> dict[str, float]:
    if not isinstance(weights, Mapping):
        raise SettingsError(f"weights is {weights!r}; give a mapping of signal to weight, e.g. weights: "
                            "{dense: 0.2, bm25: 0.3}")
    out = {s: 0.0 for s in SIGNALS}
    for name, value in weights.items():
        if name not in out:
            close = difflib.get_close_matches(str(name), SIGNALS, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise SettingsError(f"unknown signal weight {name!r}; {hint}signals: {', '.join(SIGNALS)}")
        out[name] = _check_number(f"weight of {name!r}", value, 0.0, MAX_WEIGHT)
    return out


def _enum(kind: type[Enum], value: Any, name: str) -> Any:
    choices = ", ".join(str(m.value) for m in kind)
    if not isinstance(value, str | Enum):
        raise SettingsError(f"{name} is {value!r}; choose one of: {choices}")
    try:
        return kind(value.value if isinstance(value, Enum) else str(value).strip().lower())
    except ValueError:
        raise SettingsError(f"{name} {value!r} is not one of: {choices}") from None


def _check_number(name: str, value: Any, low: float, high: float) -> float:
    """``value`` as a float when it is a real number (numpy's included, not a bool) from ``low`` to ``high``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)) \
            or not low <= float(value) <= high:
        raise SettingsError(f"{name} is {value!r}; use a number from {low:g} to {high:g}")
    return float(value)


def _check_int(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int when it is a whole number (numpy's included, not a bool) from ``low`` to ``high``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= int(value) <= high:
        raise SettingsError(f"{name} is {value!r}; use a whole number from {low} to {high}")
    return int(value)


def settings_or(value: Any, default: Settings | None = None) -> Settings:
    """``value`` when it is a :class:`Settings`, ``default`` (else ``Settings()``) when it is ``None``; a TypeError
    naming the type and the fix for anything else (a dict would otherwise be read as "no settings")."""
    if value is None:
        return default if default is not None else Settings()
    if isinstance(value, Settings):
        return value
    raise TypeError(f"settings is a {type(value).__name__}, not toolrag.Settings: give Settings(top_k=3), "
                    "Settings.from_yaml(path) or retriever.settings.with_overrides(top_k=3)")
