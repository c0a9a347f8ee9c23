"""Building a text model once into an ONNX Runtime folder: export, graph fusion, int8 quantisation, check.

Why: a search encodes its request with two text models, and sentence-transformers on PyTorch spends more time
in per-call overhead than in the arithmetic of a 10-token request. The same weights exported to ONNX, with
ONNX Runtime's BERT fusions (one attention and one GELU kernel per layer) and the linear layers quantised to
int8 (per output channel, activations quantised at run time), encode a request several times faster
(docs/benchmarks.md, "Text encoders").

The folder is derived only from the packaged (or given) weights - nothing is downloaded - and lives in
``data_dir()/models/text-onnx-<backend>-<digest>``. It is built in a temporary folder beside it and renamed
into place once complete (the marker file is written last), like the packaged e5 folder: a crash never leaves
a half folder that looks finished. Before a build is accepted, its vectors are compared with
sentence-transformers' on a fixed set of probe texts (English, Chinese, full-width, emoji, a long text, with
the query and passage prompts); a build that falls below the backend's bound is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.config import choice_setting, data_dir
from toolrag.encode.built_folder import BUILD_MARKER, built_folder
from toolrag.encode.common import require
from toolrag.encode.fingerprint import weights_digest
from toolrag.encode.onnx_text import OnnxTextRuntime
from toolrag.env_vars import TEXT_BACKEND_ENV
from toolrag.errors import HubModelUnavailable, ModelUnavailable

__all__ = ["TextBackend", "onnx_text_folder", "text_backend"]

log = logging.getLogger(__name__)


class TextBackend(str, Enum):
    """How a text model runs: ``onnx-int8`` (default), ``onnx`` (fp32) or ``torch`` (sentence-transformers).

    Each one gives slightly different vectors, so each has its own model fingerprint and its own index."""

    ONNX_INT8 = "onnx-int8"
    ONNX = "onnx"
    TORCH = "torch"


DEFAULT_BACKEND = TextBackend.ONNX_INT8


#: The least cosine to sentence-transformers' vector, over the probe texts, that a build must reach.
MIN_COSINE = {TextBackend.ONNX: 0.999, TextBackend.ONNX_INT8: 0.97}

_BUILD_FORMAT = 1
#: Where ONNX Runtime's quantiser lives: it logs through the root logger (``logging.info``/``warning``), about
#: one line per tensor ("Quantization parameters for tensor ... not specified") and a pre-processing hint.
_QUANTISER = f"{os.sep}onnxruntime{os.sep}quantization{os.sep}"


@contextmanager
def quantiser_quiet() -> Iterator[None]:
    """Drop what ONNX Runtime's quantiser logs on the root logger while the block runs (a first
    ``python app.py`` printed about 100 ``INFO root: Quantization parameters ...`` lines); the build says what
    it does through toolrag's own logger instead.

    The quantiser's ``logging.warning`` on a root logger without handlers would also call
    ``logging.basicConfig()`` and leave the caller's application with a root handler it never asked for. While
    the block runs, a root logger without handlers gets ``logging.lastResort`` (what an unhandled warning
    reaches anyway), so nothing is configured and any other warning still prints as before; both are taken away
    afterwards."""
    root = logging.getLogger()

    def keep(record: logging.LogRecord) -> bool:
        return _QUANTISER not in record.pathname

    stand_in = logging.lastResort if not root.handlers else None
    if stand_in is not None:
        root.addHandler(stand_in)
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)
        if stand_in is not None:
            root.removeHandler(stand_in)


_PROBES = (
    "what's the weather in Paris right now",
    "北京现在天气怎么样？帮我查一下明天的预报",
    "submit this taxi receipt for reimbursement: 45.80 EUR, SKU-1001, query_stock()",
    "ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ １２３ and emoji 😀🚀",
    "Book a meeting room for a time slot and invite attendees. " * 40,  # longer than any max length
    "x",
)


def text_backend(value: str | TextBackend | None = None) -> TextBackend:
    """The backend named by ``value``, else by ``TOOLRAG_TEXT_BACKEND``, else :data:`DEFAULT_BACKEND`."""
    return choice_setting(TextBackend, value, env=TEXT_BACKEND_ENV, default=DEFAULT_BACKEND, what="text backend")


def onnx_text_folder(location: str, *, model_id: str, weights: str | None, local: bool,
                     backend: TextBackend) -> Path:
    """The ONNX folder of one text model and backend, building it on first use (tens of seconds).

    ``location`` is what sentence-transformers loads (a folder or a Hub id), ``weights`` the local weights
    folder (``None`` for a Hub id: its id names it). Raises ModelUnavailable when the model cannot be exported
    or its ONNX vectors do not match sentence-transformers'.
    """
    if backend is TextBackend.TORCH:
        raise ValueError("the torch backend has no ONNX folder")
    source = weights_digest(weights) if weights else "id"
    key = hashlib.sha256(f"{model_id}|{source}|{backend.value}|{_BUILD_FORMAT}".encode()).hexdigest()[:16]
    target = data_dir() / "models" / f"text-onnx-{backend.value}-{key}"
    return built_folder(target, lambda tmp: _build(location, tmp, model_id=model_id, local=local, backend=backend,
                                                   hub=weights is None),
                        what=f"the ONNX text model {model_id} ({backend.value})")


def _build(location: str, folder: Path, *, model_id: str, local: bool, backend: TextBackend, hub: bool) -> None:
    """Export, fuse, (quantise), check and write a complete folder; the marker file is written last."""
    st = require("sentence_transformers", "sentence-transformers==6.2.0")
    torch = require("torch", "torch")
    ort = require("onnxruntime", "onnxruntime")
    require("onnx", "onnx==1.23.2")
    try:  # eager attention exports the pattern ONNX Runtime's fusions recognise
        model = st.SentenceTransformer(location, local_files_only=local,
                                       model_kwargs={"attn_implementation": "eager"})
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        if hub:  # the Hub could not serve it: the caller falls back, no second try with torch
            raise HubModelUnavailable(f"text model {model_id} cannot be loaded for export: {exc}",
                                      reason=str(exc)) from exc
        raise ModelUnavailable(f"text model {model_id} cannot be loaded for export: {exc}") from exc
    modules = list(model)
    pooling = modules[1] if len(modules) > 1 else None
    kinds = [type(m).__name__ for m in modules]
    mode = getattr(pooling, "pooling_mode", None)
    if (kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:])
            or mode not in ("mean", "cls") or not getattr(pooling, "include_prompt", True)):
        raise ModelUnavailable(f"text model {model_id} has modules {kinds} (pooling {mode!r}); the ONNX export "
                               "supports a transformer with mean or CLS pooling: use the torch backend")
    auto = modules[0].auto_model.eval()
    import inspect

    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in inspect.signature(auto.forward).parameters:
        names.append("token_type_ids")
    raw = folder / "export.onnx"
    log.info("building the ONNX text model %s (%s) once: export, fuse%s, check (about a minute)", model_id,
             backend.value, ", quantise" if backend is TextBackend.ONNX_INT8 else "")
    _export(torch, auto, names, mode, raw)
    fused = _fuse(raw, folder / "fused.onnx", auto.config)
    final = folder / "model.onnx"
    if backend is TextBackend.ONNX_INT8:
        from onnx import TensorProto
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # Per output channel: one scale per tensor loses several times more (cosine 0.92 against 0.99 for
        # MiniLM). Activations are quantised per tensor at run time, so the vectors of texts encoded in one
        # batch depend a little on each other (queries are therefore encoded one by one). Keeping the
        # feed-forward output projections in fp32 brings e5 from cosine 0.997 to 0.999 but doubles its cost;
        # the shipped fusion does not need it (docs/benchmarks.md, "Text encoders").
        log.info("quantising %s to int8 (once; its log is kept quiet)", model_id)
        with quantiser_quiet():
            quantize_dynamic(fused, final, weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"DefaultTensorType": TensorProto.FLOAT})
    else:
        os.replace(fused, final)
    for leftover in (raw, fused):
        leftover.unlink(missing_ok=True)
    tokenizer = model.tokenizer
    (folder / "tokenizer.json").write_text(tokenizer.backend_tokenizer.to_str(), encoding="utf-8")
    info: dict[str, Any] = {
        "format": _BUILD_FORMAT, "backend": backend.value, "model_id": model_id, "dim": int(auto.config.hidden_size),
        "max_seq_length": int(model.max_seq_length), "pad_id": int(tokenizer.pad_token_id or 0),
        "inputs": names, "pooling": mode, "prompts": {k: v for k, v in (model.prompts or {}).items() if v},
        "torch": torch.__version__, "onnxruntime": ort.__version__,
    }
    info["min_cosine"] = _check(model, folder, info, backend)
    (folder / BUILD_MARKER).write_text(json.dumps(info, indent=2, ensure_ascii=False), encoding="utf-8")


def _export(torch: Any, auto: Any, names: list[str], mode: str, path: Path) -> None:
    """torch.onnx (TorchScript exporter): token embeddings -> pooling -> L2 normalisation, dynamic shapes."""

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.auto = auto

        def forward(self, *inputs: Any) -> Any:
            hidden = self.auto(**dict(zip(names, inputs, strict=True))).last_hidden_state
            if mode == "cls":
                pooled = hidden[:, 0]
            else:
                mask = inputs[1].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    ids = torch.full((2, 8), 5, dtype=torch.long)
    dummy = tuple(ids if n == "input_ids" else torch.ones_like(ids) if n == "attention_mask" else
                  torch.zeros_like(ids) for n in names)
    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    axes["embedding"] = {0: "batch"}
    import warnings

    with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about shapes that the dynamic axes cover
        torch.onnx.export(Pooled().eval(), dummy, str(path), input_names=names, output_names=["embedding"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)


def _fuse(raw: Path, out: Path, config: Any) -> Path:
    """ONNX Runtime's BERT fusions (attention, GELU, layer norms); the plain export when they do not apply."""
    try:
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        heads, hidden = int(config.num_attention_heads), int(config.hidden_size)
        optimized = optimize_model(str(raw), model_type="bert", num_heads=heads, hidden_size=hidden,
                                   optimization_options=FusionOptions("bert"), opt_level=1)
        optimized.save_model_to_file(str(out))
        log.info("ONNX fusions: %s", optimized.get_fused_operator_statistics())
        return out
    except (ImportError, AttributeError, ValueError, RuntimeError, KeyError) as exc:
        log.warning("ONNX Runtime's fusions do not apply to this model (%s); using the plain export", exc)
        return raw


def _check(model: Any, folder: Path, info: dict[str, Any], backend: TextBackend) -> float:
    """Least cosine between the build's vectors and sentence-transformers' on the probe texts (both prompts,
    one text at a time and as one batch); raises ModelUnavailable below :data:`MIN_COSINE`."""
    runtime = OnnxTextRuntime(folder, info=info, threads=1)
    worst = 1.0
    for prompt in sorted(set(info["prompts"].values()) or {""}):
        texts = [prompt + p for p in _PROBES]
        ref = np.asarray(model.encode(texts, convert_to_numpy=True, normalize_embeddings=True,
                                      show_progress_bar=False), dtype=np.float32)
        for got in (runtime.run(texts), np.concatenate([runtime.run([t]) for t in texts])):
            worst = min(worst, float(np.min(np.sum(ref * got, axis=1))))
    if worst < MIN_COSINE[backend]:
        raise ModelUnavailable(f"the {backend.value} export of {info['model_id']} reaches cosine {worst:.4f} to "
                               f"sentence-transformers (at least {MIN_COSINE[backend]} needed): use the torch "
                               f"backend ({TEXT_BACKEND_ENV}=torch)")
    return worst
