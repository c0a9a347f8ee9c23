"""Pure logic of the decision: features, the logistic fit, the model's storage, the rules, named tools and the
reliability bins, on small hand-made numbers (no models). The same code runs for real in test_decisions.py."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from toolrag.evaluation.reliability import expected_calibration_error, reliability_bins, reliability_figure
from toolrag.search.addresses import has_web_address, stand_in_addresses, takes_web_address
from toolrag.search.decide import DecisionInputs, OperatingPoint, decide, name_lookup, named_tools
from toolrag.search.decision_model import (
    MODEL_VERSION,
    DecisionModel,
    class_weights,
    fit_logistic,
    predict_logistic,
    standardisation,
)
from toolrag.search.features import (
    FEATURES,
    LONE_Z,
    SELECTION_FEATURES,
    ResultView,
    SignalArrays,
    candidate_row,
    coverage,
    feature_vector,
    lone_tool_z,
    meaningful_chars,
    novel_cover,
    second_best,
    word_count,
)
from toolrag.search.model_fit import (
    AMBIGUITY_FEATURES,
    TOOL_FEATURES,
    TOOL_SKIPS,
    LabelledCase,
    ambiguous_lead,
    fit_model,
)
from toolrag.search.results import Decision, DecisionScores, DecisionSource
from toolrag.search.sim_requests import pseudo_request
from toolrag.search.simulate import CLARIFY, EXECUTE, NO_TOOL, Simulation, score_view

# ------------------------------------------------------------------------------------------------ features


@pytest.mark.parametrize(("text", "count"), [
    ("🤖🧾💸🔥🔥🔥", 0), ("\x00\x00\x00", 0), ("\u200b\u200d\ufeff", 0), ("\x07\x1b\x7f", 0), ("  !?…", 0),
    ("hi", 2), ("给我讲个笑话", 6), ("M-1002", 5), ("①②", 2),
])
def test_meaningful_chars(text: str, count: int) -> None:
    assert meaningful_chars(text) == count


def test_word_count() -> None:
    # 3 latin words; CJK ideographs count one each: 你好 = 2, plus "M1" = 1
    assert word_count("book a room") == 3
    assert word_count("你好 M1") == 3
    assert word_count("🔥🔥") == 0


def test_second_best() -> None:
    assert second_best(np.array([0.2, 0.9, 0.5])) == (0.9, 0.5)
    assert second_best(np.array([0.4])) == (0.4, 0.4)
    assert second_best(np.array([])) == (-math.inf, -math.inf)


def test_coverage_counts_distinct_known_terms() -> None:
    # terms {approve, payroll, march}; known {approve, payroll}; doc A has payroll only -> 1/2; doc B both -> 2/2;
    # unknown: march is in no tool -> 1/3
    known = {"approve", "payroll"}.__contains__
    cover, unknown = coverage(["approve", "payroll", "march", "payroll"], known,
                              [{"payroll", "payslip"}, {"approve", "payroll"}])
    assert cover == (0.5, 1.0) and unknown == pytest.approx(1 / 3)
    none, unknown_none = coverage([], known, [{"x"}])
    assert math.isnan(none[0]) and math.isnan(unknown_none)
    only_unknown, share = coverage(["march"], known, [{"x"}])
    assert math.isnan(only_unknown[0]) and share == 1.0


def test_novel_cover_and_candidate_row_by_hand() -> None:
    # known terms of "book a flight and a hotel": {book, flight, hotel} ("a"/"and" unknown to the catalog).
    # Doc 1 {book, flight}: 2 new of 3; doc 2 {flight, fare}: flight already seen -> 0/3; doc 3 {hotel, book}:
    # hotel is new -> 1/3.
    known = {"book", "flight", "hotel"}.__contains__
    docs = [{"book", "flight"}, {"flight", "fare"}, {"hotel", "book"}]
    novel = novel_cover(["book", "a", "flight", "and", "a", "hotel"], known, docs)
    assert novel == pytest.approx([2 / 3, 0.0, 1 / 3])
    assert novel_cover(["zzz"], known, docs) == [0.0, 0.0, 0.0]
    # fused [3.0, 2.5, 1.0] with head [0, 2, 1]: the candidate at position 3 is row 1, 3.0 - 2.5 = 0.5 below
    # the top; at position 2 it is row 2, 3.0 - 1.0 = 2.0 below, bringing no new word
    row = candidate_row(np.array([3.0, 2.5, 1.0]), [0, 2, 1], 3, novel)
    assert row.tolist() == pytest.approx([0.5, 2.5, 3.0, 1 / 3])
    assert candidate_row(np.array([3.0, 2.5, 1.0]), [0, 2, 1], 2, novel).tolist() == pytest.approx([2.0, 1.0, 2.0, 0])
    assert len(row) == len(SELECTION_FEATURES)


def _view(**kw: object) -> ResultView:
    # three tools; dense z: tool 0 stands out (z 2.0 vs -1.0, -1.0); bm25 agrees; dense_en absent (Chinese request)
    raw = np.array([0.9, 0.7, 0.7])
    z = np.array([2.0, -1.0, -1.0])
    everyone = np.ones(3, dtype=bool)
    signals = {"dense": SignalArrays(raw, z, everyone), "bm25": SignalArrays(np.array([3.0, 0.0, 1.0]),
                                                                             np.array([1.5, -1.0, -0.5]), everyone)}
    fused = np.array([1.75, -1.0, -0.75])
    defaults: dict[str, object] = {"signals": signals, "fused": fused, "head": np.array([0, 2, 1]), "lookalike": 0.93,
                                   "weights": {"dense": 0.5, "bm25": 0.5}, "cjk": True, "words": 4, "chat_sim": 0.8}
    defaults.update(kw)
    return ResultView(**defaults)  # type: ignore[arg-type]


def test_feature_vector_reads_the_whole_result() -> None:
    f = dict(zip(FEATURES, feature_vector(_view()), strict=True))
    assert f["sem_top_raw"] == pytest.approx(0.9)
    assert f["sem_max_z"] == pytest.approx(2.0) and f["sem_gap_z"] == pytest.approx(3.0)  # 2.0 - (-1.0)
    assert math.isnan(f["en_max_z"]) and math.isnan(f["en_top_raw"])  # English model did not read it: missing
    assert f["kw_top_log"] == pytest.approx(math.log1p(3.0)) and f["kw_gap_z"] == pytest.approx(2.0)  # 1.5 - (-0.5)
    assert f["fused_top"] == pytest.approx(1.75) and f["fused_gap"] == pytest.approx(2.5)  # 1.75 - (-0.75)
    assert f["fused_gap3"] == pytest.approx(2.75) and f["agree"] == 1.0 and f["lookalike"] == pytest.approx(0.93)
    assert f["cjk"] == 1.0 and f["length"] == pytest.approx(math.log1p(4)) and f["chat_sim"] == pytest.approx(0.8)


def test_feature_vector_clips_and_handles_no_tool() -> None:
    huge = _view(fused=np.array([100.0, 0.0, 0.0]))
    assert feature_vector(huge)[FEATURES.index("fused_top")] == 12.0
    empty = feature_vector(_view(head=np.array([], dtype=np.int64)))
    assert empty[FEATURES.index("fused_top")] == 0.0 and empty[FEATURES.index("cjk")] == 1.0


def test_score_view_matches_the_fusion_by_hand() -> None:
    # one signal, raw [1, 2, 3]: mean 2, std sqrt(2/3) -> z = [-1.2247, 0, 1.2247]; fused = z (one signal)
    view = score_view({"dense": np.array([1.0, 2.0, 3.0])}, {"dense": np.ones(3, dtype=bool)},
                      weights={"dense": 1.0}, ids=["a", "b", "c"], priority=np.zeros(3), dense=np.eye(3),
                      cjk=False, words=2)
    assert view.head.tolist() == [2, 1, 0]
    assert view.fused[2] == pytest.approx(1.2247, abs=1e-4) and view.lookalike == 0.0


def test_pseudo_request_keeps_few_description_words() -> None:
    # content words: Get, 2-day, air, quality, forecast, zip, code ("US" reads as the stop word "us");
    # KEEP_EVERY 6 keeps the 1st and the 7th; the context carries a name and a date no tool text has
    text = pseudo_request("Get the 2-day air quality forecast for any US zip code. Extra sentence.", 0)
    assert text == "Get the for any US code, for Priya Raman by 12 May"
    assert pseudo_request("Weather", 0) == ""


# ------------------------------------------------------------------------------------------- logistic fit


def test_fit_logistic_binary_separates_and_is_penalised() -> None:
    x = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    y = np.array([1, 1, 0, 0])  # class 0 for positive x
    coef, intercept = fit_logistic(x, y, 2, l2=1.0)
    p = predict_logistic(coef, intercept, x)
    assert p.shape == (4, 2) and np.allclose(p.sum(axis=1), 1.0)
    assert p[3, 0] > p[2, 0] > 0.5 > p[1, 0] > p[0, 0]
    # at the optimum the penalised gradient vanishes: sum (p0 - [y == 0]) * x + l2 * coef = 0
    grad = ((p[:, 0] - (y == 0)) * x[:, 0]).sum() + 1.0 * coef[0, 0]
    assert abs(grad) < 1e-6
    stronger, _ = fit_logistic(x, y, 2, l2=100.0)
    assert abs(stronger[0, 0]) < abs(coef[0, 0])


def test_fit_logistic_multinomial_and_weights() -> None:
    x = np.array([[0.0, 0.0], [0.1, 0.0], [3.0, 0.0], [3.1, 0.0], [0.0, 3.0], [0.0, 3.1]])
    y = np.array([0, 0, 1, 1, 2, 2])
    coef, intercept = fit_logistic(x, y, 3, l2=0.01)
    assert (predict_logistic(coef, intercept, x).argmax(axis=1) == y).all()
    # weights: class 0 counted ten times more pulls its probability up at an ambiguous point
    w = np.where(y == 0, 10.0, 1.0)
    coef_w, intercept_w = fit_logistic(x, y, 3, weights=w, l2=0.01)
    mid = np.array([1.5, 1.5])
    assert predict_logistic(coef_w, intercept_w, mid)[0] > predict_logistic(coef, intercept, mid)[0]
    with pytest.raises(ValueError, match="finite"):
        fit_logistic(np.array([[math.nan]]), np.array([0]), 2)


def test_standardisation_and_class_weights() -> None:
    mean, scale = standardisation(np.array([[1.0, math.nan, 5.0], [3.0, 2.0, 5.0]]))
    assert mean.tolist() == [2.0, 2.0, 5.0] and scale.tolist() == [1.0, 1.0, 1.0]  # constant columns: scale 1
    w = class_weights(np.array([0, 0, 0, 1]), 2)  # each class gets half of the total weight 4
    assert w.tolist() == pytest.approx([2 / 3, 2 / 3, 2 / 3, 2.0])


def _model(**kw: object) -> DecisionModel:
    d = len(FEATURES)
    args: dict[str, object] = dict(
        key="k", mean=np.zeros(d), scale=np.ones(d), tool_coef=np.zeros((1, d)), tool_intercept=np.array([2.0]),
        ambiguous_coef=np.zeros((1, d)), ambiguous_intercept=np.array([-1.0]), right_coef=np.zeros((1, d)),
        right_intercept=np.array([0.0]), select_coef=np.array([[-2.0, 0.0, 0.0]]), select_intercept=np.array([1.0]),
        select_threshold=0.5, no_tool_threshold=0.5, ambiguous_threshold=0.4, execute_floor=0.2,
        reference={"example_cosine": 0.86}, summary={"cases": {"example": 3}})
    args.update(kw)
    return DecisionModel(**args)  # type: ignore[arg-type]


def test_model_probabilities_and_storage() -> None:
    model = _model()
    # P(a tool fits) = logistic(2) = 0.8808; P(ambiguous | fits) = logistic(-1) = 0.2689; P(right | fits) = 0.5
    p_right, p_ambiguous, p_none = model.probabilities(np.full(len(FEATURES), math.nan))
    assert p_none == pytest.approx(1 - 0.8808, abs=1e-4)
    assert p_ambiguous == pytest.approx(0.8808 * 0.2689, abs=1e-4) and p_right == pytest.approx(0.8808 * 0.5, abs=1e-4)
    # selection: gap 0.2 -> logit -2 * 0.2 + 1 = 0.6 -> 0.6457; gap 2 -> -3 -> 0.0474
    assert model.select_probability(np.array([0.2, 1.0, 2.0])) == pytest.approx(0.6457, abs=1e-4)
    assert model.select_probability(np.array([2.0, 1.0, 2.0])) == pytest.approx(0.0474, abs=1e-4)
    back = DecisionModel.from_json(model.to_json())
    assert back is not None and back.key == "k" and np.allclose(back.tool_coef, model.tool_coef)
    assert back.reference == {"example_cosine": 0.86} and back.execute_floor == 0.2
    assert back.ambiguous_threshold == 0.4 and set(back.coefficients()) == {"tool", "ambiguous", "right"}
    assert back.clarify_max_gap == math.inf  # no limit survives JSON (stored as null)
    limited = DecisionModel.from_json(dataclasses.replace(model, clarify_max_gap=0.45).to_json())
    assert limited is not None and limited.clarify_max_gap == 0.45
    assert DecisionModel.from_json("{not json") is None
    assert DecisionModel.from_json(model.to_json().replace(f'"version": {MODEL_VERSION}', '"version": 1')) is None


def test_one_search_gets_the_probabilities_of_the_matrix_path() -> None:
    """probabilities() of one vector (the per-search path: the three rows stacked, sigmoids) equals the matrix
    path (predict_logistic per model) row by row, with missing values and extreme logits."""
    rng = np.random.default_rng(7)
    d = len(FEATURES)
    model = _model(mean=rng.normal(size=d), scale=rng.uniform(0.5, 2.0, size=d),
                   tool_coef=rng.normal(size=(1, d)), ambiguous_coef=rng.normal(size=(1, d)) * 30,
                   right_coef=rng.normal(size=(1, d)))
    x = rng.normal(size=(20, d)) * 3
    x[x > 4] = math.nan
    matrix = np.column_stack(model.probabilities(x))
    for row, expected in zip(x, matrix, strict=True):
        assert model.probabilities(row) == pytest.approx(tuple(expected), rel=1e-9, abs=1e-12)
    for gap in (-400.0, -1.0, 0.0, 3.0, 400.0):  # no overflow at either end
        candidate = np.array([gap, 1.0, 2.0])
        assert model.select_probability(candidate) == pytest.approx(
            float(predict_logistic(model.select_coef, model.select_intercept, candidate)[0]), abs=1e-12)


# ----------------------------------------------------------------------------------------------- the rules

NAMES = ("get_current_weather", "get_weather_forecast", "book_room")
SUMMARIES = ("Weather now.", "Forecast for 7 days.", "Book a room.")


def _inputs(**kw: object) -> DecisionInputs:
    args: dict[str, object] = {"names": NAMES, "summaries": SUMMARIES, "lookalike": 0.92, "relative_gap": 0.3,
                               "top_cosine": 0.8, "select": (0.7, 0.2), "query": "weather in Rome"}
    args.update(kw)
    return DecisionInputs(**args)  # type: ignore[arg-type]


POINT = OperatingPoint(no_tool_threshold=0.5, ambiguous_threshold=0.4, execute_floor=0.3,
                       reference={"example_cosine": 0.86})


def test_decide_follows_the_operating_point() -> None:
    execute = decide(_inputs(), DecisionScores(right=0.8, ambiguous=0.1, no_tool=0.05), model=POINT)
    assert execute.decision is Decision.EXECUTE and execute.selected == 2  # 0.7 >= 0.5, then 0.2 stops it
    assert "calls get_current_weather" in execute.reason and "P(right) 0.80" in execute.reason
    assert execute.source is DecisionSource.MODEL
    ask = decide(_inputs(), DecisionScores(right=0.3, ambiguous=0.45, no_tool=0.1), model=POINT)
    assert ask.decision is Decision.CLARIFY and ask.selected == 2
    assert "look-alikes (0.92)" in ask.reason and "within 30%" in ask.reason and ">= 0.40" in ask.reason
    assert ask.source is DecisionSource.MODEL
    question = ask.clarification or ""
    assert "get_current_weather" in question and "get_weather_forecast" in question
    none = decide(_inputs(), DecisionScores(right=0.1, ambiguous=0.1, no_tool=0.5), model=POINT)
    assert none.decision is Decision.NO_TOOL and none.selected == 0
    assert "below what this catalog's own example requests reach (0.860)" in none.reason


def none_source(point: OperatingPoint) -> DecisionSource:
    """The source of a NO_TOOL the model's P(no tool) decides."""
    return decide(_inputs(), DecisionScores(right=0.1, ambiguous=0.1, no_tool=0.9), model=point).source


