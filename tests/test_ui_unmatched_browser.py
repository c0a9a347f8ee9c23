"""The Unmatched requests part of the Evaluate tab, walked in Chromium: real searches made in the Search tab reach
the audit log, the tab lists those that found no tool by nearest tool, the author labels one as needing no tool
and sees the evaluation re-run with it; with request text redacted (hash only) the tab says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolrag.audit import AuditLog, read_audit
from toolrag.evaluation.queries import load_queries
from toolrag.ui.evaluate_unmatched import NO_TOOL_LABEL

pytest_plugins = ["ui_support"]
pytestmark = [pytest.mark.slow, pytest.mark.browser]


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def search(page: Any, query: str) -> None:
    """Search and wait until the history holds one more row of ``query`` (a repeated request is already there, and a
    click while the previous search still runs would be dropped)."""
    # the history appears with the first search: read it only if it is on the page
    before = page.evaluate("document.querySelector('#history')?.innerText || ''").count(query)
    page.locator("#query textarea").fill(query)
    page.locator("#search-btn").click()
    page.wait_for_function("([q, n]) => (document.querySelector('#history')?.innerText || '').split(q).length - 1 > n",
                           arg=[query, before], timeout=90_000)


def unmatched_requests(page: Any) -> list[str]:
    rows = page.locator("#unmatched-table [role=row].virtual-row")
    return [page.locator(f"#unmatched-table [data-testid=cell-{r}-1]").inner_text().strip()
            for r in range(rows.count())]


def test_an_author_labels_an_unmatched_request(page: Any, ui_server: Any, tmp_path: Path) -> None:
    retriever = ui_server.backend.retriever
    queries = ui_server.backend.catalog_path / "queries.yaml"
    original = queries.read_text(encoding="utf-8")
    retriever.audit = AuditLog(tmp_path / "audit.jsonl")
    try:
        _walk(page, ui_server, len(load_queries(queries)))
    finally:
        retriever.audit = None
        queries.write_text(original, encoding="utf-8")  # other tests see the catalog's rows as they were


def _walk(page: Any, ui_server: Any, n_rows: int) -> None:
    expect(page.locator("#status")).to_contain_text("ready")
    for request in ("tell me a joke about penguins", "tell me a joke about penguins", "what is 17 times 23",
                    "book a meeting room for 3pm tomorrow"):
        search(page, request)
    page.get_by_role("tab", name="Evaluate").click()
    page.locator("#unmatched-run").click()
    expect(page.locator("#unmatched-summary")).to_contain_text("searches unmatched")
    expect(page.locator("#unmatched-table")).to_contain_text("tell me a joke about penguins")
    # the summary at the top of the tab counts them, and links to the section
    figure = page.locator("#eval-health [data-figure=unmatched]")
    expect(figure).to_contain_text("unmatched requests")
    expect(figure).to_contain_text("in audit.jsonl")
    expect(figure).to_have_attribute("href", "#sec-unmatched")
    listed = unmatched_requests(page)
    row = listed.index("tell me a joke about penguins")
    logged = [r for r in read_audit(ui_server.backend.retriever.audit.path)
              if r.get("request") == "tell me a joke about penguins"]
    assert len(logged) >= 2  # searched twice (the page's load may re-run the first search once more)
    expect(page.locator(f"#unmatched-table [data-testid=cell-{row}-3]")).to_have_text(str(len(logged)))  # merged
    expect(page.locator(f"#unmatched-table [data-testid=cell-{row}-2]")).to_have_text("NO_TOOL")
    page.locator(f"#unmatched-table [data-testid=cell-{row}-1]").click()
    expect(page.locator("#unmatched-picked")).to_contain_text("tell me a joke about penguins")
    page.locator("#unmatched-tool input").click()
    page.get_by_role("option", name=NO_TOOL_LABEL).click()
    page.locator("#unmatched-label").click()
    result = page.locator("#unmatched-result")
    expect(result).to_contain_text(f"Added to queries.yaml ({n_rows + 1} labelled requests)")
    expect(result).to_contain_text("the new row passes: NO_TOOL")
    expect(page.locator("#unmatched-cards [data-metric='decision_accuracy'] .delta")).to_be_visible()
    rows = load_queries(ui_server.backend.catalog_path / "queries.yaml")
    assert rows[-1].query == "tell me a joke about penguins" and rows[-1].gold == () and rows[-1].expect.value == \
        "NO_TOOL"
    page.locator("#unmatched-run").click()
    row = unmatched_requests(page).index("tell me a joke about penguins")
    expect(page.locator(f"#unmatched-table [data-testid=cell-{row}-5]")).to_have_text("yes")
    # Request text redacted: the log keeps a hash, the tab says so and shows no text.
    ui_server.backend.retriever.audit.hash_requests = True
    page.get_by_role("tab", name="Search").click()
    search(page, "sing me a song about the sea")
    page.get_by_role("tab", name="Evaluate").click()
    page.locator("#unmatched-run").click()
    expect(page.locator("#unmatched-summary")).to_contain_text("Request text is redacted")
    expect(page.locator("#unmatched-table")).to_contain_text("(redacted: sha256")
    expect(page.locator("#unmatched-table")).not_to_contain_text("sing me a song")
