"""The saved serving state (restart without reading Chroma), the in-process ANN lists of large catalogs and
the batched evaluation path: each is checked against the plain path it replaces, with the real models."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toolrag.catalog.loader import load_catalog
from toolrag.evaluation.evaluator import Evaluator
from toolrag.evaluation.queries import load_queries
from toolrag.index import restore
from toolrag.index.ann import PROJECTED_DIM, IvfIndex, projection
from toolrag.index.mirror import LazyRows
from toolrag.search import retriever as retriever_module
from toolrag.search.retriever import ToolRetriever

QUERIES = ["what's the weather in Paris now", "帮我报销这张餐饮发票", "book a meeting room for 3pm",
           "approve this month's payroll", "where is getUserProfile defined"]


def _same_snapshot(a: Any, b: Any) -> None:
    assert a.ids == b.ids
    assert sorted(a.vectors) == sorted(b.vectors) and sorted(a.image_vectors) == sorted(b.image_vectors)
    for kind in a.vectors:
        np.testing.assert_array_equal(np.asarray(a.vectors[kind]), np.asarray(b.vectors[kind]))
    for kind in a.image_vectors:
        np.testing.assert_array_equal(np.asarray(a.image_vectors[kind]), np.asarray(b.image_vectors[kind]))
    np.testing.assert_array_equal(np.asarray(a.image_text), np.asarray(b.image_text))
    np.testing.assert_array_equal(a.image_owner, b.image_owner)
    np.testing.assert_array_equal(a.image_text_owner, b.image_text_owner)
    np.testing.assert_array_equal(np.asarray(a.english), np.asarray(b.english))
    assert a.bm25_texts == b.bm25_texts
    for query in QUERIES:
        np.testing.assert_array_equal(a.bm25.scores(query), b.bm25.scores(query))


def _results(retriever: ToolRetriever) -> list[tuple[tuple[str, ...], list[float], str]]:
    out = []
    for query in QUERIES:
        result = retriever.search(query, role="hr_manager")
        out.append((result.ids, [c.score for c in result.candidates], result.decision.value))
    return out


@pytest.mark.slow
def test_restart_from_the_saved_state_equals_a_rebuild_from_chroma(models: Any, small_catalog_dir: Path,
                                                                  tmp_path: Path) -> None:
    catalog_dir = shutil.copytree(small_catalog_dir, tmp_path / "cat")
    data = tmp_path / "d"
    first = ToolRetriever.from_catalog(catalog_dir, data_dir=data, models=models)
    assert not first.index.restored and (data / "serving").is_dir()
    restarted = ToolRetriever.from_catalog(catalog_dir, data_dir=data, models=models)
    assert restarted.index.restored and restarted.index.encoded_last_sync == 0
    shutil.rmtree(data / "serving")  # the same restart without a saved state reads everything from Chroma
    from_chroma = ToolRetriever.from_catalog(catalog_dir, data_dir=data, models=models)
    assert not from_chroma.index.restored and from_chroma.index.encoded_last_sync == 0
    _same_snapshot(restarted.index.snapshot, from_chroma.index.snapshot)
    _same_snapshot(restarted.index.snapshot, first.index.snapshot)
    assert _results(restarted) == _results(from_chroma) == _results(first)
    # A restored start builds its mirrors' row metadata row by row when read (100,000 dicts at that size that a
    # restart serving searches never needs); built, it equals what Chroma holds (checked after an edit). The
    # edit compares against the restored rows: only that tool is encoded.
    mirrors = restarted.index._collections.values()
    assert all(isinstance(mirror.metadata(), LazyRows) for mirror in mirrors)
    tool = restarted.catalog.get("calendar.book")
    assert tool is not None
    edited = restarted.catalog.with_tool(_with_description(tool, " Rooms for teams."))
    assert restarted.reload(edited) == 2  # one text, two text models
    restarted.index.wait_saved()
    for mirror in mirrors:
        assert dict(mirror.metadata()) == mirror.collection.get_metadata()


def _with_description(tool: Any, suffix: str) -> Any:
    import dataclasses

    return dataclasses.replace(tool, description=tool.description + suffix)


@pytest.mark.slow
def test_a_stale_or_damaged_state_is_never_used(models: Any, small_catalog_dir: Path, tmp_path: Path) -> None:
    catalog_dir = shutil.copytree(small_catalog_dir, tmp_path / "cat")
    data = tmp_path / "d"
    ToolRetriever.from_catalog(catalog_dir, data_dir=data, models=models)
    saved = shutil.copytree(data / "serving", tmp_path / "saved-serving")
    tools_file = catalog_dir / "tools.yaml"
    original = tools_file.read_text(encoding="utf-8")
    tools_file.write_text(original.replace("Search the company's source code repositories",
                                           "Search every source code repository"), encoding="utf-8")
    edited = ToolRetriever.from_catalog(catalog_dir, data_dir=data, models=models)
    assert not edited.index.restored and edited.index.encoded_last_sync == 2  # the catalog changed
    # Put the old state back and the old catalog too: the rows match the old state, but Chroma was written
    # since (its generation moved on), so the old state must not be trusted.
    shutil.rmtree(data / "serving")
    shutil.copytree(saved, data / "serving")
    tools_file.write_text(original, encoding="utf-8")
    reverted = ToolRetriever.from_catalog(catalog_dir, data_dir=data, models=models)
    assert not reverted.index.restored and reverted.index.encoded_last_sync == 2
    code = reverted.catalog.get("dev.search.code")
    assert code is not None and "repositories" in code.document_text()
    stored = reverted.index._collections["dense"].collection.get_metadata()
    assert stored["dev.search.code"]["text_hash"] == code.text_hash()
    # A damaged file of a state whose fingerprint matches is ignored, not trusted and not an error.
    for npy in (data / "serving").rglob("vec-dense.npy"):
        npy.write_bytes(npy.read_bytes()[:100])
    damaged = ToolRetriever.from_catalog(catalog_dir, data_dir=data, models=models)
    assert not damaged.index.restored and damaged.index.encoded_last_sync == 0
    _same_snapshot(damaged.index.snapshot, reverted.index.snapshot)
    assert _results(damaged) == _results(reverted)
    again = ToolRetriever.from_catalog(catalog_dir, data_dir=data, models=models)  # saved anew by `damaged`
    assert again.index.restored
    _same_snapshot(again.index.snapshot, reverted.index.snapshot)
    # A garbage pointer (a crash while it was written by another tool, a disk error) is ignored as well.
    pointers = list((data / "serving").rglob("current.json"))
    assert pointers
    for pointer in pointers:
        pointer.write_bytes(b"\x00{not json")
    garbage = ToolRetriever.from_catalog(catalog_dir, data_dir=data, models=models)
    assert not garbage.index.restored and garbage.index.encoded_last_sync == 0
    _same_snapshot(garbage.index.snapshot, reverted.index.snapshot)


@pytest.mark.slow
def test_an_index_built_with_one_text_backend_is_never_read_with_another(models: Any, small_catalog_dir: Path,
                                                                         tmp_path: Path) -> None:
    """The default (ONNX int8) index and a sentence-transformers one live side by side: opening the data
    folder with the other backend re-encodes every tool text with it (never reads the int8 vectors nor their
    saved serving state), and switching back reuses the int8 index without encoding anything."""
    import dataclasses

    from toolrag.encode.models import get_text_encoder

    data = tmp_path / "d"
    int8 = ToolRetriever.from_catalog(small_catalog_dir, data_dir=data, models=models)
    n_tools = len(int8.index.snapshot.ids)
    torch_models = dataclasses.replace(models, text=get_text_encoder("e5", "torch"),
                                       english=get_text_encoder("minilm", "torch"))
    assert torch_models.text.fingerprint != models.text.fingerprint
    with_torch = ToolRetriever.from_catalog(small_catalog_dir, data_dir=data, models=torch_models)
    # every tool text by both text models (and the text read in images); the image vectors are reused
    assert not with_torch.index.restored and with_torch.index.encoded_last_sync >= 2 * n_tools
    texts = [with_torch.catalog.get(i).document_text() for i in with_torch.index.snapshot.ids]  # type: ignore[union-attr]
    expected = torch_models.text.encode_passages(texts)
    np.testing.assert_allclose(np.asarray(with_torch.index.snapshot.vectors["dense"]), expected, atol=1e-5)
    back = ToolRetriever.from_catalog(small_catalog_dir, data_dir=data, models=models)
    assert back.index.encoded_last_sync == 0
    _same_snapshot(back.index.snapshot, int8.index.snapshot)


def test_ann_lists_find_the_exact_neighbours_and_follow_edits() -> None:
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((40, 64)).astype(np.float32)
    data = centers[rng.integers(0, 40, 4000)] + 0.3 * rng.standard_normal((4000, 64)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    ann = IvfIndex.build(data, seed=1)
    assert len(ann.lists) == int(2 * np.sqrt(4000)) and sum(len(x) for x in ann.lists) == 4000
    queries = data[rng.integers(0, 4000, 50)] + 0.1 * rng.standard_normal((50, 64)).astype(np.float32)
    found = 0
    for q in queries:
        exact = set(np.argsort(-(data @ q))[:10].tolist())
        got = ann.search(q, k=10, probes=12, mask=None)
        assert len(got) == 10 and np.all(np.diff(data[got] @ q) <= 1e-6)  # best first
        found += len(exact & set(got.tolist()))
    assert found / 500 >= 0.9
    # all lists probed: exactly the brute-force answer, and the mask is honoured
    mask = rng.random(4000) < 0.3
    q = queries[0]
    allowed = np.flatnonzero(mask)
    expected = allowed[np.argsort(-(data[allowed] @ q), kind="stable")[:7]]
    np.testing.assert_array_equal(ann.search(q, k=7, probes=len(ann.lists), mask=mask), expected)
    # an edit re-files the changed row; saving and loading gives the same lists
    moved = data.copy()
    moved[5] = data[1234]
    edited = ann.with_rows(moved, [5])
    assert edited.list_of[5] == edited.list_of[1234] and 5 in edited.search(moved[5], k=2, probes=1).tolist()
    assert ann.list_of[5] == IvfIndex.build(data, seed=1).list_of[5]  # the original is untouched
    again = IvfIndex.from_arrays(edited.to_arrays(), moved)
    np.testing.assert_array_equal(again.list_of, edited.list_of)
    np.testing.assert_array_equal(again.search(q, k=7, probes=5), edited.search(q, k=7, probes=5))


def test_ann_lists_of_wide_vectors_scan_a_projection() -> None:
    """384-d rows (as the text models give) are scanned in a 128-d basis: the mean direction and the principal
    axes. The candidates hold the exact neighbours as often as a scan of the full vectors does."""
    rng = np.random.default_rng(3)
    # Text vectors keep most of their variance in a few directions (the e5 and MiniLM vectors of 100,000 tools:
    # 90-94% in 128): rows from 96 latent directions, a common mean (as e5's vectors have) and a little noise.
    mixing = rng.standard_normal((96, 384)).astype(np.float32)
    centers = rng.standard_normal((60, 96)).astype(np.float32)
    latent = centers[rng.integers(0, 60, 6000)] + 0.5 * rng.standard_normal((6000, 96)).astype(np.float32)
    data = latent @ mixing + 3.0 + 0.5 * rng.standard_normal((6000, 384)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    ann = IvfIndex.build(data, seed=2)
    basis = ann.basis
    assert basis is not None and basis.shape == (384, PROJECTED_DIM)
    np.testing.assert_allclose(basis.T @ basis, np.eye(PROJECTED_DIM), atol=1e-4)  # orthonormal
    mean = data.mean(axis=0)
    assert abs(float(basis[:, 0] @ mean)) / float(np.linalg.norm(mean)) > 0.99  # the mean direction first
    assert all(block.shape[1] == PROJECTED_DIM for block in ann.blocks if len(block))
    full = IvfIndex(ann.centroids, ann.lists, [data[rows] for rows in ann.lists], ann.list_of)  # no basis
    queries = data[rng.integers(0, 6000, 60)] + 0.02 * rng.standard_normal((60, 384)).astype(np.float32)
    found = {"projected": 0, "full": 0}
    for q in queries:
        exact = set(np.argsort(-(data @ q))[:10].tolist())
        for name, index in (("projected", ann), ("full", full)):
            found[name] += len(exact & set(index.search(q, k=12, probes=3).tolist()))
    assert found["projected"] >= found["full"] - 6, found  # at most 1% of the 600 neighbours lost
    # saved and loaded: the same basis, the same answers; an edited row is projected like the others
    again = IvfIndex.from_arrays(ann.to_arrays(), data)
    np.testing.assert_array_equal(again.basis, basis)
    np.testing.assert_array_equal(again.search(queries[0], k=20, probes=8), ann.search(queries[0], k=20, probes=8))
    moved = data.copy()
    moved[7] = data[4321]
    edited = ann.with_rows(moved, [7])
    assert 7 in edited.search(moved[7], k=3, probes=1).tolist()
    assert projection(data[:100, :64]) is None  # narrow vectors are scanned as they are


@pytest.mark.slow
def test_large_catalog_path_uses_the_ann_lists(models: Any, small_catalog_dir: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The candidate path of catalogs above the exact-scoring limit, run on the small catalog with the limits
    lowered: the ANN lists replace Chroma's queries and survive a restart. With 8 tools every list is probed
    and Chroma's HNSW is exact, so both give the same candidates and the same ranking."""
    monkeypatch.setattr(retriever_module, "EXACT_LIMIT", 4)
    cfg_candidates = {"candidates": 3}
    via_chroma = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "chroma", models=models)
    assert not via_chroma.index.snapshot.ann
    settings = via_chroma.settings.with_overrides(**cfg_candidates)
    # hr_manager with deprecated tools sees every tool (no filter pass), employee not (the rows are filtered)
    roles = (("hr_manager", True), ("employee", False))
    expected = [via_chroma.search(q, role=r, include_deprecated=d, settings=settings).ids
                for r, d in roles for q in QUERIES]
    monkeypatch.setattr(restore, "ANN_MIN_ROWS", 4)
    big = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "ann", models=models)
    assert set(big.index.snapshot.ann) == {"dense", "dense_en"}
    calls: list[str] = []
    for mirror in big.index._collections.values():
        monkeypatch.setattr(mirror, "query", lambda *a, **k: calls.append("chroma") or [])
    masks: list[bool] = []
    scan = IvfIndex.search
    monkeypatch.setattr(IvfIndex, "search",
                        lambda self, *a, **k: masks.append(k["mask"] is None) or scan(self, *a, **k))
    assert [big.search(q, role=r, include_deprecated=d, settings=settings).ids
            for r, d in roles for q in QUERIES] == expected
    assert not calls
    assert set(masks) == {True, False}, masks  # both paths ran: every tool permitted, and some hidden
    restarted = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "ann", models=models)
    assert restarted.index.restored and set(restarted.index.snapshot.ann) == {"dense", "dense_en"}
    assert [restarted.search(q, role=r, include_deprecated=d, settings=settings).ids
            for r, d in roles for q in QUERIES] == expected
    tool = restarted.catalog.get("calendar.book")
    assert tool is not None and restarted.reload(restarted.catalog.with_tool(_with_description(tool, " Big.")))
    assert restarted.index.snapshot.ann["dense"] is not big.index.snapshot.ann["dense"]
    restarted.index.wait_saved()


