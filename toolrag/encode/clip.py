"""CLIP (open_clip): text and images in one space. No CLIP weights ship in any package, so it is off unless
``TOOLRAG_CLIP_MODEL`` / ``--clip-model`` turns it on: a local checkpoint, or pretrained weights from the Hub
(e.g. :data:`ONLINE_CLIP`, the multilingual xlm-roberta ViT-B-32), downloaded when toolrag is online. A Hub
CLIP that cannot be loaded raises HubModelUnavailable: the CLIP signal is then off, with a note."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.config import env, is_off, is_online
from toolrag.encode.common import check_texts, require, unit_rows
from toolrag.encode.fallback import hub_error
from toolrag.encode.fingerprint import fingerprint
from toolrag.env_vars import CLIP_ENV, ONLINE_ENV
from toolrag.errors import HubModelUnavailable, ModelUnavailable, SettingsError
from toolrag.images import ImageSource, load_image

__all__ = ["ONLINE_CLIP", "ClipEncoder", "default_clip_setting"]

#: The CLIP to opt in to where the Hub is reachable (multilingual: Chinese and English requests).
ONLINE_CLIP = "xlm-roberta-base-ViT-B-32:laion5b_s13b_b90k"


def default_clip_setting() -> str:
    """``$TOOLRAG_CLIP_MODEL``, else ``"none"`` everywhere: no CLIP weights ship in a package."""
    return env(CLIP_ENV) or "none"


def _offline_clip(setting: str) -> HubModelUnavailable:
    reason = (f"toolrag is offline and {setting!r} would download its weights (set {ONLINE_ENV}=1 where the "
              f"Hub is reachable, or {CLIP_ENV} / --clip-model to a local checkpoint 'ARCH:/path/to/weights.pt' "
              "or 'none')")
    return HubModelUnavailable(f"CLIP needs weights that are not available offline: {reason}", reason=reason)


class ClipEncoder:
    """open_clip model from a setting: ``random:ARCH`` (seeded, for tests), ``ARCH:TAG``, ``hf-hub:org/name``,
    ``ARCH:/path/to/checkpoint.pt``. Text and image vectors share one space."""

    def __init__(self, setting: str) -> None:
        raw = setting.strip()
        if is_off(raw) or not raw:
            raise ModelUnavailable(f"CLIP is turned off ({CLIP_ENV} / --clip-model is {raw or 'empty'!r})")
        self._torch = require("torch", "torch")
        open_clip = require("open_clip", "open-clip-torch==3.3.0 torchvision")
        arch, pretrained, weights = self._parse(raw, open_clip)
        try:
            with self._torch.random.fork_rng(devices=[]):
                self._torch.manual_seed(0)
                model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=pretrained)
            self._tokenizer = open_clip.get_tokenizer(arch)
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            if weights is None and (pretrained is not None or raw.startswith("hf-hub:")):
                raise hub_error("CLIP", raw, exc) from exc
            raise ModelUnavailable(
                f"CLIP model {raw!r} cannot be loaded: {exc}; check {CLIP_ENV} / --clip-model") from exc
        self._model = model.eval()
        self._preprocess = preprocess
        self.name = raw
        self.model_id = raw if weights is None else f"{arch}:{weights.name}"
        self.dim = int(self._model.encode_text(self._tokenizer(["probe"])).shape[-1])
        self.fingerprint = fingerprint(self.model_id, dim=self.dim, weights=weights)

    @staticmethod
    def _parse(raw: str, open_clip: Any) -> tuple[str, str | None, Path | None]:
        """-> (architecture, open_clip ``pretrained`` argument, local weights file or None)."""
        if raw.startswith("hf-hub:"):
            if not is_online():
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
        if not is_online():
            raise _offline_clip(raw)
        return arch, rest, None

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length text vectors, shape (n, dim)."""
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), np.float32)
        with self._torch.inference_mode():
            out = self._model.encode_text(self._tokenizer(items)).float().numpy()
        return unit_rows(out, dim=self.dim, what=f"CLIP {self.model_id}")

    def encode_images(self, images: Sequence[ImageSource]) -> np.ndarray:
        """Unit-length image vectors, shape (n, dim)."""
        if not images:
            return np.zeros((0, self.dim), np.float32)
        with self._torch.inference_mode():
            batch = self._torch.stack([self._preprocess(load_image(i)) for i in images])
            out = self._model.encode_image(batch).float().numpy()
        return unit_rows(out, dim=self.dim, what=f"CLIP {self.model_id}")
