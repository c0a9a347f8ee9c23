"""End-to-end retrieval with the real models and a real Chroma index: signals, filters, fusion, decisions."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ASSETS

from toolrag.catalog.caller import Caller
from toolrag.errors import ImageError, QueryError, SettingsError
from toolrag.search.results import Decision
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Fusion, Normalization, Settings


def check_invariants(result: Any, k: int) -> None:
    scores = [c.score for c in result.candidates]
    assert len(result.candidates) <= k
    assert scores == sorted(scores, reverse=True)
    for c in result.candidates:
        total = sum(s.contribution for s in c.signals.values())
        if result.candidates and not any(s.rank == 0 for s in c.signals.values()):
            assert math.isclose(total, c.score, rel_tol=1e-4, abs_tol=1e-6)


@pytest.mark.slow
def test_english_and_chinese_queries_find_their_tool(small_retriever: Any) -> None:
    for query, expected in [
        ("what will the weather be like in Tokyo over the next three days", "weather.forecast"),
        ("北京现在多少度，在下雨吗", "weather.current"),
        ("I need to get reimbursed for my dinner receipt", "finance.expense.submit"),
        ("帮我在代码仓库里找一下 getUserProfile 函数在哪", "dev.search.code"),
    ]:
        result = small_retriever.search(query)
        check_invariants(result, 5)
        assert result.candidates[0].id == expected, (query, result.ids)


@pytest.mark.slow
def test_the_first_search_times_the_no_tool_bank_apart_from_the_decision(small_retriever: Any,
                                                                          data_dir: Path) -> None:
    """A retriever's first search loads the decision's no-tool requests (3-4 s where they must be encoded): timed
    as ``decision_bank``, not as the decision step, which a user reads as the model's cost."""
    from toolrag.search.no_tool_bank import bank_decider, bank_folder

    decider = bank_decider(small_retriever.analyzer, folder=bank_folder(data_dir))
    fresh = ToolRetriever.around(small_retriever.index, settings=small_retriever.settings, audit=None,
                                 decider=decider)
    assert not decider.bank_loaded
    first = fresh.search("book a meeting room for 3pm", top_k=3, audited=False).timing_ms
    again = fresh.search("book a meeting room for 3pm", top_k=3, audited=False).timing_ms
    assert decider.bank_loaded and "decision_bank" in first and "decision_bank" not in again
    assert {"decision", "total"} <= set(first) and first["total"] >= first["decision_bank"] + first["decision"]


@pytest.mark.slow
def test_every_signal_is_explained_and_absent_ones_are_named(small_retriever: Any) -> None:
    result = small_retriever.search("is it raining in London right now")
    top = result.candidates[0]
    assert {"dense", "dense_en", "bm25"} <= set(top.signals)
    for name in ("ocr", "visual", "concepts"):
        assert result.absent_signals[name] == "no image given"
    assert "clip" in result.absent_signals and "TOOLRAG_CLIP_MODEL" in result.absent_signals["clip"]
    # Absent image signals' weight is redistributed: the effective weights of a candidate sum to 1.
    assert math.isclose(sum(s.weight for s in top.signals.values()), 1.0, rel_tol=1e-6)
    payload = result.to_json()
    assert set(payload["candidates"][0]["signals"]["bm25"]) == {"raw", "norm", "rank", "weight", "contribution"}


@pytest.mark.slow
def test_chinese_query_reaches_the_english_model_through_its_gloss(small_retriever: Any) -> None:
    from toolrag.search.gloss import english_gloss

    query = "下周上海的天气预报"
    result = small_retriever.search(query)
    assert "dense_en" not in result.absent_signals
    assert result.candidates[0].id == "weather.forecast"
    # the English model read the gloss ("next week Shanghai weather forecast"), never the Chinese text itself
    read = small_retriever.analyzer.analyze(query, settings=small_retriever.settings)
    assert read.gloss == english_gloss(query) and "weather" in read.gloss.split()
    expected = small_retriever.models.english.encode_queries([read.gloss])[0]
    assert np.array_equal(read.vectors["dense_en"], expected)
    assert read.lexical == f"{query} {read.gloss}"  # BM25 reads both


