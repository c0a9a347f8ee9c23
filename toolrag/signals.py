"""The one registry of retrieval signals, the query vectors they read and the collections they score against.

Every other module asks this registry instead of relying on string conventions: the retriever knows which
query vector probes which collection, the index knows which collections to open for the models it has, the
app knows which model a signal needs (so it names the right reason when one is off), and weights, flags and
explanations use the same signal names.

| signal | reads | query vector(s) -> tool collection(s) | model role | image? |
|---|---|---|---|---|
| dense | request text (+ earlier turns) | dense -> dense | text | no |
| dense_en | request text, English only | dense_en -> dense_en | english | no |
| bm25 | request words (+ OCR words) | (keyword index) | - | no |
| ocr | text read from the image | ocr -> dense (+ image_text) | ocr | yes |
| visual | the image's features | visual -> visual | image | yes |
| concepts | ImageNet labels of the image | concepts -> dense | image | yes |
| clip | text and image, cross-modal | clip_text -> clip_image, clip_image -> clip_text | clip | no |
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "COLLECTIONS",
    "IMAGE_SIGNALS",
    "SIGNALS",
    "SIGNAL_SPECS",
    "TEXT_SIGNALS",
    "CollectionSpec",
    "ModelRole",
    "Signal",
    "signal",
]


class ModelRole(str, Enum):
    """The models of a :class:`toolrag.encode.models.ModelSet`, by what they do."""

    TEXT = "text"        # multilingual text encoder (e5): tool documents, requests, OCR text, concepts
    ENGLISH = "english"  # English text encoder (MiniLM): English requests against English tools
    IMAGE = "image"      # EfficientNet-Lite0: image features and ImageNet concepts
    OCR = "ocr"          # RapidOCR: text in images
    CLIP = "clip"        # open_clip: text and images in one space


@dataclass(frozen=True)
class Signal:
    """One signal: its name (weights, flags, explanations), label, the model it needs and what it probes."""

    name: str
    label: str
    model: ModelRole | None
    """The model the signal needs (``None``: no model, BM25); off or failed -> the signal is absent."""
    needs_image: bool
    """Only a request with an image can produce it."""
    probes: tuple[tuple[str, str], ...]
    """(query-vector key, collection kind) pairs: which query vector is compared with which tool vectors."""
    text: bool
    """A text signal: its weights are what ``toolrag tune`` tunes (the text share of the fusion)."""

    @property
    def query_keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.probes)


@dataclass(frozen=True)
class CollectionSpec:
    """One Chroma collection of tool-side vectors: its kind (part of its name), the model that fills it and
    what each row holds."""

    kind: str
    model: ModelRole
    rows: str
    """``tool`` (one row per tool, its document), ``image`` (one per example image) or ``image_text`` (the
    text read in an example image, encoded by the text model)."""
    requires: tuple[ModelRole, ...] = ()
    """Other models the collection needs (OCR reads the text that the text model encodes)."""


SIGNAL_SPECS: tuple[Signal, ...] = (
    Signal("dense", "dense text (multilingual)", ModelRole.TEXT, False, (("dense", "dense"),), True),
    Signal("dense_en", "dense text (English model)", ModelRole.ENGLISH, False, (("dense_en", "dense_en"),), True),
    Signal("bm25", "BM25 keywords", None, False, (), True),
    Signal("ocr", "OCR text from the image", ModelRole.OCR, True, (("ocr", "dense"),), False),
    Signal("visual", "visual similarity to example images", ModelRole.IMAGE, True, (("visual", "visual"),), False),
    Signal("concepts", "visual concepts (ImageNet labels)", ModelRole.IMAGE, True, (("concepts", "dense"),), False),
    Signal("clip", "CLIP cross-modal", ModelRole.CLIP, False,
           (("clip_text", "clip_image"), ("clip_image", "clip_text")), False),
)
#: The signal names, in the order of every table and weight list.
SIGNALS: tuple[str, ...] = tuple(s.name for s in SIGNAL_SPECS)
#: Signals that read the request text (and earlier turns): the ones ``toolrag tune`` weighs.
TEXT_SIGNALS: tuple[str, ...] = tuple(s.name for s in SIGNAL_SPECS if s.text)
#: Signals that read the request image.
IMAGE_SIGNALS: tuple[str, ...] = tuple(s.name for s in SIGNAL_SPECS if not s.text)
_BY_NAME = {s.name: s for s in SIGNAL_SPECS}

COLLECTIONS: tuple[CollectionSpec, ...] = (
    CollectionSpec("dense", ModelRole.TEXT, "tool"),
    CollectionSpec("dense_en", ModelRole.ENGLISH, "tool"),
    CollectionSpec("visual", ModelRole.IMAGE, "image"),
    CollectionSpec("clip_text", ModelRole.CLIP, "tool"),
    CollectionSpec("clip_image", ModelRole.CLIP, "image"),
    CollectionSpec("image_text", ModelRole.TEXT, "image_text", requires=(ModelRole.OCR,)),
)


def signal(name: str) -> Signal:
    """The signal called ``name``; a KeyError names the valid ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown signal {name!r}; signals: {', '.join(SIGNALS)}") from None
