"""Helpers every encoder shares: importing a heavy library with a clear message, checking a model's output
(float32, unit-length rows), checking text batches, and one shared instance per model per process."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from toolrag.errors import ModelUnavailable

__all__ = ["check_texts", "require", "shared", "unit_rows"]

T = TypeVar("T")


def require(module: str, pip_spec: str) -> Any:
    """Import a heavy optional module, or raise ModelUnavailable saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelUnavailable(f"{module} cannot be imported ({exc}); pip install {pip_spec}") from exc


def unit_rows(vectors: Any, *, dim: int, what: str) -> np.ndarray:
    """Validate a model's output as float32 (n, dim) and scale each row to unit length."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise ModelUnavailable(f"{what} returned an array of shape {arr.shape}, expected (n, {dim})")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if not np.all(np.isfinite(arr)) or np.any(norms < 1e-12):
        raise ModelUnavailable(f"{what} produced a zero or non-finite vector; the model is broken")
    arr = np.ascontiguousarray(arr / norms, dtype=np.float32)
    if not np.allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-4):
        raise ModelUnavailable(f"{what}: rows are not unit length after normalisation")
    return arr


def check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("pass a sequence of strings, not one string (wrap it in a list)")
    items = list(texts)
    bad = [type(t).__name__ for t in items if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must all be str, got {bad[0]}")
    return items


_registry_lock = threading.Lock()


_key_locks: dict[tuple[str, str], threading.Lock] = {}


_instances: dict[tuple[str, str], Any] = {}


def shared(kind: str, key: str, factory: Callable[[], T]) -> T:
    """One instance per (kind, key) per process; concurrent callers wait for the single load."""
    ident = (kind, key)
    if ident in _instances:
        return _instances[ident]
    with _registry_lock:
        lock = _key_locks.setdefault(ident, threading.Lock())
    with lock:
        if ident not in _instances:
            _instances[ident] = factory()
        return _instances[ident]
