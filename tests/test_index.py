"""The index: incremental encoding by content hash, model fingerprints, interrupted builds, Chroma server."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chroma_server import running_chroma_server

from toolrag.catalog.loader import load_catalog
from toolrag.catalog.profile import Catalog
from toolrag.errors import CatalogError
from toolrag.search.retriever import ToolRetriever

pytestmark = pytest.mark.slow  # real models or a real Chroma index


class Counting:
    """Wraps a real text model and counts the passages it encodes (the model itself is untouched)."""

    def __init__(self, inner: Any, *, fail_after: int | None = None) -> None:
        self.inner = inner
        self.passages = 0
        self.fail_after = fail_after

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    @property
    def fingerprint(self) -> str:
        return str(self.inner.fingerprint)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.encode_queries(texts)  # type: ignore[no-any-return]

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after is not None and self.passages + len(texts) > self.fail_after:
            raise KeyboardInterrupt("simulated crash in the middle of indexing")
        self.passages += len(texts)
        return self.inner.encode_passages(texts)  # type: ignore[no-any-return]


def counted_models(models: Any, **kwargs: Any) -> tuple[Any, Counting]:
    counter = Counting(models.text, **kwargs)
    return dataclasses.replace(models, text=counter, english=None, image=None, ocr_factory=None), counter


def copy_catalog(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_restart_encodes_nothing_and_an_edit_encodes_one(models: Any, small_catalog_dir: Path,
                                                         tmp_path: Path) -> None:
    catalog_dir = copy_catalog(small_catalog_dir, tmp_path / "cat")
    first, counter = counted_models(models)
    ToolRetriever.from_catalog(catalog_dir, data_dir=tmp_path / "d", models=first)
    assert counter.passages == 8
    again, counter2 = counted_models(models)
    retriever = ToolRetriever.from_catalog(catalog_dir, data_dir=tmp_path / "d", models=again)
    assert counter2.passages == 0  # unchanged catalog: every vector comes from Chroma
    before = retriever.search("sunshine and temperature today", top_k=8).ids
    text = (catalog_dir / "tools.yaml").read_text(encoding="utf-8")
    edited = text.replace("Search the company's source code repositories for a function, class or string.",
                          "Look up travel weather - rain, sunshine and temperature today for a city.")
    (catalog_dir / "tools.yaml").write_text(edited, "utf-8")
    encoded = retriever.reload(load_catalog(catalog_dir))
    assert encoded == 1 and counter2.passages == 1  # only the edited profile is re-encoded
    after = retriever.search("sunshine and temperature today", top_k=8).ids
    assert after.index("dev.search.code") < before.index("dev.search.code")  # the edit moved it up


def test_added_and_removed_tools(models: Any, small_catalog_dir: Path, tmp_path: Path) -> None:
    m, counter = counted_models(models)
    retriever = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "d", models=m)
    catalog = retriever.index.catalog
    gone = catalog.without_tool("weather.forecast")
    assert retriever.reload(gone) == 0
    assert "weather.forecast" not in retriever.search("weather forecast for next week", top_k=8).ids
    assert retriever.reload(catalog) == 1
    assert retriever.search("weather forecast for next week").ids[0] == "weather.forecast"
    assert counter.passages == 9


def test_incremental_sync_after_edits_equals_a_fresh_index(models: Any, small_catalog_dir: Path,
                                                           tmp_path: Path) -> None:
    """An edit re-checks only the changed profile (the others are the same objects); the snapshot it builds
    must equal the one a fresh process builds from the same catalog."""
    m = dataclasses.replace(models, image=None, ocr_factory=None)
    retriever = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "d", models=m)
    catalog = retriever.index.catalog
    code = catalog.get("dev.search.code")
    weather = catalog.get("weather.current")
    assert code is not None and weather is not None
    restricted = dataclasses.replace(weather, permissions=("ops.admin",), category="devtools", priority=3)
    edits = [
        dataclasses.replace(code, description="Look up the weather: rain, sunshine and temperature today."),
        restricted,
        dataclasses.replace(restricted, description="北京今天的天气和气温"),
    ]
    for edit in edits:
        catalog = catalog.with_tool(edit)
        assert retriever.reload(catalog) in (0, 1, 2)  # 0: a metadata-only edit keeps the vectors
    incremental = retriever.index.snapshot
    fresh = ToolRetriever.from_catalog(catalog, data_dir=tmp_path / "d", models=m)
    assert fresh.index.encoded_last_sync == 0
    full = fresh.index.snapshot
    assert incremental.ids == full.ids and incremental.row_of == full.row_of
    for kind in full.vectors:
        np.testing.assert_allclose(incremental.vectors[kind], full.vectors[kind], atol=1e-6)
    for column in ("english", "perm_keys", "categories", "deprecated", "priority"):
        assert getattr(incremental, column).tolist() == getattr(full, column).tolist(), column
    # a Chinese description now: the English model reads the tool through its English name, tag and examples
    # (toolrag.text.english_segments), in the edited index as in the fresh one
    assert incremental.english[full.row_of["weather.current"]]
    for snap in (incremental, full):
        values = np.array(snap.perm_key_values, dtype=object)
        assert values[snap.perm_key_codes].tolist() == snap.perm_keys.tolist()
    query = "sunshine and temperature today"
    np.testing.assert_allclose(incremental.bm25.scores(query), full.bm25.scores(query), rtol=1e-5)
    employee = retriever.search(query, top_k=8).ids
    assert "weather.current" not in employee and employee[0] == "dev.search.code"
    assert retriever.search(query, top_k=8, permissions=["ops.admin"]).ids == fresh.search(
        query, top_k=8, permissions=["ops.admin"]).ids


class CountingOcr:
    """Wraps the real OCR engine and counts the images it reads."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.reads = inner, 0

    def read(self, image: Any) -> Any:
        self.reads += 1
        return self.inner.read(image)


