"""Running a text model built by :mod:`toolrag.encode.onnx_build` in ONNX Runtime.

One tokenizer pass (``tokenizers``, the model's own ``tokenizer.json``) and one ``InferenceSession.run`` per
batch; the graph ends in pooling and L2 normalisation, so its output rows are the embeddings.

Every text is run on its own, requests and tool texts alike: the int8 model quantises activations with one scale
per run, so a text encoded beside others gets another vector (up to 0.02-0.04 in cosine here), and a tool's vector
would depend on which tools shared its batch: adding a tool a caller cannot see would move the others' scores,
and a tool edited (re-encoded alone) would differ from the same text indexed with the catalog. One run per text
costs no more here than batches of similar length (``python -m bench.build_phases``: no padding at all), and
texts are still grouped into jobs so two models' work is spread over the cores.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.config import env
from toolrag.encode.built_folder import build_info
from toolrag.encode.common import require
from toolrag.env_vars import THREADS_ENV
from toolrag.errors import ModelUnavailable

__all__ = ["OnnxTextRuntime", "default_threads"]


#: A padded batch holds at most this many token positions (batch size x longest text).
_MAX_BATCH_TOKENS = 2048


def default_threads() -> int:
    """Intra-op threads: ``OMP_NUM_THREADS`` when set (the usual knob, also torch's), else the cores, up to 4."""
    raw = env(THREADS_ENV)
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return max(1, min(4, os.cpu_count() or 1))


class OnnxTextRuntime:
    """Tokenizer + ONNX Runtime session of one built text model; ``run`` returns unit rows (n, dim)."""

    def __init__(self, folder: Path, *, info: dict[str, Any] | None = None, threads: int | None = None,
                 batch_size: int = 16) -> None:
        ort = require("onnxruntime", "onnxruntime")
        tokenizers = require("tokenizers", "tokenizers")
        self.folder = folder
        self.info = info if info is not None else build_info(folder)
        self.dim = int(self.info["dim"])
        self.batch_size = batch_size
        self._inputs: list[str] = list(self.info["inputs"])
        try:
            tok = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads or default_threads()
            options.inter_op_num_threads = 1
            # Worker threads sleep between runs instead of spinning: the machine is shared with the app,
            # the index and often other processes.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._session = ort.InferenceSession(str(folder / "model.onnx"), options,
                                                 providers=["CPUExecutionProvider"])
        except (OSError, ValueError, RuntimeError, Exception) as exc:  # onnxruntime raises its own types
            raise ModelUnavailable(f"the ONNX text model in {folder} cannot be loaded ({exc}); delete the "
                                   "folder to rebuild it") from exc
        tok.no_padding()
        tok.enable_truncation(int(self.info["max_seq_length"]))
        self._tok = tok
        self._pad = int(self.info["pad_id"])

    def run(self, texts: Sequence[str]) -> np.ndarray:
        """Encode ``texts`` (prompts already applied) in one batch: float32 rows, unit length."""
        return self._run([e.ids for e in self._tok.encode_batch(list(texts))])

    def _run(self, token_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """One session run over token id lists, padded to the longest (mask 0 on padding)."""
        if not token_ids:
            return np.zeros((0, self.dim), dtype=np.float32)
        width = max(len(t) for t in token_ids)
        ids = np.full((len(token_ids), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, tokens in enumerate(token_ids):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        out = self._session.run(None, {name: feeds[name] for name in self._inputs})[0]
        return np.asarray(out, dtype=np.float32)

    def _run_each(self, token_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """One session run per token id list."""
        return np.concatenate([self._run([ids]) for ids in token_ids]) if token_ids else \
            np.zeros((0, self.dim), dtype=np.float32)

    def encode_each(self, texts: Sequence[str]) -> np.ndarray:
        """One run per text: each vector depends on its own text only."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate([self.run([text]) for text in texts])

    def encode_batched(self, texts: Sequence[str]) -> np.ndarray:
        """Texts in the jobs of :meth:`batch_jobs` (each text run on its own); rows in the input order."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for rows, run in self.batch_jobs(texts):
            out[rows] = run()
        return out

    def batch_jobs(self, texts: Sequence[str]) -> list[tuple[list[int], Callable[[], np.ndarray]]]:
        """:meth:`encode_batched` as independent jobs ``(rows, run)`` of texts of similar length: ``run()`` gives
        the vectors of those rows, each text run on its own, so a vector depends on its text alone. A caller can
        spread two models' jobs over the cores."""
        items = list(texts)
        if not items:
            return []
        tokens = [e.ids for e in self._tok.encode_batch(items)]
        order = sorted(range(len(items)), key=lambda i: len(tokens[i]))
        jobs: list[tuple[list[int], Callable[[], np.ndarray]]] = []
        start = 0
        while start < len(order):
            stop = start + 1
            while (stop < len(order) and stop - start < self.batch_size
                   and (stop - start + 1) * len(tokens[order[stop]]) <= _MAX_BATCH_TOKENS):
                stop += 1
            rows = order[start:stop]
            jobs.append((rows, partial(self._run_each, [tokens[i] for i in rows])))
            start = stop
        return jobs
