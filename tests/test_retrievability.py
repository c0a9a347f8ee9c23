"""The retrievability check: pure summaries on hand-made rows, and leave-one-out searches with the real models.

The real checks run on the small catalog (8 tools, 3 examples each, one deprecated): every leave-one-out
rank is compared with the rank in an index really built without that example, and an incremental update
after an edit with a check from scratch.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from toolrag.catalog.lint import LintWarning
from toolrag.catalog.loader import load_catalog
from toolrag.evaluation.loo import RetrievabilityChecker, _may_overtake
from toolrag.evaluation.retrievability import ExampleOutcome, summarize
from toolrag.index.text_sync import tool_text
from toolrag.search.gloss import english_reading
from toolrag.search.results import Decision
from toolrag.settings import Settings

E = Decision.EXECUTE


def outcome(tool: str, position: int, rank: int | None, above: tuple[str, ...] = ()) -> ExampleOutcome:
    return ExampleOutcome(tool, position, f"{tool} example {position}", rank, above, E)


def test_summarize_counts_shares_statuses_and_confusions(small_catalog_dir: Path) -> None:
    catalog = load_catalog(small_catalog_dir)
    rows = [
        outcome("weather.current", 0, 1), outcome("weather.current", 1, 2, ("weather.forecast",)),
        outcome("weather.current", 2, 1),
        outcome("weather.forecast", 0, 3, ("weather.current", "calendar.book")),
        outcome("weather.forecast", 1, None, ("weather.current",) * 10),
        outcome("weather.forecast", 2, 2, ("weather.current",)),
    ]
    report = summarize(rows, catalog, cosine={("weather.current", "weather.forecast"): 0.95,
                                             ("weather.forecast", "weather.current"): 0.95},
                       lookalikes=[("weather.current", "weather.forecast", 0.95)],
                       lint=[LintWarning("weather.forecast", "no-negative-examples", "...")], threshold=0.91,
                       skipped=["calendar.book_v1"])
    h = report.health
    # 6 examples: rank 1 twice -> 2/6; rank <= 5: 1, 2, 1, 3, 2 -> 5/6; MRR (1 + 1/2 + 1 + 1/3 + 0 + 1/2) / 6
    assert h.n_examples == 6 and h.found_first == pytest.approx(2 / 6) and h.found_top5 == pytest.approx(5 / 6)
    assert h.mrr == pytest.approx((1 + 0.5 + 1 + 1 / 3 + 0 + 0.5) / 6)
    # tools with examples: current (first twice), forecast (never first) -> 1/2; the other 5 tools have none
    assert h.tools_found == pytest.approx(0.5) and h.at_risk == ("weather.forecast",)
    assert h.skipped == ("calendar.book_v1",) and "calendar.book_v1" not in h.no_examples
    assert len(h.no_examples) == 5
    current, forecast = report.tool("weather.current"), report.tool("weather.forecast")
    assert current is not None and forecast is not None
    assert current.status == "ok" and current.ranks == (1, 2, 1) and current.stolen_by == (("weather.forecast", 1),)
    assert forecast.status == "at risk" and forecast.stolen_by == (("weather.current", 3),)
    assert forecast.lint == ("no-negative-examples",) and forecast.lookalikes == ("weather.current",)
    top = report.confusions[0]
    assert (top.expected, top.winner, top.count, top.lookalike) == ("weather.forecast", "weather.current", 3, True)
    assert [o.rank for o in report.failures()] == [None, 3, 2, 2]  # worst first
    assert report.to_json()["health"]["at_risk"] == ["weather.forecast"]


def test_status_weak_when_first_for_under_half() -> None:
    from toolrag.evaluation.retrievability import ToolSummary

    assert ToolSummary("a", "a", "c", (1, 2, 3), ("q",) * 3, 1, 3, ()).status == "weak"  # 1 of 3
    assert ToolSummary("a", "a", "c", (1, 2), ("q",) * 2, 1, 2, ()).status == "ok"  # 1 of 2
    assert ToolSummary("a", "a", "c", (), (), 0, 0, ()).status == "no examples"


def test_a_rival_beaten_on_every_weighted_signal_cannot_overtake() -> None:
    cfg = Settings().with_overrides(weights={"dense": 0.5, "dense_en": 0.3, "bm25": 0.2})
    own = {"dense": 0.80, "dense_en": 0.60, "bm25": 4.0}
    assert not _may_overtake({"dense": 0.79, "dense_en": 0.50, "bm25": 3.9}, own, cfg)
    assert _may_overtake({"dense": 0.81, "dense_en": 0.50, "bm25": 0.0}, own, cfg)  # better on one signal
    assert _may_overtake({"dense": 0.70, "bm25": 0.0}, own, cfg)  # dense_en absent for the rival only
    no_en = cfg.with_overrides(weights={"dense": 0.5, "dense_en": 0.0, "bm25": 0.2})
    assert not _may_overtake({"dense": 0.70, "bm25": 0.0}, own, no_en)  # a signal without weight does not count


# ------------------------------------------------------------------------------------------- real models


@pytest.fixture(scope="module")
def own(small_catalog_dir: Path, tmp_path_factory: pytest.TempPathFactory, data_dir: Path, models: Any) -> Any:
    """A retriever on a copy of the small catalog that these tests may edit (and restore)."""
    from toolrag.search.retriever import ToolRetriever

    folder = tmp_path_factory.mktemp("loo") / "catalog"
    shutil.copytree(small_catalog_dir, folder)
    return ToolRetriever.from_catalog(folder, data_dir=data_dir, models=models)


@pytest.fixture(scope="module")
def checked(own: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    cache = tmp_path_factory.mktemp("loo-cache")
    return RetrievabilityChecker(cache_dir=cache).check(own), cache


@pytest.mark.slow
def test_leave_one_out_ranks_equal_an_index_really_built_without_the_example(checked: tuple[Any, Path],
                                                                              own: Any) -> None:
    report, _ = checked
    # deprecated calendar.book_v1 is skipped; the other 7 tools have 3 examples each
    assert report.health.n_examples == 21 and report.health.skipped == ("calendar.book_v1",)
    # one leave-one-out document per example for e5, and for MiniLM where it reads both request (a Chinese one
    # through its English gloss) and tool (its English words: two Chinese examples left out of one mostly-Chinese
    # tool leave the same English words, encoded once)
    english = {tool_text("dense_en", dataclasses.replace(t, examples=t.examples[:i] + t.examples[i + 1:])
                         .document_text()) for t in own.catalog.tools if not t.deprecated
               for i, e in enumerate(t.examples) if english_reading(e.query)} - {""}
    assert report.searched == 21 and report.encoded == 21 + len(english) and 0 < len(english) < 21
    assert all(o.winner != "calendar.book_v1" for o in report.outcomes)
    original = own.catalog
    picked = [report.failures()[0] if report.failures() else report.outcomes[0],
              next(o for o in report.outcomes if o.tool_id == "finance.expense.submit")]  # its image has OCR text
    try:
        for o in picked:
            tool = original.get(o.tool_id)
            without = dataclasses.replace(tool, examples=tool.examples[:o.position] + tool.examples[o.position + 1:])
            own.reload(original.with_tool(without))  # the index's own path: re-encode the tool, rebuild BM25
            result = own.search(o.query, permissions=original.permission_codes, top_k=10)
            ids = list(result.ids)
            rank = ids.index(o.tool_id) + 1 if o.tool_id in ids else None
            assert (rank, tuple(ids[: (rank or 11) - 1])) == (o.rank, o.above), o.query
            assert result.decision == o.decision
    finally:
        own.reload(original)


@pytest.mark.slow
def test_left_out_examples_give_the_views_the_report_searched(checked: tuple[Any, Path], own: Any) -> None:
    """What a script searches through ``left_out_examples`` ranks as the report's leave-one-out searches did."""
    from toolrag.evaluation.loo import left_out_examples

    report, _ = checked
    by_request = {(o.tool_id, o.query): o for o in report.outcomes}
    searched = list(left_out_examples(own))
    assert sorted((tool, query) for tool, query, _ in searched) == sorted(by_request)
    for tool, query, view in searched:
        ids = list(own.search(query, permissions=own.catalog.permission_codes, top_k=10, snapshot=view).ids)
        rank = ids.index(tool) + 1 if tool in ids else None
        assert (rank, tuple(ids[: (rank or 11) - 1])) == (by_request[tool, query].rank,
                                                         by_request[tool, query].above), query