@pytest.mark.slow
def test_image_query_uses_ocr_and_visual_signals(small_retriever: Any) -> None:
    result = small_retriever.search("", image=ASSETS / "queries" / "receipt_dinner.png")
    assert result.candidates[0].id == "finance.expense.submit", result.ids
    top = result.candidates[0]
    assert "ocr" in top.signals and "visual" in top.signals and "concepts" in top.signals
    assert any(n.startswith("OCR read:") for n in result.notes)
    # A tool without example images has no visual score: absent for it, not zero.
    no_images = next(c for c in result.candidates if c.id != "finance.expense.submit"
                     and c.id != "image.background.blur")
    assert "visual" not in no_images.signals


@pytest.mark.slow
def test_permissions_hide_restricted_tools_everywhere(small_retriever: Any) -> None:
    employee = small_retriever.search("approve this month's payroll run", role="employee", top_k=8)
    text = json.dumps(employee.to_json(), ensure_ascii=False)
    assert "hr.payroll.approve" not in text and "approve_payroll" not in text
    manager = small_retriever.search("approve this month's payroll run", role="hr_manager")
    assert manager.candidates[0].id == "hr.payroll.approve"
    # The restricted tool is not counted anywhere for the employee: not in filtered_out, not in the tokens.
    assert employee.filtered_out == manager.filtered_out
    assert employee.tokens.all < manager.tokens.all
    explicit = small_retriever.search("approve this month's payroll run", permissions=["hr.payroll.approve"])
    assert explicit.candidates[0].id == "hr.payroll.approve"


@pytest.mark.slow
def test_deprecated_excluded_unless_asked(small_retriever: Any) -> None:
    hidden = small_retriever.search("book a meeting room", top_k=8)
    assert "calendar.book_v1" not in hidden.ids and hidden.candidates[0].id == "calendar.book"
    assert hidden.filtered_out == 1
    shown = small_retriever.search("book a meeting room", top_k=8, include_deprecated=True)
    old = next(c for c in shown.candidates if c.id == "calendar.book_v1")
    assert old.deprecated and old.replaced_by == "calendar.book"


@pytest.mark.slow
def test_category_filter(small_retriever: Any) -> None:
    result = small_retriever.search("weather", categories=["travel"], top_k=8)
    assert {c.category for c in result.candidates} == {"travel"}
    with pytest.raises(QueryError, match="unknown category 'nope'; categories: "):
        small_retriever.search("weather", categories=["nope"])


