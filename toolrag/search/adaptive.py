"""Score-distribution-aware normalisation: each signal's scores as z-scores against the whole catalog.

Why: min-max rescales every signal so that its best candidate gets 1.0, whether that candidate stands far
above the rest of the catalog or barely above it. A keyword match on one rare word and a match on the
request's every word then weigh the same, so no fixed weighting suits both paraphrased requests (MetaTool,
where the dense models must lead) and requests that reuse the tools' own words (Seal-Tools, where BM25
must lead; docs/benchmarks.md). Standardising against the distribution of the signal's scores over the
catalog for this query, z = (x - mean) / std, makes a signal count in proportion to how far its top
candidates stand out: a confident signal dominates that query, a flat one steps back. No squashing (a
logistic would cap exactly the large z values that carry the confidence).

The statistics come from a *reference* set of tools: every permitted tool when there are at most
``REFERENCE_SIZE`` of them, otherwise ``REFERENCE_SIZE`` of them evenly spaced (deterministic). They must
not come from the candidate pool of a large catalog: the pool holds each signal's best tools, whose mean
and spread say nothing about the catalog (``bench/tune.py`` reports both on Seal-Tools dev, 4,076 tools).
Pure functions, vectorised, no models.
"""

from __future__ import annotations

import numpy as np

from toolrag.stats import standard_scores

__all__ = ["REFERENCE_SIZE", "reference_rows", "standardize"]

#: How many permitted tools give the per-query mean and spread of each signal in a large catalog.
REFERENCE_SIZE = 1024


def reference_rows(allowed: np.ndarray, *, limit: int = REFERENCE_SIZE) -> np.ndarray:
    """The rows whose scores define each signal's distribution for one query.

    ``allowed`` = sorted indices of the permitted tools. Returns all of them when there are at most
    ``limit``, else ``limit`` of them at evenly spaced positions (first and last included), so the same
    catalog and filter always give the same reference. Returns int64.
    """
    rows = np.asarray(allowed)
    if rows.ndim != 1 or (rows.size and not np.issubdtype(rows.dtype, np.integer)):
        raise ValueError(f"allowed rows must be a 1-D integer array, got {rows.dtype} {rows.shape}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
        raise ValueError(f"reference size must be an integer >= 2, got {limit!r}")
    if rows.size <= limit:
        return rows.astype(np.int64)
    picks = np.round(np.linspace(0, rows.size - 1, limit)).astype(np.int64)
    return rows[picks].astype(np.int64)


def standardize(
    raw: np.ndarray,
    present: np.ndarray,
    *,
    reference: np.ndarray | None = None,
    reference_present: np.ndarray | None = None,
) -> np.ndarray:
    """z-scores of the present entries of ``raw`` against the distribution of the reference scores.

    z_i = (raw_i - m) / s for present i, with m and s the mean and (population) standard deviation of the
    present reference scores (``reference`` and ``reference_present``; by default the present entries of
    ``raw`` itself). Absent entries become 0.0 (late fusion gives their weight to the signals present).
    When the reference has no spread (s == 0, or fewer than two present values) the signal cannot tell
    tools apart: every present entry gets 0.0. Values are unbounded (not mapped to [0, 1]). Returns float64.
    """
    x = _vector("raw scores", raw)
    mask = _mask("present", present, x.shape[0])
    if (reference is None) != (reference_present is None):
        raise ValueError("give both reference and reference_present, or neither")
    if reference is None:
        ref, ref_mask = x, mask
    else:
        ref = _vector("reference scores", reference)
        ref_mask = _mask("reference_present", reference_present, ref.shape[0])  # type: ignore[arg-type]
    values = x[mask].astype(np.float64)
    sample = ref[ref_mask].astype(np.float64)
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(sample))):
        raise ValueError("raw scores of present candidates must be finite (found NaN or inf)")
    out = np.zeros(x.shape[0], dtype=np.float64)
    scores = standard_scores(values, sample) if values.size else None
    if scores is not None:
        out[mask] = scores
    return out


def _vector(name: str, values: np.ndarray) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    return arr


def _mask(name: str, present: np.ndarray, n: int) -> np.ndarray:
    arr = np.asarray(present)
    if arr.ndim != 1 or arr.shape[0] != n or arr.dtype != np.bool_:
        raise ValueError(f"{name} must be a bool array of shape ({n},), got {arr.dtype} {arr.shape}")
    return arr
