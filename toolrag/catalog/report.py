"""How a catalog was read: strict or lenient, and what loading kept, skipped and degraded.

Hand-written YAML is the author's own file, so it is read strictly (every problem refuses the catalog: a CI
gate). Imported catalogs (OpenAI ``tools`` JSON, MCP ``tools/list`` results, JSON Lines) were written by
someone else, so they are read leniently: a bad field is dropped with a warning naming the tool, the field
and the reason, a tool without an id or a description is skipped with a warning, and nothing else refuses
the catalog. :class:`LoadReport` is what a caller reads back: ``catalog.report``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from toolrag.errors import Problem, ProfileError

__all__ = ["LENIENT_SUFFIXES", "LoadMode", "LoadReport", "raise_problems"]

#: Files read leniently in the default mode: formats that are imported, not written by hand.
LENIENT_SUFFIXES = (".json", ".jsonl")


class LoadMode(str, Enum):
    """How strictly catalog files are validated."""

    AUTO = "auto"  # YAML strict, imports (.json / .jsonl) lenient
    STRICT = "strict"  # every problem refuses the catalog
    LENIENT = "lenient"  # bad fields dropped, unusable tools skipped, all with warnings

    def lenient_for(self, file: Path) -> bool:
        """Whether ``file`` is read leniently under this mode."""
        if self is LoadMode.AUTO:
            return file.suffix.lower() in LENIENT_SUFFIXES
        return self is LoadMode.LENIENT


@dataclass(frozen=True)
class LoadReport:
    """What loading a catalog kept: ``loaded`` tools (``degraded`` of them lost a field or part of their
    schema), ``skipped`` records (no usable id or description, a duplicate id, an unreadable line), and one
    warning per thing dropped or skipped, each naming file, line, tool and field."""

    loaded: int = 0
    skipped: int = 0
    degraded: int = 0
    warnings: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not (self.skipped or self.degraded or self.warnings)

    def summary(self) -> str:
        """One line: ``78 tools loaded, 0 skipped, 0 degraded``."""
        return f"{self.loaded} tools loaded, {self.skipped} skipped, {self.degraded} degraded"

    def to_json(self) -> dict[str, object]:
        return {"loaded": self.loaded, "skipped": self.skipped, "degraded": self.degraded,
                "warnings": list(self.warnings)}


#: How many problems the error's own message quotes; ``toolrag lint`` and ``ProfileError.problems`` hold them all.
_MAX_PROBLEMS_SHOWN = 1


def raise_problems(problems: list[Problem]) -> None:
    """Refuse what was read: a ``ProfileError`` quoting the first problem and counting the rest."""
    extra = len(problems) - _MAX_PROBLEMS_SHOWN
    message = "; ".join(str(p) for p in problems[:_MAX_PROBLEMS_SHOWN])
    if extra > 0:
        message += f" (+{extra} more problem{'s' if extra > 1 else ''}; `toolrag lint` lists them all)"
    raise ProfileError(message, problems)
