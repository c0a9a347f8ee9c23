"""Decisions on a catalog shaped like published MCP servers (tests/data/published_mcp: names and schemas as
public servers publish them, no example requests), through the real retriever, models and decision model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from decision_margin import assert_decided

from toolrag.decision.addresses import takes_web_address
from toolrag.search.results import Decision
from toolrag.search.retriever import ToolRetriever

pytestmark = pytest.mark.slow  # real models or a real Chroma index

CATALOG = ROOT / "tests" / "data" / "published_mcp" / "tools.json"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, models: Any) -> ToolRetriever:
    return ToolRetriever.from_catalog(CATALOG, data_dir=tmp_path_factory.mktemp("published"), models=models)


@pytest.mark.parametrize(("query", "tool", "decision"), [
    # look-alike tools (puppeteer_screenshot / puppeteer_navigate, move_file / write_file): the right one ranks
    # first; the decision is asserted only where it has a margin (tests/decision_margin.py): "rename" sits within
    # it of injecting nothing (P(no tool) about 0.6, docs/decisions.md lists it), so only its ranking is
    ("take a screenshot of the page", "puppeteer_screenshot", Decision.EXECUTE),
    ("rename notes.txt to notes-old.txt", "move_file", None),
])
def test_clear_requests_rank_their_tool_first(published: ToolRetriever, query: str, tool: str,
                                              decision: Decision | None) -> None:
    result = published.search(query)
    assert result.ids[0] == tool, result.decision_reason
    assert len(result.tools) == len(result.selected) and result.selected[:1] in ((), (tool,))
    if decision is not None:
        assert tool in result.selected
        assert_decided(result, decision, published.decider.model)


def test_news_is_not_new(published: ToolRetriever) -> None:
    # "news" is not the plural of "new": tools that "create a new ..." no longer match every request about the
    # news (whether to call the web search for this vague request is left to the model: it is near its limit)
    result = published.search("what's the latest news about the EU AI act")
    assert result.ids[0] == "brave_web_search"
    bm25 = published.index.snapshot.bm25
    assert "news" in bm25.term_scores("latest news", "brave_web_search")
    assert bm25.term_scores("latest news", "create_entities") == {}  # "Create several new entities"


@pytest.mark.parametrize("query", ["tell me a joke", "hello", "给我讲个笑话"])
def test_requests_that_need_no_tool(published: ToolRetriever, query: str) -> None:
    result = published.search(query)
    assert result.selected == () and result.tools == (), result.decision_reason
    assert_decided(result, Decision.NO_TOOL, published.decider.model)


@pytest.mark.parametrize(("query", "tool", "decision"), [
    ("把这个文件夹里的文件列出来", "list_directory", Decision.EXECUTE),
    ("在 Slack 的 general 频道发条消息说我今天请假", "slack_post_message", None),  # within the margin: ranking only
    ("把纽约时间下午三点换算成北京时间", "convert_time", Decision.EXECUTE),
    ("今天心情不好，陪我聊聊天", None, Decision.NO_TOOL),
    ("帮我写一首关于秋天的诗", None, Decision.NO_TOOL),
    ("怎么做红烧肉", None, Decision.NO_TOOL),
])
def test_chinese_requests_to_an_english_catalog(published: ToolRetriever, query: str, tool: str | None,
                                                decision: Decision) -> None:
    # The catalog has no Chinese: the model reads the request through both text models (the English one through
    # its gloss) and learned such requests from HammerBench's Chinese requests to its English tools.
    result = published.search(query)
    assert result.decision_features["cjk"] == 1.0 and result.decision_features["lang_match"] == 0.0
    if tool is not None:
        assert result.ids[0] == tool, result.decision_reason
    if decision is not None:
        assert tool is None or tool in result.selected, result.decision_reason
        assert_decided(result, decision, published.decider.model)


def test_the_catalog_loads_as_published(published: ToolRetriever) -> None:
    catalog = published.catalog
    assert len(catalog) == 31 and catalog.report.skipped == 0 and catalog.report.degraded == 0
    assert Path(CATALOG).is_file()


@pytest.mark.parametrize("query", [
    # read as "the web page URL", the two tools that open one rank first (fetch was ninth on "python" and "org",
    # read_multiple_files first for the docs page); whether to call one is the model's (docs/decisions.md: with
    # 31 tools it is unsure of these, a known miss)
    "what does https://example.com/pricing say",
    "is https://example.com a phishing site?",
    "summarize www.python.org/downloads",
    "read https://docs.python.org/3/whatsnew/3.13.html and tell me the highlights",
])
def test_a_request_with_a_web_address_finds_the_tools_that_open_one(published: ToolRetriever, query: str) -> None:
    result = published.search(query)
    assert "fetch" in result.ids[:2], result.ids[:3]
    tools = [published.catalog.get(t) for t in result.ids[:2]]
    assert all(p is not None and takes_web_address(p.parameters) for p in tools), result.ids[:2]
    assert result.decision_features["url"] == 1.0 and result.decision_features["takes_url"] == 1.0


def test_a_word_is_not_an_address(published: ToolRetriever) -> None:
    result = published.search("what is https and why is it safer than http")
    assert result.decision_features["url"] == 0.0, result.decision_reason
    assert_decided(result, Decision.NO_TOOL, published.decider.model)


def test_a_one_tool_fetch_server(tmp_path: Path, models: Any) -> None:
    """The published fetch server has one tool: a request with an address calls it, a joke does not."""
    import json

    tools = json.loads(CATALOG.read_text(encoding="utf-8"))["tools"]
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "tools.json").write_text(
        json.dumps({"tools": [t for t in tools if t["name"] == "fetch"]}), encoding="utf-8")
    server = ToolRetriever.from_catalog(tmp_path / "catalog", data_dir=tmp_path / "index", models=models)
    called = server.search("what does https://example.com/pricing say")
    assert called.selected == ("fetch",), called.decision_reason
    assert_decided(called, Decision.EXECUTE, server.decider.model)
    joke = server.search("tell me a joke")
    assert joke.selected == (), joke.decision_reason
    assert_decided(joke, Decision.NO_TOOL, server.decider.model)
