"""Model fingerprints: an index built with one model (or one variant of it) is never mixed with another.

A fingerprint is ``model_id|dim=N|w=<digest>`` (``|v=<variant>`` appended for a variant such as the int8
ONNX build of a text model): the digest covers the weights files (names, sizes, the first and last MiB of
each), so two builds of the same model from different weights, or two variants of it, never compare equal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from toolrag.errors import ModelUnavailable

__all__ = ["file_sha256", "fingerprint", "weights_digest"]


_digest_cache: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """Full sha256 of a file, cached per process by (path, mtime, size)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _digest_cache:
        h = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _digest_cache[key] = h.hexdigest()
    return _digest_cache[key]


_SKIP_SUFFIXES = {".md", ".txt", ".lock"}


def weights_digest(path: str | Path, *, edge_bytes: int = 1 << 20) -> str:
    """A quick digest of a weights file or folder: relative names, sizes and the first/last MiB of each file.

    Folders include every file (tokenizer and prompt configs change vectors too) except docs and dotfiles.
    """
    root = Path(path)
    files = [root] if root.is_file() else sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix not in _SKIP_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    if not files:
        raise ModelUnavailable(f"no weights files found in {root}")
    h = hashlib.sha256()
    for file in files:
        size = file.stat().st_size
        h.update(f"{file.relative_to(root) if file != root else file.name}\0{size}\0".encode())
        with file.open("rb") as fh:
            h.update(fh.read(edge_bytes))
            if size > edge_bytes:
                fh.seek(max(edge_bytes, size - edge_bytes))
                h.update(fh.read(edge_bytes))
    return h.hexdigest()[:16]


def fingerprint(model_id: str, *, dim: int, weights: str | Path | Sequence[str | Path] | None = None,
                variant: str | None = None) -> str:
    """``model_id|dim=N|w=<digest>[|v=<variant>]``: equal only for the same model, dimension, weights files
    and variant (how the model is run: ``onnx-int8`` vectors differ slightly from ``torch`` ones).

    ``weights`` is a file, a folder or several of them; None (a Hub id, a seeded random model) records
    ``w=id``: the id alone identifies the weights.
    """
    if weights is None:
        digest = "id"
    elif isinstance(weights, (str, Path)):
        digest = weights_digest(weights)
    else:
        digest = hashlib.sha256("|".join(weights_digest(p) for p in weights).encode()).hexdigest()[:16]
    return f"{model_id}|dim={dim}|w={digest}" + (f"|v={variant}" if variant else "")
