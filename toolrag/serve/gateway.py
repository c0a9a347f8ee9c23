"""The gateway's upstream servers: one session per server, their tools as one catalog, calls forwarded.

Each upstream lives in its own task, so a server that fails to start, times out or dies mid-session is
recorded (``Upstream.error``) and reported, never fatal to the gateway or to the other servers. A call to a
server whose session died reconnects once (the server is launched again) before giving up. Tool ids are
``<server>/<original name>``, so two servers may publish the same tool name and both stay addressable; the
original name is what the upstream server is called with.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolrag.catalog.loader import load_records
from toolrag.catalog.profile import Catalog
from toolrag.catalog.readers import from_foreign
from toolrag.catalog.report import LoadMode
from toolrag.errors import CatalogError
from toolrag.observe import metrics, tracing
from toolrag.serve.config import GatewayConfig
from toolrag.serve.upstream import (
    ServerSpec,
    UpstreamError,
    connect,
    describe_error,
    list_all_tools,
    upstream_errors,
)

__all__ = ["Gateway", "Route", "Upstream", "public_reason"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Route:
    """Where a gateway tool lives: its upstream server and the name that server knows it by."""

    server: str
    name: str


class Upstream:
    """One upstream MCP server: its session (held open by a task of the gateway's task group), its tools,
    and the last error. Methods run on the gateway's event loop."""

    def __init__(self, spec: ServerSpec, task_group: Any) -> None:
        import anyio

        self.spec = spec
        self.session: Any = None
        self.version = ""
        self.tools: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.error: str | None = None
        self._tg = task_group
        self._stop: Any = None
        self._reconnect = anyio.Lock()
        #: Called (async, no argument) when this server's tools changed: a ``notifications/tools/list_changed``, or
        #: another list after a reconnect.
        self.on_change: Callable[[], Awaitable[None]] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    async def open(self) -> bool:
        """Connect (launching a stdio server) and list its tools; True when the session is up."""
        import anyio

        ready, stop = anyio.Event(), anyio.Event()
        self._stop = stop
        self._tg.start_soon(self._hold, ready, stop)
        await ready.wait()
        return self.session is not None

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def _hold(self, ready: Any, stop: Any) -> None:
        try:
            async with connect(self.spec, on_message=self._on_message) as (session, info):  # with its timeout
                try:
                    tools, _, warnings = await list_all_tools(session, where=f"MCP server {self.name!r}",
                                                              timeout=self.spec.timeout)
                    changed = self.version != "" and tools != self.tools  # a reconnect found another list
                    self.session, self.version, self.tools, self.warnings, self.error = (
                        session, info.version, tools, warnings, None)
                    ready.set()
                    if changed and self.on_change is not None:
                        self._tg.start_soon(self.on_change)
                    await stop.wait()
                finally:
                    if self._stop is stop:
                        self.session = None
        except Exception as exc:  # mapped by upstream_errors: the gateway reports it and goes on
            self.error = str(exc) if isinstance(exc, UpstreamError) else describe_error(exc)
            log.warning("upstream MCP server %r unavailable: %s", self.name, self.error)
        finally:
            ready.set()

    async def _on_message(self, message: Any) -> None:
        """A notification of the server: a changed tool list is read again and the gateway told."""
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._tg.start_soon(self._relist)

    async def _relist(self) -> None:
        session = self.session
        if session is None:
            return
        try:
            tools, _, warnings = await list_all_tools(session, where=f"MCP server {self.name!r}",
                                                      timeout=self.spec.timeout)
        except Exception as exc:  # the server went away meanwhile: the reconnect lists its tools again
            log.warning("upstream MCP server %r: reading its changed tools failed: %s", self.name, describe_error(exc))
            return
        self.tools, self.warnings = tools, warnings
        log.info("upstream MCP server %r changed its tools: %d tools", self.name, len(tools))
        if self.on_change is not None:
            await self.on_change()

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Forward ``tools/call`` (in a span whose W3C context the SDK passes on in ``_meta``); :class:`UpstreamError`
        when the server is down (after one reconnect) or does not answer in time. A tool's own error comes back as
        the server's ``is_error`` result."""
        with tracing.span("toolrag.upstream_call", {"toolrag.server": self.name, "gen_ai.tool.name": name}):
            start = time.perf_counter()
            try:
                result = await self._forward(name, arguments)
            except UpstreamError as exc:
                metrics.record_upstream(self.name, error=exc.kind)
                raise
            metrics.record_upstream(self.name, seconds=time.perf_counter() - start)
            return result

    async def _forward(self, name: str, arguments: Mapping[str, Any]) -> Any:
        import anyio

        session = await self._session()
        try:
            with upstream_errors(f"upstream server {self.name!r}", repr(name), timeout=self.spec.timeout), \
                    anyio.fail_after(self.spec.timeout):
                return await session.call_tool(name, dict(arguments))
        except UpstreamError as exc:
            if not exc.lost:  # a timeout, or an error the server answered
                raise
            self._lost(exc.cause)  # the transport broke (the process died, the connection dropped)
        raise UpstreamError(f"upstream server {self.name!r} is unavailable: {self.error}")

    async def _session(self) -> Any:
        if self.session is not None:
            return self.session
        async with self._reconnect:
            if self.session is None:
                log.info("reconnecting to upstream MCP server %r", self.name)
                await self.open()
        if self.session is None:
            raise UpstreamError(f"upstream server {self.name!r} is unavailable: {self.error}")
        return self.session

    def _lost(self, why: str) -> None:
        self.error = why
        self.session = None
        log.warning("upstream MCP server %r lost: %s", self.name, why)
        self.close()


class Gateway:
    """The upstream servers of a :class:`GatewayConfig`, their tools as one catalog, and the routes back."""

    def __init__(self, config: GatewayConfig, task_group: Any) -> None:
        self.config = config
        self.upstreams = {spec.name: Upstream(spec, task_group) for spec in config.servers}
        self.routes: dict[str, Route] = {}
        #: Called (async) when an upstream's tools changed, to index the catalog again (set by the server).
        self.on_change: Callable[[], Awaitable[None]] | None = None
        for upstream in self.upstreams.values():
            upstream.on_change = self._changed

    async def _changed(self) -> None:
        if self.on_change is not None:
            await self.on_change()

    async def start(self) -> None:
        """Connect to every upstream at once; each that fails is recorded, not raised."""
        import anyio

        async with anyio.create_task_group() as tg:
            for upstream in self.upstreams.values():
                tg.start_soon(upstream.open)

    def close(self) -> None:
        for upstream in self.upstreams.values():
            upstream.close()

    def unavailable(self) -> dict[str, str]:
        """Upstream servers that are down now, with the reason (for the operator: it may name the command)."""
        return {name: u.error or "not connected" for name, u in self.upstreams.items() if u.session is None}

    def unavailable_to_callers(self) -> dict[str, str]:
        """:meth:`unavailable` as a caller may read it: the server's name and what went wrong, never where the
        server runs (its command, arguments, folder, URL or the values of its environment and headers)."""
        return {name: public_reason(self.upstreams[name].spec, why) for name, why in self.unavailable().items()}

    def check_rules(self) -> None:
        """Refuse to serve when a ``tool_permissions`` rule names a tool its server does not list (the tool it
        meant would be open to every caller); ``SettingsError`` naming the config line and the closest names.
        A server that is down now is not checked: none of its tools is served either."""
        listed = {name: {str(t.get("name")) for t in u.tools} for name, u in self.upstreams.items()
                  if u.session is not None}
        self.config.check_rules(listed)
        for name in sorted({server for server, _ in self.config.rules} - set(listed)):
            log.warning("tool_permissions of upstream MCP server %r not checked: it is unavailable, and none of its "
                        "tools is served", name)

    def catalog(self) -> Catalog:
        """Every upstream's tools as one catalog (read leniently, like any import); the config's roles and
        each server's permissions apply. Raises ``CatalogError`` when no upstream has any tool."""
        records: list[dict[str, Any]] = []
        for upstream in self.upstreams.values():
            for tool in upstream.tools:
                record = from_foreign(tool, mcp=True)
                name = record.get("name")
                if not isinstance(name, str):
                    records.append(record)  # the loader skips it with a warning naming the server
                    continue
                spec = upstream.spec
                record = {**record, "id": f"{spec.name}/{name}", "category": spec.name,
                          "permissions": sorted({*spec.permissions, *spec.tool_permissions.get(name, ())})}
                records.append(record)
                self.routes[record["id"]] = Route(spec.name, name)
        if not any(u.tools for u in self.upstreams.values()):
            down = "; ".join(f"{n}: {why}" for n, why in self.unavailable().items()) or "no server listed a tool"
            raise CatalogError(f"no upstream MCP server has tools to serve ({down})")
        return load_records(records, name=self.config.name, where="gateway", mode=LoadMode.LENIENT,
                            roles=self.config.roles)

    async def call(self, tool_id: str, arguments: Mapping[str, Any]) -> Any:
        route = self.routes[tool_id]
        return await self.upstreams[route.server].call(route.name, arguments)


#: An absolute path inside a message (a command, a script, a folder): replaced before a caller reads it.
_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?[\\/][^\s'\"]+")


def public_reason(spec: ServerSpec, reason: str) -> str:
    """``reason`` with what says where ``spec`` runs taken out: its command and arguments, working folder, URL,
    header and environment values, and any other absolute path."""
    secret = [spec.command, *spec.args, spec.cwd, spec.url, *spec.headers.values(), *spec.env.values()]
    for value in sorted({v for v in secret if v and len(v) > 2}, key=len, reverse=True):
        reason = reason.replace(value, "…")
    return _PATH.sub("…", reason)
