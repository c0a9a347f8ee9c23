"""The one strict reader of configuration files: the gateway config, settings files, ``catalog.yaml`` and its
roles.

A configuration mistake must stop the program with a message that points at it, never be guessed around: a
misspelt key read as absent, a string where a list belongs split into letters, a rule that names no tool and
so protects nothing. :class:`Section` wraps one mapping read by :func:`toolrag.yamlio.read_yaml` (it
remembers the line of each key) and every accessor checks the value's shape; each error names
``file:line``, the key's path and, for a name that matches nothing, the closest valid names
(:func:`closest`).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolrag.errors import SettingsError, ToolragError

__all__ = ["Section", "closest"]

_SHOWN = 12


def closest(name: object, choices: Iterable[object], *, n: int = 3) -> str:
    """The hint for a name that matches none of ``choices``: ``did you mean 'a' or 'b'?`` when some are
    close, else the valid names (the first dozen)."""
    options = sorted({str(c) for c in choices})
    if not options:
        return "there are none"
    close = difflib.get_close_matches(str(name), options, n=n, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    more = f" (+{len(options) - _SHOWN} more)" if len(options) > _SHOWN else ""
    return "valid: " + ", ".join(options[:_SHOWN]) + more


class Section:
    """One mapping of a configuration file: its values read with their shape checked, every mistake a
    ``error`` (default :class:`SettingsError`) naming ``file:line``, the key's dotted path and the fix."""

    def __init__(self, data: Mapping[Any, Any], file: str | Path, *, path: str = "",
                 error: type[ToolragError] = SettingsError, line: int | None = None) -> None:
        self.data, self.file, self.path, self.error = data, Path(file), path, error
        self.line = line if line is not None else (getattr(data, "line", 0) or None)
        self._lines: dict[str, int] = getattr(data, "key_lines", {})

    @classmethod
    def of(cls, data: Any, file: str | Path, *, what: str, error: type[ToolragError] = SettingsError) -> Section:
        """The top mapping of a file (``None``, an empty file, is an empty mapping); anything else is an error
        saying what the file should hold (``what``)."""
        if data is None:
            return cls({}, file, error=error)
        if not isinstance(data, Mapping):
            raise error(f"{file}: expected a mapping ({what}), got {_kind(data)}")
        return cls(data, file, error=error)

    # ------------------------------------------------------------------------------------------ errors

    def line_of(self, key: object | None = None) -> int | None:
        """The line of ``key`` (of the mapping itself when ``None`` or unknown)."""
        return (self._lines.get(str(key)) or self.line) if key is not None else self.line

    def where(self, key: object | None = None) -> str:
        """``file:line`` of ``key`` (``file`` alone when the line is unknown)."""
        line = self.line_of(key)
        return f"{self.file}:{line}" if line else str(self.file)

    def name(self, key: object | None = None) -> str:
        """The dotted path of ``key`` in the file (``servers.files.tool_permissions``)."""
        if key is None:
            return self.path
        return f"{self.path}.{key}" if self.path else str(key)

    def fail(self, key: object | None, message: str) -> ToolragError:
        """The error for ``key`` (``None``: the mapping itself): ``file:line: path: message``."""
        label = self.name(key)
        return self.error(f"{self.where(key)}: {label}: {message}" if label else f"{self.where(key)}: {message}",
                          file=str(self.file), line=self.line_of(key), field=label or None)

    def check_keys(self, allowed: Collection[str]) -> None:
        """Refuse a key outside ``allowed``, with the closest valid ones."""
        for error in self.unknown_keys(allowed):
            raise error

    def unknown_keys(self, allowed: Collection[str]) -> list[ToolragError]:
        """The error of every key outside ``allowed`` (for a reader that lists every problem of a file)."""
        label = self.name()
        return [self.error(f"{self.where(key)}: {label + ': ' if label else ''}unknown key {str(key)!r}; "
                           f"{closest(key, allowed)}", file=str(self.file), line=self.line_of(key),
                           field=self.name(key))
                for key in self.data if str(key) not in allowed]

    # -------------------------------------------------------------------------------------------- values

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def names(self) -> list[str]:
        """The keys of this mapping, as text."""
        return [str(k) for k in self.data]

    def raw(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def section(self, key: str, *, example: str = "") -> Section | None:
        """The mapping under ``key`` (``None`` when absent or null); anything else is an error."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise self.fail(key, f"expected a mapping{_eg(example)}, got {_kind(value)}")
        return Section(value, self.file, path=self.name(key), error=self.error, line=self.line_of(key))

    def sections(self, *, example: str = "") -> Iterator[tuple[str, Section]]:
        """Each value of this mapping as a :class:`Section` (every value must be a mapping)."""
        for key in self.data:
            section = self.section(key, example=example)
            yield str(key), section if section is not None else Section(
                {}, self.file, path=self.name(key), error=self.error, line=self.line_of(key))

    def text(self, key: str, default: str | None = None, *, example: str = "") -> str | None:
        """A string (``default`` when absent or null); a list, a mapping, a number or a boolean is an error."""
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"expected text{_eg(example)}, got {_kind(value)}")
        return value.strip()

    def strings(self, key: str, *, numbers: bool = False, example: str = "") -> tuple[str, ...]:
        """A list of strings (``numbers``: numbers too, as text, e.g. a command's arguments); absent or null
        is empty. A single string is an error, not a list of its letters."""
        value = self.data.get(key)
        if value is None:
            return ()
        return _string_list(value, lambda message: self.fail(key, message), numbers=numbers, example=example)

    def string_map(self, key: str, *, numbers: bool = True, example: str = "") -> dict[str, str]:
        """A mapping of names to scalar values (text; ``numbers``: numbers and booleans too, as text)."""
        section = self.section(key, example=example)
        if section is None:
            return {}
        out: dict[str, str] = {}
        for name, value in section.data.items():
            scalar = isinstance(value, str) or (numbers and isinstance(value, int | float) and
                                                (isinstance(value, bool) or math.isfinite(value)))
            if not scalar:
                raise section.fail(name, f"expected a text value{_eg(example)}, got {_kind(value)}")
            out[str(name)] = str(value).lower() if isinstance(value, bool) else str(value)
        return out

    def string_lists(self, key: str, *, example: str = "") -> dict[str, tuple[str, ...]]:
        """A mapping of names to lists of strings (``roles: {reader: [files.read]}``); null lists are empty."""
        section = self.section(key, example=example)
        if section is None:
            return {}
        return {str(name): section.strings(str(name), example=example) for name in section.data}

    def number(self, key: str, default: float, *, low: float = -math.inf, high: float = math.inf,
               unit: str = "") -> float:
        """A finite number in [``low``, ``high``] (``default`` when absent)."""
        value = self.data.get(key, default)
        ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
        if not ok or not low <= value <= high:
            span = f" from {low:g}" if low > -math.inf else ""
            span += f" to {high:g}" if high < math.inf else ""
            raise self.fail(key, f"expected a number{span}{' ' + unit if unit else ''}, got {_kind(value)}")
        return float(value)


def _string_list(value: Any, fail: Any, *, numbers: bool, example: str) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise fail(f"expected a list{_eg(example)}, got {_kind(value)}")
    out = []
    for item in value:
        if isinstance(item, str) and item.strip():
            out.append(item.strip())
        elif numbers and isinstance(item, int | float) and not isinstance(item, bool):
            out.append(str(item))
        else:
            raise fail(f"expected a list of text items{_eg(example)}, but one item is {_kind(item)}")
    return tuple(out)


def _eg(example: str) -> str:
    return f" (e.g. {example})" if example else ""


def _kind(value: Any) -> str:
    """What a wrong value is, for a message: its YAML kind and, when short, the value itself."""
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "text", type(None): "nothing"}
    kind = next((name for t, name in kinds.items() if isinstance(value, t)), None)
    if kind is None:
        kind = "a mapping" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else \
            type(value).__name__
    text = repr(value)
    return f"{kind} {text}" if len(text) <= 60 else kind