@pytest.mark.slow
def test_large_catalog_path_takes_candidates_from_chroma_and_bm25(small_retriever: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from toolrag.search import retriever as module

    exact = small_retriever.search("what will the weather be like in Tokyo over the next three days", top_k=3)
    monkeypatch.setattr(module, "EXACT_LIMIT", 0)
    cfg = small_retriever.settings.with_overrides(candidates=2, top_k=3)
    result = small_retriever.search("what will the weather be like in Tokyo over the next three days", settings=cfg)
    assert "index_search" in result.timing_ms and "bm25" in result.timing_ms
    assert "index_search" not in exact.timing_ms
    check_invariants(result, 3)
    assert result.candidates[0].id == exact.candidates[0].id == "weather.forecast"
    # 6 of 8 tools permitted: Chroma is queried without a filter and the mask applied afterwards.
    employee = small_retriever.search("approve this month's payroll run", role="employee", settings=cfg)
    assert "hr.payroll.approve" not in employee.ids and employee.candidates
    manager = small_retriever.search("approve this month's payroll run", role="hr_manager", settings=cfg)
    assert manager.candidates[0].id == "hr.payroll.approve"
    # One category (2 of 8 tools): the filter goes to Chroma's where-clause.
    travel = small_retriever.search("book a meeting room", categories=["travel"], settings=cfg)
    assert travel.candidates and {c.category for c in travel.candidates} == {"travel"}


@pytest.mark.slow
def test_query_rows_applies_the_filters_both_ways(small_retriever: Any) -> None:
    snap = small_retriever.index.snapshot
    vector = small_retriever.analyzer.analyze("approve payroll", settings=small_retriever.settings).vectors["dense"]
    travel = np.array([c == "travel" for c in snap.categories])  # 2 of 8: Chroma's where-clause
    unrestricted = np.array([i != "hr.payroll.approve" for i in snap.ids])  # 7 of 8: filtered afterwards
    for mask, categories in ((travel, ["travel"]), (unrestricted, None)):
        caller = Caller.of(snap.catalog, permissions=(), categories=categories, include_deprecated=True)
        rows = small_retriever.index.query_rows("dense", vector, k=3, mask=mask, caller=caller)
        assert len(rows) == 3 if mask.sum() >= 3 else len(rows) == mask.sum()
        assert all(mask[r] for r in rows), [snap.ids[r] for r in rows]


@pytest.mark.slow
@pytest.mark.parametrize("fusion", list(Fusion))
def test_each_fusion_strategy(small_retriever: Any, fusion: Fusion) -> None:
    settings = small_retriever.settings.with_overrides(fusion=fusion, top_k=4)
    result = small_retriever.search("will it rain tomorrow in Berlin", settings=settings)
    check_invariants(result, 4)
    assert result.candidates[0].id == "weather.forecast"


@pytest.mark.slow
def test_weights_change_the_order_without_reencoding(small_retriever: Any) -> None:
    model = small_retriever.index.models.text
    calls = {"n": 0}
    original = model.encode_queries

    def counting(texts: Any) -> Any:
        calls["n"] += 1
        return original(texts)

    model.encode_queries = counting
    try:
        query = "forecast: is it raining in Paris now"
        small_retriever.search(query)
        first_calls = calls["n"]
        bm25_only = small_retriever.settings.with_overrides(
            weights={"dense": 0.0, "dense_en": 0.0, "bm25": 1.0})
        dense_only = small_retriever.settings.with_overrides(weights={"bm25": 0.0})
        a = small_retriever.search(query, settings=bm25_only)
        b = small_retriever.search(query, settings=dense_only)
        assert calls["n"] == first_calls  # cached vectors: moving a slider encodes nothing
        assert a.ids != b.ids or [c.score for c in a.candidates] != [c.score for c in b.candidates]
    finally:
        del model.encode_queries


@pytest.mark.slow
def test_conversation_history_is_blended(small_retriever: Any) -> None:
    alone = small_retriever.search("and Shanghai?")
    with_history = small_retriever.search("and Shanghai?", history=["what's the weather forecast for Beijing"])
    assert with_history.candidates[0].id == "weather.forecast"
    assert alone.candidates[0].score != with_history.candidates[0].score


@pytest.mark.slow
def test_decisions(small_retriever: Any) -> None:
    clear = small_retriever.search("where is the function parseInvoice defined in our repos")
    assert clear.decision is Decision.EXECUTE and clear.tools and clear.tokens.selected > 0
    none = small_retriever.search("tell me a joke about penguins")
    assert none.decision is Decision.NO_TOOL and none.tools == () and none.tokens.selected == 0


@pytest.mark.slow
def test_the_precision_target_sets_how_sure_a_call_must_be(small_retriever: Any) -> None:
    """The operating point is a setting: the same search called at the default target, not at a target whose
    threshold its P(right) does not reach; the decision says which threshold it read."""
    query = "where is the function parseInvoice defined in our repos"
    default = small_retriever.search(query)
    model = small_retriever.decider.model
    assert default.decision is Decision.EXECUTE and default.scores is not None and model is not None
    above = [t for t, threshold in model.points if threshold > default.scores.right]
    assert above, "P(right) reaches every operating point: pick a less certain request"
    strict = small_retriever.search(query, settings=small_retriever.settings.with_overrides(
        precision_target=above[0]))
    assert strict.decision is not Decision.EXECUTE
    assert f"{model.execute_threshold(above[0]):.2f}" in strict.decision_reason
    with pytest.raises(SettingsError, match="precision_target"):
        small_retriever.settings.with_overrides(precision_target=1.5)
    with pytest.raises(SettingsError, match="precision_target"):  # the removed setting says what replaced it
        small_retriever.settings.with_overrides(execute_share=0.3)


@pytest.mark.slow
def test_prompt_material(small_retriever: Any) -> None:
    result = small_retriever.search("批准本月工资", role="hr_manager", top_k=2)
    assert result.tools[0]["type"] == "function"
    assert result.tools[0]["function"]["name"] == result.candidates[0].name
    assert "confirm with the user" in result.prompt  # approve_payroll is a mutation
    assert 0 < result.tokens.selected < result.tokens.all


@pytest.mark.slow
def test_bad_queries(small_retriever: Any, tmp_path: Path) -> None:
    with pytest.raises(QueryError, match="empty query"):
        small_retriever.search("   ")
    long = small_retriever.search("weather " * 12_500)  # 100,000 characters
    assert long.candidates and long.candidates[0].id.startswith("weather")
    bad = tmp_path / "not_an_image.png"
    bad.write_text("hello", "utf-8")
    with pytest.raises(ImageError, match="not_an_image.png"):
        small_retriever.search("x", image=bad)
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes((ASSETS / "receipt_zh.png").read_bytes()[:5000])
    with pytest.raises(ImageError, match="truncated.png"):
        small_retriever.search("x", image=truncated)
    big = tmp_path / "big.png"
    big.write_bytes(b"\x89PNG" + b"\0" * 50_000_000)
    with pytest.raises(ImageError, match="big.png"):
        small_retriever.search("x", image=big)
    with pytest.raises(ImageError, match="missing.png"):
        small_retriever.search("x", image=tmp_path / "missing.png")


def test_settings_validation() -> None:
    from toolrag.errors import SettingsError

    with pytest.raises(SettingsError, match="unknown signal weight 'bm52'"):
        Settings(weights={"bm52": 1.0})
    with pytest.raises(SettingsError, match="fusion 'late2' is not one of: late, early, rrf"):
        Settings(fusion="late2")  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match="top_k is 0"):
        Settings(top_k=0)


