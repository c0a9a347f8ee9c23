"""Requests that need no tool, as a yardstick: how far a request stands out for a tool from chit-chat.

A raw cosine says little on its own: some tool descriptions come close to every request (e5 puts unrelated
pairs at 0.71-0.80). Standing against the bundled requests that need no tool (``toolrag/data/
no_tool_requests.yaml``, written for toolrag: chit-chat, knowledge, arithmetic, writing, advice, coding, fun; in
English and Chinese, and 15 each in Japanese, Korean, Russian, Spanish, German, French, Portuguese and Vietnamese)
puts every tool on one scale, whatever the catalog's size: z = (cos(request, tool) - their mean cosine to the tool)
/ their spread, against the bank's requests in the request's language (:meth:`NullBank.z`; a language with fewer
than :data:`MIN_ROWS` of them: against all of them). This is what lets one
decision model read a catalog of one tool and one of a thousand alike.

The bank's vectors are encoded once per text model and cached beside the built models; the encoder comes from
the caller (the search layer's analyzer reads a Chinese request through its English gloss, and so it reads the
bank), so this module needs no model.
"""

from __future__ import annotations

import hashlib
import io
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from toolrag.errors import StoreError
from toolrag.files import write_atomic
from toolrag.language import UNDETERMINED, detect_language
from toolrag.stats import standard_scores
from toolrag.yamlio import read_yaml

__all__ = ["ALL", "BANK_FILE", "MIN_ROWS", "NullBank", "bank_texts", "standing"]

log = logging.getLogger(__name__)

BANK_FILE = Path(__file__).resolve().parent.parent / "data" / "no_tool_requests.yaml"

#: A language needs at least this many of the bank's requests to be its own yardstick.
MIN_ROWS = 10
#: The group of a request in a language the bank has too few requests in: all of them (the multilingual model
#: places a request near its meaning in any language; the English model reads none of those requests).
ALL = "*"

#: An encoder of the bank: (signal, texts) -> one row per text (NaN rows for texts the signal cannot read).
Encode = Callable[[str, Sequence[str]], np.ndarray]


def bank_texts(path: Path = BANK_FILE) -> tuple[str, ...]:
    """The bundled requests that need no tool, in file order."""
    data = read_yaml(path.read_text(encoding="utf-8"))
    return tuple(str(r) for group in data for r in group["requests"])


@dataclass(frozen=True)
class NullBank:
    """The no-tool requests' vectors per text signal (``dense``, ``dense_en``), and the language of each
    (:func:`toolrag.language.detect_language`)."""

    texts: tuple[str, ...]
    languages: tuple[str, ...]
    vectors: Mapping[str, np.ndarray]
    by_language: Mapping[tuple[str, str], np.ndarray] = field(init=False, repr=False, compare=False)
    """Each signal's rows per group (:meth:`group`), split once (a search reads them several times)."""
    near: Mapping[tuple[str, str], np.ndarray] = field(init=False, repr=False, compare=False)
    """Each signal's rows in English, Chinese and the group's language: what :meth:`closest` reads."""
    groups: frozenset[str] = field(init=False, repr=False, compare=False)
    """The languages with at least :data:`MIN_ROWS` requests."""

    def __post_init__(self) -> None:
        langs = np.array(self.languages, dtype=object)
        groups = {lang for lang in self.languages if np.count_nonzero(langs == lang) >= MIN_ROWS}
        by: dict[tuple[str, str], np.ndarray] = {}
        near: dict[tuple[str, str], np.ndarray] = {}
        for s, m in self.vectors.items():
            for g in groups:
                by[(s, g)] = m[langs == g]
                near[(s, g)] = m[np.isin(langs, ["en", "zh", g])]
            by[(s, ALL)] = near[(s, ALL)] = m
        object.__setattr__(self, "by_language", by)
        object.__setattr__(self, "near", near)
        object.__setattr__(self, "groups", frozenset(groups))

    def group(self, language: str) -> str:
        """The bank's rows a request in ``language`` is measured against: its own language's when the bank holds
        at least :data:`MIN_ROWS` of them (English for a text without letters), else :data:`ALL`."""
        language = "en" if language == UNDETERMINED else language
        return language if language in self.groups else ALL

    @classmethod
    def load(cls, encode: Encode, signals: Mapping[str, str], *, folder: Path | None) -> NullBank:
        """The bank encoded by ``encode`` for each signal of ``signals`` (signal -> the fingerprint of the model
        that reads it: the cache key), from the cache in ``folder`` when it holds them (``None``: memory only)."""
        texts = bank_texts()
        vectors = {s: _matrix(encode, s, texts, fingerprint, folder) for s, fingerprint in signals.items()}
        return cls(texts, tuple(detect_language(t) for t in texts), vectors)

    def z(self, signal: str, tool: np.ndarray, request: np.ndarray, *, language: str) -> float:
        """How far ``request`` stands out for ``tool`` (their vectors under ``signal``) from the bank's requests
        in the request's language: (cos(request, tool) - their mean cosine) / their standard deviation (NaN
        rows skipped, population std); NaN when the signal has no bank or no spread. Example: bank cosines
        0.1, 0.2, 0.3 (mean 0.2, std 0.0816) and a request at 0.4: z = 2.45."""
        matrix = self.by_language.get((signal, self.group(language)))
        return math.nan if matrix is None else standing(tool, request, matrix)

    def closest(self, signal: str, request: np.ndarray, *, language: str) -> float:
        """The request's best cosine to the bank's requests under ``signal`` in English, Chinese and the request's
        language (all of them for a language the bank has too few of; NaN without a bank)."""
        matrix = self.near.get((signal, self.group(language)))
        if matrix is None:
            return math.nan
        values = matrix @ request
        return float(np.nanmax(values)) if np.isfinite(values).any() else math.nan


def standing(tool: np.ndarray, request: np.ndarray, null: np.ndarray) -> float:
    """(cos(request, tool) - mean) / std of the cosines of the ``null`` requests' vectors (rows) to ``tool``: how
    far a request stands out for a tool from other requests (NaN rows skipped; NaN without spread)."""
    values = null @ tool
    scores = standard_scores(np.array([request @ tool]), values[np.isfinite(values)])
    return math.nan if scores is None else float(scores[0])


def _matrix(encode: Encode, signal: str, texts: Sequence[str], fingerprint: str, folder: Path | None) -> np.ndarray:
    digest = hashlib.sha256("\n".join(texts).encode("utf-8"))
    digest.update(f"{signal}|{fingerprint}".encode())
    file = folder / f"null-{digest.hexdigest()[:24]}.npy" if folder is not None else None
    if file is not None and file.is_file():
        try:
            matrix = np.load(file, allow_pickle=False)
            if matrix.shape[0] == len(texts):
                return matrix
        except (OSError, ValueError):
            log.warning("ignoring unreadable cache %s", file)
    matrix = np.asarray(encode(signal, texts), dtype=np.float32)
    if file is not None:
        buffer = io.BytesIO()
        np.save(buffer, matrix, allow_pickle=False)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(file, buffer.getvalue(), error=StoreError)
        except (OSError, StoreError) as exc:  # a read-only data folder: the bank still works in memory
            log.warning("no-tool requests' vectors not cached: %s", exc)
    return matrix
