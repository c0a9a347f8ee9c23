"""A 2-D map of the tool space: UMAP (PCA for tiny catalogs), look-alike pairs and a Plotly figure.

Why: a catalog owner sees at a glance which tools crowd each other (look-alikes confuse the retriever and
the LLM alike) and where a request lands among them.

- :func:`project` maps the tools' text vectors (unit rows) to 2-D. UMAP (cosine metric, ``n_neighbors =
  min(15, n - 1)``) needs a neighbourhood graph, so catalogs under :data:`UMAP_MIN_POINTS` tools, or a UMAP
  failure, fall back to PCA (an SVD of the centred vectors). Projections are cached in memory by a hash of the
  vectors, so re-drawing the map after a search costs nothing.
- :meth:`Projection.place` puts a query vector on the map with the fitted model's ``transform``: UMAP's
  own out-of-sample embedding, or the PCA projection onto the same two axes.
- :func:`warm_up` imports umap and fits a tiny set once so numba compiles off the request path
  (``NUMBA_CACHE_DIR`` points under the data dir so later processes reuse the compiled code).
- :func:`tool_space_figure` never raises: on any failure it returns a figure that shows the error.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from toolrag.config import set_default
from toolrag.decision.view import LOOKALIKE
from toolrag.errors import ModelUnavailable

__all__ = [
    "UMAP_MIN_POINTS",
    "Projection",
    "error_figure",
    "lookalike_pairs",
    "project",
    "start_warm_up",
    "tool_space_figure",
    "umap_ready",
    "warm_up",
]

log = logging.getLogger(__name__)

#: Below this many tools UMAP's neighbourhood graph is too thin to mean anything: PCA is used instead.
UMAP_MIN_POINTS = 20
#: Default cosine threshold for look-alike pairs (the decision's, :data:`toolrag.decision.view.LOOKALIKE`).
LOOKALIKE_THRESHOLD = LOOKALIKE
_CACHE_SIZE = 8
#: Category colours (no pure red: red lines mark look-alike pairs).
_PALETTE = ("#2E91E5", "#E15F99", "#1CA71C", "#DA16FF", "#B68100", "#750D86", "#EB663B", "#511CFB",
            "#00A08B", "#FB00D1", "#6C7C32", "#778AAE", "#862A16", "#A777F1", "#620042", "#1616A7",
            "#DA60CA", "#6C4516", "#0D2A63", "#AF0038")
_SEED = 42
_cache: OrderedDict[str, Projection] = OrderedDict()
_cache_lock = threading.Lock()
_warm_lock = threading.Lock()
_warmed = False


class _ToolLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def images(self) -> Sequence[Any]: ...


@dataclass(frozen=True)
class Projection:
    """2-D coordinates of ``ids`` (rows of ``coords``) and the fitted model that can place new vectors."""

    ids: tuple[str, ...]
    coords: np.ndarray
    method: Literal["umap", "pca"]
    model: Any
    note: str = ""

    def place(self, vector: np.ndarray) -> np.ndarray:
        """The 2-D position of one vector (same space as the fitted ones)."""
        v = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        if self.method == "umap":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                return np.asarray(self.model.transform(v), dtype=np.float64)[0]
        mean, axes = self.model
        return np.asarray((v - mean) @ axes.T, dtype=np.float64)[0]


def _pca(vectors: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Project onto the two leading principal axes (zero axes pad a catalog of one or two tools)."""
    x = np.asarray(vectors, dtype=np.float64)
    mean = x.mean(axis=0, keepdims=True)
    centred = x - mean
    axes = np.zeros((2, x.shape[1]))
    if len(x) > 1:
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        k = min(2, len(vt))
        axes[:k] = vt[:k]
        # Fix each axis's sign (the SVD's is arbitrary) so the map does not flip between runs.
        for i in range(k):
            if axes[i][np.argmax(np.abs(axes[i]))] < 0:
                axes[i] = -axes[i]
    return centred @ axes.T, (mean, axes)


def _umap(vectors: np.ndarray) -> tuple[np.ndarray, Any]:
    try:
        import umap
    except ImportError as exc:  # pragma: no cover - umap-learn is a pinned dependency of the app extra
        raise ModelUnavailable("the tool map's UMAP needs umap-learn, which is not installed here: pip install "
                               "'toolrag[app]' (or umap-learn); the map is drawn with PCA meanwhile") from exc
    n = len(vectors)
    model = umap.UMAP(n_neighbors=min(15, n - 1), n_components=2, metric="cosine", random_state=_SEED,
                      init="spectral" if n > 30 else "random", min_dist=0.1)
    with warnings.catch_warnings():  # "n_jobs overridden by random_state": deterministic maps are wanted
        warnings.simplefilter("ignore", UserWarning)
        coords = model.fit_transform(np.asarray(vectors, dtype=np.float32))
    return np.asarray(coords, dtype=np.float64), model


