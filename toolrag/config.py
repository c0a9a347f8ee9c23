"""The process environment in one place: the table of every environment variable toolrag reads, the one
reader of them, the online check, the "off" parser, the data folder and the offline set-up of the libraries
toolrag uses.

Every variable is read through :func:`env` (or :func:`environ` for a mapping of them), which refuses a name that
is not in :data:`ENV_VARS`: a variable cannot be read without a row saying its default and meaning, and the
configuration page (docs/configuration.md) is rendered from that table (:func:`env_table_markdown`). What toolrag writes
for the libraries it imports is :data:`LIBRARY_ENV`, written only through :func:`set_default`.

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
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TypeVar

from toolrag.errors import SettingsError

__all__ = [
    "AUDIT_LOG_ENV",
    "AUDIT_REQUESTS_ENV",
    "AUTH_ENV",
    "BENCHMARKS_ENV",
    "BENCH_DIR_ENV",
    "BENCH_ENGINE_ENV",
    "BENCH_THREADS_ENV",
    "CATALOG_CACHE_ENV",
    "CATALOG_ENV",
    "CHROMA_TIMEOUT_ENV",
    "CHROMA_URL_ENV",
    "CLIP_ENV",
    "DATA_DIR_ENV",
    "EDITING_ENV",
    "EDITORS_ENV",
    "ENGLISH_MODEL_ENV",
    "ENV_VARS",
    "EXAMPLE_MODEL_ENV",
    "IMAGE_BACKEND_ENV",
    "INDEX_ENV",
    "INDEX_LEASE_ENV",
    "INDEX_POLL_ENV",
    "LIBRARY_ENV",
    "LOG_LEVEL_ENV",
    "ONLINE_ENV",
    "OPENAI_KEY_ENV",
    "OTEL_DISABLED_ENV",
    "OTEL_ENDPOINT_ENV",
    "OTEL_EXPORTER_ENV",
    "OTEL_TRACES_ENDPOINT_ENV",
    "PUBLIC_ROLE_ENV",
    "RERANK_ENV",
    "SPACE_ID_ENV",
    "TEXT_BACKEND_ENV",
    "TEXT_MODEL_ENV",
    "THREADS_ENV",
    "TRAINING_ENV",
    "USER_ROLES_ENV",
    "EnvVar",
    "LibraryVar",
    "audit_hashes_requests",
    "choice_setting",
    "configure_environment",
    "data_dir",
    "env",
    "env_setting",
    "env_table_markdown",
    "environ",
    "index_name",
    "is_off",
    "is_online",
    "on_space",
    "optional_setting",
    "quiet_library_defaults",
    "seconds_setting",
    "set_default",
    "utf8_output",
]

log = logging.getLogger(__name__)

ONLINE_ENV = "TOOLRAG_ONLINE"
DATA_DIR_ENV = "TOOLRAG_DATA_DIR"
TEXT_MODEL_ENV = "TOOLRAG_TEXT_MODEL"
TEXT_BACKEND_ENV = "TOOLRAG_TEXT_BACKEND"
IMAGE_BACKEND_ENV = "TOOLRAG_IMAGE_BACKEND"
ENGLISH_MODEL_ENV = "TOOLRAG_ENGLISH_MODEL"
CLIP_ENV = "TOOLRAG_CLIP_MODEL"
RERANK_ENV = "TOOLRAG_RERANK_MODEL"
CHROMA_URL_ENV = "TOOLRAG_CHROMA_URL"
CHROMA_TIMEOUT_ENV = "TOOLRAG_CHROMA_TIMEOUT"
AUDIT_LOG_ENV = "TOOLRAG_AUDIT_LOG"
AUDIT_REQUESTS_ENV = "TOOLRAG_AUDIT_REQUESTS"
PUBLIC_ROLE_ENV = "TOOLRAG_PUBLIC_ROLE"
USER_ROLES_ENV = "TOOLRAG_USER_ROLES"
CATALOG_CACHE_ENV = "TOOLRAG_CATALOG_CACHE"
INDEX_ENV = "TOOLRAG_INDEX"
INDEX_POLL_ENV = "TOOLRAG_INDEX_POLL"
INDEX_LEASE_ENV = "TOOLRAG_INDEX_LEASE"
OTEL_EXPORTER_ENV = "OTEL_TRACES_EXPORTER"
OTEL_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
OTEL_TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
OTEL_DISABLED_ENV = "OTEL_SDK_DISABLED"
THREADS_ENV = "OMP_NUM_THREADS"
SPACE_ID_ENV = "SPACE_ID"
CATALOG_ENV = "TOOLRAG_CATALOG"
LOG_LEVEL_ENV = "TOOLRAG_LOG_LEVEL"
EDITING_ENV = "TOOLRAG_EDITING"
AUTH_ENV = "TOOLRAG_AUTH"
EDITORS_ENV = "TOOLRAG_EDITORS"
BENCHMARKS_ENV = "TOOLRAG_BENCHMARKS"
BENCH_DIR_ENV = "TOOLRAG_BENCH_DIR"
BENCH_THREADS_ENV = "TOOLRAG_BENCH_THREADS"
BENCH_ENGINE_ENV = "TOOLRAG_BENCH_ENGINE"
TRAINING_ENV = "TOOLRAG_TRAINING"
EXAMPLE_MODEL_ENV = "TOOLRAG_EXAMPLE_MODEL"
OPENAI_KEY_ENV = "OPENAI_API_KEY"




@dataclass(frozen=True)
class EnvVar:
    """One environment variable toolrag reads: its name, its default in words, what it does and who reads it
    (``library``: every entry point; ``app``: the playground; ``bench``: the benchmark scripts; ``examples``: the
    agent examples of ``examples/``)."""

    name: str
    default: str
    meaning: str
    used_by: str = "library"


#: Every environment variable read in this repository (outside the tests), in the order docs/configuration.md
#: lists them.
ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar(ONLINE_ENV, "off (on when `SPACE_ID` is set)",
           "`1`: model hubs may be used (Hub model ids instead of packaged weights; CLIP on); `0`: offline, "
           "even on a Space"),
    EnvVar(DATA_DIR_ENV, "`$XDG_CACHE_HOME/toolrag`, else `~/.cache/toolrag`",
           "where built models, the embedded Chroma index, the serving state and the caches live"),
    EnvVar("XDG_CACHE_HOME", "`~/.cache`", f"the parent of the data folder when `{DATA_DIR_ENV}` is unset"),
    EnvVar(TEXT_MODEL_ENV, "`e5`",
           "the multilingual text model: `e5`, `minilm`, a local sentence-transformers folder or (online) a Hub "
           "id; `--text-model` and settings files win"),
    EnvVar(ENGLISH_MODEL_ENV, "`minilm`", "the English text model of the `dense_en` signal; `none` turns it off"),
    EnvVar(TEXT_BACKEND_ENV, "`onnx-int8`",
           "how the text models run: `onnx-int8`, `onnx` (fp32) or `torch` (sentence-transformers)"),
    EnvVar(IMAGE_BACKEND_ENV, "`onnx`", "how the image model runs: `onnx` (ONNX Runtime) or `torch`"),
    EnvVar(CLIP_ENV, "`none` (no CLIP weights ship in a package)",
           "the open_clip model of the `clip` signal, an opt-in: `ARCH:/path/to/weights.pt`, (online) a Hub id such "
           "as `xlm-roberta-base-ViT-B-32:laion5b_s13b_b90k`, or `none`"),
    EnvVar(RERANK_ENV, "`none` (no cross-encoder weights ship in a package)",
           "the cross-encoder that reranks the top candidates, an opt-in: a local folder, (online) a Hub id such as "
           "`BAAI/bge-reranker-v2-m3`, or `none`"),
    EnvVar(CHROMA_URL_ENV, "unset: an embedded index in the data folder",
           "a Chroma server (`http://host:port`) when `--chroma-url` is not given"),
    EnvVar(CHROMA_TIMEOUT_ENV, "`20`",
           "seconds a Chroma server may stay silent during one call before the call fails (a hung server makes a "
           "replica not ready instead of stalling it)"),
    EnvVar(INDEX_ENV, "unset: the catalog's own index",
           "the name of an index published on the Chroma server of `TOOLRAG_CHROMA_URL` (`--index`): served without "
           "catalog files, its new versions followed live; with a catalog the folder is pushed under that name"),
    EnvVar(INDEX_POLL_ENV, "`2`", "seconds between two reads of a published index's manifest: a push is served by "
           "every replica within about this long plus the time to load it"),
    EnvVar(INDEX_LEASE_ENV, "`30`", "seconds a published index's build lease lasts unless renewed (every third of it): "
           "how long a killed build holds back the next process, which then finishes it"),
    EnvVar(AUDIT_LOG_ENV, "unset: no audit log",
           "the JSON Lines file every search and forwarded call is appended to (`--audit-log` wins)"),
    EnvVar(AUDIT_REQUESTS_ENV, "`text`", "`text` keeps each request's text in the audit log, `hash` only its SHA-256"),
    EnvVar(CATALOG_CACHE_ENV, "`on`",
           "`off` reads a large catalog's files at every start instead of its validated copy in the data folder"),
    EnvVar(OTEL_EXPORTER_ENV, "unset: no traces",
           "`otlp` or `console` (comma-separated): `toolrag serve` and the app export OpenTelemetry traces there (the "
           "`observe` extra); `none` turns them off. The SDK reads the other `OTEL_*` variables itself"),
    EnvVar(OTEL_ENDPOINT_ENV, "unset", "an OTLP collector (`http://host:4317`): traces are exported over OTLP even "
           f"without `{OTEL_EXPORTER_ENV}`"),
    EnvVar(OTEL_TRACES_ENDPOINT_ENV, "unset", f"the same, for traces only (wins over `{OTEL_ENDPOINT_ENV}`)"),
    EnvVar(OTEL_DISABLED_ENV, "`false`", "`true`: no traces, whatever the other `OTEL_*` variables say"),
    EnvVar(THREADS_ENV, "the cores, at most 4",
           "intra-op threads of the ONNX Runtime models (text, image, OCR; torch reads it too)"),
    EnvVar(SPACE_ID_ENV, "unset (set by Hugging Face Spaces)",
           "on a Space: online unless `TOOLRAG_ONLINE=0`, and the playground counts as shared"),
    EnvVar(CATALOG_ENV, "`sample_tools` beside `app.py`", "the catalog folder or file the playground opens", "app"),
    EnvVar(LOG_LEVEL_ENV, "`INFO`", "the playground's log level", "app"),
    EnvVar(EDITING_ENV, "on locally, off when shared",
           "`on`: a shared playground may edit (with sign-in); `off`: any playground is read-only", "app"),
    EnvVar(AUTH_ENV, "unset", "`user:password,...`: Gradio's sign-in for the whole playground", "app"),
    EnvVar(EDITORS_ENV, "unset", "`hf_user,...`: on a Space, the Hugging Face users who may edit after signing in",
           "app"),
    EnvVar(PUBLIC_ROLE_ENV, "unset: only the tools that need no permission code",
           "the catalog role whose tools a shared playground shows to every visitor", "app"),
    EnvVar(USER_ROLES_ENV, "unset", "`user:role,...`: the roles each signed-in user of a shared playground holds",
           "app"),
    EnvVar("GRADIO_SERVER_NAME", "`127.0.0.1`", "where the playground listens; another address than loopback "
           "makes it shared (read-only unless editing is on)", "app"),
    EnvVar("GRADIO_SHARE", "off", "`1`/`on`: a share link, which makes the playground shared", "app"),
    EnvVar(BENCHMARKS_ENV, "`shared/benchmarks` beside the repository or a parent folder",
           "where the public benchmark sets are read from (`--benchmarks` wins)", "bench"),
    EnvVar(BENCH_DIR_ENV, "`<temp>/toolrag-bench`",
           "the benchmarks' cache of converted sets and indexes (`--bench-dir` wins)", "bench"),
    EnvVar(BENCH_THREADS_ENV, "`1`", f"the `{THREADS_ENV}` a benchmark script sets unless already set", "bench"),
    EnvVar(BENCH_ENGINE_ENV, "unset: this repository's toolrag",
           "a folder holding another `toolrag` package to measure (its indexes are kept apart)", "bench"),
    EnvVar(TRAINING_ENV, "`shared/training` beside the repository or a parent folder",
           "where the public training sets are read from by `python -m bench.train` (`--training` wins)", "bench"),
    EnvVar(OPENAI_KEY_ENV, "unset: the agent examples run a scripted model, offline",
           "set: the agent examples call a real OpenAI model (`TOOLRAG_EXAMPLE_MODEL`)", "examples"),
    EnvVar(EXAMPLE_MODEL_ENV, "`gpt-4.1-mini`", "the real model the agent examples use when `OPENAI_API_KEY` is set",
           "examples"),
)
_BY_NAME: dict[str, EnvVar] = {var.name: var for var in ENV_VARS}


@dataclass(frozen=True)
class LibraryVar:
    """A variable toolrag sets for a library it imports, only when the user has not set it: its value, when
    (``quiet``: at every entry point, by :func:`quiet_library_defaults`, to exactly ``value``) and why."""

    name: str
    value: str
    why: str
    quiet: bool = False


#: What toolrag writes into the environment, always with :func:`set_default` (the user's value wins).
LIBRARY_ENV: tuple[LibraryVar, ...] = (
    LibraryVar("GRADIO_ANALYTICS_ENABLED", "False", "telemetry off", quiet=True),
    LibraryVar("HF_HUB_DISABLE_TELEMETRY", "1", "telemetry off", quiet=True),
    LibraryVar("ANONYMIZED_TELEMETRY", "False", "telemetry off (chromadb)", quiet=True),
    LibraryVar("HF_HUB_DISABLE_PROGRESS_BARS", "1", "model loading progress bars would garble the CLI's output "
               "and JSON; toolrag reports progress itself", quiet=True),
    LibraryVar("TRANSFORMERS_VERBOSITY", "error", "the same, for transformers' messages", quiet=True),
    LibraryVar("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1", "numba (under UMAP) otherwise wraps and later "
               "restores sys.stdout/sys.stderr from whatever thread compiles: the main thread then writes to a "
               "stale stream", quiet=True),
    LibraryVar("HF_HUB_OFFLINE", "1 when offline", "a Hub id then fails in 0.2 s instead of after about 70 s of "
               "retries"),
    LibraryVar("NUMBA_CACHE_DIR", "`<data folder>/numba` (the map's warm-up)",
               "the map's compiled code is reused by later processes"),
    LibraryVar(THREADS_ENV, f"`${BENCH_THREADS_ENV}`, else 1, in the benchmark scripts",
               "torch's default (one busy-waiting thread per core) made query encoding 7x slower on a shared "
               "2-core machine under load"),
)
_SETTABLE = frozenset(var.name for var in LIBRARY_ENV)


def _known(name: str) -> EnvVar:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"{name} is not in toolrag.config.ENV_VARS; add a row (default, meaning) before "
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
        raise ValueError(f"{name} is not in toolrag.config.LIBRARY_ENV; add a row (value, why) before setting it")
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


def env_table_markdown() -> str:
    """The configuration tables of docs/configuration.md: :data:`ENV_VARS` (read) and :data:`LIBRARY_ENV` (set
    for libraries)."""
    lines = ["| variable | default | meaning | read by |", "|---|---|---|---|"]
    lines += [f"| `{v.name}` | {v.default} | {v.meaning} | {v.used_by} |" for v in ENV_VARS]
    lines += ["", "Set for the libraries toolrag imports, only where you have not set them yourself:", "",
              "| variable | value | why |", "|---|---|---|"]
    lines += [f"| `{v.name}` | {v.value} | {v.why} |" for v in LIBRARY_ENV]
    return "\n".join(lines) + "\n"


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
