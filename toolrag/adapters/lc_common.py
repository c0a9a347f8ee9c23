"""LangChain-core objects as toolrag reads and makes them: what the LangGraph and LangChain adapters share.

The user's turns of a conversation are its human messages (their text parts; images and other blocks are not
text to search), the last one is the request and the earlier ones its history. What the model is told on a
NO_TOOL or CLARIFY turn is a system message (:meth:`toolrag.adapters.selection.Turn.instruction`). The
conversation a run belongs to is its thread (:func:`conversation_id`). :func:`catalog_tools` makes a LangChain
tool of every catalog tool the caller sees, for a catalog whose tools one function runs (an HTTP gateway, an MCP
client, a test double).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from toolrag.adapters.selection import ToolSelector, Turn, catalog_specs, missing_extra, note

__all__ = ["catalog_tools", "conversation_id", "human_texts", "instruction_message", "message_text"]

try:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.runnables.config import ensure_config
    from langchain_core.tools import StructuredTool
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("langchain", exc) from exc


def conversation_id(config: Any = None) -> Hashable:
    """The conversation a LangChain / LangGraph run belongs to: ``configurable.thread_id`` of its config (what a
    checkpointer keys a conversation by), else ``configurable.conversation_id``, else ``None`` (every run without
    either is one conversation). ``config``: the run's config; by default the one of the running node or tool."""
    configurable = (config if config is not None else ensure_config()).get("configurable") or {}
    found = configurable.get("thread_id", configurable.get("conversation_id"))
    return found if isinstance(found, Hashable) else str(found)


def message_text(message: Any) -> str:
    """The text of a message: its string content, or the text parts of a list of content blocks."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    parts = []
    for block in content or ():
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return " ".join(parts)


def human_texts(messages: Sequence[Any]) -> list[str]:
    """The texts of the human messages, oldest first (empty ones left out)."""
    return [text for m in messages if isinstance(m, HumanMessage) and (text := message_text(m).strip())]


def instruction_message(turn: Turn) -> Any:
    """A system message telling the model what the turn's decision means, or ``None`` for EXECUTE."""
    text = turn.instruction()
    return SystemMessage(content=note(text)) if text else None


def catalog_tools(selector: ToolSelector, call: Callable[[str, dict[str, Any]], Any]) -> list[Any]:
    """A LangChain ``StructuredTool`` for every tool of the selector's catalog that its caller sees, named by its
    function name, described and typed by its profile (:func:`toolrag.adapters.selection.catalog_specs`); running
    one calls ``call(tool_id, arguments)``. Tools the caller cannot see are not made at all."""
    out = []
    for spec in catalog_specs(selector):

        def run(_tool_id: str = spec.id, **arguments: Any) -> Any:
            return call(_tool_id, arguments)

        out.append(StructuredTool.from_function(func=run, name=spec.name, description=spec.description,
                                                args_schema=dict(spec.parameters)))
    return out
