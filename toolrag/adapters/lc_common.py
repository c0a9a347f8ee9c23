"""LangChain-core objects as toolrag reads and makes them: what the LangGraph and LangChain adapters share.

The user's turns of a conversation are its human messages (their text parts; images and other blocks are not
text to search), the last one is the request and the earlier ones its history. What the model is told on a
NO_TOOL or CLARIFY turn is a system message (:meth:`toolrag.adapters.selection.Turn.instruction`).
:func:`catalog_tools` makes a LangChain tool of every catalog tool, for a catalog whose tools one function
runs (an HTTP gateway, an MCP client, a test double).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from toolrag.adapters.selection import ToolSelector, Turn, missing_extra

__all__ = ["catalog_tools", "human_texts", "instruction_message", "message_text"]

try:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import StructuredTool
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("langchain", exc) from exc



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
    return SystemMessage(content=f"[toolrag] {text}") if text else None


def catalog_tools(selector: ToolSelector, call: Callable[[str, dict[str, Any]], Any]) -> list[Any]:
    """A LangChain ``StructuredTool`` for every tool of the selector's catalog that its caller may see, named by
    its function name, described and typed by its profile; running one calls ``call(tool_id, arguments)``.
    Tools the caller may not see are not made at all."""
    catalog = selector.retriever.catalog
    visible = set(selector.visible_ids())
    out = []
    for tool in catalog:
        if tool.id not in visible:
            continue

        def run(_tool_id: str = tool.id, **arguments: Any) -> Any:
            return call(_tool_id, arguments)

        schema = dict(tool.parameters) if tool.parameters else {"type": "object", "properties": {}}
        out.append(StructuredTool.from_function(func=run, name=catalog.function_name(tool.id),
                                                       description=tool.description, args_schema=schema))
    return out