def _key(vectors: np.ndarray, ids: Sequence[str], method: str) -> str:
    h = hashlib.sha256()
    h.update(method.encode())
    h.update(str(vectors.shape).encode())
    h.update(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
    h.update("\x1f".join(ids).encode("utf-8"))
    return h.hexdigest()


def project(vectors: np.ndarray, ids: Sequence[str], *,
            method: Literal["auto", "umap", "pca"] = "auto") -> Projection:
    """2-D coordinates of ``vectors`` (one row per id), cached by a hash of the vectors and ids.

    ``auto`` uses UMAP from :data:`UMAP_MIN_POINTS` tools up and PCA below (or when UMAP fails, with the
    reason in ``note``); ``umap`` still falls back to PCA when UMAP cannot run.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(vectors) != len(ids):
        raise ValueError(f"need one vector row per id: got shape {vectors.shape} for {len(ids)} ids")
    key = _key(vectors, ids, method)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    n = len(vectors)
    result: Projection | None = None
    note = ""
    wants_umap = method == "umap" or (method == "auto" and n >= UMAP_MIN_POINTS)
    if wants_umap and n >= 3:
        try:
            start = time.perf_counter()
            coords, model = _umap(vectors)
            result = Projection(tuple(ids), coords, "umap", model)
            log.info("UMAP of %d tools in %.2f s", n, time.perf_counter() - start)
        except Exception as exc:  # umap/numba can fail in many ways; the map must still be drawn
            note = f"UMAP failed ({type(exc).__name__}: {exc}); showing PCA instead"
            log.warning(note)
    elif wants_umap:
        note = f"only {n} tools: PCA instead of UMAP"
    elif n < UMAP_MIN_POINTS and method == "auto":
        note = f"{n} tools (< {UMAP_MIN_POINTS}): PCA instead of UMAP"
    if result is None:
        coords, model = _pca(vectors)
        result = Projection(tuple(ids), coords, "pca", model, note)
    with _cache_lock:
        _cache[key] = result
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return result


def lookalike_pairs(vectors: np.ndarray, ids: Sequence[str], *,
                    threshold: float = LOOKALIKE_THRESHOLD) -> list[tuple[str, str, float]]:
    """Tool pairs whose text vectors have cosine >= ``threshold``, most similar first (ties by ids).

    Rows are normalised here, so the result is a true cosine even for vectors that are not unit-length.
    """
    x = np.asarray(vectors, dtype=np.float64)
    if len(x) < 2:
        return []
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms == 0, 1.0, norms)
    sims = x @ x.T
    rows, cols = np.nonzero(np.triu(sims >= threshold, k=1))
    pairs = [(ids[i], ids[j], float(sims[i, j])) for i, j in zip(rows.tolist(), cols.tolist(), strict=True)]
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    return pairs


def warm_up(data_dir: str | Path | None = None) -> float:
    """Import umap and run a tiny fit + transform so numba compiles now, not on the first map request.

    Sets ``NUMBA_CACHE_DIR`` (unless already set) to ``<data_dir>/numba`` so the compiled code is reused by
    later processes. Returns the seconds spent; safe to call from several threads (runs once).
    """
    global _warmed
    start = time.perf_counter()
    with _warm_lock:
        if _warmed:
            return 0.0
        if data_dir is not None:
            cache = Path(data_dir) / "numba"
            cache.mkdir(parents=True, exist_ok=True)
            set_default("NUMBA_CACHE_DIR", str(cache))
        rng = np.random.default_rng(0)
        data = rng.normal(size=(UMAP_MIN_POINTS + 5, 8)).astype(np.float32)
        _, model = _umap(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model.transform(data[:1])
        _warmed = True
    took = time.perf_counter() - start
    log.info("UMAP warm-up took %.1f s", took)
    return took


def umap_ready() -> bool:
    """True once :func:`warm_up` has finished: UMAP then runs in a fraction of a second."""
    return _warmed


def start_warm_up(data_dir: str | Path | None = None) -> threading.Thread:
    """Run :func:`warm_up` in a daemon thread (an app calls this at start); failures are only logged."""

    def run() -> None:
        try:
            warm_up(data_dir)
        except Exception:
            log.exception("UMAP warm-up failed; the map will fall back to PCA if UMAP keeps failing")

    thread = threading.Thread(target=run, name="toolrag-umap-warmup", daemon=True)
    thread.start()
    return thread


# ------------------------------------------------------------------------------------------------- figure


def error_figure(message: str) -> Any:
    """An empty figure that shows ``message`` (what the UI gets instead of an exception)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font={"color": "#b00020", "size": 14})
    fig.update_layout(xaxis={"visible": False}, yaxis={"visible": False}, height=520,
                      title="Tool space unavailable")
    return fig


