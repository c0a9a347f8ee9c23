"""The playground's pure view functions, on hand-made results (no server, no models)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from conftest import SMALL_CATALOG

from toolrag import Candidate, Decision, DecisionScores, DecisionSource, SearchResult, SignalScore, TokenReport
from toolrag.catalog.loader import load_catalog
from toolrag.encode.models import ModelSet
from toolrag.errors import SettingsError
from toolrag.settings import SIGNALS, Fusion, Settings
from toolrag.ui import format as fmt


def score(raw: float, norm: float, contribution: float) -> SignalScore:
    return SignalScore(raw, norm, 1, 0.3, contribution)


def make_result(decision: Decision = Decision.EXECUTE, clarification: str | None = None) -> SearchResult:
    a = Candidate("finance.expense.submit", "submit_expense", 0.81,
                  {"dense": score(0.91, 1.0, 0.30), "bm25": score(7.5, 1.0, 0.45), "ocr": score(0.88, 0.9, 0.06)},
                  "提交费用报销单", "finance", mutation=True)
    b = Candidate("finance.invoice.verify", "verify_invoice", 0.62,
                  {"dense": score(0.89, 0.8, 0.40), "bm25": score(1.0, 0.1, 0.02),
                   "visual": SignalScore(float("nan"), 0.0, 0, 0.0, 0.0)},
                  "查验发票真伪", "finance")
    return SearchResult(
        query="报销这张发票 <b>", decision=decision, clarification=clarification, candidates=(a, b),
        filtered_out=3, absent_signals={"clip": "CLIP is off"}, tokens=TokenReport(150, 1200, "cl100k_base"),
        timing_ms={"encode_text": 12.5, "fusion": 0.4, "total": 20.25}, top_cosine=0.912,
        tools=({"type": "function", "function": {"name": "submit_expense"}},), prompt="You can call these tools",
        notes=("OCR read: 发票",),
    )


def test_results_table_shows_the_signals_that_scored_and_highlights_the_top_contributor() -> None:
    result = make_result()
    styler = fmt.results_table(result)
    frame: pd.DataFrame = styler.data
    assert list(frame["id"]) == result.ids and list(frame["#"]) == [1, 2]
    # dense, bm25 and ocr scored a candidate; visual (NaN for its one candidate), concepts, dense_en and clip
    # scored none: no column of dashes for them
    shown = ["dense", "bm25", "ocr"]
    assert fmt.scored_signals(result) == shown
    assert list(frame.columns) == ["#", "tool", "id", "score", *map(fmt.signal_column, shown), "top signal"]
    assert frame.loc[0, fmt.signal_column("bm25")] == "7.500 (1.00)"
    assert frame.loc[1, fmt.signal_column("ocr")] == "–"        # scored another candidate, not this one
    assert list(frame["top signal"]) == [c.top_signal() for c in result.candidates] == ["bm25", "dense"]
    ctx = styler._compute().ctx
    columns = list(frame.columns)
    for row, candidate in enumerate(result.candidates):
        for signal in shown:
            style = dict(ctx.get((row, columns.index(fmt.signal_column(signal))), []))
            if signal == candidate.top_signal():
                assert style.get("background-color") == "#ffd54f"
            elif signal in candidate.signals and candidate.signals[signal].contribution > 0:
                assert style.get("background-color") == "#fff3c4"
            else:
                assert "background-color" not in style
    assert "✎mutation" in frame.loc[0, "tool"]
    widths = fmt.result_widths(len(shown))
    assert len(widths) == len(columns) and sum(float(w.rstrip("%")) for w in widths) == pytest.approx(100)


def test_signals_that_scored_no_candidate_fold_into_one_line_with_their_reasons() -> None:
    result = dataclasses.replace(make_result(), absent_signals={
        "visual": "no image given", "concepts": "no image given", "clip": "off: no CLIP weights"})
    line = fmt.unscored_text(result)
    assert "not scored:" in line
    assert "visual, concepts (no image given)" in line and "clip (off: no CLIP weights)" in line
    assert "dense_en (no candidate has what it compares)" in line  # absent everywhere, no reason given
    assert "dense," not in line and "bm25" not in line and "ocr" not in line  # those scored
    every = dataclasses.replace(result, candidates=tuple(
        dataclasses.replace(c, signals={s: score(0.5, 0.1, 0.1) for s in SIGNALS}) for c in result.candidates))
    assert fmt.unscored_text(every) == "" and fmt.scored_signals(every) == list(SIGNALS)
    assert fmt.unscored_text(dataclasses.replace(result, candidates=())) == ""


def test_the_image_note_names_the_image_signals_on_and_off() -> None:
    assert fmt.image_note({}) == "Image signals: ocr, visual, concepts, clip"
    assert fmt.image_note({"clip": "off"}) == "Image signals: ocr, visual, concepts · **off: clip**"


@pytest.mark.parametrize("decision, clarification, expected", [
    (Decision.EXECUTE, None, "Call <code>submit_expense</code>"),
    (Decision.CLARIFY, "Do you want <a> or <b>?", "Ask the user: Do you want &lt;a&gt; or &lt;b&gt;?"),
    (Decision.NO_TOOL, None, "No tool fits"),
])
def test_decision_banner(decision: Decision, clarification: str | None, expected: str) -> None:
    banner = fmt.decision_banner(make_result(decision, clarification))
    assert f'data-decision="{decision.value}"' in banner and expected in banner
    assert "confidence" not in banner and "3 filtered out" in banner
    if decision is Decision.EXECUTE:
        assert "irreversible" in banner  # the top tool is a mutation


def test_banner_says_when_a_rule_decided_and_the_probabilities_are_the_models_view() -> None:
    scores = DecisionScores(right=0.05, ambiguous=0.01, no_tool=0.93)
    by_model = fmt.decision_banner(dataclasses.replace(make_result(), scores=scores))
    assert "P(no tool) <b>0.93</b>" in by_model and "model's view" not in by_model
    by_rule = fmt.decision_banner(dataclasses.replace(make_result(), scores=scores,
                                                      decided_by=DecisionSource.NAMED_TOOL))
    assert "P(no tool) <b>0.93</b>" in by_rule
    assert "the model's view only: decided by the named tool rule" in by_rule


def test_prompt_tools_tokens_timings_and_notes() -> None:
    result = make_result()
    assert fmt.prompt_text(result) == result.prompt
    assert json.loads(fmt.tools_json(result)) == list(result.tools)
    text = fmt.token_text(result)
    assert "**150**" in text and "**1,200**" in text and f"{1 - 150 / 1200:.0%} saved" in text
    timings = fmt.timings_text(result)
    assert timings.startswith("**20.2 ms total**") or timings.startswith("**20.3 ms total**")
    assert "encode_text 12.5 ms" in timings
    notes = fmt.notes_text(result)
    assert "OCR read: 发票" in notes and "`clip` absent: CLIP is off" in notes
    assert fmt.rank_of(result, "finance.invoice.verify") == 2 and fmt.rank_of(result, "nope") is None


def test_build_settings_from_controls() -> None:
    weights = {s: 0.1 * i for i, s in enumerate(SIGNALS)}
    settings = fmt.build_settings(Settings(), fusion="RRF", top_k=7.0, rerank=True, precision_target=90.0,
                                  clean_target=None, weights=weights)
    assert settings.fusion is Fusion.RRF and settings.top_k == 7 and isinstance(settings.top_k, int)
    assert settings.rerank and settings.precision_target == 0.9  # the slider shows percent
    assert all(math.isclose(settings.weights[s], w) for s, w in weights.items())
    with pytest.raises(SettingsError):
        fmt.build_settings(Settings(), fusion="late", top_k=5, rerank=False, precision_target=None,
                           clean_target=None, weights={"dense": 11.0})


def test_the_clean_target_slider_shows_percent_and_starts_at_the_models_default() -> None:
    settings = fmt.build_settings(Settings(), fusion="late", top_k=5, rerank=False, precision_target=None,
                                  clean_target=60.0, weights={})
    assert settings.clean_target == 0.6 and settings.precision_target is None
    kept = Settings(clean_target=0.9)
    assert fmt.build_settings(kept, fusion="late", top_k=5, rerank=False, precision_target=None, clean_target=None,
                              weights={}).clean_target is None  # no value: the model's default, as the precision
    with pytest.raises(SettingsError, match="clean_target"):
        fmt.build_settings(Settings(), fusion="late", top_k=5, rerank=False, precision_target=None,
                           clean_target=100.0, weights={})
    model, _ = fmt.shipped_model()
    assert model is not None and fmt.clean_target(Settings()) == model.default_clean
    assert fmt.clean_target(kept) == 0.9
    # the slider's range (and the links', tests/test_ui_deeplink.py) is what the model measured: 60% to 95%
    assert (round(100 * model.clean_points[0][0]), round(100 * model.clean_points[-1][0])) == (60, 95)


def test_the_tradeoff_table_shows_the_threshold_a_request_with_earlier_turns_is_called_at() -> None:
    """The accordion's table of operating points: each precision target's P(right) threshold, and the history
    heads' own one beside it (the shipped model has them), the row of the slider's target marked."""
    model, _ = fmt.shipped_model()
    assert model is not None and model.history_points
    table = fmt.tradeoff_table(model, 0.85)
    row = next(line for line in table.splitlines() if line.startswith("| 85% (now) |"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert "after earlier turns" in table
    assert cells[1] == f"{model.execute_threshold(0.85):.2f}" and cells[2] == \
        f"{model.execute_threshold(0.85, history=True):.2f}" and cells[1] != cells[2]
    plain = dataclasses.replace(model, history_points=())
    assert "after earlier turns" not in fmt.tradeoff_table(plain, 0.85)


def test_signal_info_names_why_a_signal_is_off() -> None:
    # Reasons are kept per model role; each signal reads the reason of the model it needs (the registry),
    # so an image-model failure is never shown as the reason OCR is off.
    models = ModelSet(text=object(), ocr_factory=object,  # type: ignore[arg-type]
                      unavailable={"clip": "CLIP is off offline", "image": "no image model"})
    notes = {s: reason for s in SIGNALS if (reason := models.signal_reason(s))}
    assert notes == {"visual": "no image model", "concepts": "no image model", "clip": "CLIP is off offline",
                     "dense_en": "the english model is not loaded"}
    assert fmt.signal_info("clip", notes) == "⚠ unavailable: CLIP is off offline"
    assert fmt.signal_info("visual", notes) == "⚠ unavailable: no image model"
    assert fmt.signal_info("ocr", notes) == "OCR text from the image"
    assert fmt.signal_info("dense", notes) == "dense text (multilingual)"


def test_history_is_small_and_newest_first() -> None:
    settings = Settings()
    entries = [fmt.history_entry(make_result(), image=i % 2 == 0, role="employee", settings=settings)
               for i in range(3)]
    entries[-1]["query"] = "latest"
    json.dumps(entries)  # JSON-able: safe in gr.State
    table = fmt.history_table(entries)
    assert len(table) == 3 and table.loc[0, "query"] == "latest" + fmt.IMAGE_MARK  # plain text, no emoji
    assert table.loc[1, "query"] == entries[1]["query"]
    assert table.loc[0, "top 3"] == "finance.expense.submit, finance.invoice.verify"
    assert table.loc[0, "decision"] == "EXECUTE"


def test_catalog_lookalike_tables_and_roles(tmp_path: Path) -> None:
    (tmp_path / "tools.yaml").write_text(SMALL_CATALOG, encoding="utf-8")
    (tmp_path / "catalog.yaml").write_text("assets_dir: assets\nroles:\n  hr_manager: [hr.payroll.approve]\n",
                                           encoding="utf-8")
    (tmp_path / "assets").mkdir()
    from conftest import ASSETS

    for name in ("receipt_zh.png", "astronaut.jpg"):
        (tmp_path / "assets" / name).write_bytes((ASSETS / name).read_bytes())
    catalog = load_catalog(tmp_path)
    table = fmt.catalog_table(catalog)
    assert list(table["id"]) == catalog.ids
    row = table.set_index("id").loc["hr.payroll.approve"]
    assert row["permissions"] == "hr.payroll.approve" and row["examples"] == 3 and row["images"] == 0
    assert "no-negative-examples" in row["lint"]
    assert table.set_index("id").loc["calendar.book_v1", "status"] == "deprecated"
    pairs = fmt.lookalike_table([("weather.current", "weather.forecast", 0.95123)], catalog)
    assert pairs.values.tolist() == [["weather.current", "weather.forecast", 0.9512, "travel", "travel"]]
    assert fmt.role_choices(catalog) == [fmt.GUEST, "hr_manager"]
    # a catalog role named guest that grants nothing is the picker's guest: listed once (one that grants codes stays)
    guest = dataclasses.replace(catalog, roles={"guest": (), "Guest ": (), "hr_manager": ("hr.payroll.approve",)})
    assert fmt.role_choices(guest) == [fmt.GUEST, "hr_manager"]
    assert fmt.role_choices(guest, ["guest"]) == [fmt.GUEST]
    granting = dataclasses.replace(catalog, roles={"guest": ("hr.payroll.approve",)})
    assert fmt.role_choices(granting) == [fmt.GUEST, "guest"]


@pytest.mark.parametrize(("language", "shown"), [("ru", "request in русский (ru)"), ("en", "request in English (en)"),
                                                 ("it", "request in it ·"), ("und", "request in no letters (und)")])
def test_banner_names_the_requests_language(language: str, shown: str) -> None:
    assert shown in fmt.decision_banner(dataclasses.replace(make_result(), language=language))


def test_the_request_box_names_the_measured_languages() -> None:
    for name in ("English", "中文", "日本語", "한국어", "русский", "español", "Deutsch", "français", "português",
                 "Tiếng Việt"):
        assert name in fmt.REQUEST_LABEL
