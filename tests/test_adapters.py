"""The agent-framework adapters through the real frameworks (LangChain, LangGraph and langgraph-bigtool,
LlamaIndex, the OpenAI Agents SDK with a real MCP server over stdio) on the bundled catalog and its real index.

The chat models are each framework's own fake / scripted model (examples/demo_support.py), recording the tools
of every model call: what reached the model is read there, not from toolrag. Checked: only the turn's
selection reaches the model; a restricted tool never does for a role without its permission (every role of
the catalog); a NO_TOOL turn binds none; a CLARIFY turn hands the question over; a follow-up is searched with
its history; a call to a tool outside the selection is never run.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import demo_support  # noqa: E402  (examples/, put on the path above)

from toolrag.adapters import ToolSelector  # noqa: E402
from toolrag.catalog.caller import Caller  # noqa: E402
from toolrag.search.results import Decision  # noqa: E402

pytestmark = pytest.mark.slow
CALLS: list[tuple[str, dict[str, Any]]] = []


def record(tool_id: str, arguments: dict[str, Any]) -> str:
    CALLS.append((tool_id, dict(arguments)))
    return f"{tool_id} ran"


def restricted_requests(catalog: Any) -> list[tuple[str, str]]:
    """(restricted tool id, a request for it): each restricted tool's first example."""
    return [(t.id, t.examples[0].query) for t in catalog if t.permissions and t.examples]


def roles(catalog: Any) -> list[str | None]:
    return [None, *sorted(catalog.roles)]


def function_names(selector: ToolSelector, ids: Any) -> list[str]:
    names = selector.caller.function_names(selector.retriever.catalog)
    return [names[i] for i in ids]


def tool_called(catalog: Any, caller: Caller, name: str) -> Any:
    """The tool a model's call names: by the caller's function names, else by any tool's (so a leak shows)."""
    for who in (caller, Caller.author(catalog, include_deprecated=True)):
        back = {fn: tool_id for tool_id, fn in who.function_names(catalog).items()}
        if name in back:
            return catalog.get(back[name])
    return None


# ------------------------------------------------------------------------------------------------ LangChain

def langchain_agent(selector: ToolSelector, model: Any) -> tuple[Any, Any]:
    from langchain.agents import create_agent

    from toolrag.adapters.langchain import ToolragMiddleware
    from toolrag.adapters.lc_common import catalog_tools

    middleware = ToolragMiddleware(selector)
    every_tool = catalog_tools(ToolSelector(selector.retriever, role="admin"), record)  # the agent holds all
    return create_agent(model, tools=every_tool, middleware=[middleware]), middleware


def test_langchain_binds_exactly_the_selection_and_never_a_restricted_tool(sample_retriever: Any) -> None:
    from langchain_core.messages import HumanMessage

    catalog = sample_retriever.catalog
    restricted = {t.id: set(t.permissions) for t in catalog if t.permissions}
    leaked, reached_restricted = [], 0
    for role in roles(catalog):
        selector = ToolSelector(sample_retriever, role=role)
        codes = set(catalog.role_codes(role)) if role else set()
        model = demo_support.langchain_model()
        agent, middleware = langchain_agent(selector, model)
        for _, request in restricted_requests(catalog):
            before = len(model.calls)
            agent.invoke({"messages": [HumanMessage(request)]})
            turn = middleware.turn_of()
            expected = function_names(selector, turn.selected)
            for names in model.calls[before:]:
                assert names == expected, (role, request)  # exactly the selection, best first
                for name in names:
                    tool = tool_called(catalog, selector.caller, name)
                    if tool.id in restricted:
                        reached_restricted += 1
                        if not restricted[tool.id] <= codes:
                            leaked.append((role, request, tool.id))
    assert leaked == []
    assert reached_restricted > 0  # roles holding the permission do get their restricted tools


