"""Cross-encoder reranking (sentence-transformers CrossEncoder) from a local folder or a Hub id. No
cross-encoder weights ship in a package, so it is off unless ``TOOLRAG_RERANK_MODEL`` / ``--rerank-model``
names one; a Hub id is downloaded when toolrag is online, else read from the local Hugging Face cache, and one
that cannot be loaded raises HubModelUnavailable (reranking is then off, with a note)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolrag.config import env, is_off, is_online
from toolrag.encode.common import check_texts, require
from toolrag.encode.fallback import hub_error
from toolrag.encode.fingerprint import fingerprint
from toolrag.env_vars import RERANK_ENV
from toolrag.errors import ModelUnavailable

__all__ = ["ONLINE_RERANK", "CrossEncoderReranker", "default_rerank_setting"]

#: The reranker to opt in to where the Hub is reachable (multilingual).
ONLINE_RERANK = "BAAI/bge-reranker-v2-m3"


def default_rerank_setting() -> str:
    """``$TOOLRAG_RERANK_MODEL``, else ``"none"`` everywhere: no cross-encoder weights ship in a package."""
    return env(RERANK_ENV) or "none"


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local folder or (online) a Hub id."""

    def __init__(self, setting: str, *, batch_size: int = 32) -> None:
        raw = setting.strip()
        if is_off(raw) or not raw:
            raise ModelUnavailable(
                f"reranking is turned off ({RERANK_ENV} / --rerank-model is {raw or 'empty'!r})")
        path = Path(raw).expanduser()
        if path.is_dir():
            location, weights = str(path.resolve()), path
        elif raw.startswith(("/", ".", "~")) or path.exists():
            raise ModelUnavailable(f"reranker folder {raw!r} not found (or not a folder); fix {RERANK_ENV}")
        else:
            location, weights = raw, None
        st = require("sentence_transformers", "sentence-transformers==6.2.0")
        try:  # a Hub id: downloaded online; offline only the local Hugging Face cache is read
            self._model = st.CrossEncoder(location, local_files_only=weights is not None or not is_online())
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            if weights is None:
                raise hub_error("reranker", raw, exc) from exc
            raise ModelUnavailable(f"reranker {raw!r} cannot be loaded: {exc}; check {RERANK_ENV}") from exc
        self.name, self.model_id, self.batch_size = raw, location, batch_size
        self.fingerprint = fingerprint(location, dim=1, weights=weights)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance score per passage (higher is better), float32 shape (n,)."""
        items = check_texts(passages)
        if not items:
            return np.zeros(0, np.float32)
        out = np.asarray(self._model.predict([(query, p) for p in items], batch_size=self.batch_size,
                                             show_progress_bar=False), dtype=np.float32).reshape(-1)
        if out.shape != (len(items),) or not np.all(np.isfinite(out)):
            raise ModelUnavailable(
                f"reranker {self.model_id} returned {out.shape} scores for {len(items)} passages")
        return out