def _wrap(text: str, width: int = 70, limit: int = 280) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "<br>".join(text[i:i + width] for i in range(0, len(text), width))


def tool_space_figure(
    tools: Sequence[_ToolLike],
    vectors: np.ndarray,
    *,
    query_vector: np.ndarray | None = None,
    query_label: str = "query",
    top_ids: Sequence[str] = (),
    pairs: Sequence[tuple[str, str, float]] | None = None,
    threshold: float = LOOKALIKE_THRESHOLD,
    method: Literal["auto", "umap", "pca"] = "auto",
    note: str = "",
) -> Any:
    """The tool map: one trace per category (diamonds = tools with example images), look-alike pairs as
    red lines, the query as a star with dotted lines to its ``top_ids``. Never raises: errors become a
    figure with the message. ``pairs`` defaults to :func:`lookalike_pairs` at ``threshold``; ``note`` is
    added to the subtitle (e.g. why PCA is shown)."""
    try:
        return _figure(tools, vectors, query_vector, query_label, top_ids, pairs, threshold, method, note)
    except Exception as exc:
        log.exception("tool space figure failed")
        return error_figure(f"Could not draw the tool space: {type(exc).__name__}: {exc}")


def _figure(tools: Sequence[_ToolLike], vectors: np.ndarray, query_vector: np.ndarray | None,
            query_label: str, top_ids: Sequence[str], pairs: Sequence[tuple[str, str, float]] | None,
            threshold: float, method: Literal["auto", "umap", "pca"], note: str) -> Any:
    import plotly.graph_objects as go

    if not tools:
        return error_figure("The catalog is empty: add a tool in the Profiles tab.")
    ids = [t.id for t in tools]
    proj = project(vectors, ids, method=method)
    xy = {tool_id: proj.coords[i] for i, tool_id in enumerate(proj.ids)}
    fig = go.Figure()
    if pairs is None:
        pairs = lookalike_pairs(vectors, ids, threshold=threshold)
    if pairs:
        xs: list[float | None] = []
        ys: list[float | None] = []
        for a, b, _ in pairs:
            if a in xy and b in xy:
                xs += [xy[a][0], xy[b][0], None]
                ys += [xy[a][1], xy[b][1], None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"look-alike pairs ({len(pairs)})",
                                 line={"color": "#d62728", "width": 2}, hoverinfo="skip"))
    categories = sorted({t.category for t in tools})
    for n, category in enumerate(categories):
        members = [t for t in tools if t.category == category]
        fig.add_trace(go.Scatter(
            x=[xy[t.id][0] for t in members], y=[xy[t.id][1] for t in members], mode="markers",
            name=category,
            marker={"size": 11, "symbol": ["diamond" if t.images else "circle" for t in members],
                    "color": _PALETTE[n % len(_PALETTE)], "line": {"width": 1, "color": "#333"}},
            customdata=[[t.name, t.id, _wrap(t.description), len(t.images)] for t in members],
            hovertemplate="<b>%{customdata[0]}</b> (%{customdata[1]})<br>%{customdata[2]}"
                          "<br>example images: %{customdata[3]}<extra>" + category + "</extra>",
        ))
    if any(t.images for t in tools):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="◆ has example images",
                                 marker={"symbol": "diamond", "size": 11, "color": "#999"}))
    if query_vector is not None:
        q = proj.place(query_vector)
        tops = [t for t in top_ids if t in xy]
        if tops:
            xs = []
            ys = []
            for tool_id in tops:
                xs += [float(q[0]), xy[tool_id][0], None]
                ys += [float(q[1]), xy[tool_id][1], None]
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"query → top-{len(tops)}",
                                     line={"color": "#555", "width": 1.5, "dash": "dot"}, hoverinfo="skip"))
        fig.add_trace(go.Scatter(
            x=[float(q[0])], y=[float(q[1])], mode="markers", name="query",
            marker={"symbol": "star", "size": 20, "color": "#ffbf00", "line": {"width": 1.5}},
            text=[_wrap(query_label)], hovertemplate="<b>query</b><br>%{text}<extra></extra>",
        ))
    subtitle = f"{proj.method.upper()} of {len(ids)} tool text vectors (cosine)"
    for extra in (proj.note, note):
        if extra:
            subtitle += f" · {extra}"
    fig.update_layout(
        title={"text": f"Tool space<br><sup>{subtitle}</sup>"}, height=600, template="plotly_white",
        legend={"title": {"text": "category"}}, margin={"l": 20, "r": 20, "t": 70, "b": 20},
        xaxis={"showticklabels": False, "title": None, "zeroline": False},
        yaxis={"showticklabels": False, "title": None, "zeroline": False},
    )
    return fig
