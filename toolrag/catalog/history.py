"""Previous versions of catalog files: before the editor replaces a file, it keeps a copy under
``<catalog>/.history/`` (hidden: never loaded as a catalog file), timestamped, the newest few per file kept."""

from __future__ import annotations

import datetime as _dt
import shutil
from pathlib import Path

__all__ = ["HISTORY_DIR", "history", "keep_backup"]

HISTORY_DIR = ".history"


def history(folder: Path, file: str | Path) -> list[Path]:
    """Saved previous versions of ``file`` of the catalog in ``folder``, oldest first."""
    return sorted((folder / HISTORY_DIR).glob(_history_stem(folder, Path(file)) + ".*.bak"))


def keep_backup(folder: Path, file: Path, keep_versions: int) -> Path:
    """Copy ``file`` under ``folder/.history/`` and drop its versions beyond the newest ``keep_versions``."""
    backups = folder / HISTORY_DIR
    backups.mkdir(exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    backup = backups / f"{_history_stem(folder, file)}.{stamp}.bak"
    shutil.copy2(file, backup)
    for stale in history(folder, file)[: -keep_versions]:
        stale.unlink(missing_ok=True)
    return backup


def _history_stem(folder: Path, file: Path) -> str:
    try:
        rel = file.resolve().relative_to(folder.resolve())
    except ValueError:
        rel = Path(file.name)
    return rel.as_posix().replace("/", "__")