def test_decide_asks_when_tied_and_abstains_when_the_top_is_likely_wrong() -> None:
    # P(a tool fits) = 1 - 0.1 = 0.9; P(right) 0.2 is under the model's execute floor 0.3 (and over the default
    # share: 0.2 * 0.9 = 0.18): the top tool is more likely wrong
    unsure = decide(_inputs(), DecisionScores(right=0.2, ambiguous=0.1, no_tool=0.1), model=POINT)
    assert unsure.decision is Decision.NO_TOOL and "more likely wrong than right" in unsure.reason
    assert unsure.selected == 0
    # P(right) 0.46: over the floor 0.3 and over 0.2 * 0.9 = 0.18: called
    called = decide(_inputs(), DecisionScores(right=0.46, ambiguous=0.1, no_tool=0.1), model=POINT)
    assert called.decision is Decision.EXECUTE
    # a stricter caller (execute_share 0.6): 0.46 < 0.6 * 0.9 = 0.54 -> NO_TOOL; 0.55 >= 0.54 -> called
    strict = decide(_inputs(), DecisionScores(right=0.46, ambiguous=0.1, no_tool=0.1), model=POINT, execute_share=0.6)
    assert strict.decision is Decision.NO_TOOL and "P(right) 0.46 of P(a tool fits) 0.90" in strict.reason
    sure = decide(_inputs(), DecisionScores(right=0.55, ambiguous=0.1, no_tool=0.1), model=POINT, execute_share=0.6)
    assert sure.decision is Decision.EXECUTE
    tie = decide(_inputs(relative_gap=0.005), DecisionScores(right=0.9, ambiguous=0.0, no_tool=0.0), model=POINT,
                 clarify_gap=0.01)
    assert tie.decision is Decision.CLARIFY and "clarify_gap" in tie.reason and tie.source is DecisionSource.TIE
    # the same tie between two tools that are not look-alikes (profiles 0.80 < LOOKALIKE 0.91; e.g. the two
    # tools of a two-tool request): nothing to choose between, the model decides and both are injected
    both = decide(_inputs(relative_gap=0.005, lookalike=0.80, select=(0.7, 0.2)),
                  DecisionScores(right=0.9, ambiguous=0.0, no_tool=0.0), model=POINT, clarify_gap=0.01)
    assert both.decision is Decision.EXECUTE and both.source is DecisionSource.MODEL and both.selected == 2
    assert unsure.source is DecisionSource.MODEL and none_source(POINT) is DecisionSource.MODEL


