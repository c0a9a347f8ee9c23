"""An MCP server (stdio) whose tools are a toolrag catalog's tools, for the OpenAI Agents SDK example: each tool
keeps its original name, description and input schema; a call answers which tool ran with which arguments.

    python examples/catalog_mcp_server.py [--catalog sample_tools]

It loads the catalog's files only (no model), so it starts in about a second.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from toolrag.catalog.loader import load_catalog


def build(catalog_path: str) -> Server[Any]:
    catalog = load_catalog(catalog_path)
    tools = [types.Tool(name=t.name, description=t.description,
                        input_schema=dict(t.parameters) or {"type": "object", "properties": {}})
             for t in catalog if not t.deprecated]
    known = {t.name for t in tools}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in known:
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"unknown tool {params.name}")],
                                        is_error=True)
        text = f"{params.name} ran with {json.dumps(params.arguments or {}, ensure_ascii=False, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server(f"toolrag-{catalog.name}", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", default=str(Path(__file__).resolve().parent.parent / "sample_tools"))
    server = build(parser.parse_args().catalog)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
