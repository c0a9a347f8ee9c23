"""The decision package's pure logic: word readers, the model's arithmetic, the policy's rules and thresholds,
the fallback. The same behaviours through the real retriever and the shipped model: tests/test_decisions.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from toolrag.catalog.profile import ToolProfile
from toolrag.decision.actions import action_match
from toolrag.decision.addresses import takes_web_address
from toolrag.decision.model import MODEL_FILE, DecisionModel, Ensemble, load_model
from toolrag.decision.nulls import standing
from toolrag.decision.outcome import Decision, DecisionSource
from toolrag.decision.policy import RULES, Facts, choose, decide, operating_point
from toolrag.decision.slots import open_parameters
from toolrag.decision.view import ENGLISH_ONLY, FEATURES, SELECTION_FEATURES, DecisionView, as_unread
from toolrag.language import english_model_reads
from toolrag.text import has_web_address, stand_in_addresses


def _tool(tool_id: str, description: str = "", **fields: object) -> ToolProfile:
    return ToolProfile.from_checked({"id": tool_id, "name": tool_id, "description": description, **fields})


@pytest.mark.parametrize(("text", "tool", "expected"), [
    ("log me out of my account", _tool("user_login", "Log in a user"), -1),
    ("please log me in", _tool("user_login", "Log in a user"), 1),
    ("unfollow this account", _tool("follow_user", "Follow a user"), -1),
    ("取消我的预订", _tool("book_hotel", "预订酒店"), -1),
    ("book a hotel in Paris", _tool("cancel_booking", "Cancel a booking"), -1),
    ("what's the weather in Paris", _tool("get_weather", "Current weather"), 1),  # a question reads
    ("the weather in Paris", _tool("get_weather", "Current weather"), 0),  # says no action
    ("delete the file notes.txt", _tool("delete_file", "Delete a file"), 1),
])
def test_an_action_opposite_to_the_tools_is_read(text: str, tool: ToolProfile, expected: int) -> None:
    assert action_match(text, tool) == expected


def open_share(schema: dict[str, object], text: str) -> float:
    """The view's ``open`` feature: the share of required parameters the text leaves open (NaN: none required)."""
    names, required = open_parameters(schema, text)
    return len(names) / required if required else math.nan


