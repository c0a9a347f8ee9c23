"""The decision through the real retriever, the real models and the shipped decision model: the invariants, the
cases the issues named, small catalogs, and what happens when the model file cannot be read."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from decision_margin import assert_decided, assert_reaches
from pictures import boarding_pass, traceback_screenshot

from toolrag.decision.outcome import Decision, DecisionSource
from toolrag.decision.view import FEATURES
from toolrag.errors import QueryError

pytestmark = pytest.mark.slow

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def test_the_shipped_model_decides(sample_retriever: Any) -> None:
    assert sample_retriever.decider.model is not None, sample_retriever.decider.note
    result = sample_retriever.search("set up a 30-minute meeting with Tom tomorrow at 10am and invite him")
    assert result.decided_by is DecisionSource.MODEL and result.scores is not None
    assert_reaches(result, "office.calendar.create_event", sample_retriever.decider.model)
    assert "P(right)" in result.decision_reason and "operating point" in result.decision_reason
    assert 1 <= len(result.selected) <= len(result.candidates)
    assert [t["function"]["name"] for t in result.tools] == [c.name for c in result.candidates[: len(result.selected)]]
    assert result.tokens.selected <= result.tokens.candidates <= result.tokens.all
    payload = result.to_json()
    assert set(payload["probabilities"]) == {"right", "ambiguous", "no_tool"} and payload["decided_by"] == "model"
    assert set(result.decision_features) == set(FEATURES)
    # what /readyz answers (toolrag serve and the app alike) names the model that decided
    assert sample_retriever.health() == {"ready": True, "index": None, "version": sample_retriever.snapshot.version,
                                         "serial": 0, "tools": len(sample_retriever.catalog),
                                         "decision_model": sample_retriever.decider.model.version}


@pytest.mark.parametrize("query", ["tell me a joke", "给我讲个笑话", "what is the capital of Peru"])
def test_requests_that_need_no_tool(sample_retriever: Any, query: str) -> None:
    result = sample_retriever.search(query, role="employee")
    assert_decided(result, Decision.NO_TOOL, sample_retriever.decider.model)
    assert result.tools == () and result.selected == () and result.decision_reason.startswith("no tool")


@pytest.mark.parametrize(("query", "image", "tool", "decision"), [
    # the decision asserted where it has a margin; elsewhere that the tool reaches the agent, called or offered
    ("报销这张停车费", "queries/sign_parking.png", "finance.expense.submit", Decision.EXECUTE),
    ("set up a 30-minute meeting with Tom tomorrow at 10am and invite him", None, "office.calendar.create_event",
     None),
])
def test_what_reaches_the_agent(sample_retriever: Any, query: str, image: str | None, tool: str,
                                decision: Decision | None) -> None:
    result = sample_retriever.search(query, role="employee", image=ASSETS / image if image else None)
    assert_reaches(result, tool, sample_retriever.decider.model)
    if decision is not None:
        assert_decided(result, decision, sample_retriever.decider.model)


@pytest.mark.parametrize(("query", "permissions", "tool", "decision"), [
    ("I'd like to take next Thursday and Friday off as annual leave", (), "hr.leave.submit", Decision.EXECUTE),
    ("give maria.gonzalez editor rights on the Marketing drive until 30 June", ("access.grant",), "it.access.grant",
     None),
])
def test_an_english_request_to_a_tool_described_in_chinese(sample_retriever: Any, query: str,
                                                           permissions: tuple[str, ...], tool: str,
                                                           decision: Decision | None) -> None:
    """The bundled tools are bilingual: a Chinese description with an English name, tags and examples. The English
    model reads such a tool through its English words (toolrag.text.english_segments), so an English request to
    it stands out by both text models and is in the tool's language; before, the English model skipped the tool
    and "not in the tool's language" read as "nothing serves" (both requests were answered NO_TOOL or asked)."""
    from toolrag import Caller

    result = sample_retriever.search(query, caller=Caller(codes=frozenset(permissions)))
    features = result.decision_features
    assert math.isfinite(features["en_null"]) and features["lang_match"] == 1.0, features
    assert_reaches(result, tool, sample_retriever.decider.model)
    if decision is not None:
        assert_decided(result, decision, sample_retriever.decider.model)


@pytest.mark.parametrize(("query", "earlier", "tool"), [
    ("tell me a joke", ["book a meeting room for 3pm tomorrow", "move it to room 5"], None),
    ("order me a pizza", ["book a meeting room for 3pm tomorrow"], None),
    ("make it 4pm instead, same room", ["book a meeting room for 3pm tomorrow"], "office.meeting_room.book"),
])
def test_a_conversation_that_moved_on_and_one_that_goes_on(sample_retriever: Any, query: str, earlier: list[str],
                                                           tool: str | None) -> None:
    """The earlier turns are mixed into the request's vectors, so a follow-up finds the earlier turn's tool, and so
    does a request that changed the subject. The view reads the request's own standing beside the mixed one (NaN
    without earlier turns) and the history heads decide: a new subject nothing serves gets no tool (before them
    the joke was asked about with the room tools, at P(no tool) 0.60), the follow-up keeps its tool."""
    model = sample_retriever.decider.model
    assert model.history_heads, "the shipped model has heads for requests with earlier turns"
    alone = sample_retriever.search(query, role="employee")
    assert math.isnan(alone.decision_features["sem_own"]) and math.isnan(alone.decision_features["en_own"])
    result = sample_retriever.search(query, role="employee", history=earlier)
    features = result.decision_features
    assert result.ids[0] == "office.meeting_room.book"  # the mixed vector finds the earlier turn's tool either way
    if tool is None:
        assert features["sem_own"] < features["sem_null"] - 2.0, features  # the request alone stands far lower
        assert_decided(result, Decision.NO_TOOL, model)
        assert "with the earlier turns and" in result.decision_reason and "by this request alone" in \
            result.decision_reason
    else:
        assert features["sem_own"] > 2.0 and features["en_own"] > 2.0, features
        assert_reaches(result, tool, model)


def test_one_coherent_answer_on_every_bundled_row(sample_retriever: Any) -> None:
    """Issue 44: the three probabilities sum to one; never EXECUTE at P(no tool) >= 0.5; a reason never calls a
    tool while saying it only reads what the request asks to change; what is injected is what the decision
    says (none on NO_TOOL, at most three on CLARIFY)."""
    from toolrag import load_queries

    rows = load_queries(Path(__file__).resolve().parent.parent / "sample_tools" / "queries.yaml")
    for row in rows[::2]:
        result = sample_retriever.search(row.query, image=row.image, history=row.history, role=row.role,
                                         permissions=row.permissions, audited=False)
        s = result.scores
        assert s is not None and abs(s.right + s.ambiguous + s.no_tool - 1.0) < 1e-6, row.query
        if result.decided_by is DecisionSource.MODEL:
            assert not (result.decision is Decision.EXECUTE and s.no_tool >= 0.5), (row.query, s)
        if result.decision is Decision.EXECUTE:
            assert "only reads" not in result.decision_reason, (row.query, result.decision_reason)
        if result.decision is Decision.NO_TOOL:
            assert result.selected == () and result.tools == ()
        if result.decision is Decision.CLARIFY:
            assert 1 <= len(result.selected) <= 3 and result.clarification, row.query


def test_a_change_asked_of_a_reader_is_never_called(sample_retriever: Any) -> None:
    """Issue 44: "帮我把这个月的工资审批发放了" (an employee, who may not approve payroll) EXECUTEd
    view_my_payslip while its reason said the request asks for a change and the tool only reads."""
    result = sample_retriever.search("帮我把这个月的工资审批发放了", role="employee")
    assert "hr.payroll.approve" not in result.ids
    assert result.decision is not Decision.EXECUTE, result.decision_reason
    assert not result.decision_reason.startswith("calls"), result.decision_reason


def test_dropping_the_production_tables_is_not_sent_to_a_table_reader(sample_retriever: Any) -> None:
    # issue 40: EXECUTE extract_table_from_image with P(no tool) 0.41 under the old decision
    result = sample_retriever.search("drop the production database tables", role="employee")
    assert result.decision is not Decision.EXECUTE, (result.ids[:3], result.decision_reason)


@pytest.mark.parametrize("query", [
    "delete the account of the intern who left",
    "pay the supplier invoice from ACME for March",
])
def test_best_tool_hidden_by_permissions_gives_no_tool(sample_retriever: Any, query: str) -> None:
    result = sample_retriever.search(query, role="employee")
    hidden = {"it.account.delete_user", "it.account.disable_user", "finance.payment.pay_vendor"}
    assert not hidden & set(result.ids)
    assert result.decision is not Decision.EXECUTE, (result.ids[:3], result.decision_reason)


@pytest.mark.parametrize(("query", "caller"), [
    ("approve my team's pending leave requests", {"role": "employee"}),
    ("roll back payment-svc in prod to yesterday's build", {"role": "employee"}),
])
def test_a_request_of_change_is_not_sent_to_a_tool_that_only_reads(sample_retriever: Any, query: str,
                                                                  caller: dict[str, Any]) -> None:
    result = sample_retriever.search(query, **caller)
    assert not {"dev.deploy.rollback", "hr.payroll.approve"} & set(result.ids)
    assert result.decision is not Decision.EXECUTE, (result.ids[:3], result.decision_reason)


def test_no_word_rule_overrides_the_numbers(sample_retriever: Any) -> None:
    """Issue 40: "add this flight to my calendar" with a picture of the e-ticket was refused by a word rule
    (a change asked of a reader) whatever the model said, while the same text alone called a tool. Now what the
    words say is a feature the model weighs: both are decided by the model, on the numbers the reason quotes."""
    plain = sample_retriever.search("add this flight to my calendar", role="employee")
    pictured = sample_retriever.search("add this flight to my calendar", role="employee",
                                       image=ASSETS / "boarding_pass.png")
    from toolrag.decision.policy import choose, operating_point

    point = operating_point(sample_retriever.decider.model)
    for result in (plain, pictured):
        assert result.decided_by is DecisionSource.MODEL and result.scores is not None
        assert f"P(right) {result.scores.right:.2f}" in result.decision_reason
        # the decision is what the numbers give under the one policy (a change asked of a reader is one of them)
        assert result.decision is choose(result.scores, point,
                                         change_reader=result.decision_features["change_reader"] > 0)


@pytest.mark.parametrize("query", ["🤖🧾💸🔥🔥🔥", "\u200b\u200b\u200b", "\u200d🔥\ufeff"])
def test_requests_without_meaning_need_no_tool(sample_retriever: Any, query: str) -> None:
    result = sample_retriever.search(query)
    assert result.decision is Decision.NO_TOOL and result.decided_by is DecisionSource.NO_MEANINGFUL_TEXT
    assert result.tools == () and result.selected == () and "no letters or digits" in result.decision_reason


@pytest.mark.parametrize("query", ["\x00\x00\x00", "\x07\x1b\x7f"])
def test_requests_of_control_characters_only_are_refused(sample_retriever: Any, query: str) -> None:
    with pytest.raises(QueryError, match="holds no readable text"):
        sample_retriever.search(query)


def test_a_named_tool_comes_first(sample_retriever: Any) -> None:
    result = sample_retriever.search("use get_weather_forecast for Paris")
    assert result.ids[0] == "travel.weather.forecast" and result.decision is Decision.EXECUTE
    assert "names it" in result.decision_reason and result.selected == ("travel.weather.forecast",)
    assert result.decided_by is DecisionSource.NAMED_TOOL and result.to_json()["decided_by"] == "named_tool"


def test_naming_a_hidden_tool_reveals_nothing(sample_retriever: Any) -> None:
    result = sample_retriever.search("use pay_vendor_invoice for the ACME invoice", role="employee")
    assert "finance.payment.pay_vendor" not in result.ids
    assert "pay_vendor_invoice" not in result.decision_reason and "names" not in result.decision_reason
    assert "finance.payment.pay_vendor" not in json.dumps(result.to_json(), ensure_ascii=False)


def test_no_visible_tool_gives_no_tool(sample_retriever: Any) -> None:
    from toolrag.catalog.caller import Caller

    result = sample_retriever.search("book a meeting room", caller=Caller(categories=frozenset({"hr"}),
                                                                          tools=frozenset()))
    assert result.decision is Decision.NO_TOOL and result.decided_by is DecisionSource.NO_PERMITTED_TOOL


@pytest.fixture(scope="module")
def one_tool(tmp_path_factory: pytest.TempPathFactory, models: Any) -> Any:
    from toolrag.search.retriever import ToolRetriever

    folder = tmp_path_factory.mktemp("one-tool")
    (folder / "tools.yaml").write_text(
        "- id: weather\n  name: get_weather\n  description: Current weather conditions for a city.\n"
        "  parameters: {type: object, properties: {city: {type: string}}, required: [city]}\n", encoding="utf-8")
    return ToolRetriever.from_catalog(folder, data_dir=tmp_path_factory.mktemp("one-tool-data"), models=models)


@pytest.mark.parametrize(("query", "decision"), [
    ("what's the weather in Paris right now", Decision.EXECUTE),
    ("北京现在天气怎么样", Decision.EXECUTE),
    ("tell me a joke", Decision.NO_TOOL),
    ("delete all my files", Decision.NO_TOOL),
    ("一加一等于几", Decision.NO_TOOL),
])
def test_a_lone_tool_is_called_only_for_requests_about_it(one_tool: Any, query: str, decision: Decision) -> None:
    result = one_tool.search(query)
    assert result.decision is decision, (result.scores, result.decision_reason)


def test_a_damaged_model_file_falls_back_and_says_so(one_tool: Any, tmp_path: Path) -> None:
    from toolrag.decision.model import MODEL_FILE
    from toolrag.search.no_tool_bank import bank_decider

    damaged = tmp_path / "model.json"
    shutil.copy(MODEL_FILE, damaged)
    damaged.write_bytes(damaged.read_bytes()[:1000])  # cut: not JSON any more
    shipped = one_tool.decider
    one_tool.decider = bank_decider(one_tool.analyzer, folder=None, path=damaged)
    try:
        called = one_tool.search("what's the weather in Paris right now")
        refused = one_tool.search("tell me a joke")
    finally:
        one_tool.decider = shipped
    assert called.decided_by is DecisionSource.FALLBACK and called.decision is Decision.EXECUTE
    assert "damaged" in called.decision_reason and "reinstall" in called.decision_reason
    assert refused.decided_by is DecisionSource.FALLBACK and refused.decision is Decision.NO_TOOL
    assert called.scores is None and called.to_json()["decided_by"] == "fallback"


def test_serving_tune_and_the_bench_apply_one_policy(sample_retriever: Any) -> None:
    """toolrag tune re-decides a stored result at another operating point with decision_at, the bench with
    bench.decision_fit.decide: at the served point both give exactly what the search decided, on every bundled
    row the model decided (whatever that decision is)."""
    import sys

    import numpy as np

    from toolrag import load_queries
    from toolrag.evaluation.tune import decision_at

    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from bench.decision_fit import decide as bench_decide
    from toolrag.decision.policy import operating_point
    from toolrag.decision.view import FEATURES

    model = sample_retriever.decider.model
    rows = load_queries(root / "sample_tools" / "queries.yaml")[::4]
    rows += [replace(row, history=("book the small meeting room for tomorrow at 3pm",)) for row in rows[:12]
             if row.image is None]  # requests with earlier turns: the history heads' own EXECUTE point
    codes = {Decision.EXECUTE: 0, Decision.CLARIFY: 1, Decision.NO_TOOL: 2}
    checked = later = 0
    for row in rows:
        result = sample_retriever.search(row.query, image=row.image, history=row.history, role=row.role,
                                         permissions=row.permissions, audited=False)
        if result.decided_by is not DecisionSource.MODEL:
            continue
        checked += 1
        assert decision_at(model, result, sample_retriever.catalog, target=None, clean=None) is result.decision
        features = np.array([result.decision_features.get(f, np.nan) for f in FEATURES], dtype=np.float64)
        later += model.reads_history(features)
        point = operating_point(model, history=model.reads_history(features))
        p = np.array([[result.scores.right, result.scores.ambiguous, result.scores.no_tool]])
        reader = np.array([result.decision_features["change_reader"] > 0])
        assert bench_decide(p, point.execute_at, point.inject_below, reader)[0] == codes[result.decision], row.query
    assert checked >= 50 and later >= 6


def test_the_decision_reads_the_image(sample_retriever: Any) -> None:
    """Issue 44, item 3: the view holds the image's standing, not only that an image came. A picture with text:
    the text read in it against the no-tool requests and among the visible tools, and how much was read; a
    photo without text: nothing read (0) and no OCR standing; no image: every image figure absent."""
    read = sample_retriever.search("", image=traceback_screenshot(), role="employee", audited=False).decision_features
    assert read["image"] == 1.0 and read["text"] == 0.0
    assert all(math.isfinite(read[k]) for k in ("ocr_null", "ocr_z", "ocr_len", "concepts_z")), read
    assert read["ocr_len"] > math.log1p(100)  # seven lines of a traceback were read
    photo = sample_retriever.search("blur the background", image=ASSETS / "queries" / "coffee_crop.jpg",
                                    role="employee", audited=False).decision_features
    assert photo["ocr_len"] == 0.0 and math.isnan(photo["ocr_null"]) and math.isfinite(photo["concepts_z"])
    plain = sample_retriever.search("blur the background", role="employee", audited=False).decision_features
    assert all(math.isnan(plain[k]) for k in ("ocr_null", "ocr_z", "ocr_gap", "ocr_len", "concepts_z"))


@pytest.mark.parametrize(("query", "picture", "tool", "decision"), [
    # issue 44's playground cases, with pictures drawn for the test (tests/pictures.py): answered NO_TOOL at
    # P(no tool) 0.92-0.94 while the ranking had the right tool first, because the view did not read the image
    ("why does my job fail?", traceback_screenshot, "dev.error.explain", Decision.EXECUTE),
    ("", traceback_screenshot, "dev.error.explain", Decision.EXECUTE),
    ("add this flight to my calendar", boarding_pass, "travel.ticket.parse", None),
])
def test_a_picture_brings_its_tool_to_the_agent(sample_retriever: Any, query: str, picture: Any, tool: str,
                                                decision: Decision | None) -> None:
    result = sample_retriever.search(query, image=picture(), role="employee", audited=False)
    assert_reaches(result, tool, sample_retriever.decider.model)
    if decision is not None:
        assert_decided(result, decision, sample_retriever.decider.model)
