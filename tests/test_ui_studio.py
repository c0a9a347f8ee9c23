"""The Evaluate tab's handlers and the effect of an edit, called directly with the real models on the copy of
the sample catalog; each is compared with the library call it stands for."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from conftest import ROOT
from starlette.datastructures import Headers, QueryParams

from toolrag.evaluation.changes import failing, gold_rank
from toolrag.evaluation.evaluator import Evaluator
from toolrag.evaluation.queries import load_queries
from toolrag.settings import SIGNALS, Settings
from toolrag.ui import evaluate_format as views
from toolrag.ui.evaluate_handlers import SETTING_CONTROLS, StudioHandlers
from toolrag.ui.handlers import Handlers
from toolrag.ui.studio import Studio

pytest_plugins = ["ui_support"]
pytestmark = pytest.mark.slow

CSV = ROOT / "tests" / "data" / "studio_queries.csv"
BASE = Settings()


def controls(**changes: Any) -> list[Any]:
    """The Search tab's setting controls in SETTING_CONTROLS order, at the shipped defaults."""
    values: dict[str, Any] = {"top_k": BASE.top_k, "fusion": BASE.fusion.value, "rerank": False,
                              "precision_target": 85.0, "clean_target": 85.0,
                              "normalization": BASE.normalization.value,
                              **{f"w_{s}": BASE.weights[s] for s in SIGNALS}}
    values.update(changes)
    return [values[name] for name in SETTING_CONTROLS]


def select(row: int, col: int) -> gr.SelectData:
    return gr.SelectData(None, {"index": [row, col], "value": ""})


@pytest.fixture(scope="module")
def sh(ui_backend: Any) -> StudioHandlers:
    return StudioHandlers(Handlers(ui_backend), Studio(ui_backend))


@pytest.fixture(scope="module")
def evaluated(sh: StudioHandlers) -> tuple[Any, ...]:
    state, message = sh.upload(str(CSV), {})
    assert "**5** labelled requests from `studio_queries.csv`" in message
    return sh.evaluate(gr.Progress(), state, *controls())


def test_evaluation_shows_the_library_metrics_and_the_failing_requests(evaluated: tuple[Any, ...],
                                                                     sh: StudioHandlers) -> None:
    cards, summary, frame, state = evaluated
    library = Evaluator(load_queries(CSV))(sh.b.require(), settings=BASE)
    for key, value in library.metrics.items():
        if key in ("recall@1", "recall@5", "ndcg@10"):
            assert f'data-metric="{key}"' in cards and f"{100 * value:.1f}%" in cards
    expected = failing(library)
    assert frame["request"].tolist() == [o.row.query for o in expected]
    assert frame["rank of expected"].tolist() == [f"#{gold_rank(o)}" if gold_rank(o) else "–" for o in expected]
    assert f"**{len(expected)} failing**" in summary and len(state["failing"]) == len(expected)
    # the previous run's metrics are the baseline of the next: the deltas of an identical run are all zero
    cards_again, *_ = sh.evaluate(gr.Progress(), state, *controls())
    assert cards_again.count("+0.0") == 6  # the six cards: recall@1/5, ndcg@10, mrr@10, completeness@5, decisions


def test_a_click_explains_the_request_or_opens_its_tool_in_profiles(evaluated: tuple[Any, ...],
                                                                    sh: StudioHandlers) -> None:
    _, _, frame, state = evaluated
    row = frame["request"].tolist().index("will it be sunny in Frankfurt on Thursday and Friday?")
    banner, table, *skipped = sh.pick_failing(select(row, 5), state, *controls())
    result = sh.b.require().search("will it be sunny in Frankfurt on Thursday and Friday?", settings=BASE)
    assert f'data-decision="{result.decision.value}"' in banner
    assert table["visible"] and table["value"].data["id"].tolist() == list(result.ids)
    assert len(table["column_widths"]) == len(table["value"].data.columns)  # sized for the signals that scored
    assert all(isinstance(s, dict) and s.get("__type__") == "update" and len(s) == 1 for s in skipped)  # gr.skip()
    tabs, tool, code, _info, _replace, version, rank_query = sh.pick_failing(select(row, 0), state, *controls())[2:]
    assert tabs.selected == "profiles" and tool["value"] == "travel.weather.forecast"
    # the version the Profiles tab saves against is the one on disk now (a save from here is not refused)
    assert version == sh.b.require_editor().read_profile("travel.weather.forecast").version
    assert "id: travel.weather.forecast" in code and rank_query.startswith("will it be sunny in Frankfurt")
    with pytest.raises(gr.Error, match="run the evaluation again"):
        sh.pick_failing(select(99, 0), state, *controls())


