"""The Evaluate tab's summary of the catalog's health and the lines its sections show before they have content
(pure views, no server, no models)."""

from __future__ import annotations

import re

from toolrag.evaluation.metrics import DECISION_ACCURACY
from toolrag.ui import evaluate_summary as health

CATALOG = health.CatalogFacts(tools=78, with_examples=70, labelled="queries.yaml", log=None, deprecated=1)


def figures(html: str) -> dict[str, str]:
    """figure name -> its text (tags stripped), from the summary's cards."""
    cards = re.findall(r'<a class="health-card" data-figure="([^"]+)" href="#([^"]+)"[^>]*>(.*?)</a>', html)
    for _, anchor, _ in cards:
        assert anchor in health.SECTIONS.values()  # every figure links to a section of the tab
    return {name: re.sub(r"<[^>]+>", " ", body) for name, _, body in cards}


def test_before_any_check_the_summary_says_what_fills_it() -> None:
    shown = figures(summary := health.health_summary(CATALOG, {}))
    assert "Run every check" in summary
    assert "78" in shown["tools"] and "70 with example requests" in shown["tools"] and "1 deprecated" in shown["tools"]
    assert "not checked yet" in shown["found"] and "8 tools without examples" in shown["estimate"]
    assert "queries.yaml: not evaluated yet" in shown["labelled"]
    assert "no audit log" in shown["unmatched"] and "TOOLRAG_AUDIT_LOG" in shown["unmatched"]
    bare = figures(health.health_summary(health.CatalogFacts(tools=31, with_examples=0), {}))
    assert "found" not in bare and "not estimated yet" in bare["estimate"]  # nothing to find by examples
    assert "upload a file or add queries.yaml" in bare["labelled"]


def test_the_summary_shows_each_checks_figures_and_the_tools_at_risk() -> None:
    facts = {"retrievability": {"found_first": 0.686, "found_top5": 0.937, "n_examples": 303,
                                "at_risk": ["travel.flight.book"], "scope": None},
             "estimate": {"found_first": 0.5, "found_top5": None, "n_tools": 8, "at_risk": ["a", "b"]},
             "labelled": {"recall@5": 0.9412, DECISION_ACCURACY: 0.8386, "n": 223, "name": "queries.yaml",
                          "failing": 55},
             "unmatched": {"distinct": 4, "listed": 6, "searches": 9, "log": "audit.jsonl"}}
    shown = figures(summary := health.health_summary(CATALOG, facts))
    assert "Run every check" not in summary  # the figures are there now
    assert "68.6% · 93.7%" in shown["found"] and "303 example requests" in shown["found"]
    assert "50.0% · n/a" in shown["estimate"] and "8 tools" in shown["estimate"]
    assert shown["at-risk"].split()[0] == "3" and "a, b, travel.flight.book" in shown["at-risk"]
    assert "94.1% · 83.9%" in shown["labelled"] and "223 labelled requests (queries.yaml), 55 failing" in \
        shown["labelled"]
    assert shown["unmatched"].split()[0] == "4" and "in audit.jsonl (6 of 9 searches)" in shown["unmatched"]
    one = figures(health.health_summary(CATALOG, {"retrievability": {**facts["retrievability"], "scope": "travel"}}))
    assert "(category travel)" in one["found"]


def test_the_lines_a_section_shows_before_it_has_content() -> None:
    assert "Run evaluation" in health.labelled_placeholder("queries.yaml")
    assert "upload a file" in health.labelled_placeholder(None)
    assert "reads `audit.jsonl`" in health.unmatched_placeholder("audit.jsonl")
    assert "TOOLRAG_AUDIT_LOG" in health.unmatched_placeholder(None)
    assert "8 of 78 tools have no example request" in health.estimate_placeholder(CATALOG)
    assert "Every tool has example requests" in health.estimate_placeholder(health.CatalogFacts(5, 5))