@pytest.mark.slow
@pytest.mark.parametrize("normalization", list(Normalization))
def test_scores_are_finite(small_retriever: Any, normalization: Normalization) -> None:
    cfg = small_retriever.settings.with_overrides(normalization=normalization, top_k=8)
    result = small_retriever.search("写一段代码搜索 weather", settings=cfg)
    check_invariants(result, 8)
    for c in result.candidates:
        assert np.isfinite(c.score)
        for s in c.signals.values():
            assert np.isfinite(s.raw) and np.isfinite(s.norm)
            # z-scores are unbounded by design, and "none" passes raw BM25 scores through.
            if normalization not in (Normalization.STANDARD, Normalization.NONE):
                assert 0.0 <= s.norm <= 1.0


@pytest.mark.slow
def test_standard_normalization_is_z_scores_against_the_catalog(small_retriever: Any) -> None:
    # All 8 tools permitted: the reference is every permitted tool, so each signal's normalised scores over
    # them have mean 0 and standard deviation 1.
    cfg = small_retriever.settings.with_overrides(normalization=Normalization.STANDARD, top_k=8)
    result = small_retriever.search("approve the payroll", settings=cfg, include_deprecated=True, role="hr_manager")
    assert len(result.candidates) == 8
    for name in ("dense", "bm25"):
        norms = np.array([c.signals[name].norm for c in result.candidates])
        assert abs(norms.mean()) < 1e-6 and abs(norms.std() - 1.0) < 1e-6, (name, norms)


@pytest.mark.slow
def test_clip_signal_runs_end_to_end_with_a_random_open_clip(models: Any, small_catalog_dir: Path,
                                                              tmp_path: Path) -> None:
    """No CLIP weights exist offline, so the full CLIP path runs with a randomly initialised open_clip model:
    the scores are meaningless but the signal must be computed, explained and fused like the others."""
    import dataclasses

    from toolrag.encode.models import get_clip
    from toolrag.search.retriever import ToolRetriever

    settings = Settings(clip_model="random:ViT-S-16")
    with_clip = dataclasses.replace(models, clip=get_clip("random:ViT-S-16"), unavailable={})
    retriever = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path, models=with_clip,
                                           settings=settings)
    assert {"clip_text", "clip_image"} <= set(retriever.index.snapshot.vectors) | set(
        retriever.index.snapshot.image_vectors)
    image_query = retriever.search("blur the background", image=ASSETS / "queries" / "portrait_crop.jpg", top_k=8)
    assert "clip" not in image_query.absent_signals
    assert all("clip" in c.signals for c in image_query.candidates)  # image -> every tool's text
    text_query = retriever.search("blur the background", top_k=8)
    with_images = {"finance.expense.submit", "image.background.blur"}
    for c in text_query.candidates:  # text -> tool images: only tools that have example images
        assert ("clip" in c.signals) == (c.id in with_images)
    check_invariants(image_query, 8)


