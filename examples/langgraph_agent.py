"""A LangGraph agent whose tools toolrag selects at every turn (a select_tools node), on the bundled catalog.

    pip install -r requirements.txt -e ".[langgraph]"
    python examples/langgraph_agent.py [--role employee]

The graph is toolrag.adapters.langgraph.create_agent: select_tools -> agent -> tools -> agent, with a
checkpointer keeping the conversation (the follow-up "make it 4pm instead, same room" finds its tool through the earlier
turn). Offline it runs LangChain's own fake chat model, scripted to call the first tool it is given; with
OPENAI_API_KEY set (and ``pip install langchain-openai``) the same script runs a real model.
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
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from toolrag.adapters import ToolSelector
from toolrag.adapters.langgraph import create_agent
from toolrag.adapters.lc_common import catalog_tools, human_texts, message_text


def main() -> int:
    args = arguments(__doc__.splitlines()[0])
    selector = ToolSelector(retriever(args), role=args.role)
    real = real_model_name()
    model = langchain_real_model(real) if real else langchain_model()
    graph = create_agent(model, catalog_tools(selector, demo_call), selector, checkpointer=InMemorySaver(),
                         system_prompt="You are Acme's office assistant.")
    config = {"configurable": {"thread_id": "example"}}
    for n, request in enumerate(TURNS, start=1):
        before = len(getattr(model, "calls", ()))
        state = graph.invoke({"messages": [HumanMessage(request)]}, config)
        reached = getattr(model, "calls", [])[before:] if not real else ["(a real model: see its trace)"]
        turn = selector.select_conversation(human_texts(state["messages"]))  # remembered: no second search
        report(n, request, turn, reached, message_text(state["messages"][-1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
