"""Encoders: text (sentence-transformers), image features and concepts (EfficientNet-Lite0), OCR (RapidOCR),
CLIP (open_clip) and a cross-encoder reranker; model resolution, packaged weights and fingerprints.

Every batch method returns float32 ``(n, dim)`` arrays with unit-length rows, so cosine similarity is a dot
product everywhere downstream. Heavy libraries are imported inside the class that needs them; a missing one
raises :class:`toolrag.errors.ModelUnavailable` naming the package to install.
"""

from toolrag.encode.models import ModelSet, load_models

__all__ = ["ModelSet", "load_models"]
