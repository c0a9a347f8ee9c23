"""Which episodes each pair of heads is fitted on, and with what weight (read by :mod:`bench.decision_fit`).

The text heads and the operating points read the text episodes alone, the image heads every episode but the
conversations, the history heads every episode without an image (with the conversations, and the ``fresh`` copies
of episodes a cache searched before the view read the request's own text in place of the ``stale`` ones). Each
group of sources weighs the same among the rows a pair of heads is fitted on, and each kind of episode its
:data:`KIND_WEIGHT` within it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["KIND_WEIGHT", "image_rows", "image_weights", "shared", "spoken_rows", "text_rows", "text_weights",
           "turn_rows", "turn_weights", "weights"]


#: The weight of a kind of episode: a request whose own tool was removed and its nearest siblings kept is the
#: hardest case, and half of the episodes built, but rarely what an agent sends (a request its tools serve, or
#: one nothing listed serves); at full weight the model learned a prior of "no tool" that real small catalogs
#: do not have (docs/decisions.md: P(right) 0.04 where 56% were right on the bundled catalog).
KIND_WEIGHT = {"sibling": 0.25, "cross_sibling": 0.25, "img_sibling": 0.25, "photo_sibling": 0.25,
               "follow_sibling": 0.25, "moved_on": 0.5}


def weights(groups: np.ndarray, kinds: np.ndarray | None = None) -> np.ndarray:
    """Each group the same total weight, each kind of episode its :data:`KIND_WEIGHT` within it."""
    base = np.ones(len(groups)) if kinds is None else np.array([KIND_WEIGHT.get(k, 1.0) for k in kinds])
    out = np.empty(len(groups))
    names = np.unique(groups)
    for name in names:
        held = groups == name
        out[held] = base[held] * len(groups) / (len(names) * base[held].sum())
    return out


def text_rows(records: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The text episodes: neither an image, nor a conversation of ``bench.decision_conversations``, nor an episode
    searched again for the history heads alone (``fresh``: ``bench.decision_train``)."""
    return np.array([not r.get("image") and shared(r) for r in records], dtype=bool)


def shared(record: Mapping[str, Any]) -> bool:
    """Whether the text and image heads are fitted on ``record``: not a conversation, not ``fresh``."""
    from bench.decision_conversations import CONVERSATION_KINDS

    return record["kind"] not in CONVERSATION_KINDS and not record.get("fresh")


def image_rows(records: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The episodes the image heads are fitted on: every one but the conversations and the ``fresh`` ones."""
    return np.array([shared(r) for r in records], dtype=bool)


def spoken_rows(records: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The episodes the history heads are fitted on: every one without an image but the ``stale`` ones (searched
    before the view read the request's own text; their ``fresh`` copies stand in)."""
    return np.array([not r.get("image") and not r.get("stale") for r in records], dtype=bool)


def image_weights(groups: np.ndarray, records: Sequence[Mapping[str, Any]], w: np.ndarray) -> np.ndarray:
    """The weights the image heads are fitted with: as if there were no conversations (each group the same total
    among the others; conversations 0)."""
    seen = image_rows(records)
    if seen.all():
        return w
    out = np.zeros(len(records))
    out[seen] = weights(groups[seen], np.array([r["kind"] for r, k in zip(records, seen, strict=True) if k]))
    return out


def turn_rows(records: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The episodes whose request has earlier turns and no image (but the ``stale`` ones): read by the history
    heads."""
    return np.array([bool(r["history"]) for r in records], dtype=bool) & spoken_rows(records)


def turn_weights(groups: np.ndarray, records: Sequence[Mapping[str, Any]]) -> np.ndarray | None:
    """The weights the history heads are fitted with (each group the same total among :func:`spoken_rows`; the
    others 0), or ``None`` without conversations: then there are no history heads."""
    from bench.decision_conversations import CONVERSATION_KINDS

    if not any(r["kind"] in CONVERSATION_KINDS for r in records):
        return None
    spoken = spoken_rows(records)
    out = np.zeros(len(records))
    out[spoken] = weights(groups[spoken], np.array([r["kind"] for r, t in zip(records, spoken, strict=True) if t]))
    return out


def text_weights(groups: np.ndarray, records: Sequence[Mapping[str, Any]], w: np.ndarray) -> np.ndarray:
    """The weights of the text episodes as if there were neither image episodes nor conversations (each group the
    same total among the text episodes; the others 0): the text heads and the operating points are fitted on
    these."""
    text = text_rows(records)
    out = np.zeros(len(records))
    out[text] = weights(groups[text], np.array([r["kind"] for r, t in zip(records, text, strict=True) if t]))
    return out if not text.all() else w