def test_an_edit_shows_improved_requests_and_the_tools_retrievability(evaluated: tuple[Any, ...],
                                                                      sh: StudioHandlers) -> None:
    _, _, frame, state = evaluated
    query = "年假还剩几天？年底会不会清零"
    assert query in frame["request"].tolist()
    editor = sh.b.require_editor()
    original = editor.profile_yaml("hr.leave.balance")
    try:
        editor.save("hr.leave.balance", original.replace("examples:\n", f"examples:\n  - query: {query}\n", 1))
        effect, changes, cards, _summary, failing_now, state = sh.after_edit(gr.Progress(), state,
                                                                            "hr.leave.balance", *controls())
        assert "1 improved" in effect and "Retrievability of `hr.leave.balance`" in effect, effect
        # the edited tool's request is listed as improved (another row may move too: the edit changes BM25's
        # statistics, and earlier tests of the session share this index)
        assert ["improved", query, "hr.leave.balance"] in [row[:3] for row in changes.values.tolist()]
        # found first now: listed at most for its decision, never for its rank
        assert failing_now[failing_now["request"] == query]["rank of expected"].tolist() in ([], ["#1"])
        assert "+" in cards  # recall@1 moved up since the previous run
    finally:
        editor.save("hr.leave.balance", original)


def test_retrievability_of_one_category_then_a_tool_opens_and_the_report_exports(sh: StudioHandlers) -> None:
    cards, summary, figure, tools, confusions, state = sh.check(gr.Progress(), "devtools", {}, *controls())
    catalog = sh.b.require().catalog
    devtools = sorted(t.id for t in catalog.tools if t.category == "devtools" and not t.deprecated)
    assert sorted(tools["tool"].tolist()) == devtools
    library = sh.studio.checker.check(sh.b.require(), settings=BASE, tools=devtools)
    frame, _ = views.tools_table(library)
    assert tools.values.tolist() == frame.values.tolist()  # the same library call
    assert 'data-metric="found_first"' in cards and "each searched with that example left out" in summary
    assert figure.data and list(confusions.columns)[:2] == ["expected", "won instead"]
    tabs, _tool, code, *_ = sh.pick_tool(select(0, 0), state)
    assert tabs.selected == "profiles" and f"id: {tools['tool'].tolist()[0]}" in code
    page = Path(sh.export(*controls())).read_text(encoding="utf-8")
    assert "Plotly.newPlot" in page and all(t in page for t in devtools)


def test_each_download_is_its_own_file_and_the_folder_goes_with_the_handlers(sh: StudioHandlers) -> None:
    """Two sessions never hand out one file, and an app started and stopped leaves no folder behind (the suite
    had left one per app start in the temporary folder)."""
    other = StudioHandlers(sh.h, sh.studio)  # the report of the retrievability checked above
    first, second = Path(other.export(*controls())), Path(other.export(*controls()))
    assert first != second and first.name == second.name == "toolrag-report.html"
    assert all("Plotly.newPlot" in f.read_text(encoding="utf-8") for f in (first, second))
    folder = first.parent.parent
    assert folder.name.startswith("toolrag-studio-") and second.parent.parent == folder
    del other
    gc.collect()
    assert not folder.exists()


def test_tuning_moves_the_sliders_and_saves_a_settings_file(evaluated: tuple[Any, ...], sh: StudioHandlers) -> None:
    state = evaluated[3]
    with pytest.raises(gr.Error, match="tune first"):
        sh.apply({})
    text, weights_fig, threshold_fig, state = sh.tune(gr.Progress(), "0.25", state, *controls())
    assert "on 4 labelled queries" in text and weights_fig.data[0].type == "scatterternary"
    assert threshold_fig is not None and threshold_fig.data  # rows that need no tool and rows that need one
    *sliders, _no_tool, message = sh.apply(state)
    tuned = state["tuned"]["weights"]
    scale = min(1.0, 1.0 / max(tuned.values()))  # the sliders stop at 1: all weights scaled alike
    assert [s["value"] for s in sliders] == pytest.approx([tuned[s] * scale for s in SIGNALS], abs=1e-4)
    assert all(0.0 <= s["value"] <= 1.0 for s in sliders) and "Search sliders" in message
    saved = Settings.from_yaml(sh.save(state))
    assert {s: saved.weights[s] for s in ("dense", "dense_en", "bm25")} == pytest.approx(
        {s: tuned[s] for s in ("dense", "dense_en", "bm25")})


class _Request:
    def __init__(self, query: str, referer: str = "") -> None:
        self.query_params = QueryParams(query)
        self.headers = Headers({"referer": referer} if referer else {})
        self.url = "http://127.0.0.1:7860/gradio_api/queue/join"


def test_links_set_the_search_controls_and_a_search_gives_its_link(sh: StudioHandlers) -> None:
    updates = sh.apply_link(_Request("q=book+a+room&role=employee&w_bm25=0.9&top_k=3"))
    from toolrag.ui.deeplink import LINK_CONTROLS

    named = dict(zip(LINK_CONTROLS, updates, strict=True))
    assert named["query"]["value"] == "book a room" and named["role"]["value"] == "employee"
    assert named["w_bm25"]["value"] == 0.9 and named["top_k"]["value"] == 3
    assert named["fusion"] == gr.skip()
    link = sh.share_link(_Request("", referer="http://127.0.0.1:7860/?q=old"), "book a room", "employee", [],
                         *controls(top_k=3))
    assert "(http://127.0.0.1:7860/?q=book+a+room&role=employee&top_k=3)" in link
