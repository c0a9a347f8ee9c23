"""A retriever's decision, its one entry: the shipped model (read once) and the no-tool requests (encoded once per
retriever, their vectors cached in a folder), shared by every search of that retriever (one ``Decider`` per
retriever). The search calls :meth:`Decider.decide` once, after it ranked the visible tools; the decider builds
the view (:func:`toolrag.decision.view.build_view`) and the facts, and applies the policy. Nothing in it depends
on the catalog but what it reads of the search, so nothing is fitted when a catalog is indexed or edited."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from toolrag.catalog.lint import STUFFING_THRESHOLD, keyword_stuffing
from toolrag.catalog.profile import ToolProfile
from toolrag.decision.model import MODEL_FILE, load_model, shipped_model
from toolrag.decision.nulls import Encode, NullBank
from toolrag.decision.outcome import DecisionOutcome
from toolrag.decision.policy import Facts, decide
from toolrag.decision.view import DecisionView, RequestFacts, build_view
from toolrag.index.snapshot import IndexSnapshot

__all__ = ["Decider", "may_inject", "stuffed_tools"]

log = logging.getLogger(__name__)


def may_inject(tool: ToolProfile) -> bool:
    """Whether a decision may inject ``tool`` (or name it in a question): not when the catalog lint flags its
    description as keyword stuffing, whatever the decision."""
    return keyword_stuffing(tool.description) < STUFFING_THRESHOLD


def stuffed_tools(snap: IndexSnapshot) -> np.ndarray:
    """Per snapshot row, whether the tool may not be injected (:func:`may_inject`), computed once per snapshot."""
    return snap.memo(("stuffed",), lambda: np.array([not may_inject(t) for t in snap.catalog.tools], dtype=bool))


class Decider:
    """The decision model of ``path`` and the no-tool bank, read by ``encode`` for each text signal of
    ``signals`` (signal -> the fingerprint of its model) and cached in ``folder`` (``None``: memory only)."""

    def __init__(self, encode: Encode, signals: Mapping[str, str], *, folder: Path | None,
                 path: Path = MODEL_FILE) -> None:
        self._encode, self._signals, self._folder = encode, dict(signals), folder
        self._lock = threading.Lock()
        self._bank: NullBank | None = None
        self.model, self.note = shipped_model() if path == MODEL_FILE else load_model(path)
        if self.model is None:
            log.warning("%s: decisions fall back to the top tool's standing", self.note)

    @property
    def version(self) -> str | None:
        """The decision model's version (``None`` without one): what the health answers and the metrics name."""
        return self.model.version if self.model is not None else None

    @property
    def bank_loaded(self) -> bool:
        """Whether the no-tool requests' vectors are in memory (the first search of a retriever loads them)."""
        return self._bank is not None

    def bank(self) -> NullBank:
        """The no-tool requests' vectors (encoded on first need, then read from the cache)."""
        if self._bank is None:
            with self._lock:
                if self._bank is None:
                    self._bank = NullBank.load(self._encode, self._signals, folder=self._folder)
        return self._bank

    def decide(self, snap: IndexSnapshot, *, query: str, request: RequestFacts, rows: np.ndarray,
               raw: Mapping[str, np.ndarray], present: Mapping[str, np.ndarray], mask: np.ndarray,
               head: Sequence[int], shown: int, named: int, target: float | None,
               clean: float | None) -> tuple[DecisionOutcome, DecisionView | None]:
        """The decision of one search over the caller's visible tools ``mask``: ``rows`` were scored (``raw``
        scores and ``present`` masks per signal), ``head`` = snapshot rows of the ranking's head, best first (its
        first ``shown`` are the result's candidates), ``named`` = how many of them the request names exactly;
        ``target`` and ``clean`` = the operating point (``None``: the model's)."""
        view = None
        if head:
            view = build_view(snap, rows, raw, present, mask, head, request, query, self.bank())
        tools = [snap.catalog.tools[int(r)] for r in head[:shown]]
        stuffed = stuffed_tools(snap)
        facts = Facts([t.name for t in tools], [t.description for t in tools], named=named,
                      meaningful=any(ch.isalnum() for ch in " ".join((query, *request.history))),
                      image=request.image_given, query=query, language=request.language,
                      eligible=tuple(not bool(stuffed[int(r)]) for r in head[:shown]))
        return decide(facts, view, self.model, target=target, clean=clean, note=self.note), view
