"""LlamaIndex: toolrag as the tool retriever of an agent (``pip install 'toolrag[llamaindex]'``).

::

    from llama_index.core.agent.workflow import FunctionAgent
    from toolrag.adapters import ToolSelector
    from toolrag.adapters.llamaindex import ToolragObjectRetriever

    tools = ToolragObjectRetriever(ToolSelector(retriever, role="employee"), all_tools)
    agent = FunctionAgent(tool_retriever=tools, llm=llm)

``FunctionAgent`` asks its tool retriever with the user message at every step; the retriever answers with
exactly the tools the decision selects (none on a NO_TOOL turn; on a CLARIFY turn the look-alikes after a tool,
:data:`CLARIFY_TOOL`, that carries the question to ask in its description and returns it when called). The
agent gives the retriever only the latest user message, so the retriever keeps the user messages it was
asked for as the history of the next search: make one per conversation (they share the retriever and its
index; :meth:`ToolragObjectRetriever.new_conversation` starts over). When the agent runs a tool it asks the
retriever again with the tool's name: that answers with the tool only when it is in the turn's selection, so
a call to any other tool is refused ("Tool ... not found").
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolrag.adapters.selection import ToolSelector, Turn, instruction_for, missing_extra
from toolrag.search.results import Decision

__all__ = ["CLARIFY_TOOL", "ToolragObjectRetriever", "catalog_tools"]

try:
    from llama_index.core.objects import ObjectRetriever, SimpleToolNodeMapping
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode
    from llama_index.core.tools import FunctionTool, ToolMetadata
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("llamaindex", exc) from exc


#: The tool a CLARIFY turn adds: its description holds the question; calling it returns the question.
CLARIFY_TOOL = "ask_user_to_clarify"


class _Nodes(BaseRetriever):
    """The selection as LlamaIndex nodes (id: the catalog id, metadata name: the framework tool's name)."""

    def __init__(self, owner: ToolragObjectRetriever) -> None:
        super().__init__()
        self._owner = owner

    def _retrieve(self, query_bundle: Any) -> list[Any]:
        owner = self._owner
        turn = owner.turn_for(query_bundle.query_str)
        scores = {c.id: c.score for c in turn.result.candidates}
        return [NodeWithScore(node=TextNode(id_=tool_id, text=owner.names[tool_id],
                                                            metadata={"name": owner.names[tool_id]}),
                                      score=scores.get(tool_id))
                for tool_id in turn.selected if tool_id in owner.names]


class ToolragObjectRetriever(ObjectRetriever):
    """An ``ObjectRetriever`` of LlamaIndex tools backed by toolrag: ``FunctionAgent(tool_retriever=...)``."""

    def __init__(self, selector: ToolSelector, tools: Sequence[Any]) -> None:
        """``tools``: LlamaIndex tools named by catalog id, original or function name (:func:`catalog_tools`)."""
        registry = selector.registry(tools, name_of=lambda t: t.metadata.name)
        self.selector = selector
        self.names = {tool_id: tool.metadata.name for tool_id, tool in registry.items()}
        self._by_name = {tool.metadata.name: tool for tool in registry.values()}
        self._lock = threading.Lock()
        self._messages: list[str] = []
        self.last_turn: Turn | None = None
        super().__init__(retriever=_Nodes(self), object_node_mapping=SimpleToolNodeMapping(list(tools)))

    def new_conversation(self) -> None:
        """Forget the user messages seen so far (the next search has no history)."""
        with self._lock:
            self._messages.clear()
            self.last_turn = None

    def turn_for(self, text: str) -> Turn:
        """The selection for a user message (remembered as history for the next one); asked again with the same
        message (each step of the agent's loop asks), the same turn."""
        with self._lock:
            if not self._messages or self._messages[-1] != text:
                self._messages.append(text)
            messages = list(self._messages)
        turn = self.selector.select_conversation(messages)
        self.last_turn = turn
        return turn

    def _lookup(self, text: str) -> list[Any] | None:
        """A tool name asked for by the agent before running it: that tool when the turn selected it, else
        nothing (the agent then answers "not found"); ``None`` when ``text`` names no tool."""
        turn = self.last_turn
        if turn is None:
            return None
        if text == CLARIFY_TOOL and turn.decision is Decision.CLARIFY:
            return [self._clarify_tool(turn)]
        if text in self._by_name:
            return [self._by_name[text]] if self.selector.allows(turn, text) else []
        return None

    def retrieve(self, str_or_query_bundle: Any) -> list[Any]:
        text = str_or_query_bundle if isinstance(str_or_query_bundle, str) else str_or_query_bundle.query_str
        found = self._lookup(text)
        if found is not None:
            return found
        return self._with_clarify(super().retrieve(str_or_query_bundle))

    async def aretrieve(self, str_or_query_bundle: Any) -> list[Any]:
        text = str_or_query_bundle if isinstance(str_or_query_bundle, str) else str_or_query_bundle.query_str
        found = self._lookup(text)
        if found is not None:
            return found
        return self._with_clarify(await super().aretrieve(str_or_query_bundle))

    def _with_clarify(self, tools: list[Any]) -> list[Any]:
        turn = self.last_turn
        if turn is not None and turn.decision is Decision.CLARIFY:
            return [self._clarify_tool(turn), *tools]
        return tools

    @staticmethod
    def _clarify_tool(turn: Turn) -> Any:
        question = turn.clarification or "Ask the user what exactly they want done."

        def ask_user_to_clarify() -> str:
            return question

        return FunctionTool.from_defaults(
            fn=ask_user_to_clarify, name=CLARIFY_TOOL,
            description=f"toolrag: {instruction_for(Decision.CLARIFY, question)} Call this before any other tool; "
                        "it returns the question.")


def catalog_tools(selector: ToolSelector, call: Any) -> list[Any]:
    """A LlamaIndex tool for every catalog tool the selector's caller may see, named by its function name with
    its description and parameters (JSON schema); running one calls ``call(tool_id, arguments)``."""
    catalog = selector.retriever.catalog
    out = []
    for tool_id in selector.visible_ids():
        tool = catalog.get(tool_id)
        if tool is None:
            continue
        schema = dict(tool.parameters) if tool.parameters else {"type": "object", "properties": {}}
        metadata = _SchemaMetadata(name=catalog.function_name(tool_id), description=tool.description,
                                   parameters=schema)
        out.append(FunctionTool(fn=_Runner(call, tool_id), metadata=metadata))
    return out


@dataclass
class _SchemaMetadata(ToolMetadata):
    """Tool metadata whose parameters are the profile's JSON schema (not a pydantic model)."""

    parameters: dict[str, Any] = field(default_factory=dict)

    def get_parameters_dict(self) -> dict[str, Any]:
        return self.parameters


class _Runner:
    """A catalog tool's function: ``call(tool_id, arguments)``."""

    def __init__(self, call: Any, tool_id: str) -> None:
        self.call, self.tool_id = call, tool_id

    def __call__(self, **arguments: Any) -> Any:
        return self.call(self.tool_id, arguments)
