"""Metadata filters for the vector store: permission keys, categories, deprecation, as Chroma where-clauses.

A tool's rows carry ``perm_key`` (its permission codes, sorted and comma-joined, see
:attr:`toolrag.catalog.profile.ToolProfile.perm_key`; "" = everyone), ``category`` and ``deprecated``. A caller
may see a row when it holds every code of the row's key.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

__all__ = ["build_where", "matches_nothing", "prune_where"]


def build_where(
    *,
    allowed_perm_keys: Collection[str] | None,
    categories: Collection[str] | None,
    include_deprecated: bool,
) -> dict[str, Any] | None:
    """Chroma where-clause over the ``perm_key``, ``category`` and ``deprecated`` row metadata.

    ``None`` for a filter means "do not filter on it"; an *empty* collection means "nothing passes": the
    clause then holds an empty ``$in``, for which :meth:`VectorCollection.query` returns ``[]`` without asking
    Chroma (Chroma rejects empty ``$in`` lists). Returns ``None`` when nothing is filtered; one condition is
    returned bare because Chroma rejects an ``$and`` of one element.
    """
    conditions: list[dict[str, Any]] = []
    if allowed_perm_keys is not None:
        conditions.append({"perm_key": {"$in": sorted(allowed_perm_keys)}})
    if categories is not None:
        conditions.append({"category": {"$in": sorted(categories)}})
    if not include_deprecated:
        conditions.append({"deprecated": {"$eq": False}})
    if not conditions:
        return None
    return conditions[0] if len(conditions) == 1 else {"$and": conditions}


class Nothing:
    """Marker: a where-clause that no row can satisfy."""


NOTHING: Final = Nothing()


def prune_where(where: Mapping[str, Any]) -> dict[str, Any] | Nothing | None:
    """Simplify a where-clause into a form Chroma accepts: empty ``$in`` -> nothing matches, empty ``$nin`` ->
    no condition, one-element ``$and``/``$or`` unwrapped, several top-level keys -> ``$and``."""
    if not isinstance(where, Mapping) or not where:
        raise ValueError(f"where-clause {where!r} must be a non-empty dict (see build_where())")
    if len(where) > 1:
        return prune_where({"$and": [{key: value} for key, value in where.items()]})
    ((key, value),) = where.items()
    if key in ("$and", "$or"):
        if not isinstance(value, list) or not value:
            raise ValueError(f"where-clause {key} needs a non-empty list, got {value!r}")
        kids = [prune_where(kid) for kid in value]
        absorbing, neutral = (NOTHING, None) if key == "$and" else (None, NOTHING)
        if any(kid is absorbing for kid in kids):
            return absorbing
        kept = [kid for kid in kids if kid is not neutral]
        if not kept:
            return neutral
        return kept[0] if len(kept) == 1 else {key: kept}
    if isinstance(value, Mapping) and len(value) == 1:
        ((op, operand),) = value.items()
        if op == "$in" and isinstance(operand, Collection) and len(operand) == 0:
            return NOTHING
        if op == "$nin" and isinstance(operand, Collection) and len(operand) == 0:
            return None
    return {key: value}


def matches_nothing(where: Mapping[str, Any] | None) -> bool:
    """True when no row can satisfy ``where`` (e.g. a caller allowed no permission key or no category)."""
    return where is not None and prune_where(where) is NOTHING
