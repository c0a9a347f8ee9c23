"""The catalog report: CSV queries, the comparison of two evaluations, the figures, the HTML page and
``toolrag report`` (real models on the small catalog; its leave-one-out vectors are cached in the session's
data folder, so the CLI and the library encode them once)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from toolrag.cli import main
from toolrag.errors import QueryError
from toolrag.evaluation.changes import compare_reports, failing, gold_rank, is_failing
from toolrag.evaluation.evaluator import EvalReport, QueryOutcome
from toolrag.evaluation.figures import retrievability_figure, threshold_figure, tuning_figure
from toolrag.evaluation.queries import QueryRow, load_queries
from toolrag.search.results import Decision

E, C, N = Decision.EXECUTE, Decision.CLARIFY, Decision.NO_TOOL
SMALL_CSV = """query,gold,expect
will it rain in Hamburg the day after tomorrow,weather.forecast,execute
天气预报：明天广州会下雨吗,weather.forecast,
reserve the big conference room on Friday at 10,calendar.book,execute
"submit my dinner receipt, 86 euros",finance.expense.submit,execute
who won the football world cup in 1998,,no_tool
"""


# ----------------------------------------------------------------------------------------------- CSV rows
def test_csv_queries_with_lists_quotes_and_empty_gold(tmp_path: Path) -> None:
    file = tmp_path / "q.csv"
    file.write_text("\ufeffQuery,Gold,role,permissions\n"
                    '"book a room, 3pm",office.meeting_room.book|office.calendar.create_event,employee,\n'
                    "tell me a joke,,, \n"
                    "approve it,finance.expense.approve,,expense.approve;payment.execute\n", encoding="utf-8")
    rows = load_queries(file)
    assert [r.line for r in rows] == [2, 3, 4]
    assert rows[0].query == "book a room, 3pm" and rows[0].role == "employee"
    assert rows[0].gold == ("office.meeting_room.book", "office.calendar.create_event")
    assert rows[1].gold == () and rows[1].permissions == ()
    assert rows[2].permissions == ("expense.approve", "payment.execute")


@pytest.mark.parametrize(("text", "pattern"), [
    ("query,gold,history\nx,a\n", r"q\.csv, line 1: unknown column 'history'"),
    ("query,golds\nx,a\n", r"did you mean 'gold'"),
    ("query\nx\n", r"needs the columns query and gold \(missing: gold\)"),
    ("query,gold\nx,a,b\n", r"q\.csv, line 2: 3 cells for 2 columns; quote"),
    ("query,gold,expect\nx,a,maybe\n", r"q\.csv, row 1, line 2, field 'expect'"),
    ("query,gold\n,a\n", r"row 1, line 2, field 'query': is empty"),
    ("", r"contains no queries"),
])
def test_csv_errors_name_the_file_line_and_fix(tmp_path: Path, text: str, pattern: str) -> None:
    file = tmp_path / "q.csv"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(QueryError, match=pattern):
        load_queries(file)


# ------------------------------------------------------------------------------------ edit effect (pure)
def outcome(query: str, gold: tuple[str, ...], returned: tuple[str, ...], decision: Decision,
            expect: Decision | None = None) -> QueryOutcome:
    return QueryOutcome(QueryRow(query, gold, expect=expect), returned, decision)


def test_compare_reports_row_by_row() -> None:
    before = [outcome("a", ("t1",), ("t2", "t1"), E), outcome("b", ("t1",), ("t1",), E),
              outcome("c", (), ("t1",), E, N), outcome("d", ("t3",), ("t3", "t1"), C, E),
              outcome("e", ("t2",), ("t2",), E)]
    after = [outcome("a", ("t1",), ("t1", "t2"), E),  # rank 2 -> 1: NDCG@10 0.631 -> 1.0, improved
             outcome("b", ("t1",), ("t2", "t1"), E),  # rank 1 -> 2: regressed
             outcome("c", (), (), N, N),  # no gold: the decision became right, improved
             outcome("d", ("t3",), ("t3", "t1"), E, E),  # same NDCG, decision now right: improved
             outcome("e", ("t2",), ("t2",), E)]
    changes = compare_reports(EvalReport({"recall@1": 0.5}, 5, before), EvalReport({"recall@1": 0.75}, 5, after))
    assert [c.verdict for c in changes.changes] == ["improved", "regressed", "improved", "improved", "same"]
    assert changes.summary() == "3 improved, 1 regressed, 1 unchanged of 5 labelled requests"
    assert changes.to_json()["changes"][1] == {"query": "b", "gold": ["t1"], "verdict": "regressed",
                                               "rank_before": 1, "rank_after": 2, "decision_before": "EXECUTE",
                                               "decision_after": "EXECUTE"}
    assert [gold_rank(o) for o in before] == [2, 1, None, 1, 1]
    assert [is_failing(o) for o in before] == [True, False, True, True, False]
    assert [o.row.query for o in failing(EvalReport({}, 5, before))] == ["a", "c", "d"]
    with pytest.raises(ValueError, match="same labelled rows"):
        compare_reports(EvalReport({}, 1, before[:1]), EvalReport({}, 1, after[1:2]))


def test_figures_never_raise() -> None:
    for fig in (retrievability_figure(None), tuning_figure(None, base=None), threshold_figure(None)):  # type: ignore[arg-type]
        assert "Could not draw this figure" in fig.layout.annotations[0].text


# ---------------------------------------------------------------------------------------- real models
@pytest.fixture(scope="module")
def small_queries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("small-queries") / "queries.csv"
    file.write_text(SMALL_CSV, encoding="utf-8")
    return file


@pytest.fixture(scope="module")
def report(small_retriever: Any, small_queries: Path, data_dir: Path) -> Any:
    from toolrag.evaluation.loo import RetrievabilityChecker
    from toolrag.evaluation.report import build_report

    checker = RetrievabilityChecker(cache_dir=data_dir / "retrievability")  # the folder toolrag report uses
    return build_report(small_retriever, rows=load_queries(small_queries), checker=checker, tune=True, step=0.25)


@pytest.mark.slow
def test_build_report_holds_retrievability_labelled_metrics_and_tuning(report: Any, small_retriever: Any) -> None:
    from toolrag.evaluation.evaluator import Evaluator

    assert report.retrievability.health.n_examples == 21
    rows = [o.row for o in report.evaluation.per_query]
    assert report.evaluation.metrics == Evaluator(rows)(small_retriever).metrics  # the Evaluator's own numbers
    assert {"found_first", "found_top5", "mrr", "tools_found", "recall@5", "ndcg@10"} <= set(report.figures())
    assert report.tuning is not None and len(report.tuning.candidates) == 15  # 3 signals at step 0.25
    assert report.threshold is not None and report.threshold.curve  # rows of both kinds
    data = json.loads(json.dumps(report.to_json()))
    assert data["figures"]["found_first"] == pytest.approx(report.retrievability.health.found_first, abs=1e-6)
    assert len(data["tuning"]["grid"]) == 15 and data["precision_target"]["curve"]


@pytest.mark.slow
def test_html_report_is_self_contained(report: Any) -> None:
    from toolrag.evaluation.html_report import render_html

    page = render_html(report)
    assert page.startswith("<!DOCTYPE html>") and "Plotly.newPlot" in page and len(page) > 1_000_000
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=[\"']?(https?:)?//", page)  # nothing fetched
    assert page.count('class="plotly-graph-div"') == 3  # retrievability, tuning, threshold
    for tool in report.retrievability.health.at_risk:
        assert tool in page


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_cli_report_writes_html_and_json_and_gates_on_health(capsys: pytest.CaptureFixture[str], report: Any,
                                                            small_catalog_dir: Path, small_queries: Path,
                                                            data_dir: Path, tmp_path: Path) -> None:
    base = ["report", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir)]
    out = tmp_path / "report.html"
    code, stdout, err = run(capsys, *base, "--queries", str(small_queries), "--out", str(out), "--json",
                            "--fail-under", "found_first=0.5", "--fail-under", "recall@5=50%")
    payload = json.loads(stdout)
    figures = payload["figures"]
    assert figures["found_first"] == pytest.approx(report.retrievability.health.found_first, abs=1e-6)
    assert payload["retrievability"]["cost"]["encoded"] == 0  # the report fixture's cache, same folder
    assert code == (0 if figures["found_first"] >= 0.5 and figures["recall@5"] >= 0.5 else 1)
    assert out.is_file() and "Plotly.newPlot" in out.read_text(encoding="utf-8") and f"wrote {out}" in err
    code, stdout, err = run(capsys, *base, "--fail-under", "found_first=100%")
    assert stdout.splitlines()[0].startswith("7 tools, 21 example requests")
    assert code == (0 if figures["found_first"] == 1.0 else 1)
    if code:
        assert re.search(r"toolrag: fail-under: found_first = 0\.\d{4} < 1\.0000", err)
    assert run(capsys, *base, "--fail-under", "foundfirst=0.8")[0] == 2
    code, _, err = run(capsys, *base, "--fail-under", "recall@5=0.8")
    assert code == 2 and "needs labelled requests: add --queries" in err


@pytest.mark.slow
def test_report_as_a_role_names_no_tool_the_role_cannot_use(small_catalog_dir: Path, tmp_path: Path) -> None:
    """The probe's ``toolrag report --role employee --json``: no section (retrievability, confusions, look-alikes,
    lint, labelled requests) names a tool the role may not use; the author's report (no --role) does."""
    import shutil
    import subprocess
    import sys

    from conftest import ROOT

    catalog = tmp_path / "catalog"
    shutil.copytree(small_catalog_dir, catalog)
    tools = catalog / "tools.yaml"  # a public tool whose text names the restricted one: a lint warning about it
    tools.write_text(tools.read_text(encoding="utf-8").replace(
        "description: Book a meeting room for a time slot and invite attendees.",
        "description: Book a meeting room for a time slot and invite attendees (payroll runs use "
        "hr.payroll.approve)."), encoding="utf-8")
    queries = tmp_path / "queries.csv"
    queries.write_text(SMALL_CSV + "approve this month's payroll,hr.payroll.approve,execute\n"
                       "book a room for the payroll meeting,calendar.book,\n", encoding="utf-8")
    data = tmp_path / "data"

    def report(*extra: str) -> tuple[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRAG_")}
        proc = subprocess.run([sys.executable, "-m", "toolrag", "report", "--catalog", str(catalog), "--data-dir",
                               str(data), "--queries", str(queries), "--json", *extra], cwd=ROOT, env=env,
                              capture_output=True, encoding="utf-8", timeout=600)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout, proc.stderr

    author, _ = report()
    assert "hr.payroll.approve" in author and "names-restricted-tool" in author  # the filter has work to do
    employee, err = report("--role", "employee")
    assert "hr.payroll.approve" not in employee and "approve_payroll" not in employee
    # searched as the employee, and nothing said about the tools it may not use (not even how many)
    assert "report as role 'employee': every section is what that caller's own searches give" in err
    assert "1 tools" not in err and "may not use" not in err
    payload = json.loads(employee)
    assert payload["retrievability"]["health"]["n_tools"] == 6  # 7 in use, one of them for HR managers only
    assert [q["query"] for q in payload["evaluation"]["per_query"]][-1] == "book a room for the payroll meeting"
    assert payload["evaluation"]["n_queries"] == 6  # the payroll row left out, the others searched as employee
    assert not any(w["code"] == "names-restricted-tool" for w in payload["retrievability"]["lint"])
