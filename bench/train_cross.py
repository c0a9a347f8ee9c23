"""The relevance model: a cross-encoder that reads a request and a tool's card together and outputs
P(this tool serves this request). Initialised from the packaged all-MiniLM-L6-v2 weights; trained on the
training folders with hard negatives from the shipped retriever (``bench.train_mine``).

Each training group is one request with one gold tool and :data:`HARD` + :data:`EASY` tools that do not serve it:
:data:`HARD` drawn from the shipped retriever's top candidates that are not gold, :data:`EASY` drawn from the
rest of the catalog. Loss: the softmax over the group (the gold tool first) plus :data:`BCE_WEIGHT` x the
binary cross-entropy of every pair, so the output is both a ranking and a probability. Checkpoints are written
every ``--save-every`` steps and a run resumes from the last one.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import say
from bench.train_sets import Mined

__all__ = ["CrossConfig", "build_groups", "cards_of", "fit_cross", "score_pairs"]

HARD = 3
EASY = 1
BCE_WEIGHT = 0.5


@dataclass(frozen=True)
class CrossConfig:
    epochs: float = 1.0
    lr: float = 3e-5
    groups_per_batch: int = 6
    max_length: int = 96
    save_every: int = 200
    seed: int = 0


def cards_of(catalog_dir: Path, ids: list[str]) -> list[str]:
    """The cards (:func:`toolrag.search.relevance_text.profile_card`) of ``ids`` in a catalog folder."""
    from toolrag.catalog.loader import load_catalog
    from toolrag.search.relevance_text import profile_card

    catalog = load_catalog(catalog_dir)
    return [profile_card(catalog.get(i)) for i in ids]  # type: ignore[arg-type]


def build_groups(m: Mined, cards: list[str], *, seed: int = 0, golds_per_request: int = 2
                 ) -> list[tuple[str, list[int]]]:
    """(request text, [gold row, negative rows...]) for each request of a mined folder. A tool whose card is
    the card of a gold tool (published twins: one name and description under two ids) is never a negative:
    nothing the model reads tells them apart."""
    from toolrag.search.relevance_text import request_text

    rng = random.Random(seed)
    cands = m.candidates(30)
    out = []
    n_tools = len(m.ids)
    for row, gold, top in zip(m.rows, m.gold, cands, strict=True):
        if len(gold) == 0:
            continue
        gold_set = set(gold.tolist())
        gold_cards = {cards[g] for g in gold_set}
        gold_set |= {t for t in top.tolist() if cards[t] in gold_cards}
        hard = [int(t) for t in top if int(t) not in gold_set]
        text = request_text(row["text"], row["gloss"])
        for g in list(gold)[:golds_per_request]:
            chosen = rng.sample(hard[:10], min(HARD, len(hard[:10])))
            pool = [t for t in hard[10:]] or hard
            tries = 0
            while len(chosen) < HARD + EASY and tries < 200:
                tries += 1
                t = rng.randrange(n_tools) if len(chosen) >= HARD or not pool else rng.choice(pool)
                if t not in gold_set and t not in chosen and cards[t] not in gold_cards:
                    chosen.append(t)
            out.append((text, [int(g), *chosen]))
    return out


def _torch() -> Any:
    import torch

    torch.set_num_threads(2)
    return torch


def fit_cross(base: Path, data: list[tuple[Mined, list[str]]], cfg: CrossConfig, out: Path) -> Path:
    """Train from the transformer at ``base`` (a BERT folder) on each mined folder and its cards; writes
    checkpoints to ``out/checkpoint`` (resumed when present) and the final model to ``out/final``."""
    torch = _torch()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    rng = random.Random(cfg.seed)
    groups: list[tuple[str, list[str]]] = []
    for m, cards in data:
        groups += [(text, [cards[i] for i in rows]) for text, rows in build_groups(m, cards, seed=cfg.seed)]
    rng.shuffle(groups)
    steps = math.ceil(len(groups) * cfg.epochs / cfg.groups_per_batch)
    ckpt = out / "checkpoint"
    state_file = out / "state.json"
    start_step = 0
    source = base
    if (ckpt / "config.json").is_file() and state_file.is_file():
        start_step = json.loads(state_file.read_text())["step"]
        source = ckpt
        say(f"resuming at step {start_step} of {steps}")
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = AutoModelForSequenceClassification.from_pretrained(str(source), num_labels=1)
    torch.manual_seed(cfg.seed + start_step)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    if start_step and (out / "optimizer.pt").is_file():
        opt.load_state_dict(torch.load(out / "optimizer.pt"))
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + start_step + 1) / warm) * max(0.0, (steps - s - start_step) / steps))
    bce = torch.nn.BCEWithLogitsLoss()
    model.train()
    t0, total = time.perf_counter(), 0.0
    size = 1 + HARD + EASY
    for step in range(start_step, steps):
        first = (step * cfg.groups_per_batch) % len(groups)
        batch = [groups[(first + j) % len(groups)] for j in range(cfg.groups_per_batch)]
        batch = [g for g in batch if len(g[1]) == size]
        if not batch:
            continue
        queries = [q for q, cards in batch for _ in cards]
        docs = [c for _, cards in batch for c in cards]
        x = tokenizer(queries, docs, truncation="longest_first", max_length=cfg.max_length, padding=True,
                      return_tensors="pt")
        logits = model(**x).logits.view(len(batch), size)
        target = torch.zeros(len(batch), dtype=torch.long)
        labels = torch.zeros_like(logits)
        labels[:, 0] = 1.0
        loss = torch.nn.functional.cross_entropy(logits, target) + BCE_WEIGHT * bce(logits, labels)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        total += float(loss.detach())
        done = step + 1 - start_step
        if done % 20 == 0:
            say(f"cross step {step + 1}/{steps}: loss {total / done:.4f} "
                f"({(time.perf_counter() - t0) / done:.2f} s/step)")
        if (step + 1) % cfg.save_every == 0 or step + 1 == steps:
            model.save_pretrained(str(ckpt))
            tokenizer.save_pretrained(str(ckpt))
            torch.save(opt.state_dict(), out / "optimizer.pt")
            state_file.write_text(json.dumps({"step": step + 1, "steps": steps}))
    final = out / "final"
    model.save_pretrained(str(final))
    tokenizer.save_pretrained(str(final))
    return final


def score_pairs(model: Any, tokenizer: Any, queries: list[str], docs: list[str], *, max_length: int = 96,
                batch: int = 64) -> np.ndarray:
    """Logits of (query, doc) pairs with a PyTorch cross-encoder."""
    torch = _torch()
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(queries), batch):
            x = tokenizer(queries[i:i + batch], docs[i:i + batch], truncation="longest_first", max_length=max_length,
                          padding=True, return_tensors="pt")
            out.append(model(**x).logits.view(-1).numpy())
    return np.concatenate(out) if out else np.zeros(0)
