"""Opening Chroma: an embedded folder or a server, with errors that say what to fix, and the one wrapper that
turns a failing Chroma call into a :class:`toolrag.errors.StoreError` naming what was attempted."""

from __future__ import annotations

import logging
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from toolrag.config import env, quiet_library_defaults, seconds_setting
from toolrag.env_vars import CHROMA_TIMEOUT_ENV, CHROMA_URL_ENV
from toolrag.errors import SettingsError, StoreError

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["CONNECT_TIMEOUT_S", "StoreConfig", "chroma_call", "chroma_errors", "chroma_url", "chroma_url_parts",
           "error_text", "open_client", "store_timeout"]

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S: Final = 5.0
"""How long :func:`open_client` waits for the server's heartbeat (and every call for a connection)."""
DEFAULT_TIMEOUT_S: Final = 20.0
"""How long a call may wait for the server's answer, unless ``TOOLRAG_CHROMA_TIMEOUT`` says otherwise."""


def store_timeout() -> float:
    """Seconds a Chroma server may stay silent during one call (``TOOLRAG_CHROMA_TIMEOUT``, default 20)."""
    return seconds_setting(CHROMA_TIMEOUT_ENV, DEFAULT_TIMEOUT_S)


_START_HINT: Final = "start one with `chroma run --path DIR --port N`"


def _chromadb() -> Any:
    """Import chromadb with telemetry off (collections never use its embedding functions, so it never needs
    the Hub)."""
    quiet_library_defaults()
    try:
        import chromadb
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StoreError("chromadb is not installed: run `pip install chromadb==1.5.9`") from exc
    return chromadb


def chroma_errors() -> tuple[type[BaseException], ...]:
    """Exceptions a Chroma call raises for bad input or an unreachable server."""
    import httpx  # a dependency of chromadb
    from chromadb.errors import ChromaError

    return (ChromaError, ValueError, TypeError, OSError, httpx.HTTPError)


def chroma_url(explicit: str | None = None) -> str | None:
    """The Chroma server to use: ``explicit`` (``--chroma-url``), else ``$TOOLRAG_CHROMA_URL``, else ``None``
    (an embedded index). The one fallback of the CLI, the MCP server and the app; a value that can never work
    is refused here, at start (:func:`chroma_url_parts`)."""
    url = (explicit or "").strip() or env(CHROMA_URL_ENV) or None
    if url is not None:
        chroma_url_parts(url)
    return url


def chroma_url_parts(url: str) -> tuple[str, int, bool]:
    """(host, port, ssl) of a Chroma server's URL ``http(s)://host[:port]`` (port 8000 / 443 by default): the one
    validator of a Chroma URL (the CLI's, the app's, :class:`StoreConfig`'s); SettingsError naming the value and
    the fix for anything else."""
    parts = urlsplit(url.strip()) if isinstance(url, str) else urlsplit("")
    try:
        port = parts.port
    except ValueError:
        port = -1
    problem = ("must start with http:// or https://" if parts.scheme not in ("http", "https") else
               "has no host name" if not parts.hostname else
               "has an invalid port: use a number 1-65535" if port is not None and not 0 < port < 65536 else
               "must be only scheme, host and port" if parts.path not in ("", "/") or parts.query or parts.fragment
               or parts.username or parts.password else None)
    if problem or not parts.hostname:
        raise SettingsError(f"Chroma URL {url!r} {problem} (e.g. --chroma-url http://127.0.0.1:8000)")
    ssl = parts.scheme == "https"
    return parts.hostname, port or (443 if ssl else 8000), ssl


def error_text(exc: BaseException) -> str:
    """What a failed Chroma call says in a message: a timeout says how long it waited and what sets the wait."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        try:
            waited = float(exc.request.extensions["timeout"]["read"])
        except (RuntimeError, KeyError, TypeError, ValueError):  # an exception without its request
            waited = store_timeout()
        return f"no answer within {waited:g} s (the server is hung or overloaded; {CHROMA_TIMEOUT_ENV} sets the wait)"
    return str(exc)


def chroma_call(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one Chroma call, turning its errors into a :class:`StoreError` that says what was attempted."""
    try:
        return fn(*args, **kwargs)
    except chroma_errors() as exc:
        raise StoreError(f"Chroma failed to {what}: {error_text(exc)}") from exc


