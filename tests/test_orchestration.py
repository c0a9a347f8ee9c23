"""The orchestration in the quick tier: ``ToolRetriever.search``, ``ToolService`` (search, resolve, call with a
fake upstream) and ``ToolSelector``, over an in-memory index with stub encoders (tests/stub_index.py): the real
search, fusion, decision, result assembly and permission logic, no Chroma and no model. The same behaviour is
tested end to end with the real models in test_retriever.py, test_mcp.py, test_adapters.py and
test_hidden_tools.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from stub_index import StubIndex, stub_retriever

from toolrag.adapters.selection import CLARIFY_TOOL, ToolSelector, catalog_specs, note, refusal
from toolrag.audit import AuditLog
from toolrag.catalog.caller import Caller
from toolrag.catalog.loader import load_records
from toolrag.catalog.profile import Catalog
from toolrag.catalog.report import LoadMode
from toolrag.errors import CatalogError, QueryError, ToolNotFound
from toolrag.search.results import Decision
from toolrag.serve.service import CallRefused, ToolService
from toolrag.serve.upstream import UpstreamError

ROLES = {"guest": (), "employee": ("expense.submit",), "admin": ("expense.submit", "payroll.approve", "audit.all")}
TOOLS: list[dict[str, Any]] = [
    {"id": "office.room.book", "name": "book_meeting_room", "category": "office",
     "description": "Book a meeting room for a time slot; 预订会议室。",
     "examples": [{"query": "book a meeting room for 3pm"}, {"query": "帮我订明天下午的会议室"}]},
    {"id": "office.calendar.events", "name": "list_calendar_events", "category": "office",
     "description": "List the meetings in your calendar for a day; 查看日程和会议。",
     "examples": [{"query": "what meetings do I have tomorrow"}, {"query": "明天有哪些会议"}]},
    {"id": "finance.expense.submit", "name": "submit_expense", "category": "finance",
     "permissions": ["expense.submit"], "description": "Submit an expense claim with a receipt; 提交报销单和发票。",
     "examples": [{"query": "submit my taxi receipt"}, {"query": "帮我报销这张发票"}]},
    {"id": "hr.payroll.approve", "name": "approve_payroll", "category": "hr", "mutation": True,
     "permissions": ["payroll.approve"], "description": "Approve the monthly payroll run; 批准工资发放。",
     "examples": [{"query": "approve this month's payroll"}, {"query": "批准本月工资"}]},
    {"id": "travel.weather", "name": "weather_forecast", "category": "travel",
     "description": "Weather forecast for a city for the next days; 天气预报。",
     "examples": [{"query": "will it rain in Paris tomorrow"}, {"query": "明天上海天气"}]},
]
#: Restricted tools sharing the requests' words (a code only admin holds): what the employee must never feel.
HIDDEN: list[dict[str, Any]] = [
    {"id": "audit.meetings", "name": "audit_meetings", "category": "office", "permissions": ["audit.all"],
     "description": "Audit every meeting room booking and the meetings of tomorrow; 审计会议室预订和明天的会议。",
     "examples": [{"query": "book a meeting room audit for tomorrow"}, {"query": "审计明天的会议室"}]},
    {"id": "audit.expenses", "name": "audit_expenses", "category": "finance", "permissions": ["audit.all"],
     "description": "Audit expense receipts and taxi claims; 审计报销发票。",
     "examples": [{"query": "audit my taxi receipt"}, {"query": "审计这张发票"}]},
    {"id": "audit.weather", "name": "audit_weather_feeds", "category": "travel", "permissions": ["audit.all"],
     "description": "Audit the weather forecast feeds of every city; 审计天气预报。",
     "examples": [{"query": "audit the rain forecast for Paris"}]},
]
REQUESTS = ["book a meeting room for 3pm tomorrow", "what meetings do I have tomorrow", "submit my taxi receipt",
            "帮我订明天下午的会议室", "明天有哪些会议", "帮我报销这张发票", "will it rain in Paris tomorrow",
            "tell me a joke"]


def catalog(extra: list[dict[str, Any]] = ()) -> Catalog:  # type: ignore[assignment]
    return load_records([*TOOLS, *extra], name="orchestration", where="test", mode=LoadMode.STRICT, roles=ROLES)


@pytest.fixture(scope="module")
def retriever() -> Any:
    return stub_retriever(catalog())


@pytest.fixture(scope="module")
def with_hidden() -> Any:
    return stub_retriever(catalog(HIDDEN))


def without_timing(data: Any) -> Any:
    """A result's (or report's) JSON without what measures or stamps time (the rest must match to the last
    digit)."""
    if isinstance(data, dict):
        return {k: without_timing(v) for k, v in data.items()
                if k not in ("timing_ms", "seconds", "latency_ms", "created")}
    if isinstance(data, list):
        return [without_timing(v) for v in data]
    return data


# ---------------------------------------------------------------------------------------------- search

def test_search_ranks_filters_and_decides_over_the_stub_index(retriever: Any) -> None:
    result = retriever.search("book a meeting room for 3pm tomorrow", role="employee")
    assert result.ids[0] == "office.room.book" and result.decided_by is not None
    assert "hr.payroll.approve" not in result.ids  # the employee lacks payroll.approve
    admin = retriever.search("approve this month's payroll", role="admin")
    assert admin.ids[0] == "hr.payroll.approve"
    only = retriever.search("book a meeting room", role="admin", categories=["travel"])
    assert set(only.ids) == {"travel.weather"} and only.filtered_out == 4
    with pytest.raises(QueryError, match="history must be a list"):
        retriever.search("book a room", history="not a list")
    with pytest.raises(CatalogError, match="emplyee"):
        retriever.search("book a room", role="emplyee")
    caller = Caller.of(retriever.catalog, role="employee")
    assert without_timing(retriever.search("submit my taxi receipt", caller=caller).to_json()) == \
        without_timing(retriever.search("submit my taxi receipt", role="employee").to_json())


def test_a_search_reads_the_snapshot_it_is_given(retriever: Any) -> None:
    before = retriever.snapshot
    fresh = stub_retriever(catalog())
    fresh.reload(Catalog(tuple(t for t in fresh.catalog.tools if t.id != "office.room.book"), "orchestration",
                         roles=ROLES))
    assert "office.room.book" not in fresh.search("book a meeting room", role="admin").ids
    old = fresh.search("book a meeting room", role="admin", snapshot=before)
    assert old.ids[0] == "office.room.book"


@pytest.mark.parametrize("role", ["guest", "employee"])
def test_hidden_tools_change_nothing_a_caller_gets(retriever: Any, with_hidden: Any, role: str) -> None:
    """Three restricted tools sharing the requests' words (English and Chinese): for a caller who cannot see them,
    every figure of every result is what the catalog without them gives, to the last digit."""
    for request in REQUESTS:
        plain = without_timing(retriever.search(request, role=role).to_json())
        hidden = without_timing(with_hidden.search(request, role=role).to_json())
        assert json.dumps(hidden, sort_keys=True) == json.dumps(plain, sort_keys=True), request
    seen = with_hidden.search("book a meeting room audit for tomorrow", role="admin")
    assert "audit.meetings" in seen.ids  # the extra tools are found by whoever may see them
    moved = [r for r in REQUESTS if without_timing(retriever.search(r, role="admin").to_json())
             != without_timing(with_hidden.search(r, role="admin").to_json())]
    assert len(moved) == len(REQUESTS)  # and they move every figure of those who see them: the test can tell


# --------------------------------------------------------------------------------------------- service

class FakeUpstream:
    """What ToolService reads of a gateway: routes, upstream specs, the servers down, and the call itself."""

    def __init__(self, catalog: Catalog, *, fail: bool = False) -> None:
        from toolrag.serve.gateway import Route

        self.routes = {t.id: Route("files", t.name) for t in catalog.tools}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail = fail
        self.upstreams: dict[str, Any] = {}

    def unavailable_to_callers(self) -> dict[str, str]:
        return {}

    async def call(self, tool_id: str, arguments: dict[str, Any]) -> Any:
        if self.fail:
            raise UpstreamError("upstream server 'files' is unavailable: gone")
        self.calls.append((tool_id, dict(arguments)))
        return {"ran": tool_id}


def test_tool_service_search_answers_for_the_callers_role(retriever: Any) -> None:
    service = ToolService(retriever, warm=False)
    answer = service.search("approve this month's payroll", k=3, role="admin")
    assert answer["tools"][0]["id"] == "hr.payroll.approve" and answer["tools"][0]["mutation"] is True
    assert set(answer) >= {"decision", "decided_by", "tools", "selected"}
    employee = service.search("approve this month's payroll", k=50, role="employee")
    assert "hr.payroll.approve" not in json.dumps(employee)
    for bad, message in ((0, "k is 0; expected an integer from 1 to 50"), (51, "k is 51; expected an integer"),
                         ("five", "k is a string 'five'; expected an integer from 1 to 50"),
                         (True, "k is a boolean True; expected an integer")):
        with pytest.raises(QueryError, match=message):
            service.search("x", k=bad)
    with pytest.raises(CatalogError, match="emplyee"):
        ToolService(retriever, role="emplyee", warm=False)


def test_tool_service_resolves_one_way_for_every_caller() -> None:
    twins = [{"id": "files/weather.current", "name": "weather.current", "category": "files",
              "description": "Current weather in a city."},
             {"id": "other/weather.current", "name": "weather.current", "category": "other",
              "permissions": ["other.use"], "description": "Current weather in a city, from another server."}]
    cat = load_records([*TOOLS, *twins], name="gw", where="test", mode=LoadMode.STRICT,
                       roles={**ROLES, "admin": (*ROLES["admin"], "other.use")})
    service = ToolService(stub_retriever(cat), warm=False)
    reader, admin = service.caller(None), service.caller("admin")
    # A bare name two tools answer to is refused for every caller (never routed by role), naming only the ids
    # that caller may use; each id works.
    with pytest.raises(CallRefused, match="call 'weather.current' by its id") as refused_reader:
        service.resolve("weather.current", reader)
    assert "files/weather.current" in str(refused_reader.value) and "other/" not in str(refused_reader.value)
    with pytest.raises(CallRefused, match="files/weather.current, other/weather.current"):
        service.resolve("weather.current", admin)
    assert service.resolve("files/weather.current", reader).id == "files/weather.current"
    assert service.resolve("other/weather.current", admin).id == "other/weather.current"
    # Hidden and unknown: the same words.
    with pytest.raises(CallRefused) as hidden:
        service.resolve("other/weather.current", reader)
    with pytest.raises(CallRefused) as unknown:
        service.resolve("no/such.tool", reader)
    assert str(hidden.value).replace("other/weather.current", "X") == str(unknown.value).replace("no/such.tool", "X")
    # function names and original names resolve when only one tool has them
    assert service.resolve("book_meeting_room", reader).id == "office.room.book"
    with pytest.raises(CallRefused):
        service.resolve("approve_payroll", reader)  # hidden from a caller without payroll.approve
    with pytest.raises(ToolNotFound):
        reader.resolve(cat, "approve_payroll")


def test_tool_service_call_checks_forwards_and_audits(tmp_path: Path) -> None:
    cat = catalog()
    retriever = stub_retriever(cat)
    retriever.audit = AuditLog(tmp_path / "audit.jsonl")
    upstream = FakeUpstream(cat)
    service = ToolService(retriever, gateway=upstream, warm=False)  # type: ignore[arg-type]

    async def calls() -> list[Any]:
        out: list[Any] = []
        for tool, arguments, role in (("office.room.book", {"room": "3F"}, None),
                                      ("book_meeting_room", {}, "employee"),
                                      ("hr.payroll.approve", {}, "employee"),
                                      ("no.such", {}, "admin"),
                                      ("hr.payroll.approve", "yes", "admin"),
                                      (7, {}, "admin")):
            try:
                out.append(await service.call(tool, arguments, role=role))  # type: ignore[arg-type]
            except Exception as exc:  # each outcome is checked below
                out.append(exc)
        return out

    ok, by_name, hidden, unknown, bad_arguments, bad_tool = asyncio.run(calls())
    assert ok == {"ran": "office.room.book"} and by_name == {"ran": "office.room.book"}
    assert upstream.calls == [("office.room.book", {"room": "3F"}), ("office.room.book", {})]
    assert isinstance(hidden, CallRefused) and isinstance(unknown, CallRefused)
    assert str(hidden).replace("hr.payroll.approve", "X") == str(unknown).replace("no.such", "X")
    assert isinstance(bad_arguments, QueryError) and "arguments is a string 'yes'" in str(bad_arguments)
    assert isinstance(bad_tool, QueryError) and "tool is an integer 7" in str(bad_tool)
    down = ToolService(stub_retriever(cat), gateway=FakeUpstream(cat, fail=True), warm=False)  # type: ignore[arg-type]
    with pytest.raises(UpstreamError, match="unavailable"):
        asyncio.run(down.call("office.room.book", {}, role=None))
    retriever.audit.flush()
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["tool"], r["outcome"]) for r in records if r["kind"] == "call"] == [
        ("office.room.book", "ok"), ("office.room.book", "ok"), ("hr.payroll.approve", "refused"),
        ("no.such", "refused"), ("hr.payroll.approve", "invalid"), (7, "invalid")]


# -------------------------------------------------------------------------------------------- selector

def test_selector_remembers_turns_per_snapshot_and_caller() -> None:
    retriever = stub_retriever(catalog())
    employee = ToolSelector(retriever, role="employee")
    first = employee.select("submit my taxi receipt")
    assert employee.select("submit my taxi receipt") is first  # asked again: from memory
    assert first.selected[:1] == ("finance.expense.submit",) or first.decision is not Decision.EXECUTE
    assert "finance.expense.submit" in first.result.ids
    guest = employee.with_role("guest")
    assert "finance.expense.submit" not in guest.select("submit my taxi receipt").result.ids
    # The tool restricted in the catalog and reloaded: the same request to the same selector never brings it back.
    restricted = [dict(t, permissions=["payroll.approve"]) if t["id"] == "finance.expense.submit" else t
                  for t in TOOLS]
    retriever.reload(load_records(restricted, name="orchestration", where="test", mode=LoadMode.STRICT, roles=ROLES))
    again = employee.select("submit my taxi receipt")
    assert again is not first and "finance.expense.submit" not in again.result.ids
    assert employee.resolve("submit_expense") is None and "finance.expense.submit" not in employee.visible_ids()
    assert not employee.allows(first, "finance.expense.submit")  # an old turn cannot authorise it either


def test_selector_resolves_through_its_caller_and_the_registry_through_the_author(retriever: Any) -> None:
    employee = ToolSelector(retriever, role="employee")
    assert employee.resolve("book_meeting_room") == "office.room.book"
    assert employee.resolve("office.room.book") == "office.room.book"
    assert employee.resolve("approve_payroll") is None and employee.resolve("made_up") is None
    assert employee.visible_ids() == ["office.room.book", "office.calendar.events", "finance.expense.submit",
                                      "travel.weather"]
    assert [s.id for s in catalog_specs(employee)] == employee.visible_ids()
    # an agent may hold every tool: the registry knows them all; only the selection reaches the model
    registry = employee.registry(["approve_payroll", "submit_expense"], name_of=str)
    assert registry == {"hr.payroll.approve": "approve_payroll", "finance.expense.submit": "submit_expense"}
    with pytest.raises(ValueError, match="calculator"):
        employee.registry(["calculator"], name_of=str)
    turn = employee.select("book a meeting room for 3pm tomorrow")
    assert all(employee.allows(turn, name) for name in turn.selected)
    assert not employee.allows(turn, "approve_payroll")
    with pytest.raises(QueryError, match="no user message"):
        employee.select_conversation(["", "  "])
    with pytest.raises(CatalogError, match="emplyee"):
        ToolSelector(retriever, role="emplyee")


def test_the_adapters_words_come_from_one_place() -> None:
    assert CLARIFY_TOOL == "ask_user_to_clarify"
    assert note("answer directly") == "[toolrag] answer directly" and note("", "base") == "base"
    assert note("x", "base") == "base\n\n[toolrag] x"
    assert refusal("f") == "Error: 'f' was not selected for this request; call only the tools you were given."
    # every adapter module uses them and defines none of its own
    adapters = Path(__file__).resolve().parent.parent / "toolrag" / "adapters"
    for module in ("langgraph.py", "llamaindex.py", "langchain.py", "openai_agents.py", "lc_common.py"):
        text = (adapters / module).read_text(encoding="utf-8")
        assert '"[toolrag]' not in text and "was not selected for this request" not in text, module
        assert '= "ask_user_to_clarify"' not in text and "what exactly they want done" not in text, module
        assert "last_turn" not in text, module


def test_stub_index_offers_what_the_retriever_reads() -> None:
    index = StubIndex(catalog())
    mask = index.snapshot.allowed(Caller.of(index.catalog, role="employee"))[0]
    rows = index.query_rows("dense", index.snapshot.vectors["dense"][0], k=2, mask=mask,
                            caller=Caller.of(index.catalog, role="employee"))
    assert 0 in rows and all(mask[rows])
    assert index.update(catalog(HIDDEN)) == len(TOOLS) + len(HIDDEN) and len(index.catalog) == 8


# ------------------------------------------------------------------------------------------- upstreams

class Group(Exception):
    """An exception group as a task group raises one (``exceptions``; ExceptionGroup is not built in on 3.10)."""

    def __init__(self, *inner: BaseException) -> None:
        super().__init__("task group")
        self.exceptions = inner


def test_upstream_errors_are_mapped_in_one_place() -> None:
    from mcp import MCPError

    from toolrag.serve.upstream import upstream_errors

    def mapped(exc: BaseException, **kwargs: Any) -> UpstreamError:
        with pytest.raises(UpstreamError) as caught, upstream_errors("MCP server 'files'", "tools/call 'x'", **kwargs):
            raise exc
        return caught.value

    timeout = mapped(TimeoutError(), timeout=3)
    assert str(timeout) == "MCP server 'files' did not answer tools/call 'x' within 3 s" and not timeout.lost
    answered = mapped(MCPError(-32602, "bad arguments"))
    assert str(answered) == "MCP server 'files' answered tools/call 'x' with an error: bad arguments"
    assert not answered.lost
    closed = mapped(MCPError(-32000, "Connection closed"))
    assert closed.lost and closed.cause == "connection closed (Connection closed)"
    dropped = mapped(Group(ConnectionResetError("peer reset")), detail=lambda: "; more")
    assert dropped.lost and str(dropped) == ("MCP server 'files' failed during tools/call 'x': ConnectionResetError: "
                                             "peer reset; more")
    original = UpstreamError("as it was")
    assert mapped(Group(original)) is original and mapped(original) is original
    with pytest.raises(KeyboardInterrupt), upstream_errors("MCP server 'files'", "x"):
        raise KeyboardInterrupt  # not an error of the exchange: passes untouched
