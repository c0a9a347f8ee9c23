"""The playground driven in Chromium as a person would use it (Playwright, auto-waits, no sleeps).

Screenshots of the three tabs go to tests/_artifacts/screenshots/; `python -m scripts.screenshots` writes
them to docs/screenshots/ (shown in the README).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import ASSETS

from toolrag.settings import SIGNALS
from toolrag.ui import format as fmt

pytest_plugins = ["ui_support"]
pytestmark = [pytest.mark.slow, pytest.mark.browser]


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def search(page: Any, query: str) -> None:
    box = page.locator("#query textarea")
    box.fill(query)
    page.locator("#search-btn").click()
    expect(page.locator("#history")).to_contain_text(query[:20])


def column_ids(page: Any, n: int) -> list[str]:
    """The id column (index 2) of the first ``n`` result rows."""
    return [page.locator(f"#results [data-testid=cell-{r}-2]").inner_text().strip() for r in range(n)]


def test_search_in_chinese_and_english_and_sliders_rerank(page: Any, ui_server: Any) -> None:
    expect(page.locator("#status")).to_contain_text("ready")
    retriever = ui_server.backend.retriever
    search(page, "帮我把这张发票报销了，是昨天和客户吃饭的")
    chinese = retriever.search("帮我把这张发票报销了，是昨天和客户吃饭的", role="employee")
    expect(page.locator("#decision-banner [data-decision]")).to_have_attribute("data-decision",
                                                                              chinese.decision.value)
    expect(page.locator("#results [data-testid=cell-0-2]")).to_have_text(chinese.ids[0])
    # Only the signals that scored get a column; those that scored no candidate fold into one line under it.
    headers = [h.strip() for h in page.locator("#results .header-cell").all_inner_texts()]
    scored = fmt.scored_signals(chinese)
    assert [h for h in headers if h in SIGNALS] == scored and "ocr" not in scored
    expect(page.locator("#results-unscored")).to_contain_text("not scored:")
    expect(page.locator("#results-unscored")).to_contain_text(chinese.absent_signals["ocr"])
    query = "I need to approve the expense claims my team submitted"
    search(page, query)
    english = retriever.search(query, role="employee", top_k=5)
    expect(page.locator("#results [data-testid=cell-0-2]")).to_have_text(english.ids[0])
    assert column_ids(page, len(english.ids)) == english.ids
    # Only BM25 left: the library predicts a different order, and the page follows after the sliders move.
    from toolrag.settings import Settings

    bm25_only = Settings().with_overrides(weights={s: 1.0 if s == "bm25" else 0.0 for s in SIGNALS})
    expected = retriever.search(query, role="employee", top_k=5, settings=bm25_only).ids
    assert expected != english.ids
    for signal in SIGNALS:
        number = page.locator(f"#w-{signal} input[type=number]")
        number.fill("1" if signal == "bm25" else "0")
        number.press("Tab")  # blur = release: re-rank
    for row, tool_id in enumerate(expected):
        expect(page.locator(f"#results [data-testid=cell-{row}-2]")).to_have_text(tool_id)
    expect(page.locator("#tokens")).to_contain_text("saved")
    expect(page.locator("#timings")).to_contain_text("ms total")


def test_image_upload_searches_with_ocr(page: Any, screenshot: Any) -> None:
    page.locator("#query-image input[type=file]").set_input_files(str(ASSETS / "queries" / "receipt_dinner.png"))
    expect(page.locator("#query-image img")).to_be_visible()
    page.locator("#query textarea").fill("帮我报销这张餐饮发票")
    page.locator("#search-btn").click()
    expect(page.locator("#notes")).to_contain_text("OCR read")
    expect(page.locator("#results [data-testid=cell-0-2]")).not_to_be_empty()
    headers = page.locator("#results .header-cell").all_inner_texts()
    assert "ocr" in [h.strip() for h in headers]  # the image made OCR score: its column is back
    expect(page.locator("#history")).to_contain_text(fmt.IMAGE_MARK.strip())  # the image marker is plain text
    screenshot(page, "search", full_page=False)  # the README's picture: the request and its answer, in one window


#: Window sizes the answer must fit: a laptop, and a Hugging Face Space's frame.
WINDOWS = [(1280, 800), (1000, 760)]


def _in_view(page: Any, selector: str) -> bool:
    """Whether the element is entirely inside the browser window (its bounding box)."""
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] and box["x"] >= 0 \
        and box["x"] + box["width"] <= size["width"]


@pytest.mark.parametrize("with_image", [False, True], ids=["text", "image"])
@pytest.mark.parametrize("window", WINDOWS, ids=[f"{w}x{h}" for w, h in WINDOWS])
def test_the_answer_is_on_screen_after_search(browser: Any, ui_server: Any, window: tuple[int, int],
                                               with_image: bool) -> None:
    """After Search, the decision banner and the first three ranked tools are inside the window without the
    user scrolling (the tuning is beside them; a window too small for both brings the answer into view)."""
    from ui_support import loopback_context

    context, blocked = loopback_context(browser, timeout_ms=60_000, viewport=window)
    try:
        page = context.new_page()
        page.goto(ui_server.url)
        expect(page.locator("#status")).to_contain_text("ready")
        if with_image:
            page.locator("#query-image input[type=file]").set_input_files(
                str(ASSETS / "queries" / "receipt_dinner.png"))
            expect(page.locator("#query-image img")).to_be_visible()
        page.locator("#query textarea").fill("帮我报销这张餐饮发票" if with_image else "book a meeting room for 3pm")
        page.locator("#search-btn").click()
        expect(page.locator("#decision-banner [data-decision]")).to_be_visible()
        expect(page.locator("#results [data-testid=cell-2-2]")).not_to_be_empty()
        targets = ["#decision-banner", *(f"#results [data-testid=cell-{r}-2]" for r in range(3))]
        page.wait_for_function("""(targets) => targets.every(s => { const b = document.querySelector(s)
            ?.getBoundingClientRect(); return b && b.top >= 0 && b.bottom <= window.innerHeight; })""",
                               arg=targets, timeout=10_000)
        assert all(_in_view(page, target) for target in targets), [page.locator(t).bounding_box() for t in targets]
        if window == (1280, 800):  # a laptop window holds the request and the answer: nothing had to scroll
            assert page.evaluate("window.scrollY") == 0
            assert _in_view(page, "#query textarea")
        banner, tuning = page.locator("#decision-banner").bounding_box(), page.locator("#tuning").bounding_box()
        assert tuning["x"] >= banner["x"] + banner["width"]  # the tuning is a panel beside the answer, not above
    finally:
        context.close()
    assert not blocked, f"the page tried to reach the network: {blocked}"


def test_empty_query_shows_an_error_toast_and_the_app_keeps_working(page: Any) -> None:
    expect(page.locator("#status")).to_contain_text("ready")
    page.locator("#search-btn").click()
    expect(page.get_by_text("empty query").first).to_be_visible()
    search(page, "book a meeting room for tomorrow")
    expect(page.locator("#results [data-testid=cell-0-2]")).not_to_be_empty()


def test_map_shows_the_query_point(page: Any, ui_server: Any, screenshot: Any) -> None:
    from toolrag.evaluation import projection

    projection.warm_up()  # waits for the app's background warm-up, so the map (and screenshot) is UMAP
    search(page, "把照片的背景虚化一下")
    page.get_by_role("tab", name="Tool space").click()
    plot = page.locator("#tool-map .js-plotly-plot")
    expect(plot).to_be_visible()
    expect(page.locator("#tool-map .legendtext", has_text=re.compile(r"^query$"))).to_have_count(1)
    n_tools = len(ui_server.backend.retriever.index.catalog)
    points = page.locator("#tool-map .scatterlayer .point")
    expect(points.nth(n_tools)).to_be_attached()  # every tool plus the query star
    expect(page.locator("#map-info")).to_contain_text("look-alike pair")
    expect(page.locator("#tool-map .gtitle")).to_contain_text("UMAP")
    screenshot(page, "tool_space")


def pick_tool(page: Any, tool_id: str) -> None:
    box = page.locator("#profile-tool input")
    box.click()
    box.fill(tool_id)
    page.get_by_role("option", name=re.compile("^" + re.escape(tool_id) + " ")).click()
    expect(page.locator("#profile-yaml .cm-content")).to_contain_text(f"id: {tool_id}")


def test_edit_a_profile_and_see_its_rank_move(page: Any, ui_server: Any, screenshot: Any) -> None:
    page.get_by_role("tab", name="Profiles").click()
    tool_id = "data.chart.read_values"
    query = "帮我查一下下周去深圳的机票和酒店"
    pick_tool(page, tool_id)
    text = ui_server.backend.editor.profile_yaml(tool_id)
    page.locator("#rank-query textarea").fill(query)
    editor = page.locator("#profile-yaml .cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text.replace("examples:\n", f"examples:\n  - query: {query}\n", 1))
    page.locator("#save-btn").click()
    status = page.locator("#profile-status")
    expect(status).to_contain_text("Saved")
    found = re.search(r"(#\d+|not ranked) → #(\d+)", status.inner_text())
    assert found, status.inner_text()
    assert found.group(1) == "not ranked" or int(found.group(2)) < int(found.group(1)[1:])
    assert query in Path(ui_server.backend.catalog_path / "data.yaml").read_text(encoding="utf-8")
    screenshot(page, "profiles")


def test_invalid_yaml_shows_the_error_and_changes_nothing(page: Any, ui_server: Any) -> None:
    page.get_by_role("tab", name="Profiles").click()
    pick_tool(page, "comm.email.send")
    file = Path(ui_server.backend.retriever.index.catalog.get("comm.email.send").source)
    before = file.read_bytes()
    editor = page.locator("#profile-yaml .cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text("id: comm.email.send\ndescription: [unclosed\n")
    page.locator("#save-btn").click()
    expect(page.get_by_text("invalid YAML").first).to_be_visible()
    assert file.read_bytes() == before


#: Characters drawn as emoji (an empty box in a browser without an emoji font): the emoji planes, the symbols
#: whose default presentation is emoji, and the selector that asks for it.
EMOJI = re.compile("[\U0001F000-\U0001FAFF\u231A\u231B\u23E9-\u23EC\u23F0\u23F3\u25FD\u25FE\u2614\u2615"
                   "\u2648-\u2653\u267F\u2693\u26A1\u26AA\u26AB\u26BD\u26BE\u26C4\u26C5\u26CE\u26D4\u26EA"
                   "\u26F2\u26F3\u26F5\u26FA\u26FD\u2705\u270A\u270B\u2728\u274C\u274E\u2753-\u2755\u2757"
                   "\u2795-\u2797\u27B0\u27BF\u2B1B\u2B1C\u2B50\u2B55\uFE0F]")


def test_no_emoji_glyphs_on_any_tab(page: Any) -> None:
    """Icons are text or SVG: after a search with an image (the history's image marker, the link to the search),
    no tab's text holds a character that needs an emoji font."""
    page.locator("#query-image input[type=file]").set_input_files(str(ASSETS / "queries" / "receipt_dinner.png"))
    expect(page.locator("#query-image img")).to_be_visible()
    search(page, "帮我报销这张餐饮发票")
    expect(page.locator("#share-link a")).to_contain_text("Link to this search")
    texts = {"Search": page.locator("body").inner_text()}
    for tab in ("Tool space", "Profiles", "Evaluate"):
        page.get_by_role("tab", name=tab).click()
        texts[tab] = page.locator("body").inner_text()
    found = {tab: sorted(set(EMOJI.findall(text))) for tab, text in texts.items()}
    assert not any(found.values()), f"emoji glyphs in the page: {found}"


def test_the_tuning_panel_collapses_and_keeps_its_values(page: Any) -> None:
    """Closing the Tuning section hides the controls, not their values: a search uses them, reopening shows them."""
    expect(page.locator("#status")).to_contain_text("ready")
    top_k = page.locator("#top-k input[type=number]")
    top_k.fill("3")
    top_k.press("Tab")
    page.locator("#tuning-panel").get_by_text("Tuning: retrieval, decision thresholds, weights").click()
    expect(page.locator("#w-dense")).to_be_hidden()
    search(page, "book a meeting room for 3pm")
    expect(page.locator("#results [role=row].virtual-row")).to_have_count(3)
    page.locator("#tuning-panel").get_by_text("Tuning: retrieval, decision thresholds, weights").click()
    expect(page.locator("#top-k input[type=number]")).to_have_value("3")
