"""Query-side adaptation of the two text models to tool requests; the tools' vectors stay as indexed.

Two forms, cheapest first:

* ``linear``: a map ``q -> normalise(q + A q)`` on the shipped model's query vector (``A`` starts at zero and is
  kept small by weight decay); trained on the cached vectors in seconds.
* ``tower``: the query side of the transformer itself fine-tuned (PyTorch, from the packaged weights), the word
  embeddings frozen; its vectors are compared with the tools' indexed vectors, so nothing is re-indexed.

Loss: for each request, a softmax over every tool of its own training catalog (cosine x a learned scale), the
gold tools together as the positive (``-log sum_gold p``). Catalogs are batched apart (a batch holds requests of
one catalog), as a search only ever compares tools of one catalog.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import say
from bench.train_sets import Mined, ranking_metrics

__all__ = ["Space", "TowerConfig", "fit_linear", "fit_tower", "space_of", "score_space"]


@dataclass(frozen=True)
class Space:
    """One model's view of a mined folder: tool matrix (rows it may score), query texts, query vectors, gold rows."""

    tools: np.ndarray
    usable: np.ndarray
    texts: list[str]
    vectors: np.ndarray
    gold: list[np.ndarray]


def space_of(m: Mined, kind: str) -> Space:
    """``kind`` ``dense`` (multilingual: every tool) or ``dense_en`` (English: the tools it reads; a request whose
    gold it cannot read has no gold here)."""
    if kind == "dense":
        return Space(m.tool_dense, np.ones(len(m.ids), dtype=bool), m.queries, m.q_dense, m.gold)
    usable = m.english.copy()
    gold = [g[usable[g]] for g in m.gold]
    return Space(m.tool_dense_en, usable, m.english_queries, np.nan_to_num(m.q_dense_en), gold)


def score_space(space: Space, q: np.ndarray) -> np.ndarray:
    """Cosine of each request with each tool it may score (-inf for the others)."""
    s = q @ space.tools.T
    s[:, ~space.usable] = -np.inf
    return s


def _torch() -> Any:
    import torch

    torch.set_num_threads(2)
    return torch


def _batches(spaces: Sequence[Space], size: int, rng: random.Random) -> list[tuple[int, list[int]]]:
    out = []
    for k, sp in enumerate(spaces):
        rows = [i for i, g in enumerate(sp.gold) if len(g)]
        rng.shuffle(rows)
        out += [(k, rows[i:i + size]) for i in range(0, len(rows), size)]
    rng.shuffle(out)
    return out


def _loss(torch: Any, q: Any, tools: Any, usable: Any, gold: list[np.ndarray], scale: Any) -> Any:
    logits = scale * (q @ tools.T)
    logits = logits.masked_fill(~usable, -1e4)
    mask = torch.zeros_like(logits, dtype=torch.bool)
    for i, g in enumerate(gold):
        mask[i, torch.as_tensor(g)] = True
    pos = torch.logsumexp(logits.masked_fill(~mask, -1e4), dim=1)
    return (torch.logsumexp(logits, dim=1) - pos).mean()


