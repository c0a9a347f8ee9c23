"""The process environment in one place: toolrag's variables, the online check, the "off" parser, the data
folder and the offline set-up of the libraries toolrag uses.

``import toolrag`` changes nothing in the process environment. :func:`configure_environment` is called by
the entry points (``toolrag`` CLI, ``app.py``, the test suite) or by a library caller that wants the same
set-up: telemetry off for gradio, huggingface_hub and chromadb, progress bars off, and ``HF_HUB_OFFLINE=1``
when toolrag is offline (a Hub id then fails in 0.2 s instead of after about 70 s of retries). Values the
user already set always win. The library itself never needs the Hub offline flag: offline, models resolve to
local folders (see :mod:`toolrag.encode.resolve`), which load without any network call.
"""

from __future__ import annotations

import logging
import os
from enum import Enum
from pathlib import Path
from typing import TypeVar

from toolrag.errors import SettingsError

__all__ = [
    "AUDIT_LOG_ENV",
    "AUDIT_REQUESTS_ENV",
    "CHROMA_URL_ENV",
    "CLIP_ENV",
    "DATA_DIR_ENV",
    "ENGLISH_MODEL_ENV",
    "IMAGE_BACKEND_ENV",
    "ONLINE_ENV",
    "PUBLIC_ROLE_ENV",
    "RERANK_ENV",
    "TEXT_BACKEND_ENV",
    "TEXT_MODEL_ENV",
    "USER_ROLES_ENV",
    "audit_hashes_requests",
    "choice_setting",
    "configure_environment",
    "data_dir",
    "env_setting",
    "is_off",
    "is_online",
    "optional_setting",
    "quiet_library_defaults",
]

log = logging.getLogger(__name__)

ONLINE_ENV = "TOOLRAG_ONLINE"
DATA_DIR_ENV = "TOOLRAG_DATA_DIR"
TEXT_MODEL_ENV = "TOOLRAG_TEXT_MODEL"
TEXT_BACKEND_ENV = "TOOLRAG_TEXT_BACKEND"
#: ``onnx`` (default) runs the image model in ONNX Runtime, ``torch`` in PyTorch.
IMAGE_BACKEND_ENV = "TOOLRAG_IMAGE_BACKEND"
ENGLISH_MODEL_ENV = "TOOLRAG_ENGLISH_MODEL"
CLIP_ENV = "TOOLRAG_CLIP_MODEL"
RERANK_ENV = "TOOLRAG_RERANK_MODEL"
CHROMA_URL_ENV = "TOOLRAG_CHROMA_URL"
#: The audit log file (JSON Lines) every search and forwarded call is appended to; unset = no audit log.
AUDIT_LOG_ENV = "TOOLRAG_AUDIT_LOG"
#: ``text`` (default) keeps each request's text in the audit log, ``hash`` only its SHA-256.
AUDIT_REQUESTS_ENV = "TOOLRAG_AUDIT_REQUESTS"
#: The catalog role whose tools a shared playground shows to every visitor (unset: only the tools that need no
#: permission code); see :class:`toolrag.ui.backend.Access`.
PUBLIC_ROLE_ENV = "TOOLRAG_PUBLIC_ROLE"
#: The roles each signed-in user of a shared playground holds, ``user:role`` pairs separated by commas.
USER_ROLES_ENV = "TOOLRAG_USER_ROLES"
#: ``off`` reads a large catalog's files at every start instead of its validated copy in the data folder
#: (:mod:`toolrag.catalog.cache`).
CATALOG_CACHE_ENV = "TOOLRAG_CATALOG_CACHE"

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
#: Words that turn an optional model off, in settings files, flags and environment variables.
OFF_WORDS = frozenset({"none", "off", "null", "false", "no", "0"})


def is_off(value: object) -> bool:
    """True when ``value`` turns an optional component off: ``None``, ``False`` or one of :data:`OFF_WORDS`
    (any case, surrounding spaces ignored). The one parser of "off" for flags, settings and the environment."""
    if value is None or value is False:
        return True
    return isinstance(value, str) and value.strip().lower() in OFF_WORDS