def test_langchain_no_tool_clarify_history_and_refused_calls(sample_retriever: Any) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    selector = ToolSelector(sample_retriever, role="employee")
    model = demo_support.langchain_model()
    agent, middleware = langchain_agent(selector, model)

    state = agent.invoke({"messages": [HumanMessage("tell me a joke")]})
    assert middleware.turn_of().decision is Decision.NO_TOOL
    assert model.calls[-1] == [] and state["messages"][-1].content == "(answered without a tool)"

    state = agent.invoke({"messages": [HumanMessage("change the amount on my expense claim")]})
    turn = middleware.turn_of()
    assert turn.decision is Decision.CLARIFY and turn.clarification
    assert model.calls[-1] == function_names(selector, turn.selected)
    assert state["messages"][-1].content == turn.clarification  # the scripted model read it in the system note

    first = agent.invoke({"messages": [HumanMessage("book a meeting room for 3pm tomorrow")]})
    state = agent.invoke({"messages": [*first["messages"], HumanMessage("make it 4pm instead, same room")]})
    turn = middleware.turn_of()
    assert turn.history == ("book a meeting room for 3pm tomorrow",)
    assert "office.meeting_room.book" in turn.selected
    assert selector.select("make it 4pm instead").decision is Decision.NO_TOOL  # alone, it finds nothing
    assert any(m.content.startswith("Done: office.meeting_room.book") for m in state["messages"]
               if isinstance(m, AIMessage))

    # A model that calls a tool it was not given (payroll, hidden from an employee) gets an error, nothing runs.
    from langchain.agents import create_agent

    from toolrag.adapters.langchain import ToolragMiddleware
    from toolrag.adapters.lc_common import catalog_tools

    rogue_replies = iter([AIMessage(content="", tool_calls=[{"name": "approve_payroll_run", "args": {}, "id": "x1"}]),
                          AIMessage(content="ok")])
    rogue = demo_support.langchain_model(lambda messages, tools: next(rogue_replies))
    CALLS.clear()
    agent = create_agent(rogue, tools=catalog_tools(ToolSelector(sample_retriever, role="admin"), record),
                         middleware=[ToolragMiddleware(selector)], system_prompt="be brief")
    state = agent.invoke({"messages": [HumanMessage("book a meeting room for 3pm tomorrow")]})
    assert CALLS == []
    refusal = [m for m in state["messages"] if getattr(m, "status", None) == "error"]
    assert refusal and "was not selected" in refusal[0].content
    assert not any(isinstance(m, SystemMessage) for m in state["messages"])


def test_registry_refuses_tools_the_catalog_does_not_know(sample_retriever: Any) -> None:
    selector = ToolSelector(sample_retriever)
    with pytest.raises(ValueError, match="not in the catalog .*calculator"):
        selector.registry(["book_meeting_room", "calculator"], name_of=str)
    assert selector.registry(["book_meeting_room"], name_of=str) == {"office.meeting_room.book": "book_meeting_room"}


# ------------------------------------------------------------------------------------------------ LangGraph

