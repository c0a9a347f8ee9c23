"""A misbehaving MCP server for toolrag's bad-input tests: it speaks JSON-RPC over stdio by hand, because the
SDK's own server refuses to send what this one sends.

Page 1 of ``tools/list`` is well-formed. Page 2 is malformed: a tool whose ``inputSchema`` is a string, a tool
without a name, an item that is a number, a tool of 200 characters' name and a tool whose name repeats one
of page 1. Page 3 has ``tools`` that is not a list and hands back the cursor of page 2 (a loop).
"""

from __future__ import annotations

import json
import sys
from typing import Any

LONG = "n" * 196 + ".end"

PAGES: dict[str | None, dict[str, Any]] = {
    None: {"tools": [
        {"name": "ok.first", "description": "A well-formed tool on the first page.",
         "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
        {"name": "ok.second", "description": "Another well-formed tool.", "inputSchema": {"type": "object"}},
    ], "nextCursor": "p2"},
    "p2": {"tools": [
        {"name": "bad.schema", "description": "Its inputSchema is a string.", "inputSchema": "object"},
        {"description": "A tool without a name.", "inputSchema": {"type": "object"}},
        42,
        {"name": LONG, "description": "A tool with a 200-character name.", "inputSchema": {"type": "object"}},
        {"name": "ok.first", "description": "The same name again.", "inputSchema": {"type": "object"}},
    ], "nextCursor": "p3"},
    "p3": {"tools": {"not": "a list"}, "nextCursor": "p2"},
}


def reply(message_id: Any, result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, message_id = message.get("method"), message.get("id")
        if message_id is None:
            continue  # a notification
        params = message.get("params") or {}
        if method == "initialize":
            reply(message_id, {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                               "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "0.0.1"}})
        elif method == "tools/list":
            reply(message_id, PAGES.get(params.get("cursor"), {"tools": []}))
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id,
                                         "error": {"code": -32601, "message": f"no method {method}"}}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
