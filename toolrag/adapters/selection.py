"""Per-turn tool selection for agent frameworks, without any framework: what every adapter shares.

A :class:`ToolSelector` is one caller's view of a shared :class:`toolrag.search.retriever.ToolRetriever`: the
caller's role (or permission codes), categories and settings are fixed when it is made, so every search it
makes sees only what that caller may see (permissions stay a physical filter: a hidden tool is never scored,
returned or named). For each turn of a conversation it searches the last user message with the earlier ones
as ``history`` (the retriever's history-aware search) and returns a :class:`Turn`: the decision, the tools
the decision selects (``result.selected``: none for NO_TOOL, the look-alikes for CLARIFY; never a fixed k)
and what to tell the model. The adapters (``toolrag.adapters.langgraph``, ``llamaindex``, ``langchain``,
``openai_agents``) only translate a :class:`Turn` into their framework's objects. No adapter builds an index:
the retriever is built once and shared by every selector.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from toolrag.catalog.profile import Catalog
from toolrag.search.results import Decision, SearchResult
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings

__all__ = ["NO_TOOL_INSTRUCTION", "ToolSelector", "Turn", "instruction_for", "missing_extra"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: What the model is told on a NO_TOOL turn (the words of toolrag's own prompt block).
NO_TOOL_INSTRUCTION = "No tool fits this request: answer directly, without calling a tool."
_CACHED_TURNS = 64


def instruction_for(decision: Decision, clarification: str | None = None) -> str:
    """What to tell the model on a turn, besides the bound tools: nothing for EXECUTE, to answer without a tool
    for NO_TOOL, the question to ask first for CLARIFY (the words of toolrag's own prompt block)."""
    if decision is Decision.NO_TOOL:
        return NO_TOOL_INSTRUCTION
    if decision is Decision.CLARIFY:
        return f"The request is ambiguous: ask the user first: {clarification or 'which of these tools do you mean?'}"
    return ""


def missing_extra(extra: str, exc: ImportError) -> ImportError:
    """The error an adapter raises when its framework is not installed: which extra installs it."""
    return ImportError(f"toolrag's {extra} adapter needs its framework: pip install 'toolrag[{extra}]' ({exc})")


@dataclass(frozen=True)
class Turn:
    """One turn's selection: the search result and what an agent does with it."""

    query: str
    history: tuple[str, ...]
    result: SearchResult
    names: Mapping[str, str]
    """Selected tool id -> the tool's original name (what an MCP server or a framework registry calls it)."""

    @property
    def decision(self) -> Decision:
        return self.result.decision

    @property
    def selected(self) -> tuple[str, ...]:
        """Ids of the tools to bind this turn, best first (empty for NO_TOOL)."""
        return self.result.selected

    @property
    def clarification(self) -> str | None:
        """The question to ask the user on a CLARIFY turn."""
        return self.result.clarification if self.decision is Decision.CLARIFY else None

    def instruction(self) -> str:
        """What to tell the model this turn besides the bound tools (:func:`instruction_for`)."""
        return instruction_for(self.decision, self.result.clarification)

    def describe(self) -> str:
        """One line for a log or an example's output: the decision and the tools that reach the model."""
        tools = ", ".join(self.names[i] for i in self.selected) or "none"
        extra = f" · ask: {self.clarification}" if self.clarification else ""
        return f"{self.decision.value}: {tools}{extra}"


class ToolSelector:
    """Selects each turn's tools for one caller; share one retriever among many selectors."""

    def __init__(self, retriever: ToolRetriever, *, role: str | None = None,
                 permissions: Collection[str] | None = None, categories: Collection[str] | None = None,
                 settings: Settings | None = None, max_history: int = 4) -> None:
        """``role`` / ``permissions``: the caller (a role of the catalog, its codes, or both); without either the
        caller sees only unrestricted tools. ``max_history``: how many earlier user messages a search reads."""
        if role:
            retriever.catalog.role_codes(role)  # an unknown role is an error now, not at the first turn
        if max_history < 0:
            raise ValueError(f"max_history is {max_history}; use 0 (no history) or more")
        self.retriever = retriever
        self.role = role or None
        self.permissions = tuple(permissions) if permissions is not None else None
        self.categories = tuple(categories) if categories else None
        self.settings = settings
        self.max_history = max_history
        self._turns: OrderedDict[tuple[str, tuple[str, ...]], Turn] = OrderedDict()
        self._lock = threading.Lock()
        self._names: tuple[Catalog, dict[str, str]] | None = None

    def with_role(self, role: str | None) -> ToolSelector:
        """The same selector for another caller (the retriever and its index are shared)."""
        return ToolSelector(self.retriever, role=role, permissions=self.permissions, categories=self.categories,
                            settings=self.settings, max_history=self.max_history)

    # ------------------------------------------------------------------------------------------- turns

    def select(self, query: str, *, history: Sequence[str] = ()) -> Turn:
        """The selection for ``query`` with earlier user messages ``history`` (oldest first). The same turn
        asked again (a framework lists tools several times per turn) is answered from memory, not searched."""
        history = tuple(h for h in history if h.strip())[-self.max_history:] if self.max_history else ()
        key = (query, history)
        with self._lock:
            hit = self._turns.get(key)
            if hit is not None:
                self._turns.move_to_end(key)
                return hit
        result = self.retriever.search(query, history=history, role=self.role, permissions=self.permissions,
                                       categories=self.categories, settings=self.settings)
        catalog = self.retriever.catalog
        names = {tool_id: profile.name for tool_id in result.selected if (profile := catalog.get(tool_id)) is not None}
        turn = Turn(query, history, result, names)
        with self._lock:
            self._turns[key] = turn
            while len(self._turns) > _CACHED_TURNS:
                self._turns.popitem(last=False)
        return turn

    def select_conversation(self, user_messages: Sequence[str]) -> Turn:
        """The selection for the last user message, the earlier ones as history."""
        texts = [m for m in user_messages if isinstance(m, str) and m.strip()]
        if not texts:
            raise ValueError("the conversation has no user message to search for tools")
        return self.select(texts[-1], history=texts[:-1])

    # ---------------------------------------------------------------------------------------- registry

    def resolve(self, name: str) -> str | None:
        """The catalog id of a framework's tool name: a tool id, else an original name (when only one tool has
        it), else a function name."""
        catalog = self.retriever.catalog
        if catalog.get(name) is not None:
            return name
        cached = self._names
        if cached is None or cached[0] is not catalog:
            by_name: dict[str, list[str]] = {}
            for profile in catalog:
                by_name.setdefault(profile.name, []).append(profile.id)
            cached = self._names = (catalog, {n: ids[0] for n, ids in by_name.items() if len(ids) == 1})
        if name in cached[1]:
            return cached[1][name]
        tool = catalog.by_function_name(name)
        return tool.id if tool is not None else None

    def visible_ids(self) -> list[str]:
        """Ids of the catalog tools this caller may see (its permissions and categories), catalog order."""
        catalog = self.retriever.catalog
        codes = set(self.permissions or ()) | (set(catalog.role_codes(self.role)) if self.role else set())
        wanted = set(self.categories) if self.categories else None
        return [t.id for t in catalog if set(t.permissions) <= codes and (wanted is None or t.category in wanted)]

    def registry(self, tools: Iterable[T], name_of: Callable[[T], str]) -> dict[str, T]:
        """The framework's tools keyed by catalog id. A tool the catalog does not know could never be selected,
        so it is an error naming it (add its profile to the catalog, or bind it yourself beside the selection)."""
        out: dict[str, T] = {}
        unknown = []
        for tool in tools:
            name = name_of(tool)
            tool_id = self.resolve(name)
            if tool_id is None:
                unknown.append(name)
            else:
                out[tool_id] = tool
        if unknown:
            raise ValueError(f"{len(unknown)} tool(s) not in the catalog {self.retriever.catalog.name!r}: "
                             f"{', '.join(unknown[:10])}; toolrag selects only catalog tools: add their profiles "
                             "(toolrag import mcp, or YAML), or bind them yourself beside the selection")
        return out

    def pick(self, turn: Turn, registry: Mapping[str, T]) -> list[T]:
        """The registry's objects of the turn's selected tools, best first (none for NO_TOOL). A selected tool
        the registry lacks is left out with a warning: the agent cannot call what it was not given."""
        missing = [tool_id for tool_id in turn.selected if tool_id not in registry]
        if missing:
            log.warning("selected tools without a framework tool, left out: %s", ", ".join(missing))
        return [registry[tool_id] for tool_id in turn.selected if tool_id in registry]

    def allows(self, turn: Turn, name: str) -> bool:
        """Whether a tool call by ``name`` (id, original or function name) is one of this turn's selection: a
        model's call to any other tool (one it invented, or one another role could see) is refused."""
        tool_id = self.resolve(name)
        return tool_id is not None and tool_id in turn.selected
