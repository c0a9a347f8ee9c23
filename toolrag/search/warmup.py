"""Warming the models up in the background, so the first request pays no model load (the app and ``toolrag
serve`` start it once their index is open).

RapidOCR loads its detector and recogniser on first use (about a second each on this CPU), jieba its dictionary,
the gloss its Chinese-English dictionary (0.6 s), and every ONNX Runtime or PyTorch model spends its first run
allocating and planning; an app that starts serving at once would hand those seconds to its first user.
:func:`warm_up` runs each model once on a small image with text, in the caller's thread;
:func:`warm_up_in_background` does it in a background thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from PIL import Image, ImageDraw, ImageFont

from toolrag.config import switch_setting
from toolrag.encode.models import ModelSet
from toolrag.env_vars import WARMUP_ENV
from toolrag.errors import ToolragError
from toolrag.index.tokenize import load_segmenter
from toolrag.language import load_identifier
from toolrag.search.gloss import load_dictionary
from toolrag.search.prompting import count_tokens
from toolrag.search.query import QUERY_OCR_LINES, QUERY_OCR_SIDE

__all__ = ["warm_up", "warm_up_in_background"]

log = logging.getLogger(__name__)


def _sample_image() -> Image.Image:
    """A small picture with one printed line, so the OCR detector finds text and loads its recogniser."""
    img = Image.new("RGB", (480, 120), "white")
    ImageDraw.Draw(img).text((20, 30), "Invoice 2024", font=ImageFont.load_default(size=48), fill=(0, 0, 0))
    return img


def warm_up(models: ModelSet, *, decision: Callable[[], object] | None = None) -> list[str]:
    """Run OCR, the image model, the text models, the keyword tokenizer and the schema token counter once, then
    ``decision`` (a retriever's no-tool bank: encoded on first need, else read from its cache); returns the names
    of what was warmed.

    Never raises for a model that cannot run: that model is simply left cold (its signal reports why)."""
    warmed: list[str] = []
    image = _sample_image()
    try:
        ocr = models.get_ocr()
        if ocr is not None:
            ocr.read(image, max_lines=QUERY_OCR_LINES, detector_side=QUERY_OCR_SIDE)
            warmed.append("ocr")
        if models.image is not None:
            models.image.analyze(image)
            warmed.append("image")
        for name, model in (("text", models.text), ("english", models.english)):
            if model is not None:
                model.encode_queries(["warm up"])
                warmed.append(name)
        # The keyword tokenizer loads jieba's dictionary on its first Chinese text (0.8 s here). An index
        # restored from its saved state tokenised nothing, so the first request with Chinese in it (typed,
        # or read from its image) would pay it.
        load_segmenter()
        warmed.append("tokenizer")
        # The Chinese-English dictionary of the gloss (toolrag.search.gloss): read on the first Chinese request.
        if load_dictionary():
            warmed.append("dictionary")
        # The language identifier (toolrag.language): about 2 s to read, on the first request otherwise.
        load_identifier()
        warmed.append("language")
        # The token counter of the schemas (tiktoken's cl100k table): 0.3 s on the first search otherwise.
        count_tokens("warm up")
        warmed.append("tokens")
        if decision is not None:
            decision()
            warmed.append("decision")
    except (ToolragError, OSError, RuntimeError, ValueError) as exc:
        log.warning("model warm-up stopped early (%s); the first request pays the rest", exc)
    return warmed


def warm_up_in_background(models: ModelSet, *,
                          decision: Callable[[], object] | None = None) -> threading.Thread | None:
    """:func:`warm_up` in a background thread (started); join it to wait. Not a daemon thread: a process that
    ends during the warm-up waits for it rather than being torn down inside a model's native code. ``None``
    where ``TOOLRAG_WARMUP=off`` (a text-only service that should not load OCR, or a test's child process)."""
    if not switch_setting(WARMUP_ENV, meaning="leave each model's load to the first request that needs it"):
        return None
    thread = threading.Thread(target=warm_up, args=(models,), kwargs={"decision": decision}, name="toolrag-warm-up")
    thread.start()
    return thread
