"""An opt-in Hub model that cannot be loaded falls back to the packaged model of its role, through the real
loaders (sentence-transformers, open_clip, CrossEncoder) with the Hub out of reach: ``HF_HUB_OFFLINE=1`` (set
for the suite by tests/conftest.py) and an empty model cache, so a Hub id fails at once, as in an outage.

The fallback must say so (``ModelSet.fallbacks``, every result's notes and JSON, the CLI's stderr, the app's
status line) and read the packaged model's own index, never one built with other weights.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolrag import env_vars as ev
from toolrag.cli import main
from toolrag.encode.fingerprint import fingerprint
from toolrag.encode.models import ModelSet, load_models
from toolrag.errors import ModelUnavailable
from toolrag.index.store import collection_name
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import PACKAGED_MODELS, Settings

pytestmark = pytest.mark.slow  # real model loaders

HUB_E5 = "intfloat/multilingual-e5-small"
HUB_MINILM = "sentence-transformers/all-MiniLM-L6-v2"
HUB_CLIP = "xlm-roberta-base-ViT-B-32:laion5b_s13b_b90k"
HUB_RERANK = "BAAI/bge-reranker-v2-m3"


@pytest.fixture(scope="module", autouse=True)
def hub_out_of_reach(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No model of these ids in any cache the loaders read; no CLIP or reranker set from outside."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path_factory.mktemp("empty-model-cache")))
        mp.setenv("HF_HUB_OFFLINE", "1")
        for name in (ev.CLIP_ENV, ev.RERANK_ENV, ev.TEXT_MODEL_ENV, ev.ENGLISH_MODEL_ENV):
            mp.delenv(name, raising=False)
        yield


@pytest.fixture(scope="module")
def hub_settings() -> Settings:
    return Settings(text_model=HUB_E5, english_model=HUB_MINILM, clip_model=HUB_CLIP)


@pytest.fixture(scope="module")
def fallen_back(hub_settings: Settings) -> ModelSet:
    return load_models(hub_settings)


@pytest.mark.parametrize("online", ["0", "1"])
def test_hub_models_fall_back_to_the_packaged_ones_of_their_role(monkeypatch: pytest.MonkeyPatch, online: str,
                                                                 hub_settings: Settings, models: ModelSet) -> None:
    """Offline only the cache is read; online (a Space) the loader asks the Hub, which the offline flag refuses
    at once, as an outage would after its retries. Either way: the packaged model of the role, with a note."""
    monkeypatch.setenv(ev.ONLINE_ENV, online)
    loaded = load_models(hub_settings)
    assert set(loaded.fallbacks) == {"text_model", "english_model", "clip_model"}
    # The very models the default settings load: the same weights, so the same fingerprints.
    assert loaded.text.fingerprint == models.text.fingerprint
    assert loaded.english is not None and models.english is not None
    assert loaded.english.fingerprint == models.english.fingerprint
    assert loaded.clip is None and loaded.unavailable["clip"] == loaded.fallbacks["clip_model"]
    text_note = loaded.fallbacks["text_model"]
    assert HUB_E5 in text_note and "using the packaged 'e5' instead" in text_note and ev.TEXT_MODEL_ENV in text_note
    assert "using the packaged 'minilm' instead" in loaded.fallbacks["english_model"]
    assert "CLIP is off" in loaded.fallbacks["clip_model"] and ev.CLIP_ENV in loaded.fallbacks["clip_model"]
    offline_hint = f"set {ev.ONLINE_ENV}=1"
    assert (offline_hint in text_note) is (online == "0")


def test_the_fallback_reads_its_own_index_never_the_hub_models(fallen_back: ModelSet, small_retriever: Any,
                                                               small_catalog_dir: Path, data_dir: Path) -> None:
    """The Hub model's vectors would sit in collections of their own (another fingerprint); the fallback opens
    the packaged model's index, which the default settings built: nothing is encoded again."""
    hub_fp = fingerprint(HUB_E5, dim=fallen_back.text.dim, weights=None, variant=fallen_back.text.backend.value)
    assert collection_name("text", hub_fp) != collection_name("text", fallen_back.text.fingerprint)
    retriever = ToolRetriever.from_catalog(small_catalog_dir, data_dir=data_dir, models=fallen_back)
    assert retriever.index.encoded_last_sync == 0
    query = "will it rain tomorrow in Berlin"
    result = retriever.search(query)
    assert result.ids == small_retriever.search(query).ids
    notes = result.to_json()["notes"]
    assert retriever.model_notes() == list(fallen_back.fallbacks.values())
    assert all(note in notes for note in fallen_back.fallbacks.values())


def test_cli_warns_on_stderr_and_in_the_json(capsys: pytest.CaptureFixture[str], small_catalog_dir: Path,
                                             data_dir: Path) -> None:
    args = ["search", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir), "--json",
            "will it rain tomorrow in Berlin"]
    assert main([*args, "--text-model", HUB_E5]) == 0
    out, err = capsys.readouterr()
    warning = next(line for line in err.splitlines() if line.startswith("toolrag: warning: text model"))
    assert HUB_E5 in warning and "using the packaged 'e5' instead" in warning
    payload = json.loads(out)
    assert any(HUB_E5 in note and "packaged 'e5'" in note for note in payload["notes"])
    assert main(args) == 0
    plain, plain_err = capsys.readouterr()
    assert "warning" not in plain_err and not any("Hub" in note for note in json.loads(plain)["notes"])
    assert [c["id"] for c in json.loads(plain)["candidates"]] == [c["id"] for c in payload["candidates"]]


def test_a_hub_reranker_that_fails_turns_reranking_off_with_a_note(capsys: pytest.CaptureFixture[str],
                                                                   small_catalog_dir: Path, data_dir: Path) -> None:
    assert PACKAGED_MODELS["rerank_model"] is None  # when one ships, the fallback loads it instead
    code = main(["search", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir), "--json", "--rerank",
                 "--rerank-model", HUB_RERANK, "book a meeting room"])
    out, err = capsys.readouterr()
    assert code == 0
    assert f"toolrag: warning: reranker '{HUB_RERANK}'" in err and "reranker is off" in err
    payload = json.loads(out)
    assert any(HUB_RERANK in note for note in payload["notes"])
    assert all(c.get("rerank_score") is None for c in payload["candidates"])


def test_a_mistake_is_not_a_hub_outage(models: ModelSet, tmp_path: Path) -> None:
    """A folder that does not exist is a setting to fix: the text model fails loudly, the English one is off
    with the reason; neither falls back silently."""
    with pytest.raises(ModelUnavailable, match="does not exist"):
        load_models(Settings(text_model=str(tmp_path / "no" / "such" / "model")))
    loaded = load_models(Settings(english_model=str(tmp_path / "no" / "such" / "model")))
    assert loaded.english is None and "does not exist" in loaded.unavailable["english"]
    assert loaded.fallbacks == {}


def test_the_app_status_line_says_which_model_runs(fallen_back: ModelSet, small_catalog_dir: Path,
                                                   data_dir: Path, tmp_path: Path) -> None:
    from toolrag.ui import Backend

    catalog = Path(shutil.copytree(small_catalog_dir, tmp_path / "catalog"))
    backend = Backend(catalog, data_dir=data_dir, models=fallen_back)
    backend.build()
    status = backend.status_html()
    assert backend.ready and "● ready: 8 tools" in status
    assert f"⚠ text model &#x27;{HUB_E5}&#x27;" in status and "packaged &#x27;e5&#x27;" in status
    assert "CLIP is off" in status