class _OneAtATime:
    """A searcher without ``prepare``: the evaluator searches its rows one by one, encoding each request."""

    def __init__(self, inner: ToolRetriever) -> None:
        self.inner, self.settings = inner, inner.settings

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.search(*args, **kwargs)


@pytest.mark.slow
def test_batched_evaluation_equals_one_at_a_time(models: Any, data_dir: Path) -> None:
    from conftest import SAMPLE

    rows = [r for r in load_queries(SAMPLE / "queries.yaml") if r.image is None][:60]
    batched = ToolRetriever.from_catalog(SAMPLE, data_dir=data_dir, models=models)
    single = ToolRetriever.from_catalog(load_catalog(SAMPLE), data_dir=data_dir, models=models)
    assert batched.prepare([r.query for r in rows[:3]], histories=[r.history for r in rows[:3]]) > 0
    report_b = Evaluator(rows)(batched)
    report_s = Evaluator(rows)(_OneAtATime(single))
    assert [(o.returned, o.decision) for o in report_b.per_query] == \
           [(o.returned, o.decision) for o in report_s.per_query]
    assert report_b.metrics == report_s.metrics
    for row in rows[:10]:  # the prepared vectors are the very vectors a search encodes
        a = batched.analyzer.analyze(row.query, history=row.history, settings=batched.settings)
        b = single.analyzer.analyze(row.query, history=row.history, settings=single.settings)
        assert a.vectors.keys() == b.vectors.keys()
        for key in a.vectors:
            np.testing.assert_array_equal(a.vectors[key], b.vectors[key])


