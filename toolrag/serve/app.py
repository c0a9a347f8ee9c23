"""The MCP server of ``toolrag serve``, built with the official SDK (``mcp.server.mcpserver.MCPServer``).

Two tools, the way hosted "tool search" tools work: ``search_tools`` (a request, an optional image, how many
tools) answers with the decision and the few tools that fit, schemas included, so a client with hundreds of
tools loads them on demand; in gateway mode ``call_tool`` forwards a call to the upstream server that owns the
tool. Over streamable HTTP the caller's role can come from its bearer token (see
:class:`toolrag.serve.service.ToolService`).

This module imports the SDK at the top: it is imported only when serving. Its tool functions are thin; the
logic is in :mod:`toolrag.serve.service`.
"""

import dataclasses
import functools
import logging
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult
from pydantic import WithJsonSchema

from toolrag.catalog.profile import Catalog
from toolrag.errors import QueryError, ToolragError
from toolrag.search.retriever import ToolRetriever
from toolrag.serve.config import GatewayConfig
from toolrag.serve.gateway import Gateway
from toolrag.serve.service import ToolService
from toolrag.version import __version__

__all__ = ["build_app", "run_gateway", "serve"]

log = logging.getLogger(__name__)

SEARCH_DESCRIPTION = (
    "Find the tools that fit a request among all the tools available (hundreds may be). Give the user's "
    "request in their words (any language) and optionally an image as base64. Returns a decision (EXECUTE: "
    "call the best tool; CLARIFY: ask the user the clarification question first; NO_TOOL: answer without a "
    "tool), its reason and the selected tools with their names and input schemas."
)
CALL_DESCRIPTION = (
    "Call a tool found with search_tools: tool = its id (or its name when unique), arguments = an object "
    "matching its input_schema. The call is forwarded to the server that owns the tool."
)


#: Each argument's JSON Schema as clients see it. The functions take ``Any``, so a wrong type is not refused by
#: the SDK's validation (a 4-line text with a URL) but by :class:`ToolService`, in one line naming the argument
#: and the type it expects.
_QUERY = Annotated[Any, WithJsonSchema({"type": "string", "description": "the user's request, in their words (may "
                                                                         "be left out when an image is sent)"})]
_IMAGE = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}],
                                        "description": "an image as base64 or a data:image/...;base64, URL"})]
_K = Annotated[Any, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 50,
                                    "description": "how many tools to return"})]
_TOOL = Annotated[Any, WithJsonSchema({"type": "string", "description": "a tool's id from search_tools"})]
_ARGUMENTS = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "object"}, {"type": "null"}],
                                            "description": "the tool's arguments, matching its input_schema"})]


def build_app(service: ToolService, *, name: str) -> MCPServer:
    """An MCP server exposing ``search_tools`` (and ``call_tool`` when ``service`` has a gateway)."""

    def role(ctx: Context, kind: str, tool: Any = None) -> str | None:
        try:
            return service.role_for(ctx.headers)
        except ToolragError as exc:
            service.refused(kind, str(exc), tool=tool)  # a refused caller is audited like any other
            raise ToolError(str(exc)) from None

    async def search_tools(ctx: Context, query: _QUERY = None, image: _IMAGE = None, k: _K = 5) -> dict[str, Any]:
        caller = role(ctx, "search")
        try:
            if query is None and image is None:
                raise QueryError("query is missing; give the user's request as a string (or an image)")
            answer: dict[str, Any] = await anyio.to_thread.run_sync(
                functools.partial(service.search, "" if query is None else query, image=image, k=k, role=caller))
        except ToolragError as exc:
            raise ToolError(str(exc)) from None
        return answer

    async def call_tool(ctx: Context, tool: _TOOL = None, arguments: _ARGUMENTS = None) -> CallToolResult:
        caller = role(ctx, "call", tool)
        try:
            if tool is None:
                raise QueryError("tool is missing; give a tool's id from search_tools as a string")
            result: CallToolResult = await service.call(tool, arguments, role=caller)
        except ToolragError as exc:
            raise ToolError(str(exc)) from None
        return result

    tools = [_tool(search_tools, "search_tools", SEARCH_DESCRIPTION, required=[])]
    if service.gateway is not None:
        tools.append(_tool(call_tool, "call_tool", CALL_DESCRIPTION, required=["tool"]))
    app = MCPServer(name, version=__version__, instructions="Call search_tools first; it returns the tools to use.",
                    tools=tools)
    app.middleware.insert(0, _trace_header)  # before the SDK's span, so that span continues the caller's trace
    _health_routes(app, service)
    return app


