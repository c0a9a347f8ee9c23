"""What the trained relevance model reads of a request and of a tool: one definition for training and serving.

The model (a cross-encoder initialised from the packaged all-MiniLM-L6-v2, trained by ``python -m bench.train``)
reads English. A mostly-Chinese text is read through its English gloss (:mod:`toolrag.search.gloss`), the same
reading the English text model and BM25 already use, on both sides: the request, and the tool's card.

A tool's card is its humanised name and description, then its tags: short, because the model reads request
and card together in at most :data:`MAX_TOKENS` tokens.
"""

from __future__ import annotations

from toolrag.catalog.names import humanize
from toolrag.catalog.profile import ToolProfile
from toolrag.search.gloss import english_reading

__all__ = ["MAX_CARD_CHARS", "MAX_TOKENS", "card_text", "request_text"]

#: Tokens the model reads of a request and a card together (longer cards are cut).
MAX_TOKENS = 96
#: Characters of a card kept before tokenising (more could never fit in :data:`MAX_TOKENS`).
MAX_CARD_CHARS = 600


def card_text(name: str, description: str, tags: tuple[str, ...] | list[str] = ()) -> str:
    """The card of a tool as the model reads it: ``humanised name: description. Tags: a, b``, glossed when
    mostly Chinese."""
    text = f"{humanize(name)}: {' '.join(description.split())}"
    if tags:
        text += " Tags: " + ", ".join(tags) + "."
    return english_reading(text[:MAX_CARD_CHARS]) or text[:MAX_CARD_CHARS]


def profile_card(tool: ToolProfile) -> str:
    """:func:`card_text` of a catalog profile."""
    return card_text(tool.name, tool.description, tuple(tool.tags))


def request_text(text: str, gloss: str = "") -> str:
    """What the model reads of a request: its English gloss when it has one (a mostly-Chinese request), else
    the text as the encoders read it."""
    return gloss or english_reading(text) or text