def test_decide_asks_only_when_the_two_are_close_in_the_ranking() -> None:
    # P(ambiguous) 0.9 >= 0.4 says the two tools are alike; the catalog's own ambiguous requests led by at most
    # 45%: a lead of 30% is a choice between the two, a lead of 80% is not (the top tool is called)
    point = dataclasses.replace(POINT, clarify_max_gap=0.45)
    scores = DecisionScores(right=0.8, ambiguous=0.9, no_tool=0.05)
    assert decide(_inputs(relative_gap=0.3), scores, model=point).decision is Decision.CLARIFY
    far = decide(_inputs(relative_gap=0.8), scores, model=point)
    assert far.decision is Decision.EXECUTE and far.selected >= 1
    assert ("alike, but the first leads by 80%, more than three in four of this catalog's ambiguous requests (45%)"
            in far.reason)
    assert decide(_inputs(relative_gap=0.8), scores, model=POINT).decision is Decision.CLARIFY  # no limit: as before


def test_ambiguous_lead_by_hand() -> None:
    leads = (0.1, 0.2, 0.3, 0.5, 0.9)
    rows = np.full((len(leads), len(FEATURES)), math.nan)
    # fused_top 2.0 (or -2.0: the lead is relative to |top|) and gap 2 x lead: (2.0, 1.8) leads by 0.2 / 2 = 0.1
    for row, lead in enumerate(leads):
        top = 2.0 if row % 2 else -2.0
        rows[row, FEATURES.index("fused_top")], rows[row, FEATURES.index("fused_gap")] = top, 2.0 * lead
    # the upper quartile: position 0.75 x (5 - 1) = 3 of the sorted leads, 0.5 (not the largest, 0.9)
    assert ambiguous_lead(rows) == pytest.approx(0.5)
    assert ambiguous_lead(rows, 1.0) == pytest.approx(0.9)
    # between two sorted leads, linear: 0.6 x 4 = 2.4 -> 0.3 + 0.4 x (0.5 - 0.3) = 0.38
    assert ambiguous_lead(rows, 0.6) == pytest.approx(0.38)
    assert ambiguous_lead(rows[:0]) == math.inf  # no ambiguous request simulated: no limit