def test_required_parameters_left_open() -> None:
    schema = {"type": "object", "properties": {"date": {"type": "string", "description": "the day"},
                                               "city": {"type": "string"}}, "required": ["date", "city"]}
    assert open_share(schema, "weather in Paris please") == 0.5  # the date is open
    assert open_parameters(schema, "weather in Paris please") == (("date",), 2)
    assert open_parameters({"type": "object", "properties": {}}, "anything") == ((), 0)
    assert open_share(schema, "weather in Paris tomorrow") == 0.0
    assert open_share(schema, "weather") == 1.0  # nothing beyond the verb: the city is open too
    assert math.isnan(open_share({"type": "object", "properties": {}}, "anything"))
    enum = {"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["unit"]}
    assert open_share(enum, "in Celsius please") == 0.0 and open_share(enum, "how warm is it") == 1.0
    email = {"type": "object", "properties": {"to": {"type": "string", "description": "recipient email"}},
             "required": ["to"]}
    assert open_share(email, "mail wang.lei@acme.example the report") == 0.0
    assert open_share(email, "send the report to my boss") == 1.0


def test_a_request_image_gives_what_a_picture_can() -> None:
    """A boarding pass sent with "put the flight in my calendar": its image is the ticket the tool reads, and
    the text read in it holds the values a picture shows; without an image both stay open."""
    ticket = {"type": "object", "properties": {"image_url": {"type": "string", "format": "uri",
                                                             "description": "Photo or screenshot of the ticket"},
                                               "date": {"type": "string", "description": "travel date"}},
              "required": ["image_url", "date"]}
    assert open_parameters(ticket, "put the flight in my calendar") == (("image_url", "date"), 2)
    assert open_parameters(ticket, "put the flight in my calendar", image=True) == (("date",), 2)
    assert open_parameters(ticket, "put the flight in", image=True, read="CA1831 2026-12-12 PEK-SHA") == ((), 2)


def test_a_request_the_english_model_does_not_read_is_read_as_the_model_learned_it() -> None:
    """One reading for serving and training: a request in a language other than English or Chinese gives the
    decision no English-model or BM25 feature, is not Chinese, and its top tool is not in its language, exactly as
    the training's copies of English and Chinese episodes read (bench/decision_fit.py calls the same function)."""
    assert [english_model_reads(lang) for lang in ("en", "zh", "und", "ja", "de", "ru")] == [
        True, True, True, False, False, False]
    row = np.arange(len(FEATURES), dtype=np.float64) + 1.0
    rows = np.vstack([row, row * 2])
    for given, read in ((row, as_unread(row)), (rows, as_unread(rows))):
        named = dict(zip(FEATURES, np.atleast_2d(read)[-1], strict=True))
        assert all(math.isnan(named[f]) for f in ENGLISH_ONLY)
        assert named["cjk"] == 0.0 and named["lang_match"] == 0.0
        kept = [i for i, f in enumerate(FEATURES) if f not in (*ENGLISH_ONLY, "cjk", "lang_match")]
        np.testing.assert_array_equal(np.atleast_2d(read)[:, kept], np.atleast_2d(given)[:, kept])
    assert not np.isnan(row).any()  # the given features are not changed


def test_standing_against_requests_that_need_no_tool_by_hand() -> None:
    tool = np.array([1.0, 0.0])
    null = np.array([[0.1, 0.99], [0.2, 0.98], [0.3, 0.95], [np.nan, np.nan]])  # cosines 0.1, 0.2, 0.3; a NaN row
    assert standing(tool, np.array([0.4, 0.9]), null) == pytest.approx(2.449, abs=1e-3)
    assert math.isnan(standing(tool, np.array([0.4, 0.9]), np.array([[0.3, 0.9]] * 3)))  # no spread


@pytest.mark.parametrize(("text", "holds"), [("summarize https://example.com/a.pdf", True),
                                             ("what is HTTPS?", False), ("read www.python.org/downloads", True)])
def test_web_addresses(text: str, holds: bool) -> None:
    assert has_web_address(text) is holds


def test_what_the_text_models_read_for_an_address() -> None:
    assert stand_in_addresses("summarize https://example.com/files/whitepaper.pdf") == \
        "summarize the web page URL whitepaper.pdf"
    assert takes_web_address({"properties": {"pageUrl": {"type": "string"}}})
    assert not takes_web_address({"properties": {"path": {"type": "string"}}})


def _trees() -> Ensemble:
    """Two stumps on feature 0 for class 0 and class 1 (three classes), by hand."""
    return Ensemble.from_json({"kind": "trees", "outputs": 3, "baseline": [0.0, 0.0, 0.5], "arrays": {
        "roots": [0, 3], "output": [0, 1], "depth": [2],
        "feature": [0, 0, 0, 0, 0, 0], "threshold": [1.0, 0, 0, 2.0, 0, 0], "left": [1, 0, 0, 4, 0, 0],
        "right": [2, 0, 0, 5, 0, 0], "missing_left": [True, False, False, False, False, False],
        "leaf": [False, True, True, False, True, True], "value": [0, -1.0, 2.0, 0, 0.5, -0.5]}})


def test_trees_are_walked_as_written() -> None:
    model = _trees()
    np.testing.assert_allclose(model.raw(np.array([0.5])), [-1.0, 0.5, 0.5])  # <= 1 left; <= 2 left
    np.testing.assert_allclose(model.raw(np.array([1.5])), [2.0, 0.5, 0.5])
    np.testing.assert_allclose(model.raw(np.array([3.0])), [2.0, -0.5, 0.5])
    np.testing.assert_allclose(model.raw(np.array([np.nan])), [-1.0, -0.5, 0.5])  # missing: left, then right
    p = model.probabilities(np.array([1.5]))
    assert p.sum() == pytest.approx(1.0) and p[0] == pytest.approx(math.exp(2) / (math.exp(2) + 2 * math.exp(0.5)))


def test_a_logistic_model_reads_missing_as_the_mean() -> None:
    model = Ensemble.from_json({"kind": "logistic", "outputs": 1, "baseline": [0.5],
                                "arrays": {"mean": [1.0, 2.0], "scale": [2.0, 1.0], "coef": [[1.0, -1.0]]}})
    assert model.raw(np.array([3.0, np.nan]))[0] == pytest.approx(0.5 + 1.0)
    assert model.probabilities(np.array([1.0, 2.0]))[0] == pytest.approx(1 / (1 + math.exp(-0.5)))


def _constant(p: float, width: int) -> Ensemble:
    """A one-probability head that gives ``p`` to every row (coefficients 0)."""
    logit = math.log(p / (1 - p)) if 0 < p < 1 else (-20.0 if p <= 0 else 20.0)
    return Ensemble("logistic", 1, np.array([logit]), {"mean": np.zeros(width), "scale": np.ones(width),
                                                       "coef": np.zeros((1, width))})


def _model(none: float, call: float, *, also: float = 0.0) -> DecisionModel:
    """A shipped-format model whose heads give these probabilities to every result: P(no tool) ``none`` and
    P(call | a tool serves it) ``call``. EXECUTE points: 80% at P(right) 0.5, 90% at 0.7; clean points: 80% at
    P(no tool) 0.4, 90% at 0.6 (the candidates are injected below)."""
    heads = {"none": _constant(none, len(FEATURES)), "call": _constant(call, len(FEATURES))}
    return DecisionModel(heads, _constant(also, len(SELECTION_FEATURES)), ((0.8, 0.5), (0.9, 0.7)), 0.8,
                         ((0.8, 0.4), (0.9, 0.6)), 0.8, 0.5, "test", {})


def _view(**features: float) -> DecisionView:
    x = np.full(len(FEATURES), np.nan)
    for name, value in features.items():
        x[FEATURES.index(name)] = value
    return DecisionView(x, np.zeros((2, len(SELECTION_FEATURES))))


FACTS = Facts(["create_event", "create_task", "list_events"], ["Create a calendar event.", "Create a task.", ""],
              query="schedule a call with Tom at 3pm")


@pytest.mark.parametrize(("none", "call"), [(0.0, 0.0), (0.1, 0.7), (0.5, 0.5), (0.93, 0.99), (1.0, 1.0)])
def test_the_distribution_sums_to_one(none: float, call: float) -> None:
    p = _model(none, call).probabilities(np.zeros(len(FEATURES)))
    assert sum(p.values()) == pytest.approx(1.0) and all(0.0 <= v <= 1.0 for v in p.values())
    assert p["none"] == pytest.approx(none, abs=1e-6) and p["right"] == pytest.approx((1 - none) * call, abs=1e-6)


def test_the_policy_follows_the_operating_point() -> None:
    model = _model(0.1, 0.7)  # P(right) 0.63, P(ambiguous) 0.27, P(no tool) 0.10
    called = decide(FACTS, _view(), model)
    assert called.decision is Decision.EXECUTE and called.selected == (0,) and called.source is DecisionSource.MODEL
    assert "P(right) 0.63 >= 0.50" in called.reason and "P(no tool) 0.10 < 0.50" in called.reason
    surer = decide(FACTS, _view(), model, target=0.9)  # 0.63 < 0.70: not called; a tool likely serves it: asked
    assert surer.decision is Decision.CLARIFY and "0.63 < 0.70" in surer.reason and "likely serves" in surer.reason
    assert surer.selected == (0, 1, 2)  # the candidates reach the agent with the question, up to three
    assert surer.clarification == ("Do you want create_event (Create a calendar event.), create_task (Create a "
                                   "task.) or list_events?")
    refused = decide(FACTS, _view(), _model(0.45, 0.3))  # P(no tool) 0.45 >= 0.40: nothing injected
    assert refused.decision is Decision.NO_TOOL and refused.selected == ()
    assert "P(no tool) 0.45 >= 0.40" in refused.reason
    looser = decide(FACTS, _view(), _model(0.45, 0.3), clean=0.9)  # inject below 0.60 now
    assert looser.decision is Decision.CLARIFY and looser.selected == (0, 1, 2)


def test_never_execute_when_no_tool_is_as_likely() -> None:
    """P(right) may reach the EXECUTE threshold while P(no tool) >= 0.5 (a low threshold): never a call then."""
    model = DecisionModel({"none": _constant(0.55, len(FEATURES)), "call": _constant(0.9, len(FEATURES))},
                          _constant(0.0, len(SELECTION_FEATURES)), ((0.8, 0.3),), 0.8, ((0.8, 0.6),), 0.8, 0.5, "t", {})
    asked = decide(FACTS, _view(), model)  # P(right) 0.405 >= 0.30, P(no tool) 0.55
    assert asked.decision is Decision.CLARIFY and "but P(no tool) 0.55 >= 0.50" in asked.reason
    for none, call in [(0.5, 1.0), (0.7, 1.0), (0.99, 1.0)]:
        x = DecisionModel({"none": _constant(none, len(FEATURES)), "call": _constant(call, len(FEATURES))},
                          _constant(0.0, len(SELECTION_FEATURES)), ((0.8, 0.0),), 0.8, ((0.8, 0.9),), 0.8, 0.5, "t", {})
        assert decide(FACTS, _view(), x).decision is not Decision.EXECUTE


def test_a_change_asked_of_a_reader_is_asked_not_called() -> None:
    """The reason never calls a tool while saying it only reads what the request asks to change."""
    view = DecisionView(_view().features, np.zeros((2, len(SELECTION_FEATURES))), change_verb="approve")
    facts = Facts(["view_my_payslip", "get_expense_claim_status"], ["", ""], query="approve this month's payroll")
    outcome = decide(facts, view, _model(0.05, 0.95))
    assert outcome.decision is Decision.CLARIFY and not outcome.reason.startswith("calls")
    assert 'asks for a change ("approve") and view_my_payslip only reads' in outcome.reason
    assert decide(facts, view, _model(0.9, 0.95)).decision is Decision.NO_TOOL


def test_a_stuffed_tool_is_never_injected_nor_named() -> None:
    stuffed = Facts(FACTS.names, FACTS.summaries, query=FACTS.query, eligible=(False, True, True))
    outcome = decide(stuffed, _view(), _model(0.05, 0.95))  # the model would call the top tool
    assert outcome.decision is Decision.CLARIFY and outcome.selected == (1, 2)
    assert outcome.clarification is not None and "create_event" not in outcome.clarification
    also = decide(Facts(FACTS.names, FACTS.summaries, query=FACTS.query, eligible=(True, False, True)), _view(),
                  _model(0.05, 0.95, also=0.9))
    assert also.decision is Decision.EXECUTE and also.selected == (0, 2)
    none = decide(Facts(FACTS.names, FACTS.summaries, query=FACTS.query, eligible=(False, False, False)), _view(),
                  _model(0.05, 0.95))
    assert none.decision is Decision.NO_TOOL and none.selected == () and "keyword stuffing" in none.reason


def test_choose_is_the_policy_decide_applies() -> None:
    """One policy: decide() gives what choose() says for every distribution and point (the bench and
    toolrag tune call choose() on stored distributions)."""
    for none in (0.05, 0.3, 0.45, 0.55, 0.9):
        for call in (0.1, 0.5, 0.8, 0.99):
            for target, clean in ((None, None), (0.9, 0.9)):
                model = _model(none, call)
                outcome = decide(FACTS, _view(), model, target=target, clean=clean)
                assert outcome.scores is not None
                assert outcome.decision is choose(outcome.scores, operating_point(model, target=target, clean=clean))


def test_the_selection_adds_the_tools_likely_needed_too() -> None:
    both = decide(FACTS, _view(), _model(0.1, 0.7, also=0.7))
    assert both.decision is Decision.EXECUTE and both.selected == (0, 1, 2) and "3 tools injected" in both.reason


def test_the_selection_is_the_run_of_candidates_likely_needed() -> None:
    """One rule for serving and the benches (``DecisionModel.also_selected``): the lower candidates join while
    each one's P(also needed) reaches the threshold; the first below it ends the run."""
    width = len(SELECTION_FEATURES)
    coef = np.zeros((1, width))
    coef[0, 0] = 10.0  # P(also needed) = sigmoid(10 x the first selection feature)
    selection = Ensemble("logistic", 1, np.array([0.0]), {"mean": np.zeros(width), "scale": np.ones(width),
                                                           "coef": coef})
    model = DecisionModel({"none": _constant(0.1, len(FEATURES)), "call": _constant(0.9, len(FEATURES))}, selection,
                          ((0.8, 0.5),), 0.8, ((0.8, 0.4),), 0.8, 0.5, "test", {})
    rows = np.zeros((3, width))
    rows[:, 0] = [1.0, -1.0, 1.0]  # needed, not needed, needed
    assert model.also_selected(rows) == 1 and model.also_selected(rows[1:]) == 0
    assert model.also_selected(rows[[0, 2]]) == 2 and model.also_selected(np.zeros((0, width))) == 0


def test_a_question_names_what_the_request_leaves_open() -> None:
    view = DecisionView(_view().features, np.zeros((0, len(SELECTION_FEATURES))), open_parameters=("date",))
    asked = decide(Facts(["plan_auction"], ["Plan an auction."], query="plan an auction"), view, _model(0.1, 0.3))
    assert asked.decision is Decision.CLARIFY and asked.selected == (0,)
    assert asked.clarification == "To use plan_auction I need: date. Could you give it?"
    chinese = decide(Facts(["plan_auction"], [""], query="我需要计划一个拍卖活动"), view, _model(0.1, 0.3))
    assert chinese.clarification == "要使用 plan_auction，还需要您提供：date。"
    japanese = decide(Facts(["plan_auction"], [""], query="オークションの計画を立てたいです"), view, _model(0.1, 0.3))
    assert japanese.clarification == asked.clarification  # its kanji do not make it Chinese
    searched = decide(Facts(["plan_auction"], [""], query="我需要计划一个拍卖活动", language="en"), view,
                      _model(0.1, 0.3))
    assert searched.clarification == asked.clarification  # the language the search detected decides


def test_a_question_about_one_tools_parameters_injects_that_tool_alone() -> None:
    """With two candidates that are not look-alikes, the question is about the top tool's missing parameters:
    the selection is that tool, not the two."""
    features = _view(lookalike=0.5).features
    view = DecisionView(features, np.zeros((1, len(SELECTION_FEATURES))), open_parameters=("date",))
    asked = decide(Facts(["plan_auction", "list_events"], ["Plan an auction.", ""], query="plan an auction"), view,
                   _model(0.1, 0.3))
    assert asked.decision is Decision.CLARIFY and asked.selected == (0,)
    assert asked.clarification == "To use plan_auction I need: date. Could you give it?"


def test_a_target_beyond_the_measured_points_says_which_point_it_used() -> None:
    called = decide(FACTS, _view(), _model(0.05, 0.9), target=0.97)  # measured: 80% and 90% only
    assert called.decision is Decision.EXECUTE
    assert "0.85 >= 0.70 (the operating point for 90% EXECUTE precision)" in called.reason


def test_the_invariants_come_first() -> None:
    model = _model(0.01, 0.95)
    assert [source for source, _, _ in RULES] == [DecisionSource.NO_PERMITTED_TOOL, DecisionSource.NO_MEANINGFUL_TEXT,
                                                  DecisionSource.NAMED_TOOL]
    nothing = decide(Facts([], [], query="book a room"), None, model)
    assert nothing.decision is Decision.NO_TOOL and nothing.source is DecisionSource.NO_PERMITTED_TOOL
    emoji = decide(Facts(["a"], [""], meaningful=False, query="🔥"), _view(), model)
    assert emoji.decision is Decision.NO_TOOL and emoji.source is DecisionSource.NO_MEANINGFUL_TEXT
    named = decide(Facts(["get_weather", "b"], ["", ""], named=1), _view(), _model(0.9, 0.1))
    assert named.decision is Decision.EXECUTE and named.source is DecisionSource.NAMED_TOOL and named.selected == (0,)
    assert named.scores is not None and named.scores.no_tool == pytest.approx(0.9)  # the model's view, kept


def test_without_a_model_the_top_tools_standing_decides(tmp_path: Path) -> None:
    missing, note = load_model(tmp_path / "model.json")
    assert missing is None and "cannot be read" in note
    (tmp_path / "model.json").write_text('{"version": "x", "features": ["not", "these"]}', encoding="utf-8")
    damaged, why = load_model(tmp_path / "model.json")
    assert damaged is None and "damaged" in why
    called = decide(FACTS, _view(en_null=3.1), None, note=why)
    assert called.decision is Decision.EXECUTE and called.source is DecisionSource.FALLBACK
    assert "damaged" in called.reason
    refused = decide(FACTS, _view(en_null=0.4, sem_null=5.0), None, note=why)  # the English model's z first
    assert refused.decision is Decision.NO_TOOL and refused.source is DecisionSource.FALLBACK


@pytest.mark.parametrize("damage", ["no depth", "feature out of range", "child out of range", "no points"])
def test_a_model_file_damaged_inside_is_refused_when_loaded(tmp_path: Path, damage: str) -> None:
    """A file that is still JSON but whose trees cannot be evaluated is refused by load_model (the decision
    falls back with a note), never loaded to fail in every search."""
    data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    arrays = data["heads"]["none"]["arrays"]
    inner = arrays["leaf"].index(False)
    if damage == "no depth":
        del arrays["depth"]
    elif damage == "feature out of range":
        arrays["feature"][inner] = len(FEATURES) + 3
    elif damage == "child out of range":
        arrays["left"][inner] = len(arrays["leaf"]) + 10
    else:
        data["operating_points"] = []
    (tmp_path / "model.json").write_text(json.dumps(data), encoding="utf-8")
    model, note = load_model(tmp_path / "model.json")
    assert model is None and "damaged" in note and "reinstall" in note


def test_the_model_file_round_trips() -> None:
    model = _model(0.1, 0.7)
    again = DecisionModel.from_json(model.to_json())
    assert again.probabilities(np.zeros(len(FEATURES))) == pytest.approx(model.probabilities(np.zeros(len(FEATURES))))
    assert again.execute_threshold(0.85) == 0.7 and again.execute_threshold(0.8) == 0.5
    assert again.execute_threshold(0.99) == 0.7  # beyond every measured target: the highest threshold
    assert again.clean_point(0.85) == (0.9, 0.6) and again.clean_point(0.99) == (0.9, 0.6)
    data = json.loads(model.to_json())
    data["features"] = data["features"][:-1]
    with pytest.raises(ValueError, match="rebuild it"):
        DecisionModel.from_json(json.dumps(data))


def test_a_request_with_earlier_turns_reads_the_history_heads() -> None:
    """A request with earlier turns (and no image) is read by the history heads, every other by the text heads
    (an image by the image heads); the file keeps all three."""
    base = _model(0.1, 0.7)
    talk = {"none": _constant(0.8, len(FEATURES)), "call": _constant(0.7, len(FEATURES))}
    pictured = {"none": _constant(0.3, len(FEATURES)), "call": _constant(0.7, len(FEATURES))}
    model = DecisionModel(base.heads, base.selection, base.points, 0.8, base.clean_points, 0.8, 0.5, "test", {},
                          pictured, talk)
    alone, later, shown = (np.zeros(len(FEATURES)) for _ in range(3))
    later[FEATURES.index("history")] = 1.0
    shown[FEATURES.index("history")] = shown[FEATURES.index("image")] = 1.0
    assert model.probabilities(alone)["none"] == pytest.approx(0.1)
    assert model.probabilities(later)["none"] == pytest.approx(0.8)
    assert model.probabilities(shown)["none"] == pytest.approx(0.3)
    again = DecisionModel.from_json(model.to_json())
    assert again.probabilities(later)["none"] == pytest.approx(0.8) and again.probabilities(alone)["none"] == \
        pytest.approx(0.1)


def test_a_request_with_earlier_turns_is_called_at_the_history_heads_own_execute_point() -> None:
    """Where the file holds EXECUTE thresholds measured for the history heads, a request they read is called at
    those (the EXECUTE precision they were measured to give), every other at the text heads' thresholds; the
    clean point stays shared. A file with such thresholds but no history heads is refused."""
    base = _model(0.3, 0.8)  # P(right) 0.56, P(no tool) 0.3 whichever heads read it
    model = DecisionModel(base.heads, base.selection, base.points, 0.8, base.clean_points, 0.8, 0.5, "test", {},
                          dict(base.heads), dict(base.heads), ((0.8, 0.75), (0.9, 0.9)))
    assert decide(FACTS, _view(sem_null=3.0), model).decision is Decision.EXECUTE  # 0.56 >= 0.5
    later = decide(FACTS, _view(sem_null=3.0, history=1.0), model)
    assert later.decision is Decision.CLARIFY  # not called (0.56 < 0.75), still offered (0.3 < 0.4)
    assert "P(right) 0.56 < 0.75 (the operating point for 80% EXECUTE precision on requests with earlier turns)" \
        in later.reason
    assert decide(FACTS, _view(sem_null=3.0, history=1.0), model, target=0.7).decision is Decision.CLARIFY
    assert decide(FACTS, _view(sem_null=3.0, history=1.0, image=1.0), model).decision is Decision.EXECUTE  # image heads
    assert operating_point(model, history=True).execute_at == 0.75 and operating_point(model).execute_at == 0.5
    assert operating_point(model, history=True).inject_below == operating_point(model).inject_below == 0.4
    assert operating_point(base, history=True) == operating_point(base)  # no history thresholds: the shared ones
    again = DecisionModel.from_json(model.to_json())
    assert again.execute_threshold(0.85, history=True) == 0.9 and again.execute_threshold(0.85) == 0.7
    assert "history_operating_points" not in json.loads(base.to_json())  # a file without them stays as it was
    data = json.loads(model.to_json())
    data["history_heads"] = {}
    with pytest.raises(ValueError, match="history heads it lacks"):
        DecisionModel.from_json(json.dumps(data))


def test_the_reason_says_how_the_top_tool_stands_with_the_earlier_turns_and_alone() -> None:
    """A request with earlier turns: the reason quotes both standings the history heads read (the English model's
    where it read the request), so "tell me a joke" after booking a room says why the room tool is not offered."""
    called = decide(FACTS, _view(sem_null=3.5, sem_own=0.3, en_null=3.6, en_own=-0.4, history=1.0), _model(0.9, 0.1))
    assert called.decision is Decision.NO_TOOL
    assert "3.6 spreads out with the earlier turns and -0.4 by this request alone" in called.reason
    alone = decide(FACTS, _view(sem_null=3.5, en_null=3.6), _model(0.9, 0.1))
    assert "earlier turns" not in alone.reason
    chinese = decide(FACTS, _view(sem_null=4.0, sem_own=1.0, history=1.0), _model(0.05, 0.95))  # no English reading
    assert chinese.decision is Decision.EXECUTE and "4.0 spreads out with the earlier turns and 1.0" in chinese.reason