def test_a_copy_without_ocr_leaves_the_models_it_was_copied_from_reading(models: Any) -> None:
    """``dataclasses.replace(models, ocr_factory=None)`` (an index without OCR) notes "OCR turned off" in its own
    notes: the set it was copied from still reads images (they once shared one dict, and every later index of the
    session was built without the text read in its example images)."""
    copy = dataclasses.replace(models, ocr_factory=None)
    assert copy.get_ocr() is None and "ocr" in copy.unavailable
    assert "ocr" not in models.unavailable and models.get_ocr() is not None
    fallen = dataclasses.replace(models, fallbacks={})
    fallen.fallbacks["text_model"] = "a note"
    assert "text_model" not in models.fallbacks


def test_a_picture_shared_by_several_tools_is_read_once(models: Any, tmp_path: Path) -> None:
    from conftest import ASSETS

    folder = tmp_path / "cat"
    (folder / "assets").mkdir(parents=True)
    shutil.copy(ASSETS / "receipt_zh.png", folder / "assets" / "receipt_zh.png")
    (folder / "tools.yaml").write_text("".join(
        f"- id: expense.{n}\n  name: expense_{n}\n  description: Submit a receipt for reimbursement ({n}).\n"
        f"  images: [{{path: receipt_zh.png}}]\n" for n in ("a", "b", "c")), encoding="utf-8")
    (folder / "catalog.yaml").write_text("name: shared\nassets_dir: assets\n", "utf-8")
    counter = CountingOcr(models.get_ocr())
    m = dataclasses.replace(models, english=None, image=None, ocr_factory=lambda: counter)
    retriever = ToolRetriever.from_catalog(folder, data_dir=tmp_path / "d", models=m)
    assert counter.reads == 1
    snap = retriever.index.snapshot
    assert sorted(snap.image_text_owner.tolist()) == [0, 1, 2]  # every tool gets the text read in it
    np.testing.assert_allclose(snap.image_text[0], snap.image_text[2], atol=1e-6)
    texts = dict(zip(snap.bm25.ids, snap.bm25_texts, strict=True))
    assert all(len(texts[f"expense.{n}"]) > len(f"expense.{n}") + 40 for n in ("a", "b", "c"))


