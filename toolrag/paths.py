"""Values given as paths that can never name a file: every reader of a user's path (a catalog, a labelled queries
file, an image) asks :func:`path_problem` first and raises its own error naming the value and the fix, instead of
the operating system's ``OSError`` (ENAMETOOLONG) or Python's ``ValueError`` (an embedded NUL)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["path_problem", "shown"]

#: The longest file name (one path component) and path, in bytes, that POSIX file systems accept (NAME_MAX,
#: PATH_MAX on Linux); beyond them the operating system raises ENAMETOOLONG where a caller asked "is it a file?".
_NAME_MAX, _PATH_MAX = 255, 4096


def path_problem(value: str | Path) -> str | None:
    """Why ``value`` can never name a file on this system (a NUL byte, a name or path too long), or ``None``.

    ``Path.is_file()`` raises ``OSError`` (ENAMETOOLONG) for a name over 255 bytes, such as an image's base64 text
    passed where a path was expected: the readers of a user's path ask here first and raise their own error."""
    text = str(value)
    if "\x00" in text:
        return "contains a NUL character"
    encoded = text.encode("utf-8", "surrogatepass")
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if longest > _NAME_MAX:
        return f"has a name of {longest:,} bytes, longer than a file name can be ({_NAME_MAX})"
    if len(encoded) > _PATH_MAX:
        return f"is {len(encoded):,} bytes long, longer than a path can be ({_PATH_MAX})"
    return None


def shown(value: str | Path, limit: int = 60) -> str:
    """``value`` quoted for an error message, cut to its first ``limit`` characters (a base64 image given as a path
    is never echoed whole)."""
    text = str(value)
    return repr(text if len(text) <= limit else text[:limit] + "...")
