"""The label-free check for real (models, index, ``ToolRetriever.search``, the CLI) on the published MCP catalog
of tests/data/published_mcp: 31 tools, no example request, like most catalogs users import."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from toolrag.catalog.edit_types import RankProbe
from toolrag.catalog.editor import CatalogEditor
from toolrag.catalog.extra_examples import EXTRA_EXAMPLES_FILE, read_extra_examples
from toolrag.catalog.loader import load_catalog
from toolrag.cli import main
from toolrag.evaluation.label_free import LabelFreeChecker, own_text, sentences
from toolrag.evaluation.loo import RetrievabilityChecker
from toolrag.evaluation.request_bank import RequestBank
from toolrag.evaluation.retrievability import HEALTH_FIGURES
from toolrag.evaluation.risk import OWN_TEXT, SENTENCE, LabelFreeReport
from toolrag.index.tokenize import tokenize
from toolrag.search.results import Decision
from toolrag.search.retriever import ToolRetriever

pytestmark = pytest.mark.slow  # real models, index and CLI

CATALOG = ROOT / "tests" / "data" / "published_mcp" / "tools.json"


@pytest.fixture(scope="module")
def published(data_dir: Path, models: Any) -> ToolRetriever:
    return ToolRetriever.from_catalog(CATALOG, data_dir=data_dir, models=models)


@pytest.fixture(scope="module")
def estimate(published: ToolRetriever, tmp_path_factory: pytest.TempPathFactory) -> LabelFreeReport:
    return LabelFreeChecker(cache_dir=tmp_path_factory.mktemp("label-free")).check(published)


def test_every_tool_is_probed_through_the_real_search(published: ToolRetriever, estimate: LabelFreeReport) -> None:
    assert len(estimate.tools) == len(published.catalog) == 31
    codes = published.catalog.permission_codes
    for risk in estimate.tools:
        tool = published.catalog.get(risk.tool_id)
        own = [p for p in risk.probes if p.kind == OWN_TEXT]
        assert len(own) == 1 and own[0].query == own_text(tool)
        assert [p.query for p in risk.probes if p.kind == SENTENCE] == sentences(tool.description)[:2]
        assert 0.0 < risk.p_first <= risk.p_top5 < 1.0
    # the own-text probe is exactly what ToolRetriever.search answers for that request
    for risk in estimate.tools[:5]:
        own = next(p for p in risk.probes if p.kind == OWN_TEXT)
        ids = list(published.search(own.query, permissions=codes, top_k=10, audited=False).ids)
        assert own.winner == ids[0] and own.rank == (ids.index(risk.tool_id) + 1 if risk.tool_id in ids else None)
        assert own.rival == next(i for i in ids if i != risk.tool_id)


def test_tools_at_risk_name_their_rival_the_shared_words_and_get_suggestions(published: ToolRetriever,
                                                                            estimate: LabelFreeReport) -> None:
    at_risk = [t for t in estimate.tools if t.at_risk]
    assert at_risk, [(t.tool_id, round(t.p_first, 2)) for t in estimate.tools]
    bank = {r.query for r in RequestBank.bundled().requests}
    for risk in at_risk:
        assert risk.rival in published.catalog.ids and risk.rival != risk.tool_id
        assert risk.reason() and risk.verdict in ("top five", f"lost to {risk.rival}")
        own_words = set(tokenize(own_text(published.catalog.get(risk.tool_id))))
        assert risk.shared_words and set(risk.shared_words) <= own_words
        for suggestion in risk.suggestions:
            assert suggestion.query in bank
            result = published.search(suggestion.query, permissions=published.catalog.permission_codes,
                                      audited=False)
            assert result.ids[0] == risk.tool_id and result.decision is Decision.EXECUTE
    assert any(t.suggestions for t in at_risk)
    assert estimate.figures()["estimated_found_first"] == pytest.approx(
        sum(t.p_first for t in estimate.tools) / 31)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_report_measures_nothing_as_zero_and_writes_suggestions_the_catalog_takes(
        capsys: pytest.CaptureFixture[str], published: ToolRetriever, data_dir: Path, tmp_path: Path) -> None:
    suggested, html = tmp_path / "suggested.yaml", tmp_path / "report.html"
    base = ["report", "--catalog", str(CATALOG), "--data-dir", str(data_dir)]
    code, stdout, err = run(capsys, *base, "--json", "--suggest-examples", str(suggested), "--out", str(html))
    assert code == 0, err
    payload = json.loads(stdout)
    figures, unmeasured = payload["figures"], payload["unmeasured"]
    for name in HEALTH_FIGURES:  # nothing was searched: null with the reason, never 0.0
        assert figures[name] is None and "no tool has example requests" in unmeasured[name]
    assert all(value is None or value > 0 for value in figures.values())
    lf = payload["label_free"]
    assert 0 < figures["estimated_found_first"] < 1 and lf["at_risk"]
    risky = [t for t in lf["tools"] if t["at_risk"]]
    assert all(t["rival"] and t["reason"] for t in risky)
    with_suggestions = {t["tool_id"]: [s["query"] for s in t["suggestions"]] for t in risky if t["suggestions"]}
    assert with_suggestions
    # the YAML holds them, and a catalog folder with it as extra_examples.yaml takes them as examples
    assert {k: [q for q, _ in v] for k, v in read_extra_examples(suggested).items()} == with_suggestions
    folder = tmp_path / "catalog"
    folder.mkdir()
    shutil.copy(CATALOG, folder / "tools.json")
    shutil.copy(suggested, folder / EXTRA_EXAMPLES_FILE)
    catalog = load_catalog(folder, cache=False)
    for tool_id, queries in with_suggestions.items():
        assert [e.query for e in catalog.get(tool_id).examples] == queries
    page = html.read_text(encoding="utf-8")
    assert "n/a" in page and "not measured: no tool has example requests" in page
    assert "Estimated without examples (31 tools)" in page and risky[0]["tool_id"] in page
    # a gate on a figure with nothing behind it is an error saying so; the estimate can be gated on
    code, _, err = run(capsys, *base, "--fail-under", "found_first=0.5")
    assert code == 2 and "--fail-under found_first: not measured: no tool has example requests" in err
    assert run(capsys, *base, "--fail-under", "estimated_found_first=0.01")[0] == 0
    code, _, err = run(capsys, *base, "--label-free", "off", "--fail-under", "estimated_found_first=0.01")
    assert code == 2 and "label-free check was off" in err


def test_eval_gate_on_a_metric_no_row_defines_is_an_error(capsys: pytest.CaptureFixture[str], data_dir: Path,
                                                         tmp_path: Path) -> None:
    queries = tmp_path / "q.yaml"
    queries.write_text("- {query: list the files in the src folder, gold: [list_directory]}\n", encoding="utf-8")
    base = ["eval", "--catalog", str(CATALOG), "--data-dir", str(data_dir), "--queries", str(queries)]
    code, _, err = run(capsys, *base, "--fail-under", "decision_accuracy=0.5")
    assert code == 2 and "decision_accuracy: not measured: no labelled request says which decision" in err
    assert run(capsys, *base, "--fail-under", "recall@5=0.5")[0] == 0


def test_an_accepted_example_goes_to_extra_examples_and_is_then_measured(models: Any, tmp_path: Path) -> None:
    folder = tmp_path / "catalog"
    folder.mkdir()
    shutil.copy(CATALOG, folder / "tools.json")
    retriever = ToolRetriever.from_catalog(folder, data_dir=tmp_path / "data", models=models)
    editor = CatalogEditor(retriever)
    probe = RankProbe(query="show me what's in config.yaml")
    outcome = editor.add_examples("read_file", ["show me what's in config.yaml"], probe=probe)
    assert outcome.action == "saved" and outcome.file == folder / EXTRA_EXAMPLES_FILE
    assert outcome.rank_after is not None and outcome.rank_after <= (outcome.rank_before or 99)
    assert [e.query for e in retriever.catalog.get("read_file").examples] == ["show me what's in config.yaml"]
    assert editor.add_examples("read_file", ["Show me what's in config.yaml"]).action == "unchanged"
    assert json.loads((folder / "tools.json").read_text(encoding="utf-8")) == json.loads(
        CATALOG.read_text(encoding="utf-8"))  # the imported file is never edited
    health = RetrievabilityChecker().check(retriever).health
    assert health.n_examples == 1 and health.found_first is not None
