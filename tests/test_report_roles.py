"""The catalog report as a role sees it, in the quick tier (the real report, checkers and search over the stub
index of tests/stub_index.py): a caller who sees no tool gets a report of no tool that says nothing about the
hidden ones; a caller who sees one tool is told it is found first (it can only be); and the report as a role
is the same, to the last digit, whether or not the catalog holds tools that role cannot see."""

from __future__ import annotations

import json
from typing import Any

from stub_index import stub_retriever
from test_orchestration import HIDDEN, ROLES, TOOLS, without_timing

from toolrag.catalog.loader import load_records
from toolrag.catalog.report import LoadMode
from toolrag.cli.report import format_report
from toolrag.evaluation.report import build_report

SECRET = {"id": "secret.payroll", "name": "secret_payroll", "category": "hr", "permissions": ["payroll.approve"],
          "description": "Approve the payroll run. Only for HR."}
OPEN = {"id": "open.rooms", "name": "book_room", "category": "office",
        "description": "Book a meeting room for a time slot. The room is held for you."}


def retriever(*tools: dict[str, Any]) -> Any:
    return stub_retriever(load_records(list(tools), name="roles", where="test", mode=LoadMode.STRICT, roles=ROLES))


def test_a_caller_who_sees_no_tool_is_told_so_and_nothing_about_hidden_tools() -> None:
    report = build_report(retriever(SECRET, {**SECRET, "id": "secret.two", "name": "secret_two"}), role="guest")
    text = format_report(report)
    assert report.retrievability.health.n_tools == 0 and report.label_free is None
    assert "no tool has example requests" not in text and "there is no tool to search for" in text
    data = json.dumps(report.to_json())
    assert "secret" not in data and "payroll" not in data.lower()


def test_the_one_tool_a_caller_sees_is_found_first() -> None:
    report = build_report(retriever(OPEN, SECRET), role="guest")  # guest sees one tool, without examples
    assert report.label_free is not None and [t.tool_id for t in report.label_free.tools] == ["open.rooms"]
    figures = report.label_free.figures()
    assert figures["estimated_found_first"] == 1.0 and figures["estimated_found_top5"] == 1.0
    author = build_report(retriever(OPEN, SECRET))  # two tools: an estimate, not a certainty
    assert author.label_free is not None and author.label_free.figures()["estimated_found_top5"] == 1.0
    assert "secret.payroll" in json.dumps(author.to_json())


def test_the_report_as_a_role_is_the_same_with_or_without_tools_it_cannot_see() -> None:
    plain = build_report(retriever(*TOOLS), role="employee", label_free="all")
    hidden = build_report(retriever(*TOOLS, *HIDDEN), role="employee", label_free="all")
    a, b = (json.dumps(without_timing(r.to_json()), sort_keys=True) for r in (plain, hidden))
    assert a == b
    assert "audit." not in b
    admin = build_report(retriever(*TOOLS, *HIDDEN), role="admin", label_free="all")
    assert "audit.meetings" in json.dumps(admin.to_json())
