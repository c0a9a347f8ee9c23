"""EfficientNet-Lite0 in ONNX Runtime: exported once from the packaged weights and checked against PyTorch.

Why: in PyTorch the first image a process reads pays for importing torch and loading the weights (about 2 s
and 500 MB here); exported to ONNX, the same network loads in about a tenth of a second in ONNX Runtime (already
loaded for the text models and OCR) and adds about 70 MB, and an image costs about half as long, so a process
that indexes example images or searches with an image never imports torch (``python -m bench.image_model``;
docs/benchmarks.md, "Where the time goes"). The file is derived only from the packaged weights, lives in
``data_dir()/models/image-onnx-<digest>-<format>`` and is built once, like the ONNX text models
(:func:`toolrag.encode.built_folder.built_folder`). Before a build is accepted its pooled features and class
probabilities are compared with PyTorch's on fixed probe inputs; a build below :data:`MIN_COSINE` is refused.
``TOOLRAG_IMAGE_BACKEND=torch`` runs the network in PyTorch instead (its own fingerprint: the two give
features at a cosine above 0.99999 to each other, close but not identical, and an index never mixes them).
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.config import choice_setting, data_dir
from toolrag.encode.built_folder import BUILD_MARKER, built_folder
from toolrag.encode.common import require
from toolrag.encode.onnx_text import default_threads
from toolrag.env_vars import IMAGE_BACKEND_ENV
from toolrag.errors import ModelUnavailable

__all__ = ["ImageBackend", "OnnxImageRuntime", "image_backend", "onnx_image_folder", "torch_runner"]

log = logging.getLogger(__name__)


class ImageBackend(str, Enum):
    """How the image model runs: ``onnx`` (default, ONNX Runtime) or ``torch`` (PyTorch)."""

    ONNX = "onnx"
    TORCH = "torch"


#: The least cosine between the ONNX and the PyTorch pooled features of a probe input a build must reach.
MIN_COSINE = 0.9999
#: The largest difference of one class probability between the two a build may show.
MAX_PROBABILITY_DIFF = 1e-3

_BUILD_FORMAT = 1


def image_backend(value: str | ImageBackend | None = None) -> ImageBackend:
    """The backend named by ``value``, else by ``TOOLRAG_IMAGE_BACKEND``, else ``onnx``."""
    return choice_setting(ImageBackend, value, env=IMAGE_BACKEND_ENV, default=ImageBackend.ONNX, what="image backend")


def onnx_image_folder(digest: str, load_torch: Callable[[], tuple[Any, Any]]) -> Path:
    """The ONNX folder of the image model whose weights have ``digest``, exported on first use (a few seconds).

    ``load_torch`` returns (torch, the network in eval mode); it is only called when the folder is built.
    Raises ModelUnavailable when the export fails or does not match PyTorch.
    """
    target = data_dir() / "models" / f"image-onnx-{digest}-{_BUILD_FORMAT}"
    return built_folder(target, lambda tmp: _build(tmp, *load_torch()), what="the ONNX image model EfficientNet-Lite0")


class OnnxImageRuntime:
    """One ONNX Runtime session of the exported network: pixels (n, 3, 224, 224) -> pooled features (n, 1280)
    and class probabilities (n, 1000)."""

    def __init__(self, folder: Path, *, threads: int | None = None) -> None:
        ort = require("onnxruntime", "onnxruntime")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or default_threads()
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # a shared machine
        state = ort.capi.onnxruntime_pybind11_state  # ONNX Runtime's own error types derive from Exception
        try:
            self._session = ort.InferenceSession(str(folder / "model.onnx"), options,
                                                 providers=["CPUExecutionProvider"])
        except (state.Fail, state.InvalidProtobuf, state.NoSuchFile, state.InvalidGraph, OSError) as exc:
            raise ModelUnavailable(f"cannot load the ONNX image model {folder / 'model.onnx'} ({exc}); delete the "
                                   "folder to rebuild it") from exc

    def run(self, pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pooled, probs = self._session.run(None, {"pixels": np.ascontiguousarray(pixels, dtype=np.float32)})
        return np.asarray(pooled, dtype=np.float32), np.asarray(probs, dtype=np.float32)


def torch_runner(torch: Any, model: Any) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The same pixels -> (pooled features, class probabilities) pass in PyTorch."""

    def run(pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with torch.inference_mode():
            pooled = model.extract_features(torch.from_numpy(np.ascontiguousarray(pixels))).mean(dim=(2, 3))
            return pooled.numpy(), torch.softmax(model._fc(pooled), dim=-1).numpy()

    return run


def _probes() -> np.ndarray:
    """Fixed inputs in the model's pixel range [-1, 1]: noise, smooth gradients, stripes, flat colours."""
    rng = np.random.default_rng(20261202)
    size = 224
    ramp = np.linspace(-1.0, 1.0, size, dtype=np.float32)
    grad = np.stack([np.tile(ramp, (size, 1)), np.tile(ramp[:, None], (1, size)), np.outer(ramp, ramp)])
    stripes = np.where((np.arange(size) // 14) % 2 == 0, 0.9, -0.9).astype(np.float32)
    probes = [
        rng.uniform(-1.0, 1.0, (3, size, size)).astype(np.float32),
        np.clip(rng.normal(0.0, 0.35, (3, size, size)), -1.0, 1.0).astype(np.float32),
        grad,
        np.broadcast_to(np.tile(stripes, (size, 1)), (3, size, size)).copy(),
        np.full((3, size, size), 0.2, dtype=np.float32),
        np.full((3, size, size), -1.0, dtype=np.float32),
    ]
    return np.stack(probes)


def _build(folder: Path, torch: Any, model: Any) -> None:
    """Export the network, check it against PyTorch, and write the marker last."""
    require("onnx", "onnx==1.23.2")
    ort = require("onnxruntime", "onnxruntime")

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = model

        def forward(self, pixels: Any) -> Any:
            pooled = self.net.extract_features(pixels).mean(dim=(2, 3))
            return pooled, torch.softmax(self.net._fc(pooled), dim=-1)

    path = folder / "model.onnx"
    log.info("building the ONNX image model (EfficientNet-Lite0) once: export, check against PyTorch")
    axes = {"pixels": {0: "batch"}, "features": {0: "batch"}, "probabilities": {0: "batch"}}
    try:
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TracerWarnings about shapes that the dynamic batch axis covers
            torch.onnx.export(Head().eval(), (torch.zeros(1, 3, 224, 224),), str(path), input_names=["pixels"],
                              output_names=["features", "probabilities"], dynamic_axes=axes, opset_version=17,
                              dynamo=False)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ModelUnavailable(f"the image model cannot be exported to ONNX ({exc}); set "
                               f"{IMAGE_BACKEND_ENV}=torch") from exc
    probes = _probes()
    ref_feats, ref_probs = torch_runner(torch, model)(probes)
    runtime = OnnxImageRuntime(folder, threads=1)
    worst, spread = 1.0, 0.0
    # the probes as one batch and one by one: a batch axis that the export fixed by mistake would show here
    pairs = [(runtime.run(probes), ref_feats, ref_probs)]
    pairs += [(runtime.run(probes[i : i + 1]), ref_feats[i : i + 1], ref_probs[i : i + 1]) for i in range(len(probes))]
    for (feats, probs), ref_f, ref_p in pairs:
        cos = np.sum(ref_f * feats, axis=1) / (np.linalg.norm(ref_f, axis=1) * np.linalg.norm(feats, axis=1))
        worst = min(worst, float(cos.min()))
        spread = max(spread, float(np.abs(ref_p - probs).max()))
    if worst < MIN_COSINE or spread > MAX_PROBABILITY_DIFF:
        raise ModelUnavailable(f"the ONNX export of EfficientNet-Lite0 reaches cosine {worst:.6f} (at least "
                               f"{MIN_COSINE} needed) and probability difference {spread:.2e} (at most "
                               f"{MAX_PROBABILITY_DIFF}) against PyTorch; set {IMAGE_BACKEND_ENV}=torch")
    info = {"format": _BUILD_FORMAT, "model_id": "efficientnet-lite0-imagenet1k", "min_cosine": worst,
            "max_probability_diff": spread, "torch": torch.__version__, "onnxruntime": ort.__version__}
    (folder / BUILD_MARKER).write_text(json.dumps(info, indent=2), encoding="utf-8")
