"""Opening Chroma: an embedded folder or a server, with errors that say what to fix, and the one wrapper that
turns a failing Chroma call into a :class:`toolrag.errors.StoreError` naming what was attempted."""

from __future__ import annotations

import logging
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from toolrag.config import quiet_library_defaults
from toolrag.errors import StoreError

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["CONNECT_TIMEOUT_S", "StoreConfig", "chroma_call", "chroma_errors", "open_client"]

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S: Final = 5.0
"""How long :func:`open_client` waits for the server's heartbeat before giving up."""


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


def chroma_call(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one Chroma call, turning its errors into a :class:`StoreError` that says what was attempted."""
    try:
        return fn(*args, **kwargs)
    except chroma_errors() as exc:
        raise StoreError(f"Chroma failed to {what}: {exc}") from exc


# --------------------------------------------------------------------------------------------- clients
@dataclass(frozen=True)
class StoreConfig:
    """Where the vectors live: ``url`` of a Chroma server (wins when both are set) or a local ``path``."""

    path: Path | None = None
    url: str | None = None


def _parse_url(url: str) -> tuple[str, int, bool]:
    """Validate ``http(s)://host[:port]`` and return (host, port, ssl); port defaults to 8000 / 443."""
    example = "e.g. http://127.0.0.1:8000"
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        raise StoreError(f"Chroma URL {url!r} must start with http:// or https:// ({example})")
    if not parts.hostname:
        raise StoreError(f"Chroma URL {url!r} has no host name ({example})")
    try:
        port = parts.port
    except ValueError as exc:
        raise StoreError(f"Chroma URL {url!r} has an invalid port: use a number 1-65535 ({example})") from exc
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise StoreError(f"Chroma URL {url!r} must be only scheme, host and port ({example})")
    ssl = parts.scheme == "https"
    if port is None:
        port = 443 if ssl else 8000
    if port == 0:
        raise StoreError(f"Chroma URL {url!r} has port 0: use the port the server listens on ({example})")
    return parts.hostname, port, ssl


def _open_http(url: str) -> ClientAPI:
    host, port, ssl = _parse_url(url)
    base = f"{'https' if ssl else 'http'}://{f'[{host}]' if ':' in host else host}:{port}"
    # Probe the heartbeat with a timeout first: Chroma's own HTTP client waits forever on a silent port.
    try:
        with urllib.request.urlopen(f"{base}/api/v2/heartbeat", timeout=CONNECT_TIMEOUT_S) as response:
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

    try:
        client: ClientAPI = chromadb.HttpClient(
            host=host, port=port, ssl=ssl, settings=Settings(anonymized_telemetry=False)
        )
        client.heartbeat()
    except chroma_errors() as exc:
        raise StoreError(f"{url} does not answer as a Chroma server ({exc}); {_START_HINT}") from exc
    return client


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

    Raises :class:`StoreError` for a malformed URL, a server that does not answer within
    :data:`CONNECT_TIMEOUT_S`, a path that cannot be written, or a config with neither set.
    """
    if config.url:
        if config.path is not None:
            logger.info("Chroma URL %s given: ignoring path %s", config.url, config.path)
        return _open_http(config.url)
    if config.path is not None:
        return _open_persistent(config.path)
    raise StoreError(
        "no Chroma store configured: give a folder (path) or a server URL like http://127.0.0.1:8000"
    )
