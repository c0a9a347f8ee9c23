"""MCP with real parts: the SDK-written demo server (41 tools, dotted names, draft-4 schemas) launched over stdio
and over streamable HTTP and imported; a misbehaving server's malformed pages; ``toolrag serve --gateway``
launched as a process and driven by the SDK's client (search, a forwarded call, a refused call to a hidden
tool, an upstream that dies mid-session, upstreams that fail or time out); roles from bearer tokens and
duplicate tool names over streamable HTTP.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ASSETS, ROOT
from net_support import free_port, listening

from toolrag.catalog.loader import PROVENANCE_FILE, load_catalog
from toolrag.catalog.names import FUNCTION_NAME
from toolrag.cli import main
from toolrag.search.results import DecisionSource
from toolrag.serve.importer import fetch_listing, import_server
from toolrag.serve.upstream import ServerSpec, UpstreamError
from toolrag.version import __version__

pytestmark = pytest.mark.slow

SERVERS = ROOT / "tests" / "mcp_servers"
DEMO = [sys.executable, str(SERVERS / "demo_server.py")]
RAW = [sys.executable, str(SERVERS / "raw_server.py")]
sys.path.insert(0, str(SERVERS))
from demo_server import LONG_NAME  # noqa: E402
from raw_server import LONG as RAW_LONG  # noqa: E402


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.3)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


@contextlib.contextmanager
def http_demo(name: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([*DEMO, "--transport", "http", "--port", str(port), "--name", name])
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------------------------------- import


def test_import_over_stdio_keeps_names_and_schemas_and_reimport_shows_the_diff(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, models: object) -> None:
    out, data = tmp_path / "files", str(tmp_path / "data")
    code, stdout, stderr = run_cli(capsys, "import", "mcp", "--out", str(out), "--data-dir", data, *DEMO,
                                   "--name", "files")
    assert code == 0, stderr
    assert "imported files 1.1.0: 41 tools in 3 page(s); 41 added" in stdout
    first = int(re.search(r"indexed 41 tools \((\d+) texts", stdout).group(1))  # type: ignore[union-attr]
    assert first >= 41 and "catalog files: 41 tools loaded, 0 skipped, 0 degraded" in stderr
    catalog = load_catalog(out)
    assert len(catalog) == 41 and catalog.report.clean
    for name in ("fs.read_file", "github/create_issue", "getPM2.5Level", "get_rates.", "Sales_Excl._Tax",
                 "___internal_ping", LONG_NAME):
        tool = catalog.get(name)
        assert tool is not None and tool.name == name and FUNCTION_NAME.match(catalog.function_name(name))
    amount = catalog.get("convert_currency").parameters["properties"]["amount"]  # type: ignore[union-attr]
    assert amount["exclusiveMinimum"] is True  # draft 4 as published, not rewritten
    assert catalog.get("fs.delete_file").mutation  # type: ignore[union-attr]  # destructiveHint
    provenance = json.loads((out / PROVENANCE_FILE).read_text(encoding="utf-8"))
    assert provenance["server"] == {"name": "files", "version": "1.1.0"} and provenance["pages"] == 3
    assert provenance["source"]["transport"] == "stdio" and provenance["imported_at"].startswith("20")
    # The server's next version: one description changed, one tool gone, one new.
    code, stdout, _ = run_cli(capsys, "import", "mcp", "--out", str(out), "--data-dir", data, *DEMO,
                              "--name", "files", "--variant", "2")
    assert code == 0
    assert "1 added, 1 removed, 1 changed, 39 unchanged" in stdout
    assert "added: fs.move_file" in stdout and "removed: stocks.quote" in stdout and "changed: fs.read_file" in stdout
    again = int(re.search(r"indexed 41 tools \((\d+) texts", stdout).group(1))  # type: ignore[union-attr]
    assert 0 < again <= 2 * 2  # the changed and the added tool, once per text model; nothing else


def test_import_over_streamable_http(tmp_path: Path) -> None:
    with http_demo("web") as url:
        result = import_server(ServerSpec.from_target([url]), tmp_path / "web")
    assert result.listing.server_name == "web" and len(result.catalog) == 41
    provenance = json.loads((tmp_path / "web" / PROVENANCE_FILE).read_text(encoding="utf-8"))
    assert provenance["source"] == {"transport": "streamable-http", "url": url}


def test_malformed_pages_keep_every_usable_tool(tmp_path: Path) -> None:
    result = import_server(ServerSpec.from_target(RAW, name="raw"), tmp_path / "raw")
    catalog = result.catalog
    assert catalog.ids == ["ok.first", "ok.second", "bad.schema", RAW_LONG]
    assert (catalog.report.skipped, catalog.report.degraded) == (2, 1)  # no name; the repeated name | bad schema
    warnings = "\n".join(result.listing.warnings)
    assert "page 2 (cursor 'p2') is malformed (tools.0.inputSchema" in warnings
    assert "item 3 is int, not a tool" in warnings and "'tools' is dict, not a list" in warnings
    assert "sent cursor 'p2' again; stopped paging" in warnings
    assert "tool 'bad.schema': field 'parameters'" in catalog.report.warnings[0]


def test_a_server_that_cannot_start_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(UpstreamError, match="cannot read MCP server 'x'"):
        fetch_listing(ServerSpec("x", command="/nonexistent/mcp-server", timeout=10))
    out = tmp_path / "never"
    code, _, err = run_cli(capsys, "import", "mcp", "--out", str(out), "--no-index", "--timeout", "3", *DEMO,
                           "--start-delay", "30")
    assert code == 2 and "did not answer initialize within 3 s" in err and not out.exists()


def test_the_callers_own_error_inside_a_session_is_not_a_lost_connection() -> None:
    """``connect`` maps what the SDK and its transport raise; an exception of the caller's own code inside the
    session comes out as it is (the same object), not as "MCP server ... failed during the session"."""
    from toolrag.serve.upstream import connect

    raised: list[BaseException] = []

    async def body(error: Exception) -> None:
        async with connect(ServerSpec.from_target(DEMO, name="demo", timeout=30)) as (session, _):
            await session.list_tools()
            raised.append(error)
            raise error

    for error in (ValueError("a bug in the caller's code"), KeyError("missing"), RuntimeError("mine")):
        with pytest.raises(type(error)) as info:
            anyio.run(body, error)
        assert info.value is error and not isinstance(info.value, UpstreamError)
    assert len(raised) == 3

    async def dies() -> None:  # the transport's error is still mapped: a lost connection
        async with connect(ServerSpec("gone", command=sys.executable, args=("-c", "import sys; sys.exit(3)"),
                                      timeout=10)):
            raise AssertionError("never reached")

    with pytest.raises(UpstreamError, match="MCP server 'gone' failed during initialize: connection closed") as lost:
        anyio.run(dies)
    assert lost.value.lost


def toolrag_process(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m toolrag ARGS`` as a user runs it (no TOOLRAG_ variables of this machine)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRAG_")}
    return subprocess.run([sys.executable, "-m", "toolrag", *args], cwd=ROOT, env=env, capture_output=True,
                          encoding="utf-8", timeout=timeout, stdin=subprocess.DEVNULL)


def test_a_server_that_writes_something_else_is_one_line(tmp_path: Path) -> None:
    """The probe's ``toolrag import mcp --out x /bin/echo hello``: the MCP library's 12-line traceback of the line
    it could not parse becomes part of toolrag's one line, which says what the server wrote."""
    out = tmp_path / "x"
    proc = toolrag_process("import", "mcp", "--out", str(out), "--timeout", "10", "/bin/echo", "hello")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "it wrote 'hello' on its standard output, which is not JSON-RPC" in proc.stderr and not out.exists()


