"""Pure functions that combine per-signal scores into one ranking.

Every array is aligned to one candidate list of n tools. A signal ("dense", "bm25", "image", ...) may be
*absent* for a candidate (``present[i] == False``): e.g. the image signal for a tool without an image
profile. Absent entries never count as a zero score; late fusion hands their weight to the signals that are
present for that candidate. All functions are vectorised: O(n) or O(n log n) per call, no Python loop over
candidates.

Ranks are 1-based everywhere (rank 1 = best); rank 0 means "absent".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from toolrag.settings import Normalization


def _vector(name: str, values: np.ndarray, n: int | None = None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        want = f"({n},)" if n is not None else "1-D"
        raise ValueError(f"{name} must be a {want} array aligned to the candidates, got shape {arr.shape}")
    return arr


def _mask(name: str, present: np.ndarray, n: int) -> np.ndarray:
    arr = _vector(name, present, n)
    if arr.dtype != np.bool_:
        raise ValueError(f"{name} must be a bool array (True = signal present), got dtype {arr.dtype}")
    return arr


def _weight(name: str, weight: float) -> float:
    w = float(weight)
    if not np.isfinite(w) or w < 0:
        raise ValueError(f"weight of signal {name!r} must be a finite number >= 0, got {weight!r}")
    return w


def normalize(raw: np.ndarray, present: np.ndarray, method: Normalization) -> np.ndarray:
    """Put the present entries of ``raw`` on one scale; absent entries become 0.0 and are ignored.

    MINMAX, LOGISTIC and RANK map to [0, 1]; STANDARD gives unbounded z-scores (here against the present
    entries themselves; the retriever uses the whole permitted catalog, :mod:`toolrag.search.adaptive`); NONE
    returns the values as they are. Statistics (min, max, mean, std, ranks) use the present entries only. A
    signal that does not discriminate (all present values equal, or a single present value) gives every
    present candidate the same value: MINMAX 0.0 (the limit "every value is the minimum": the signal adds
    nothing), LOGISTIC 0.5 (z = 0, every value is the mean), STANDARD 0.0, RANK 1.0 (everyone shares rank 1).
    Present values must be finite. Returns float64.
    """
    raw = _vector("raw scores", raw)
    present = _mask("present", present, raw.shape[0])
    try:
        method = Normalization(method)
    except ValueError:
        choices = ", ".join(m.value for m in Normalization)
        raise ValueError(f"unknown normalization {method!r}; choose one of: {choices}") from None
    values = raw.astype(np.float64)
    out = np.zeros(values.shape[0], dtype=np.float64)
    x = values[present]
    if x.size == 0:
        return out
    if not np.all(np.isfinite(x)):
        raise ValueError("raw scores of present candidates must be finite (found NaN or inf)")
    if method is Normalization.MINMAX:
        span = x.max() - x.min()
        out[present] = (x - x.min()) / span if span > 0 else 0.0
    elif method is Normalization.LOGISTIC:
        std = x.std()
        z = (x - x.mean()) / std if std > 0 else np.zeros_like(x)
        out[present] = 1.0 / (1.0 + np.exp(-z))
    elif method is Normalization.STANDARD:
        from toolrag.search.adaptive import standardize

        out = standardize(values, present)
    elif method is Normalization.RANK:
        ranks = competition_ranks(values, present)[present]
        out[present] = 1.0 - (ranks - 1) / x.size
    else:
        out[present] = x
    return out


def competition_ranks(scores: np.ndarray, present: np.ndarray) -> np.ndarray:
    """1-based "1224" competition ranks by descending score; tied scores share the best rank; absent -> 0.

    rank_i = 1 + (number of present candidates with a strictly higher score). Returns int64.
    """
    scores = _vector("scores", scores)
    present = _mask("present", present, scores.shape[0])
    ranks = np.zeros(scores.shape[0], dtype=np.int64)
    x = scores[present].astype(np.float64)
    if x.size:
        if np.isnan(x).any():
            raise ValueError("scores of present candidates must not be NaN")
        ascending = np.sort(x)
        ranks[present] = 1 + x.size - np.searchsorted(ascending, x, side="right")
    return ranks


def _signals(
    arrays: Mapping[str, np.ndarray], weights: Mapping[str, float], what: str
) -> tuple[int, dict[str, float]]:
    if not arrays:
        raise ValueError(f"nothing to fuse: no {what} given; give a computed signal a weight > 0")
    sizes = {name: np.shape(arr) for name, arr in arrays.items()}
    n_values = {s[0] if len(s) == 1 else -1 for s in sizes.values()}
    if len(n_values) != 1 or -1 in n_values:
        raise ValueError(f"{what} must be 1-D arrays of one common length, got shapes {sizes}")
    resolved = {name: _weight(name, weights.get(name, 0.0)) for name in arrays}
    for name, w in weights.items():
        _weight(name, w)
    return n_values.pop(), resolved


def effective_weights(
    present: Mapping[str, np.ndarray], weights: Mapping[str, float]
) -> dict[str, np.ndarray]:
    """Per signal and candidate, the weight late fusion really applies: w_s * p_si / W_i.

    W_i = sum_s w_s * p_si. The weight of signals absent for candidate i is shared among its present
    signals in proportion to their weights; each candidate's effective weights sum to 1 (or are all 0 when
    W_i = 0). Signals missing from ``weights`` have weight 0; weights of signals missing from ``present``
    are ignored (absent everywhere).
    """
    n, w = _signals(present, weights, "presence masks")
    masks = {name: _mask(f"present[{name!r}]", p, n) for name, p in present.items()}
    total = np.zeros(n, dtype=np.float64)
    for name, mask in masks.items():
        total += w[name] * mask
    safe = np.where(total > 0, total, 1.0)
    return {name: np.where(total > 0, w[name] * mask / safe, 0.0) for name, mask in masks.items()}


def late_fusion(
    norm: Mapping[str, np.ndarray],
    present: Mapping[str, np.ndarray],
    weights: Mapping[str, float],
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Weighted mean of normalised scores over the signals present for each candidate.

    fused_i = sum_s w_s * p_si * x_si / W_i with W_i = sum_s w_s * p_si (0 when W_i = 0), i.e. the weight
    of an absent signal is redistributed proportionally among the present ones, per candidate (so a
    signal absent for every candidate gives exactly the fusion without it). contribution_si =
    w_s * p_si * x_si / W_i, so the contributions of a candidate sum to its fused score. ``norm`` values
    are on one scale (see :func:`normalize`: unbounded z-scores by default); every signal in ``norm`` needs a
    ``present`` mask.
    Returns (fused, contributions) as float64 arrays; contributions has one entry per signal in ``norm``.
    """
    missing = sorted(set(norm) - set(present))
    if missing:
        raise ValueError(f"late_fusion needs a presence mask for every signal; missing: {missing}")
    n, _ = _signals(norm, weights, "normalised scores")
    eff = effective_weights({name: present[name] for name in norm}, weights)
    contributions: dict[str, np.ndarray] = {}
    fused = np.zeros(n, dtype=np.float64)
    for name, values in norm.items():
        x = np.asarray(values, dtype=np.float64)
        part = np.where(eff[name] > 0, eff[name] * x, 0.0)  # absent entries may hold anything
        if not np.all(np.isfinite(part)):
            raise ValueError(f"normalised scores of signal {name!r} contain NaN or inf")
        contributions[name] = part
        fused += part
    return fused, contributions


