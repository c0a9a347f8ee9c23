"""The process environment in one place: the one reader of environment variables, the online check, the "off"
parser, the data folder and the offline set-up of the libraries toolrag uses.

Every variable is read through :func:`env` (or :func:`environ` for a mapping of them), which refuses a name that
is not in :data:`ENV_VARS`: a variable cannot be read without a row saying its default and meaning. The table
itself, and the configuration page (docs/configuration.md) rendered from it (:func:`env_table_markdown`), live in
:mod:`toolrag.env_vars`, where every module takes the names from. What toolrag writes for the libraries it imports is
:data:`LIBRARY_ENV`, written only through :func:`set_default`.

``import toolrag`` changes nothing in the process environment. :func:`configure_environment` is called by
the entry points (``toolrag`` CLI, ``app.py``, the test suite) or by a library caller that wants the same
set-up: telemetry off for gradio, huggingface_hub and chromadb, progress bars off, and ``HF_HUB_OFFLINE=1``
when toolrag is offline (a Hub id then fails in 0.2 s instead of after about 70 s of retries). Values the
user already set always win. The library itself never needs the Hub offline flag: the default models are
local folders (see :mod:`toolrag.encode.resolve`), which load without any network call.
"""

from __future__ import annotations

import logging
import os
import sys
from enum import Enum
from pathlib import Path
from typing import TypeVar

from toolrag.env_vars import (
    AUDIT_REQUESTS_ENV,
    DATA_DIR_ENV,
    ENV_VARS,
    INDEX_ENV,
    LIBRARY_ENV,
    ONLINE_ENV,
    SPACE_ID_ENV,
    EnvVar,
)
from toolrag.errors import SettingsError

__all__ = [
    "audit_hashes_requests",
    "choice_setting",
    "configure_environment",
    "data_dir",
    "env",
    "env_setting",
    "environ",
    "index_name",
    "is_off",
    "is_online",
    "on_space",
    "optional_setting",
    "quiet_library_defaults",
    "seconds_setting",
    "set_default",
    "switch_setting",
    "utf8_output",
]

log = logging.getLogger(__name__)


_BY_NAME: dict[str, EnvVar] = {var.name: var for var in ENV_VARS}
_SETTABLE = frozenset(var.name for var in LIBRARY_ENV)


def _known(name: str) -> EnvVar:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"{name} is not in toolrag.env_vars.ENV_VARS; add a row (default, meaning) before "
                         "reading it") from None


def env(name: str) -> str:
    """The value of the environment variable ``name`` without surrounding spaces (``""`` when unset or blank).

    ``name`` must be a row of :data:`ENV_VARS` (ValueError otherwise): the one way toolrag reads its
    environment, so every variable it reads is documented."""
    _known(name)
    return os.environ.get(name, "").strip()


_read = env  # for functions whose keyword ``env`` (a variable's name) hides the function


def environ() -> dict[str, str]:
    """The variables of :data:`ENV_VARS` that are set, as a mapping (for code that also takes a test mapping)."""
    return {var.name: os.environ[var.name] for var in ENV_VARS if var.name in os.environ}


def set_default(name: str, value: str) -> None:
    """Set ``name`` for a library unless the user already set it; ``name`` must be a row of :data:`LIBRARY_ENV`."""
    if name not in _SETTABLE:
        raise ValueError(f"{name} is not in toolrag.env_vars.LIBRARY_ENV; add a row (value, why) before setting it")
    os.environ.setdefault(name, value)


def index_name(explicit: str | None = None) -> str | None:
    """The published index to serve: ``explicit`` (``--index``), else ``$TOOLRAG_INDEX``, else ``None``."""
    return (explicit or "").strip() or env(INDEX_ENV) or None