def test_another_ocr_reading_reads_the_example_images_again(models: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Text read in example images is kept per OCR reading (``OcrEngine.model_id``): after a change of how lines
    are read, the images are read again instead of mixing old text with new requests' text; the tools' own
    vectors are reused."""
    from conftest import ASSETS

    from toolrag.encode.ocr import OcrEngine

    folder = tmp_path / "cat"
    (folder / "assets").mkdir(parents=True)
    shutil.copy(ASSETS / "receipt_zh.png", folder / "assets" / "receipt_zh.png")
    (folder / "tools.yaml").write_text(
        "- id: expense.a\n  name: expense_a\n  description: Submit a receipt for reimbursement.\n"
        "  images: [{path: receipt_zh.png}]\n", encoding="utf-8")
    (folder / "catalog.yaml").write_text("name: reading\nassets_dir: assets\n", "utf-8")
    counter = CountingOcr(models.get_ocr())
    m = dataclasses.replace(models, english=None, image=None, ocr_factory=lambda: counter)
    ToolRetriever.from_catalog(folder, data_dir=tmp_path / "d", models=m)
    ToolRetriever.from_catalog(folder, data_dir=tmp_path / "d", models=m)
    assert counter.reads == 1  # same reading: read once
    monkeypatch.setattr(OcrEngine, "model_id", OcrEngine.model_id + "/another")
    again = ToolRetriever.from_catalog(folder, data_dir=tmp_path / "d", models=m)
    assert counter.reads == 2
    assert again.index.encoded_last_sync == 1  # the text read, encoded; the tool's own text reused
    assert len(again.index.snapshot.image_text_owner) == 1


def test_another_model_rebuilds_never_mixes(models: Any, small_catalog_dir: Path, tmp_path: Path) -> None:
    e5, _ = counted_models(models)
    ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "d", models=e5)
    minilm = Counting(models.english)
    other = dataclasses.replace(models, text=minilm, english=None, image=None, ocr_factory=None)
    retriever = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "d", models=other)
    assert minilm.passages == 8  # a different fingerprint: everything re-encoded with the new model
    assert retriever.search("is it raining in London now").ids[0] == "weather.current"


def test_interrupted_build_is_completed_before_use(models: Any, small_catalog_dir: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from toolrag.index import text_sync

    monkeypatch.setattr(text_sync, "_BATCH", 2)  # rows are written 2 by 2: the crash hits batch 2
    crashing, counter = counted_models(models, fail_after=3)
    with pytest.raises(KeyboardInterrupt):
        ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "d", models=crashing)
    resumed, counter2 = counted_models(models)
    retriever = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "d", models=resumed)
    assert counter.passages == 2
    assert counter2.passages == 6  # the 2 rows written before the crash are reused, the rest encoded
    fresh = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "fresh",
                                       models=counted_models(models)[0])
    query = "book a meeting room for tomorrow"
    assert retriever.search(query).ids == fresh.search(query).ids
    np.testing.assert_allclose(retriever.index.snapshot.vectors["dense"], fresh.index.snapshot.vectors["dense"],
                               atol=1e-6)


def test_failed_validation_keeps_the_previous_index(models: Any, small_catalog_dir: Path, tmp_path: Path) -> None:
    from toolrag.errors import ProfileError

    catalog_dir = copy_catalog(small_catalog_dir, tmp_path / "cat")
    retriever = ToolRetriever.from_catalog(catalog_dir, data_dir=tmp_path / "d", models=models)
    (catalog_dir / "broken.yaml").write_text("- id: weather.current\n  description: duplicate id\n", "utf-8")
    with pytest.raises(ProfileError, match="duplicate tool id 'weather.current'"):
        retriever.reload(load_catalog(catalog_dir))
    assert len(retriever.index.catalog) == 8
    assert retriever.search("is it raining in London now").ids[0] == "weather.current"


def test_empty_and_single_tool_catalogs(models: Any, tmp_path: Path) -> None:
    from toolrag.search.results import Decision

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CatalogError, match="has no tools"):  # a folder without tools is a mistake, never silent
        ToolRetriever.from_catalog(empty, data_dir=tmp_path / "d", models=models)
    # A catalog built empty in code still answers (NO_TOOL, nothing to inject).
    result = ToolRetriever.from_catalog(Catalog(()), data_dir=tmp_path / "d", models=models).search("anything")
    assert result.decision is Decision.NO_TOOL and result.candidates == () and result.tokens.all == 0
    one = tmp_path / "one"
    one.mkdir()
    (one / "t.yaml").write_text("id: solo\ndescription: Convert a currency amount using today's exchange rate\n",
                                "utf-8")
    single = ToolRetriever.from_catalog(one, data_dir=tmp_path / "d", models=models)
    hit = single.search("convert 100 dollars to euros")
    assert hit.ids == ["solo"] and hit.decision is Decision.EXECUTE


@pytest.mark.server
def test_chroma_server_gives_the_same_ranking(models: Any, small_catalog_dir: Path, tmp_path: Path) -> None:
    embedded = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path / "d", models=models)
    with running_chroma_server(tmp_path) as url:
        served = ToolRetriever.from_catalog(small_catalog_dir, chroma_url=url, models=models)
        again = ToolRetriever.from_catalog(small_catalog_dir, chroma_url=url, models=models)
        assert again.index.encoded_last_sync == 0  # vectors persisted in the server
        for query in ("will it rain tomorrow in Berlin", "帮我报销这张餐饮发票", "book a meeting room"):
            a, b = embedded.search(query), served.search(query)
            assert a.ids == b.ids
            np.testing.assert_allclose([c.score for c in a.candidates], [c.score for c in b.candidates],
                                       atol=1e-5)
