"""toolrag where agents are built: per-turn tool selection for LangGraph, LlamaIndex, LangChain and the OpenAI
Agents SDK.

The framework-free part (:class:`ToolSelector`, :class:`Turn`) imports no framework. Each framework's adapter
is its own module, imported only when used, behind its extra (``pip install 'toolrag[langgraph]'``,
``[llamaindex]``, ``[langchain]``, ``[openai-agents]``): ``toolrag.adapters.langgraph``,
``toolrag.adapters.llamaindex``, ``toolrag.adapters.langchain``, ``toolrag.adapters.openai_agents``.
"""

from __future__ import annotations

from toolrag.adapters.selection import NO_TOOL_INSTRUCTION, ToolSelector, Turn

__all__ = ["NO_TOOL_INSTRUCTION", "ToolSelector", "Turn"]