def test_langgraph_graph_binds_each_turns_selection_with_history(sample_retriever: Any) -> None:
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from toolrag.adapters.langgraph import create_agent
    from toolrag.adapters.lc_common import catalog_tools

    selector = ToolSelector(sample_retriever, role="employee")
    model = demo_support.langchain_model()
    CALLS.clear()
    graph = create_agent(model, catalog_tools(selector, record), selector, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    seen = []
    for request in ("book a meeting room for 3pm tomorrow", "make it 4pm instead, same room",
                    "tell me a joke",
                    "change the amount on my expense claim", "approve this month's payroll"):
        before = len(model.calls)
        state = graph.invoke({"messages": [HumanMessage(request)]}, config)
        seen.append((state["decision"], state["selected_tool_ids"], model.calls[before:],
                     (state["messages"][-1], state["clarification"])))
    (d1, s1, c1, _), (d2, s2, c2, _), (d3, s3, c3, (a3, _)), (d4, s4, c4, (a4, q4)), (_, s5, c5, _) = seen
    assert d1 == d2 == "EXECUTE" and "office.meeting_room.book" in s2  # the follow-up, through its history
    assert all(names == function_names(selector, s1) for names in c1)
    assert all(names == function_names(selector, s2) for names in c2)
    assert d3 == "NO_TOOL" and s3 == [] and c3 == [[]] and a3.content == "(answered without a tool)"
    assert d4 == "CLARIFY" and c4 == [function_names(selector, s4)] and q4 and a4.content == q4
    # payroll is hidden from an employee: never bound, whatever the decision (near its threshold after these turns)
    assert "hr.payroll.approve" not in s5 and c5 == [function_names(selector, s5)]
    assert [tool_id for tool_id, _ in CALLS] == ["office.meeting_room.book", "office.meeting_room.book"]


def test_langgraph_tools_node_refuses_calls_outside_the_selection(sample_retriever: Any) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from toolrag.adapters.langgraph import tools_node
    from toolrag.adapters.lc_common import catalog_tools

    selector = ToolSelector(sample_retriever, role="admin")
    registry = selector.registry(catalog_tools(selector, record), name_of=lambda t: t.name)
    CALLS.clear()
    state = {"messages": [HumanMessage("book a room"), AIMessage(content="", tool_calls=[
        {"name": "approve_payroll_run", "args": {}, "id": "a"}, {"name": "book_meeting_room", "args": {}, "id": "b"}])],
        "selected_tool_ids": ["office.meeting_room.book"], "decision": "EXECUTE", "clarification": None}
    out = tools_node(selector, registry)(state)["messages"]
    assert out[0].status == "error" and "not selected" in out[0].content
    assert [tool_id for tool_id, _ in CALLS] == ["office.meeting_room.book"]


def test_bigtool_retrieve_tools_returns_the_selection(sample_retriever: Any) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph_bigtool import create_agent

    from toolrag.adapters.langgraph import CLARIFY_TOOL, BigtoolRetrieval
    from toolrag.adapters.lc_common import catalog_tools

    selector = ToolSelector(sample_retriever, role="employee")
    retrieval = BigtoolRetrieval(selector)

    def ask_then_answer(messages: list[Any], tools: list[Any]) -> AIMessage:  # retrieve_tools first, then answer
        if isinstance(messages[-1], HumanMessage):
            return AIMessage(content="", tool_calls=[{"name": "retrieve_tools", "id": f"r{len(messages)}",
                                                      "args": {"query": messages[-1].content}}])
        return AIMessage(content=str(messages[-1].content))

    model = demo_support.langchain_model(ask_then_answer)
    agent = create_agent(model, retrieval.registry(catalog_tools(selector, record)),
                         retrieve_tools_function=retrieval.retrieve_tools).compile()
    state = agent.invoke({"messages": [HumanMessage("book a meeting room for 3pm tomorrow")]})
    selected = list(retrieval.turn_of().selected)
    assert state["selected_tool_ids"] == selected and selected[0] == "office.meeting_room.book"
    assert model.calls[-1] == ["retrieve_tools", *function_names(selector, selected)]
    state = agent.invoke({"messages": [HumanMessage("tell me a joke")]})
    assert state["selected_tool_ids"] == [] and model.calls[-1] == ["retrieve_tools"]
    assert retrieval.retrieve_tools("change the amount on my expense claim")[0] == CLARIFY_TOOL
    registry = retrieval.registry(catalog_tools(selector, record))
    assert registry[CLARIFY_TOOL].invoke({}) == retrieval.turn_of().clarification
    tool_message = state["messages"][2]
    assert isinstance(tool_message, ToolMessage) and tool_message.content == "Available tools: []"


# ----------------------------------------------------------------------------------------------- LlamaIndex

def test_llamaindex_function_agent_gets_only_the_selection(sample_retriever: Any) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.workflow import Context

    from toolrag.adapters.llamaindex import CLARIFY_TOOL, ToolragObjectRetriever, catalog_tools

    async def conversation(role: str | None, requests: list[str]) -> list[tuple[Any, list[list[str]], str]]:
        selector = ToolSelector(sample_retriever, role=role)
        llm = demo_support.llamaindex_model()
        every = catalog_tools(ToolSelector(sample_retriever, role="admin"), record)
        retriever = ToolragObjectRetriever(selector, every)
        agent = FunctionAgent(tool_retriever=retriever, llm=llm, streaming=False)
        context = Context(agent)
        out = []
        for request in requests:
            before = len(llm.calls)
            answer = await agent.run(user_msg=request, ctx=context)
            out.append((retriever.turn_of(await retriever.conversation_of(context)), llm.calls[before:], str(answer)))
        return out

    CALLS.clear()
    requests = ["book a meeting room for 3pm tomorrow", "make it 4pm instead, same room",
                "tell me a joke",
                "change the amount on my expense claim", "approve this month's payroll"]
    turns = asyncio.run(conversation("employee", requests))
    selector = ToolSelector(sample_retriever, role="employee")
    (t1, c1, _), (t2, c2, _), (t3, c3, a3), (t4, c4, a4), (t5, c5, _) = turns
    assert all(names == function_names(selector, t1.selected) for names in c1)
    assert all(names == function_names(selector, t2.selected) for names in c2)
    assert t2.history == ("book a meeting room for 3pm tomorrow",) and "office.meeting_room.book" in t2.selected
    assert t3.decision is Decision.NO_TOOL and c3 == [[]] and a3 == "(answered without a tool)"
    assert t4.decision is Decision.CLARIFY and c4[0] == [CLARIFY_TOOL, *function_names(selector, t4.selected)]
    assert a4 == t4.clarification
    assert "hr.payroll.approve" not in t5.selected  # hidden from an employee, whatever the decision
    assert c5 == [[]] if t5.decision is Decision.NO_TOOL else c5[0] == [CLARIFY_TOOL, *function_names(selector,
                                                                                                     t5.selected)]
    assert {tool_id for tool_id, _ in CALLS} == {"office.meeting_room.book"}

    # no role sees a restricted tool it lacks, through the agent
    catalog = sample_retriever.catalog
    for role in roles(catalog):
        codes = set(catalog.role_codes(role)) if role else set()
        for _, calls, _ in asyncio.run(conversation(role, [r for _, r in restricted_requests(catalog)][:6])):
            for names in calls:
                for name in names:
                    tool = tool_called(catalog, Caller.of(catalog, role=role), name)
                    assert tool is None or set(tool.permissions) <= codes, (role, name)


def test_llamaindex_refuses_a_tool_lookup_outside_the_selection(sample_retriever: Any) -> None:
    from toolrag.adapters.llamaindex import ToolragObjectRetriever, catalog_tools

    selector = ToolSelector(sample_retriever, role="admin")
    retriever = ToolragObjectRetriever(selector, catalog_tools(selector, record))
    first = retriever.retrieve("book a meeting room for 3pm tomorrow")
    assert [t.metadata.name for t in first] == function_names(selector, retriever.turn_of().selected)
    assert [t.metadata.name for t in retriever.retrieve("book_meeting_room")] == ["book_meeting_room"]
    assert retriever.retrieve("approve_payroll_run") == []  # not selected this turn: the agent says "not found"
    nodes = retriever.retriever.retrieve("book a meeting room for 3pm tomorrow")
    assert [n.node.id_ for n in nodes] == list(retriever.turn_of().selected)


# ------------------------------------------------------------------------------------------- OpenAI Agents

def test_openai_agents_mcp_tool_filter_over_a_real_stdio_server(sample_retriever: Any) -> None:
    from agents import Agent, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio

    from toolrag.adapters.openai_agents import ToolragToolFilter

    set_tracing_disabled(True)
    catalog = sample_retriever.catalog

    async def conversation(role: str | None, requests: list[str]) -> list[tuple[Any, list[list[str]], Any]]:
        tool_filter = ToolragToolFilter(ToolSelector(sample_retriever, role=role))
        model = demo_support.agents_model()
        params = {"command": sys.executable, "args": [str(ROOT / "examples" / "catalog_mcp_server.py"),
                                                      "--catalog", str(ROOT / "sample_tools")]}
        out = []
        async with MCPServerStdio(params, tool_filter=tool_filter, cache_tools_list=True,
                                  client_session_timeout_seconds=60) as server:
            agent = Agent(name="a", instructions=tool_filter.instructions("base"), mcp_servers=[server], model=model)
            items: list[Any] = []
            for request in requests:
                before = len(model.calls)
                result = await Runner.run(agent, [*items, {"role": "user", "content": request}])
                items = result.to_input_list()
                calls = model.calls[before:]
                out.append((tool_filter.turn_of(result.context_wrapper),
                            [sorted(t.name for t in c.tools) for c in calls],
                            (calls[0].system_instructions, result.final_output)))
        return out

    turns = asyncio.run(conversation("employee", ["book a meeting room for 3pm tomorrow",
                                                  "make it 4pm instead, same room", "tell me a joke",
                                                  "change the amount on my expense claim"]))
    (t1, c1, _), (t2, c2, _), (t3, c3, (i3, a3)), (t4, c4, (i4, a4)) = turns
    assert all(names == sorted(t1.names.values()) for names in c1) and len(c1) == 2  # called, then answered
    assert all(names == sorted(t2.names.values()) for names in c2)
    assert t2.history == ("book a meeting room for 3pm tomorrow",) and "office.meeting_room.book" in t2.selected
    assert t3.decision is Decision.NO_TOOL and c3 == [[]] and "answer directly" in i3
    assert a3 == "(answered without a tool)"
    assert t4.decision is Decision.CLARIFY and c4 == [sorted(t4.names.values())]
    assert t4.clarification in i4 and a4 == t4.clarification

    requests = [r for _, r in restricted_requests(catalog)]
    for role in (None, "employee", "it_admin"):
        codes = set(catalog.role_codes(role)) if role else set()
        for _, calls, _ in asyncio.run(conversation(role, requests[:5])):
            for names in calls:
                assert all(set(catalog.get(selector_id(catalog, n)).permissions) <= codes for n in names), role


def selector_id(catalog: Any, name: str) -> str:
    return next(t.id for t in catalog if t.name == name)


# ------------------------------------------------------------------------------------------------- examples

@pytest.mark.parametrize("example", ["langgraph_agent.py", "llamaindex_agent.py", "langchain_agent.py",
                                     "openai_agents_mcp.py"])
def test_example_runs_offline(example: str, data_dir: Path, sample_retriever: Any) -> None:
    """Each README example exits 0 and prints, per turn, the decision and the tools of each model call."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    run = subprocess.run([sys.executable, str(ROOT / "examples" / example), "--data-dir", str(data_dir)],
                         capture_output=True, encoding="utf-8", env=env, timeout=240, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert out.count("turn ") == len(demo_support.TURNS)
    assert "toolrag: NO_TOOL: none" in out and "model call 1: tools []" in out
    assert "toolrag: CLARIFY:" in out
    assert "approve_payroll_run" not in out  # the employee never sees payroll


# ------------------------------------------------------------------------------ one state per conversation

class _Asking:
    """The retriever's decision, made to ask about every request with a question naming it: what is checked here
    is whose question an adapter hands over, whatever the shipped decision model says about these requests."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def bank_loaded(self) -> bool:
        return bool(self.inner.bank_loaded)

    def bank(self) -> Any:
        return self.inner.bank()

    def decide(self, snap: Any, **search: Any) -> Any:
        import dataclasses

        outcome, view = self.inner.decide(snap, **search)
        return dataclasses.replace(outcome, decision=Decision.CLARIFY,
                                   clarification=f"which tool for {search['query']!r}?",
                                   selected=tuple(range(min(2, search["shown"])))), view


def asking(retriever: Any) -> Any:
    """A retriever over the same index whose every decision is CLARIFY (:class:`_Asking`)."""
    from toolrag.search.retriever import ToolRetriever

    return ToolRetriever(retriever.index, decider=_Asking(retriever.decider))  # type: ignore[arg-type]


FIRST, SECOND, LATER = "book a meeting room for 3pm tomorrow", "submit my taxi receipt for reimbursement", \
    "make it 4pm instead"


def test_bigtool_clarification_answers_the_question_of_its_own_conversation(sample_retriever: Any) -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph_bigtool import create_agent

    from toolrag.adapters.langgraph import CLARIFY_TOOL, BigtoolRetrieval
    from toolrag.adapters.lc_common import catalog_tools

    selector = ToolSelector(asking(sample_retriever), role="employee")
    retrieval = BigtoolRetrieval(selector)

    def retrieve_then_answer(messages: list[Any], tools: list[Any]) -> AIMessage:
        if isinstance(messages[-1], HumanMessage):
            return AIMessage(content="", tool_calls=[{"name": "retrieve_tools", "id": f"r{len(messages)}",
                                                      "args": {"query": messages[-1].content}}])
        return AIMessage(content=str(messages[-1].content))

    model = demo_support.langchain_model(retrieve_then_answer)
    registry = retrieval.registry(catalog_tools(selector, record))
    agent = create_agent(model, registry, retrieve_tools_function=retrieval.retrieve_tools).compile(
        checkpointer=InMemorySaver())
    a, b = ({"configurable": {"thread_id": thread}} for thread in ("a", "b"))
    state_a = agent.invoke({"messages": [HumanMessage(FIRST)]}, a)
    state_b = agent.invoke({"messages": [HumanMessage(SECOND)]}, b)  # the other conversation searched last
    assert state_a["selected_tool_ids"][0] == state_b["selected_tool_ids"][0] == CLARIFY_TOOL
    # bigtool's own tools node cannot run a registry tool with langgraph 1.2 (it calls ToolNode.inject_tool_args,
    # which is gone), so the clarification tool is invoked as a tools node invokes it: with the run's config.
    assert registry[CLARIFY_TOOL].invoke({}, a) == f"which tool for {FIRST!r}?"
    assert registry[CLARIFY_TOOL].invoke({}, b) == f"which tool for {SECOND!r}?"
    assert retrieval.turn_of("a").query == FIRST and retrieval.turn_of("b").query == SECOND
    assert registry[CLARIFY_TOOL].invoke({}, {"configurable": {"thread_id": "c"}}) == \
        "Ask the user what exactly they want done."  # a conversation that never searched has no question


def test_llamaindex_conversations_keep_their_own_history_and_question(sample_retriever: Any) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.workflow import Context

    from toolrag.adapters.llamaindex import ToolragObjectRetriever, catalog_tools

    selector = ToolSelector(asking(sample_retriever), role="employee")
    tools = ToolragObjectRetriever(selector, catalog_tools(selector, record))
    llm = demo_support.llamaindex_model()
    agent = FunctionAgent(tool_retriever=tools, llm=llm, streaming=False)
    a, b = Context(agent), Context(agent)

    async def conversations() -> tuple[list[str], Any, Any]:
        # two conversations at once on one agent and one retriever, then the first one's follow-up
        first = await asyncio.gather(agent.run(user_msg=FIRST, ctx=a), agent.run(user_msg=SECOND, ctx=b))
        later = await agent.run(user_msg=LATER, ctx=a)
        return [*map(str, first), str(later)], await tools.conversation_of(a), await tools.conversation_of(b)

    answers, key_a, key_b = asyncio.run(conversations())
    assert key_a != key_b
    # each clarification tool returned its own conversation's question, which the scripted model asked
    assert answers == [f"which tool for {FIRST!r}?", f"which tool for {SECOND!r}?", f"which tool for {LATER!r}?"]
    assert tools.turn_of(key_a).history == (FIRST,)  # not the other conversation's request
    assert tools.turn_of(key_b).query == SECOND and tools.turn_of(key_b).history == ()

    async def named() -> str:
        with tools.conversation("mine"):
            return str(await agent.run(user_msg=SECOND, ctx=Context(agent)))

    assert asyncio.run(named()) == f"which tool for {SECOND!r}?" and tools.turn_of("mine").query == SECOND


def test_langchain_middleware_keeps_each_threads_turn(sample_retriever: Any) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from toolrag.adapters.langchain import ToolragMiddleware
    from toolrag.adapters.lc_common import catalog_tools

    selector = ToolSelector(asking(sample_retriever), role="employee")
    middleware = ToolragMiddleware(selector)
    agent = create_agent(demo_support.langchain_model(), tools=catalog_tools(selector, record),
                         middleware=[middleware], checkpointer=InMemorySaver())
    a, b = ({"configurable": {"thread_id": thread}} for thread in ("a", "b"))
    answer_a = agent.invoke({"messages": [HumanMessage(FIRST)]}, a)["messages"][-1].content
    answer_b = agent.invoke({"messages": [HumanMessage(SECOND)]}, b)["messages"][-1].content
    answer_later = agent.invoke({"messages": [HumanMessage(LATER)]}, a)["messages"][-1].content
    assert (answer_a, answer_b, answer_later) == tuple(f"which tool for {q!r}?" for q in (FIRST, SECOND, LATER))
    assert middleware.turn_of("a").query == LATER and middleware.turn_of("a").history == (FIRST,)
    assert middleware.turn_of("b").query == SECOND and middleware.turn_of() is None


def test_a_tool_restricted_and_reloaded_never_comes_back_from_memory(tmp_path: Path, models: Any,
                                                                    data_dir: Path) -> None:
    import shutil

    from toolrag.catalog.loader import load_catalog
    from toolrag.search.retriever import ToolRetriever

    folder = tmp_path / "sample_tools"
    shutil.copytree(ROOT / "sample_tools", folder)
    shutil.copytree(ROOT / "assets", tmp_path / "assets")
    retriever = ToolRetriever.from_catalog(folder, data_dir=data_dir, models=models)
    selector = ToolSelector(retriever, role="employee")
    assert "office.meeting_room.book" in selector.select(FIRST).selected
    office = folder / "office.yaml"
    text = office.read_text(encoding="utf-8")
    start = text.index("- id: office.meeting_room.book\n")
    at = text.index("  permissions: []\n", start)
    assert "- id:" not in text[start + 1:at]  # the tool's own permissions
    office.write_text(text[:at] + "  permissions: [room.admin]\n" + text[at + len("  permissions: []\n"):],
                      encoding="utf-8")
    retriever.reload(load_catalog(folder))
    turn = selector.select(FIRST)  # the same request to the same selector
    assert "office.meeting_room.book" not in turn.selected and "office.meeting_room.book" not in turn.result.ids
    assert selector.resolve("book_meeting_room") is None
    assert "office.meeting_room.book" not in selector.visible_ids()
    admin = ToolSelector(retriever, permissions=["room.admin"])
    assert admin.resolve("book_meeting_room") == "office.meeting_room.book"
