"""Retrieval settings: one frozen object with documented, measured defaults.

The CLI flags, the app's sliders and library callers all produce a ``Settings`` (``dataclasses.replace`` or
:meth:`Settings.with_overrides`), so every entry point runs the same retrieval with the same defaults. The
default weights and thresholds come from ``bench/tune.py`` (see ``docs/benchmarks.md``), not from taste.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import yaml

from toolrag.errors import SettingsError
from toolrag.fusion import Normalization

__all__ = ["IMAGE_SIGNALS", "SIGNALS", "TEXT_SIGNALS", "Fusion", "Settings"]


class Fusion(str, Enum):
    """How signals are combined: see ``toolrag.fusion`` for the formulas."""

    LATE = "late"    # normalise each signal's scores, then a weighted sum
    EARLY = "early"  # combine the query vectors of one embedding space before scoring, then late-fuse the rest
    RRF = "rrf"      # reciprocal-rank fusion of the per-signal rankings


#: Signals that read the query text (and earlier turns).
TEXT_SIGNALS = ("dense", "dense_en", "bm25")
#: Signals that read the query image.
IMAGE_SIGNALS = ("ocr", "visual", "concepts", "clip")
SIGNALS = TEXT_SIGNALS + IMAGE_SIGNALS

SIGNAL_LABELS = {
    "dense": "dense text (multilingual)",
    "dense_en": "dense text (English model)",
    "bm25": "BM25 keywords",
    "ocr": "OCR text from the image",
    "visual": "visual similarity to example images",
    "concepts": "visual concepts (ImageNet labels)",
    "clip": "CLIP cross-modal",
}

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


def _optional_env(name: str, default: str) -> str | None:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return None if value.strip().lower() in ("none", "off") else value.strip()


def _default_weights() -> dict[str, float]:
    return dict(_DEFAULT_WEIGHTS)


@dataclass(frozen=True)
class Settings:
    """Everything that changes what a search returns. Defaults are the measured, shipped configuration."""

    text_model: str = field(default_factory=lambda: os.environ.get("TOOLRAG_TEXT_MODEL") or "e5")
    """Multilingual text encoder: ``e5`` (packaged offline / Hub online), a local path or a Hub id
    (env ``TOOLRAG_TEXT_MODEL``)."""
    english_model: str | None = field(default_factory=lambda: _optional_env("TOOLRAG_ENGLISH_MODEL", "minilm"))
    """Second dense encoder used for English queries against English tools; ``None`` turns it off
    (env ``TOOLRAG_ENGLISH_MODEL``, ``none`` = off)."""
    clip_model: str | None = None
    """open_clip setting; ``None`` = the default for this environment (off offline, multilingual CLIP online)."""
    rerank_model: str | None = None
    """Cross-encoder for reranking; ``None`` = the default for this environment (none offline)."""
    fusion: Fusion = Fusion.LATE
    normalization: Normalization = Normalization.STANDARD
    weights: Mapping[str, float] = field(default_factory=_default_weights)
    top_k: int = 5
    candidates: int = 50
    """How many tools each signal proposes before exact scoring and fusion (the candidate pool)."""
    rerank: bool = False
    rerank_top_n: int = 20
    clarify_gap: float = 0.01
    """CLARIFY when the top two fused scores differ by less than this (and both are plausible)."""
    no_tool_threshold: float | None = None
    """NO_TOOL when the confidence (calibrated raw similarity) is under this; ``None`` = per-model default."""
    rrf_k: int = 60
    history_weight: float = 0.35
    """Share of the query vector taken by earlier user turns (conversation-aware search)."""

    def __post_init__(self) -> None:
        unknown = set(self.weights) - set(SIGNALS)
        if unknown:
            raise SettingsError(f"unknown signal weight {sorted(unknown)[0]!r}; signals: {', '.join(SIGNALS)}")
        for name, value in self.weights.items():
            if not 0.0 <= float(value) <= 10.0:
                raise SettingsError(f"weight of {name!r} is {value}; use a number between 0 and 10")
        object.__setattr__(self, "weights", {s: float(self.weights.get(s, 0.0)) for s in SIGNALS})
        object.__setattr__(self, "fusion", _enum(Fusion, self.fusion, "fusion"))
        object.__setattr__(self, "normalization", _enum(Normalization, self.normalization, "normalization"))
        _check_range("top_k", self.top_k, 1, 1000)
        _check_range("candidates", self.candidates, 1, 10_000)
        _check_range("rerank_top_n", self.rerank_top_n, 1, 1000)
        _check_range("rrf_k", self.rrf_k, 1, 10_000)
        _check_range("clarify_gap", self.clarify_gap, 0.0, 1.0)
        _check_range("history_weight", self.history_weight, 0.0, 1.0)
        if self.no_tool_threshold is not None:
            _check_range("no_tool_threshold", self.no_tool_threshold, -1.0, 1.0)

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields changed; ``weights`` may be partial (other signals keep their weight)."""
        if "weights" in changes and changes["weights"] is not None:
            merged = dict(self.weights)
            merged.update(changes["weights"])
            changes["weights"] = merged
        changes = {k: v for k, v in changes.items() if v is not None}
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise SettingsError(f"unknown setting {sorted(unknown)[0]!r}")
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_yaml(cls, path: str | Path) -> Settings:
        """Load settings from a YAML mapping whose keys are the field names above."""
        file = Path(path)
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise SettingsError(f"cannot read settings file {file}: {exc}") from None
        if not isinstance(data, dict):
            raise SettingsError(f"{file}: expected a mapping of setting names to values")
        return cls().with_overrides(**data)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["fusion"] = self.fusion.value
        out["normalization"] = self.normalization.value
        return out


def _enum(kind: type[Enum], value: Any, name: str) -> Any:
    try:
        return kind(value.value if isinstance(value, Enum) else str(value).lower())
    except ValueError:
        choices = ", ".join(str(m.value) for m in kind)
        raise SettingsError(f"{name} {value!r} is not one of: {choices}") from None


def _check_range(name: str, value: float, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise SettingsError(f"{name} is {value!r}; use a number from {low} to {high}")
