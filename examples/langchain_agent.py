"""A LangChain agent whose tools toolrag selects at every turn (middleware), on the bundled catalog.

    pip install -r requirements.txt -e ".[langchain]"
    python examples/langchain_agent.py [--role employee]

Offline it runs LangChain's own fake chat model, scripted to call the first tool it is given; with
OPENAI_API_KEY set (and ``pip install langchain-openai``) the same script runs a real model. Each turn prints
toolrag's decision and the tools that reached the model on each call.
"""

from __future__ import annotations

from demo_support import (
    TURNS,
    arguments,
    demo_call,
    langchain_model,
    langchain_real_model,
    real_model_name,
    report,
    retriever,
)
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from toolrag.adapters import ToolSelector
from toolrag.adapters.langchain import ToolragMiddleware
from toolrag.adapters.lc_common import catalog_tools, message_text


def main() -> int:
    args = arguments(__doc__.splitlines()[0])
    selector = ToolSelector(retriever(args), role=args.role)
    real = real_model_name()
    model = langchain_real_model(real) if real else langchain_model()
    middleware = ToolragMiddleware(selector)
    agent = create_agent(model, tools=catalog_tools(selector, demo_call), middleware=[middleware],
                         system_prompt="You are Acme's office assistant.")
    messages: list = []
    for n, request in enumerate(TURNS, start=1):
        before = len(getattr(model, "calls", ()))
        state = agent.invoke({"messages": [*messages, HumanMessage(request)]})
        messages = state["messages"]
        reached = getattr(model, "calls", [])[before:] if not real else ["(a real model: see its trace)"]
        report(n, request, middleware.turn_of(), reached, message_text(messages[-1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
