"""Links straight to one search: the request, the caller's role, categories and settings in the page's URL.

``http://127.0.0.1:7860/?q=帮我报销这张餐饮发票&role=employee&fusion=late&w_bm25=0.5`` fills the Search
tab and runs the search as soon as the index is ready, so a Space or a local demo can link to one search.
After every search the tab shows the link that reproduces it. Parameters (all optional):

| parameter | control | example |
|---|---|---|
| ``q`` (or ``query``) | the request | ``q=book a room for 3pm`` |
| ``role`` | caller role | ``role=employee`` (``guest`` for no permissions) |
| ``category`` | category filter (repeat, or comma-separated) | ``category=travel,finance`` |
| ``top_k``, ``fusion``, ``normalization``, ``rerank`` | retrieval controls | ``top_k=3&fusion=rrf&rerank=1`` |
| ``precision_target`` | the decision's operating point (EXECUTE precision, percent) | ``precision_target=90`` |
| ``clean_target`` | the other one (requests nothing serves that get no tool, percent) | ``clean_target=90`` |
| ``w_<signal>`` | a signal's weight | ``w_dense=0.5&w_bm25=0.3`` |

A value that is not valid is left out and named in a warning; the rest of the link still applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from toolrag.settings import Fusion, Normalization, Settings
from toolrag.signals import SIGNALS
from toolrag.ui.format import GUEST, clean_target, precision_target

__all__ = ["LINK_CONTROLS", "Link", "link_query", "parse_link"]

#: The controls a link can set, in the order :class:`Link` lists their values.
LINK_CONTROLS = ("query", "role", "categories", "top_k", "fusion", "normalization", "rerank", "precision_target",
                 "clean_target", *(f"w_{s}" for s in SIGNALS))
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Link:
    """The control values a link sets (only the parameters it gives) and the warnings about bad ones."""

    values: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def _number(name: str, text: str, low: float, high: float, warnings: list[str]) -> float | None:
    try:
        value = float(text)
    except ValueError:
        warnings.append(f"{name}={text!r} is not a number")
        return None
    if not low <= value <= high:
        warnings.append(f"{name}={text!r} is outside [{low:g}, {high:g}]")
        return None
    return value


def parse_link(params: Mapping[str, str | Sequence[str]], *, roles: Sequence[str],
               categories: Sequence[str]) -> Link:
    """The control values of URL query ``params`` (a parameter given twice: its values, e.g. categories).

    ``roles`` are the role choices of the page, ``categories`` the catalog's. Unknown parameters are ignored
    (a Space adds its own); a bad value is reported in ``warnings`` and not applied."""
    def values(name: str) -> list[str]:
        raw = params.get(name)
        if raw is None:
            return []
        return [raw] if isinstance(raw, str) else [str(v) for v in raw]

    out: dict[str, Any] = {}
    warnings: list[str] = []
    texts = values("q") or values("query")
    if texts:
        out["query"] = texts[-1]
    for role in values("role")[-1:]:
        chosen = GUEST if role.strip().lower() in ("guest", GUEST) else role.strip()
        if chosen in roles:
            out["role"] = chosen
        else:
            warnings.append(f"role={role!r} is not a role of this catalog ({', '.join(roles)})")
    cats = [c.strip() for v in values("category") for c in v.split(",") if c.strip()]
    if cats:
        unknown = [c for c in cats if c not in categories]
        warnings += [f"category={c!r} is not a category of this catalog" for c in unknown]
        out["categories"] = [c for c in cats if c in categories]
    for text in values("top_k")[-1:]:
        number = _number("top_k", text, 1, 20, warnings)
        if number is not None:
            out["top_k"] = int(number)
    for name, enum in (("fusion", Fusion), ("normalization", Normalization)):
        for text in values(name)[-1:]:
            choices = [e.value for e in enum]
            if text.strip().lower() in choices:
                out[name] = text.strip().lower()
            else:
                warnings.append(f"{name}={text!r}: choose one of {', '.join(choices)}")
    for text in values("rerank")[-1:]:
        if text.strip().lower() in _TRUE | _FALSE:
            out["rerank"] = text.strip().lower() in _TRUE
        else:
            warnings.append(f"rerank={text!r}: use 1 or 0")
    for name, low, high in (("precision_target", 70.0, 95.0), ("clean_target", 60.0, 95.0),
                            *((f"w_{s}", 0.0, 1.0) for s in SIGNALS)):
        for text in values(name)[-1:]:
            number = _number(name, text, low, high, warnings)
            if number is not None:
                out[name] = number
    return Link(out, tuple(warnings))


def link_query(*, query: str, role: str | None, categories: Sequence[str] | None, settings: Settings,
               base: Settings) -> str:
    """The URL query (``?q=...``) that reproduces a search: the request, role and categories, and every
    setting that differs from ``base`` (the page's defaults)."""
    items: list[tuple[str, str]] = [("q", query)]
    if role:
        items.append(("role", "guest" if role == GUEST else role))
    items += [("category", c) for c in categories or ()]
    for name in ("top_k", "fusion", "normalization", "rerank"):
        value, default = getattr(settings, name), getattr(base, name)
        if value != default:
            shown = value.value if hasattr(value, "value") else int(value) if isinstance(value, bool) else value
            items.append((name, str(shown)))
    if precision_target(settings) != precision_target(base):
        items.append(("precision_target", f"{100 * precision_target(settings):g}"))
    if clean_target(settings) != clean_target(base):
        items.append(("clean_target", f"{100 * clean_target(settings):g}"))
    items += [(f"w_{s}", f"{settings.weights.get(s, 0.0):g}") for s in SIGNALS
              if abs(settings.weights.get(s, 0.0) - base.weights.get(s, 0.0)) > 1e-9]
    return "?" + urlencode(items)
