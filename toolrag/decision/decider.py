"""A retriever's decision: the shipped model (read once) and the no-tool requests (encoded once per retriever,
their vectors cached in a folder), shared by every search of that retriever (one ``Decider`` per retriever);
nothing in it depends on the catalog, so nothing is fitted when a catalog is indexed or edited."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path

from toolrag.decision.model import MODEL_FILE, load_model, shipped_model
from toolrag.decision.nulls import Encode, NullBank
from toolrag.decision.outcome import DecisionOutcome
from toolrag.decision.policy import Facts, decide
from toolrag.decision.view import DecisionView

__all__ = ["Decider"]

log = logging.getLogger(__name__)


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

    def bank(self) -> NullBank:
        """The no-tool requests' vectors (encoded on first need, then read from the cache)."""
        if self._bank is None:
            with self._lock:
                if self._bank is None:
                    self._bank = NullBank.load(self._encode, self._signals, folder=self._folder)
        return self._bank

    def decide(self, facts: Facts, view: DecisionView | None, *, target: float | None) -> DecisionOutcome:
        """The decision of one result (:func:`toolrag.decision.policy.decide`)."""
        return decide(facts, view, self.model, target=target, note=self.note)
