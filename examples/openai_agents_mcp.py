"""An OpenAI Agents SDK agent on an MCP server of 70-odd tools, toolrag filtering them at every turn.

    pip install -r requirements.txt -e ".[openai-agents]"
    python examples/openai_agents_mcp.py [--role employee]

The MCP server (examples/catalog_mcp_server.py, started over stdio) serves every tool of the bundled catalog;
the agent's tool filter (toolrag.adapters.openai_agents.ToolragToolFilter) keeps the few the decision selects,
and its instructions say to answer directly (NO_TOOL) or to ask the user first (CLARIFY). Offline it runs the
SDK's own ScriptedModel, scripted to call the first tool it is given; with OPENAI_API_KEY set the same script
runs a real model. Each turn prints toolrag's decision and the tools that reached the model on each call.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from agents import Agent, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio
from demo_support import TURNS, agents_model, arguments, real_model_name, report, retriever

from toolrag.adapters import ToolSelector
from toolrag.adapters.openai_agents import ToolragToolFilter

SERVER = Path(__file__).resolve().parent / "catalog_mcp_server.py"


async def run() -> int:
    args = arguments(__doc__.splitlines()[0])
    real = real_model_name()
    if not real:
        set_tracing_disabled(True)  # offline: no trace upload
    selector = ToolSelector(retriever(args), role=args.role)
    tool_filter = ToolragToolFilter(selector)
    model = agents_model()
    params = {"command": sys.executable, "args": [str(SERVER), "--catalog", args.catalog]}
    async with MCPServerStdio(params, tool_filter=tool_filter, cache_tools_list=True, name="catalog",
                              client_session_timeout_seconds=60) as server:
        agent = Agent(name="assistant", instructions=tool_filter.instructions("You are Acme's office assistant."),
                      mcp_servers=[server], model=real or model)
        items: list = []
        for n, request in enumerate(TURNS, start=1):
            before = len(model.calls)
            result = await Runner.run(agent, [*items, {"role": "user", "content": request}])
            items = result.to_input_list()
            reached = ([[t.name for t in call.tools] for call in model.calls[before:]] if not real
                       else ["(a real model: see its trace)"])
            report(n, request, tool_filter.turn_of(result.context_wrapper), reached, str(result.final_output))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(run()))
