"""The decisions the tests assert survive the encoders' cross-machine noise: every request vector moved by a
random direction of the measured size (tests/decision_margin.py, ``NOISE``; docs/development.md) leaves each
asserted decision where it was, through the real retriever and models. And the margin check itself, by hand."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from decision_margin import MARGIN, NOISE, NoisyAnalyzer, robust

from toolrag.decision.outcome import Decision, DecisionScores, DecisionSource
from toolrag.decision.policy import operating_point

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"

ROOM = ("book a meeting room for 3pm tomorrow",)
#: (query, role, image, earlier turns) of decisions asserted elsewhere with a margin (tests/test_decisions.py).
SAMPLE_CASES = [
    ("tell me a joke", "employee", None, ()),
    ("给我讲个笑话", "employee", None, ()),
    ("what is the capital of Peru", "employee", None, ()),
    ("报销这张停车费", "employee", "queries/sign_parking.png", ()),
    ("tell me a joke", "employee", None, (*ROOM, "move it to room 5")),  # read by the history heads
    ("order me a pizza", "employee", None, ROOM),
]


@pytest.mark.slow
@pytest.mark.parametrize(("query", "role", "image", "history"), SAMPLE_CASES)
def test_asserted_decisions_survive_the_encoders_noise(sample_retriever: Any, query: str, role: str,
                                                       image: str | None, history: tuple[str, ...]) -> None:
    picture = ASSETS / image if image else None
    plain = sample_retriever.search(query, role=role, image=picture, history=history, audited=False)
    assert robust(plain, sample_retriever.decider.model), (plain.scores, plain.decision_reason)
    shipped = sample_retriever.analyzer
    try:
        for seed in range(3):
            sample_retriever.analyzer = NoisyAnalyzer(shipped, NOISE, seed)
            moved = sample_retriever.search(query, role=role, image=picture, history=history, audited=False)
            assert moved.decision is plain.decision, (seed, plain.scores, moved.scores, moved.decision_reason)
            assert moved.selected[:1] == plain.selected[:1], (seed, plain.selected, moved.selected)
    finally:
        sample_retriever.analyzer = shipped


#: (request, its tool, earlier turns) asserted elsewhere to reach the agent (tests/test_decisions.py, the requests
#: in other languages of tests/test_multilingual_search.py).
REACHING = [
    ("set up a 30-minute meeting with Tom tomorrow at 10am and invite him", "office.calendar.create_event", ()),
    ("今朝SSOのパスワードの有効期限が切れました。新しいパスワードはどう設定すればいいですか", "it.password.reset", ()),
    ("이 답장을 독일어로 번역해 줘: 감사합니다, 부품은 다음 주에 발송하겠습니다", "comm.translate.text", ()),
    ("Traduis cette réponse en allemand : merci, nous expédierons les pièces la semaine prochaine",
     "comm.translate.text", ()),
    ("make it 4pm instead, same room", "office.meeting_room.book", ROOM),
]


@pytest.mark.slow
@pytest.mark.parametrize(("query", "tool", "history"), REACHING, ids=["en", "ja", "ko", "fr", "follow-up"])
def test_a_tool_that_reaches_the_agent_still_does_under_the_noise(sample_retriever: Any, query: str,
                                                                  tool: str, history: tuple[str, ...]) -> None:
    shipped = sample_retriever.analyzer
    try:
        for seed in range(3):
            sample_retriever.analyzer = NoisyAnalyzer(shipped, NOISE, seed)
            moved = sample_retriever.search(query, role="employee", history=history, audited=False)
            assert moved.ids[0] == tool and tool in moved.selected, (seed, moved.scores, moved.decision_reason)
    finally:
        sample_retriever.analyzer = shipped


def _result(right: float, none: float, decision: Decision) -> Any:
    return SimpleNamespace(decided_by=DecisionSource.MODEL, decision=decision, ids=("a", "b"),
                           selected=("a",) if decision is not Decision.NO_TOOL else (),
                           scores=DecisionScores(right, 1 - right - none, none), decision_features={})


def test_a_decision_near_a_threshold_is_not_robust() -> None:
    from toolrag.decision.model import shipped_model

    model, _ = shipped_model()
    assert model is not None
    point = operating_point(model)
    far = _result(min(0.99, point.execute_at + 2 * MARGIN), 0.05, Decision.EXECUTE)
    near = _result(point.execute_at + MARGIN / 2, 0.05, Decision.EXECUTE)
    assert robust(far, model) and not robust(near, model)
    clean = _result(0.0, min(1.0, point.inject_below + 2 * MARGIN), Decision.NO_TOOL)
    edge = _result(0.0, point.inject_below + MARGIN / 2, Decision.NO_TOOL)
    assert robust(clean, model) and not robust(edge, model)
