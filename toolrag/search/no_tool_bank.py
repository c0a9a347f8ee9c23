"""The decision's bank of requests that need no tool, read the way a retriever reads its requests (a Chinese one by
the English model through its English gloss), so the bank's vectors mean what a request's mean; and where their
vectors are cached."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolrag.config import data_dir as default_data_dir
from toolrag.decision.decider import Decider
from toolrag.decision.model import MODEL_FILE
from toolrag.errors import SettingsError
from toolrag.search.gloss import english_reading, gloss_key
from toolrag.search.query import QueryAnalyzer

__all__ = ["bank_decider", "bank_folder"]


def bank_decider(analyzer: QueryAnalyzer, *, folder: Path | None, path: Path = MODEL_FILE) -> Decider:
    """The decision of a retriever whose requests ``analyzer`` reads, with the model in ``path``: the no-tool
    requests are read the same way (a Chinese one by the English model through its gloss), so their vectors mean
    what a request's mean."""
    models = analyzer.models

    def encode(signal: str, texts: Sequence[str]) -> np.ndarray:
        model = models.text if signal == "dense" else models.english
        read = list(texts) if signal == "dense" else [english_reading(t) for t in texts]
        keep = [i for i, t in enumerate(read) if t]
        vectors = np.asarray(model.encode_queries([read[i] for i in keep]), dtype=np.float32)  # type: ignore[union-attr]
        matrix = np.full((len(read), vectors.shape[1] if len(keep) else model.dim), np.nan,  # type: ignore[union-attr]
                         dtype=np.float32)
        matrix[keep] = vectors
        return matrix

    signals = {"dense": models.text.fingerprint}
    if models.english is not None:
        signals["dense_en"] = f"{models.english.fingerprint}|{gloss_key()}"
    return Decider(encode, signals, folder=folder, path=path)


def bank_folder(data: Path) -> Path:
    """Where the no-tool requests' vectors are cached: beside the built models (they depend on the models only),
    else in the index's data folder."""
    try:
        return default_data_dir() / "models" / "no-tool-requests"
    except SettingsError:
        return data / "no-tool-requests"
