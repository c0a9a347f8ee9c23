"""What the agent examples share: the conversation, the retriever, and scripted chat models (each framework's own
fake model, made to record the tools that reach it on every call and to answer as a tool-calling model would,
without a network). The adapter tests use the same models.

The script is the same everywhere: on a call with tools bound, call the first one with placeholder arguments
(each required parameter filled by its type); after a tool's result, answer with it; told by toolrag that the
request is ambiguous (a system note, or the clarification tool), ask the user the question; with no tool, answer
directly. With ``OPENAI_API_KEY`` set, :func:`real_model_name` names the model to use instead.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: One conversation: a request, a follow-up its history explains, a question no tool answers, a change asked of
#: tools that only read (asked, not called), and a request whose tool needs a permission most roles lack.
TURNS = (
    "book a meeting room for 3pm tomorrow",
    "make it 4pm instead, same room",
    "tell me a joke",
    "change the amount on my expense claim",
    "approve this month's payroll",
)

#: The model a real run uses (``TOOLRAG_EXAMPLE_MODEL``, default below) when ``OPENAI_API_KEY`` is set.
DEFAULT_REAL_MODEL = "gpt-4.1-mini"
AMBIGUOUS = "The request is ambiguous: ask the user first:"
CLARIFY_TOOL = "ask_user_to_clarify"


def real_model_name() -> str | None:
    """The real model to run against, or ``None`` (no API key: the scripted model runs); both variables are rows
    of ``toolrag.env_vars.ENV_VARS``, read through ``toolrag.config.env``."""
    from toolrag.config import env
    from toolrag.env_vars import EXAMPLE_MODEL_ENV, OPENAI_KEY_ENV

    if not env(OPENAI_KEY_ENV):
        return None
    return env(EXAMPLE_MODEL_ENV) or DEFAULT_REAL_MODEL


def placeholder_arguments(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A value for each required parameter of a JSON schema, by its type (first enum value when it has one)."""
    schema = schema or {}
    properties = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name in schema.get("required") or ():
        spec = properties.get(name) or {}
        if spec.get("enum"):
            out[name] = spec["enum"][0]
            continue
        kind = spec.get("type")
        kind = kind[0] if isinstance(kind, list) and kind else kind
        out[name] = {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}.get(kind, "example")
    return out


def question_in(texts: Sequence[str]) -> str | None:
    """The question toolrag asks the model to put to the user, if any of ``texts`` (system notes) holds one."""
    for text in texts:
        if AMBIGUOUS in text:
            return text.split(AMBIGUOUS, 1)[1].strip()
    return None


# --------------------------------------------------------------------------------------------- LangChain

