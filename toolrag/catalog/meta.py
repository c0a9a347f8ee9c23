"""``catalog.yaml``: a catalog's name, its assets folder and its roles (role -> permission codes), read strictly
(:class:`toolrag.strict.Section`); every problem of the file is listed at once, as for a profile file."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from toolrag.catalog.profile import PERMISSION_CODE
from toolrag.catalog.readers import yaml_load
from toolrag.catalog.report import raise_problems
from toolrag.errors import CatalogError, Problem, ToolragError
from toolrag.strict import Section

__all__ = ["META_FILE", "read_meta"]

#: The file of a catalog folder that holds its name, assets folder and roles.
META_FILE = "catalog.yaml"
_T = TypeVar("_T")

_META_KEYS = ("name", "assets_dir", "roles", "description")


def read_meta(file: Path) -> dict[str, Any]:
    """``catalog.yaml``, read strictly (:class:`toolrag.strict.Section`): an unknown key, a value of the wrong
    shape or a bad permission code names the file, its line and the closest valid key; every problem of the file
    is listed at once, as for a profile file."""
    problems: list[Problem] = []
    data = yaml_load(file.read_text(encoding="utf-8"), file, problems)
    if problems:
        raise_problems(problems)
    meta = Section.of(data, file, what="name, assets_dir and roles", error=CatalogError)
    errors: list[ToolragError] = meta.unknown_keys(_META_KEYS)
    for key in ("name", "assets_dir", "description"):
        _noting(errors, partial(meta.text, key, example="a text"))  # shape only: the values are read below
    roles = _noting(errors, lambda: _parse_roles(meta, errors))
    if errors:
        raise_problems([Problem(str(e), e.file, e.line, e.tool, e.field) for e in errors])
    return {**{k: meta.raw(k) for k in meta.names()}, "roles": roles or {}}


def _noting(errors: list[ToolragError], read: Callable[[], _T]) -> _T | None:
    """``read()``, or ``None`` with its error added to ``errors``."""
    try:
        return read()
    except ToolragError as exc:
        errors.append(exc)
        return None


def _parse_roles(meta: Section, errors: list[ToolragError]) -> dict[str, tuple[str, ...]]:
    roles_section = meta.section("roles", example="{employee: [expense.submit]}")
    if roles_section is None:
        return {}
    roles: dict[str, tuple[str, ...]] = {}
    for name in roles_section.names():
        codes = _noting(errors, partial(roles_section.strings, name, example="[expense.submit, travel.book]"))
        if codes is None:
            continue
        bad = [c for c in codes if not PERMISSION_CODE.match(c)]
        if bad:
            errors.append(roles_section.fail(name, f"permission code {bad[0]!r} is not valid: a code may not contain "
                                                   "a comma or a space (list several codes as separate items)"))
            continue
        roles[name] = codes
    return roles
