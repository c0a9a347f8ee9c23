"""LangChain: toolrag as agent middleware that selects each turn's tools (``pip install 'toolrag[langchain]'``).

::

    from langchain.agents import create_agent
    from toolrag.adapters import ToolSelector
    from toolrag.adapters.langchain import ToolragMiddleware

    selector = ToolSelector(retriever, role="employee")          # the retriever is built once, shared
    agent = create_agent(model, tools=all_tools, middleware=[ToolragMiddleware(selector)])

Before every model call the middleware searches the last human message (the earlier ones as history) and
binds exactly the tools the decision selects: none on a NO_TOOL turn (and a system message saying to answer
directly), the look-alikes with the question to ask on a CLARIFY turn. A tool call to anything outside the
turn's selection (a tool the model invented, or one this caller may not see) is answered with an error
message and never run. Tools the agent holds that are not in the catalog are an error when the middleware
first sees them, unless named in ``always_include``. The selection of each conversation's last model call is
kept per conversation (its thread id): :meth:`ToolragMiddleware.turn_of`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

from toolrag.adapters.lc_common import conversation_id, human_texts, instruction_message
from toolrag.adapters.selection import Conversations, ToolSelector, Turn, missing_extra, refusal

__all__ = ["ToolragMiddleware"]

try:
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import SystemMessage, ToolMessage
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("langchain", exc) from exc



class ToolragMiddleware(AgentMiddleware):
    """Per-turn tool selection by toolrag for ``langchain.agents.create_agent``."""

    def __init__(self, selector: ToolSelector, *, always_include: Sequence[str] = ()) -> None:
        """``always_include``: tool names bound on every turn whatever the decision (tools of your own that are
        not in the catalog, such as a calculator)."""
        super().__init__()
        self.selector = selector
        self.always_include = frozenset(always_include)
        self.turns: Conversations[Turn | None] = Conversations(lambda: None)
        """The selection of each conversation's last model call, by thread id (:meth:`turn_of`)."""

    def turn_of(self, conversation: Hashable = None) -> Turn | None:
        """The selection of the last model call of ``conversation`` (a thread id; ``None``: runs without one),
        what an example prints."""
        return self.turns.peek(conversation)

    # ------------------------------------------------------------------------------------------- model

    def _select(self, request: Any) -> tuple[Any, Turn]:
        turn = self.selector.select_conversation(human_texts(request.messages))
        tools = [t for t in request.tools if not isinstance(t, dict)]
        mine = [t for t in tools if t.name not in self.always_include]
        registry = self.selector.registry(mine, name_of=lambda t: t.name)
        chosen = self.selector.pick(turn, registry) + [t for t in tools if t.name in self.always_include]
        overrides: dict[str, Any] = {"tools": chosen}
        note = instruction_message(turn)
        if note is not None:
            base = request.system_message.text if request.system_message is not None else ""
            overrides["system_message"] = SystemMessage(content=f"{base}\n\n{note.content}".strip())
        if not chosen and request.tool_choice not in (None, "auto", "none"):
            overrides["tool_choice"] = None  # a forced tool choice with no tool bound would fail the call
        self.turns.put(conversation_id(), turn)
        return request.override(**overrides), turn

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Bind exactly this turn's selection, then call the model."""
        return handler(self._select(request)[0])

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        return await handler(self._select(request)[0])

    # -------------------------------------------------------------------------------------------- tools

    def _refusal(self, request: Any) -> Any:
        """``None`` when the call is to a tool of this turn's selection (or always included), else the error
        message the model reads instead of the tool's result."""
        call = request.tool_call
        if call["name"] in self.always_include:
            return None
        state = request.state if isinstance(request.state, dict) else {}
        turn = self.selector.select_conversation(human_texts(state.get("messages", ())))
        if self.selector.allows(turn, call["name"]):
            return None
        return ToolMessage(content=refusal(call["name"]), tool_call_id=call["id"], name=call["name"], status="error")

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Run a tool call only when it names a tool of this turn's selection."""
        refused = self._refusal(request)
        return refused if refused is not None else handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        refused = self._refusal(request)
        return refused if refused is not None else await handler(request)
