"""Talking to MCP servers as a client (the official ``mcp`` SDK): connect over stdio or streamable HTTP, page
through ``tools/list`` tolerating what real servers send, call a tool.

Used by ``toolrag import mcp`` (read a server's tools once) and by the gateway (keep a session per upstream
server and forward calls). Every wait has a timeout; a server that fails, hangs or sends malformed pages is
reported with its name, never a crash of the caller. What the SDK and its transports raise is turned into an
:class:`UpstreamError` in one place, :func:`upstream_errors` (in the manner of httpx's ``map_exceptions``),
wrapped around every exchange with a server: connecting, listing, calling.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import shlex
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from toolrag.errors import UpstreamError

__all__ = ["Listing", "ServerSpec", "UpstreamError", "connect", "describe_error", "list_all_tools", "require_mcp",
           "upstream_errors"]

#: Pages of ``tools/list`` read at most (a server whose cursors never end is cut off there, with a warning).
MAX_PAGES = 1000
DEFAULT_TIMEOUT = 30.0


#: The JSON-RPC code the MCP SDK gives a request whose connection closed (``mcp_types.jsonrpc.CONNECTION_CLOSED``).
CONNECTION_CLOSED = -32000


@contextlib.contextmanager
def upstream_errors(who: str, doing: str | Callable[[], str], *, timeout: float | None = None,
                    detail: Callable[[], str] = lambda: "", own: Sequence[BaseException] = ()) -> Iterator[None]:
    """Run an exchange with an MCP server, turning whatever the SDK or its transport raises into one
    :class:`UpstreamError` that names the server (``who``, e.g. ``MCP server 'files'``) and what it was doing
    (``doing``, or a function saying it at the time of the error): a timeout says how long it waited, an error
    the server answered says its message, anything else is a lost connection (``lost``). Exception groups are
    read by their first cause; an :class:`UpstreamError` passes as it is, and so does an exception of ``own``
    (what the caller's own code raised inside, found in a group too). ``detail()`` is added to the message (what
    a stdio server wrote that is not JSON-RPC)."""
    try:
        yield
    except UpstreamError:
        raise
    except Exception as exc:  # every error of the SDK and its transports: mapped here, and only here
        leaf = _first_cause(exc)
        if isinstance(leaf, UpstreamError) or any(leaf is mine for mine in own):
            raise leaf from None
        what = doing() if callable(doing) else doing
        if isinstance(leaf, TimeoutError):
            within = f" within {timeout:g} s" if timeout is not None else ""
            raise UpstreamError(f"{who} did not answer {what}{within}{detail()}", kind="timeout") from None
        answered = _answered(leaf)
        if answered is not None and answered[0] != CONNECTION_CLOSED:
            raise UpstreamError(f"{who} answered {what} with an error: {answered[1]}", kind="error") from None
        cause = f"connection closed ({answered[1]})" if answered is not None else describe_error(leaf)
        raise UpstreamError(f"{who} failed during {what}: {cause}{detail()}", lost=True, cause=cause) from None


def _first_cause(exc: BaseException) -> BaseException:
    while getattr(exc, "exceptions", None):  # an exception group: its first cause says what happened
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _answered(exc: BaseException) -> tuple[int, str] | None:
    """The JSON-RPC error code and message of an error the server answered (the SDK's ``MCPError``)."""
    try:
        from mcp import MCPError
    except ImportError:  # pragma: no cover - mcp is a declared dependency of every caller here
        return None
    if not isinstance(exc, MCPError):
        return None
    return int(exc.error.code), str(exc.error.message)


def require_mcp() -> Any:
    """The ``mcp`` package, or an error that says how to install it."""
    try:
        import mcp
    except ImportError as exc:  # pragma: no cover - mcp is a declared dependency
        raise UpstreamError(f"the MCP SDK is not installed ({exc}); pip install 'mcp==2.3.0' (or toolrag[mcp])"
                            ) from exc
    return mcp


@dataclass(frozen=True)
class ServerSpec:
    """Where an MCP server is: a ``command`` (with ``args``) launched over stdio, or a streamable HTTP ``url``.

    ``permissions``: codes a caller needs for every tool of this server (gateway); ``tool_permissions``: extra
    codes for single tools, by original name; ``timeout``: seconds for connecting, each page and each call."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    permissions: tuple[str, ...] = ()
    tool_permissions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise UpstreamError(f"MCP server {self.name!r}: give either a command (stdio) or a url (streamable "
                                "HTTP), not both or neither")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise UpstreamError(f"MCP server {self.name!r}: url {self.url!r} must start with http:// or https://")
        if not self.timeout > 0:
            raise UpstreamError(f"MCP server {self.name!r}: timeout {self.timeout!r} must be a positive number")

    @classmethod
    def from_target(cls, target: Sequence[str], *, name: str | None = None,
                    timeout: float = DEFAULT_TIMEOUT) -> ServerSpec:
        """A spec from the command line: one ``http(s)://`` URL, or a command and its arguments (one quoted
        string is split like a shell would)."""
        parts = list(target)
        if len(parts) == 1 and parts[0].startswith(("http://", "https://")):
            return cls(name or parts[0], url=parts[0], timeout=timeout)
        if len(parts) == 1:
            parts = shlex.split(parts[0])
        if not parts:
            raise UpstreamError("which MCP server? give its URL (http://host:port/mcp) or the command that starts "
                                "it (e.g. python server.py)")
        return cls(name or " ".join(parts), command=parts[0], args=tuple(parts[1:]), timeout=timeout)

    def describe(self) -> dict[str, Any]:
        """Where the server is, for provenance files and reports (environment values are never written)."""
        if self.url is not None:
            return {"transport": "streamable-http", "url": self.url}
        return {"transport": "stdio", "command": [self.command, *self.args]}


@dataclass
class Listing:
    """A server's ``tools/list``: the tools as MCP dicts (``name``, ``description``, ``inputSchema`` ...), the
    server's name and version, pages read, and warnings about what could not be read."""

    server_name: str
    server_version: str
    tools: list[dict[str, Any]]
    pages: int
    warnings: list[str]


