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
agent gives the retriever only the latest user message, so the retriever keeps the user messages of each
conversation as the history of its next search, and its last turn. A conversation is the agent's workflow
``Context`` (``agent.run(..., ctx=ctx)``: the retriever marks it with an id in ``ctx.store``), or one named with
``with tools.conversation("id"):`` around the run; one retriever serves any number of conversations (they share
the selector, its retriever and its index). When the agent runs a tool it asks the retriever again with the
tool's name: that answers with the tool only when it is in that conversation's turn, so a call to any other
tool is refused ("Tool ... not found").
"""

from __future__ import annotations

import contextvars
import threading
import uuid
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from toolrag.adapters.selection import (
    CLARIFY_TOOL,
    Conversations,
    ToolSelector,
    Turn,
    catalog_specs,
    instruction_for,
    missing_extra,
)
from toolrag.search.results import Decision

__all__ = ["CLARIFY_TOOL", "ToolragObjectRetriever", "catalog_tools"]

try:
    from llama_index.core.objects import ObjectRetriever, SimpleToolNodeMapping
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode
    from llama_index.core.tools import FunctionTool, ToolMetadata
    from llama_index.core.workflow import Context
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("llamaindex", exc) from exc


#: The conversation named by :meth:`ToolragObjectRetriever.conversation` for the code running inside it.
_NAMED: contextvars.ContextVar[Hashable | None] = contextvars.ContextVar("toolrag_llamaindex_conversation",
                                                                         default=None)
#: Where a workflow ``Context`` keeps the id of its conversation (text: the context stays serialisable).
_STORE_KEY = "toolrag_conversation"


@dataclass
class _Conversation:
    """One conversation as the retriever sees it: the user messages it was asked for, and its last turn."""

    messages: list[str] = field(default_factory=list)
    turn: Turn | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Nodes(BaseRetriever):
    """The selection as LlamaIndex nodes (id: the catalog id, metadata name: the framework tool's name)."""

    def __init__(self, owner: ToolragObjectRetriever) -> None:
        super().__init__()
        self._owner = owner

    def _retrieve(self, query_bundle: Any) -> list[Any]:
        owner = self._owner
        turn = owner.turn_for(query_bundle.query_str, conversation=_NAMED.get())
        scores = {c.id: c.score for c in turn.result.candidates}
        return [NodeWithScore(node=TextNode(id_=tool_id, text=owner.names[tool_id],
                                            metadata={"name": owner.names[tool_id]}), score=scores.get(tool_id))
                for tool_id in turn.selected if tool_id in owner.names]


class ToolragObjectRetriever(ObjectRetriever):
    """An ``ObjectRetriever`` of LlamaIndex tools backed by toolrag: ``FunctionAgent(tool_retriever=...)``."""

    def __init__(self, selector: ToolSelector, tools: Sequence[Any]) -> None:
        """``tools``: LlamaIndex tools named by catalog id, original or function name (:func:`catalog_tools`)."""
        registry = selector.registry(tools, name_of=lambda t: t.metadata.name)
        self.selector = selector
        self.names = {tool_id: tool.metadata.name for tool_id, tool in registry.items()}
        self._by_id = dict(registry)
        self._by_name = {tool.metadata.name: tool for tool in registry.values()}
        self.conversations: Conversations[_Conversation] = Conversations(_Conversation)
        """Each conversation's user messages and last turn, by conversation id (``None``: runs outside any)."""
        super().__init__(retriever=_Nodes(self), object_node_mapping=SimpleToolNodeMapping(list(tools)))

    @contextmanager
    def conversation(self, conversation_id: Hashable) -> Iterator[None]:
        """Searches made inside the block belong to conversation ``conversation_id`` (start the agent's run in
        it: ``with tools.conversation("c1"): await agent.run(...)``), whatever workflow context runs them."""
        token = _NAMED.set(conversation_id)
        try:
            yield
        finally:
            _NAMED.reset(token)

    def new_conversation(self, conversation: Hashable = None) -> None:
        """Forget the user messages and the turn of ``conversation`` (the next search has no history)."""
        self.conversations.forget(conversation)

    def turn_of(self, conversation: Hashable = None) -> Turn | None:
        """The last turn of ``conversation`` (an id given to :meth:`conversation`, or the id kept in a workflow
        context's store under ``toolrag_conversation``); ``None`` before its first search."""
        state = self.conversations.peek(conversation)
        return state.turn if state is not None else None

    async def conversation_of(self, ctx: Any) -> Hashable:
        """The conversation id of a workflow ``Context`` (made and kept in its store on first use)."""
        key = await ctx.store.get(_STORE_KEY, default=None)
        if key is None:
            key = uuid.uuid4().hex
            await ctx.store.set(_STORE_KEY, key)
        return key

    def turn_for(self, text: str, *, conversation: Hashable = None) -> Turn:
        """The selection for a user message of ``conversation`` (remembered as history for its next one); asked
        again with the same message (each step of the agent's loop asks), the same turn."""
        state = self.conversations.get(conversation)
        with state.lock:
            if not state.messages or state.messages[-1] != text:
                state.messages.append(text)
                del state.messages[: -(self.selector.max_history + 1)]  # only these are ever read
            messages = list(state.messages)
        turn = self.selector.select_conversation(messages)
        state.turn = turn
        return turn

    async def _key(self) -> Hashable:
        """The conversation of the running code: one named by :meth:`conversation`, else the workflow context of
        the agent's step, else ``None``."""
        named = _NAMED.get()
        if named is not None:
            return named
        try:
            ctx = Context.get_step_context()
        except Exception:  # not inside a workflow step: a direct call
            return None
        return await self.conversation_of(ctx)

    def _lookup(self, text: str, conversation: Hashable) -> list[Any] | None:
        """A tool name asked for by the agent before running it: that tool when the conversation's turn selected
        it, else nothing (the agent then answers "not found"); ``None`` when ``text`` names no tool."""
        turn = self.turn_of(conversation)
        if turn is None:
            return None
        if text == CLARIFY_TOOL and turn.decision is Decision.CLARIFY:
            return [self._clarify_tool(turn)]
        if text in self._by_name:
            return [self._by_name[text]] if self.selector.allows(turn, text) else []
        return None

    def _answer(self, text: str, conversation: Hashable) -> list[Any]:
        found = self._lookup(text, conversation)
        if found is not None:
            return found
        turn = self.turn_for(text, conversation=conversation)
        tools = [self._by_id[tool_id] for tool_id in turn.selected if tool_id in self._by_id]
        return [self._clarify_tool(turn), *tools] if turn.decision is Decision.CLARIFY else tools

    def retrieve(self, str_or_query_bundle: Any) -> list[Any]:
        text = str_or_query_bundle if isinstance(str_or_query_bundle, str) else str_or_query_bundle.query_str
        return self._answer(text, _NAMED.get())

    async def aretrieve(self, str_or_query_bundle: Any) -> list[Any]:
        text = str_or_query_bundle if isinstance(str_or_query_bundle, str) else str_or_query_bundle.query_str
        return self._answer(text, await self._key())

    @staticmethod
    def _clarify_tool(turn: Turn) -> Any:
        question = turn.question

        def ask_user_to_clarify() -> str:
            return question

        return FunctionTool.from_defaults(
            fn=ask_user_to_clarify, name=CLARIFY_TOOL,
            description=f"toolrag: {instruction_for(Decision.CLARIFY, question)} Call this before any other tool; "
                        "it returns the question.")


def catalog_tools(selector: ToolSelector, call: Any) -> list[Any]:
    """A LlamaIndex tool for every catalog tool the selector's caller sees, named by its function name with
    its description and parameters (JSON schema; :func:`toolrag.adapters.selection.catalog_specs`); running one
    calls ``call(tool_id, arguments)``."""
    return [FunctionTool(fn=_Runner(call, spec.id), metadata=_SchemaMetadata(
        name=spec.name, description=spec.description, parameters=dict(spec.parameters)))
        for spec in catalog_specs(selector)]


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
