"""An opt-in Hub model that cannot be loaded falls back to the packaged model of the same role.

The packaged models (:data:`toolrag.settings.PACKAGED_MODELS`) are the default everywhere. A Hub id is an
explicit opt-in (a settings file, an environment variable, a flag). Where it cannot be loaded (toolrag offline
and the model not in the local cache, the Hub down or rate-limited, an id that does not exist) its loader
raises :class:`toolrag.errors.HubModelUnavailable`, and :func:`load_or_fall_back` loads the packaged model of
the same role instead, or turns the role off when it has none (CLIP, the reranker), and returns a note that
says so. The callers show the note: the app's status line, the CLI's stderr, every result's ``notes``.

The model used is the packaged one with its own fingerprint, so an index built with the Hub model is never
read with the packaged one, nor the reverse: the fallback reads (or builds) the packaged model's index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from toolrag.config import is_online
from toolrag.env_vars import CLIP_ENV, ENGLISH_MODEL_ENV, ONLINE_ENV, RERANK_ENV, TEXT_MODEL_ENV
from toolrag.errors import HubModelUnavailable
from toolrag.settings import PACKAGED_MODELS

__all__ = ["hub_error", "load_or_fall_back"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Each model setting: what it is called in messages, its environment variable and its CLI flag.
_NAMES = {
    "text_model": ("text model", TEXT_MODEL_ENV, "--text-model"),
    "english_model": ("English model", ENGLISH_MODEL_ENV, "--english-model"),
    "clip_model": ("CLIP", CLIP_ENV, "--clip-model"),
    "rerank_model": ("reranker", RERANK_ENV, "--rerank-model"),
}
_REASON_CHARS = 240


def hub_error(what: str, setting: str, exc: BaseException | str) -> HubModelUnavailable:
    """The error of a Hub model that cannot be loaded: the setting, the loader's first line and, offline, that
    only the local cache was read (and how to allow downloads)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    reason = first.rstrip(".") if len(first) <= _REASON_CHARS else first[: _REASON_CHARS - 1] + "…"
    if not is_online():
        reason += (f"; toolrag is offline, so only the local Hugging Face cache was read (set {ONLINE_ENV}=1 "
                   "where the Hub is reachable to download it)")
    return HubModelUnavailable(f"{what} {setting!r} cannot be loaded from the Hugging Face Hub: {reason}",
                               reason=reason)


def load_or_fall_back(field: str, setting: str, load: Callable[[str], T]) -> tuple[T | None, str | None]:
    """``(load(setting), None)``; when that raises HubModelUnavailable, the packaged model of the same role
    (``load(PACKAGED_MODELS[field])``, or ``None`` for a role without one) and the note that says so.

    ``field`` is the setting's name in :class:`toolrag.settings.Settings` (``text_model``, ``english_model``,
    ``clip_model``, ``rerank_model``). Any other error (a missing folder, a missing package) is raised as is:
    that is a mistake to fix, not a Hub that is down.
    """
    what, env, flag = _NAMES[field]
    try:
        return load(setting), None
    except HubModelUnavailable as exc:
        packaged = PACKAGED_MODELS[field]
        if packaged is not None and packaged.strip().lower() == setting.strip().lower():
            raise
        instead = (f"using the packaged {packaged!r} instead" if packaged is not None
                   else f"{what} is off (no {what} weights ship in a package)")
        note = (f"{what} {setting!r} ({env} / {flag}) cannot be loaded from the Hugging Face Hub, {instead}: "
                f"{exc.reason}")
        log.warning(note)
        return (load(packaged) if packaged is not None else None), note
