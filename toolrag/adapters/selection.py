"""Per-turn tool selection for agent frameworks, without any framework: what every adapter shares.

A :class:`ToolSelector` is one caller's view of a shared :class:`toolrag.search.retriever.ToolRetriever`: the
caller (a :class:`toolrag.catalog.caller.Caller` of its role or permission codes and its categories) and the
settings are fixed when it is made, so every search it makes sees only what that caller may see (a hidden tool
is never scored, returned or named, and moves no figure of the result). For each turn of a conversation it
searches the last user message with the earlier ones as ``history`` (the retriever's history-aware search) and
returns a :class:`Turn`: the decision, the tools the decision selects (``result.selected``: none for NO_TOOL,
the look-alikes for CLARIFY; never a fixed k) and what to tell the model. A turn asked again is answered from
memory, which is kept per index snapshot and caller: after a reload (a tool edited, added or restricted) nothing
remembered is served. The adapters (``toolrag.adapters.langgraph``, ``llamaindex``, ``langchain``,
``openai_agents``) only translate a :class:`Turn` into their framework's objects, keep one turn per
conversation (:class:`Conversations`) and take their shared words from here (:data:`CLARIFY_TOOL`,
:data:`FALLBACK_QUESTION`, :func:`note`, :func:`refusal`, :func:`catalog_specs`). No adapter builds an index: the
retriever is built once and shared by every selector.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from toolrag.catalog.caller import Caller
from toolrag.errors import QueryError
from toolrag.index.snapshot import IndexSnapshot
from toolrag.search.results import Decision, SearchResult
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings

__all__ = ["CLARIFY_DESCRIPTION", "CLARIFY_TOOL", "FALLBACK_QUESTION", "NOTE_PREFIX", "NO_TOOL_INSTRUCTION",
           "Conversations", "ToolSelector", "ToolSpec", "Turn", "catalog_specs", "instruction_for", "missing_extra",
           "note", "refusal"]

log = logging.getLogger(__name__)
T = TypeVar("T")
S = TypeVar("S")

#: What the model is told on a NO_TOOL turn (the words of toolrag's own prompt block).
NO_TOOL_INSTRUCTION = "No tool fits this request: answer directly, without calling a tool."
#: The tool an adapter adds on a CLARIFY turn where the framework has no system message per turn (bigtool,
#: LlamaIndex): calling it returns the question to ask the user.
CLARIFY_TOOL = "ask_user_to_clarify"
#: What :data:`CLARIFY_TOOL` says it does.
CLARIFY_DESCRIPTION = ("toolrag found the request ambiguous: call this first; it returns the question to ask the "
                       "user before calling any other tool.")
#: The question of a clarification asked for where no turn of that conversation has one.
FALLBACK_QUESTION = "Ask the user what exactly they want done."
#: How a note of toolrag to the model starts (a system message, the agent's instructions).
NOTE_PREFIX = "[toolrag]"
_CACHED_TURNS = 64
#: Conversations an adapter keeps the last turn of (the least recently seen are forgotten beyond it).
_CONVERSATIONS = 1024


def instruction_for(decision: Decision, clarification: str | None = None) -> str:
    """What to tell the model on a turn, besides the bound tools: nothing for EXECUTE, to answer without a tool
    for NO_TOOL, the question to ask first for CLARIFY (the words of toolrag's own prompt block)."""
    if decision is Decision.NO_TOOL:
        return NO_TOOL_INSTRUCTION
    if decision is Decision.CLARIFY:
        return f"The request is ambiguous: ask the user first: {clarification or 'which of these tools do you mean?'}"
    return ""


def note(text: str, base: str = "") -> str:
    """``base`` (the agent's own instructions, if any) and toolrag's note ``text`` to the model (nothing when
    ``text`` is empty)."""
    if not text:
        return base
    return f"{base}\n\n{NOTE_PREFIX} {text}".strip()


def refusal(name: str) -> str:
    """What the model reads instead of a tool's result when it calls a tool outside the turn's selection."""
    return f"Error: {name!r} was not selected for this request; call only the tools you were given."


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

    @property
    def question(self) -> str:
        """What :data:`CLARIFY_TOOL` returns for this turn: its question, else :data:`FALLBACK_QUESTION`."""
        return self.clarification or FALLBACK_QUESTION

    def instruction(self) -> str:
        """What to tell the model this turn besides the bound tools (:func:`instruction_for`)."""
        return instruction_for(self.decision, self.result.clarification)

    def describe(self) -> str:
        """One line for a log or an example's output: the decision and the tools that reach the model."""
        tools = ", ".join(self.names[i] for i in self.selected) or "none"
        extra = f" · ask: {self.clarification}" if self.clarification else ""
        return f"{self.decision.value}: {tools}{extra}"


class Conversations(Generic[S]):
    """What an adapter keeps per conversation (its last turn, the user messages it saw), keyed by the
    framework's thread or run id or an id the caller passes; never one value shared by every conversation.
    The least recently seen are forgotten beyond ``limit``. Thread-safe."""

    def __init__(self, make: Callable[[], S], *, limit: int = _CONVERSATIONS) -> None:
        self._make = make
        self._limit = limit
        self._items: OrderedDict[Hashable, S] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> S:
        """The state of conversation ``key`` (made on first use)."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = self._make()
                while len(self._items) > self._limit:
                    self._items.popitem(last=False)
            else:
                self._items.move_to_end(key)
            return item

    def peek(self, key: Hashable) -> S | None:
        """The state of conversation ``key``, or ``None`` when it has none yet."""
        with self._lock:
            return self._items.get(key)

    def put(self, key: Hashable, value: S) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._limit:
                self._items.popitem(last=False)

    def forget(self, key: Hashable) -> None:
        with self._lock:
            self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class ToolSpec:
    """A catalog tool as a framework tool is made from it: id, model-facing (function) name, description and
    JSON schema of its arguments."""

    id: str
    name: str
    description: str
    parameters: Mapping[str, Any]


def catalog_specs(selector: ToolSelector) -> list[ToolSpec]:
    """The tools of the selector's catalog that its caller sees, as framework tools are made from them
    (``catalog_tools`` of the LangChain and LlamaIndex adapters): tools the caller cannot see are not made."""
    catalog = selector.retriever.catalog
    names = selector.caller.function_names(catalog)
    return [ToolSpec(tool.id, names[tool.id], tool.description,
                     dict(tool.parameters) if tool.parameters else {"type": "object", "properties": {}})
            for tool in selector.caller.visible(catalog)]


class ToolSelector:
    """Selects each turn's tools for one caller; share one retriever among many selectors."""

    def __init__(self, retriever: ToolRetriever, *, role: str | None = None,
                 permissions: Collection[str] | None = None, categories: Collection[str] | None = None,
                 settings: Settings | None = None, max_history: int = 4) -> None:
        """``role`` / ``permissions``: the caller (a role of the catalog, its codes, or both); without either the
        caller sees only unrestricted tools. ``max_history``: how many earlier user messages a search reads. An
        unknown role or category is an error now, not at the first turn."""
        if max_history < 0:
            raise ValueError(f"max_history is {max_history}; use 0 (no history) or more")
        self.retriever = retriever
        self.role = role or None
        self.permissions = tuple(permissions) if permissions is not None else None
        self.categories = tuple(categories) if categories else None
        self.settings = settings
        self.max_history = max_history
        self._lock = threading.Lock()
        #: The snapshot the memory belongs to, the caller made on its catalog, and the turns remembered there.
        self._memory: tuple[IndexSnapshot, Caller, OrderedDict[tuple[str, tuple[str, ...]], Turn]] | None = None
        self._view()

    def with_role(self, role: str | None) -> ToolSelector:
        """The same selector for another caller (the retriever and its index are shared)."""
        return ToolSelector(self.retriever, role=role, permissions=self.permissions, categories=self.categories,
                            settings=self.settings, max_history=self.max_history)

    @property
    def caller(self) -> Caller:
        """Who this selector searches for, on the catalog the index serves now."""
        return self._view()[1]

    def _view(self) -> tuple[IndexSnapshot, Caller, OrderedDict[tuple[str, tuple[str, ...]], Turn]]:
        """The index snapshot searches read now, the caller on its catalog and the turns remembered on it. A
        new snapshot (a reload: a tool edited, added, removed or restricted) starts an empty memory."""
        snap = self.retriever.snapshot
        with self._lock:
            memory = self._memory
            if memory is None or memory[0] is not snap:
                caller = Caller.of(snap.catalog, role=self.role, permissions=self.permissions,
                                   categories=self.categories)
                memory = self._memory = (snap, caller, OrderedDict())
            return memory

    def forget(self) -> None:
        """Drop every remembered turn (a reload does this by itself)."""
        with self._lock:
            self._memory = None

    # ------------------------------------------------------------------------------------------- turns

    def select(self, query: str, *, history: Sequence[str] = ()) -> Turn:
        """The selection for ``query`` with earlier user messages ``history`` (oldest first). The same turn
        asked again on the same index (a framework lists tools several times per turn) is answered from
        memory, not searched; after a reload it is searched again."""
        history = tuple(h for h in history if isinstance(h, str) and h.strip())[-self.max_history:] \
            if self.max_history else ()
        key = (query, history)
        snap, caller, turns = self._view()
        with self._lock:
            hit = turns.get(key)
            if hit is not None:
                turns.move_to_end(key)
                return hit
        result = self.retriever.search(query, history=history, caller=caller, settings=self.settings, snapshot=snap)
        catalog = snap.catalog
        names = {tool_id: profile.name for tool_id in result.selected if (profile := catalog.get(tool_id)) is not None}
        turn = Turn(query, history, result, names)
        with self._lock:
            turns[key] = turn
            while len(turns) > _CACHED_TURNS:
                turns.popitem(last=False)
        return turn

    def select_conversation(self, user_messages: Sequence[str]) -> Turn:
        """The selection for the last user message, the earlier ones as history."""
        texts = [m for m in user_messages if isinstance(m, str) and m.strip()]
        if not texts:
            raise QueryError("the conversation has no user message to search for tools: send the user's request "
                             "as text", field="messages")
        return self.select(texts[-1], history=texts[:-1])

    # ---------------------------------------------------------------------------------------- registry

    def resolve(self, name: str) -> str | None:
        """The catalog id of the tool ``name`` means for this caller (:meth:`Caller.resolve`: a tool id, else a
        function or original name only one tool of the catalog has), or ``None`` when it means none the caller
        may use."""
        snap, caller, _ = self._view()  # the caller and the catalog of one version
        try:
            return caller.resolve(snap.catalog, name).id
        except QueryError:
            return None

    def visible_ids(self) -> list[str]:
        """Ids of the catalog tools this caller sees (its permissions and categories), catalog order."""
        snap, caller, _ = self._view()
        return [t.id for t in caller.visible(snap.catalog)]

    def registry(self, tools: Iterable[T], name_of: Callable[[T], str]) -> dict[str, T]:
        """The framework's tools keyed by catalog id, whoever may use them (an agent may hold every tool; the
        selection decides what reaches the model). A name the catalog does not know, or that more than one of
        its tools answer to, could never be selected: an error naming it (add its profile to the catalog, name
        the tool by its id or function name, or bind it yourself beside the selection)."""
        catalog = self.retriever.catalog
        author = Caller.author(catalog, include_deprecated=True)
        out: dict[str, T] = {}
        unknown = []
        for tool in tools:
            name = name_of(tool)
            try:  # the names this caller's tools were made with (catalog_specs), else the author's
                try:
                    out[self.caller.resolve(catalog, name).id] = tool
                except QueryError:
                    out[author.resolve(catalog, name).id] = tool
            except QueryError:
                unknown.append(name)
        if unknown:
            raise ValueError(f"{len(unknown)} tool(s) not in the catalog {catalog.name!r} (or named like several of "
                             f"its tools): {', '.join(unknown[:10])}; toolrag selects only catalog tools: add their "
                             "profiles (toolrag import mcp, or YAML), name them by id or function name, or bind them "
                             "yourself beside the selection")
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