def _random_simulation(n: int = 240) -> Simulation:
    """Simulated cases whose every feature carries some of the class (so a model that may read a feature does)."""
    rng = np.random.default_rng(7)
    label = np.array([EXECUTE, CLARIFY, NO_TOOL] * (n // 3), dtype=np.int64)
    x = rng.normal(size=(n, len(FEATURES))) + 0.8 * (label == NO_TOOL)[:, None] - 0.5 * (label == CLARIFY)[:, None]
    right = rng.random(n) < 0.7
    kinds = tuple("no_tool" if c == NO_TOOL else "vague" if c == CLARIFY else "example" for c in label)
    return Simulation(x, label, right, kinds, np.zeros((0, 4)), np.zeros(0, dtype=np.int64))


def test_each_model_reads_its_own_question_unless_labelled() -> None:
    sim = _random_simulation()
    alone = fit_model(sim, "k").coefficients()
    # from the catalog alone: "a tool fits" reads match strength only (the leads, agreement and look-alike cosine
    # compare the top tools), the ambiguity model how the top tools compare (not the no-tool similarity)
    assert {f for f, c in alone["tool"].items() if c != 0.0} == set(TOOL_FEATURES)
    assert {f for f, c in alone["ambiguous"].items() if c != 0.0} == set(AMBIGUITY_FEATURES)
    assert {f for f, c in alone["right"].items() if c != 0.0} == set(FEATURES)
    labelled = [LabelledCase(sim.features[i], int(sim.label[i]), bool(sim.right[i])) for i in range(0, 240, 4)]
    refined = fit_model(sim, "k", labelled=labelled).coefficients()
    # with real labelled requests: "a tool fits" everything but TOOL_SKIPS, the ambiguity model everything
    assert {f for f, c in refined["tool"].items() if c != 0.0} == set(FEATURES) - set(TOOL_SKIPS)
    assert {f for f, c in refined["ambiguous"].items() if c != 0.0} == set(FEATURES)
    assert refined["tool"]["fused_gap"] != 0.0 and alone["tool"]["fused_gap"] == 0.0
    assert refined["ambiguous"]["chat_sim"] != 0.0 and alone["ambiguous"]["chat_sim"] == 0.0


def test_decide_special_cases() -> None:
    scores = DecisionScores(right=0.9, ambiguous=0.05, no_tool=0.05)
    nothing = decide(_inputs(names=(), summaries=()), None)
    assert nothing.decision is Decision.NO_TOOL and nothing.source is DecisionSource.NO_PERMITTED_TOOL
    empty = decide(_inputs(meaningful=False), scores)
    assert empty.decision is Decision.NO_TOOL and "no letters or digits" in empty.reason
    assert empty.source is DecisionSource.NO_MEANINGFUL_TEXT
    assert decide(_inputs(meaningful=False, image=True), scores).decision is Decision.EXECUTE  # the image speaks
    named = decide(_inputs(named=1), DecisionScores(right=0.1, ambiguous=0.1, no_tool=0.8))
    assert named.decision is Decision.EXECUTE and "names it exactly" in named.reason and named.selected == 1
    assert named.source is DecisionSource.NAMED_TOOL  # called although P(no tool) 0.8: the rule decided
    floor = decide(_inputs(confidence=0.5), scores, no_tool_threshold=0.6)
    assert floor.decision is Decision.NO_TOOL and "no_tool_threshold" in floor.reason
    assert floor.source is DecisionSource.OWNER_THRESHOLD


def test_lone_tool_z_by_hand() -> None:
    # the no-tool requests' cosines to the tool: 0.1, 0.2, 0.3 (mean 0.2, population std sqrt(0.02 / 3) =
    # 0.08165); the request's cosine 0.4: z = (0.4 - 0.2) / 0.08165 = 2.449
    tool = np.array([1.0, 0.0])
    chat = np.array([[0.1, 0.995], [0.2, 0.98], [0.3, 0.954], [math.nan, math.nan]])  # a NaN row is skipped
    request = np.array([0.4, 0.917])
    assert lone_tool_z({"dense": tool}, {"dense": request}, {"dense": chat}) == pytest.approx(2.449, abs=1e-3)
    # the first signal in the tool's order that can be read counts: cosines 0, 0.2 (mean 0.1, std 0.1) and the
    # request's 0.4 -> z = 3.0, whatever the second signal says
    other = np.array([[0.0, 1.0], [0.2, 0.98]])
    first = lone_tool_z({"dense_en": tool, "dense": tool}, {"dense": request, "dense_en": request},
                        {"dense": chat, "dense_en": other})
    assert first == pytest.approx(3.0)
    # a signal the request lacks (a Chinese request has no English vector) or without spread is passed over
    assert lone_tool_z({"dense_en": tool, "dense": tool}, {"dense": request}, {"dense": chat, "dense_en": other}) \
        == pytest.approx(2.449, abs=1e-3)
    flat = {"dense_en": np.array([[0.3, 0.9]] * 3), "dense": chat}
    assert lone_tool_z({"dense_en": tool, "dense": tool}, {"dense": request, "dense_en": request}, flat) \
        == pytest.approx(2.449, abs=1e-3)
    assert math.isnan(lone_tool_z({"dense": tool}, {"dense": request}, {"dense": np.array([[0.3, 0.9]] * 3)}))
    assert math.isnan(lone_tool_z({"dense": tool}, {}, {"dense": chat}))


def test_decide_with_one_tool_reads_how_far_the_request_stands_out() -> None:
    one = {"names": ("get_weather",), "summaries": ("Current weather.",)}
    called = decide(_inputs(**one, lone_z=LONE_Z + 0.5), None)
    assert called.decision is Decision.EXECUTE and called.selected == 1 and f"z {LONE_Z + 0.5:.2f}" in called.reason
    refused = decide(_inputs(**one, lone_z=LONE_Z - 0.5), None)
    assert refused.decision is Decision.NO_TOOL and refused.selected == 0 and "only candidate" in refused.reason
    unknown = decide(_inputs(**one), None)  # no request text (an image alone): called as before
    assert unknown.decision is Decision.EXECUTE and unknown.reason == "calls get_weather: the only candidate"


def test_decide_with_a_few_tools_reads_the_top_tool_against_no_tool_requests() -> None:
    # 3 permitted tools: the model's probabilities are shown but do not decide
    few = {"names": ("create_event", "send_email", "get_weather"), "summaries": ("", "", ""), "permitted": 3,
           "relative_gap": 0.5, "select": (0.7, 0.2)}
    sure = DecisionScores(right=0.95, ambiguous=0.01, no_tool=0.01)
    refused = decide(_inputs(**few, lone_z=LONE_Z - 0.1), sure, model=POINT)
    assert refused.decision is Decision.NO_TOOL and "3 tools are permitted" in refused.reason
    assert refused.source is DecisionSource.STANDOUT  # P(right) 0.95 was shown, the rule refused
    unsure = DecisionScores(right=0.05, ambiguous=0.01, no_tool=0.9)
    called = decide(_inputs(**few, lone_z=LONE_Z + 1.0), unsure, model=POINT)
    assert called.decision is Decision.EXECUTE and "create_event ranks first" in called.reason
    assert called.selected == 2  # the selection still comes from the model (0.7 reaches 0.5, 0.2 does not)
    assert called.source is DecisionSource.STANDOUT
    tied = decide(_inputs(**{**few, "relative_gap": 0.01}, lone_z=LONE_Z + 1.0), sure, model=POINT, clarify_gap=0.05)
    assert tied.decision is Decision.CLARIFY and "clarify_gap" in tied.reason and tied.source is DecisionSource.TIE
    unlike = decide(_inputs(**{**few, "relative_gap": 0.01, "lookalike": 0.80}, lone_z=LONE_Z + 1.0), sure,
                    model=POINT, clarify_gap=0.05)
    assert unlike.decision is Decision.EXECUTE and unlike.source is DecisionSource.STANDOUT
    # no request text (an image alone): the model decides; without a model the first is called
    imaged = decide(_inputs(**few), unsure, model=POINT)
    assert imaged.decision is Decision.NO_TOOL and imaged.source is DecisionSource.MODEL
    assert "ranks first (no decision model" in decide(_inputs(**{**few, "permitted": 0}), None).reason
    # a Chinese request to a catalog without Chinese: the same test, whatever the model says
    cross = {**few, "permitted": 0, "cross_lingual": True}
    crossed = decide(_inputs(**cross, lone_z=LONE_Z + 1.0), unsure, model=POINT)
    assert crossed.decision is Decision.EXECUTE and "a Chinese request to a catalog without Chinese" in crossed.reason
    assert crossed.source is DecisionSource.STANDOUT  # P(no tool) 0.9 is the model's view only
    assert decide(_inputs(**cross, lone_z=LONE_Z - 1.0), sure, model=POINT).decision is Decision.NO_TOOL
    # more tools than FEW_TOOLS (permitted 0): the model decides as before
    assert decide(_inputs(**{**few, "permitted": 0}, lone_z=LONE_Z - 1.0), sure, model=POINT).decision \
        is Decision.EXECUTE


@pytest.mark.parametrize(("text", "holds"), [
    ("what does https://example.com/pricing say", True), ("summarize www.python.org/downloads", True),
    ("open HTTP://EXAMPLE.COM", True), ("what is https and why is it safer than http", False),
    ("email bob@example.com", False), ("read notes.txt", False), ("看看 https://example.cn/新闻 写了什么", True),
])
def test_has_web_address(text: str, holds: bool) -> None:
    assert has_web_address(text) is holds


@pytest.mark.parametrize(("text", "read_as"), [
    ("summarize www.python.org/downloads", "summarize the web page URL"),
    ("what does https://example.com/pricing say?", "what does the web page URL say?"),
    ("summarize https://example.com/files/whitepaper.pdf", "summarize the web page URL whitepaper.pdf"),
    ("read https://docs.python.org/3/whatsnew/3.13.html, then reply", "read the web page URL, then reply"),
    ("这篇文章讲了什么 https://news.example.cn/2024/05/ev-market", "这篇文章讲了什么 the web page URL"),
    ("what is https and why is it safer than http", "what is https and why is it safer than http"),
])
def test_what_the_text_models_read_for_an_address(text: str, read_as: str) -> None:
    assert stand_in_addresses(text) == read_as


@pytest.mark.parametrize(("properties", "takes"), [
    ({"url": {"type": "string"}}, True), ({"pageUrl": {"type": "string"}}, True),
    ({"target_uri": {"type": "string"}}, True), ({"links": {"type": "array"}}, True),
    ({"website-name": {}}, True), ({"page": {"type": "string", "format": "uri"}}, True),
    ({"path": {"type": "string"}}, False), ({"curl_command": {"type": "string"}}, False),  # "curl" is no "url"
    ({"hurl": {}}, False), ({}, False),
])
def test_takes_web_address(properties: dict[str, object], takes: bool) -> None:
    assert takes_web_address({"type": "object", "properties": properties}) is takes
    assert takes_web_address({"type": "object"}) is False and takes_web_address({"properties": 3}) is False


def test_a_web_address_for_a_tool_that_takes_one_is_not_turned_away() -> None:
    """A language model cannot open a web address: when the model (or, for a few tools, the z) would say
    NO_TOOL, a request holding one is called on a top tool that takes one, or asked about when the second
    takes one too; nothing changes when the top tool takes none, or when the model calls or asks anyway."""
    pair = {"names": ("fetch", "brave_web_search"), "summaries": ("Fetch a URL.", "Search the web.")}
    wordy = DecisionScores(right=0.1, ambiguous=0.05, no_tool=0.95)
    called = decide(_inputs(**pair, address_takers=(True, False)), wordy, model=POINT)
    assert called.decision is Decision.EXECUTE and called.selected == 1
    assert "calls fetch: the request holds a web address" in called.reason and "P(no tool) 0.95" in called.reason
    assert called.source is DecisionSource.WEB_ADDRESS
    both = {"names": ("fetch", "puppeteer_navigate"), "summaries": ("Fetch a URL.", "Open a URL in a browser.")}
    asked = decide(_inputs(**both, address_takers=(True, True)), wordy, model=POINT)
    assert asked.decision is Decision.CLARIFY and asked.selected == 2 and "both take one" in asked.reason
    assert "fetch" in (asked.clarification or "") and "puppeteer_navigate" in (asked.clarification or "")
    for takers in ((), (False, True)):  # no address, or the top tool takes none: NO_TOOL as before
        assert decide(_inputs(**pair, address_takers=takers), wordy, model=POINT).decision is Decision.NO_TOOL
    sure = DecisionScores(right=0.9, ambiguous=0.05, no_tool=0.02)  # the model calls: its reason stays
    assert decide(_inputs(**pair, address_takers=(True, True)), sure, model=POINT).reason.startswith(
        "calls fetch: P(right) 0.90")
    one = {"names": ("fetch",), "summaries": ("Fetch a URL.",), "permitted": 1}
    lone = decide(_inputs(**one, lone_z=LONE_Z - 1.0, address_takers=(True,)), None)
    assert lone.decision is Decision.EXECUTE and f"z {LONE_Z - 1.0:.2f} < {LONE_Z:.2f}" in lone.reason
    assert decide(_inputs(**one, lone_z=LONE_Z - 1.0), None).decision is Decision.NO_TOOL


def test_a_request_of_change_is_never_executed_on_a_tool_that_only_reads() -> None:
    """Rule 7: whatever the probabilities say (even P(right) 0.9, even with a few tools and no model), a request
    of change whose top tool only reads is not called, and the reason says why; a request that names the tool
    still calls it, and without a verb of change the same scores call it."""
    pair = {"names": ("get_leave_balance", "submit_leave"), "summaries": ("Leave left.", "Ask for leave.")}
    for scores in (DecisionScores(right=0.05, ambiguous=0.02, no_tool=0.1),
                   DecisionScores(right=0.45, ambiguous=0.02, no_tool=0.0),
                   DecisionScores(right=0.9, ambiguous=0.02, no_tool=0.02)):
        refused = decide(_inputs(**pair, change_verb="approve"), scores, model=POINT)
        assert refused.decision is Decision.NO_TOOL and refused.selected == 0
        assert 'asks for a change ("approve")' in refused.reason and "get_leave_balance only reads" in refused.reason
    sure = DecisionScores(right=0.9, ambiguous=0.02, no_tool=0.02)
    assert refused.source is DecisionSource.CHANGE_READER
    called = decide(_inputs(**pair), sure, model=POINT)
    assert called.decision is Decision.EXECUTE and "only reads" not in called.reason
    few = decide(_inputs(**pair, permitted=2, lone_z=LONE_Z + 1.0, change_verb="approve"), None)  # no model
    assert few.decision is Decision.NO_TOOL and few.source is DecisionSource.CHANGE_READER
    named = decide(_inputs(**pair, change_verb="approve", named=1), sure, model=POINT)
    assert named.decision is Decision.EXECUTE and named.source is DecisionSource.NAMED_TOOL
    none = DecisionScores(right=0.1, ambiguous=0.02, no_tool=0.9)  # turned away by P(no tool): the reason says so too
    assert "only reads" in decide(_inputs(**pair, change_verb="approve"), none, model=POINT).reason


def test_a_request_with_a_placeholder_asks() -> None:
    """Rule 4: a placeholder for what the request leaves unsaid asks, even when the top tool leads clearly (the
    call could not be filled in); P(no tool) still turns the request away first, and one candidate is called."""
    pair = {"names": ("create_calendar_event", "create_task"), "summaries": ("Creates an event.", "Adds a task.")}
    clear = DecisionScores(right=0.5, ambiguous=0.16, no_tool=0.41)
    asked = decide(_inputs(**pair, vague="something", relative_gap=0.64), clear, model=POINT)
    assert asked.decision is Decision.CLARIFY and asked.selected >= 2
    assert asked.reason.startswith('asks: the request leaves open what it is about ("something")')
    assert asked.source is DecisionSource.PLACEHOLDER
    assert asked.clarification == ('Could you say more about what you need ("something")? The closest tools are '
                                   "create_calendar_event (Creates an event.) and create_task (Adds a task.).")
    chinese = decide(_inputs(**pair, vague="弄一下", query="报销的事帮我弄一下"), clear, model=POINT)
    assert chinese.clarification is not None and chinese.clarification.startswith("能具体说说您想做什么吗")
    assert decide(_inputs(**pair, relative_gap=0.64), clear, model=POINT).decision is Decision.EXECUTE
    none = DecisionScores(right=0.1, ambiguous=0.02, no_tool=0.9)
    assert decide(_inputs(**pair, vague="something"), none, model=POINT).decision is Decision.NO_TOOL
    one = {"names": ("create_calendar_event",), "summaries": ("Creates an event.",)}
    assert decide(_inputs(**one, vague="something"), clear, model=POINT).decision is Decision.EXECUTE
    # a few permitted tools (no model reads the result): the placeholder still asks once the request is about them
    few = {**pair, "permitted": 2, "vague": "something"}
    asked_few = decide(_inputs(**few, lone_z=LONE_Z + 1.0), None)
    assert asked_few.decision is Decision.CLARIFY and asked_few.reason.startswith("asks: the request leaves open")
    assert decide(_inputs(**few, lone_z=LONE_Z - 1.0), None).decision is Decision.NO_TOOL


def test_named_tools() -> None:
    lookup = name_lookup([("get_weather_forecast", "travel.weather.forecast"), ("search", "web.search"),
                          ("Now", "Now"), ("CompanyInfoTool", "CompanyInfoTool")])
    assert "search" not in lookup and "now" not in lookup  # plain words never "name" a tool
    assert named_tools("use get_weather_forecast for Paris", lookup) == [0]
    assert named_tools("call travel.weather.forecast, then CompanyInfoTool.", lookup) == [0, 3]
    assert named_tools("search the weather now", lookup) == []
    assert named_tools("use get_weather_forecast_v2", lookup) == []  # a longer identifier is another name
    clash = name_lookup([("book_room", "office.a"), ("book_room", "office.b")])
    assert "book_room" not in clash and clash["office.a"] == 0  # a shared name names neither tool


# ---------------------------------------------------------------------------------------------- reliability


def test_reliability_bins_by_hand() -> None:
    bins = reliability_bins([0.1, 0.15, 0.9], [False, True, True], bins=2)
    assert [(b.low, b.high, b.count) for b in bins] == [(0.0, 0.5, 2), (0.5, 1.0, 1)]
    assert bins[0].predicted == pytest.approx(0.125) and bins[0].observed == 0.5 and bins[1].observed == 1.0
    # ECE = (2 * |0.125 - 0.5| + 1 * |0.9 - 1.0|) / 3 = (0.75 + 0.1) / 3
    assert expected_calibration_error(bins) == pytest.approx(0.85 / 3)
    assert reliability_bins([1.0], [True], bins=10)[0].low == pytest.approx(0.9)  # 1.0 falls in the last bin
    with pytest.raises(ValueError, match="one length"):
        reliability_bins([0.1], [True, False])
    fig = reliability_figure(bins)
    assert "calibration error 0.283" in fig.layout.title.text
