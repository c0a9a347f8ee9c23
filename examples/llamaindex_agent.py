"""A LlamaIndex FunctionAgent whose tools toolrag retrieves at every turn (tool_retriever), on the bundled catalog.

    pip install -r requirements.txt -e ".[llamaindex]"
    python examples/llamaindex_agent.py [--role employee]

Offline it runs LlamaIndex's own MockFunctionCallingLLM, scripted to call the first tool it is given; with
OPENAI_API_KEY set (and ``pip install llama-index-llms-openai``) the same script runs a real model. Each turn
prints toolrag's decision and the tools that reached the model on each call.
"""

from __future__ import annotations

import asyncio
import warnings

from demo_support import (
    TURNS,
    arguments,
    demo_call,
    llamaindex_model,
    llamaindex_real_model,
    real_model_name,
    report,
    retriever,
)
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.workflow import Context

from toolrag.adapters import ToolSelector
from toolrag.adapters.llamaindex import ToolragObjectRetriever, catalog_tools

#: LlamaIndex says, at every run, that the conversation memory is not serialised: expected here.
warnings.filterwarnings("ignore", message="Skipping serialization of known unserializable key")


async def run() -> int:
    args = arguments(__doc__.splitlines()[0])
    selector = ToolSelector(retriever(args), role=args.role)
    real = real_model_name()
    llm = llamaindex_real_model(real) if real else llamaindex_model()
    tools = ToolragObjectRetriever(selector, catalog_tools(selector, demo_call))  # serves every conversation
    agent = FunctionAgent(tool_retriever=tools, llm=llm, system_prompt="You are Acme's office assistant.",
                          streaming=False)
    context = Context(agent)  # keeps the conversation between runs
    for n, request in enumerate(TURNS, start=1):
        before = len(getattr(llm, "calls", ()))
        with tools.conversation("demo"):  # the conversation this run belongs to (its history, its turn)
            answer = await agent.run(user_msg=request, ctx=context)
        reached = getattr(llm, "calls", [])[before:] if not real else ["(a real model: see its trace)"]
        report(n, request, tools.turn_of("demo"), reached, str(answer))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(run()))
