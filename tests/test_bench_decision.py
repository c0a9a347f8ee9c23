"""The pure parts of the decision's benchmarks: episode sizes, labels, weights, operating points and precision at
equal coverage (bench.decision_episodes, bench.decision_fit, bench.decisions), and bench.build_phases' rate
ceiling, on examples worked by hand."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.decision_episodes import size_draw  # noqa: E402
from bench.decision_fit import clean_points, decide, labels, operating_points  # noqa: E402
from bench.decision_rows import weights as _weights  # noqa: E402
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


def test_the_groups_never_fitted_on_are_held_apart() -> None:
    from bench.decision_episodes import GROUPS, SHIFT_GROUPS
    from bench.decision_train import fitted_shift, split_shift

    records = [{"group": g} for g in ("gorilla", "tau_bench", "glaive", "restbench", "acebench")]
    fitted, shift = split_shift(records, fitted_shift(""))
    assert [r["group"] for r in fitted] == ["gorilla", "acebench"]
    assert [r["group"] for r in shift] == ["tau_bench", "glaive", "restbench"]
    fitted, shift = split_shift(records, fitted_shift("glaive, restbench"))
    assert [r["group"] for r in shift] == ["tau_bench"]
    assert fitted_shift("all") == SHIFT_GROUPS and SHIFT_GROUPS.issubset(GROUPS.values())
    with pytest.raises(SystemExit, match="gorilla is not a group the shipped model never saw; choose among glaive"):
        fitted_shift("glaive,gorilla")


def test_episodes_of_some_sources_only(tmp_path: Path) -> None:
    from bench.decision_episodes import GROUPS, Space, build_episodes

    _tiny_training(tmp_path)
    vectors = np.eye(4)
    space = Space([f"t{k}" for k in range(4)], vectors, None, np.zeros(4, dtype=bool))
    decisions = {"decisions_glaive_toolcall_en": [{"request": "order a pizza", "visible": ["f"], "gold": [],
                                                   "expect": "NO_TOOL", "lang": "en"}],
                 "decisions_bfcl_nonlive": [{"request": "never built", "visible": ["g"], "gold": [],
                                             "expect": "NO_TOOL"}]}
    episodes = build_episodes(tmp_path, {"glaive_toolcall_en": space}, decisions, training=tmp_path, seed=3,
                              sources=["glaive_toolcall_en", "decisions_glaive_toolcall_en"])
    assert {e.source for e in episodes} == {"glaive_toolcall_en", "decisions_glaive_toolcall_en"}
    kinds = [e.kind for e in episodes if e.source == "glaive_toolcall_en"]
    assert kinds.count("gold") == kinds.count("sibling") == 4
    for e in episodes:
        if e.kind == "gold":
            assert set(e.gold) <= set(e.visible) and e.expect == "EXECUTE"
        if e.kind == "sibling":
            assert not set(e.gold) & set(e.visible) and e.expect == "NO_TOOL"
        if e.kind == "foreign":  # another group's request, to this folder's catalog
            owner = e.query.rsplit(" of ", 1)[1]
            assert GROUPS[owner] != "glaive" and e.expect == "NO_TOOL"


class _StubModel:
    """A decision model whose distribution is given per row (keyed by the first feature)."""

    default_target, default_clean, select_threshold = 0.85, 0.85, 0.5

    def __init__(self, table: dict[float, tuple[float, float]]) -> None:
        self.table = table

    def operating_point(self, target: float, *, history: bool = False) -> tuple[float, float]:
        return target, 0.5  # EXECUTE at P(right) >= 0.5

    def reads_history(self, x: np.ndarray) -> bool:
        return False

    def clean_point(self, target: float) -> tuple[float, float]:
        return target, 0.5  # the candidates injected at P(no tool) < 0.5

    def probabilities(self, x: np.ndarray) -> dict[str, float]:
        right, none = self.table[float(x[0])]
        return {"right": right, "ask": 1.0 - right - none, "none": none}

    def also_selected(self, rows: np.ndarray) -> int:
        return 0


def test_frontier_by_hand() -> None:
    from bench.decision_frontier import frontier
    from toolrag.decision.view import FEATURES

    def row(key: float, gold: tuple[str, ...], top: tuple[str, ...] = ("a", "b", "c")) -> dict:
        x = [0.0] * len(FEATURES)
        x[0] = key
        return {"x": x, "gold": list(gold), "top": list(top), "selected": [], "decided_by": "model", "cand": []}

    # P(right), P(no tool) per row: A called, B asked below 0.5, C asked only above 0.7, D's tool not in the top
    # three, N1-N4 nothing serves them; E decided by an invariant keeps its selection
    model = _StubModel({1: (0.8, 0.1), 2: (0.1, 0.4), 3: (0.1, 0.7), 4: (0.1, 0.2), 5: (0.0, 0.3), 6: (0.0, 0.8),
                        7: (0.0, 0.9), 8: (0.0, 0.95)})
    rows = [row(1, ("a",)), row(2, ("b",)), row(3, ("c",)), row(4, ("w",)), row(5, ()), row(6, ()), row(7, ()),
            row(8, ()), {"x": [], "gold": ["a"], "top": ["a"], "selected": ["a"], "decided_by": "named_tool"}]
    f = frontier(rows, model)
    # the top three reach A, B, C, E (4 of 5 served); the default point (0.5) reaches A, B, E
    assert f["own"] == pytest.approx(3 / 4)
    # 75% clean (N1 injected) allows a threshold up to 0.8: A, B, C, E; all clean needs 0.3 or less: A, E
    assert f["clean_70"] == pytest.approx(1.0)
    assert f["clean_80"] == f["clean_95"] == pytest.approx(1 / 2)


class _HistoryStub(_StubModel):
    """:class:`_StubModel` whose rows with the second feature set have earlier turns, called at P(right) >= 0.9."""

    def operating_point(self, target: float, *, history: bool = False) -> tuple[float, float]:
        return target, 0.9 if history else 0.5

    def reads_history(self, x: np.ndarray) -> bool:
        return bool(x[1] > 0)


def test_the_frontier_calls_a_request_with_earlier_turns_at_its_own_point() -> None:
    """bench.decision_frontier reads each row at the EXECUTE threshold serving reads it at: a request nothing
    serves called at the shared threshold (P(right) 0.6) keeps a tool whatever the P(no tool) threshold, so no
    clean share is reachable; at the history heads' own threshold (0.9) it is asked about, and kept clean below
    its P(no tool)."""
    from bench.decision_frontier import frontier
    from toolrag.decision.view import FEATURES

    def row(key: float, gold: tuple[str, ...], turns: bool) -> dict:
        x = [0.0] * len(FEATURES)
        x[0], x[1] = key, float(turns)
        return {"x": x, "gold": list(gold), "top": ["a", "b", "c"], "selected": [], "decided_by": "model",
                "cand": []}

    table = {1: (0.8, 0.1), 2: (0.6, 0.45)}
    rows = [row(1, ("a",), False), row(2, (), True)]
    shared = frontier(rows, _StubModel(table))
    assert math.isnan(shared.get("clean_95", math.nan))
    own = frontier(rows, _HistoryStub(table))
    assert own["clean_95"] == pytest.approx(1.0) and own["own"] == pytest.approx(1.0)


def _tiny_training(root: Path, *, same_tool: bool = False) -> None:
    """Four requests per training folder, in its own language (Chinese for the *_zh folders); ``same_tool``: eight,
    two per tool (request k and k + 4 of tool k)."""
    import json

    from bench.train_data import FOLDERS

    for n, folder in enumerate(FOLDERS):
        (root / folder).mkdir()
        lang = "zh" if folder.endswith("_zh") else "en"
        rows = [{"query": f"request {n}.{k} {f'word{k} ' if same_tool else ''}of {folder}", "gold": [f"t{k % 4}"],
                 "lang": lang} for k in range(8 if same_tool else 4)]
        (root / folder / "pairs.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")


def test_foreign_requests_drawn_afresh_in_the_request_language(tmp_path: Path) -> None:
    from bench.decision_episodes import GROUPS, SHIFT_GROUPS, Space, build_foreign

    _tiny_training(tmp_path)
    space = Space([f"t{k}" for k in range(4)], np.eye(4), None, np.zeros(4, dtype=bool))
    sources = ["hammerbench_zh", "apibank_lv3"]
    for same in (True, False):
        episodes = []
        for seed in range(30):
            episodes += build_foreign(tmp_path, dict.fromkeys(sources, space), sources=sources, seed=seed,
                                      same_language=same)
        assert 0.2 < len(episodes) / (30 * 8) < 0.5  # about a third of the labelled requests
        owners = [e.query.rsplit(" of ", 1)[1] for e in episodes]
        assert all(GROUPS[o] != GROUPS[e.source] and GROUPS[o] not in SHIFT_GROUPS
                   for o, e in zip(owners, episodes, strict=True))
        assert all(e.kind == "foreign" and e.expect == "NO_TOOL" and not e.gold and e.visible for e in episodes)
        chinese = [e.lang for e in episodes if e.source == "hammerbench_zh"]
        if same:  # a Chinese folder's foreign requests are Chinese (ACEBench's), an English one's English
            assert set(chinese) == {"zh"} and {e.lang for e in episodes if e.source == "apibank_lv3"} == {"en"}
        else:  # drawn from every other group: mostly English
            assert chinese.count("en") > chinese.count("zh")


def test_conversation_episodes(tmp_path: Path) -> None:
    from bench.decision_conversations import CONVERSATION_KINDS, FOLLOW_SHARE, MOVED_SHARE, build_conversations
    from bench.decision_episodes import GROUPS, SHIFT_GROUPS, Space

    _tiny_training(tmp_path, same_tool=True)
    space = Space([f"t{k}" for k in range(4)], np.eye(4), None, np.zeros(4, dtype=bool))
    sources = ["hammerbench_zh", "apibank_lv3"]
    asked = {"decisions_acebench_special_en": [{"request": "request 2.1 of apibank_lv3", "visible": ["t1"],
                                                "gold": ["t1"], "expect": "CLARIFY"}]}
    episodes = []
    for seed in range(40):
        episodes += build_conversations(tmp_path, dict.fromkeys(sources, space), asked, sources=sources, seed=seed)
    kinds = [e.kind for e in episodes]
    assert set(kinds) == CONVERSATION_KINDS
    assert MOVED_SHARE * 0.3 < (kinds.count("moved_on") + kinds.count("moved_gold")) / (40 * 16) < MOVED_SHARE * 1.3
    assert FOLLOW_SHARE * 0.6 < kinds.count("follow") / (40 * 16) < FOLLOW_SHARE * 1.4
    for e in episodes:
        (earlier,) = e.history
        folder, k = earlier.rsplit(" of ", 1)[1], int(earlier.split(".")[1].split()[0])
        assert folder == e.source and f"t{k % 4}" in set(e.visible) | set(e.gold)  # the earlier turn's own tool
        if e.kind == "moved_on":  # then a request of another group, in the earlier turn's language
            owner = e.query.rsplit(" of ", 1)[1]
            assert GROUPS[owner] != GROUPS[e.source] and GROUPS[owner] not in SHIFT_GROUPS
            assert e.expect == "NO_TOOL" and not e.gold and e.lang == ("zh" if folder == "hammerbench_zh" else "en")
        elif e.kind == "moved_gold":  # then another request of the folder, with its own tool
            assert e.expect == "EXECUTE" and set(e.gold) <= set(e.visible) and f"t{k % 4}" not in e.gold
            assert e.query.rsplit(" of ", 1)[1] == e.source and e.query != "request 2.1 of apibank_lv3"
        else:  # what another request of the same tool says beyond the earlier one, for that tool
            assert e.gold == (f"t{k % 4}",) and e.lang == ("zh" if folder == "hammerbench_zh" else "en")
            assert (e.expect, set(e.gold) <= set(e.visible)) in ({("EXECUTE", True)} if e.kind == "follow" else
                                                                {("NO_TOOL", False)})
            assert "request" not in e.query and " of " not in e.query  # only the words the earlier one lacks


def test_a_follow_up_says_what_the_earlier_request_did_not() -> None:
    import random

    from bench.decision_conversations import follow_up

    rng = random.Random(0)
    text = follow_up("weather forecast for Paris on Friday", "what's the weather in Shanghai tomorrow?", "en", rng)
    assert "Paris" in text and "Friday" in text and "weather" not in text and "for" not in text.split()
    text = follow_up("帮我查一下明天北京的天气", "今天上海天气怎么样", "zh", rng)
    assert "明天北京" in text and "天气" not in text and "帮我" not in text
    assert follow_up("the weather in Shanghai", "what's the weather in Shanghai?", "en", rng) == ""


def test_paired_differences_by_hand() -> None:
    from bench.decision_frontier import CLEAN_SHARES, Outcomes, paired_differences

    served = np.array([True] * 4 + [False] * 2)
    # two P(no tool) thresholds: nothing injected for both rows nothing serves, or for one of them
    empty = np.array([[0, 0], [0, 0], [0, 0], [0, 0], [1, 0], [1, 1]], dtype=float)
    first = Outcomes(served, np.ones(6, dtype=bool), np.array([[1, 1], [0, 1], [0, 1], [0, 1], [0, 0], [0, 0]],
                                                              dtype=float), empty, np.ones(6))
    better = Outcomes(served, np.ones(6, dtype=bool), np.array([[1, 1], [1, 1], [0, 1], [0, 1], [0, 0], [0, 0]],
                                                               dtype=float), empty, np.ones(6))
    assert first.read()["clean_70"] == pytest.approx(0.25) and better.read()["clean_70"] == pytest.approx(0.5)
    point, differences = paired_differences({"a": [first, first, better]}, draws=100)
    assert point[:, 0].tolist() == pytest.approx([0.25, 0.25, 0.5])
    same, more = differences
    assert all(d == 0 and e == 0 for d, e in same)  # the same model on the same rows: no spread
    assert len(more) == len(CLEAN_SHARES) and more[0][0] == pytest.approx(0.25) and more[0][1] > 0


@pytest.mark.parametrize("source", ["hammerbench", "glaive"])
def test_cross_language_episodes_in_pairs(tmp_path: Path, source: str) -> None:
    from bench.decision_episodes import CROSS_SIDES, Space, build_cross

    _tiny_training(tmp_path)
    sides = CROSS_SIDES[source]
    space = Space([f"t{k}" for k in range(4)], np.eye(4), None, np.zeros(4, dtype=bool))
    episodes = build_cross(tmp_path, dict.fromkeys(sides, space), seed=1, sides=sides)
    assert len(episodes) == 2 * 4 * len(sides)  # a served one and one nothing serves per request
    for served, none in zip(episodes[0::2], episodes[1::2], strict=True):
        assert served.query == none.query and served.source == none.source
        assert (served.kind, served.expect, none.kind, none.expect) == ("cross", "EXECUTE", "cross_sibling", "NO_TOOL")
        assert set(served.gold) <= set(served.visible) and not set(none.gold) & set(none.visible)
        # the request is in the other language than the catalog it is shown
        assert sides[served.source] in served.query and served.lang != ("zh" if served.source.endswith("_zh")
                                                                         else "en")


def test_cross_language_sources_are_checked() -> None:
    from bench.decision_train import cross_sources

    assert cross_sources("") == () and cross_sources("hammerbench, glaive") == ("hammerbench", "glaive")
    with pytest.raises(SystemExit, match="glaive_en is not a source with tools in both languages; choose among "
                                         "hammerbench, glaive"):
        cross_sources("glaive_en")


def test_features_left_out_for_a_trial() -> None:
    from bench.decision_fit import LEFT_OUT, used
    from bench.decision_train import left_out
    from toolrag.decision.view import FEATURES

    dropped = left_out("lang_match, cjk")
    assert dropped == ("lang_match", "cjk")
    assert len(used(dropped)) == len(used()) - 2 and FEATURES.index("lang_match") not in used(dropped)
    assert LEFT_OUT == ("sem_top", "en_top")  # a trial's list is passed down, never added to the module's
    with pytest.raises(SystemExit, match="langmatch is not a decision feature; choose among sem_null"):
        left_out("langmatch")


def _synthetic_episodes(group: str, rng: np.random.Generator, count: int = 80) -> list[dict[str, object]]:
    """Episodes of one group where the standing against the no-tool requests (``sem_null``) tells a request a
    listed tool serves from one nothing serves, and the top tool's z among the visible tools (``sem_z``) tells
    a right top tool from a wrong one; every other feature is absent (NaN)."""
    from toolrag.decision.view import FEATURES

    out: list[dict[str, object]] = []
    for i in range(count):
        x = np.full(len(FEATURES), np.nan)
        kind = ("gold", "gold", "gold", "foreign")[i % 4]
        right = kind == "gold" and i % 3 != 0
        x[FEATURES.index("sem_null")] = rng.normal(4.0 if kind == "gold" else 0.0, 0.7)
        x[FEATURES.index("sem_z")] = rng.normal(0.5 if kind == "gold" and not right else 3.0, 0.5)
        x[FEATURES.index("tools")] = 2.0
        out.append({"source": group, "group": group, "kind": kind, "expect": "EXECUTE" if kind == "gold" else
                    "NO_TOOL", "gold": ["t1"] if right else ["t9"] if kind == "gold" else [], "lang": "en", "n": 5,
                    "query": f"request {i}", "history": (), "top": ["t1", "t2", "t3"], "x": x, "cand": []})
    return out


def test_groups_never_fitted_on_are_scored_by_the_model_fitted_on_the_others() -> None:
    """``fit_and_report(shift=...)``: the shift group is decided by heads fitted on the other groups alone, and a
    trial's ``left_out`` features are not read (without the one that tells served from not, the model can no
    longer call the right tools without calling for requests nothing serves too)."""
    from bench.decision_fit import fit_and_report

    rng = np.random.default_rng(3)
    fitted = [e for g in ("a", "b", "c") for e in _synthetic_episodes(g, rng)]
    shift = _synthetic_episodes("s", rng)
    full = fit_and_report(fitted, families=["logistic"], export=False, shift=shift)
    assert full["groups"] == ["a", "b", "c"] and set(full["shift"]) == {"ece", "s"}
    scored = full["shift"]["s"]["all"]
    assert scored["n"] == len(shift)
    # served requests stand 4 spreads from those nothing serves: nearly all kept out; a third of the served ones
    # rank a wrong tool first, so at most two thirds can be called right, at about the 85% precision target
    assert scored["kept_out"] > 0.9 and scored["coverage"] > 0.5 and scored["precision"] > 0.6
    blind = fit_and_report(fitted, families=["logistic"], export=False, shift=shift, left_out=("sem_null",))
    assert blind["shift"]["s"]["all"]["coverage"] < scored["coverage"] - 0.3


def _conversations(group: str, rng: np.random.Generator, count: int = 80) -> list[dict[str, object]]:
    """Episodes with an earlier turn: the mixed vector stands out for the top tool either way (``sem_null`` high),
    the request's own text tells a follow-up (``sem_own`` high) from a request that moved on (low)."""
    from toolrag.decision.view import FEATURES

    out: list[dict[str, object]] = []
    for i in range(count):
        x = np.full(len(FEATURES), np.nan)
        kind = ("follow", "moved_on")[i % 2]
        x[FEATURES.index("sem_null")] = rng.normal(4.0, 0.7)
        x[FEATURES.index("sem_own")] = rng.normal(4.0 if kind == "follow" else 0.0, 0.7)
        x[FEATURES.index("sem_z")] = rng.normal(3.0, 0.5)
        x[FEATURES.index("tools")], x[FEATURES.index("history")] = 2.0, 1.0
        out.append({"source": group, "group": group, "kind": kind, "expect": "EXECUTE" if kind == "follow" else
                    "NO_TOOL", "gold": ["t1"] if kind == "follow" else [], "lang": "en", "n": 5,
                    "query": f"later {i}", "history": True, "top": ["t1", "t2", "t3"], "x": x, "cand": []})
    return out


