"""LangGraph: toolrag as the tool selection of a graph (``pip install 'toolrag[langgraph]'``).

Two ways in. A plain LangGraph graph: :func:`create_agent` builds ``select_tools -> agent -> tools -> agent``
where ``select_tools`` (:func:`select_tools_node`) searches the last human message with the earlier ones as
history and the agent node binds exactly that turn's selection (:func:`bind_selected`): no tool on a NO_TOOL
turn, the look-alikes and the question to ask on a CLARIFY turn (a system message), and the tools node runs
only calls to tools of the turn's selection. Build your own graph from the same three pieces if you need more
nodes. Or langgraph-bigtool: :class:`BigtoolRetrieval` gives ``create_agent(llm, registry,
retrieve_tools_function=...)`` a ``retrieve_tools`` backed by toolrag and the registry it indexes by catalog
id (bigtool keeps what earlier turns retrieved bound; its model writes the query itself). Its clarification
tool answers the question of its own conversation (the run's thread id, :func:`toolrag.adapters.lc_common.
conversation_id`)::

    selector = ToolSelector(retriever, role="employee")
    graph = create_agent(llm, tools, selector, checkpointer=InMemorySaver())
    graph.invoke({"messages": [("user", "book a room for 3pm")]}, {"configurable": {"thread_id": "1"}})
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from toolrag.adapters.lc_common import conversation_id, human_texts
from toolrag.adapters.selection import (
    CLARIFY_DESCRIPTION,
    CLARIFY_TOOL,
    FALLBACK_QUESTION,
    Conversations,
    ToolSelector,
    Turn,
    instruction_for,
    missing_extra,
    note,
    refusal,
)
from toolrag.search.results import Decision

__all__ = ["CLARIFY_TOOL", "BigtoolRetrieval", "ToolragState", "bind_selected", "create_agent", "model_messages",
           "select_tools_node", "tools_node"]

try:
    from langchain_core.messages import SystemMessage, ToolMessage
    from langchain_core.tools import StructuredTool
    from langgraph.graph import END, START, MessagesState, StateGraph
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("langgraph", exc) from exc



class ToolragState(MessagesState):
    """The messages, and this turn's selection (replaced at every turn, never accumulated)."""

    selected_tool_ids: list[str]
    decision: str
    clarification: str | None


def select_tools_node(selector: ToolSelector) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A node that selects this turn's tools: the last human message, the earlier ones as history."""

    def select_tools(state: Mapping[str, Any]) -> dict[str, Any]:
        turn = selector.select_conversation(human_texts(state["messages"]))
        return {"selected_tool_ids": list(turn.selected), "decision": turn.decision.value,
                "clarification": turn.clarification}

    return select_tools


def _turn_of(state: Mapping[str, Any]) -> tuple[list[str], Decision, str | None]:
    return list(state.get("selected_tool_ids") or ()), Decision(state.get("decision") or "NO_TOOL"), \
        state.get("clarification")


def bind_selected(llm: Any, registry: Mapping[str, Any], state: Mapping[str, Any]) -> Any:
    """``llm`` with exactly this turn's selected tools bound (the plain model when none is selected)."""
    ids, decision, _ = _turn_of(state)
    tools = [registry[i] for i in ids if i in registry] if decision is not Decision.NO_TOOL else []
    return llm.bind_tools(tools) if tools else llm


def model_messages(state: Mapping[str, Any], system_prompt: str | None = None) -> list[Any]:
    """The messages the model reads: one system message (``system_prompt`` and what the turn's decision means
    on a NO_TOOL or CLARIFY turn), then the conversation."""
    _, decision, clarification = _turn_of(state)
    turn_note = _note(decision, clarification)
    system = "\n\n".join(t for t in (system_prompt or "", turn_note) if t)
    head = [SystemMessage(content=system)] if system else []
    return head + [m for m in state["messages"] if not isinstance(m, SystemMessage)]


def _note(decision: Decision, clarification: str | None) -> str:
    return note(instruction_for(decision, clarification))


