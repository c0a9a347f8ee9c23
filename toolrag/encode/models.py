"""The set of models an index and a retriever use, loaded once per process and shared.

:func:`load_models` loads the real models named by the settings; a model that cannot load here (no weights
offline, a missing package) is recorded in :attr:`ModelSet.unavailable` under its role, and the signals that
need it are absent (never scored as zero). OCR loads on first use: only query images and new example images
need it. Each model is one instance per process (``get_*``), because loading costs seconds and hundreds of MB
while encoding costs milliseconds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from toolrag.config import is_off
from toolrag.encode.clip import ClipEncoder, default_clip_setting
from toolrag.encode.common import shared
from toolrag.encode.fallback import load_or_fall_back
from toolrag.encode.ocr import OcrEngine
from toolrag.encode.onnx_build import TextBackend, text_backend
from toolrag.encode.protocols import ClipModel, ImageModel, OcrModel, TextModel
from toolrag.encode.rerank import CrossEncoderReranker, default_rerank_setting
from toolrag.encode.text import TextEncoder
from toolrag.encode.vision import ImageFeatureEncoder
from toolrag.env_vars import CLIP_ENV
from toolrag.errors import ModelUnavailable, ToolragError
from toolrag.progress import Progress
from toolrag.settings import Settings
from toolrag.signals import ModelRole, signal

__all__ = ["ModelSet", "get_clip", "get_image_encoder", "get_ocr", "get_reranker", "get_text_encoder",
           "load_models"]

log = logging.getLogger(__name__)


@dataclass
class ModelSet:
    """The models an index and a retriever use; a missing one is in ``unavailable`` (role -> reason).

    Keys of ``unavailable`` are :class:`toolrag.signals.ModelRole` values (``text``, ``english``, ``image``,
    ``ocr``, ``clip``); :meth:`signal_reason` says why a signal cannot run. OCR is loaded on first use
    (:meth:`get_ocr`).
    """

    text: TextModel
    english: TextModel | None = None
    image: ImageModel | None = None
    clip: ClipModel | None = None
    ocr_factory: Callable[[], OcrModel] | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    fallbacks: dict[str, str] = field(default_factory=dict)
    """Opt-in Hub models that could not be loaded, by setting (``text_model``, ``english_model``,
    ``clip_model``) -> the note saying which packaged model (or none) runs instead (:mod:`.fallback`)."""
    # Not init fields: dataclasses.replace(models, ocr_factory=...) starts without the old OCR instance.
    _ocr: OcrModel | None = field(default=None, init=False, repr=False)
    _ocr_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        # Its own notes: dataclasses.replace(models, ocr_factory=None) hands the new set the same dicts, and its
        # "OCR turned off" would otherwise turn OCR off for the set it was copied from.
        self.unavailable = dict(self.unavailable)
        self.fallbacks = dict(self.fallbacks)

    def get_ocr(self) -> OcrModel | None:
        """The OCR model, loaded once; ``None`` (and a reason in ``unavailable``) when it cannot load."""
        with self._ocr_lock:
            if self._ocr is None and ModelRole.OCR.value not in self.unavailable and self.ocr_factory is not None:
                try:
                    self._ocr = self.ocr_factory()
                except ToolragError as exc:
                    self.unavailable[ModelRole.OCR.value] = f"OCR unavailable: {exc}"
                    log.warning(self.unavailable[ModelRole.OCR.value])
            if self._ocr is None and ModelRole.OCR.value not in self.unavailable:
                self.unavailable[ModelRole.OCR.value] = "OCR turned off"
            return self._ocr

    def has(self, role: ModelRole) -> bool:
        """Whether the model of ``role`` is configured (OCR: whether it can be loaded on demand)."""
        if role is ModelRole.OCR:
            return self.ocr_factory is not None and ModelRole.OCR.value not in self.unavailable
        return getattr(self, role.value) is not None

    def signal_reason(self, name: str) -> str | None:
        """Why signal ``name`` cannot run with these models (``None`` when its model is here)."""
        role = signal(name).model
        if role is None or self.has(role):
            return None
        return self.unavailable.get(role.value, f"the {role.value} model is not loaded")


def get_text_encoder(setting: str = "e5", backend: str | TextBackend | None = None) -> TextEncoder:
    """The one encoder of ``setting`` run by ``backend`` (default ``TOOLRAG_TEXT_BACKEND``, else onnx-int8)."""
    chosen = text_backend(backend)
    return shared("text", f"{setting.strip()}|{chosen.value}", lambda: TextEncoder(setting, backend=chosen))


def get_image_encoder() -> ImageFeatureEncoder:
    return shared("image", "", ImageFeatureEncoder)


def get_ocr() -> OcrEngine:
    return shared("ocr", "", OcrEngine)


def get_clip(setting: str | None = None) -> ClipEncoder:
    chosen = default_clip_setting() if setting is None else setting
    return shared("clip", chosen.strip(), lambda: ClipEncoder(chosen))


def get_reranker(setting: str | None = None) -> CrossEncoderReranker:
    chosen = default_rerank_setting() if setting is None else setting
    return shared("rerank", chosen.strip(), lambda: CrossEncoderReranker(chosen))


def load_models(settings: Settings, *, progress: Progress | None = None) -> ModelSet:
    """Load the real models named by ``settings``; a model that can't load makes its signals absent, and an
    opt-in Hub model that can't load is replaced by the packaged model of its role (``fallbacks`` says so)."""
    say = progress or (lambda f, m: None)
    say(0.0, f"loading text model {settings.text_model}")
    text, note = load_or_fall_back("text_model", settings.text_model, get_text_encoder)
    if text is None:  # only when PACKAGED_MODELS names no text model: every index needs one
        raise ModelUnavailable(f"no text model could be loaded: {note}")
    models = ModelSet(text=text, ocr_factory=get_ocr)
    models.fallbacks.update({"text_model": note} if note else {})
    if settings.english_model:
        say(0.3, f"loading English model {settings.english_model}")
        try:
            models.english, note = load_or_fall_back("english_model", settings.english_model, get_text_encoder)
            models.fallbacks.update({"english_model": note} if note else {})
        except ModelUnavailable as exc:
            models.unavailable[ModelRole.ENGLISH.value] = str(exc)
    else:
        models.unavailable[ModelRole.ENGLISH.value] = "English model turned off (english_model: none)"
    say(0.5, "loading image model")
    try:
        models.image = get_image_encoder()
    except ModelUnavailable as exc:
        models.unavailable[ModelRole.IMAGE.value] = str(exc)
    clip_setting = settings.clip_model if settings.clip_model is not None else default_clip_setting()
    if not is_off(clip_setting):
        say(0.7, f"loading CLIP {clip_setting}")
        try:
            models.clip, note = load_or_fall_back("clip_model", clip_setting, get_clip)
            if note:
                models.fallbacks["clip_model"] = models.unavailable[ModelRole.CLIP.value] = note
        except ModelUnavailable as exc:
            models.unavailable[ModelRole.CLIP.value] = str(exc)
    else:
        models.unavailable[ModelRole.CLIP.value] = (
            f"CLIP is off: no CLIP weights ship in a package; set {CLIP_ENV} (or --clip-model) to an open_clip "
            "model to enable it")
    say(1.0, "models ready")
    return models
