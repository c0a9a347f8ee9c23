"""The table of every environment variable toolrag reads (:data:`ENV_VARS`: name, default, meaning, who reads it)
and of every variable it sets for the libraries it imports (:data:`LIBRARY_ENV`), with the configuration page
rendered from them (:func:`env_table_markdown`, docs/configuration.md).

Data only: nothing here reads or writes the environment. :mod:`toolrag.config` is the one reader
(``config.env``, which refuses a name without a row here) and the one writer (``config.set_default``).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    "MAP_WARMUP_ENV",
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
    "WARMUP_ENV",
    "EnvVar",
    "LibraryVar",
    "env_table_markdown",
]

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
MAP_WARMUP_ENV = "TOOLRAG_MAP_WARMUP"
WARMUP_ENV = "TOOLRAG_WARMUP"
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
    EnvVar(WARMUP_ENV, "`on`", "`off`: the playground and `toolrag serve` do not run their models once in the "
           "background when their index opens (2-3 s of CPU, OCR and the image model loaded into memory); the first "
           "request then loads what it needs"),
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
    EnvVar(MAP_WARMUP_ENV, "`on`", "`off`: the playground does not compile UMAP and project the catalog at start "
           "(20-40 s of CPU in the background; the first map then waits for it)", "app"),
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
    EnvVar("GRADIO_TEMP_DIR", "the system's temporary folder", "where the playground keeps uploads (Gradio's own "
           "setting); no message the playground shows names a path under it", "app"),
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


@dataclass(frozen=True)
class LibraryVar:
    """A variable toolrag sets for a library it imports, only when the user has not set it: its value, when
    (``quiet``: at every entry point, by :func:`toolrag.config.quiet_library_defaults`, to exactly ``value``)
    and why."""

    name: str
    value: str
    why: str
    quiet: bool = False


#: What toolrag writes into the environment, always with :func:`toolrag.config.set_default` (the user's value wins).
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


def env_table_markdown() -> str:
    """The configuration tables of docs/configuration.md: :data:`ENV_VARS` (read) and :data:`LIBRARY_ENV` (set
    for libraries)."""
    lines = ["| variable | default | meaning | read by |", "|---|---|---|---|"]
    lines += [f"| `{v.name}` | {v.default} | {v.meaning} | {v.used_by} |" for v in ENV_VARS]
    lines += ["", "Set for the libraries toolrag imports, only where you have not set them yourself:", "",
              "| variable | value | why |", "|---|---|---|"]
    lines += [f"| `{v.name}` | {v.value} | {v.why} |" for v in LIBRARY_ENV]
    return "\n".join(lines) + "\n"

