"""The pure parts of the decision's benchmarks: episode sizes, labels, weights, operating points and precision at
equal coverage (bench.decision_episodes, bench.decision_fit, bench.decisions), and bench.build_phases' rate
ceiling, on examples worked by hand."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.decision_episodes import size_draw  # noqa: E402
from bench.decision_fit import _weights, clean_points, decide, labels, operating_points  # noqa: E402
from bench.decisions import Row, precision_at  # noqa: E402


def test_catalog_sizes_lean_toward_what_agents_send() -> None:
    rng = random.Random(0)
    sizes = [size_draw(rng, 1000) for _ in range(4000)]
    small = np.mean([s <= 10 for s in sizes])
    assert 0.66 < small < 0.74 and max(sizes) <= 300 and min(sizes) >= 1
    assert all(size_draw(rng, 3) <= 3 for _ in range(100))  # never more than the folder holds


def test_episode_labels() -> None:
    records = [
        {"expect": "EXECUTE", "gold": ("a",), "top": ("a", "b")},   # right
        {"expect": "EXECUTE", "gold": ("b",), "top": ("a", "b")},   # the tool that serves it ranks second: ask
        {"expect": "NO_TOOL", "gold": ("a",), "top": ("b",)},       # none
        {"expect": "EXECUTE", "gold": ("c",), "top": ("a", "b")},   # missed
        {"expect": "CLARIFY", "gold": ("a",), "top": ("a",)},       # ask
    ]
    assert labels(records).tolist() == [0, 1, 2, 3, 1]


def test_each_group_weighs_the_same_and_siblings_a_quarter() -> None:
    groups = np.array(["a", "a", "a", "b"])
    assert _weights(groups).tolist() == pytest.approx([2 / 3, 2 / 3, 2 / 3, 2.0])
    kinds = np.array(["gold", "sibling", "gold", "gold"])
    w = _weights(groups, kinds)
    assert w[:3].sum() == pytest.approx(2.0) and w[1] == pytest.approx(w[0] / 4)


def test_operating_points_by_hand() -> None:
    # P(right) 0.9 0.8 0.7 0.6 for classes right right none right: precision 1, 1, 2/3, 3/4 from the top down
    p = np.array([[0.9, 0, 0], [0.8, 0, 0], [0.7, 0, 0], [0.6, 0, 0]], dtype=float)
    y = np.array([0, 0, 2, 0])
    points = dict(operating_points(p, y, np.ones(4)))
    assert points[0.7] == pytest.approx(0.6) and points[0.75] == pytest.approx(0.6)
    assert points[0.8] == pytest.approx(0.8) and points[0.95] == pytest.approx(0.8)
    # columns right, ask, none; CLARIFY while P(no tool) < 0.5, never EXECUTE at P(no tool) >= 0.5
    q = np.array([[0.9, 0.05, 0.05], [0.6, 0.1, 0.3], [0.55, 0.0, 0.45], [0.6, 0.0, 0.5], [0.1, 0.2, 0.7]])
    assert decide(q, 0.75, 0.5).tolist() == [0, 1, 1, 2, 2]
    assert decide(q, 0.5, 0.6).tolist() == [0, 0, 0, 1, 2]
    assert decide(q, 0.5, 0.6, np.array([True, False, False, False, False])).tolist() == [1, 0, 0, 1, 2]


def test_clean_points_by_hand() -> None:
    # four requests nothing serves with P(no tool) 0.2 0.4 0.6 0.8 and one served one: keeping 75% clean needs a
    # threshold at or below 0.4 (three of four at or above it), 95% at or below 0.2
    p = np.array([[0, 0, 0.2], [0, 0, 0.4], [0, 0, 0.6], [0, 0, 0.8], [0.9, 0, 0.1]])
    records = [{"expect": "NO_TOOL", "kind": "foreign"}] * 4 + [{"expect": "EXECUTE", "kind": "gold"}]
    points = dict(clean_points(p, records, np.ones(5)))
    assert points[0.75] == pytest.approx(0.4) and points[0.95] == pytest.approx(0.2)
    assert points[0.6] == pytest.approx(0.4) and points[0.7] == pytest.approx(0.4)
    # a request whose own tool was taken out (its siblings kept) is not counted: the candidates are its relatives
    sibling = dict(clean_points(np.vstack([p, [[0, 0, 0.01]] * 4]), records + [{"expect": "NO_TOOL",
                                                                                "kind": "sibling"}] * 4, np.ones(9)))
    assert sibling == points


def test_agent_outcome_by_hand() -> None:
    from bench.agent_outcome import agent_outcome

    injected = [("a",), ("b", "c", "a"), (), ("x",), ()]
    gold = [("a",), ("a",), ("a",), (), ()]
    top = [("a", "b", "c"), ("b", "c", "a"), ("b", "a", "c"), ("x", "y", "z"), ("x", "y", "z")]
    cosine = [0.9, 0.5, 0.7, 0.8, 0.1]
    m = agent_outcome(injected, gold, top, cosine)
    assert m["reach"] == pytest.approx(2 / 3) and m["top3_reach"] == pytest.approx(1.0)
    assert m["reach_ratio"] == pytest.approx(2 / 3) and m["clean"] == pytest.approx(0.5)
    assert m["injected"] == pytest.approx(5 / 5)
    # the MiniLM threshold reaching 2/3 of the served rows: the two highest served cosines (0.9, 0.7) and the
    # no-tool row at 0.8 above them: threshold 0.7 injects rows 0, 2, 3 (3 tools each); one of two no-tool rows clean
    assert m["base_clean"] == pytest.approx(0.5) and m["base_injected"] == pytest.approx(9 / 5)


def test_precision_at_equal_coverage_by_hand() -> None:
    rows = [Row("EXECUTE", ("a",), "EXECUTE", ("a",), (), 0.9, 0, 0, 0, 0, 0.0),
            Row("NO_TOOL", (), "NO_TOOL", ("b",), (), 0.8, 0, 0, 0, 0, 0.0),
            Row("EXECUTE", ("a",), "EXECUTE", ("a",), (), 0.7, 0, 0, 0, 0, 0.0),
            Row("EXECUTE", ("a",), "EXECUTE", ("b",), (), 0.6, 0, 0, 0, 0, 0.0)]
    scores = [r.p_right for r in rows]
    # three rows a listed tool serves; 1/3 EXECUTEd right after the first row (precision 1), 2/3 after the third
    # (2 right of 3 called), 3/3 is never reached (the last one ranks the wrong tool first)
    assert precision_at(scores, rows, 1 / 3) == pytest.approx(1.0)
    assert precision_at(scores, rows, 2 / 3) == pytest.approx(2 / 3)
    assert np.isnan(precision_at(scores, rows, 1.0))


def test_build_ceiling_line_worked_example() -> None:
    from bench.build_phases import ceiling_line

    # 1,000 tools, the tool-text phase 8 s: 1000 / 8 = 125 tools/s; 30 CPU s over 2 cores: 1000 * 2 / 30 = 66.7
    line = ceiling_line(1000, text_wall=8.0, cpu=30.0, cores=2)
    assert "125.0 tools/s" in line
    assert "66.7 tools/s" in line
