"""The tool-space map: PCA and UMAP projections, query placement, look-alike pairs and the Plotly figure."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toolrag.evaluation import projection  # numba's cache: tests/conftest.py sets NUMBA_CACHE_DIR


@dataclass(frozen=True)
class FakeTool:
    """Only the attributes the figure reads (the real ToolProfile has them too)."""

    id: str
    name: str
    description: str
    category: str
    images: tuple[Any, ...] = ()


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def clusters(n_per: int, n_clusters: int, dim: int = 48, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_clusters, dim)) * 3
    labels = np.repeat(np.arange(n_clusters), n_per)
    return unit(centres[labels] + rng.normal(size=(len(labels), dim)) * 0.3), labels


def separation(coords: np.ndarray, labels: np.ndarray) -> float:
    """Mean distance between cluster centres over mean distance of points to their own centre."""
    centres = np.stack([coords[labels == k].mean(axis=0) for k in np.unique(labels)])
    spread = np.mean([np.linalg.norm(coords[labels == k] - centres[k], axis=1).mean() for k in np.unique(labels)])
    gaps = [np.linalg.norm(a - b) for i, a in enumerate(centres) for b in centres[i + 1:]]
    return float(np.mean(gaps) / spread)


def test_small_catalog_uses_pca_and_places_a_query_with_the_same_axes() -> None:
    vectors, labels = clusters(4, 3)
    ids = [f"t{i}" for i in range(len(vectors))]
    proj = projection.project(vectors, ids)
    assert proj.method == "pca" and "PCA instead of UMAP" in proj.note
    assert proj.coords.shape == (12, 2) and np.isfinite(proj.coords).all()
    assert separation(proj.coords, labels) > 3
    # A tool's own vector lands exactly on its point; the PCA axes are orthonormal.
    for i in (0, 5, 11):
        np.testing.assert_allclose(proj.place(vectors[i]), proj.coords[i], atol=1e-5)
    _, axes = proj.model
    np.testing.assert_allclose(axes @ axes.T, np.eye(2), atol=1e-6)
    # Cached: the same vectors give the same object, other vectors a new projection.
    assert projection.project(vectors, ids) is proj
    assert projection.project(vectors[::-1].copy(), ids) is not proj


def test_pca_handles_one_and_two_tools() -> None:
    one = projection.project(unit(np.ones((1, 8))), ["a"])
    assert one.coords.shape == (1, 2) and np.allclose(one.coords, 0)
    two = projection.project(unit(np.eye(8)[:2]), ["a", "b"])
    assert two.coords.shape == (2, 2) and np.linalg.norm(two.coords[0] - two.coords[1]) > 0.5


@pytest.mark.slow
def test_umap_separates_clusters_and_places_a_query_near_its_cluster() -> None:
    vectors, labels = clusters(20, 3)  # 60 points: the UMAP path
    ids = [f"t{i}" for i in range(len(vectors))]
    proj = projection.project(vectors, ids)
    assert proj.method == "umap", proj.note
    assert proj.coords.shape == (60, 2) and np.isfinite(proj.coords).all()
    assert separation(proj.coords, labels) > 3
    query = unit(vectors[labels == 1].mean(axis=0, keepdims=True))[0]
    spot = proj.place(query)
    centres = [proj.coords[labels == k].mean(axis=0) for k in range(3)]
    assert int(np.argmin([np.linalg.norm(spot - c) for c in centres])) == 1
    assert projection.warm_up() >= 0.0 and projection.umap_ready()


def test_lookalike_pairs_on_a_hand_made_set() -> None:
    a = np.array([1.0, 0.0, 0.0])
    b = np.array([0.96, 0.28, 0.0])   # cos(a, b) = 0.96
    c = np.array([0.0, 0.0, 2.0])     # not unit length: normalised inside
    d = np.array([0.0, 0.6, 1.6])     # cos(c, d) = 1.6 / |d|
    vectors = np.stack([a, b, c, d])
    # By hand: cos(a,b) = 0.96; cos(c,d) = 1.6 / sqrt(0.36 + 2.56) = 0.9363; cos(b,d) = 0.098; others 0.
    pairs = projection.lookalike_pairs(vectors, ["a", "b", "c", "d"], threshold=0.9)
    assert [(x, y) for x, y, _ in pairs] == [("a", "b"), ("c", "d")]
    assert [s for _, _, s in pairs] == pytest.approx([0.96, 0.9363], abs=1e-4)
    assert len(projection.lookalike_pairs(vectors, ["a", "b", "c", "d"], threshold=0.05)) == 3
    assert projection.lookalike_pairs(vectors, ["a", "b", "c", "d"], threshold=0.99) == []
    assert len(projection.lookalike_pairs(vectors, ["a", "b", "c", "d"], threshold=-1.0)) == 6
    assert projection.lookalike_pairs(vectors[:1], ["a"], threshold=0.0) == []


def test_figure_has_a_trace_per_category_pairs_and_the_query() -> None:
    vectors, labels = clusters(3, 3, seed=5)
    cats = ["finance", "travel", "image"]
    tools = [FakeTool(f"t{i}", f"tool_{i}", f"does thing {i}", cats[k], ("img",) if i % 4 == 0 else ())
             for i, k in enumerate(labels)]
    pairs = projection.lookalike_pairs(vectors, [t.id for t in tools], threshold=0.9)
    assert pairs, "tools in one cluster must look alike"
    fig = projection.tool_space_figure(tools, vectors, query_vector=vectors[0], top_ids=["t0", "t1", "t2"],
                                       pairs=pairs, query_label="帮我报销")
    names = [t.name for t in fig.data]
    assert set(cats) <= set(names)
    assert f"look-alike pairs ({len(pairs)})" in names
    assert "query" in names and "query → top-3" in names
    by_name = {t.name: t for t in fig.data}
    finance = by_name["finance"]
    assert len(finance.x) == 3
    assert finance.customdata[0][0] == "tool_0" and finance.customdata[0][1] == "t0"
    assert list(finance.marker.symbol) == ["diamond" if int(c[1][1:]) % 4 == 0 else "circle"
                                           for c in finance.customdata]
    assert by_name["query"].marker.symbol == "star"
    assert by_name[f"look-alike pairs ({len(pairs)})"].line.color == "#d62728"
    # 3 segments (query -> each top tool), separated by None
    assert len(by_name["query → top-3"].x) == 9


def test_figure_never_raises() -> None:
    tools = [FakeTool("a", "a", "x", "c"), FakeTool("b", "b", "y", "c")]
    fig = projection.tool_space_figure(tools, np.ones((3, 4)))  # 3 rows for 2 tools
    assert not fig.data
    assert "Could not draw the tool space" in fig.layout.annotations[0].text
    empty = projection.tool_space_figure([], np.zeros((0, 4)))
    assert "catalog is empty" in empty.layout.annotations[0].text


@pytest.mark.slow
def test_background_warm_up_finishes(tmp_path: Path) -> None:
    thread = projection.start_warm_up(tmp_path)
    thread.join(timeout=300)
    assert not thread.is_alive() and projection.umap_ready()