def fit_linear(spaces: Sequence[Space], *, epochs: int = 30, lr: float = 1e-3, decay: float = 1e-2,
               batch: int = 64, seed: int = 0) -> np.ndarray:
    """The residual linear map ``A`` (d x d); a request's adapted vector is ``normalise(q + q A^T)``."""
    torch = _torch()
    torch.manual_seed(seed)
    rng = random.Random(seed)
    d = spaces[0].vectors.shape[1]
    A = torch.zeros(d, d, requires_grad=True)
    log_scale = torch.tensor(math.log(20.0), requires_grad=True)
    opt = torch.optim.AdamW([A, log_scale], lr=lr, weight_decay=0.0)
    tensors = [(torch.as_tensor(s.vectors), torch.as_tensor(s.tools), torch.as_tensor(s.usable)) for s in spaces]
    for epoch in range(epochs):
        total, n = 0.0, 0
        for k, rows in _batches(spaces, batch, rng):
            qv, tools, usable = tensors[k]
            q = qv[rows]
            q = torch.nn.functional.normalize(q + q @ A.T, dim=1)
            loss = _loss(torch, q, tools, usable, [spaces[k].gold[i] for i in rows], log_scale.exp())
            loss = loss + decay * (A ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, n = total + float(loss), n + 1
        if epoch % 10 == 0 or epoch == epochs - 1:
            say(f"linear epoch {epoch}: loss {total / max(n, 1):.4f} scale {float(log_scale.exp()):.1f}")
    return A.detach().numpy().astype(np.float32)


def apply_linear(A: np.ndarray, q: np.ndarray) -> np.ndarray:
    out = q + q @ A.T
    return out / np.linalg.norm(out, axis=1, keepdims=True).clip(1e-12)


@dataclass(frozen=True)
class TowerConfig:
    """How the query tower is fine-tuned."""

    epochs: int = 1
    lr: float = 2e-5
    batch: int = 32
    max_length: int = 64
    prompt: str = ""
    scale: float = 20.0
    freeze_layers: int = 0
    """How many of the lowest transformer layers stay frozen (besides the word embeddings)."""
    seed: int = 0


def _mean_pool(torch: Any, hidden: Any, mask: Any) -> Any:
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return torch.nn.functional.normalize((hidden * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=1)


def encode_tower(model: Any, tokenizer: Any, texts: Sequence[str], cfg: TowerConfig, *, batch: int = 64
                 ) -> np.ndarray:
    """Query vectors of ``texts`` by a (fine-tuned) tower, as the trainer computes them."""
    torch = _torch()
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(texts), batch):
            x = tokenizer([cfg.prompt + t for t in texts[i:i + batch]], truncation=True,
                          max_length=cfg.max_length, padding=True, return_tensors="pt")
            out.append(_mean_pool(torch, model(**x).last_hidden_state, x["attention_mask"]).numpy())
    return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 384), dtype=np.float32)


def fit_tower(base: Path, spaces: Sequence[Space], cfg: TowerConfig, *, checkpoint: Path | None = None,
              validate: Any = None) -> tuple[Any, Any]:
    """Fine-tune the transformer at ``base`` (a sentence-transformers folder) on ``spaces``; returns the model
    and its tokenizer. ``validate(model, tokenizer)`` is called after each epoch (for the log)."""
    torch = _torch()
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = AutoModel.from_pretrained(str(base))
    model.embeddings.word_embeddings.weight.requires_grad_(False)
    for layer in model.encoder.layer[: cfg.freeze_layers]:
        for p in layer.parameters():
            p.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    log_scale = torch.tensor(math.log(cfg.scale), requires_grad=True)
    opt = torch.optim.AdamW([{"params": params}, {"params": [log_scale], "lr": 1e-3}], lr=cfg.lr, weight_decay=0.01)
    tensors = [(torch.as_tensor(s.tools), torch.as_tensor(s.usable)) for s in spaces]
    batches = _batches(spaces, cfg.batch, rng)
    steps = len(batches) * cfg.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, steps // 10))
                                              * max(0.0, (steps - s) / steps))
    step = 0
    for epoch in range(cfg.epochs):
        model.train()
        start, total = time.perf_counter(), 0.0
        for n, (k, rows) in enumerate(batches if epoch == 0 else _batches(spaces, cfg.batch, rng)):
            sp = spaces[k]
            x = tokenizer([cfg.prompt + sp.texts[i] for i in rows], truncation=True, max_length=cfg.max_length,
                          padding=True, return_tensors="pt")
            q = _mean_pool(torch, model(**x).last_hidden_state, x["attention_mask"])
            loss = _loss(torch, q, *tensors[k], [sp.gold[i] for i in rows], log_scale.exp())
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            step += 1
            total += float(loss)
            if n % 50 == 0:
                say(f"tower epoch {epoch} step {n}/{len(batches)}: loss {total / (n + 1):.4f} "
                    f"({(time.perf_counter() - start) / (n + 1):.2f} s/step)")
        if checkpoint is not None:
            model.save_pretrained(str(checkpoint))
            tokenizer.save_pretrained(str(checkpoint))
        if validate is not None:
            validate(model, tokenizer)
    return model, tokenizer


def report(label: str, spaces: dict[str, Space], vectors: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Ranking metrics of each space with the given query vectors, printed as one line each."""
    out = {}
    for name, sp in spaces.items():
        out[name] = ranking_metrics(score_space(sp, vectors[name]), sp.gold)
        say(f"{label:>14} {name:>18}: " + "  ".join(f"{k} {v:6.2f}" for k, v in out[name].items()))
    return out
