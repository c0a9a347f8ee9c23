"""Keyword stuffing is seen: a tool whose description is the 250 commonest description words of the bundled
catalog is flagged as "keyword stuffing" by ``toolrag lint``, the catalog report and ``toolrag import mcp``;
no description of the bundled, published-MCP or MetaTool catalogs is, and the score is a pure function the
decision can read (:func:`toolrag.catalog.lint.keyword_stuffing`)."""

from __future__ import annotations

import collections
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ASSETS, ROOT, SAMPLE

from toolrag.catalog.lint import STUFFING_THRESHOLD, keyword_stuffing, lint_catalog
from toolrag.catalog.loader import load_catalog
from toolrag.cli.main import main

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*|[\u4e00-\u9fff]+")


def commonest_words(n: int = 250) -> list[str]:
    """The ``n`` commonest words of the bundled catalog's descriptions."""
    counts = collections.Counter(w.lower() for t in load_catalog(SAMPLE) for w in _WORD.findall(t.description))
    return [w for w, _ in counts.most_common(n)]


STUFFED = {"id": "misc.everything", "name": "do_everything", "category": "misc",
           "description": " ".join(commonest_words()),
           "examples": [{"query": "help me with anything"}, {"query": "do it"}, {"query": "帮我处理"}],
           "negative_examples": ["nothing"]}


def stuffed_catalog(folder: Path) -> Path:
    """A copy of the bundled catalog with the stuffed tool added."""
    shutil.copytree(SAMPLE, folder / "sample_tools")
    shutil.copytree(ASSETS, folder / "assets")
    (folder / "sample_tools" / "misc.yaml").write_text(yaml.safe_dump([STUFFED], allow_unicode=True),
                                                       encoding="utf-8")
    return folder / "sample_tools"


def test_the_stuffed_description_scores_high_and_real_ones_do_not() -> None:
    words = commonest_words()
    assert len(words) == 250
    assert keyword_stuffing(" ".join(words)) >= 0.75
    assert keyword_stuffing(", ".join(words)) >= 0.75
    chinese_terms = "发票、报销、税号、金额、餐饮、交通、差旅、住宿、审批、付款、供应商、采购、合同、预算"
    assert keyword_stuffing(chinese_terms) == 1.0
    real = [t.description for t in load_catalog(SAMPLE)]
    real += [t.description for t in load_catalog(ROOT / "tests" / "data" / "published_mcp" / "tools.json")]
    real += list(json.loads((ROOT / "tests" / "data" / "metatool" / "plugin_des.json").read_text("utf-8")).values())
    assert len(real) > 300
    worst = max(real, key=keyword_stuffing)
    assert keyword_stuffing(worst) < STUFFING_THRESHOLD, worst
    # A sentence with a few terms after it is prose with tags, not stuffing.
    assert keyword_stuffing("Books a meeting room for a time slot. " + " ".join(words[:40])) < STUFFING_THRESHOLD
    assert keyword_stuffing("short, list") == 0.0  # too short to tell


def test_lint_flags_keyword_stuffing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = stuffed_catalog(tmp_path)
    flagged = [w for w in lint_catalog(load_catalog(folder)) if w.code == "keyword-stuffing"]
    assert [w.tool_id for w in flagged] == ["misc.everything"]
    assert main(["lint", "--catalog", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "misc.everything: keyword stuffing: " in out
    assert out.count("keyword stuffing") == 1


@pytest.mark.slow
def test_the_report_flags_keyword_stuffing(tmp_path: Path, models: Any) -> None:
    from toolrag.evaluation.html_report import render_html
    from toolrag.evaluation.loo import RetrievabilityChecker
    from toolrag.evaluation.report import CatalogReport
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    folder = tmp_path / "small"
    folder.mkdir()
    (folder / "tools.yaml").write_text(yaml.safe_dump([
        STUFFED, {"id": "weather.now", "name": "get_weather", "category": "travel",
                  "description": "Current weather conditions (temperature, wind, rain) for a city right now.",
                  "examples": [{"query": "is it raining in London"}, {"query": "weather in Paris now"},
                               {"query": "北京现在天气怎么样"}]},
        {"id": "rooms.book", "name": "book_room", "category": "office",
         "description": "Book a meeting room for a time slot and invite attendees.",
         "examples": [{"query": "book a meeting room for 3pm"}, {"query": "reserve a room"},
                      {"query": "订明天下午的会议室"}]}], allow_unicode=True), encoding="utf-8")
    retriever = ToolRetriever.from_catalog(folder, data_dir=tmp_path / "data", models=models)
    retrievability = RetrievabilityChecker(cache_dir=tmp_path / "loo").check(retriever)
    assert "keyword-stuffing" in retrievability.tool("misc.everything").lint
    page = render_html(CatalogReport("small", Settings(), retrievability, None, None, None, "now"))
    assert "keyword stuffing: " in page


@pytest.mark.slow
def test_import_mcp_flags_keyword_stuffing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A third-party server that ships a stuffed description: the import says so."""
    folder = stuffed_catalog(tmp_path / "server")
    server = [sys.executable, str(ROOT / "examples" / "catalog_mcp_server.py"), "--catalog", str(folder)]
    assert main(["import", "mcp", "--out", str(tmp_path / "imported"), "--no-index", "--", *server]) == 0
    err = capfd.readouterr().err
    assert "tool 'do_everything': keyword stuffing: " in err
    assert err.count("keyword stuffing") == 1


@pytest.mark.slow
def test_the_stuffed_tool_is_injected_for_no_bundled_request(tmp_path: Path, models: Any) -> None:
    """Issue 32's case through the real retriever: the stuffed tool reaches the top five of many bundled requests
    through its words alone, and the decision's selection injects it beside the top tool for none of them."""
    from toolrag import load_queries
    from toolrag.search.retriever import ToolRetriever

    retriever = ToolRetriever.from_catalog(stuffed_catalog(tmp_path), data_dir=tmp_path / "data", models=models)
    rows = [r for r in load_queries(SAMPLE / "queries.yaml") if r.image is None]
    in_top5 = injected = 0
    for row in rows:
        result = retriever.search(row.query, permissions=row.permissions, role=row.role, history=row.history)
        in_top5 += STUFFED["id"] in result.ids[:5]
        injected += STUFFED["id"] in result.selected
    assert in_top5 >= 10, in_top5  # the case exists: its words pull it into the top five
    assert injected == 0