@pytest.mark.slow
def test_edits_never_change_a_snapshot_someone_still_holds(models: Any, small_catalog_dir: Path,
                                                           tmp_path: Path) -> None:
    """Edits write into an older snapshot's matrices once nothing holds them (no copy of the whole matrix):
    a snapshot a search (here: this test) still holds keeps its vectors and its results through any number of
    edits; once let go, edits alternate between two matrices per collection, and the live vectors still equal
    Chroma's."""
    retriever = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "d", models=models)
    tools = [retriever.catalog.get(i) for i in ("calendar.book", "weather.forecast", "finance.expense.submit")]
    assert all(t is not None for t in tools)

    def edit(n: int) -> None:
        tool = tools[n % len(tools)]
        retriever.reload(retriever.catalog.with_tool(_with_description(tool, f" Revision {n}.")))
        retriever.index.wait_saved()  # the background save holds the matrices while it writes them

    edit(0)
    held = retriever.index.snapshot
    vectors = {kind: matrix.copy() for kind, matrix in held.vectors.items()}
    before = [retriever.search(q, snapshot=held).ids for q in QUERIES]
    for n in range(1, 5):
        edit(n)
    for kind, matrix in held.vectors.items():
        np.testing.assert_array_equal(matrix, vectors[kind])
    assert [retriever.search(q, snapshot=held).ids for q in QUERIES] == before
    del held
    live: list[int] = []
    for n in range(5, 10):
        edit(n)
        live.append(id(retriever.index.snapshot.vectors["dense"]))
    assert live[2] == live[0] and live[3] == live[1] != live[0]  # two matrices take turns: nothing copied
    snap = retriever.index.snapshot
    for kind, mirror in retriever.index._collections.items():
        if kind in snap.vectors:
            stored_ids, stored = mirror.collection.get_vectors(list(snap.ids))
            assert stored_ids == list(snap.ids)
            np.testing.assert_allclose(snap.vectors[kind], stored, atol=1e-6)