def langchain_model(respond: Any = None) -> Any:
    """LangChain's ``GenericFakeChatModel``, able to bind tools, recording the tool names of every call in
    ``calls``. ``respond(messages, tools)`` (tools as OpenAI function dicts) replaces the script."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    def script(messages: list[Any], tools: list[dict[str, Any]]) -> Any:
        question = question_in([str(m.content) for m in messages if isinstance(m, SystemMessage)])
        if messages and isinstance(messages[-1], ToolMessage):
            return AIMessage(content=f"Done: {str(messages[-1].content)[:120]}")
        if question:
            return AIMessage(content=question)
        if tools:
            return AIMessage(content="", tool_calls=[{"name": tools[0]["name"], "id": f"call_{len(messages)}",
                                                      "args": placeholder_arguments(tools[0].get("parameters"))}])
        return AIMessage(content="(answered without a tool)")

    class ScriptedChatModel(GenericFakeChatModel):
        calls: list[list[str]] = []  # noqa: RUF012 (a pydantic field: copied per instance)

        def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            tools = [t["function"] for t in kwargs.get("tools") or ()]
            self.calls.append([t["name"] for t in tools])
            reply = (respond or script)(messages, tools)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return ScriptedChatModel(messages=iter(()), calls=[])


def langchain_real_model(name: str) -> Any:
    """A real chat model through LangChain (needs ``pip install langchain-openai``)."""
    from langchain.chat_models import init_chat_model

    return init_chat_model(f"openai:{name}")


# --------------------------------------------------------------------------------------------- LlamaIndex

def llamaindex_model() -> Any:
    """LlamaIndex's ``MockFunctionCallingLLM`` with a response generator; the tool names of every call go to
    ``model.calls``."""
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    calls: list[list[str]] = []

    def respond(messages: Sequence[Any], **kwargs: Any) -> Any:
        tools = list(kwargs.get("tools") or ())
        names = [t.metadata.name for t in tools]
        calls.append(names)
        if messages and messages[-1].role == MessageRole.TOOL:
            asked = len(messages) > 1 and any(isinstance(b, ToolCallBlock) and b.tool_name == CLARIFY_TOOL
                                              for b in messages[-2].blocks)
            text = str(messages[-1].content)
            return ChatMessage(role=MessageRole.ASSISTANT, content=text if asked else f"Done: {text[:120]}")
        if not tools:
            return ChatMessage(role=MessageRole.ASSISTANT, content="(answered without a tool)")
        first = next((t for t in tools if t.metadata.name == CLARIFY_TOOL), tools[0])
        schema = first.metadata.get_parameters_dict()
        block = ToolCallBlock(tool_call_id=f"call_{len(calls)}", tool_name=first.metadata.name,
                              tool_kwargs=placeholder_arguments(schema))
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])

    model = MockFunctionCallingLLM(response_generator=respond, is_chat_model=True)
    model.__dict__["calls"] = calls  # the pydantic model keeps extra state in its __dict__
    return model


def llamaindex_real_model(name: str) -> Any:
    """A real LLM through LlamaIndex (needs ``pip install llama-index-llms-openai``)."""
    from llama_index.llms.openai import OpenAI

    return OpenAI(model=name)


# ------------------------------------------------------------------------------------------- Agents SDK

def agents_model(steps: int = 64) -> Any:
    """The Agents SDK's ``ScriptedModel`` answering every call with the script; ``model.calls`` records each
    call, its ``tools`` included."""
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    def respond(call: Any) -> Any:
        last = call.input[-1] if isinstance(call.input, list) and call.input else None
        kind = last.get("type") if isinstance(last, dict) else None
        question = question_in([call.system_instructions or ""])
        if kind == "function_call_output":
            output = last.get("output")
            if isinstance(output, list):  # an MCP result: its text parts
                output = " ".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
            return [assistant_message(f"Done: {str(output)[:120]}")]
        if question:
            return [assistant_message(question)]
        if call.tools:
            tool = call.tools[0]
            return [function_call(tool.name, placeholder_arguments(getattr(tool, "params_json_schema", None)),
                                  call_id=f"call_{len(model.calls)}")]
        return [assistant_message("(answered without a tool)")]

    model = ScriptedModel([ModelStep.respond(respond) for _ in range(steps)])
    return model


# ----------------------------------------------------------------------------------------------- set-up

def arguments(description: str) -> argparse.Namespace:
    """The examples' command line: the catalog, the caller's role, the data folder. Output is UTF-8 from here on
    (the turns include Chinese; :func:`toolrag.config.utf8_output`)."""
    from toolrag.config import utf8_output

    utf8_output()
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--catalog", default=str(ROOT / "sample_tools"), help="catalog folder or file")
    parser.add_argument("--role", default="employee", help="the caller's role (default: employee)")
    parser.add_argument("--data-dir", default=None, help="toolrag's data folder (default: TOOLRAG_DATA_DIR)")
    return parser.parse_args()


def retriever(args: argparse.Namespace) -> Any:
    """The one retriever of the run (models loaded once, the index synced): every adapter shares it."""
    from toolrag import ToolRetriever
    from toolrag.config import configure_environment

    configure_environment()
    return ToolRetriever.from_catalog(args.catalog, data_dir=args.data_dir)


def demo_call(tool_id: str, arguments: Mapping[str, Any]) -> str:
    """What the example's tools do: say which tool ran with which arguments (no real system is touched)."""
    return f"{tool_id} ran with {dict(arguments)}"


def report(n: int, request: str, turn: Any, reached: Sequence[Sequence[str]], answer: str) -> None:
    """Print one turn: the request, toolrag's decision and selection, the tools of each model call, the answer."""
    print(f"turn {n}: {request}")
    print(f"  toolrag: {turn.describe()}")
    for i, names in enumerate(reached, start=1):
        print(f"  model call {i}: tools {list(names)}")
    print(f"  agent: {answer}")