def seconds_setting(name: str, default: float) -> float:
    """A positive number of seconds from the environment variable ``name`` (unset or blank: ``default``);
    SettingsError naming the variable for anything else."""
    raw = env(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise SettingsError(f"{name}={raw!r}: give a positive number of seconds, e.g. {default:g}")
    return value


def on_space() -> bool:
    """True on a Hugging Face Space (``SPACE_ID`` set)."""
    return bool(env(SPACE_ID_ENV))


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
    raw = value if value is not None else _read(env) or default
    try:
        return kind(raw.strip().lower() if isinstance(raw, str) else raw)
    except ValueError:
        choices = ", ".join(str(member.value) for member in kind)
        raise SettingsError(f"{what} {raw!r} is not one of {choices}; fix {env}") from None


_ON_WORDS = frozenset({"on", "1", "true", "yes"})


def switch_setting(name: str, *, meaning: str) -> bool:
    """An on/off environment variable whose default is on: off when it holds an off word (:func:`is_off`);
    another value than an on word is logged and ignored, naming ``meaning`` (what ``off`` does)."""
    raw = env(name).strip()
    if raw and is_off(raw):
        return False
    if raw and raw.lower() not in _ON_WORDS:
        log.warning("ignoring %s=%r: use off to %s, or on", name, raw, meaning)
    return True


def env_setting(name: str, default: str | None) -> str | None:
    """An environment variable as a model setting: unset or blank -> ``default``; an off word -> ``None``."""
    raw = env(name)
    if not raw:
        return default
    return None if is_off(raw) else raw


def audit_hashes_requests(value: str | None = None) -> bool:
    """Whether the audit log keeps each request only as its SHA-256 (``hash``) instead of its text (``text``, the
    default): ``value`` (``--audit-requests``), else ``TOOLRAG_AUDIT_REQUESTS``; the redaction setting the audit
    log and the Evaluate tab read. Anything else is an error."""
    raw = value if value is not None else (env(AUDIT_REQUESTS_ENV) or "text")
    choice = raw.strip().lower()
    if choice not in ("text", "hash"):
        raise SettingsError(f"{AUDIT_REQUESTS_ENV}={raw!r}: use 'text' (store requests) or 'hash' (store only "
                            "their SHA-256)")
    return choice == "hash"


def is_online() -> bool:
    """True when an opt-in Hub model may be downloaded: ``TOOLRAG_ONLINE=1`` or a Hugging Face Space
    (``SPACE_ID`` set). The default models are packaged either way (:data:`toolrag.settings.PACKAGED_MODELS`).

    ``TOOLRAG_ONLINE=0`` forces offline even on a Space.
    """
    flag = env(ONLINE_ENV).lower()
    if flag in _TRUE:
        return True
    if flag in _FALSE:
        return False
    if flag:
        log.warning("ignoring %s=%r: use 1 (online) or 0 (offline)", ONLINE_ENV, flag)
    return on_space()


def quiet_library_defaults() -> None:
    """Telemetry and progress bars off for the libraries toolrag imports: the ``quiet`` rows of
    :data:`LIBRARY_ENV` (the user's values win). Called right before toolrag itself imports chromadb,
    transformers or gradio."""
    for var in LIBRARY_ENV:
        if var.quiet:
            set_default(var.name, var.value)


def utf8_output() -> None:
    """Make an entry point write UTF-8 to stdout and stderr whatever the locale says: tool names, descriptions and
    JSON hold any language (JSON is UTF-8 by its standard), and in the C or POSIX locale Python would otherwise
    fail on the first non-ASCII character. Streams already in UTF-8 (or not reconfigurable) are left alone."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")


def configure_environment(*, offline: bool | None = None) -> None:
    """Set the environment of an entry point before gradio / huggingface_hub / transformers / chromadb load.

    Telemetry off everywhere (:func:`quiet_library_defaults`); ``HF_HUB_OFFLINE=1`` when ``offline`` (by
    default: when :func:`is_online` is false). Values already set by the user win.
    """
    quiet_library_defaults()
    if offline if offline is not None else not is_online():
        set_default("HF_HUB_OFFLINE", "1")


def data_dir() -> Path:
    """The folder for built models, indexes and caches: ``$TOOLRAG_DATA_DIR``, else
    ``$XDG_CACHE_HOME/toolrag``, else ``~/.cache/toolrag``. Created on demand."""
    explicit = env(DATA_DIR_ENV)
    if explicit:
        path = Path(explicit).expanduser()
    else:
        cache = env("XDG_CACHE_HOME")
        path = (Path(cache).expanduser() if cache else Path.home() / ".cache") / "toolrag"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(
            f"cannot create the toolrag data directory {path}: {exc}; set {DATA_DIR_ENV} to a writable folder"
        ) from exc
    return path
