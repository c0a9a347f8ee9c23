"""Links to one search (URL query parameters) and the Evaluate tab's views: pure functions, no server."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from toolrag.evaluation.evaluator import EvalReport, QueryOutcome
from toolrag.evaluation.queries import QueryRow
from toolrag.search.results import Decision
from toolrag.settings import Normalization, Settings
from toolrag.ui import evaluate_format as views
from toolrag.ui import format as fmt
from toolrag.ui.deeplink import LINK_CONTROLS, link_query, parse_link
from toolrag.ui.format import GUEST

ROLES = [GUEST, "employee", "admin"]
CATEGORIES = ["finance", "travel"]


def test_parse_link_sets_only_the_given_controls_and_names_bad_values() -> None:
    link = parse_link({"q": ["帮我报销这张餐饮发票"], "role": ["employee"], "category": ["finance,travel", "nope"],
                       "top_k": ["3"], "fusion": ["RRF"], "rerank": ["1"], "w_bm25": ["0.7"], "w_dense": ["2"],
                       "normalization": ["zz"], "utm_source": ["x"]}, roles=ROLES, categories=CATEGORIES)
    assert link.values == {"query": "帮我报销这张餐饮发票", "role": "employee", "categories": ["finance", "travel"],
                           "top_k": 3, "fusion": "rrf", "rerank": True, "w_bm25": 0.7}
    assert link.warnings == ("category='nope' is not a category of this catalog",
                             "normalization='zz': choose one of " + ", ".join(n.value for n in Normalization),
                             "w_dense='2' is outside [0, 1]")
    assert set(link.values) <= set(LINK_CONTROLS)
    guest = parse_link({"query": "hello", "role": "guest", "top_k": "x"}, roles=ROLES, categories=CATEGORIES)
    assert guest.values == {"query": "hello", "role": GUEST} and guest.warnings == ("top_k='x' is not a number",)
    assert parse_link({"role": ["boss"]}, roles=ROLES, categories=CATEGORIES).warnings[0].startswith("role='boss'")


def test_a_link_sets_the_clean_target_within_the_sliders_range() -> None:
    for text, value in (("60", 60.0), ("95", 95.0), ("85", 85.0)):
        link = parse_link({"clean_target": [text]}, roles=ROLES, categories=CATEGORIES)
        assert link.values == {"clean_target": value} and not link.warnings
    for text, warning in (("55", "clean_target='55' is outside [60, 95]"), ("0.9", "clean_target='0.9' is outside "
                          "[60, 95]"), ("most", "clean_target='most' is not a number")):
        link = parse_link({"q": ["x"], "clean_target": [text]}, roles=ROLES, categories=CATEGORIES)
        assert link.values == {"query": "x"} and link.warnings == (warning,)  # left out, named; the rest applies


def test_link_query_round_trips_through_parse_link() -> None:
    base = Settings()
    changed = base.with_overrides(top_k=3, fusion="rrf", weights={**base.weights, "bm25": 0.9},
                                  precision_target=0.9 if fmt.precision_target(base) != 0.9 else 0.8,
                                  clean_target=0.6 if fmt.clean_target(base) != 0.6 else 0.95)
    query = link_query(query="book a room, 3pm & coffee", role="employee", categories=["travel"], settings=changed,
                       base=base)
    params = parse_qs(urlparse(query).query)
    assert params["q"] == ["book a room, 3pm & coffee"] and params["w_bm25"] == ["0.9"]
    assert "w_dense" not in params and "normalization" not in params  # only what differs from the defaults
    link = parse_link(params, roles=ROLES, categories=CATEGORIES)
    assert not link.warnings
    assert link.values == {"query": "book a room, 3pm & coffee", "role": "employee", "categories": ["travel"],
                           "top_k": 3, "fusion": "rrf", "precision_target": 100 * changed.precision_target,
                           "clean_target": 100 * changed.clean_target, "w_bm25": 0.9}
    assert parse_qs(urlparse(link_query(query="x", role=GUEST, categories=None, settings=base, base=base)).query) == {
        "q": ["x"], "role": ["guest"]}


def test_failing_table_records_what_a_click_opens() -> None:
    rows = [QueryOutcome(QueryRow("a", ("t1",), expect=Decision.EXECUTE), ("t2", "t1"), Decision.CLARIFY),
            QueryOutcome(QueryRow("b", ("t1",)), ("t1",), Decision.EXECUTE),
            QueryOutcome(QueryRow("joke", (), expect=Decision.NO_TOOL), ("t3",), Decision.EXECUTE)]
    frame, records = views.failing_table(EvalReport({}, 3, rows))
    assert frame.values.tolist() == [["a", "t1", "t2, t1", "#2", "CLARIFY (expected EXECUTE)", views.WHY],
                                     ["joke", "(no tool)", "t3", "–", "EXECUTE (expected NO_TOOL)", views.WHY]]
    assert [r["open"] for r in records] == ["t1", "t3"]  # the expected tool; else the tool that wrongly came


def test_metric_cards_show_values_and_changes() -> None:
    html = views.metric_cards({"recall@1": 0.5, "recall@5": 0.9}, {"recall@1": 0.25, "recall@5": 0.9})
    assert 'data-metric="recall@1"' in html and "50.0%" in html and "+25.0" in html
    assert "+0.0" in html and html.count('class="metric-card"') == 6  # every card, missing ones as n/a
    assert views.metric_cards({}).count("n/a") == 6
