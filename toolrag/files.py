"""Writing user files safely: a failed or interrupted save never leaves a half-written or lost file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from toolrag.errors import ToolragError

__all__ = ["write_atomic"]


def write_atomic(file: Path, text: str, *, error: type[ToolragError] = ToolragError) -> None:
    """Write via a temp file in the same folder + fsync + os.replace: readers see the old or the new file."""
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=file.parent)
    except OSError as exc:
        raise error(f"cannot write {file}: {exc}; check that its folder exists and is writable") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
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
