"""Spreading the work of several encoders over the cores: every model's batches in one queue.

On this kind of machine (2 cores) one model's run of a small batch does not keep both cores busy, and two
models run side by side, one per thread, leave a core idle once the faster model is done (MiniLM finishes in
about 40% of e5's time). Here each model's work is cut into independent jobs (its batches, see
:meth:`toolrag.encode.text.TextEncoder.passage_jobs`) and two worker threads take jobs from one queue until
it is empty (ONNX Runtime releases the GIL). Each job is the very batch the model would run on its own, so
the vectors are exactly the model's own (tested). Indexing spreads both text models' passage batches this way
(:mod:`toolrag.index.text_sync`). When the pool refuses work (at interpreter exit) the jobs run in the calling
thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np

__all__ = ["Job", "passage_jobs", "spread"]

#: ``(rows, run)``: ``run()`` returns the vectors of those rows of the model's input.
Job = tuple[Sequence[int], Callable[[], np.ndarray]]

_WORKERS = 2


def passage_jobs(model: Any, texts: Sequence[str]) -> list[Job]:
    """The model's passage encoding of ``texts`` as jobs: its own split when it has one (``passage_jobs``),
    else one job (a CLIP text tower encodes documents with ``encode_texts``)."""
    split = getattr(model, "passage_jobs", None)
    if split is not None:
        return list(split(texts))
    encode = getattr(model, "encode_passages", None) or model.encode_texts
    return [(range(len(texts)), partial(encode, list(texts)))]


def spread(work: Sequence[tuple[int, Sequence[Job]]]) -> list[np.ndarray]:
    """Run every job of every ``(rows, jobs)`` entry in one queue of two worker threads; returns one matrix per
    entry with each job's vectors at its rows. The entries' jobs are queued in the order given (put the
    slowest model first, so the queue ends on short jobs). Runs the jobs in this thread when the pool refuses
    work (at interpreter exit, ``concurrent.futures`` refuses new threads)."""
    queue = [(n, rows, run) for n, (_, jobs) in enumerate(work) for rows, run in jobs]
    with ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="toolrag-encode") as pool:
        results = [_submit(pool, run) for _, _, run in queue]
        vectors = [r.result() if isinstance(r, Future) else r for r in results]
    out: list[np.ndarray | None] = [None] * len(work)
    for (n, rows, _), got in zip(queue, vectors, strict=True):
        matrix = out[n]
        if matrix is None:
            matrix = out[n] = np.empty((work[n][0], got.shape[1]), dtype=np.float32)
        matrix[list(rows)] = got
    return [m if m is not None else np.zeros((size, 0), dtype=np.float32)
            for m, (size, _) in zip(out, work, strict=True)]


def _submit(pool: ThreadPoolExecutor, run: Callable[[], np.ndarray]) -> np.ndarray | Future[np.ndarray]:
    try:
        return pool.submit(run)
    except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"
        return run()
