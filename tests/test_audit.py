"""The audit log: records of real searches, hashing, rotation, a folder that cannot be written, the summary."""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from toolrag.audit import AuditLog, read_audit, summarize
from toolrag.errors import SettingsError
from toolrag.search.retriever import ToolRetriever


@pytest.mark.slow
def test_every_search_is_recorded_without_names_of_hidden_tools(small_retriever: Any, tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    retriever = ToolRetriever(small_retriever.index, audit=audit)  # the same index, with an audit log
    result = retriever.search("approve this month's payroll", role="employee", top_k=3)
    retriever.search("will it rain tomorrow in Berlin", top_k=2)
    assert retriever.rank_of("weather.forecast", "rain tomorrow") is not None  # an internal probe: not audited
    assert audit.flush()
    first, second = list(read_audit(audit.path))
    assert first["kind"] == "search" and first["role"] == "employee"
    assert first["request"] == "approve this month's payroll" and first["image"] is False
    assert first["decision"] == result.decision.value and "reason" in first
    assert [r["id"] for r in first["returned"]] == result.ids
    assert first["returned"][0]["score"] == pytest.approx(result.candidates[0].score, abs=1e-4)
    # The employee cannot see hr.payroll.approve or the deprecated tool: a count, never a name.
    assert first["filtered"] == 2 and "hr.payroll.approve" not in json.dumps(first)
    assert first["latency_ms"] > 0 and first["time"].endswith("Z")
    assert second["role"] is None and len(second["returned"]) == 2


def test_requests_can_be_kept_as_hashes(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "a.jsonl", hash_requests=True)
    assert audit.request_fields("secret plan") == {
        "request_sha256": hashlib.sha256(b"secret plan").hexdigest()}
    audit.write({"kind": "search", **audit.request_fields("secret plan"), "decision": "EXECUTE"})
    assert audit.flush() and "secret plan" not in audit.path.read_text(encoding="utf-8")


def test_rotation_by_size_keeps_every_record_readable(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "a.jsonl", max_bytes=300, backups=10)
    for n in range(20):
        audit.write({"kind": "search", "n": n, "decision": "EXECUTE", "latency_ms": float(n)})
    assert audit.flush()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert "a.jsonl.1" in files and all((tmp_path / f).stat().st_size <= 300 for f in files)
    assert [r["n"] for r in read_audit(audit.path)] == list(range(20))  # oldest first, across the files
    summary = summarize(audit.path)
    assert summary.searches == 20 and summary.decisions == {"EXECUTE": 20}
    # Nearest rank: p50 = the 10th of 0..19 = 9, p95 = the 19th = 18.
    assert (summary.p50_ms, summary.p95_ms) == (9.0, 18.0)
    assert summary.line().startswith("20 searches (EXECUTE 20), 0 calls (none), search latency p50 9 ms p95 18 ms")


@pytest.mark.slow
def test_an_unwritable_folder_warns_once_and_searches_go_on(small_retriever: Any, tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", "utf-8")
    audit = AuditLog(blocker / "audit.jsonl")  # its folder is a file: nothing can be written there
    retriever = ToolRetriever(small_retriever.index, audit=audit)
    with caplog.at_level(logging.WARNING, logger="toolrag.audit"):
        for _ in range(3):
            assert retriever.search("book a meeting room").ids
            audit.flush()
    warnings = [r for r in caplog.records if r.name == "toolrag.audit"]
    assert len(warnings) == 1 and "audit log off: cannot write" in warnings[0].getMessage()
    assert audit.failed is not None and not blocker.joinpath("audit.jsonl").exists()


def test_summary_of_a_missing_log_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="no audit log at"):
        summarize(tmp_path / "none.jsonl")
    with pytest.raises(ValueError, match="must be positive"):
        AuditLog(tmp_path / "a.jsonl", max_bytes=0)


def audit_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolrag", "audit", *args], capture_output=True, encoding="utf-8",
                          cwd=ROOT, timeout=120)


@pytest.mark.slow
def test_a_file_that_is_not_an_audit_log_is_refused_not_summarised(tmp_path: Path) -> None:
    """The probe's ``toolrag audit --log`` on another file exited 0 printing None and nan."""
    for name, text in (("notes.txt", "just some notes\nnothing else\n"), ("other.jsonl", '{"a": 1}\n[1, 2]\n')):
        file = tmp_path / name
        file.write_text(text, "utf-8")
        done = audit_cli("--log", str(file))
        assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
        assert done.stderr == (f"toolrag: {file} is not a toolrag audit log: none of its 2 line(s) is a search or "
                               "call record; pass the JSON Lines file that --audit-log or TOOLRAG_AUDIT_LOG names\n")
    (tmp_path / "hosts").write_text('{"kind": "call", "outcome": "ok", "time": "2026-01-01T00:00:00Z"}\n', "utf-8")
    (tmp_path / "hosts.allow").write_text("not a rotated part of the log\n", "utf-8")  # only hosts.1, hosts.2, ... are
    done = audit_cli("--log", str(tmp_path / "hosts"))
    assert done.returncode == 0 and "None" not in done.stdout and "nan" not in done.stdout
    assert done.stdout.strip() == ("0 searches (none), 1 calls (ok 1), no search latency recorded, "
                                   "2026-01-01T00:00:00Z .. 2026-01-01T00:00:00Z")
    (tmp_path / "hosts").write_text('{"kind": "call", "outcome": "refused"}\ncut sho\n', "utf-8")
    summary = summarize(tmp_path / "hosts")
    assert summary.skipped == 1 and summary.line().endswith("; 1 line(s) that are not audit records skipped")


def test_unmatched_refuses_what_is_not_an_audit_log_and_counts_junk(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The probe's ``toolrag audit --unmatched`` on another file (or NUL bytes) said "0 of 2 searches unmatched"
    and exited 0; junk lines in a real log were counted as searches."""
    from toolrag.cli.main import main

    for name, data in (("notes.txt", b"just some notes\nnothing else\n"), ("other.jsonl", b'{"a": 1}\n[1, 2]\n'),
                       ("zeros.bin", b"\x00" * 64 + b"\n" + b"\x00" * 8)):
        file = tmp_path / name
        file.write_bytes(data)
        assert main(["audit", "--unmatched", "--log", str(file)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and f"{file} is not a toolrag audit log: none of its 2 line(s)" in err
    log = tmp_path / "audit.jsonl"
    search = {"kind": "search", "time": "2026-01-01T00:00:00Z", "request": "tell me a joke", "decision": "NO_TOOL",
              "returned": [{"id": "web.news", "score": 0.2}]}
    found = {**search, "request": "weather in Paris", "decision": "EXECUTE"}
    refused = {"kind": "search", "role": None, "outcome": "refused", "reason": "unknown token", "decision": None}
    log.write_text("\n".join([json.dumps(search), '{"a": 1}', "cut sho", json.dumps(found), json.dumps(refused),
                              "\x00\x00", json.dumps({"kind": "call", "tool": "x", "outcome": "ok"})]) + "\n",
                   encoding="utf-8")
    assert main(["audit", "--unmatched", "--log", str(log), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["searches"], report["listed"], report["skipped"]) == (2, 1, 3)  # junk skipped and counted
    assert main(["audit", "--unmatched", "--log", str(log)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("1 of 2 searches unmatched") and "3 line(s) that are not audit records skipped" in first
    assert main(["audit", "--log", str(log)]) == 0  # the summary reads the same records
    assert "3 line(s) that are not audit records skipped" in capsys.readouterr().out