def optional_setting(value: object, *, name: str) -> str | None:
    """A model setting that may be turned off: ``None`` when :func:`is_off`, else the stripped text.

    Raises SettingsError naming ``name`` for anything that is not text (a number, a list...)."""
    if is_off(value):
        return None
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{name} is {value!r}; give a model name, a folder or a Hub id as text, "
                            "or none to turn it off")
    return value.strip()


_Choice = TypeVar("_Choice", bound=Enum)


def choice_setting(kind: type[_Choice], value: str | _Choice | None, *, env: str, default: _Choice,
                   what: str) -> _Choice:
    """``value``, else the environment variable ``env``, else ``default``, as a member of the str enum ``kind``
    (case and surrounding spaces ignored); SettingsError naming ``what``, the choices and the variable to fix."""
    raw = value if value is not None else os.environ.get(env, "").strip() or default
    try:
        return kind(raw.strip().lower() if isinstance(raw, str) else raw)
    except ValueError:
        choices = ", ".join(str(member.value) for member in kind)
        raise SettingsError(f"{what} {raw!r} is not one of {choices}; fix {env}") from None


def env_setting(name: str, default: str | None) -> str | None:
    """An environment variable as a model setting: unset or blank -> ``default``; an off word -> ``None``."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    return None if is_off(raw) else raw.strip()


def audit_hashes_requests() -> bool:
    """Whether the audit log keeps each request only as its SHA-256 (``TOOLRAG_AUDIT_REQUESTS=hash``) instead of
    its text (``text``, the default): the redaction setting the audit log and the Evaluate tab read."""
    choice = os.environ.get(AUDIT_REQUESTS_ENV, "").strip().lower() or "text"
    if choice not in ("text", "hash"):
        raise SettingsError(f"{AUDIT_REQUESTS_ENV}={choice!r}: use 'text' (store requests) or 'hash' (store only "
                            "their SHA-256)")
    return choice == "hash"


def is_online() -> bool:
    """True when model hubs may be used: ``TOOLRAG_ONLINE=1`` or a Hugging Face Space (``SPACE_ID`` set).

    ``TOOLRAG_ONLINE=0`` forces offline even on a Space.
    """
    flag = os.environ.get(ONLINE_ENV, "").strip().lower()
    if flag in _TRUE:
        return True
    if flag in _FALSE:
        return False
    if flag:
        log.warning("ignoring %s=%r: use 1 (online) or 0 (offline)", ONLINE_ENV, flag)
    return bool(os.environ.get("SPACE_ID"))


def quiet_library_defaults() -> None:
    """Telemetry and progress bars off for the libraries toolrag imports (``setdefault``: the user's values
    win). Called right before toolrag itself imports chromadb, transformers or gradio."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    # Model loading progress bars would garble the CLI's output and JSON; toolrag reports progress itself.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # numba (under UMAP) otherwise wraps and later restores sys.stdout/sys.stderr with colorama from whatever
    # thread compiles, e.g. the app's map warm-up: output of the main thread then goes to a stale stream.
    os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")


def configure_environment(*, offline: bool | None = None) -> None:
    """Set the environment of an entry point before gradio / huggingface_hub / transformers / chromadb load.

    Telemetry off everywhere (:func:`quiet_library_defaults`); ``HF_HUB_OFFLINE=1`` when ``offline`` (by
    default: when :func:`is_online` is false). Values already set by the user win.
    """
    quiet_library_defaults()
    if offline if offline is not None else not is_online():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")


def data_dir() -> Path:
    """The folder for built models, indexes and caches: ``$TOOLRAG_DATA_DIR``, else
    ``$XDG_CACHE_HOME/toolrag``, else ``~/.cache/toolrag``. Created on demand."""
    explicit = os.environ.get(DATA_DIR_ENV, "").strip()
    if explicit:
        path = Path(explicit).expanduser()
    else:
        cache = os.environ.get("XDG_CACHE_HOME", "").strip()
        path = (Path(cache).expanduser() if cache else Path.home() / ".cache") / "toolrag"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(
            f"cannot create the toolrag data directory {path}: {exc}; set {DATA_DIR_ENV} to a writable folder"
        ) from exc
    return path
