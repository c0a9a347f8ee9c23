"""The relevance model shipped inside the package: P(this tool serves this request), read from both together.

A cross-encoder trained here for tool requests (``python -m bench.train``; its card: docs/models.md), from the
packaged all-MiniLM-L6-v2 weights, exported to ONNX Runtime int8: ``toolrag/data/models/relevance/``
(``model.onnx``, ``tokenizer.json`` with the pair template and truncation it was trained with, ``info.json``
with its calibration, ``reference.json`` with fixed pairs and their logits). Nothing is downloaded; the file is
checked against the digest in ``info.json`` when loaded, so a damaged or missing file is a
:class:`toolrag.errors.ModelUnavailable` with the reason (the retriever then ranks and decides without it, with
a note), never wrong scores.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.encode.common import require
from toolrag.encode.fingerprint import file_sha256, fingerprint
from toolrag.encode.onnx_text import default_threads
from toolrag.errors import ModelUnavailable

__all__ = ["PACKAGED_RELEVANCE", "RELEVANCE_ALIAS", "RelevanceModel"]

#: Where the shipped model lives.
PACKAGED_RELEVANCE = Path(__file__).resolve().parent.parent / "data" / "models" / "relevance"
#: The setting that names it (``rerank_model: relevance``, the default).
RELEVANCE_ALIAS = "relevance"
#: Pairs of one request are run in batches of at most this many.
_BATCH = 16


class RelevanceModel:
    """The shipped cross-encoder in ONNX Runtime: :meth:`logits` of (request, card) pairs, :meth:`probability`
    of each logit (calibrated on held-out training requests), :meth:`score` (the :class:`Reranker` protocol)."""

    def __init__(self, folder: Path = PACKAGED_RELEVANCE, *, threads: int | None = None) -> None:
        ort = require("onnxruntime", "onnxruntime")
        tokenizers = require("tokenizers", "tokenizers")
        self.folder = folder
        model = folder / "model.onnx"
        try:
            self.info: dict[str, Any] = json.loads((folder / "info.json").read_text(encoding="utf-8"))
            digest = self.info.get("sha256")
            if digest and file_sha256(model) != digest:
                raise ValueError(f"{model} does not match the digest in info.json (damaged or replaced)")
            tok = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads or default_threads()
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        except (OSError, ValueError, KeyError, RuntimeError, Exception) as exc:  # onnxruntime raises its own types
            raise ModelUnavailable(f"the relevance model in {folder} cannot be loaded ({exc}); reinstall toolrag "
                                   "(pip install --force-reinstall toolrag) or set rerank_model to another "
                                   "cross-encoder") from exc
        tok.no_padding()
        tok.enable_truncation(int(self.info["max_tokens"]), strategy="longest_first")
        self._tok = tok
        self._pad = int(self.info.get("pad_id", 0))
        self._inputs: list[str] = list(self.info["inputs"])
        cal = self.info.get("calibration") or {}
        self._a, self._b = float(cal.get("a", 1.0)), float(cal.get("b", 0.0))
        self.name = self.model_id = f"{self.info.get('name', 'toolrag-relevance')}@{self.info.get('version', '1')}"
        self.fingerprint = fingerprint(self.model_id, dim=1, weights=[model, folder / "tokenizer.json"])

    def logits(self, request: str, cards: Sequence[str]) -> np.ndarray:
        """One logit per card (higher: more likely to serve ``request``), float64 shape (n,). Each pair's logit
        depends on that pair alone within a batch's quantisation (pairs of one request run together)."""
        if not cards:
            return np.zeros(0)
        encoded = self._tok.encode_batch([(request, card) for card in cards])
        out = np.empty(len(cards))
        for start in range(0, len(encoded), _BATCH):
            part = encoded[start:start + _BATCH]
            width = max(len(e.ids) for e in part)
            ids = np.full((len(part), width), self._pad, dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for row, e in enumerate(part):
                n = len(e.ids)
                ids[row, :n], mask[row, :n], types[row, :n] = e.ids, 1, e.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            got = self._session.run(None, {name: feeds[name] for name in self._inputs})[0]
            out[start:start + len(part)] = np.asarray(got, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(out)):
            raise ModelUnavailable(f"the relevance model returned a non-finite logit for {request!r}")
        return out

    def probability(self, logits: np.ndarray) -> np.ndarray:
        """P(the tool serves the request) of each logit: ``sigmoid(a x logit + b)``, calibrated on held-out
        training requests (``info.json``)."""
        z = self._a * np.asarray(logits, dtype=np.float64) + self._b
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """:class:`toolrag.encode.protocols.Reranker`: the logits of ``query`` with each passage."""
        return self.logits(query, passages).astype(np.float32)

