"""``toolrag serve`` and ``toolrag import mcp``: toolrag as an MCP server or gateway, and a live MCP server's
tools as a catalog. Thin: the work is in :mod:`toolrag.serve`."""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog
from toolrag.cli.common import (
    audit_from_args,
    catalog_options,
    cli_progress,
    load_inputs,
    load_mode,
    open_catalog,
    open_retriever,
    settings_from_args,
    terminate_cleanly,
    warn,
)
from toolrag.config import index_name
from toolrag.env_vars import INDEX_ENV
from toolrag.errors import SettingsError, ToolragError
from toolrag.index.client import chroma_url
from toolrag.index.replica import ReplicaIndex
from toolrag.search.retriever import ToolRetriever
from toolrag.serve.upstream import DEFAULT_TIMEOUT, ServerSpec

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser, query: argparse.ArgumentParser) -> None:
    serve = sub.add_parser("serve", parents=[catalog_options(catalog=None)],
                           help="serve search_tools over MCP for a catalog, or be a gateway to MCP servers")
    serve.add_argument("--gateway", help="gateway config (YAML): upstream MCP servers, roles, tokens")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                       help="stdio (default) or streamable HTTP at http://HOST:PORT/mcp")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--role", help="the role of every caller (default: the gateway config's role)")
    serve.add_argument("--index", metavar="NAME",
                       help=f"serve index NAME published on the Chroma server (default: {INDEX_ENV}) and follow its "
                            "new versions; without --catalog no catalog file is needed (read-only), with it the "
                            "folder is pushed first")
    serve.set_defaults(handler=run_serve)
    importing = sub.add_parser("import", help="import a catalog from elsewhere").add_subparsers(
        dest="source", required=True)
    mcp = importing.add_parser("mcp", parents=[catalog_options(catalog=False)],
                               help="read a live MCP server's tools into a catalog folder (and index them)")
    mcp.add_argument("--out", required=True, help="the catalog folder to write (re-importing shows what changed)")
    mcp.add_argument("--name", help="the server's name in messages (default: its URL or command)")
    mcp.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds to wait for each answer")
    mcp.add_argument("--no-index", action="store_true", help="only write the folder, do not index it")
    mcp.add_argument("server", nargs=argparse.REMAINDER,
                     help="http(s)://host:port/mcp, or the command that starts a stdio server (after the options)")
    mcp.set_defaults(handler=run_import)


def run_import(args: argparse.Namespace) -> int:
    from toolrag.catalog.lint import stuffing_warnings
    from toolrag.serve.importer import import_server

    target = [part for part in args.server if part != "--"] if args.server[:1] == ["--"] else args.server
    spec = ServerSpec.from_target(target, name=args.name, timeout=args.timeout)
    result = import_server(spec, args.out, mode=load_mode(args))
    print(f"imported {result.summary()} into {result.folder}")
    again = bool(result.unchanged or result.removed or result.changed)  # not the first import: show the diff
    for label, names in (("added", result.added), ("removed", result.removed), ("changed", result.changed)):
        if names and again:
            print(f"  {label}: " + ", ".join(names[:20]) + (f" (+{len(names) - 20} more)" if len(names) > 20 else ""))
    for warning in result.listing.warnings:
        print(f"  {warning}", file=sys.stderr)
    for lint in stuffing_warnings(result.catalog):  # a third-party server can ship a description made of keywords
        print(f"  tool {lint.tool_id!r}: {lint.message}", file=sys.stderr)
    print(f"catalog {result.catalog.name}: {result.catalog.report.summary()}", file=sys.stderr)
    if not args.no_index:
        retriever = ToolRetriever.from_catalog(result.catalog, settings=settings_from_args(args),
                                               data_dir=args.data_dir, chroma_url=_chroma(args))
        print(f"indexed {len(retriever.catalog)} tools ({retriever.index.encoded_last_sync} texts/images encoded, "
              "the rest unchanged)")
        warn(retriever.model_notes())
    return 0


def run_serve(args: argparse.Namespace) -> int:
    import anyio

    if args.gateway and (args.catalog or args.index):
        raise SettingsError("serve what? give --catalog FOLDER (or --index NAME) or --gateway CONFIG.yaml, not both: "
                            "a gateway indexes its upstream servers' tools itself")
    name = None if args.gateway else index_name(args.index)
    if not (args.catalog or args.gateway or name):
        raise SettingsError("serve what? give --catalog FOLDER (search_tools), --index NAME with --chroma-url (a "
                            "published index, no catalog file needed) or --gateway CONFIG.yaml (search_tools and "
                            "call_tool for upstream MCP servers)")
    _chroma(args)  # a malformed --chroma-url is refused before anything starts
    if args.transport == "http":
        _check_port(args.host, args.port)  # before any model loads or upstream starts
    if args.catalog:
        catalog, settings = load_inputs(args)
        Caller.of(catalog, role=args.role)  # an unknown role is refused before any model loads or Chroma opens
    else:
        catalog, settings = None, settings_from_args(args)
    from toolrag.observe import tracing
    from toolrag.serve.app import build_app, run_gateway, serve

    tracing.configure()
    try:
        if not args.gateway:
            from toolrag.serve.service import ToolService

            retriever = _open_replica(args, name) if name else open_retriever(args, settings, catalog)
            retriever.warm_up_in_background()  # as the app: the agent's first call pays no load
            title = name or retriever.catalog.name
            app = build_app(ToolService(retriever, role=args.role), name=f"toolrag {title}")
            anyio.run(functools.partial(serve, app, transport=args.transport, host=args.host, port=args.port))
            return 0
        from toolrag.serve.config import GatewayConfig

        config = GatewayConfig.from_yaml(args.gateway)
        if args.role:
            config = config.with_role(args.role)
        settings = settings_from_args(args)

        def build(catalog: Catalog) -> ToolRetriever:
            retriever = ToolRetriever.from_catalog(catalog, settings=settings, data_dir=args.data_dir,
                                                   chroma_url=_chroma(args), audit=audit_from_args(args))
            warn(retriever.model_notes())
            if not warming:  # the first index of the gateway's upstream tools; later ones share its models
                warming.append(retriever.warm_up_in_background())
            return retriever

        warming: list[object] = []
        anyio.run(functools.partial(run_gateway, config, build_retriever=build, transport=args.transport,
                                    host=args.host, port=args.port, on_ready=_report_upstreams))
    except BaseException as exc:  # errors raised inside the server's task groups arrive in exception groups
        raise (_first_toolrag_error(exc) or exc) from None
    return 0


def _open_replica(args: argparse.Namespace, name: str) -> ToolRetriever:
    """A replica of the published index ``name`` (the ``--catalog`` folder pushed first when given)."""
    from toolrag.search.replicas import open_replica

    catalog = open_catalog(args) if args.catalog else None
    with terminate_cleanly():  # a push at start releases its build lease on SIGTERM too
        retriever = open_replica(index=name, chroma_url=_chroma(args), catalog=catalog,
                                 settings=settings_from_args(args), data_dir=args.data_dir, audit=audit_from_args(args),
                                 progress=cli_progress)
    warn(retriever.model_notes())
    replica = retriever.index
    if isinstance(replica, ReplicaIndex):
        pushed = replica.last_push
        if pushed is not None:
            print(f"index {name}: version {pushed.version} " + (
                f"built and pushed here ({pushed.encoded} texts/images encoded)" if pushed.built else
                "pushed (its data was complete)" if pushed.flipped else "already pushed (by another process)"),
                  file=sys.stderr)
        health = replica.health()
        state = (f"serving version {health.version} ({health.tools} tools)" if health.version
                 else f"not ready: {health.reason}")
        print(f"index {name}: {state}; following its new versions", file=sys.stderr)
    return retriever


def _report_upstreams(gateway: Any, catalog: Catalog) -> None:
    for name, upstream in gateway.upstreams.items():
        state = (f"{len(upstream.tools)} tools (version {upstream.version or '?'})" if upstream.session is not None
                 else f"unavailable: {upstream.error}")
        print(f"upstream {name}: {state}", file=sys.stderr)
        for warning in upstream.warnings:
            print(f"  {warning}", file=sys.stderr)
    print(f"catalog {catalog.name}: {catalog.report.summary()}", file=sys.stderr)
    for warning in catalog.report.warnings[:5]:
        print(f"  {warning}", file=sys.stderr)


def _first_toolrag_error(exc: BaseException) -> ToolragError | None:
    if isinstance(exc, ToolragError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _first_toolrag_error(inner)
        if found is not None:
            return found
    return None


def _check_port(host: str, port: int) -> None:
    """Refuse a port this process cannot listen on (another server holds it, or it needs privileges), in one
    line, before anything is loaded; the server binds it again moments later."""
    import errno
    import socket

    if not 0 < port < 65536:
        raise SettingsError(f"--port {port}: use a port from 1 to 65535")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise SettingsError(f"--host {host!r} cannot be listened on: {exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no conflict
        try:
            sock.bind(address)
        except OSError as exc:
            why = "is in use (another server listens there)" if exc.errno == errno.EADDRINUSE else f"failed: {exc}"
            raise SettingsError(f"port {port} on {host} {why}; stop that server or choose another --port") from None


def _chroma(args: argparse.Namespace) -> str | None:
    return chroma_url(args.chroma_url)