async def _trace_header(ctx: Any, call_next: Any) -> Any:
    """A W3C ``traceparent`` (and ``tracestate``) HTTP header continued like the one MCP carries in ``_meta``
    (which wins when both are sent): the SDK's server span, and so toolrag's spans, join the caller's trace."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    meta = dict(ctx.meta or {})
    if headers is not None and "traceparent" not in meta and headers.get("traceparent"):
        meta.update({k: headers[k] for k in ("traceparent", "tracestate") if headers.get(k)})
        ctx = dataclasses.replace(ctx, meta=meta)
    return await call_next(ctx)


def _health_routes(app: MCPServer, service: ToolService) -> None:
    """``/healthz`` (the process answers), ``/readyz`` (200 with the index version once it is loaded and its store
    answers, else 503 with the reason) and ``/metrics`` (Prometheus text) on the HTTP transport."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

    from toolrag.observe import metrics

    @app.custom_route("/healthz", methods=["GET"], include_in_schema=False)
    async def healthz(request: Request) -> Response:
        return JSONResponse({"alive": True})

    @app.custom_route("/readyz", methods=["GET"], include_in_schema=False)
    async def readyz(request: Request) -> Response:
        health = service.health()
        return JSONResponse(health, status_code=200 if health["ready"] else 503)

    @app.custom_route("/metrics", methods=["GET"], include_in_schema=False)
    async def prometheus(request: Request) -> Response:
        body, content_type = metrics.render(service.health())
        return Response(body, media_type=content_type)


def _tool(fn: Any, name: str, description: str, *, required: list[str]) -> Tool:
    """A tool of ``fn`` whose schema lists ``required`` (the function takes them as optional, so a missing one is
    refused in one line by the function rather than by the SDK's validation)."""
    tool = Tool.from_function(fn, name=name, description=description)
    if required:
        tool.parameters["required"] = required
    else:
        tool.parameters.pop("required", None)
    for schema in tool.parameters["properties"].values():  # a null default of a typed argument contradicts its type
        if schema.get("default", 0) is None and "anyOf" not in schema:
            del schema["default"]
    return tool


async def _reindex(gateway: Gateway, retriever: ToolRetriever, lock: anyio.Lock) -> None:
    """An upstream's tools changed (``notifications/tools/list_changed``, or a new list after a reconnect): the
    gateway's catalog is indexed again (only changed tools encoded); searches in flight keep their snapshot."""
    async with lock:
        try:
            catalog = gateway.catalog()
            encoded = await anyio.to_thread.run_sync(retriever.reload, catalog)
        except ToolragError as exc:
            log.warning("re-indexing the upstream servers' tools failed (%s); the previous tools are served", exc)
            return
        log.info("upstream tools changed: %d tools indexed again (%d texts/images encoded)", len(catalog), encoded)


async def serve(app: MCPServer, *, transport: str, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run ``app`` over stdio or streamable HTTP (``http://host:port/mcp``) until the client or a signal ends
    it."""
    if transport == "stdio":
        await app.run_stdio_async()
    else:
        await app.run_streamable_http_async(host=host, port=port)


async def run_gateway(config: GatewayConfig, *, build_retriever: Any, transport: str, host: str = "127.0.0.1",
                      port: int = 8000, on_ready: Any = None) -> None:
    """Connect the upstream servers, index their tools (``build_retriever(catalog)``, run in a thread) and
    serve ``search_tools`` and ``call_tool`` until the client or a signal ends it."""
    async with anyio.create_task_group() as tg:
        gateway = Gateway(config, tg)
        try:
            await gateway.start()
            gateway.check_rules()  # a rule naming no tool refuses to serve, before any model loads
            catalog: Catalog = gateway.catalog()
            retriever: ToolRetriever = await anyio.to_thread.run_sync(build_retriever, catalog)
            service = ToolService(retriever, role=config.role, tokens=config.tokens, gateway=gateway)
            gateway.on_change = functools.partial(_reindex, gateway, retriever, anyio.Lock())
            if on_ready is not None:
                on_ready(gateway, catalog)
            await serve(build_app(service, name=config.name), transport=transport, host=host, port=port)
        finally:
            gateway.close()
            tg.cancel_scope.deadline = anyio.current_time() + 5  # upstreams get 5 s to shut down