@pytest.mark.slow
def test_rerank_reorders_by_cross_encoder_and_says_when_off(models: Any, small_catalog_dir: Path, tmp_path: Path,
                                                             tiny_cross_encoder: Path) -> None:
    from toolrag.search.retriever import ToolRetriever

    off = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path, models=models,
                                     settings=Settings(rerank_model="none"))
    plain = off.search("book a meeting room", settings=off.settings.with_overrides(rerank=True))
    assert any("reranker off" in note for note in plain.notes)
    assert all(c.rerank_score is None for c in plain.candidates)
    on = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path, models=models,
                                    settings=Settings(rerank_model=str(tiny_cross_encoder), rerank=True,
                                                      rerank_top_n=4, top_k=6))
    result = on.search("book a meeting room")
    head = result.candidates[:4]
    assert all(c.rerank_score is not None and 0.0 < c.rerank_score < 1.0 for c in head)
    assert [c.rerank_score for c in head] == sorted((c.rerank_score for c in head), reverse=True)  # type: ignore[type-var]
    assert all(c.rerank_score is None for c in result.candidates[4:])
    assert "rerank" in result.timing_ms
    # The reranked head is a permutation of the fused head: reranking reorders, it does not fetch new tools.
    fused = on.search("book a meeting room", settings=on.settings.with_overrides(rerank=False))
    assert {c.id for c in head} == {c.id for c in fused.candidates[:4]}


@pytest.mark.slow
@pytest.mark.parametrize("fusion", [Fusion.LATE, Fusion.RRF])
def test_explained_ranks_are_competition_ranks_over_all_candidates(small_retriever: Any, fusion: Fusion) -> None:
    from toolrag.search.fusion import competition_ranks

    cfg = small_retriever.settings.with_overrides(fusion=fusion, top_k=8)
    result = small_retriever.search("weather forecast for Berlin", settings=cfg, include_deprecated=True,
                                    role="hr_manager")
    assert len(result.candidates) == 8  # every tool, so the ranks are over exactly these candidates
    for name in ("dense", "bm25"):
        raw = np.array([c.signals[name].raw for c in result.candidates])
        ranks = [c.signals[name].rank for c in result.candidates]
        assert ranks == competition_ranks(raw, np.ones(8, dtype=bool)).tolist(), (name, raw, ranks)


