"""Hidden means absent, on every surface, with the real models and index: the same requests (English and Chinese)
for the same caller against the bundled catalog and against a copy with three extra restricted tools (a
permission only the admin role holds; descriptions sharing the requests' words, in both languages) give
identical answers, to the last printed digit, through the library's search, ``toolrag search --json``, the MCP
server's ``search_tools`` (served over streamable HTTP and called with the SDK's client), ``toolrag report
--json --role`` and the agent adapters' selection. Only what measures time (or, for the report, what a cache
saved) is left out of the comparison. The admin, who sees the extra tools, gets different answers: the
comparison can tell."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from conftest import ASSETS, SAMPLE
from net_support import free_port, listening

from toolrag.adapters import ToolSelector
from toolrag.cli import main

pytestmark = pytest.mark.slow

REQUESTS = ["book a meeting room for 3pm tomorrow", "what meetings do I have tomorrow",
            "submit my taxi receipt for reimbursement", "will it rain in Shanghai tomorrow",
            "帮我订明天下午的会议室", "帮我报销这张出租车发票", "明天上海会下雨吗", "tell me a joke"]
HIDDEN = [
    {"id": "audit.meeting_rooms", "name": "audit_meeting_rooms", "category": "office", "permissions": ["audit.all"],
     "description": "Audit meeting room bookings: who booked which meeting room for tomorrow afternoon at 3pm, and "
                    "the meetings of tomorrow. 审计会议室预订：明天下午谁订了哪间会议室，以及明天的会议。",
     "tags": ["meeting room", "会议室", "audit"],
     "examples": [{"query": "audit the meeting room bookings for tomorrow"}, {"query": "审计明天下午的会议室预订"}]},
    {"id": "audit.expense_receipts", "name": "audit_expense_receipts", "category": "finance",
     "permissions": ["audit.all"],
     "description": "Audit expense reimbursement claims and their taxi receipts and invoices. "
                    "审计报销单、出租车发票和小票。", "tags": ["receipt", "发票", "报销", "audit"],
     "examples": [{"query": "audit the taxi receipts submitted for reimbursement"}, {"query": "审计这张报销发票"}]},
    {"id": "audit.weather_feeds", "name": "audit_weather_feeds", "category": "travel", "permissions": ["audit.all"],
     "description": "Audit the weather forecast feeds: will it rain in Shanghai tomorrow as forecast? "
                    "审计天气预报数据源：明天上海会不会下雨。", "tags": ["weather", "天气", "audit"],
     "examples": [{"query": "audit tomorrow's rain forecast for Shanghai"}, {"query": "审计明天上海的天气预报"}]},
]
#: What measures time, stamps it, or counts what a cache saved (the report's ``encoded``): never compared.
UNCOMPARED = ("timing_ms", "latency_ms", "seconds", "created", "encoded")


def comparable(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: comparable(v) for k, v in data.items() if k not in UNCOMPARED}
    if isinstance(data, list):
        return [comparable(v) for v in data]
    return data


def same(a: Any, b: Any) -> bool:
    return json.dumps(comparable(a), sort_keys=True, ensure_ascii=False) == \
        json.dumps(comparable(b), sort_keys=True, ensure_ascii=False)


@pytest.fixture(scope="module")
def with_hidden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundled catalog with the three restricted tools, the admin role holding their code."""
    root = tmp_path_factory.mktemp("hidden")
    folder = Path(shutil.copytree(SAMPLE, root / "sample_tools"))
    shutil.copytree(ASSETS, root / "assets")
    (folder / "audit.yaml").write_text(yaml.safe_dump(HIDDEN, allow_unicode=True, sort_keys=False), "utf-8")
    meta = yaml.safe_load((folder / "catalog.yaml").read_text("utf-8"))
    meta["roles"]["admin"] = [*meta["roles"]["admin"], "audit.all"]
    (folder / "catalog.yaml").write_text(yaml.safe_dump(meta, allow_unicode=True, sort_keys=False), "utf-8")
    return folder


@pytest.fixture(scope="module")
def hidden_retriever(with_hidden: Path, data_dir: Path, models: Any) -> Any:
    from toolrag.search.retriever import ToolRetriever

    return ToolRetriever.from_catalog(with_hidden, data_dir=data_dir, models=models)


def test_library_search_and_adapter_selection(sample_retriever: Any, hidden_retriever: Any) -> None:
    assert {t["id"] for t in HIDDEN} <= set(hidden_retriever.catalog.ids)
    for role in ("employee", "guest", "finance_manager"):
        plain_selector, hidden_selector = ToolSelector(sample_retriever, role=role), \
            ToolSelector(hidden_retriever, role=role)
        for request in REQUESTS:
            plain = sample_retriever.search(request, role=role).to_json()
            hidden = hidden_retriever.search(request, role=role).to_json()
            assert same(plain, hidden), (role, request)
            a, b = plain_selector.select(request), hidden_selector.select(request)
            assert (a.selected, dict(a.names), a.decision, a.clarification, a.instruction()) == \
                (b.selected, dict(b.names), b.decision, b.clarification, b.instruction()), (role, request)
            assert same(a.result.to_json(), b.result.to_json())
        assert plain_selector.visible_ids() == hidden_selector.visible_ids()
    moved = [r for r in REQUESTS if not same(sample_retriever.search(r, role="admin").to_json(),
                                             hidden_retriever.search(r, role="admin").to_json())]
    assert len(moved) == len(REQUESTS)  # whoever sees the extra tools gets other answers
    assert "audit.meeting_rooms" in hidden_retriever.search(REQUESTS[0], role="admin").ids


def test_cli_search_json(with_hidden: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for request in REQUESTS[::2] + REQUESTS[5:6]:
        printed = []
        for catalog in (SAMPLE, with_hidden):
            assert main(["search", "--catalog", str(catalog), "--data-dir", str(data_dir), "--role", "employee",
                         "--json", request]) == 0
            printed.append(json.loads(capsys.readouterr().out))
        assert same(*printed), request


def test_mcp_search_tools(sample_retriever: Any, hidden_retriever: Any) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from toolrag.serve.app import build_app, serve
    from toolrag.serve.service import ToolService

    answers: dict[str, list[Any]] = {}

    async def ask(name: str, retriever: Any) -> None:
        app = build_app(ToolService(retriever, role="employee", warm=False), name=f"toolrag {name}")
        port = free_port()
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve(app, transport="http", port=port))
            await listening(port)
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_), \
                    ClientSession(read, write) as session:
                await session.initialize()
                answers[name] = [(await session.call_tool("search_tools", {"query": q, "k": 10})).structured_content
                                 for q in REQUESTS]
            tg.cancel_scope.cancel()

    anyio.run(ask, "plain", sample_retriever)
    anyio.run(ask, "hidden", hidden_retriever)
    for request, plain, hidden in zip(REQUESTS, answers["plain"], answers["hidden"], strict=True):
        assert plain is not None and same(plain, hidden), request
        assert "audit." not in json.dumps(hidden)


def test_report_json_as_a_role(with_hidden: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed = []
    for catalog in (SAMPLE, with_hidden):
        assert main(["report", "--catalog", str(catalog), "--data-dir", str(data_dir), "--role", "employee",
                     "--json"]) == 0
        out, err = capsys.readouterr()
        assert "report as role 'employee'" in err and not any(ch.isdigit() for ch in err.split("\n")[0])
        printed.append(json.loads(out))
    plain, hidden = printed
    assert plain["retrievability"]["health"]["n_tools"] > 0
    assert same({**plain, "catalog": None}, {**hidden, "catalog": None})
    assert "audit." not in json.dumps(hidden)