def tools_node(selector: ToolSelector, registry: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A node that runs the last AI message's tool calls, each only when it names a tool of this turn's
    selection; any other call gets an error message instead of running."""

    def run_tools(state: Mapping[str, Any]) -> dict[str, Any]:
        ids, _, _ = _turn_of(state)
        out = []
        for call in getattr(state["messages"][-1], "tool_calls", None) or ():
            tool_id = selector.resolve(call["name"])
            if tool_id is None or tool_id not in ids or tool_id not in registry:
                out.append(ToolMessage(content=refusal(call["name"]), tool_call_id=call["id"], name=call["name"],
                                       status="error"))
                continue
            out.append(registry[tool_id].invoke(call))
        return {"messages": out}

    return run_tools


def create_agent(llm: Any, tools: Sequence[Any], selector: ToolSelector, *, system_prompt: str | None = None,
                 checkpointer: Any = None) -> Any:
    """A compiled LangGraph agent: ``select_tools`` (toolrag) -> ``agent`` (``llm`` with exactly the turn's
    selection bound) -> ``tools`` (only selected tools run) -> ``agent`` ... until the model answers. ``tools``
    are LangChain tools named by catalog id, original or function name (:func:`toolrag.adapters.lc_common.
    catalog_tools` makes them from the catalog). ``checkpointer`` keeps a conversation across invocations."""
    registry = selector.registry(tools, name_of=lambda t: t.name)

    def agent(state: Mapping[str, Any]) -> dict[str, Any]:
        return {"messages": [bind_selected(llm, registry, state).invoke(model_messages(state, system_prompt))]}

    def route(state: Mapping[str, Any]) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END

    builder: Any = StateGraph(ToolragState)
    builder.add_node("select_tools", select_tools_node(selector))
    builder.add_node("agent", agent)
    builder.add_node("tools", tools_node(selector, registry))
    builder.add_edge(START, "select_tools")
    builder.add_edge("select_tools", "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


class BigtoolRetrieval:
    """toolrag behind langgraph-bigtool: ``create_agent(llm, retrieval.registry(tools),
    retrieve_tools_function=retrieval.retrieve_tools)``. ``retrieve_tools`` returns the catalog ids the
    decision selects: none on NO_TOOL; on CLARIFY the look-alikes after :data:`CLARIFY_TOOL`, whose result is
    the question to ask. The last turn is kept per conversation (the run's thread id), so the clarification
    tool of one conversation never answers with another's question."""

    def __init__(self, selector: ToolSelector) -> None:
        self.selector = selector
        self.turns: Conversations[Turn | None] = Conversations(lambda: None)
        """The last turn of each conversation, by thread id (:meth:`turn_of`)."""

    def turn_of(self, conversation: Hashable = None) -> Turn | None:
        """The last turn retrieved for ``conversation`` (a thread id; ``None``: runs without one)."""
        return self.turns.peek(conversation)

    def registry(self, tools: Sequence[Any]) -> dict[str, Any]:
        """The tools keyed by catalog id (what bigtool binds by id), with the clarification tool."""
        registry: dict[str, Any] = self.selector.registry(tools, name_of=lambda t: t.name)
        registry[CLARIFY_TOOL] = StructuredTool.from_function(func=self._question, name=CLARIFY_TOOL,
                                                              description=CLARIFY_DESCRIPTION)
        return registry

    def _question(self) -> str:
        turn = self.turn_of(conversation_id())
        return turn.question if turn is not None else FALLBACK_QUESTION

    def retrieve_tools(self, query: str) -> list[str]:
        """Find the tools for a request: pass what the user asked, in their words. No tool back: answer directly,
        without a tool. ask_user_to_clarify back: call it and ask the user its question first."""
        turn = self.selector.select(query)
        self.turns.put(conversation_id(), turn)
        ids = list(turn.selected)
        return [CLARIFY_TOOL, *ids] if turn.decision is Decision.CLARIFY else ids
