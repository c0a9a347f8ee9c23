"""Model folders derived once from packaged weights (the e5 folder, the ONNX text and image models).

Each lives in ``data_dir()/models/<name>``. It is built in a temporary folder beside its target and renamed into
place once complete; the build writes the marker file last, and a folder without the marker is never used. So a
crash never leaves a half folder that looks finished. Processes that share the data folder (replicas started
together, test workers) build a folder once: the first takes a lock file beside it and the others wait for its
result instead of building the same model beside it (a build of e5 holds 6 GB and a core for most of a minute).
Where no lock can be taken (no ``fcntl``, a file system without locks) two builds may run at once; both then end
up using the one renamed first.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolrag.env_vars import DATA_DIR_ENV
from toolrag.errors import ModelUnavailable

__all__ = ["BUILD_MARKER", "build_info", "built_folder"]

log = logging.getLogger(__name__)

BUILD_MARKER = "toolrag_build.json"  # written last: a folder without it is not a finished build



def build_info(folder: Path) -> dict[str, Any]:
    """The marker of a finished build, as its builder wrote it (the ONNX text models: dimension, prompts,
    tokenizer settings, inputs and the check's result)."""
    info: dict[str, Any] = json.loads((folder / BUILD_MARKER).read_text(encoding="utf-8"))
    return info


_STALE_AFTER_S = 3600.0  # a temporary build folder this old was left by a crashed build

_lock = threading.RLock()


def built_folder(target: Path, build: Callable[[Path], None], *, what: str) -> Path:
    """``target``, first built by ``build(folder)`` when it holds no marker; ``what`` names it in errors.

    ``build`` fills the empty temporary folder it is given and writes :data:`BUILD_MARKER` last; it raises
    ModelUnavailable when the model cannot be built. Raises ModelUnavailable when the folder cannot be written.
    """
    if (target / BUILD_MARKER).is_file():
        return target
    with _lock:
        if (target / BUILD_MARKER).is_file():
            return target
        parent = target.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ModelUnavailable(f"cannot build {what} in {parent}: {exc}; "
                                   f"set {DATA_DIR_ENV} to a writable folder") from exc
        with _process_lock(parent / f".{target.name}.lock", what=what):
            if (target / BUILD_MARKER).is_file():
                log.info("another process built %s; using it", target)
                return target
            _build_into(target, build, what=what)
    return target


@contextmanager
def _process_lock(path: Path, *, what: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` while the block runs, waiting (and saying so) while another process
    holds it; no lock where the platform or the file system offers none."""
    try:
        import fcntl
    except ImportError:  # Windows: the rename into place still keeps every folder whole
        yield
        return
    try:
        handle = path.open("a")
    except OSError:
        yield
        return
    with handle:
        locked = True
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another process that is building %s", what)
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:  # a file system without locks
            locked = False
        try:
            yield
        finally:
            if locked:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _build_into(target: Path, build: Callable[[Path], None], *, what: str) -> None:
    """Build in a temporary folder beside ``target`` and rename it into place (the marker file last)."""
    parent = target.parent
    try:
        _remove_stale_builds(parent)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=parent))
    except OSError as exc:
        raise ModelUnavailable(f"cannot build {what} in {parent}: {exc}; "
                               f"set {DATA_DIR_ENV} to a writable folder") from exc
    try:
        started = time.perf_counter()
        build(tmp)
        if not (tmp / BUILD_MARKER).is_file():
            raise ModelUnavailable(f"the build of {what} ended without its marker file {BUILD_MARKER}")
        if target.exists() and not (target / BUILD_MARKER).is_file():
            shutil.rmtree(target)  # an unfinished folder from an older toolrag version
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / BUILD_MARKER).is_file():
                raise
            log.info("another process built %s first; using it", target)
        else:
            log.info("built %s (%s) in %.1f s", target, what, time.perf_counter() - started)
    except OSError as exc:
        raise ModelUnavailable(f"cannot build {what} in {parent}: {exc}; "
                               f"set {DATA_DIR_ENV} to a writable folder") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _remove_stale_builds(parent: Path) -> None:
    """Delete temporary build folders that crashed builds left behind (older than an hour)."""
    for tmp in parent.glob(".*.tmp-*"):
        try:
            if tmp.is_dir() and time.time() - tmp.stat().st_mtime > _STALE_AFTER_S:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            continue
