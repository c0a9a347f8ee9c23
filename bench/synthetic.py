"""Synthetic tool catalogs of any size for the speed, memory and scale benchmark (fixed seed, varied text).

Each tool is a (domain, action, object) triple with its own short description, tags, a two-field parameter
schema and, for one tool in ``image_every``, an example image copied from ``assets/``. Descriptions are
kept short (about 15 words) so a 100,000-tool build spends its time where a real one would, in the encoder,
without inflating it. Queries paraphrase a tool's triple with words that are not all in its profile, so
both the dense and the keyword signals have work to do.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ASSET_IMAGES", "HashingEncoder", "make_catalog", "make_queries"]

DOMAINS = (
    "finance", "payroll", "travel", "weather", "crm", "inventory", "logistics", "healthcare", "education",
    "marketing", "legal", "security", "devops", "analytics", "media", "music", "gaming", "retail", "energy",
    "real estate", "insurance", "telecom", "agriculture", "manufacturing", "government", "sports", "food",
    "automotive", "research", "social", "hospitality", "procurement",
)
ACTIONS = (
    ("get", "fetch"), ("list", "show all"), ("create", "make a new"), ("update", "change"),
    ("delete", "remove"), ("search", "look up"), ("export", "download a file of"), ("import", "load"),
    ("approve", "sign off"), ("cancel", "call off"), ("schedule", "plan"), ("book", "reserve"),
    ("translate", "put into another language"), ("summarize", "give a short summary of"),
    ("convert", "turn into another format"), ("validate", "check"), ("sync", "mirror"), ("archive", "store away"),
    ("restore", "bring back"), ("notify", "alert someone about"), ("calculate", "work out"),
    ("forecast", "predict"), ("compare", "contrast"), ("monitor", "watch"), ("analyze", "study"),
    ("generate", "produce"), ("upload", "send up"), ("share", "send to a colleague"), ("assign", "give to"),
    ("merge", "combine"), ("rank", "order by importance"), ("tag", "label"), ("transcribe", "write out"),
    ("detect", "spot"), ("estimate", "roughly work out"), ("refund", "pay back"), ("audit", "review"),
    ("track", "follow"),
)
OBJECTS = (
    "invoice", "order", "support ticket", "report", "customer", "employee", "shipment", "payment", "contract",
    "document", "image", "video", "playlist", "appointment", "meeting room", "flight", "hotel stay", "policy",
    "claim", "sensor reading", "device", "account", "password", "budget", "sales lead", "campaign", "article",
    "recipe", "vehicle", "route", "lesson", "exam", "patient record", "prescription", "stock level",
    "supplier", "product", "review", "message", "email", "calendar event", "task", "project", "dataset",
    "dashboard", "log file", "alert", "backup", "certificate", "license", "subscription", "coupon",
    "match score", "meter reading", "crop yield", "parcel", "transaction", "survey", "timesheet", "expense",
)
QUALIFIERS = (
    "for a given date range", "by its identifier", "in bulk", "for the current user", "across all regions",
    "with an audit trail", "in real time", "from the archive", "for a team", "with filters", "as a PDF",
    "for the last quarter", "with attachments", "by customer", "by status", "in the sandbox",
)
EXTRA = (
    "Returns JSON.", "Requires a valid API key.", "Rate limited to 10 calls per second.", "Paginates results.",
    "Idempotent.", "Sends a webhook when done.", "Supports dry runs.", "Read only.", "Logs every call.",
    "Works offline.", "Available in EU and US regions.", "Admins only.",
)
ASSET_IMAGES = ("receipt_zh.png", "invoice_en.png", "boarding_pass.png", "chelsea.jpg", "coffee.jpg",
                "stack_trace.png", "bar_chart_zh.png", "shipping_label.png", "whiteboard.png", "horse.png")


def _slug(text: str) -> str:
    return "_".join(text.lower().replace("-", " ").split())


def _tool(n: int, rng: random.Random) -> dict[str, Any]:
    domain, (action, _), obj = rng.choice(DOMAINS), rng.choice(ACTIONS), rng.choice(OBJECTS)
    qualifier, extra = rng.choice(QUALIFIERS), rng.choice(EXTRA)
    name = f"{action}_{_slug(obj)}_{n}"
    description = f"{action.capitalize()} a {obj} in the {domain} system {qualifier}. {extra}"
    return {
        "id": f"{_slug(domain)}.{name}",
        "name": name[:64],
        "description": description,
        "category": _slug(domain),
        "tags": [domain, obj],
        # the embedded text is given explicitly, so the index stays valid whatever the engine's default
        # document format: a 100,000-tool build is too slow to repeat for a formatting change
        "embedding_text": f"{name.replace('_', ' ')}: {description} Tags: {domain}, {obj}.",
        "parameters": {"type": "object", "properties": {
            f"{_slug(obj)}_id": {"type": "string", "description": f"identifier of the {obj}"},
            "limit": {"type": "integer", "description": "maximum number of results"},
        }, "required": [f"{_slug(obj)}_id"]},
    }


def make_catalog(folder: Path, n_tools: int, *, seed: int = 7, image_every: int = 200,
                 assets: Path | None = None) -> Path:
    """Write ``n_tools`` synthetic profiles to ``folder/catalog/tools.jsonl`` (+ images in its ``assets``).

    Deterministic for a given (n_tools, seed). Rewrites nothing when the files already hold this catalog,
    so the index built from it stays valid. Returns the catalog folder.
    """
    stamp = folder / "synthetic.json"
    folder = folder / "catalog"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {"n_tools": n_tools, "seed": seed, "image_every": image_every, "version": 2}
    if stamp.is_file() and json.loads(stamp.read_text(encoding="utf-8")) == wanted:
        return folder
    rng = random.Random(seed)
    image_dir = folder / "assets"
    if assets is not None and image_every:
        image_dir.mkdir(exist_ok=True)
        for name in ASSET_IMAGES:
            shutil.copy(assets / name, image_dir / name)
    (folder / "catalog.yaml").write_text(f"name: synthetic-{n_tools}\nassets_dir: assets\n", encoding="utf-8")
    with (folder / "tools.jsonl").open("w", encoding="utf-8") as fh:
        for n in range(n_tools):
            tool = _tool(n, rng)
            if assets is not None and image_every and n % image_every == 0:
                image = ASSET_IMAGES[(n // image_every) % len(ASSET_IMAGES)]
                tool["images"] = [{"path": image, "caption": f"an example {tool['tags'][1]} picture"}]
            fh.write(json.dumps(tool) + "\n")
    stamp.write_text(json.dumps(wanted), encoding="utf-8")
    return folder


def make_queries(folder: Path, n_queries: int, *, seed: int = 11) -> list[tuple[str, str]]:
    """``n_queries`` (query text, target tool id) pairs paraphrasing tools of the catalog in ``folder``."""
    lines = (folder / "tools.jsonl").read_text(encoding="utf-8").splitlines()
    rng = random.Random(seed)
    paraphrase = dict(ACTIONS)
    out = []
    for line in rng.sample(lines, min(n_queries, len(lines))):
        tool = json.loads(line)
        action = tool["name"].split("_", 1)[0]
        domain, obj = tool["tags"]
        template = rng.choice(("please {a} the {o} in {d}", "I need to {a} a {o} ({d})",
                               "can you {a} my {d} {o}", "{a} {o} for {d} now"))
        out.append((template.format(a=paraphrase.get(action, action), o=obj, d=domain), tool["id"]))
    return out


class HashingEncoder:
    """A stand-in text model for the scale runs: 384-d bag-of-words random projections (unit rows).

    The index path (validation, Chroma, HNSW, BM25, snapshot) and the search path are the real ones; only the
    transformer is replaced, because on this shared 2-core machine e5 encodes a few passages a second and a
    100,000-tool build would take hours. Retrieval work beyond encoding the query does not depend on which
    model made the 384-d vectors; encoder throughput is measured with the real models on smaller catalogs.
    Words shared by a query and a tool make their vectors similar, so the ranking is meaningful.
    """

    def __init__(self, name: str, dim: int = 384) -> None:
        self.name = name
        self.dim = dim
        self.model_id = f"hashing-bow-{dim}:{name}"
        self.fingerprint = f"{self.model_id}:v1"
        self._cache: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        vec = self._cache.get(word)
        if vec is None:
            seed = int.from_bytes(hashlib.blake2b(f"{self.name}|{word}".encode(), digest_size=8).digest(), "little")
            vec = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            self._cache[word] = vec
        return vec

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower()) or [" "]
            out[i] = np.sum([self._word(w) for w in words], axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)