def rrf_fusion(
    ranks: Mapping[str, np.ndarray], weights: Mapping[str, float], *, k: int = 60
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Weighted reciprocal rank fusion: fused_i = sum_s w_s / (k + rank_si) over signals with rank_si > 0.

    Ranks are 1-based (1 = best, see :func:`competition_ranks`); 0 = absent, contributes nothing (no
    redistribution: RRF rewards candidates found by several signals). Returns (fused, contributions).
    """
    if k < 0:
        raise ValueError(f"RRF constant k must be >= 0, got {k}")
    n, w = _signals(ranks, weights, "rank arrays")
    contributions: dict[str, np.ndarray] = {}
    fused = np.zeros(n, dtype=np.float64)
    for name, values in ranks.items():
        r = np.asarray(values)
        if not np.issubdtype(r.dtype, np.integer) or (r < 0).any():
            raise ValueError(f"ranks of signal {name!r} must be integers >= 0 (0 = absent)")
        part = np.where(r > 0, w[name] / (k + np.maximum(r, 1)), 0.0)
        contributions[name] = part
        fused += part
    return fused, contributions


def early_fusion(vectors: Mapping[str, np.ndarray], weights: Mapping[str, float]) -> np.ndarray:
    """One query vector from several query vectors of the same embedding space: unit(sum_s w_s * unit(q_s)).

    Signals with weight 0 or without a weight are skipped. Raises SettingsError when dimensions differ,
    when nothing remains to combine, or when the weighted sum is the zero vector. Returns float32.
    """
    total: np.ndarray | None = None
    dims: dict[str, int] = {}
    for name, vector in vectors.items():
        w = _weight(name, weights.get(name, 0.0))
        if w == 0:
            continue
        v = np.asarray(vector, dtype=np.float64)
        if v.ndim != 1:
            raise ValueError(f"query vector {name!r} must be 1-D, got shape {v.shape}")
        norm = float(np.linalg.norm(v))
        if not np.isfinite(norm) or norm == 0:
            raise ValueError(f"query vector {name!r} is zero or not finite; it cannot be combined")
        dims[name] = v.shape[0]
        if len(set(dims.values())) > 1:
            raise ValueError(f"early fusion needs vectors of one embedding space; dimensions: {dims}")
        total = w * v / norm if total is None else total + w * v / norm
    if total is None:
        raise ValueError(
            f"early fusion has nothing to combine: vectors {sorted(vectors)}, weights {dict(weights)}; "
            "give at least one vector a weight > 0"
        )
    length = float(np.linalg.norm(total))
    if length < 1e-12:
        raise ValueError("early fusion: the weighted query vectors cancel out; change the weights")
    return (total / length).astype(np.float32)


def order(fused: np.ndarray, ids: Sequence[str], priority: np.ndarray | None = None) -> np.ndarray:
    """Candidate indices sorted by fused score desc, then priority desc, then id asc (deterministic).

    ``priority`` (e.g. a tool's declared priority) breaks exact score ties; ids break the rest, so the
    result never depends on input order. Returns int64 indices.
    """
    fused = _vector("fused scores", fused).astype(np.float64)
    n = fused.shape[0]
    if len(ids) != n:
        raise ValueError(f"order() got {n} scores but {len(ids)} ids")
    if not np.all(np.isfinite(fused)):
        raise ValueError("fused scores must be finite to be ordered")
    prio = np.zeros(n) if priority is None else _vector("priority", priority, n).astype(np.float64)
    keys = np.asarray(ids, dtype=str) if n else np.zeros(0, dtype=str)
    return np.lexsort((keys, -prio, -fused)).astype(np.int64)
