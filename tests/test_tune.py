"""Weights chosen from a labelled sample (toolrag.evaluation.tune): the grid, and tuning through the real retriever."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolrag.cli import main
from toolrag.errors import QueryError, SettingsError
from toolrag.evaluation.evaluator import Evaluator
from toolrag.evaluation.queries import QueryRow
from toolrag.evaluation.tune import calibrate_target, simplex_grid, tune_weights
from toolrag.search.results import Decision
from toolrag.settings import Settings

# Paraphrases of the small catalog's tools (tests/conftest.py) that share few words with the profiles:
# keyword search alone ranks them badly, the dense models well.
PARAPHRASES = [
    QueryRow("is it going to pour down in Munich the day after tomorrow", ("weather.forecast",)),
    QueryRow("how hot is it outside in Rome at the moment", ("weather.current",)),
    QueryRow("make the stuff behind me in this selfie fuzzy", ("image.background.blur",)),
    QueryRow("where in our repos is the class that parses invoices", ("dev.search.code",)),
    QueryRow("I paid for a cab, get my money back from the company", ("finance.expense.submit",)),
    QueryRow("reserve somewhere for six of us to talk at 3pm", ("calendar.book",)),
]


def test_simplex_grid_counts_and_sums() -> None:
    grid = simplex_grid(["a", "b", "c"], 0.1)
    assert len(grid) == 66  # C(10 + 2, 2)
    assert all(abs(sum(w.values()) - 1.0) < 1e-9 and min(w.values()) >= 0 for w in grid)
    assert len({tuple(sorted(w.items())) for w in grid}) == len(grid)
    assert len(simplex_grid(["a", "b"], 0.25)) == 5
    assert simplex_grid(["a"], 0.5) == [{"a": 1.0}]
    for bad in (0.0, 0.3, 1.5):
        with pytest.raises(SettingsError):
            simplex_grid(["a", "b"], bad)


@pytest.mark.slow
def test_tuning_moves_weight_to_the_signals_that_rank_the_gold_tools(small_retriever: object) -> None:
    keyword_only = Settings().with_overrides(weights={"dense": 0.0, "dense_en": 0.0, "bm25": 0.7})
    result = tune_weights(small_retriever, PARAPHRASES, base=keyword_only, step=0.25, z=0.0)
    assert result.n_queries == len(PARAPHRASES)
    scores = [c.score for c in result.candidates]
    assert scores == sorted(scores, reverse=True)
    assert len(result.candidates) == len(simplex_grid(["dense", "dense_en", "bm25"], 0.25))
    assert result.changed
    assert result.best_score > result.base_score
    assert result.best_score == pytest.approx(scores[0])
    chosen = result.settings.weights
    assert chosen["dense"] + chosen["dense_en"] > 0
    # the text signals keep the base's total weight; image weights are untouched
    assert chosen["dense"] + chosen["dense_en"] + chosen["bm25"] == pytest.approx(0.7)
    assert chosen["ocr"] == keyword_only.weights["ocr"]
    # the chosen settings really rank better when searched again
    again = Evaluator(PARAPHRASES)(small_retriever, settings=result.settings).metrics  # type: ignore[arg-type]
    before = Evaluator(PARAPHRASES)(small_retriever, settings=keyword_only).metrics  # type: ignore[arg-type]
    assert again["ndcg@10"] == pytest.approx(result.best_score)
    assert before["ndcg@10"] == pytest.approx(result.base_score)
    assert "new weights" in result.summary()


@pytest.mark.slow
def test_an_insignificant_gain_keeps_the_current_weights(small_retriever: object) -> None:
    base = Settings()
    result = tune_weights(small_retriever, PARAPHRASES[:3], base=base, step=0.5, z=1000.0)
    assert not result.changed
    assert result.settings == base
    assert result.best_score == result.base_score
    assert "kept the current weights" in result.summary()


@pytest.mark.slow
def test_tune_rejects_bad_input(small_retriever: object) -> None:
    with pytest.raises(QueryError, match="labelled"):
        tune_weights(small_retriever, [QueryRow("hello there", ())])
    with pytest.raises(SettingsError, match="metric"):
        tune_weights(small_retriever, PARAPHRASES, metric="precision@3")
    with pytest.raises(SettingsError, match="text signals"):
        tune_weights(small_retriever, PARAPHRASES, signals=["ocr"])
    with pytest.raises(TypeError, match="ToolRetriever"):
        tune_weights(object(), PARAPHRASES)  # type: ignore[arg-type]


@pytest.mark.slow
def test_save_merges_into_a_settings_file_and_never_breaks_it(small_retriever: object, tmp_path: Path) -> None:
    keyword_only = Settings().with_overrides(weights={"dense": 0.0, "dense_en": 0.0, "bm25": 0.7})
    result = tune_weights(small_retriever, PARAPHRASES, base=keyword_only, step=0.25, z=0.0)
    file = tmp_path / "settings.yaml"
    file.write_text("top_k: 3\nprecision_target: 0.9\n", encoding="utf-8")
    result.save(file)
    loaded = Settings.from_yaml(file)
    assert loaded.top_k == 3 and loaded.precision_target == 0.9  # the file's other settings are kept
    assert loaded.weights == pytest.approx(result.settings.weights)
    assert file.read_text(encoding="utf-8").startswith("# toolrag tune: new weights")
    broken = tmp_path / "broken.yaml"
    broken.write_text("top_k: [not a number\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="broken.yaml"):
        result.save(broken)
    assert broken.read_text(encoding="utf-8") == "top_k: [not a number\n"  # refused, left as it was
    with pytest.raises(SettingsError, match="check that its folder exists"):
        result.save(tmp_path / "no-such-folder" / "settings.yaml")


@pytest.mark.slow
def test_cli_tune_prints_the_choice_and_writes_settings(capsys: pytest.CaptureFixture[str], small_catalog_dir: Path,
                                                        data_dir: Path, tmp_path: Path) -> None:
    queries = tmp_path / "labelled.jsonl"
    lines = [json.dumps({"query": r.query, "gold": list(r.gold)}) for r in PARAPHRASES]
    lines += [json.dumps({"query": r.query, "gold": [], "expect": "no_tool"}) for r in NO_TOOL_ROWS]
    queries.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "tuned.yaml"
    code = main(["tune", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir), "--queries",
                 str(queries), "--step", "0.5", "--weight", "dense=0", "--weight", "dense_en=0",
                 "--out", str(out), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["metric"] == "ndcg@10" and len(report["top"]) == 6  # C(2 + 2, 2) weightings at step 0.5
    assert report["best_score"] >= report["base_score"]
    assert Settings.from_yaml(out).weights == pytest.approx(report["weights"])
    point = report["precision_target"]
    assert point["n_no_tool"] == len(NO_TOOL_ROWS) and point["n_tool"] == len(PARAPHRASES)
    if point["changed"]:
        assert Settings.from_yaml(out).precision_target == pytest.approx(point["target"], abs=1e-4)
    assert main(["tune", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir), "--queries",
                 str(queries), "--metric", "precision@3"]) == 2
    assert "unknown metric 'precision@3'" in capsys.readouterr().err


NO_TOOL_ROWS = [
    QueryRow("write me a haiku about autumn leaves", (), expect=Decision.NO_TOOL),
    QueryRow("who won the football world cup in 1998", (), expect=Decision.NO_TOOL),
    QueryRow("给我讲一个关于猫的笑话", (), expect=Decision.NO_TOOL),
    QueryRow("what is the square root of 144", (), expect=Decision.NO_TOOL),
]


@pytest.mark.slow
def test_the_precision_target_is_calibrated_through_the_retriever(small_retriever: Any) -> None:
    rows = PARAPHRASES + NO_TOOL_ROWS
    result = calibrate_target(small_retriever, rows, z=0.0)
    assert (result.n_tool, result.n_no_tool) == (len(PARAPHRASES), len(NO_TOOL_ROWS))
    assert result.accuracy >= result.base_accuracy
    # The reported accuracy is what searching at the chosen target really decides.
    cfg = small_retriever.settings.with_overrides(precision_target=result.target)
    expected = [r.expect or (Decision.EXECUTE if r.gold else Decision.NO_TOOL) for r in rows]
    searched = [small_retriever.search(r.query, settings=cfg) for r in rows]
    right = [res.decision is e and (e is not Decision.EXECUTE or res.ids[0] in r.gold)
             for res, e, r in zip(searched, expected, rows, strict=True)]
    assert sum(right) / len(rows) == pytest.approx(result.accuracy)
    # The trade-off curve: targets in order, the chosen one on it
    assert [p.target for p in result.curve] == sorted(p.target for p in result.curve)
    assert any(p.target == result.target and p.accuracy == result.accuracy for p in result.curve)
    strict = calibrate_target(small_retriever, rows, z=1000.0)  # no gain is that significant: keep it
    assert not strict.changed and strict.target == strict.base_target
    assert "precision_target" in strict.summary()
    with pytest.raises(QueryError, match="both kinds"):
        calibrate_target(small_retriever, PARAPHRASES)
    with pytest.raises(SettingsError, match="z must be >= 0"):
        calibrate_target(small_retriever, rows, z=-1.0)
