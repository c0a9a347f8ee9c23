"""Metrics and traces with real parts: the gateway served over streamable HTTP in this process, the SDK-written demo
server as its upstream over stdio, the MCP SDK's client. Spans are collected with the OpenTelemetry SDK's in-memory
exporter through a real search and a real ``call_tool``; ``/metrics`` is parsed with prometheus_client's parser;
an upstream's ``notifications/tools/list_changed`` is followed (its new tool is found within 10 s).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT

from toolrag.decision.model import shipped_model
from toolrag.version import __version__

pytestmark = pytest.mark.slow

DEMO = str(ROOT / "tests" / "mcp_servers" / "demo_server.py")
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def spans() -> Any:
    """The SDK's in-memory exporter on the process's tracer provider (installed once per process)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()


def _header_transport() -> Any:
    """An httpx2 transport that sends the caller's W3C context as a ``traceparent`` HTTP header instead of in MCP's
    ``_meta`` (where the SDK's client puts it): the other way an agent's trace reaches the server."""
    import httpx2

    class HeaderTransport(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            body = request.content
            if body and request.method == "POST":
                message = json.loads(body)
                if isinstance(message, dict) and isinstance(message.get("params"), dict):
                    message["params"].pop("_meta", None)
                    body = json.dumps(message).encode()
                headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
                headers["traceparent"] = f"00-{TRACE_ID}-{PARENT_ID}-01"
                request = httpx2.Request(request.method, request.url, headers=headers, content=body)
            return await super().handle_async_request(request)

    return HeaderTransport()


def test_metrics_traces_and_live_upstream_changes(tmp_path: Path, models: Any, spans: Any) -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from net_support import free_port, listening
    from opentelemetry import trace
    from prometheus_client.parser import text_string_to_metric_families
    from test_mcp import texts

    from toolrag.audit import AuditLog
    from toolrag.search.retriever import ToolRetriever
    from toolrag.serve.app import run_gateway
    from toolrag.serve.config import GatewayConfig

    config_file = tmp_path / "gateway.yaml"
    config_file.write_text(json.dumps({
        "servers": {"files": {"command": sys.executable, "args": [DEMO, "--name", "files", "--live"],
                              "tool_permissions": {"db.drop_table": ["db.admin"]}}},
        "roles": {"reader": [], "admin": ["db.admin"]}, "role": "reader"}), encoding="utf-8")
    config = GatewayConfig.from_yaml(config_file)
    audit = AuditLog(tmp_path / "audit.jsonl")
    audit.hash_requests = True  # redacted: no span may carry the request's text either
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    def build(catalog: Any) -> ToolRetriever:
        return ToolRetriever.from_catalog(catalog, data_dir=tmp_path / "data", models=models, audit=audit)

    async def session_call(tool: str, arguments: dict[str, Any], *, header: bool = False) -> Any:
        client = httpx2.AsyncClient(timeout=httpx2.Timeout(120.0), transport=_header_transport() if header else None)
        async with client, streamable_http_client(f"{url}/mcp", http_client=client) as (read, write, *_), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool(tool, arguments)

    seen: dict[str, Any] = {}
    tracer = trace.get_tracer("test-agent")

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_gateway(config, build_retriever=build, transport="http", port=port))
            await listening(port, timeout=300, every=0.3)
            async with httpx2.AsyncClient() as http:  # the registry is the process's: count what this test adds
                seen["metrics_before"] = (await http.get(f"{url}/metrics")).text
            seen["search"] = await session_call("search_tools", {"query": "weather in Paris right now"}, header=True)
            with tracer.start_as_current_span("agent turn") as agent:  # the SDK's client puts it in _meta
                seen["agent"] = agent.get_span_context()
                seen["call"] = await session_call("call_tool", {"tool": "files/debug.trace", "arguments": {}})
                seen["refused"] = await session_call("call_tool", {"tool": "files/db.drop_table",
                                                                   "arguments": {"table": "t"}})
            seen["weather"] = await session_call("call_tool", {"tool": "files/weather.current",
                                                               "arguments": {"city": "Oslo"}})
            async with httpx2.AsyncClient() as http:
                seen["metrics"] = (await http.get(f"{url}/metrics")).text
                seen["healthz"] = (await http.get(f"{url}/healthz")).json()
                ready = await http.get(f"{url}/readyz")
                seen["readyz"] = (ready.status_code, ready.json())
            # The upstream changes its tools and says so: the gateway lists and indexes them again.
            await session_call("call_tool", {"tool": "files/admin.next_variant", "arguments": {}})
            changed = time.monotonic()
            query = {"query": "move or rename a file in the workspace", "k": 3}
            with anyio.fail_after(60):
                while True:
                    found = (await session_call("search_tools", query)).structured_content
                    if any(t["id"] == "files/fs.move_file" for t in found["tools"]):
                        break
                    await anyio.sleep(0.5)
            seen["followed_s"] = time.monotonic() - changed
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    finished = spans.get_finished_spans()

    # ------------------------------------------------------------------ a search, continuing the header's trace
    assert not seen["search"].is_error, texts(seen["search"])
    search = next(s for s in finished if s.name == "toolrag.search" and s.context.trace_id == int(TRACE_ID, 16))
    server = next(s for s in finished if s.context.span_id == search.parent.span_id)
    assert server.name == "tools/call search_tools" and server.parent.span_id == int(PARENT_ID, 16)
    attributes = dict(search.attributes)
    assert attributes["toolrag.decision"] == seen["search"].structured_content["decision"]
    assert attributes["toolrag.role"] == "reader" and "toolrag.request.sha256" in attributes
    assert "toolrag.request.text" not in attributes  # the audit log is redacted
    assert not any("Paris" in json.dumps(dict(s.attributes or {}), default=str) for s in finished)
    stages = sorted((s for s in finished if s.parent is not None and s.parent.span_id == search.context.span_id),
                    key=lambda s: s.start_time)
    assert [s.name for s in stages][:1] == ["toolrag.search.encode"] and "toolrag.search.decide" in {
        s.name for s in stages}
    assert all(search.start_time <= s.start_time <= s.end_time <= search.end_time for s in stages)

    # ------------------------------------------------- a call: its upstream call inside it, the trace passed on
    agent = seen["agent"]
    call = next(s for s in finished if s.name == "toolrag.call_tool" and s.context.trace_id == agent.trace_id
                and dict(s.attributes).get("toolrag.tool") == "files/debug.trace")
    upstream = next(s for s in finished
                    if s.name == "toolrag.upstream_call" and s.parent.span_id == call.context.span_id)
    sent = next(s for s in finished if s.name == "MCP send tools/call debug.trace")
    assert sent.parent.span_id == upstream.context.span_id and dict(call.attributes)["toolrag.outcome"] == "ok"
    # The upstream server received the gateway's client span as its parent, in the agent's trace.
    assert texts(seen["call"]).startswith(f"00-{agent.trace_id:032x}-{sent.context.span_id:016x}-")

    # ------------------------------------------------------------------------------------- health and metrics
    assert seen["healthz"] == {"alive": True}
    status, ready = seen["readyz"]
    assert status == 200 and ready["ready"] is True and ready["tools"] == 43
    assert ready["decision_model"] == shipped_model()[0].version  # type: ignore[union-attr]
    def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    before, after = samples(seen["metrics_before"]), samples(seen["metrics"])
    added = {key: value - before.get(key, 0.0) for key, value in after.items()
             if key[0].endswith(("_total", "_count")) and value != before.get(key, 0.0)}
    searches = {dict(labels)["role"]: value for (name, labels), value in added.items()
                if name == "toolrag_searches_total"}
    assert searches == {"reader": 1.0}  # the one search of this test, under its caller's role
    assert all(dict(labels)["decision"] in ("EXECUTE", "CLARIFY", "NO_TOOL")
               for (name, labels) in added if name == "toolrag_searches_total")
    calls = {tuple(v for _, v in labels): value for (name, labels), value in added.items()
             if name == "toolrag_calls_total"}
    assert calls == {("ok", "reader"): 2, ("refused", "reader"): 1}
    stages = {dict(labels)["stage"]: value for (name, labels), value in added.items()
              if name == "toolrag_search_seconds_count"}
    assert stages["encode"] == 1 and stages["decide"] == 1 and stages["total"] == 1
    upstream = {dict(labels)["stage"]: value for (name, labels), value in added.items()
                if name == "toolrag_call_seconds_count"}
    assert upstream == {"upstream": 2, "total": 3}
    families = {f.name: f for f in text_string_to_metric_families(seen["metrics"])}
    tools = {s.labels["index"]: s.value for s in families["toolrag_index_tools"].samples}
    assert tools["catalog"] == 43  # a gateway's own index (no published name)
    assert [s.labels for s in families["toolrag_build_info"].samples] == [
        {"version": __version__, "decision_model": ready["decision_model"]}]
    assert "Paris" not in seen["metrics"] and "Oslo" not in seen["metrics"]

    # --------------------------------------------------------- the upstream's changed tools, followed live
    assert seen["followed_s"] < 10
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all("query" not in r for r in records if r["kind"] == "search")  # hashed, as configured


def test_every_stage_key_is_a_timing_the_search_writes() -> None:
    """The metric list names only timings a search records (``ocr`` and ``gloss`` were listed, never written:
    they are parts of ``encode_image`` and ``encode_text``)."""
    import re

    from toolrag.observe.metrics import STAGES

    source = "".join(f.read_text(encoding="utf-8") for f in (ROOT / "toolrag" / "search").glob("*.py"))
    written = set(re.findall(r'timing\["(\w+)"\]', source))
    assert {key for _, keys in STAGES for key in keys} <= written
