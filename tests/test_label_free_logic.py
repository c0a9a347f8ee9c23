"""Pure parts of the label-free check, on hand-worked rows: the risk features and estimate, figures that were
not measured, the extra-examples file, the bank's file format, the lint of a description that repeats the
name, and the agreement statistics of bench.label_free. The same behaviour runs for real (models, index,
CLI, app) in tests/test_label_free.py and tests/test_label_free_ui.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.label_free import agreement, command_line
from toolrag.catalog.extra_examples import (
    EXTRA_EXAMPLES_FILE,
    add_examples,
    apply_extra_examples,
    dump_examples,
    read_extra_examples,
)
from toolrag.catalog.lint import lint_profile, repeats_name
from toolrag.catalog.loader import catalog_files, load_catalog, load_records
from toolrag.errors import CatalogError, SettingsError
from toolrag.evaluation.label_free import sentences
from toolrag.evaluation.report import CatalogReport
from toolrag.evaluation.request_bank import RequestBank
from toolrag.evaluation.retrievability import NO_EXAMPLES_REASON, ExampleOutcome, summarize
from toolrag.evaluation.risk import (
    OWN_TEXT,
    SENTENCE,
    LabelFreeReport,
    Probe,
    RiskModel,
    ToolRisk,
    estimate,
    features,
    likely_rival,
    verdict,
)
from toolrag.search.results import Decision
from toolrag.settings import Settings

TOOLS = [{"name": "read_file", "description": "Read a whole file and return its text.",
          "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
         {"name": "write_file", "description": "Create or overwrite a file with new content."},
         {"name": "list_files", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def probe(tool: str, kind: str, rank: int | None, margin: float | None, winner: str | None = None,
          rival: str | None = None) -> Probe:
    return Probe(tool, kind, f"{tool} {kind}", rank, winner or (tool if rank == 1 else "other"), rival, margin)


# ------------------------------------------------------------------------------------------------ risk

def test_features_worked_by_hand() -> None:
    rows = {
        "a": [probe("a", OWN_TEXT, 1, 2.0, rival="b"), probe("a", SENTENCE, 1, 1.0), probe("a", SENTENCE, 3, -0.5)],
        "b": [probe("b", OWN_TEXT, 1, 0.5, rival="a")],  # no sentence: sentence_first falls back on own_first
        "c": [probe("c", OWN_TEXT, None, None, winner="a"), probe("c", SENTENCE, 2, -1.0, winner="a")],
        "d": [probe("d", OWN_TEXT, 2, -0.2, winner="b", rival="b")],
    }
    f = features(rows)
    # margins: c (not returned, -inf) < d (-0.2) < b (0.5) < a (2.0): mid-rank percentiles 1/8, 3/8, 5/8, 7/8
    assert [f[t]["own_margin"] for t in "cdba"] == [0.125, 0.375, 0.625, 0.875]
    assert f["a"] == {"own_first": 1.0, "sentence_first": 0.5, "own_margin": 0.875}
    assert f["b"]["sentence_first"] == 1.0 and f["c"]["sentence_first"] == 0.0 and f["d"]["own_first"] == 0.0


def test_percentiles_share_ties_and_one_tool_is_the_middle() -> None:
    f = features({t: [probe(t, OWN_TEXT, 1, 1.0)] for t in "xyz"})
    assert {v["own_margin"] for v in f.values()} == {0.5}
    assert features({"only": [probe("only", OWN_TEXT, 1, 3.0)]})["only"]["own_margin"] == 0.5


def test_estimate_is_the_logistic_of_the_features_and_top5_never_below_first() -> None:
    model = RiskModel(first={"intercept": -1.0, "own_margin": 2.0}, top5={"intercept": -3.0}, fitted_on="hand")
    first, top5 = estimate({"own_margin": 0.5, "own_first": 1.0}, model)
    assert first == pytest.approx(0.5)  # -1 + 2 * 0.5 = 0
    assert top5 == first  # sigmoid(-3) = 0.047 < 0.5: raised to P(first)
    first, top5 = estimate({"own_margin": 1.0}, RiskModel({"intercept": 0.0}, {"intercept": 2.0}, "hand"))
    assert (first, top5) == (pytest.approx(0.5), pytest.approx(1 / (1 + math.exp(-2))))


def test_verdict_and_rival() -> None:
    assert verdict(0.7, 0.9, "b") == "found first"
    assert verdict(0.3, 0.8, "b") == "top five"
    assert verdict(0.3, 0.4, "b") == "lost to b" and verdict(0.1, 0.2, None) == "lost"
    lost_twice = [probe("a", OWN_TEXT, 1, 0.4, rival="b"), probe("a", SENTENCE, 2, -1, winner="c"),
                  probe("a", SENTENCE, 4, -2, winner="c")]
    assert likely_rival(lost_twice) == "c"
    assert likely_rival([probe("a", OWN_TEXT, 1, 0.4, rival="b")]) == "b"  # never lost: its runner-up


def test_tool_risk_reason_and_report_figures() -> None:
    rows = (probe("a", OWN_TEXT, 1, 0.31, rival="b"), probe("a", SENTENCE, 2, -0.2, winner="b"))
    risk = ToolRisk("a", "a", 0.3, 0.8, "b", 0.91, ("invoice", "tax"), ("short-description",), rows)
    assert risk.at_risk and risk.verdict == "top five"
    assert risk.reason() == ("its own description leads b by only 0.31; 0/1 description sentences find it first "
                             "when left out; shared words: invoice, tax; text cosine with b 0.91")
    fine = ToolRisk("c", "c", 0.9, 0.95, None, None, (), (), ())
    report = LabelFreeReport((risk, fine))
    assert report.at_risk == ("a",)
    assert report.figures() == {"estimated_found_first": pytest.approx(0.6),
                                "estimated_found_top5": pytest.approx(0.875)}
    assert LabelFreeReport(()).figures() == {"estimated_found_first": None, "estimated_found_top5": None}
    assert json.loads(json.dumps(report.to_json()))["tools"][0]["reason"] == risk.reason()


# ------------------------------------------------------------------------------------ nothing measured

def test_health_without_examples_is_not_measured_rather_than_zero() -> None:
    catalog = load_records(TOOLS, name="t")
    report = summarize([], catalog, cosine={}, lookalikes=[], lint=[], threshold=0.9)
    h = report.health
    assert h.figures() == {"found_first": None, "found_top5": None, "mrr": None, "tools_found": None}
    assert h.unmeasured() == dict.fromkeys(h.figures(), NO_EXAMPLES_REASON)
    data = h.to_json()
    assert data["found_first"] is None and data["unmeasured"]["mrr"] == NO_EXAMPLES_REASON
    # one example searched: measured, and a miss is a real 0.0
    miss = ExampleOutcome("read_file", 0, "open notes", None, ("write_file",), Decision.NO_TOOL)
    measured = summarize([miss], catalog, cosine={}, lookalikes=[], lint=[], threshold=0.9).health
    assert measured.found_first == 0.0 and measured.tools_found == 0.0 and measured.unmeasured() == {}


def test_a_gate_on_a_figure_not_measured_is_an_error_that_says_why() -> None:
    catalog = load_records(TOOLS, name="t")
    retrievability = summarize([], catalog, cosine={}, lookalikes=[], lint=[], threshold=0.9)
    estimate_ = LabelFreeReport((ToolRisk("read_file", "read_file", 0.8, 0.9, None, None, (), (), ()),))
    report = CatalogReport("t", Settings(), retrievability, label_free=estimate_)
    with pytest.raises(SettingsError, match="--fail-under found_first: not measured: no tool has example requests"):
        report.gate("found_first", 0.5)
    with pytest.raises(SettingsError, match="recall@5: not measured: no labelled requests"):
        report.gate("recall@5", 0.5)
    assert report.gate("estimated_found_first", 0.5) is None
    assert report.gate("estimated_found_first", 0.9) == "estimated_found_first = 0.8000 < 0.9000"
    bare = CatalogReport("t", Settings(), retrievability)
    with pytest.raises(SettingsError, match="label-free check was off"):
        bare.gate("estimated_found_top5", 0.1)
    assert report.to_json()["figures"]["found_first"] is None


# ------------------------------------------------------------------------------------ extra examples

def test_extra_examples_are_added_to_the_tools_and_survive_a_reimport(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps({"tools": TOOLS}), encoding="utf-8")
    (tmp_path / EXTRA_EXAMPLES_FILE).write_text(
        "read_file:\n  - show me config.yaml\n  - {query: 打开 notes.txt}\n  - SHOW ME CONFIG.YAML\n"
        "write_file: save this as notes.md\n", encoding="utf-8")
    assert catalog_files(tmp_path) == [tmp_path / "tools.json"]
    catalog = load_catalog(tmp_path)
    assert [e.query for e in catalog.get("read_file").examples] == ["show me config.yaml", "打开 notes.txt"]
    assert [e.query for e in catalog.get("write_file").examples] == ["save this as notes.md"]
    assert catalog.get("list_files").examples == ()
    # the catalog's files are rewritten by a new import: the examples stay, and an edit of the file is seen
    (tmp_path / "tools.json").write_text(json.dumps({"tools": TOOLS[:2]}), encoding="utf-8")
    add_examples(tmp_path / EXTRA_EXAMPLES_FILE, {"write_file": ["write a haiku to poem.txt"]})
    again = load_catalog(tmp_path)
    assert [e.query for e in again.get("write_file").examples] == ["save this as notes.md", "write a haiku to poem.txt"]


def test_unknown_ids_warn_or_refuse_under_strict_and_bad_shapes_name_their_line(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps({"tools": TOOLS[:2]}), encoding="utf-8")  # strict-valid
    extras = tmp_path / EXTRA_EXAMPLES_FILE
    extras.write_text("read_file: [open it]\nread_fil: [typo]\n", encoding="utf-8")
    catalog = load_catalog(tmp_path)
    assert any("extra_examples.yaml:2: no tool has id 'read_fil' (did you mean 'read_file'?)" in w
               for w in catalog.report.warnings)
    with pytest.raises(CatalogError, match="no tool has id 'read_fil'"):
        load_catalog(tmp_path, mode="strict")
    extras.write_text("read_file:\n  - ok\n  - 3\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"extra_examples.yaml:3: tool 'read_file': a request must be non-empty"):
        load_catalog(tmp_path)
    extras.write_text("- read_file\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="expected a mapping of tool ids to lists of requests"):
        read_extra_examples(extras)


def test_dump_reads_back_and_add_keeps_what_the_file_holds(tmp_path: Path) -> None:
    file = tmp_path / "suggested.yaml"
    text = dump_examples({"a.tool": ['say "hi"', "读取: 文件"], "empty": []})
    file.write_text(text, encoding="utf-8")
    read = {k: [q for q, _ in v] for k, v in read_extra_examples(file).items()}
    assert read == {"a.tool": ['say "hi"', "读取: 文件"]}
    assert add_examples(file, {"a.tool": ["读取: 文件", "new one"], "b": ["x y"]}) == {
        "a.tool": ['say "hi"', "读取: 文件", "new one"], "b": ["x y"]}
    catalog = load_records([{"name": "a.tool", "description": "does a"}], name="c")
    applied, warnings = apply_extra_examples(catalog, file, strict=False)
    assert [e.query for e in applied.get("a.tool").examples] == ['say "hi"', "读取: 文件", "new one"]
    assert len(warnings) == 1 and "'b'" in warnings[0]


# -------------------------------------------------------------------------------- bank, lint, sentences

def test_bank_file_is_read_strictly_and_the_bundled_bank_has_both_languages(tmp_path: Path) -> None:
    bad = tmp_path / "bank.jsonl"
    bad.write_text('{"query": "book a flight", "lang": "en", "source": "x"}\n{"lang": "en"}\n', encoding="utf-8")
    with pytest.raises(CatalogError, match=r"bank.jsonl:2: not a request of the bank"):
        RequestBank.from_file(bad)
    bank = RequestBank.bundled()
    assert len(bank) > 9000 and {r.lang for r in bank.requests} == {"en", "zh"}
    moved = bank.sharing_words("move a file to another folder", lang="en", k=5)
    assert moved and all(r.lang == "en" for r in moved)
    assert any("move" in r.query.lower() for r in moved)
    assert bank.sharing_words("", lang="en", k=5) == []


def test_a_description_that_repeats_the_name_is_linted() -> None:
    catalog = load_records([*TOOLS, {"name": "getWeather", "description": "Get weather"}], name="t")
    assert repeats_name(catalog.get("list_files"))  # derived "List files (path)"
    assert repeats_name(catalog.get("getWeather"))
    assert not repeats_name(catalog.get("read_file"))
    codes = [w.code for w in lint_profile(catalog.get("list_files"))]
    assert "description-repeats-name" in codes and "short-description" not in codes


def test_a_required_parameter_the_schema_does_not_define_is_linted() -> None:
    schema = {"type": "object", "properties": {"image_url": {"type": "string", "description": "the picture"}},
              "required": ["image_urll", "image_url"]}
    catalog = load_records([{"name": "describe", "description": "Describes a picture.", "inputSchema": schema},
                            {"name": "plain", "description": "Takes nothing.", "inputSchema": {"type": "object"}}],
                           name="t")
    warnings = [w for w in lint_profile(catalog.get("describe")) if w.code == "required-not-defined"]
    assert [w.message for w in warnings] == ["required names parameters the schema does not define: image_urll; a "
                                             "call can never give them (a typo? defined: image_url)"]
    assert "required-not-defined" not in [w.code for w in lint_profile(catalog.get("plain"))]


def test_sentences_split_on_western_and_full_width_marks() -> None:
    assert sentences("Reads a file. Returns text; errors are reported!\nShort.") == [
        "Reads a file.", "Returns text;", "errors are reported!"]  # "Short." is under 8 characters
    assert sentences("读取文件。返回文本；好。") == ["读取文件。", "返回文本；"]  # Chinese: 4 characters at least
    assert sentences("ok. fine") == []


# --------------------------------------------------------------------------------- bench agreement

def test_agreement_statistics_worked_by_hand() -> None:
    rows = [{"p_first": 0.2, "labelled_first": 0.0, "rival": "x", "labelled_winner": "x"},   # both at risk
            {"p_first": 0.8, "labelled_first": 1.0, "rival": "y", "labelled_winner": None},  # both fine
            {"p_first": 0.4, "labelled_first": 0.75, "rival": "y", "labelled_winner": "z"},  # disagree
            {"p_first": 0.9, "labelled_first": 0.25, "rival": "w", "labelled_winner": "w"}]  # disagree
    a = agreement(rows)
    assert a["agreement"] == 0.5 and a["majority"] == 0.5 and a["labelled_at_risk"] == 2 and a["flagged"] == 2
    assert a["kappa"] == pytest.approx(0.0)  # chance agreement 0.5
    assert a["rival_hits"] == pytest.approx(2 / 3) and a["rival_cases"] == 3
    assert a["auc"] == pytest.approx(0.5)  # at risk: -0.2 > -0.8 and -0.9; -0.9 < -0.4 ...
    assert agreement([]) == {"tools": 0}


def test_the_bench_command_in_docs_names_no_path_of_this_machine() -> None:
    assert command_line(["--training", "/data/training", "--reuse", "--fit", "--bench-dir=/tmp/x", "--sets",
                         "metatool"]) == "python -m bench.label_free --fit --sets metatool"
    assert command_line(["--training=/data/t", "--timing", "500"]) == "python -m bench.label_free --timing 500"