# --------------------------------------------------------------------------------------------- clients
@dataclass(frozen=True)
class StoreConfig:
    """Where the vectors live: ``url`` of a Chroma server (wins when both are set) or a local ``path``;
    ``timeout``: seconds a server may stay silent during one call (``None``: ``TOOLRAG_CHROMA_TIMEOUT``, else
    20). A malformed ``url`` is refused here (SettingsError), before anything connects."""

    path: Path | None = None
    url: str | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        if self.url:
            chroma_url_parts(self.url)
        if self.timeout is not None and not 0 < self.timeout < float("inf"):
            raise StoreError(f"Chroma timeout {self.timeout!r}: give a positive number of seconds, e.g. 20")


def _open_http(url: str, timeout: float) -> ClientAPI:
    host, port, ssl = chroma_url_parts(url)
    base = f"{'https' if ssl else 'http'}://{f'[{host}]' if ':' in host else host}:{port}"
    # Probe the heartbeat with a timeout first: a closed or silent port fails in seconds, with the URL.
    try:
        with urllib.request.urlopen(f"{base}/api/v2/heartbeat", timeout=min(CONNECT_TIMEOUT_S, timeout)) as response:
            response.read(1024)
    except urllib.error.HTTPError as exc:
        raise StoreError(
            f"{url} answered HTTP {exc.code} on /api/v2/heartbeat: is it a Chroma (1.x) server? "
            f"Otherwise {_START_HINT}"
        ) from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise StoreError(f"cannot reach a Chroma server at {url} ({reason}); {_START_HINT}") from exc
    chromadb = _chromadb()
    from chromadb.config import Settings

    def connect() -> ClientAPI:
        client: ClientAPI = chromadb.HttpClient(
            host=host, port=port, ssl=ssl, settings=Settings(anonymized_telemetry=False)
        )
        _set_timeout(client, timeout)
        client.heartbeat()
        return client

    try:
        return _bounded(connect, timeout, f"{url} did not answer as a Chroma server within {timeout:g} s")
    except chroma_errors() as exc:
        raise StoreError(f"{url} does not answer as a Chroma server ({error_text(exc)}); {_START_HINT}") from exc


def _set_timeout(client: ClientAPI, timeout: float) -> None:
    """Give the client's HTTP session a timeout: chromadb's ``HttpClient`` waits forever for an answer, so a hung
    server would stall every caller (a replica's follower, a push) without a word."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout))
    else:  # pragma: no cover - another chromadb than requirements.txt pins
        logger.warning("this chromadb's HTTP client has no session toolrag can give a timeout: a hung Chroma "
                       "server is not noticed (install chromadb==1.5.9)")


def _bounded(fn: Callable[[], ClientAPI], timeout: float, message: str) -> ClientAPI:
    """``fn()`` in a helper thread, given ``timeout`` seconds (chromadb's client makes calls while it is built,
    before its session can be given a timeout); StoreError ``message`` when it takes longer."""
    done: list[ClientAPI] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(fn())
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=run, name="toolrag-chroma-connect", daemon=True)
    worker.start()
    worker.join(timeout + CONNECT_TIMEOUT_S)
    if failed:
        raise failed[0]
    if not done:
        raise StoreError(f"{message} (the server is hung or overloaded; {CHROMA_TIMEOUT_ENV} sets the wait)")
    return done[0]


def _open_persistent(path: Path) -> ClientAPI:
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise StoreError(f"Chroma path {path} is a file: give a folder (it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the Chroma folder {path} ({exc}): choose a writable folder") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StoreError(f"Chroma folder {path} is not writable: choose another folder or fix permissions")
    chromadb = _chromadb()
    from chromadb.config import Settings

    try:
        client: ClientAPI = chromadb.PersistentClient(
            path=str(path), settings=Settings(anonymized_telemetry=False)
        )
    except chroma_errors() as exc:
        raise StoreError(f"cannot open the Chroma folder {path} ({exc}); delete it to rebuild") from exc
    return client


def open_client(config: StoreConfig) -> ClientAPI:
    """Open a Chroma client: ``HttpClient`` for ``config.url``, else ``PersistentClient`` at ``config.path``.

    Raises :class:`StoreError` for a server that does not answer within :data:`CONNECT_TIMEOUT_S`, a path that
    cannot be written, or a config with neither set. Every call of a server's client has a timeout
    (``config.timeout``): a hung server makes it raise instead of waiting forever.
    """
    if config.url:
        if config.path is not None:
            logger.info("Chroma URL %s given: ignoring path %s", config.url, config.path)
        return _open_http(config.url, config.timeout if config.timeout is not None else store_timeout())
    if config.path is not None:
        return _open_persistent(config.path)
    raise StoreError(
        "no Chroma store configured: give a folder (path) or a server URL like http://127.0.0.1:8000"
    )