def test_a_busy_port_is_refused_in_one_line_before_anything_loads(tmp_path: Path, small_catalog_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        gateway = tmp_path / "gateway.yaml"
        gateway.write_text("servers: {files: {command: /nonexistent/mcp-server}}\n", encoding="utf-8")
        for target in (["--gateway", str(gateway)], ["--catalog", str(small_catalog_dir)]):
            data = tmp_path / f"data-{target[0][2:]}"
            proc = toolrag_process("serve", *target, "--transport", "http", "--port", port, "--data-dir", str(data))
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
            assert proc.stderr.strip().splitlines() == [
                f"toolrag: port {port} on 127.0.0.1 is in use (another server listens there); stop that server or "
                "choose another --port"]
            assert not data.exists()  # no model loaded, no index opened


# -------------------------------------------------------------------------------------------------- gateway


def gateway_config(folder: Path, *, slow: bool = True) -> Path:
    demo = str(SERVERS / "demo_server.py")
    servers: dict[str, Any] = {
        "files": {"command": sys.executable, "args": [demo, "--name", "files"],
                  "tool_permissions": {"db.drop_table": ["db.admin"]}},
        "other": {"command": sys.executable, "args": [demo, "--name", "other", "--page-size", "10"],
                  "permissions": ["other.use"]},
        "broken": {"command": "/nonexistent/mcp-server"},
    }
    if slow:
        servers["slow"] = {"command": sys.executable, "args": [demo, "--start-delay", "60"], "timeout": 3}
    config = {"servers": servers, "roles": {"reader": [], "admin": ["db.admin", "other.use"]}, "role": "reader",
              "tokens": {"admin-token": "admin"}}
    file = folder / "gateway.yaml"
    file.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    return file


def texts(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_gateway_over_stdio_driven_by_the_mcp_client(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    audit = tmp_path / "audit.jsonl"
    params = StdioServerParameters(
        command=sys.executable, cwd=str(ROOT),
        args=["-m", "toolrag", "serve", "--gateway", str(gateway_config(tmp_path)), "--data-dir",
              str(tmp_path / "data"), "--audit-log", str(audit)],
        env={k: v for k, v in os.environ.items() if not k.startswith("TOOLRAG_")})
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            seen["server"] = (await session.initialize()).server_info
            seen["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            found = await session.call_tool("search_tools", {"query": "what's the weather in Paris right now",
                                                             "k": 3})
            seen["search"] = found.structured_content
            hidden = await session.call_tool("search_tools", {"query": "drop the table of the analytics database",
                                                              "k": 10})
            seen["hidden_search"] = hidden.structured_content
            seen["call"] = await session.call_tool("call_tool", {"tool": "files/weather.current",
                                                                 "arguments": {"city": "Paris"}})
            seen["refused"] = await session.call_tool("call_tool", {"tool": "files/db.drop_table",
                                                                    "arguments": {"table": "t"}})
            seen["unknown"] = await session.call_tool("call_tool", {"tool": "files/no.such_tool", "arguments": {}})
            seen["crash"] = await session.call_tool("call_tool", {"tool": "files/debug.crash", "arguments": {}})
            seen["after"] = await session.call_tool("call_tool", {"tool": "files/weather.current",
                                                                  "arguments": {"city": "Rome"}})
            # two servers publish weather.current: the bare name is refused, whoever calls (never routed by role)
            seen["bare"] = await session.call_tool("call_tool", {"tool": "weather.current",
                                                                 "arguments": {"city": "Rome"}})

    anyio.run(scenario)
    assert seen["server"].version == __version__  # what a client shows beside the server's name
    assert seen["tools"] == ["call_tool", "search_tools"]  # nothing else: the catalog is searched, not listed
    answer = seen["search"]
    assert answer["decision"] in ("EXECUTE", "CLARIFY") and "reason" in answer and "confidence" not in answer
    assert answer["decided_by"] in {s.value for s in DecisionSource}  # whether the probabilities decided
    top = answer["tools"][0]
    assert top["id"] == "files/weather.current" and top["name"] == "weather.current" and top["server"] == "files"
    assert top["input_schema"]["required"] == ["city"] and FUNCTION_NAME.match(top["function_name"])
    assert all(not t["id"].startswith("other/") for t in answer["tools"])  # the reader lacks other.use
    # Upstreams that failed to start or timed out are reported, not fatal.
    assert set(answer["unavailable_servers"]) == {"broken", "slow"}
    assert "did not answer initialize within 3 s" in answer["unavailable_servers"]["slow"]
    assert "files/db.drop_table" not in [t["id"] for t in seen["hidden_search"]["tools"]]
    assert not seen["call"].is_error and texts(seen["call"]) == 'files:weather.current {"city": "Paris"}'
    # A hidden tool is refused with the very words an unknown one gets: its existence is not revealed.
    assert seen["refused"].is_error and seen["unknown"].is_error
    assert texts(seen["refused"]).replace("files/db.drop_table", "X") == texts(seen["unknown"]).replace(
        "files/no.such_tool", "X")
    # The upstream died mid-session: that call fails, the next one relaunches it.
    assert seen["crash"].is_error and "upstream server 'files' is unavailable" in texts(seen["crash"])
    assert not seen["after"].is_error and texts(seen["after"]) == 'files:weather.current {"city": "Rome"}'
    assert seen["bare"].is_error and "call 'weather.current' by its id" in texts(seen["bare"])
    assert "files/weather.current" in texts(seen["bare"]) and "other/" not in texts(seen["bare"])
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    searches = [r for r in records if r["kind"] == "search"]
    calls = {r["tool"]: r["outcome"] for r in records if r["kind"] == "call"}
    assert len(searches) == 2 and searches[0]["role"] == "reader"
    assert calls == {"files/weather.current": "ok", "files/db.drop_table": "refused", "files/no.such_tool": "refused",
                     "weather.current": "refused",
                     "files/debug.crash": "unavailable"}


def test_gateway_over_http_roles_from_tokens_and_duplicate_names(tmp_path: Path, models: Any) -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from toolrag.audit import AuditLog
    from toolrag.search.retriever import ToolRetriever
    from toolrag.serve.app import run_gateway
    from toolrag.serve.config import GatewayConfig

    config = GatewayConfig.from_yaml(gateway_config(tmp_path, slow=False))
    port = free_port()
    audit = AuditLog(tmp_path / "audit.jsonl")

    def build(catalog: Any) -> ToolRetriever:
        return ToolRetriever.from_catalog(catalog, data_dir=tmp_path / "data", models=models, audit=audit)

    async def call(url: str, token: str | None, tool: str, arguments: dict[str, Any]) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as client, \
                streamable_http_client(url, http_client=client) as (read, write, *_), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool(tool, arguments)

    seen: dict[str, Any] = {}
    wrong_types = {  # the probe's cases: each answered in one line naming the argument and the type expected
        "k_text": ("search_tools", {"query": "weather", "k": "five"}, "k is a string 'five'; expected an integer"),
        "query_number": ("search_tools", {"query": 5}, "query is an integer 5; expected a string"),
        "query_missing": ("search_tools", {"k": 3}, "query is missing"),
        "image_list": ("search_tools", {"query": "x", "image": [1]}, "image is an array [1]; expected a string"),
        "arguments_text": ("call_tool", {"tool": "files/weather.current", "arguments": "city=Oslo"},
                           "arguments is a string 'city=Oslo'; expected an object"),
        "tool_number": ("call_tool", {"tool": 7}, "tool is an integer 7; expected a string"),
    }

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_gateway(config, build_retriever=build, transport="http", port=port))
            url = f"http://127.0.0.1:{port}/mcp"
            await listening(port, timeout=300, every=0.3)
            query = {"query": "current weather in a city", "k": 10}
            seen["reader"] = (await call(url, None, "search_tools", query)).structured_content
            seen["admin"] = (await call(url, "admin-token", "search_tools", query)).structured_content
            seen["bad_token"] = await call(url, "wrong", "search_tools", query)
            seen["bad_token_call"] = await call(url, "wrong", "call_tool", {"tool": "files/db.drop_table",
                                                                            "arguments": {"table": "t"}})
            seen["ambiguous"] = await call(url, "admin-token", "call_tool", {"tool": "weather.current"})
            seen["reader_ambiguous"] = await call(url, None, "call_tool", {"tool": "weather.current",
                                                                          "arguments": {"city": "Oslo"}})
            seen["files"] = await call(url, "admin-token", "call_tool", {"tool": "files/weather.current",
                                                                        "arguments": {"city": "Oslo"}})
            seen["other"] = await call(url, "admin-token", "call_tool", {"tool": "other/weather.current",
                                                                        "arguments": {"city": "Oslo"}})
            seen["reader_other"] = await call(url, None, "call_tool", {"tool": "other/weather.current"})
            seen["admin_drop"] = await call(url, "admin-token", "call_tool", {"tool": "files/db.drop_table",
                                                                             "arguments": {"table": "t"}})
            seen["no_city"] = await call(url, None, "call_tool", {"tool": "files/weather.current",
                                                                 "arguments": {"town": "Oslo"}})
            seen["city_number"] = await call(url, None, "call_tool", {"tool": "files/weather.current",
                                                                     "arguments": {"city": 42}})
            seen["empty_image"] = (await call(url, None, "search_tools", {"query": "weather in Oslo", "image": ""}
                                              )).structured_content
            for key, (tool, arguments, _) in wrong_types.items():
                seen[key] = await call(url, None, tool, arguments)
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    audit.flush()
    reader_ids = [t["id"] for t in seen["reader"]["tools"]]
    admin_ids = [t["id"] for t in seen["admin"]["tools"]]
    assert "files/weather.current" in reader_ids and not any(i.startswith("other/") for i in reader_ids)
    assert {"files/weather.current", "other/weather.current"} <= set(admin_ids)  # both kept, both addressable
    names = {t["id"]: t["function_name"] for t in seen["admin"]["tools"]}
    assert names["files/weather.current"] != names["other/weather.current"]
    assert seen["bad_token"].is_error and "bearer token is not one this server knows" in texts(seen["bad_token"])
    assert seen["bad_token_call"].is_error and "bearer token" in texts(seen["bad_token_call"])
    assert seen["ambiguous"].is_error and "files/weather.current" in texts(seen["ambiguous"]) and \
        "other/weather.current" in texts(seen["ambiguous"])
    # The same bare name is refused for the reader too (never routed to the copy it can see), naming only its id.
    assert seen["reader_ambiguous"].is_error and "files/weather.current" in texts(seen["reader_ambiguous"])
    assert "other/" not in texts(seen["reader_ambiguous"])
    assert texts(seen["files"]) == 'files:weather.current {"city": "Oslo"}'
    assert texts(seen["other"]) == 'other:weather.current {"city": "Oslo"}'
    assert seen["reader_other"].is_error and "is available to this caller" in texts(seen["reader_other"])
    assert not seen["admin_drop"].is_error
    # Arguments are checked against the tool's input schema before anything is forwarded, naming the field.
    assert seen["no_city"].is_error and "arguments do not match the input_schema of 'files/weather.current'" in \
        texts(seen["no_city"]) and "'city' is a required property" in texts(seen["no_city"])
    assert seen["city_number"].is_error and "city: 42 is not of type 'string'" in texts(seen["city_number"])
    # Callers read the names of the servers that are down, never where they run.
    down = seen["reader"]["unavailable_servers"]
    assert set(down) == {"broken"} and "/nonexistent" not in json.dumps(down) and "mcp-server" not in json.dumps(down)
    # An empty image is read as no image, and the answer says so.
    assert any("image is an empty string" in n for n in seen["empty_image"]["notes"])
    for key, (_, _, message) in wrong_types.items():
        text = texts(seen[key])
        assert seen[key].is_error and message in text, (key, text)
        assert "\n" not in text.strip() and "pydantic" not in text and "http" not in text, (key, text)
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    calls = [(r["tool"], r["outcome"]) for r in records if r["kind"] == "call"]
    assert ("files/db.drop_table", "refused") in calls  # the unknown token's call is in the log
    assert ("files/weather.current", "invalid") in calls and ("other/weather.current", "ok") in calls
    refused = [r for r in records if r.get("outcome") == "refused" and r.get("reason", "").startswith("the Author")]
    assert {r["kind"] for r in refused} == {"search", "call"}


def test_search_server_for_a_catalog_with_an_image(small_retriever: Any) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from toolrag.serve.app import build_app, serve
    from toolrag.serve.service import ToolService

    service = ToolService(small_retriever, role="employee")
    # The server warms the models in the background (the first image request pays no OCR load; what warm_up
    # loads is tested in test_warmup.py); the thread must have been started and must end.
    assert service.warm_up is not None and service.warm_up.name == "toolrag-warm-up"
    service.warm_up.join(timeout=300)
    assert not service.warm_up.is_alive()
    app = build_app(service, name="toolrag small")
    port = free_port()
    receipt = base64.b64encode((ASSETS / "queries" / "receipt_dinner.png").read_bytes()).decode()
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve(app, transport="http", port=port))
            await listening(port)
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_), \
                    ClientSession(read, write) as session:
                await session.initialize()
                listed = (await session.list_tools()).tools
                seen["tools"] = [t.name for t in listed]
                seen["schema"] = listed[0].input_schema
                seen["image"] = await session.call_tool("search_tools", {"query": "", "image": receipt, "k": 2})
                seen["image_alone"] = await session.call_tool("search_tools", {"image": f"data:image/png;base64,"
                                                                                       f"{receipt}", "k": 2})
                seen["payroll"] = await session.call_tool("search_tools", {"query": "approve the payroll"})
                seen["bad_image"] = await session.call_tool("search_tools", {"query": "x", "image": "%%%"})
                seen["bad_k"] = await session.call_tool("search_tools", {"query": "x", "k": 0})
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    assert seen["tools"] == ["search_tools"]  # no gateway: nothing to call through this server
    image = seen["image"].structured_content
    assert image["tools"][0]["id"] == "finance.expense.submit" and len(image["tools"]) <= 2
    assert image["tools"][0]["name"] == "submit_expense"
    # a picture alone is a request (as in the library): the schema requires no query, and the answer is the same
    assert "required" not in seen["schema"] and "default" not in seen["schema"]["properties"]["query"]
    assert seen["image_alone"].structured_content["tools"] == image["tools"]
    assert "hr.payroll.approve" not in json.dumps(seen["payroll"].structured_content)  # the employee cannot see it
    assert seen["bad_image"].is_error and "base64" in texts(seen["bad_image"])
    assert seen["bad_k"].is_error and "k is 0; expected an integer from 1 to 50" in texts(seen["bad_k"])