@pytest.mark.slow
def test_snapshot_memo_keeps_filters_and_reference_vectors_without_changing_scores(
        small_retriever: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large catalog's search scores a reference sample of the permitted tools besides its candidates; the
    snapshot keeps that sample's vectors per filter. Here the sample (3 rows) is forced outside a 2-row
    candidate pool so the kept vectors are used, and the fusion must equal the one computed afresh."""
    from dataclasses import replace

    from toolrag.search import adaptive
    from toolrag.search.fuse_step import fuse_signals
    from toolrag.search.scoring import score_signals

    original = adaptive.reference_rows
    monkeypatch.setattr(adaptive, "reference_rows", lambda allowed: original(allowed, limit=3))
    # A copy of the snapshot starts with an empty memo (earlier searches kept the unpatched reference rows).
    snap, cfg = replace(small_retriever.index.snapshot), small_retriever.settings
    q = small_retriever.analyzer.analyze("approve this month's payroll run", settings=cfg)
    caller = Caller.of(small_retriever.catalog, role="hr_manager")
    mask, _ = snap.allowed(caller)
    assert snap.allowed(Caller.of(small_retriever.catalog, role="hr_manager"))[0] is mask  # kept, not recomputed
    assert not mask.flags.writeable  # shared by searches: nobody may change it
    rows = np.flatnonzero(mask)[:2]
    assert not np.isin(original(np.flatnonzero(mask), limit=3), rows).all()
    scores = score_signals(snap, rows, q, history_weight=cfg.history_weight)
    afresh, _, _ = fuse_signals(scores, q, cfg, snap, rows, mask)
    key = caller.key
    for _ in range(2):  # the first call fills the memo, the second reads it
        kept, _, _ = fuse_signals(scores, q, cfg, snap, rows, mask, filter_id=key)
        np.testing.assert_allclose(kept, afresh, rtol=1e-6)
    ref_rows, vectors = snap._memo[("reference", key)], snap._memo[("reference-vectors", key)]
    np.testing.assert_array_equal(vectors["dense"], snap.vectors["dense"][ref_rows])
    # When the candidates include every reference row (the exact path), no vectors are gathered at all.
    exact = replace(small_retriever.index.snapshot)
    every = np.flatnonzero(mask)
    exact_scores = score_signals(exact, every, q, history_weight=cfg.history_weight)
    fuse_signals(exact_scores, q, cfg, exact, every, mask, filter_id=key)
    assert ("reference", key) in exact._memo and ("reference-vectors", key) not in exact._memo
    assert not replace(snap)._memo  # another snapshot (an edit) starts with nothing kept


@pytest.mark.slow
def test_the_two_text_models_encode_side_by_side_each_giving_its_own_vector(small_retriever: Any) -> None:
    """analyze() and prepare() run the English model in a worker thread beside the multilingual one; each
    vector must be exactly the one its model gives the text alone, with or without earlier turns."""
    from toolrag.search.query import QueryAnalyzer

    models, cfg = small_retriever.index.models, small_retriever.settings
    text, turn = "book a meeting room for Tuesday", "we need the big room"
    analyzed = QueryAnalyzer(models).analyze(text, settings=cfg)
    for kind, model in (("dense", models.text), ("dense_en", models.english)):
        np.testing.assert_array_equal(analyzed.vectors[kind], model.encode_queries([text])[0])
    with_turn = QueryAnalyzer(models).analyze(text, history=[turn], settings=cfg)
    for kind, model in (("dense", models.text), ("dense_en", models.english)):
        own, past = (np.asarray(model.encode_queries([t])[0], dtype=np.float32) for t in (text, turn))
        mixed = (1.0 - cfg.history_weight) * own + cfg.history_weight * past
        np.testing.assert_allclose(with_turn.vectors[kind], mixed / np.linalg.norm(mixed), atol=1e-6)
    chinese = QueryAnalyzer(models).analyze("北京明天天气怎么样", settings=cfg)
    # the English model reads a Chinese request's English gloss (toolrag.search.gloss), never its Chinese text
    assert chinese.gloss and "dense_en" not in chinese.absent
    np.testing.assert_array_equal(chinese.vectors["dense_en"], models.english.encode_queries([chinese.gloss])[0])
    prepared = QueryAnalyzer(models)
    assert prepared.prepare([text, "北京明天天气怎么样"]) == 4  # two multilingual vectors, two English
    for query, alone in ((text, analyzed), ("北京明天天气怎么样", chinese)):
        again = prepared.analyze(query, settings=cfg)
        for kind in ("dense", "dense_en"):
            np.testing.assert_array_equal(again.vectors[kind], alone.vectors[kind])


@pytest.mark.slow
def test_query_rows_answers_in_the_rows_of_the_snapshot_a_search_holds(small_catalog_dir: Path, tmp_path: Path,
                                                                        models: Any) -> None:
    retriever = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path, models=models)
    held = retriever.index.snapshot
    vector = retriever.analyzer.analyze("approve payroll", settings=retriever.settings).vectors["dense"]
    everyone = np.ones(len(held.ids), dtype=bool)
    caller = Caller.of(held.catalog, permissions=(), include_deprecated=True)
    before = [held.ids[r] for r in retriever.index.query_rows("dense", vector, k=4, mask=everyone, caller=caller)]
    first = held.ids[0]
    retriever.reload(held.catalog.without_tool(first))  # every later tool moves up one row in the live snapshot
    assert retriever.index.snapshot.ids[0] != first
    rows = retriever.index.query_rows("dense", vector, k=4, mask=everyone, caller=caller, snapshot=held)
    assert [held.ids[r] for r in rows] == [i for i in before if i != first][: len(rows)]


@pytest.mark.slow
def test_published_tools_without_descriptions_are_found_by_name(tmp_path: Path, models: Any) -> None:
    # MCP servers often publish tools with a name and a schema only; they stay in the catalog, described by
    # their name and parameters, and a request for what the name says finds them.
    listed = {"tools": [
        {"name": "list_directory", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"name": "send_slack_message", "inputSchema": {"type": "object", "properties": {
            "channel": {"type": "string"}, "text": {"type": "string"}}}},
        {"name": "create_github_issue", "description": "Open an issue in a GitHub repository"},
        {"name": "get_weather_forecast", "description": "Weather forecast for a city for the next days"},
    ]}
    (tmp_path / "server.json").write_text(json.dumps(listed), "utf-8")
    retriever = ToolRetriever.from_catalog(tmp_path / "server.json", data_dir=tmp_path / "data", models=models)
    assert retriever.catalog.report.degraded == 2 and len(retriever.catalog) == 4
    assert retriever.search("show me what files are in the docs folder").ids[0] == "list_directory"
    assert retriever.search("post a message to the #release slack channel").ids[0] == "send_slack_message"
