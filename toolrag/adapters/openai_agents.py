"""OpenAI Agents SDK: toolrag as the tool filter of an agent's MCP servers (``pip install 'toolrag[openai-agents]'``).

::

    from agents import Agent
    from agents.mcp import MCPServerStdio
    from toolrag.adapters import ToolSelector
    from toolrag.adapters.openai_agents import ToolragToolFilter

    tool_filter = ToolragToolFilter(ToolSelector(retriever, role="employee"))
    server = MCPServerStdio(params, tool_filter=tool_filter, cache_tools_list=True)
    agent = Agent(name="assistant", instructions=tool_filter.instructions("You are..."), mcp_servers=[server])

The SDK lists an MCP server's tools before every model call and asks the filter about each; the filter searches
the run's user messages (the last one, the earlier ones as history; one search per turn, however many tools
and calls) and keeps exactly the tools the decision selects: none on a NO_TOOL turn, the look-alikes on a CLARIFY
turn. :meth:`ToolragToolFilter.instructions` makes the agent's instructions say what the decision means (answer
directly; ask the user the question first). The catalog is the server's own tools (``toolrag import mcp``): a
tool is matched by its original name. A tool the filter cannot place is left out (the SDK drops a tool whose
filter fails), so nothing unselected ever reaches the model. The turn is kept per run (``turn_of(result.
context_wrapper)``), or per conversation when the run's context names one (``conversation_id``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from toolrag.adapters.selection import Conversations, ToolSelector, Turn, missing_extra, note

__all__ = ["ToolragToolFilter", "user_texts"]

try:
    import agents  # noqa: F401  (the SDK this filter plugs into)
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("openai-agents", exc) from exc



def user_texts(items: Sequence[Any]) -> list[str]:
    """The texts of the user messages among Agents SDK input items (a string or input-text parts), oldest first."""
    out = []
    for item in items or ():
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            text = content
        else:
            text = " ".join(part.get("text", "") for part in content or ()
                            if isinstance(part, dict) and part.get("type") in ("input_text", "text"))
        if text.strip():
            out.append(text.strip())
    return out


class ToolragToolFilter:
    """A dynamic ``tool_filter`` for the Agents SDK's MCP servers, backed by toolrag."""

    def __init__(self, selector: ToolSelector) -> None:
        self.selector = selector
        self.turns: Conversations[tuple[Any, Turn] | None] = Conversations(lambda: None)
        """The last turn of each run (or conversation), with a weak reference to the run's context."""

    def turn(self, run_context: Any) -> Turn:
        """This turn's selection, from the run's input items (``RunContextWrapper.turn_input``)."""
        turn = self.selector.select_conversation(user_texts(getattr(run_context, "turn_input", None) or ()))
        key, ref = _conversation(run_context)
        self.turns.put(key, (ref, turn))
        return turn

    def turn_of(self, run_context: Any) -> Turn | None:
        """The last turn of the run whose context is ``run_context`` (``RunResult.context_wrapper``), or of the
        conversation it names; ``None`` before its first tool listing."""
        key, _ = _conversation(run_context)
        found = self.turns.peek(key)
        if found is None:
            return None
        ref, turn = found
        return turn if ref is None or ref() is run_context else None

    def __call__(self, context: Any, tool: Any) -> bool:
        """Whether ``tool`` (an MCP tool) is in this turn's selection."""
        return self.selector.allows(self.turn(context.run_context), tool.name)

    def instructions(self, base: str = "") -> Callable[[Any, Any], str]:
        """Dynamic instructions for ``Agent(instructions=...)``: ``base`` plus what this turn's decision means."""

        def instructions(run_context: Any, agent: Any) -> str:
            return note(self.turn(run_context).instruction(), base)

        return instructions


def _conversation(run_context: Any) -> tuple[Hashable, Any]:
    """The key a run's turn is kept under: the ``conversation_id`` its context names (an attribute or a mapping
    key of ``Runner.run(context=...)``), else the run itself (its context wrapper, checked by weak reference so a
    later run that reuses the address never reads it)."""
    context = getattr(run_context, "context", None)
    named = context.get("conversation_id") if isinstance(context, Mapping) else \
        getattr(context, "conversation_id", None)
    if named is not None:
        return ("conversation", named), None
    try:
        ref = weakref.ref(run_context)
    except TypeError:  # not weakly referable: kept by identity alone
        ref = None
    return ("run", id(run_context)), ref
