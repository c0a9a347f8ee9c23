"""The English text model fine-tuned on tool requests, both sides (requests and tool texts): a sentence-transformers
folder from the packaged all-MiniLM-L6-v2 weights, for the ``dense_en`` role (tools re-indexed with it). Not shipped:
it ranks better but decides worse (docs/models.md, "Models trained here"); ``TOOLRAG_ENGLISH_MODEL=<folder>`` tries it.

Pairs: each training request (its English reading: the gloss of a Chinese one) with each gold tool the English
model reads (the tool's indexed text, ``ToolProfile.document_text``), one hard negative from the shipped
retriever's top 30 (not gold, not a card twin of a gold tool), and every other tool text of the batch as a negative
(multiple-negatives ranking loss, scale :data:`SCALE`).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import say
from bench.train_sets import Mined

__all__ = ["BiConfig", "fit_bi", "triples"]

SCALE = 20.0


@dataclass(frozen=True)
class BiConfig:
    epochs: float = 1.0
    lr: float = 2e-5
    batch: int = 32
    query_tokens: int = 32
    tool_tokens: int = 96
    seed: int = 0


def triples(m: Mined, *, seed: int = 0) -> list[tuple[str, str, str]]:
    """(request, gold tool text, hard negative text) of a mined folder, English-readable tools only."""
    rng = random.Random(seed)
    out = []
    for query, gold, top in zip(m.english_queries, m.gold, m.candidates(30), strict=True):
        gold_en = [int(g) for g in gold if m.english[g]]
        if not gold_en:
            continue
        golden = {m.texts[g] for g in gold}
        hard = [int(t) for t in top if int(t) not in set(gold.tolist()) and m.english[t] and m.texts[t] not in golden]
        for g in gold_en[:2]:
            neg = rng.choice(hard[:10]) if hard else rng.randrange(len(m.ids))
            out.append((query, m.texts[g], m.texts[neg]))
    return out


def fit_bi(base: Path, data: list[Mined], cfg: BiConfig, out: Path) -> Path:
    """Fine-tune the sentence-transformers folder ``base``; saves a sentence-transformers folder at ``out``."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(2)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    items = [t for m in data for t in triples(m, seed=cfg.seed)]
    rng.shuffle(items)
    st = SentenceTransformer(str(base), device="cpu")
    model, tok = st[0].auto_model, st.tokenizer
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    steps = math.ceil(len(items) * cfg.epochs / cfg.batch)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps))

    def embed(texts: list[str], length: int) -> Any:
        x = tok(texts, truncation=True, max_length=length, padding=True, return_tensors="pt")
        hidden = model(**x).last_hidden_state
        mask = x["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=1)

    model.train()
    t0, total = time.perf_counter(), 0.0
    for step in range(steps):
        first = (step * cfg.batch) % len(items)
        batch = [items[(first + j) % len(items)] for j in range(cfg.batch)]
        q = embed([b[0] for b in batch], cfg.query_tokens)
        docs = embed([b[1] for b in batch] + [b[2] for b in batch], cfg.tool_tokens)
        logits = SCALE * q @ docs.T
        # a tool text repeated in the batch is a positive wherever it appears
        texts = [b[1] for b in batch] + [b[2] for b in batch]
        same = torch.tensor([[texts[j] == b[1] for j in range(len(texts))] for b in batch])
        diag = torch.zeros_like(same)
        diag[torch.arange(len(batch)), torch.arange(len(batch))] = True
        logits = logits.masked_fill(same & ~diag, -1e4)
        loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        total += float(loss.detach())
        if (step + 1) % 20 == 0:
            say(f"bi step {step + 1}/{steps}: loss {total / (step + 1):.4f} "
                f"({(time.perf_counter() - t0) / (step + 1):.2f} s/step)")
    model.eval()
    st.save(str(out))
    return out

