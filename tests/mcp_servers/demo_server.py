"""A small MCP server written with the official SDK, for toolrag's tests: 41 tools with the names and schemas
real servers publish (dotted and slashed names, leading underscores, a name of 200 characters, draft-4
``exclusiveMinimum: true`` without ``$schema``), listed in pages of 15.

    python tests/mcp_servers/demo_server.py                       # stdio
    python tests/mcp_servers/demo_server.py --transport http --port 8765
    python tests/mcp_servers/demo_server.py --name files --variant 2    # a later version of the server

A call answers ``<server>:<tool> <arguments as JSON>``; ``debug.crash`` ends the process (an upstream that
dies mid-session). ``--variant 2`` changes one description, drops one tool and adds one (what a re-import must
report). With ``--live``: ``debug.trace`` answers the ``traceparent`` its ``_meta`` carried, and
``admin.next_variant`` switches to variant 2 and sends ``notifications/tools/list_changed``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server

LONG_NAME = "reports." + "quarterly_sales_breakdown_by_region_" * 5 + "x" * 12  # 200 characters
DRAFT4_AMOUNT = {"type": "number", "minimum": 0, "exclusiveMinimum": True, "description": "a positive amount"}


def _schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


TOOLS: list[tuple[str, str, dict[str, Any]]] = [
    ("fs.read_file", "Read a text file from the workspace and return its content.", _schema(
        {"path": _text("file path relative to the workspace")}, ["path"])),
    ("fs.write_file", "Write text to a file in the workspace, replacing its content.", _schema(
        {"path": _text("file path"), "content": _text("the new content")}, ["path", "content"])),
    ("fs.list_dir", "List the files and folders in a workspace directory.", _schema(
        {"path": _text("directory path")})),
    ("fs.delete_file", "Delete a file from the workspace permanently.", _schema(
        {"path": _text("file path")}, ["path"])),
    ("github/create_issue", "Open a new issue in a GitHub repository with a title and a body.", _schema(
        {"repo": _text("owner/name"), "title": _text("issue title"), "body": _text("issue text")},
        ["repo", "title"])),
    ("github/list_pull_requests", "List the open pull requests of a GitHub repository.", _schema(
        {"repo": _text("owner/name")}, ["repo"])),
    ("github/merge_pull_request", "Merge a pull request of a GitHub repository.", _schema(
        {"repo": _text("owner/name"), "number": {"type": "integer", "minimum": 1}}, ["repo", "number"])),
    ("calendar.create_event", "Create a calendar event with a title, a start time and attendees.", _schema(
        {"title": _text("event title"), "start": _text("ISO start time"),
         "attendees": {"type": "array", "items": {"type": "string"}}}, ["title", "start"])),
    ("calendar.list_events", "List the calendar events of a day.", _schema({"date": _text("ISO date")})),
    ("calendar.cancel_event", "Cancel a calendar event and notify its attendees.", _schema(
        {"event_id": _text("the event id")}, ["event_id"])),
    ("weather.current", "Current weather conditions (temperature, wind, rain) for a city.", _schema(
        {"city": _text("city name")}, ["city"])),
    ("weather.forecast", "Weather forecast for the next days for a city.", _schema(
        {"city": _text("city name"), "days": {"type": "integer", "minimum": 1, "maximum": 7}}, ["city"])),
    ("getPM2.5Level", "Air quality: the PM2.5 particulate level of a city today.", _schema(
        {"city": _text("city name")}, ["city"])),
    ("get_rates.", "Exchange rates between a base currency and other currencies.", _schema(
        {"base": _text("ISO currency code such as EUR")}, ["base"])),
    ("convert_currency", "Convert an amount of money from one currency to another at today's rate.", _schema(
        {"amount": DRAFT4_AMOUNT, "from": _text("ISO code"), "to": _text("ISO code")}, ["amount", "from", "to"])),
    ("Sales_Excl._Tax", "Total sales of a period excluding value-added tax.", _schema(
        {"period": _text("a month such as 2026-10")}, ["period"])),
    ("___internal_ping", "Check that the server answers (health check).", _schema({})),
    ("math.divide", "Divide one number by another.", _schema(
        {"dividend": {"type": "number"}, "divisor": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
        ["dividend", "divisor"])),
    ("math.sqrt", "Square root of a non-negative number.", _schema(
        {"x": {"type": "number", "minimum": 0, "exclusiveMinimum": False}}, ["x"])),
    ("mail.send", "Send an email to one or more recipients with a subject and a body.", _schema(
        {"to": {"type": "array", "items": {"type": "string"}}, "subject": _text("subject"), "body": _text("text")},
        ["to", "subject"])),
    ("mail.search", "Search the mailbox for emails matching words, a sender or a date.", _schema(
        {"query": _text("search words")}, ["query"])),
    ("notes.create", "Create a note with a title and text in the user's notebook.", _schema(
        {"title": _text("note title"), "text": _text("note text")}, ["title"])),
    ("notes.search", "Find notes in the user's notebook by words.", _schema({"query": _text("words")}, ["query"])),
    ("web.search", "Search the web and return the top result links with snippets.", _schema(
        {"query": _text("search words"), "count": {"type": "integer", "minimum": 1, "maximum": 20}}, ["query"])),
    ("web.fetch", "Download a web page and return its text.", _schema({"url": _text("page URL")}, ["url"])),
    ("translate.text", "Translate a text into another language.", _schema(
        {"text": _text("text to translate"), "target": _text("target language code")}, ["text", "target"])),
    ("timer.start", "Start a countdown timer that rings after a number of minutes.", _schema(
        {"minutes": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}, ["minutes"])),
    ("units.convert", "Convert a quantity between units (km to miles, kg to pounds, Celsius to Fahrenheit).",
     _schema({"value": {"type": "number"}, "from_unit": _text("unit"), "to_unit": _text("unit")},
             ["value", "from_unit", "to_unit"])),
    ("db.query", "Run a read-only SQL query on the analytics database.", _schema({"sql": _text("a SELECT")}, ["sql"])),
    ("db.drop_table", "Drop a table of the analytics database (irreversible).", _schema(
        {"table": _text("table name")}, ["table"])),
    ("crm.find_customer", "Find a customer record by name, email or phone number.", _schema(
        {"query": _text("name, email or phone")}, ["query"])),
    ("crm.update_customer", "Update fields of a customer record.", _schema(
        {"customer_id": _text("id"), "fields": {"type": "object"}}, ["customer_id", "fields"])),
    ("tickets.create", "Open a support ticket for a customer problem.", _schema(
        {"summary": _text("what is wrong"), "priority": {"type": "string", "enum": ["low", "normal", "high"]}},
        ["summary"])),
    ("tickets.close", "Close a support ticket as resolved.", _schema({"ticket_id": _text("id")}, ["ticket_id"])),
    ("maps.directions", "Driving, walking or transit directions between two places.", _schema(
        {"origin": _text("start"), "destination": _text("end")}, ["origin", "destination"])),
    ("maps.geocode", "Latitude and longitude of an address.", _schema({"address": _text("address")}, ["address"])),
    ("image.resize", "Resize an image to a width and height in pixels.", _schema(
        {"url": _text("image URL"), "width": {"type": "integer", "minimum": 1}, "height": {"type": "integer"}},
        ["url", "width"])),
    ("pdf.extract_text", "Extract the text of a PDF document.", _schema({"url": _text("PDF URL")}, ["url"])),
    ("stocks.quote", "Latest stock price quote for a ticker symbol.", _schema({"symbol": _text("ticker")}, ["symbol"])),
    (LONG_NAME, "Quarterly sales report broken down by region, with totals per product line.", _schema(
        {"quarter": _text("such as 2026-Q3")}, ["quarter"])),
    ("debug.crash", "Crash the server process (for testing an upstream that dies).", _schema({})),
]
#: Two more tools with ``--live``: what the observability and live-change tests drive.
LIVE_TOOLS: list[tuple[str, str, dict[str, Any]]] = [
    ("debug.trace", "Answer the W3C traceparent this call carried in its _meta (for testing trace propagation).",
     _schema({})),
    ("admin.next_variant", "Switch to the server's next version of its tools and say so (tools/list_changed).",
     _schema({})),
]
DESTRUCTIVE = {"fs.delete_file", "db.drop_table", "calendar.cancel_event"}


def tools_of(variant: int, live: bool = False) -> list[types.Tool]:
    rows = list(TOOLS) + (LIVE_TOOLS if live else [])
    if variant == 2:
        rows = [(n, d + " Also reads compressed files." if n == "fs.read_file" else d, s) for n, d, s in rows
                if n != "stocks.quote"]
        rows.append(("fs.move_file", "Move or rename a file in the workspace.", _schema(
            {"source": _text("from"), "target": _text("to")}, ["source", "target"])))
    return [types.Tool(name=n, description=d, input_schema=s,
                       annotations=types.ToolAnnotations(destructive_hint=True) if n in DESTRUCTIVE else None)
            for n, d, s in rows]


def build(name: str, variant: int, page_size: int, live: bool = False) -> Server[Any]:
    tools = tools_of(variant, live)
    known = {t.name for t in tools}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page_size
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in known:
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"unknown tool {params.name}")],
                                        is_error=True)
        if params.name == "debug.crash":
            os._exit(3)
        if params.name == "debug.trace":
            meta = dict(ctx.meta or {}) if getattr(ctx, "meta", None) else {}
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(meta.get("traceparent")))])
        if params.name == "admin.next_variant":
            tools[:] = tools_of(2, live)
            known.clear()
            known.update(t.name for t in tools)
            await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[types.TextContent(type="text", text="variant 2")])
        text = f"{name}:{params.name} {json.dumps(params.arguments or {}, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server(name, version=f"1.{variant}.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="demo")
    parser.add_argument("--variant", type=int, default=1)
    parser.add_argument("--page-size", type=int, default=15)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--live", action="store_true", help="add debug.trace and admin.next_variant")
    parser.add_argument("--start-delay", type=float, default=0.0, help="sleep before serving (a slow upstream)")
    args = parser.parse_args()
    if args.start_delay:
        time.sleep(args.start_delay)
    server = build(args.name, args.variant, args.page_size, args.live)
    if args.transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
    else:
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