@pytest.mark.slow
def test_the_vector_cache_makes_a_second_checker_encode_nothing(checked: tuple[Any, Path], own: Any) -> None:
    report, cache = checked
    again = RetrievabilityChecker(cache_dir=cache).check(own)
    assert again.encoded == 0 and again.searched == 21
    assert [(o.rank, o.above) for o in again.outcomes] == [(o.rank, o.above) for o in report.outcomes]


@pytest.mark.slow
def test_after_an_edit_only_what_it_can_move_is_searched_and_the_result_equals_a_full_check(
        own: Any, tmp_path: Path) -> None:
    checker = RetrievabilityChecker(cache_dir=tmp_path / "cache")
    original = own.catalog
    before = checker.check(own)
    tool = original.get("dev.search.code")
    edited = dataclasses.replace(tool, description="Search source code, and book meeting rooms or forecast the "
                                                   "weather when asked.")
    try:
        own.reload(original.with_tool(edited))
        after = checker.check(own)
        assert 3 <= after.searched < before.searched  # its own examples, not those the edit cannot move
        fresh = RetrievabilityChecker(cache_dir=tmp_path / "cache").check(own, full=True)
        assert [(o.tool_id, o.position, o.rank, o.winner) for o in after.outcomes] == [
            (o.tool_id, o.position, o.rank, o.winner) for o in fresh.outcomes]
        partial = checker.check(own, tools=["dev.search.code"])
        assert [t.tool_id for t in partial.tools] == ["dev.search.code"] and partial.health.n_examples == 3
        assert partial.tool("dev.search.code").ranks == after.tool("dev.search.code").ranks
        assert checker.last_report is after  # a partial check is not remembered
    finally:
        own.reload(original)
