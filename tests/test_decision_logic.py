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
from toolrag.decision.addresses import has_web_address, stand_in_addresses, takes_web_address
from toolrag.decision.model import MODEL_FILE, DecisionModel, Ensemble, load_model
from toolrag.decision.nulls import standing
from toolrag.decision.outcome import Decision, DecisionSource
from toolrag.decision.policy import RULES, Facts, decide, name_lookup, named_tools
from toolrag.decision.slots import open_parameters, open_share
from toolrag.decision.view import FEATURES, SELECTION_FEATURES, DecisionView


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
    logit = math.log(p / (1 - p)) if 0 < p < 1 else -20.0
    return Ensemble("logistic", 1, np.array([logit]), {"mean": np.zeros(width), "scale": np.ones(width),
                                                       "coef": np.zeros((1, width))})


def _model(right: float, ask: float, none: float, *, also: float = 0.0) -> DecisionModel:
    """A shipped-format model whose heads give these probabilities to every result."""
    heads = {name: _constant(p, len(FEATURES)) for name, p in (("right", right), ("ask", ask), ("none", none))}
    return DecisionModel(heads, _constant(also, len(SELECTION_FEATURES)), ((0.8, 0.5), (0.9, 0.7)), 0.8, 0.3, 0.5,
                         "test", {})


def _view(**features: float) -> DecisionView:
    x = np.full(len(FEATURES), np.nan)
    for name, value in features.items():
        x[FEATURES.index(name)] = value
    return DecisionView(x, np.zeros((2, len(SELECTION_FEATURES))))


FACTS = Facts(["create_event", "create_task", "list_events"], ["Create a calendar event.", "Create a task.", ""],
              query="schedule a call with Tom at 3pm")


def test_the_policy_follows_the_operating_point() -> None:
    model = _model(0.6, 0.2, 0.1)
    called = decide(FACTS, _view(), model)
    assert called.decision is Decision.EXECUTE and called.selected == 1 and called.source is DecisionSource.MODEL
    assert "P(right) 0.60 >= 0.50" in called.reason
    surer = decide(FACTS, _view(), model, target=0.9)  # P(right) 0.6 < 0.7: not called; a tool likely fits: asked
    assert surer.decision is Decision.CLARIFY and "0.60 < 0.70" in surer.reason and "likely fits" in surer.reason
    refused = decide(FACTS, _view(), _model(0.3, 0.1, 0.6))  # P(no tool) 0.6: no tool likely fits, none asked
    assert refused.decision is Decision.NO_TOOL and "P(no tool) 0.60 >= 0.50" in refused.reason
    asked = decide(FACTS, _view(), _model(0.4, 0.35, 0.1))
    assert asked.decision is Decision.CLARIFY and asked.selected == 2
    assert asked.clarification == ("Do you want create_event (Create a calendar event.) or create_task "
                                   "(Create a task.)?")
    assert asked.scores is not None and asked.scores.ambiguous == pytest.approx(0.35)


def test_the_selection_adds_the_tools_likely_needed_too() -> None:
    both = decide(FACTS, _view(), _model(0.6, 0.2, 0.1, also=0.7))
    assert both.decision is Decision.EXECUTE and both.selected == 3 and "3 tools injected" in both.reason


def test_a_question_names_what_the_request_leaves_open() -> None:
    view = DecisionView(_view().features, np.zeros((0, len(SELECTION_FEATURES))), open_parameters=("date",))
    asked = decide(Facts(["plan_auction"], ["Plan an auction."], query="plan an auction"), view,
                   _model(0.2, 0.5, 0.1))
    assert asked.decision is Decision.CLARIFY and asked.selected == 1
    assert asked.clarification == "To use plan_auction I need: date. Could you give it?"
    chinese = decide(Facts(["plan_auction"], [""], query="我需要计划一个拍卖活动"), view, _model(0.2, 0.5, 0.1))
    assert chinese.clarification == "要使用 plan_auction，还需要您提供：date。"


def test_a_question_about_one_tools_parameters_injects_that_tool_alone() -> None:
    """With two candidates that are not look-alikes, the question is about the top tool's missing parameters:
    the selection is that tool, not the two."""
    features = _view(lookalike=0.5).features
    view = DecisionView(features, np.zeros((1, len(SELECTION_FEATURES))), open_parameters=("date",))
    asked = decide(Facts(["plan_auction", "list_events"], ["Plan an auction.", ""], query="plan an auction"), view,
                   _model(0.2, 0.5, 0.1))
    assert asked.decision is Decision.CLARIFY and asked.selected == 1
    assert asked.clarification == "To use plan_auction I need: date. Could you give it?"


def test_a_target_beyond_the_measured_points_says_which_point_it_used() -> None:
    called = decide(FACTS, _view(), _model(0.8, 0.1, 0.1), target=0.97)  # measured: 80% and 90% only
    assert called.decision is Decision.EXECUTE
    assert "0.80 >= 0.70 (the operating point for 90% EXECUTE precision, the measured point nearest 97%)" \
        in called.reason
    exact = decide(FACTS, _view(), _model(0.8, 0.1, 0.1), target=0.9)
    assert "(the operating point for 90% EXECUTE precision)" in exact.reason


def test_the_invariants_come_first() -> None:
    model = _model(0.9, 0.05, 0.01)
    assert [source for source, _, _ in RULES] == [DecisionSource.NO_PERMITTED_TOOL, DecisionSource.NO_MEANINGFUL_TEXT,
                                                  DecisionSource.NAMED_TOOL]
    nothing = decide(Facts([], [], query="book a room"), None, model)
    assert nothing.decision is Decision.NO_TOOL and nothing.source is DecisionSource.NO_PERMITTED_TOOL
    emoji = decide(Facts(["a"], [""], meaningful=False, query="🔥"), _view(), model)
    assert emoji.decision is Decision.NO_TOOL and emoji.source is DecisionSource.NO_MEANINGFUL_TEXT
    named = decide(Facts(["get_weather", "b"], ["", ""], named=1), _view(), _model(0.01, 0.01, 0.9))
    assert named.decision is Decision.EXECUTE and named.source is DecisionSource.NAMED_TOOL and named.selected == 1
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
    arrays = data["heads"]["right"]["arrays"]
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
    model = _model(0.6, 0.2, 0.1)
    again = DecisionModel.from_json(model.to_json())
    assert again.probabilities(np.zeros(len(FEATURES))) == pytest.approx(model.probabilities(np.zeros(len(FEATURES))))
    assert again.execute_threshold(0.85) == 0.7 and again.execute_threshold(0.8) == 0.5
    assert again.execute_threshold(0.99) == 0.7  # beyond every measured target: the highest threshold
    data = json.loads(model.to_json())
    data["features"] = data["features"][:-1]
    with pytest.raises(ValueError, match="rebuild it"):
        DecisionModel.from_json(json.dumps(data))


def test_named_tools() -> None:
    lookup = name_lookup([("get_weather_forecast", "get_weather_forecast", "weather.forecast"),
                          ("search", "search", "search"), ("send_mail", "send_mail", "a.send_mail"),
                          ("send_mail", "send_mail_2", "b.send_mail")])
    assert named_tools("use get_weather_forecast for Paris", lookup) == [0]
    assert named_tools("search for cats", lookup) == []  # a plain word names no tool
    assert named_tools("call send_mail", lookup) == []  # two tools share the name: it names neither
    assert named_tools("call b.send_mail", lookup) == [3]