#: Lines a stdio server wrote on its standard output that are not JSON-RPC, for the connection in this context.
_NOT_JSON_RPC: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("toolrag_not_json_rpc",
                                                                                  default=None)


class _QuietParseErrors(logging.Filter):
    """The SDK logs each line of a stdio server's output that is not JSON-RPC with a 12-line traceback. The
    line is kept for the one-line :class:`UpstreamError` of its connection instead (or, outside one, logged in
    one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("Failed to parse JSONRPC message"):
            return True
        line = _bad_input(record.exc_info[1] if record.exc_info else None)
        seen = _NOT_JSON_RPC.get()
        if seen is not None:
            seen.append(line)
            return False
        record.msg, record.args, record.exc_info, record.exc_text = (
            f"an MCP server wrote a line that is not JSON-RPC: {line}", None, None, None)
        return True


def _bad_input(exc: BaseException | None) -> str:
    errors = getattr(exc, "errors", None)
    try:
        value = errors()[0].get("input") if callable(errors) else None
    except Exception:  # only a nicer message is at stake
        value = None
    text = repr(value) if value is not None else "(unreadable)"
    return text if len(text) <= 80 else text[:77] + "..."


_QUIET = _QuietParseErrors()


@asynccontextmanager
async def connect(spec: ServerSpec, *, on_message: Any = None) -> AsyncIterator[tuple[Any, Any]]:
    """``(session, server_info)``: an initialised ``mcp.ClientSession`` with the server (launched over stdio,
    or over streamable HTTP) and the ``Implementation`` it announced. Raises :class:`UpstreamError` on
    timeout, and when a stdio server's output is not JSON-RPC (in one line, naming what it wrote).
    ``on_message``: an async function given each notification the server sends. What the caller's own code
    raises inside the session comes out as it is (a bug there is not a lost connection)."""
    require_mcp()
    import anyio
    from mcp import ClientSession

    logger = logging.getLogger("mcp.client.stdio")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)
    garbage: list[str] = []
    own: list[BaseException] = []  # what the caller's code raised inside the session: passed on as it is
    token = _NOT_JSON_RPC.set(garbage)
    phase = "initialize"
    try:
        with upstream_errors(f"MCP server {spec.name!r}", lambda: phase, timeout=spec.timeout,
                             detail=lambda: _wrote(garbage), own=own):
            async with _transport(spec) as (read, write), ClientSession(read, write, read_timeout_seconds=spec.timeout,
                                                                         message_handler=on_message) as session:
                with anyio.fail_after(spec.timeout):
                    init = await session.initialize()
                phase = "the session"
                try:
                    yield session, init.server_info
                except Exception as exc:
                    own.append(exc)
                    raise
    finally:
        with contextlib.suppress(ValueError):  # ValueError: closed from another context (a cancelled task)
            _NOT_JSON_RPC.reset(token)


def _wrote(garbage: list[str]) -> str:
    if not garbage:
        return ""
    more = f" and {len(garbage) - 1} more such line(s)" if len(garbage) > 1 else ""
    return (f"; it wrote {garbage[0]}{more} on its standard output, which is not JSON-RPC: a stdio MCP server "
            "must write only JSON-RPC messages there (its logs go to stderr)")


@asynccontextmanager
async def _transport(spec: ServerSpec) -> AsyncIterator[tuple[Any, Any]]:
    if spec.url is not None:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(headers=dict(spec.headers), timeout=httpx2.Timeout(spec.timeout, read=300.0))
        async with client, streamable_http_client(spec.url, http_client=client) as streams:
            yield streams[0], streams[1]
    else:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=spec.command or "", args=list(spec.args), env=dict(spec.env) or None,
                                       cwd=spec.cwd)
        async with stdio_client(params) as streams:
            yield streams[0], streams[1]


async def list_all_tools(session: Any, *, where: str, timeout: float = DEFAULT_TIMEOUT,
                         max_pages: int = MAX_PAGES) -> tuple[list[dict[str, Any]], int, list[str]]:
    """Every tool of every ``tools/list`` page as an MCP dict, the number of pages, and warnings.

    A page the SDK refuses (a tool whose ``inputSchema`` is not an object, ``tools`` that is not a list) is
    re-read as raw JSON and its usable tools kept; an item that is not a tool, a repeated cursor and more than
    ``max_pages`` pages are warnings. The loader then validates each tool (leniently)."""
    import anyio
    from pydantic import ValidationError

    tools: list[dict[str, Any]] = []
    warnings: list[str] = []
    cursor: str | None = None
    seen: set[str] = set()
    pages = 0
    while True:
        pages += 1
        label = f"{where}: tools/list page {pages}" + (f" (cursor {cursor!r})" if cursor else "")
        with upstream_errors(where, f"tools/list page {pages}" + (f" (cursor {cursor!r})" if cursor else ""),
                             timeout=timeout), anyio.fail_after(timeout):
            try:
                page = await _page(session, cursor)
            except ValidationError as exc:
                first = exc.errors()[0]
                where_bad = ".".join(str(p) for p in first.get("loc", ()))
                warnings.append(f"{label} is malformed ({where_bad}: {first.get('msg')}); read it as raw JSON")
                page = await _raw_page(session, cursor)
        items = page.get("tools")
        if not isinstance(items, list):
            warnings.append(f"{label}: 'tools' is {type(items).__name__}, not a list; page skipped")
            items = []
        for number, item in enumerate(items, start=1):
            if isinstance(item, dict):
                tools.append(item)
            else:
                warnings.append(f"{label}: item {number} is {type(item).__name__}, not a tool; skipped")
        cursor = page.get("nextCursor")
        if cursor is None or cursor == "":
            return tools, pages, warnings
        if not isinstance(cursor, str):
            warnings.append(f"{label}: nextCursor {cursor!r} is not a string; stopped paging")
            return tools, pages, warnings
        if cursor in seen:
            warnings.append(f"{label}: the server sent cursor {cursor!r} again; stopped paging")
            return tools, pages, warnings
        if pages >= max_pages:
            warnings.append(f"{label}: more than {max_pages} pages; stopped paging")
            return tools, pages, warnings
        seen.add(cursor)


async def _page(session: Any, cursor: str | None) -> dict[str, Any]:
    import mcp_types

    params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
    result = await session.list_tools(params=params)
    page: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return page


async def _raw_page(session: Any, cursor: str | None) -> dict[str, Any]:
    """The page as the server sent it, past the SDK's validation (its JSON-RPC dispatcher, an internal of
    mcp 2.x: a malformed page must not cost the well-formed tools on it)."""
    dispatcher = getattr(session, "_dispatcher", None)
    if dispatcher is None or not hasattr(dispatcher, "send_raw_request"):
        raise UpstreamError("this mcp version cannot read a malformed tools/list page raw; pin mcp==2.3.0")
    raw = await dispatcher.send_raw_request("tools/list", {"cursor": cursor} if cursor else None, {})
    return raw if isinstance(raw, dict) else {}


def describe_error(exc: BaseException) -> str:
    """One line for an exception from a transport (exception groups unwrapped to their first cause)."""
    exc = _first_cause(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