def test_conversations_are_read_by_the_history_heads_alone() -> None:
    """With conversation episodes, a request with earlier turns is read by history heads that learn the request's
    own standing: held out, requests that moved on are kept clean and follow-ups served, where the text heads (which
    never read it) cannot tell them apart; and a request without earlier turns is decided exactly as without the
    conversations."""
    from bench.decision_fit import fit_and_report

    rng = np.random.default_rng(5)
    plain = [e for g in ("a", "b", "c") for e in _synthetic_episodes(g, rng)]
    talks = [e for g in ("a", "b", "c") for e in _conversations(g, rng)]
    shift = _synthetic_episodes("s", rng)
    both = fit_and_report(plain + talks, families=["trees"], export=False, shift=shift)
    held = both["conversations"]
    assert held["text heads"]["moved_on"]["clean"] < 0.2  # the mixed standing calls them all
    assert held["history heads"]["moved_on"]["clean"] > held["text heads"]["moved_on"]["clean"] + 0.4
    assert held["history heads"]["follow"]["reach"] > 0.9
    # the history heads' own EXECUTE point, read off their held-out episodes: what is injected stays, the calls
    # are at least as precise
    points = both["families"]["trees"]["history_points"]
    assert [t for t, _ in points["points"]] == [0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    own = held["history heads, their own EXECUTE point"]["all"]
    assert own["reach"] >= held["history heads"]["all"]["reach"] and own["clean"] == held["history heads"]["all"][
        "clean"]
    assert own["precision"] >= held["history heads"]["all"]["precision"]
    from bench.decision_tables import format_tables

    both.update({"date": "today", "machine": "here", "command": "python -m bench.decision_train"})
    assert "at the history heads' own EXECUTE point (the clean point shared; shipped)" in format_tables(both)
    alone = fit_and_report(plain, families=["trees"], export=False, shift=shift)
    assert "conversations" not in alone and alone["shift"]["s"] == both["shift"]["s"]
    # episodes searched again for the history heads alone (fresh) leave the text heads as they were either
    fresh = [{**e, "fresh": True, "x": np.where(np.isnan(e["x"]), np.nan, 0.0)} for e in plain[:60]]
    again = fit_and_report(plain + talks + fresh, families=["trees"], export=False, shift=shift)
    assert again["shift"]["s"] == alone["shift"]["s"]


def test_one_model_on_two_searches_of_the_same_rows_needs_the_same_rows(tmp_path: Path) -> None:
    """``bench.decision_frontier --searched-again``: one model read on the rows two revisions searched; other rows
    or several models are refused with what to give."""
    import json

    from bench.decision_frontier import main

    model = ROOT / "toolrag" / "decision" / "model.json"
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps({"rows": {"bundled": [{"query": "a"}, {"query": "b"}]}}), encoding="utf-8")
    after.write_text(json.dumps({"rows": {"bundled": [{"query": "b"}, {"query": "a"}]}}), encoding="utf-8")
    with pytest.raises(SystemExit, match="the rows of bundled are not those of .*before.json"):
        main([str(before), str(model), "--searched-again", str(after)])
    with pytest.raises(SystemExit, match="give one model file"):
        main([str(before), str(model), str(model), "--searched-again", str(after)])


