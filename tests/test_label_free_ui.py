"""The label-free estimate and the suggested examples in the app, through gradio_client and a real browser, on
a copy of the published MCP catalog (no example request): its own backend and server, so accepting examples
never touches the sample catalog the other UI tests share."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from ui_support import serve_app

from toolrag.catalog.extra_examples import EXTRA_EXAMPLES_FILE, read_extra_examples

pytest_plugins = ["ui_support"]
pytestmark = pytest.mark.slow

CATALOG = ROOT / "tests" / "data" / "published_mcp" / "tools.json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, data_dir: Path, models: Any,
           network_guard: Any) -> Iterator[tuple[str, Any, Path]]:
    """The app on a copy of the published catalog, served on a free loopback port."""
    from toolrag.ui import Backend
    from toolrag.ui.app import create_app

    folder = tmp_path_factory.mktemp("published-ui")
    shutil.copy(CATALOG, folder / "tools.json")
    backend = Backend(folder, data_dir=data_dir, models=models)
    backend.build()
    assert backend.ready, backend.error
    demo = create_app(backend)
    url = serve_app(demo)
    try:
        yield url, backend, folder
    finally:
        demo.close()


def test_every_check_at_once_on_a_catalog_without_examples(server: tuple[str, Any, Path]) -> None:
    """*Run every check* (the handler the button calls; first in this module, before a test adds an example): no
    example to find (n/a), the estimate of every tool,
    a labelled file that cannot be read says so in its section; the summary shows the estimate and each section
    appears only with content."""
    import gradio as gr

    from toolrag.settings import SIGNALS, Settings
    from toolrag.ui.evaluate_handlers import SETTING_CONTROLS, StudioHandlers
    from toolrag.ui.evaluate_health import SHOWN, HealthHandlers
    from toolrag.ui.evaluate_label_free import LabelFreeHandlers
    from toolrag.ui.evaluate_unmatched import UnmatchedHandlers
    from toolrag.ui.handlers import Handlers
    from toolrag.ui.studio import Studio

    _, backend, folder = server
    eh = StudioHandlers(Handlers(backend), Studio(backend))
    hh = HealthHandlers(eh, LabelFreeHandlers(eh), UnmatchedHandlers(eh))
    base = Settings()
    defaults = {"top_k": base.top_k, "fusion": base.fusion.value, "rerank": False, "precision_target": 85.0,
                "clean_target": 85.0, "normalization": base.normalization.value,
                **{f"w_{s}": base.weights[s] for s in SIGNALS}}  # the Search controls at the page's defaults
    said: list[float] = []
    out = hh.run_all(lambda f, desc=None: said.append(f), {"file": str(folder / "missing.csv")}, {}, 0.5, None,
                     None, *(defaults[name] for name in SETTING_CONTROLS))
    retr_cards, _retr, _plot, _tools, _pairs, lf_cards, lf_summary, _lf, eval_cards, eval_summary, *rest = out
    _failing, unmatched_summary, _unmatched, state, unmatched = rest
    assert "n/a" in retr_cards and "no tool has example requests" in retr_cards
    assert "31 tools estimated" in lf_summary and 'data-metric="estimated_found_first"' in lf_cards
    assert eval_summary.startswith("**Not run:**") and "missing.csv" in eval_summary and eval_cards == gr.skip()
    assert unmatched_summary == gr.skip()  # no audit log: nothing to read
    assert said == sorted(said) and said[-1] == 1.0  # one bar, moving forward
    summary, *shown = hh.refresh(state, unmatched)
    visible = {name: update["visible"] for name, update in zip(SHOWN, shown, strict=True)}
    assert visible["retrievability"] and visible["estimate"] and not visible["labelled"]
    assert not visible["hardest"]  # no example to draw: no empty figure
    assert not visible["unmatched"] and not visible["tuning"] and not visible["threshold"]
    estimate = state["facts"]["estimate"]
    assert f"{100 * estimate['found_first']:.1f}%" in summary and "31 tools, from their descriptions" in summary
    assert "examples found first" in summary and "n/a" in summary  # checked: nothing to find by examples


def test_client_estimates_suggests_and_adds_examples(server: tuple[str, Any, Path]) -> None:
    from gradio_client import Client

    url, backend, folder = server
    client = Client(url, verbose=False, download_files=False)
    cards, summary, table = client.predict(api_name="/label_free")
    assert 'data-metric="estimated_found_first"' in cards and "%" in cards
    assert "31 tools estimated" in summary and "At risk" in summary and "How well it tracked" in summary
    rows = table["data"]
    assert len(rows) == 31 and rows[0][3] != "found first"  # at risk first
    at_risk = rows[0][0]
    _, note = client.predict(tool_id=at_risk, api_name="/suggest_examples")
    assert at_risk in note
    # the health cards of a catalog without examples read n/a with the reason, never 0.0%
    health = client.predict(api_name="/retrievability")[0]
    assert "n/a" in health and "no tool has example requests" in health and "0.0%" not in health
    status, _, _, _, _ = client.predict(tool_id=at_risk, query="an example request written by the author",
                                        rank_query="", api_name="/add_example")
    assert "Added" in status and EXTRA_EXAMPLES_FILE in status
    held = read_extra_examples(folder / EXTRA_EXAMPLES_FILE)
    assert [q for q, _ in held[at_risk]] == ["an example request written by the author"]
    assert "an example request written by the author" in [
        e.query for e in backend.require().catalog.get(at_risk).examples]


def test_browser_estimate_then_one_click_accepts_a_suggestion(server: tuple[str, Any, Path], browser: Any,
                                                               screenshot: Any) -> None:
    from playwright.sync_api import expect

    url, backend, folder = server
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="en-US")
    local = ("http://127.0.0.1", "data:", "blob:")
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(local) else r.abort())
    context.set_default_timeout(120_000)
    try:
        page = context.new_page()
        page.goto(url)
        page.get_by_role("tab", name="Evaluate").click()
        page.locator("#lf-run").click()
        expect(page.locator("#lf-summary")).to_contain_text("tools estimated from their descriptions alone")
        expect(page.locator("#lf-tools [data-testid=cell-0-0]")).to_be_visible()
        # the first tool at risk with a suggestion (at-risk tools come first, as in the report)
        cell = lambda row, col: page.locator(f"#lf-tools [data-testid=cell-{row}-{col}]")  # noqa: E731
        pick = 0
        while cell(pick, 3).inner_text().strip() == "found first" or not cell(pick, 6).inner_text().strip():
            assert cell(pick, 3).inner_text().strip() != "found first", "no tool at risk has a suggestion"
            pick += 1
        tool_id = cell(pick, 0).inner_text().strip()
        cell(pick, 0).click()
        expect(page.locator("#suggest-note")).to_contain_text(tool_id)
        suggestion = page.locator("#suggest-table [data-testid=cell-0-0]")
        request = suggestion.inner_text().strip()
        page.evaluate("document.querySelector('#suggest-table').scrollIntoView({block: 'center'})")
        screenshot(page, "suggestions")
        suggestion.click()
        expect(page.locator("#suggest-status")).to_contain_text("Added")
        held = read_extra_examples(folder / EXTRA_EXAMPLES_FILE)
        assert request in [q for q, _ in held[tool_id]]
        assert request in [e.query for e in backend.require().catalog.get(tool_id).examples]
    finally:
        context.close()

