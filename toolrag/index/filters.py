"""Metadata filters for the vector store: a caller's view (permissions, categories, deprecation) as a Chroma
where-clause.

A tool's rows carry ``perm_key`` (its permission codes, sorted and comma-joined, see
:attr:`toolrag.catalog.profile.ToolProfile.perm_key`; "" = everyone), ``category`` and ``deprecated``. Which
rows a caller sees is the caller's answer (:class:`toolrag.catalog.caller.Caller`: its permitted keys, its
categories, deprecation); this module only writes it in Chroma's terms. The tool allow-list is applied to the
hits afterwards (the index's mask), not in the clause.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

from toolrag.catalog.caller import Caller

__all__ = ["build_where", "matches_nothing", "prune_where"]


def build_where(caller: Caller, perm_keys: Iterable[str]) -> dict[str, Any] | None:
    """Chroma where-clause over the ``perm_key``, ``category`` and ``deprecated`` row metadata for ``caller``,
    among the store's distinct ``perm_keys``.

    A filter the caller does not narrow is left out (every key permitted, no categories, deprecated tools
    asked for); an *empty* choice means "nothing passes": the clause then holds an empty ``$in``, for which
    :meth:`VectorCollection.query` returns ``[]`` without asking Chroma (Chroma rejects empty ``$in`` lists).
    Returns ``None`` when nothing is filtered; one condition is returned bare because Chroma rejects an
    ``$and`` of one element.
    """
    keys = set(perm_keys)
    allowed = caller.permitted_keys(keys)
    conditions: list[dict[str, Any]] = []
    if allowed != keys:
        conditions.append({"perm_key": {"$in": sorted(allowed)}})
    if caller.categories is not None:
        conditions.append({"category": {"$in": sorted(caller.categories)}})
    if not caller.include_deprecated:
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