def test_a_conversation_that_moved_on() -> None:
    """``bench.decision_sets.moved_on``: each text row after the request of the next served row of other tools and
    the same caller (wrapping); image rows and rows with their own history are left out; the labels stay the
    row's; a row no other row fits is left out."""
    from bench.decision_sets import moved_on
    from toolrag.evaluation.queries import QueryRow

    rows = [QueryRow("book a room", ("room.book",)), QueryRow("tell me a joke", ()),
            QueryRow("book it for two", ("room.book",)), QueryRow("pay the vendor", ("pay",), role="finance"),
            QueryRow("send an email", ("mail.send",)), QueryRow("scan this", ("ocr",), image=Path("a.png")),
            QueryRow("and now?", ("x",), history=("y",))]
    assert [(r.query, r.history, r.gold) for r in moved_on(rows)] == [
        ("book a room", ("send an email",), ("room.book",)),  # not the joke (no tool), not the other booking
        ("tell me a joke", ("book it for two",), ()),
        ("book it for two", ("send an email",), ("room.book",)),  # not the payment: another role
        ("send an email", ("book a room",), ("mail.send",)),  # wrapping round
    ]


def test_one_model_on_two_searches_of_the_same_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--searched-again`` reads the one model on each search of the rows and gives the second one's difference:
    here rows an invariant decided (their stored selection stands), one search injecting the right tool where the
    other injected nothing, both keeping the request nothing serves clean."""
    import json

    from bench.decision_frontier import main

    def rows(hit: bool) -> dict[str, object]:
        served = {"query": "a", "gold": ["t1"], "top": ["t1", "t2", "t3"], "selected": ["t1"] if hit else [],
                  "x": None, "decided_by": "named_tool"}
        none = {"query": "b", "gold": [], "top": ["t2"], "selected": [], "x": None, "decided_by": "named_tool"}
        return {"rows": {"bundled": [served, none]}}

    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(rows(False)), encoding="utf-8")
    after.write_text(json.dumps(rows(True)), encoding="utf-8")
    model = ROOT / "toolrag" / "decision" / "model.json"
    assert main([str(before), str(model), "--searched-again", str(after), "--draws", "20"]) == 0
    out = capsys.readouterr().out
    assert "| bundled | 0.0/0.0/0.0/0.0/0.0 | 100.0/100.0/100.0/100.0/100.0 |" in out
    assert f"rows of {after}: 70% +100.0 +- 0.0" in out


@pytest.mark.slow  # git in a child process
def test_the_reproduction_script_names_revisions_this_history_holds() -> None:
    """scripts/reproduce_decision_model.sh checks out the revisions that searched the shipped model's episodes: they
    must be in the repository's history (a rewrite of it would break the reproduction) and the script must parse."""
    import os
    import re
    import subprocess

    script = ROOT / "scripts" / "reproduce_decision_model.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    refused = subprocess.run(["bash", str(script), str(ROOT / "no-such-folder")], capture_output=True, text=True,
                             env={**os.environ, "TOOLRAG_BENCH_DIR": str(ROOT / "no-such-folder")}, timeout=60)
    assert refused.returncode == 2 and "no training sets at" in refused.stderr and "TOOLRAG_TRAINING" in \
        refused.stderr  # before anything is downloaded, checked out or written
    revisions = re.findall(r"^(?:TEXT|IMAGE)_REVISION=([0-9a-f]{7,40})", script.read_text(encoding="utf-8"), re.M)
    assert len(revisions) == 2
    shallow = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True, check=True).stdout.strip()
    if shallow == "true":
        pytest.skip("a shallow clone holds no earlier revision")
    for rev in revisions:
        subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}^{{commit}}"], check=True)


def test_a_text_episode_cache_named_on_the_command_line_is_found_or_refused(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str],
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.decision_train import _given_cache

    (tmp_path / "decision-episodes-abc.pkl").write_bytes(b"")
    monkeypatch.chdir(tmp_path.parent)
    # a bare name is looked up in the bench folder too (it was read relative to the working folder, missed, and
    # the episodes were searched afresh and written there: a fit on other episodes than the ones asked for)
    assert _given_cache(Path("decision-episodes-abc.pkl"), tmp_path) == tmp_path / "decision-episodes-abc.pkl"
    assert _given_cache(tmp_path / "decision-episodes-abc.pkl", Path("/nowhere")).is_file()
    with pytest.raises(SystemExit) as stopped:
        _given_cache(Path("decision-episodes-missing.pkl"), tmp_path)
    assert stopped.value.code == 2
    assert "--text-episodes decision-episodes-missing.pkl: no such file here or in" in capsys.readouterr().err
