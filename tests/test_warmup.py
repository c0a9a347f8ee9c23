"""Model warm-up: after it, the OCR engine has loaded its detector and recogniser (the first image search
pays no load), and the app starts it in the background once its index is ready."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from toolrag.encode.ocr import OcrEngine
from toolrag.search.warmup import warm_up

pytestmark = pytest.mark.slow  # real models or a real Chroma index


def test_warm_up_loads_ocr_and_runs_every_model(models: Any) -> None:
    fresh = dataclasses.replace(models, ocr_factory=OcrEngine)  # a new OCR engine, not the shared one
    warmed = warm_up(fresh)
    assert warmed == ["ocr", "image", "text", "english", "tokenizer", "dictionary", "language", "tokens"]
    engine = fresh.get_ocr()._engine
    assert engine.text_det is not None and engine.text_rec is not None  # loaded before any request


def test_warm_up_loads_the_chinese_segmenter(models: Any, monkeypatch: Any) -> None:
    # An index restored from its saved state tokenises nothing, so without this the first request with
    # Chinese in it paid jieba's dictionary load (0.8 s of a 1.2 s first image search).
    from toolrag.index import tokenize as lexical

    monkeypatch.setattr(lexical, "_JIEBA", None)  # as in a process that has not segmented anything yet
    warm_up(dataclasses.replace(models, image=None, ocr_factory=None))
    assert lexical._JIEBA is not None


def test_app_backend_warms_models_after_building(models: Any, small_catalog_dir: Path, data_dir: Path) -> None:
    from toolrag.ui.backend import Backend

    backend = Backend(small_catalog_dir, data_dir=data_dir, models=models)
    backend.build()
    assert backend.ready and backend.warm_up is not None
    backend.warm_up.join(timeout=300)
    assert not backend.warm_up.is_alive()


@pytest.mark.parametrize("setting", ["", "off"])
def test_toolrag_serve_warms_up_once_its_index_is_open(small_catalog_dir: Path, data_dir: Path, models: Any,
                                                       monkeypatch: pytest.MonkeyPatch, setting: str) -> None:
    """``toolrag serve`` starts the app's warm-up in the background once its index is open, so an agent's first
    search_tools call pays no model or table load (1-3 s before); ``TOOLRAG_WARMUP=off`` leaves it out."""
    from toolrag.cli import main
    from toolrag.env_vars import WARMUP_ENV
    from toolrag.search.retriever import ToolRetriever
    from toolrag.serve import app as serve_app

    started: list[Any] = []
    real = ToolRetriever.warm_up_in_background

    def record(self: ToolRetriever) -> Any:
        started.append(real(self))
        return started[-1]

    async def no_transport(app: Any, **_: Any) -> None:  # the server would run until its client ends it
        return None

    monkeypatch.setattr(ToolRetriever, "warm_up_in_background", record)
    monkeypatch.setattr(serve_app, "serve", no_transport)
    monkeypatch.setenv(WARMUP_ENV, setting)
    assert main(["serve", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir)]) == 0
    assert len(started) == 1
    if setting == "off":
        assert started == [None]
        return
    started[0].join(timeout=300)
    assert not started[0].is_alive()


def test_a_library_caller_warms_its_retriever(small_retriever: Any) -> None:
    # ToolRetriever.warm_up is the library's door to the same warm-up: every model of the retriever runs once.
    warmed = small_retriever.warm_up()
    assert {"text", "tokenizer", "decision"} <= set(warmed)
    assert ("ocr" in warmed) == (small_retriever.models.get_ocr() is not None)


@pytest.mark.parametrize("setting", ["", "off", "sometimes"])
def test_the_map_warm_up_follows_its_setting(models: Any, small_catalog_dir: Path, data_dir: Path,
                                             monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                             setting: str) -> None:
    """``TOOLRAG_MAP_WARMUP=off``: the app does not compile UMAP at start (a replica's or a test's playground
    nobody opens the map of); unset or an unknown word (named in the log): it does, once the index is ready."""
    import threading

    from toolrag.env_vars import MAP_WARMUP_ENV
    from toolrag.ui.backend import Backend

    warmed = threading.Event()
    monkeypatch.setattr(Backend, "_warm_map", lambda self, folder: warmed.set())
    monkeypatch.setenv(MAP_WARMUP_ENV, setting)
    backend = Backend(small_catalog_dir, data_dir=data_dir, models=models)
    with caplog.at_level("WARNING", logger="toolrag.config"):
        backend.build()
    assert backend.ready
    if setting == "off":
        assert not warmed.wait(timeout=1.0)
    else:
        assert warmed.wait(timeout=60)
    assert (f"ignoring {MAP_WARMUP_ENV}='sometimes'" in caplog.text) == (setting == "sometimes")
