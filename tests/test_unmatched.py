"""Real traffic back to the author: ``toolrag audit --unmatched`` over a log written by real searches, the grouping
rules on hand-made records, labelling (a validated append that refuses a bad row and leaves the file as it was;
an example through the catalog editor) and the Evaluate tab's handlers, including the redaction setting."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from toolrag.audit import AuditLog, read_audit
from toolrag.cli.main import main
from toolrag.config import audit_hashes_requests
from toolrag.errors import QueryError, SettingsError
from toolrag.evaluation.queries import load_queries
from toolrag.evaluation.unmatched import add_labelled_query, find_unmatched, read_unmatched
from toolrag.search.results import Decision
from toolrag.search.retriever import ToolRetriever

pytest_plugins = ["ui_support"]


def record(text: str | None, decision: str, nearest: str | None, *, right: float | None = None,
           role: str | None = None) -> dict[str, Any]:
    request = {"request": text} if text is not None else {"request_sha256": hashlib.sha256(b"x").hexdigest()}
    return {"kind": "search", "time": "2026-12-01T10:00:00Z", "role": role, **request, "decision": decision,
            "probabilities": None if right is None else {"right": right, "ambiguous": 0.1, "no_tool": 0.1},
            "returned": [{"id": nearest, "score": 1.0}] if nearest else []}


def test_grouping_by_nearest_tool_with_counts_threshold_and_hashes() -> None:
    records = [record("tell me a joke", "NO_TOOL", "web.news"), record("tell me a joke", "NO_TOOL", "web.news"),
               record("tell me a joke", "NO_TOOL", "web.news", role="employee"),
               record("process this invoice", "CLARIFY", "invoice.verify"),
               record("weather in Paris", "EXECUTE", "weather.now", right=0.4),
               record("weather in Rome", "EXECUTE", "weather.now", right=0.9),
               record(None, "NO_TOOL", "web.news"), record("nothing back", "NO_TOOL", None),
               {"kind": "call", "tool": "weather.now", "outcome": "ok"}]
    report = find_unmatched(records)
    assert report.searches == 8 and report.redacted == 1 and report.listed == 6
    assert [(g.tool_id, g.count) for g in report.groups] == [("web.news", 4), ("invoice.verify", 1), (None, 1)]
    jokes = report.groups[0].requests  # most often first, then by text
    assert [(r.label[:9], r.role, r.count) for r in jokes] == [
        ("tell me a", None, 2), ("(redacted", None, 1), ("tell me a", "employee", 1)]
    assert jokes[1].text is None and jokes[1].label.startswith("(redacted: sha256")
    below = find_unmatched(records, below=0.5)
    weather = [g for g in below.groups if g.tool_id == "weather.now"]
    assert [(r.label, r.why) for r in weather[0].requests] == [("weather in Paris", "P(right) 0.40")]  # not 0.9
    assert "keep only a hash" in report.summary()
    with pytest.raises(SettingsError, match="between 0 and 1"):
        find_unmatched(records, below=1.5)


@pytest.mark.slow
def test_cli_lists_real_unmatched_requests_with_their_nearest_tool(small_retriever: Any, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    retriever = ToolRetriever(small_retriever.index, audit=audit, decider=small_retriever.decider)
    results = {q: retriever.search(q, role=role) for q, role in [
        ("tell me a joke", None), ("what's the weather in Paris now", None), ("approve this month's payroll",
                                                                              "employee")]}
    assert audit.flush()
    logged = list(read_audit(audit.path))
    assert all(r["probabilities"] is not None and "right" in r["probabilities"] for r in logged)
    assert main(["audit", "--unmatched", "--log", str(audit.path), "--below", "0.99"]) == 0
    out = capsys.readouterr().out
    for query, result in results.items():
        if result.decision is not Decision.EXECUTE or result.scores.right < 0.99:
            assert query in out and f"near {result.ids[0]}" in out
    assert "hr.payroll.approve" not in out  # the employee's request names no tool it cannot see
    assert main(["audit", "--unmatched", "--log", str(audit.path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["searches"] == 3 and data["listed"] == read_unmatched(audit.path).listed
    assert main(["audit", "--log", str(audit.path), "--below", "0.5"]) == 2  # --below needs --unmatched
    assert main(["audit", "--unmatched", "--log", str(tmp_path / "missing.jsonl")]) == 2


@pytest.mark.parametrize("suffix", [".yaml", ".jsonl", ".csv"])
def test_labelling_appends_a_validated_row(tmp_path: Path, suffix: str) -> None:
    file = tmp_path / f"queries{suffix}"
    add_labelled_query(file, "tell me a joke", gold=[], expect=Decision.NO_TOOL)
    add_labelled_query(file, "把这张发票报销掉, \"quoted\"", gold=["finance.expense.submit"], expect=Decision.EXECUTE,
                       role="employee")
    rows = load_queries(file)
    assert [(r.query, r.gold, r.expect, r.role) for r in rows] == [
        ("tell me a joke", (), Decision.NO_TOOL, None),
        ("把这张发票报销掉, \"quoted\"", ("finance.expense.submit",), Decision.EXECUTE, "employee")]
    before = file.read_bytes()
    with pytest.raises(QueryError, match="not in the catalog"):
        add_labelled_query(file, "x", gold=["nope"], catalog_tools=["a", "b"])
    with pytest.raises(QueryError, match="redacted request cannot be labelled"):
        add_labelled_query(file, "", gold=[])
    assert file.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".toolrag-label-")]  # no temp file left


def test_a_row_that_would_break_the_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "queries.yaml"
    file.write_text("- query: fine\n  gold: []\n", encoding="utf-8")
    with pytest.raises(QueryError, match="the labelled row was not added.*EXECUTE but gold is empty"):
        add_labelled_query(file, "call what?", gold=[], expect=Decision.EXECUTE)  # the reader refuses the row
    assert file.read_text(encoding="utf-8") == "- query: fine\n  gold: []\n"


def test_redaction_setting_is_read_through_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLRAG_AUDIT_LOG", str(tmp_path / "a.jsonl"))
    monkeypatch.setenv("TOOLRAG_AUDIT_REQUESTS", "hash")
    assert audit_hashes_requests() and AuditLog.from_env().hash_requests  # type: ignore[union-attr]
    monkeypatch.setenv("TOOLRAG_AUDIT_REQUESTS", "sometimes")
    with pytest.raises(SettingsError, match="TOOLRAG_AUDIT_REQUESTS='sometimes'"):
        audit_hashes_requests()
    monkeypatch.delenv("TOOLRAG_AUDIT_REQUESTS")
    assert not audit_hashes_requests()


@pytest.mark.slow
def test_labelling_as_an_example_goes_through_the_editor_and_shows_its_effect(ui_backend: Any,
                                                                              tmp_path: Path) -> None:
    import gradio as gr  # here, not at the top: the quick tier collects this file without importing gradio
    from test_ui_studio import controls

    from toolrag.ui.evaluate_handlers import StudioHandlers
    from toolrag.ui.evaluate_unmatched import AS_EXAMPLE, UnmatchedHandlers
    from toolrag.ui.handlers import Handlers
    from toolrag.ui.studio import Studio

    retriever = ui_backend.retriever
    request = "will the weather be sunny in Frankfurt on Thursday and Friday?"
    tool = "travel.weather.forecast"
    original = ui_backend.editor.profile_yaml(tool)
    retriever.audit = AuditLog(tmp_path / "audit.jsonl")
    try:
        before = retriever.rank_of(tool, request)
        retriever.search(request)
        uh = UnmatchedHandlers(StudioHandlers(Handlers(ui_backend), Studio(ui_backend)))
        summary, frame, state = uh.show(1.0, {})  # every call is below P(right) 1: all listed
        assert "1 of 1 searches unmatched" in summary and frame.iloc[0]["request"] == request
        text, proposed, state = uh.pick(gr.SelectData(None, {"index": [0, 1], "value": ""}), state)
        assert request in text and proposed["value"] == frame.iloc[0]["nearest tool"]
        result, _, changes, state = uh.label(lambda *a, **k: None, AS_EXAMPLE, tool, state, *controls())
        assert list(changes.columns) == ["change", "request", "expected", "rank", "decision"]
        assert f"Added as an example of `{tool}`" in result and "Retrievability of" in result
        assert request in ui_backend.editor.profile_yaml(tool)
        assert retriever.rank_of(tool, request) <= before
        with pytest.raises(gr.Error, match="already an example"):
            uh.label(lambda *a, **k: None, AS_EXAMPLE, tool, state, *controls())
        retriever.audit.hash_requests = True
        retriever.search("a secret request")
        summary, frame, state = uh.show(0.0, state)
        assert "Request text is redacted" in summary and "a secret request" not in frame.to_string()
    finally:
        retriever.audit = None
        ui_backend.editor.save(tool, original)
