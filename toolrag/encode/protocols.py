"""Small protocols for the collaborators the index and the retriever use, so they can be injected.

The real implementations live in :mod:`toolrag.encode` (one module per model); tests of pure logic may pass
small stand-ins, and the same end-to-end code runs with the real models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

__all__ = ["ClipModel", "ImageModel", "OcrModel", "Reranker", "TextModel"]


class TextModel(Protocol):
    @property
    def dim(self) -> int: ...

    @property
    def fingerprint(self) -> str: ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray: ...


class ImageModel(Protocol):
    @property
    def dim(self) -> int: ...

    @property
    def fingerprint(self) -> str: ...

    def features(self, images: Sequence[Any]) -> np.ndarray: ...

    def analyze(self, image: Any) -> tuple[np.ndarray, list[tuple[str, float]]]: ...


class OcrModel(Protocol):
    def read(self, image: Any, *, max_lines: int | None = None, detector_side: int | None = None) -> Any: ...


class ClipModel(Protocol):
    @property
    def dim(self) -> int: ...

    @property
    def fingerprint(self) -> str: ...

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_images(self, images: Sequence[Any]) -> np.ndarray: ...


class Reranker(Protocol):
    def score(self, query: str, passages: Sequence[str]) -> np.ndarray: ...
