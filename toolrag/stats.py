"""The two statistics several layers share, written once: a value's standing in a sample (z-score) and whether a
mean gain over paired rows is more than its standard error (the guard every tuner applies before it changes a
setting). Pure numpy."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["significant_gain", "standard_scores"]


def standard_scores(values: np.ndarray, sample: np.ndarray) -> np.ndarray | None:
    """``(values - mean(sample)) / std(sample)`` (population std), or ``None`` when the sample has fewer than two
    values or no spread (below 1e-12 of its largest magnitude): a signal with no spread tells nothing apart.
    Example: sample 0.1, 0.2, 0.3 (mean 0.2, std 0.0816) and value 0.4: 2.45."""
    sample = np.asarray(sample, dtype=np.float64)
    if sample.size < 2:
        return None
    spread = float(sample.std())
    if spread <= 1e-12 * max(1.0, float(np.abs(sample).max())):
        return None
    return (np.asarray(values, dtype=np.float64) - float(sample.mean())) / spread


def significant_gain(gains: Sequence[float] | np.ndarray, z: float) -> tuple[float, float, bool]:
    """(mean gain, its standard error, whether the mean is above 0 and above ``z`` standard errors) of per-row
    gains (a candidate setting's score minus the current one's on the same rows; sample std, ddof 1)."""
    g = np.asarray(gains, dtype=np.float64)
    if g.size == 0:
        return 0.0, 0.0, False
    mean = float(g.mean())
    stderr = float(g.std(ddof=1) / math.sqrt(g.size)) if g.size > 1 else 0.0
    return mean, stderr, bool(mean > 0 and mean > z * stderr)
