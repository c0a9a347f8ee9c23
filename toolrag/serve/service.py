"""What ``search_tools`` and ``call_tool`` do, apart from MCP: the caller's role, the search answer, the
check that a caller only calls what it can see, forwarding, and the audit record of each call.

Kept free of the MCP SDK so the logic is tested directly; :mod:`toolrag.serve.app` wraps it in an MCP
server. Each request makes one :class:`toolrag.catalog.caller.Caller` (:meth:`ToolService.caller`) and every
question of visibility goes through it: the search, the servers a caller is told are down, and the tool a name
means (:meth:`Caller.resolve`: a bare name that more than one tool of the catalog answers to is refused for
every caller, so a call never goes to another server by role). A caller never learns of a tool its role
hides: ``search_tools`` cannot return it and ``call_tool`` answers exactly as for a tool that does not exist.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Mapping
from typing import Any

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.catalog.schema import argument_problems
from toolrag.errors import CallRefused, ImageError, QueryError, ToolragError, UpstreamError
from toolrag.images import decode_base64_image
from toolrag.index.replica import ReplicaIndex
from toolrag.observe import metrics, tracing
from toolrag.search.retriever import ToolRetriever
from toolrag.search.warmup import warm_up_in_background
from toolrag.serve.gateway import Gateway

__all__ = ["MAX_K", "CallRefused", "ToolService"]

MAX_K = 50


class ToolService:
    """Searches for a caller (its role decides what it sees) and, in a gateway, forwards its tool calls."""

    def __init__(self, retriever: ToolRetriever, *, role: str | None = None, tokens: Mapping[str, str] | None = None,
                 gateway: Gateway | None = None, warm: bool = True) -> None:
        """``warm``: load and run the models once in the background (:mod:`toolrag.search.warmup`), so the first
        client's request with an image pays no OCR load (seconds on a CPU)."""
        self.retriever = retriever
        self.role = role
        self.tokens = dict(tokens or {})
        self.gateway = gateway
        if role is not None and _loaded(retriever):
            retriever.catalog.role_codes(role)  # an unknown role is an error now, not at the first search
        self.warm_up: threading.Thread | None = warm_up_in_background(
            retriever.models, decision=retriever.decider.bank) if warm else None

    def role_for(self, headers: Mapping[str, str] | None) -> str | None:
        """The caller's role: the one its ``Authorization: Bearer`` token maps to, else the configured one. A
        token that is given but unknown is refused (no silent fallback to another role)."""
        auth = next((v for k, v in (headers or {}).items() if k.lower() == "authorization"), None)
        if not auth or not self.tokens:
            return self.role
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer":
            for known, role in self.tokens.items():
                if hmac.compare_digest(known.encode("utf-8"), token.strip().encode("utf-8")):
                    return role
        raise CallRefused("the Authorization bearer token is not one this server knows; ask its operator for one")

    def caller(self, role: str | None, catalog: Catalog | None = None) -> Caller:
        """The caller of one request: the codes of ``role`` (none without a role: only unrestricted tools) in
        ``catalog`` (the version the request searches; default the live one)."""
        return Caller.of(catalog if catalog is not None else self.retriever.catalog, role=role)

    def search(self, query: str, *, image: str | None = None, k: int = 5, role: str | None = None) -> dict[str, Any]:
        """The answer of ``search_tools``: decision, its reason (when the result has one), clarification,
        confidence and the selected tools with their original names, function names and input schemas;
        ``probabilities`` and ``selected`` (the ids the decision would inject, a prefix of ``tools``) from the
        decision model (docs/decisions.md)."""
        if not isinstance(query, str):
            raise QueryError(f"query is {_kind(query)}; expected a string (the user's request)")
        if image is not None and not isinstance(image, str):
            raise QueryError(f"image is {_kind(image)}; expected a string (the image's bytes as base64) or null")
        if isinstance(k, bool) or not isinstance(k, int):
            raise QueryError(f"k is {_kind(k)}; expected an integer from 1 to {MAX_K} (how many tools to return)")
        if not 1 <= k <= MAX_K:
            raise QueryError(f"k is {k}; expected an integer from 1 to {MAX_K} (how many tools to return)")
        notes = []
        if image is not None and not image.strip():
            notes.append("image is an empty string: searched without an image (send the image's bytes as base64, "
                         "or leave image out)")
        snapshot = self.retriever.snapshot  # the answer's tools come from the version searched, whatever swaps
        who = self.caller(role, snapshot.catalog)
        result = self.retriever.search(query, image=_image_bytes(image), caller=who, top_k=k, snapshot=snapshot)
        catalog = snapshot.catalog
        # exactly what the decision injects (none on NO_TOOL, the call on EXECUTE, the candidates asked about on
        # CLARIFY): the agent gets these schemas and no other
        chosen = set(result.selected)
        selected = [c for c in result.candidates if c.id in chosen]
        tools = []
        for candidate in selected:
            profile = catalog.get(candidate.id)
            if profile is None:  # removed by a reload since the search
                continue
            tools.append(self._tool(profile, candidate.function_name, candidate.score))
        answer: dict[str, Any] = {
            "decision": result.decision.value,
            "reason": _plain_reason(getattr(result, "decision_reason", None)),
            "decided_by": result.decided_by.value,
            "clarification": result.clarification,
            "tools": tools,
        }
        if result.scores is not None:  # the decision model's probabilities and what it would inject
            answer["probabilities"] = result.scores.to_json()
        answer["selected"] = list(result.selected)
        answer["index_version"] = result.index_version
        notes += list(getattr(result, "notes", ()) or ())
        if notes:
            answer["notes"] = notes
        if self.gateway is not None:
            down = self._unavailable(who)
            if down:
                answer["unavailable_servers"] = down
            answer["how_to_call"] = "call_tool with tool = a tool's id and arguments matching its input_schema"
        return answer

    def _tool(self, profile: ToolProfile, function_name: str, score: float) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": profile.id, "name": profile.name, "function_name": function_name,
                                 "description": profile.description, "input_schema": dict(profile.parameters),
                                 "score": round(float(score), 4)}
        if profile.mutation:
            entry["mutation"] = True
        if self.gateway is not None:
            entry["server"] = self.gateway.routes[profile.id].server
        return entry

    def _unavailable(self, caller: Caller) -> dict[str, str]:
        """Upstream servers that are down, among those whose tools ``caller`` could use (the codes a server
        requires of every caller of its tools)."""
        if self.gateway is None:
            return {}
        specs = {u.name: u.spec for u in self.gateway.upstreams.values()}
        return {name: why for name, why in self.gateway.unavailable_to_callers().items()
                if caller.permits(specs[name].permissions)}

    def resolve(self, tool: str, caller: Caller, catalog: Catalog | None = None) -> ToolProfile:
        """The tool ``caller`` names (:meth:`toolrag.catalog.caller.Caller.resolve`: its id, else its function
        name or original name when only one tool of the catalog has it); :class:`CallRefused` otherwise, with
        the same words for a hidden tool and an unknown one, and for an ambiguous name whoever asks. ``catalog``:
        the one the caller was made on (default the live one)."""
        try:
            return caller.resolve(catalog if catalog is not None else self.retriever.catalog, tool)
        except QueryError as exc:
            raise CallRefused(str(exc), tool=tool, field="tool") from None

    async def call(self, tool: str, arguments: Mapping[str, Any] | None, *, role: str | None) -> Any:
        """Forward a call to the upstream server owning ``tool``, after checking the caller can see it; every
        call (refused, failed or done) is audited."""
        if self.gateway is None:
            raise CallRefused("this server only searches; call the tool on its own server")
        start = time.perf_counter()
        record: dict[str, Any] = {"kind": "call", "role": role, "tool": tool,
                                  "index_version": self.retriever.snapshot.version}
        with tracing.span("toolrag.call_tool", {"toolrag.role": role or "",
                                                "toolrag.tool": tool if isinstance(tool, str) else None}) as span:
            try:
                return await self._call(self.gateway, tool, arguments, role=role, record=record)
            finally:
                record["latency_ms"] = round((time.perf_counter() - start) * 1000, 2)
                outcome = str(record.setdefault("outcome", "error"))
                metrics.record_call(outcome, role=role, seconds=time.perf_counter() - start)
                if span is not None:
                    span.set_attribute("toolrag.outcome", outcome)
                    if record.get("server"):
                        span.set_attribute("toolrag.server", str(record["server"]))
                if self.retriever.audit is not None:
                    self.retriever.audit.write(record)

    async def _call(self, gateway: Gateway, tool: Any, arguments: Any, *, role: str | None,
                    record: dict[str, Any]) -> Any:
        try:
            if not isinstance(tool, str):
                raise QueryError(f"tool is {_kind(tool)}; expected a string (a tool's id from search_tools)")
            if arguments is not None and not isinstance(arguments, Mapping):
                raise QueryError(f"arguments is {_kind(arguments)}; expected an object of argument values "
                                 "matching the tool's input_schema")
            catalog = self.retriever.catalog  # one version for the caller and the name it resolves
            profile = self.resolve(tool, self.caller(role, catalog), catalog)
            route = gateway.routes[profile.id]
            record.update(tool=profile.id, server=route.server)
            problems = argument_problems(profile.parameters, arguments or {})
            if problems:
                raise QueryError(f"arguments do not match the input_schema of {profile.id!r}: " + "; ".join(problems)
                                 + " (nothing was forwarded)")
            result = await gateway.call(profile.id, arguments or {})
            record["outcome"] = "error" if getattr(result, "is_error", False) else "ok"
            return result
        except CallRefused:
            record["outcome"] = "refused"
            raise
        except UpstreamError:
            record["outcome"] = "unavailable"
            raise
        except ToolragError:
            record["outcome"] = "invalid"
            raise

    def health(self) -> dict[str, Any]:
        """What ``/readyz`` answers: ready (a version loaded, its store answering), the index, its version and tools,
        the decision model's version; a gateway adds the upstream servers that are down (by name)."""
        out = self.retriever.health()
        if self.gateway is not None:
            out["unavailable_servers"] = sorted(self.gateway.unavailable())
        return out

    def refused(self, kind: str, why: str, *, tool: Any = None) -> None:
        """Audit a request refused before it reached :meth:`search` or :meth:`call` (an unknown bearer token):
        ``kind`` is ``search`` or ``call``; the tool is recorded as the caller named it."""
        if self.retriever.audit is None:
            return
        record: dict[str, Any] = {"kind": kind, "role": None, "outcome": "refused", "reason": why}
        if kind == "call":
            record["tool"] = tool if isinstance(tool, str) else None
        else:
            record["decision"] = None
        self.retriever.audit.write(record)


def _loaded(retriever: ToolRetriever) -> bool:
    index = retriever.index
    return not isinstance(index, ReplicaIndex) or index.health().version is not None


def _kind(value: Any) -> str:
    """A wrong argument in words: its JSON type and, when short, its value."""
    kinds = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"), (list, "an array"),
             (dict, "an object"), (type(None), "null"))
    kind = next((name for t, name in kinds if isinstance(value, t)), type(value).__name__)
    text = repr(value)
    return f"{kind} {text}" if value is not None and len(text) <= 40 else kind


def _plain_reason(reason: Any) -> Any:
    """The result's decision reason as JSON (text, a mapping, or an object's ``to_json()``); ``None`` when the
    result has none."""
    if reason is None or isinstance(reason, str | int | float | dict | list):
        return reason
    to_json = getattr(reason, "to_json", None)
    return to_json() if callable(to_json) else str(reason)


def _image_bytes(image: str | None) -> bytes | None:
    """An image given as base64 (or a ``data:image/...;base64,`` URL) as bytes; never a path: an MCP caller
    must not make the server read its own files."""
    if image is None or not image.strip():
        return None
    try:
        return decode_base64_image(image)
    except ImageError as exc:
        raise ImageError(f"image: {exc}") from None
