"""The one YAML reader of toolrag: mappings and sequences that remember their lines.

Catalog files, ``catalog.yaml``, labelled query files and settings files all read through :func:`read_yaml`,
so every error points at ``file:line`` the same way. Safe tags only; a key given twice in one mapping is an
error (YAML would silently keep the last one).
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["LineDict", "LineList", "YamlSyntaxError", "read_yaml"]


class LineDict(dict[str, Any]):
    """A mapping read from YAML that remembers its line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict[str, int]


class LineList(list[Any]):
    """A sequence read from YAML that remembers its line and the line of each item (1-based)."""

    line: int = 0
    item_lines: list[int]


class YamlSyntaxError(ValueError):
    """A YAML text that cannot be parsed: ``line``/``column`` (1-based, 0 when unknown) and the ``problem``."""

    def __init__(self, problem: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {problem}" if line else problem)
        self.problem, self.line, self.column = problem, line, column


#: libyaml's parser when PyYAML was built with it (the wheels are): the same safe constructors and line marks,
#: several times faster on large catalogs (a 100,000-tool catalog is read at start-up).
_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_BASE_LOADER):  # type: ignore[valid-type,misc]
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (given twice in one mapping; keep one)", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[str(key)] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def read_yaml(text: str) -> Any:
    """Parse YAML (safe tags only) into :class:`LineDict` / :class:`LineList` that remember their lines.

    The one YAML reader of toolrag: catalogs, ``catalog.yaml``, labelled query files and settings files all
    read through it, so every error points at the same ``line``; raises :class:`YamlSyntaxError`.
    """
    try:
        return yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and start is not None and start is not mark:
            problem += f", {context} started at line {start.line + 1}"
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        raise YamlSyntaxError(problem, line, column) from None

