"""Decisions on a catalog shaped like published MCP servers (tests/data/published_mcp: names and schemas as
public servers publish them, no example requests), through the real retriever, models and decision model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from toolrag.search.results import Decision
from toolrag.search.retriever import ToolRetriever

CATALOG = ROOT / "tests" / "data" / "published_mcp" / "tools.json"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, models: Any) -> ToolRetriever:
    return ToolRetriever.from_catalog(CATALOG, data_dir=tmp_path_factory.mktemp("published"), models=models)


@pytest.mark.parametrize(("query", "tool"), [
    # look-alike tools (puppeteer_screenshot / puppeteer_navigate, move_file / write_file) with a clear
    # leader: called, not asked about
    ("take a screenshot of the page", "puppeteer_screenshot"),
    ("rename notes.txt to notes-old.txt", "move_file"),
    ("post 'deploy done' to #ops", "slack_post_message"),
])
def test_clear_requests_call_their_tool(published: ToolRetriever, query: str, tool: str) -> None:
    result = published.search(query)
    assert result.ids[0] == tool, result.decision_reason
    assert result.decision is Decision.EXECUTE and result.selected[0] == tool, result.decision_reason


def test_news_is_not_new(published: ToolRetriever) -> None:
    # "news" is not the plural of "new": tools that "create a new ..." no longer match every request about the
    # news (whether to call the web search for this vague request is left to the model: it is near its limit)
    result = published.search("what's the latest news about the EU AI act")
    assert result.ids[0] == "brave_web_search"
    bm25 = published.index.snapshot.bm25
    assert "news" in bm25.term_scores("latest news", "brave_web_search")
    assert bm25.term_scores("latest news", "create_entities") == {}  # "Create several new entities"


@pytest.mark.parametrize("query", ["tell me a joke", "write a haiku about autumn", "hello", "给我讲个笑话"])
def test_requests_that_need_no_tool(published: ToolRetriever, query: str) -> None:
    result = published.search(query)
    assert result.decision is Decision.NO_TOOL and result.selected == (), result.decision_reason


def test_a_one_word_request_asks(published: ToolRetriever) -> None:
    result = published.search("search")
    assert result.decision is Decision.CLARIFY, result.decision_reason
    assert len(result.selected) >= 2 and all("search" in t for t in result.selected[:2])


def test_the_catalog_loads_as_published(published: ToolRetriever) -> None:
    catalog = published.catalog
    assert len(catalog) == 31 and catalog.report.skipped == 0 and catalog.report.degraded == 0
    assert Path(CATALOG).is_file()
