"""Writing user files safely: a failed or interrupted save never leaves a half-written or lost file, and
edits from several processes take turns.

- :func:`write_atomic`: a temp file in the same folder, fsync, ``os.replace``; readers see the old or the
  new file, never half of one.
- :class:`FileLock`: an exclusive lock on a file that every process respects (``fcntl.flock``; the kernel
  releases it when its process dies, so a killed editor never leaves the catalog locked).
- :func:`remove_leftovers`: the temp files of writes killed before their rename, removed on the next start.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from toolrag.errors import SettingsError, ToolragError
from toolrag.yamlio import YamlSyntaxError, read_yaml

__all__ = ["FileLock", "read_yaml_file", "remove_leftovers", "write_atomic"]

log = logging.getLogger(__name__)

#: The temp files of :func:`write_atomic`: ``.<name>.<8 random characters>.tmp`` (``tempfile.mkstemp``).
_TEMP_FILE = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def write_atomic(file: Path, data: str | bytes | memoryview, *, error: type[ToolragError] = ToolragError) -> None:
    """Write ``data`` (text as UTF-8, or bytes: a ``memoryview`` of a large buffer is written without a copy) via a
    temp file in the same folder + fsync + os.replace: readers see the old or the new file, never half of one, and
    a failed write leaves the old file as it was. The one atomic writer of toolrag (catalog edits, the catalog
    cache, saved serving state, caches of vectors)."""
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=file.parent)
    except OSError as exc:
        raise error(f"cannot write {file}: {exc}; check that its folder exists and is writable") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        if file.exists():
            os.chmod(tmp, file.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, file)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise error(f"cannot write {file}: {exc}; the file was left unchanged") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # make the rename durable where the platform allows it
        dir_fd = os.open(file.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def remove_leftovers(folder: Path) -> list[Path]:
    """Remove the temp files that :func:`write_atomic` left under ``folder`` when its process was killed
    between writing and renaming; call it holding the lock that every writer of ``folder`` takes."""
    removed = []
    for path in folder.rglob(".*.tmp"):
        if path.is_file() and _TEMP_FILE.match(path.name):
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    if removed:
        log.info("removed %d temp file(s) of interrupted saves under %s", len(removed), folder)
    return removed


class FileLock:
    """An exclusive lock on ``path`` that other processes (and other ``FileLock`` objects) respect.

    ``with FileLock(path, timeout=30):`` waits up to ``timeout`` seconds, then raises ``error`` with a message
    saying who holds it and what to do. Not re-entrant. The lock file is created if missing and never deleted
    (deleting it would let two processes lock two different files). POSIX ``flock``; on Windows ``msvcrt``.
    """

    def __init__(self, path: Path, *, timeout: float = 30.0, what: str = "this file",
                 error: type[ToolragError] = ToolragError) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.what = what
        self.error = error
        self._fd: int | None = None
        self._guard = threading.Lock()  # one holder per object, also across threads

    def acquire(self, *, timeout: float | None = None) -> bool:
        """Take the lock; ``False`` when ``timeout`` (default: the object's) passed first (0: try once)."""
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        if not self._guard.acquire(timeout=max(wait, 0.0)):
            return False
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            self._guard.release()
            raise self.error(f"cannot create the lock file {self.path}: {exc}; {self.what} must be in a "
                             "writable folder to be edited") from exc
        if _try_lock(fd):
            self._fd = fd
            return True
        if wait > 0 and _wait_lock(fd, deadline - time.monotonic()):
            self._fd = fd
            return True
        if wait <= 0:
            os.close(fd)  # after a timed-out wait, _wait_lock has closed (or will close) fd itself
        self._guard.release()
        return False

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            _unlock(fd)
            os.close(fd)
            self._guard.release()

    def __enter__(self) -> FileLock:
        if not self.acquire():
            raise self.error(f"{self.what} is being changed by another process (the lock {self.path} was held "
                             f"for more than {self.timeout:g} s); try again in a moment")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _wait_lock(fd: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(0.02)
            if _try_lock(fd):
                return True
        os.close(fd)
        return False

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _wait_lock(fd: int, timeout: float) -> bool:
        """Wait for the lock in a blocking ``flock`` (in a helper thread, for the timeout): the kernel wakes
        the waiter as soon as the holder releases, so a process that edits in a loop cannot starve it the
        way polling can. ``False`` after a timeout: ``fd`` then belongs to the thread, still waiting, which
        unlocks and closes it once it gets the lock (so its number cannot be reused meanwhile)."""
        state = {"outcome": "waiting"}
        settled = threading.Lock()
        got = threading.Event()

        def block() -> None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with settled:
                if state["outcome"] == "abandoned":
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                    return
                state["outcome"] = "locked"
            got.set()

        threading.Thread(target=block, name="toolrag-file-lock", daemon=True).start()
        if got.wait(max(timeout, 0.0)):
            return True
        with settled:
            if state["outcome"] == "locked":
                return True
            state["outcome"] = "abandoned"
        return False


def read_yaml_file(file: Path, what: str) -> Any:
    """:func:`toolrag.yamlio.read_yaml` of a configuration file, every failure a :class:`SettingsError` naming
    ``what`` (e.g. "settings file"), the file and, for bad YAML, its line and column."""
    try:
        return read_yaml(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {what} {file}: {exc}") from None
    except YamlSyntaxError as exc:
        raise SettingsError(f"{file}: invalid YAML at {exc}; fix the syntax there") from None
