"""The command line on imported catalogs: strict/lenient flags, lint, the load counts, empty catalogs, the
settings file's null, the audit log and its summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolrag.catalog.names import FUNCTION_NAME
from toolrag.cli import main

IMPORTED = [
    {"type": "function", "function": {"name": "getPM2.5Level", "description": "Air quality: the PM2.5 level of a "
                                      "city today", "parameters": {"type": "object", "properties": {
                                          "city": {"type": "str", "description": "city name"}}}}},
    {"type": "function", "function": {"name": "get_rates.", "description": "Currency exchange rates between two "
                                      "currencies"}},
    {"type": "function", "function": {"name": "no_description"}},
    {"type": "function", "function": {"description": "A tool without a name cannot be called"}},
]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def imported(tmp_path: Path) -> Path:
    folder = tmp_path / "imported"
    folder.mkdir()
    (folder / "tools.json").write_text(json.dumps(IMPORTED), encoding="utf-8")
    return folder


def test_lint_lists_every_problem_and_strict_exits_2(capsys: pytest.CaptureFixture[str], imported: Path) -> None:
    code, out, _ = run(capsys, "lint", "--catalog", str(imported))
    assert code == 0
    # a published tool without a description is kept, findable by its name, and the lint says so
    assert ("tool 'no_description': field 'description': is required; using 'No description' (its name and "
            "parameters) so requests can still find the tool: write a description") in out
    assert "tool 'getPM2.5Level': field 'parameters': dropped properties/city/type" in out
    assert "tool without id: field 'function.name': is required; tool skipped" in out
    assert out.splitlines()[-1].startswith("3 tools loaded, 1 skipped, 2 degraded; ")
    code, out, err = run(capsys, "lint", "--catalog", str(imported), "--strict")
    assert code == 2 and err.startswith("toolrag: ")
    assert "field 'description': is required" in out and "not a valid JSON Schema at properties/city/type" in out
    code, out, _ = run(capsys, "lint", "--catalog", str(imported), "--json")
    assert json.loads(out)["load"]["skipped"] == 1 and json.loads(out)["load"]["degraded"] == 2


def test_lenient_flag_loads_a_broken_yaml_catalog(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("- id: a\n  description: a tool with a bad tag list\n  tags: 3\n",
                                     encoding="utf-8")
    assert run(capsys, "lint", "--catalog", str(tmp_path))[0] == 2
    code, out, _ = run(capsys, "lint", "--catalog", str(tmp_path), "--lenient")
    assert code == 0 and "1 tools loaded, 0 skipped, 1 degraded" in out


@pytest.mark.slow
def test_search_reports_counts_and_maps_function_names_back(capsys: pytest.CaptureFixture[str], imported: Path,
                                                            tmp_path: Path) -> None:
    code, out, err = run(capsys, "search", "--catalog", str(imported), "--data-dir", str(tmp_path / "d"),
                         "--json", "what is the PM2.5 air quality in Beijing")
    assert code == 0
    assert "catalog imported: 3 tools loaded, 1 skipped, 2 degraded" in err
    payload = json.loads(out)
    top = payload["candidates"][0]
    assert top["id"] == top["name"] == "getPM2.5Level"  # the original name, what tools/call needs
    assert FUNCTION_NAME.match(top["function_name"]) and top["function_name"] != top["name"]
    assert payload["tools"][0]["function"]["name"] == top["function_name"]
    assert all(FUNCTION_NAME.match(t["function"]["name"]) for t in payload["tools"])


@pytest.mark.parametrize("content", [None, "[]", {"catalog.yaml": "name: x\n"}])
def test_a_catalog_without_tools_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                         content: str | dict[str, str] | None) -> None:
    folder = tmp_path / "cat"
    folder.mkdir()
    if isinstance(content, str):
        (folder / "tools.json").write_text(content, encoding="utf-8")
    elif content:
        for name, text in content.items():
            (folder / name).write_text(text, encoding="utf-8")
    code, _, err = run(capsys, "search", "--catalog", str(folder), "--data-dir", str(tmp_path / "d"), "x")
    assert code == 2 and err.startswith("toolrag: catalog") and "has no tools" in err and err.count("\n") == 1


@pytest.mark.slow
def test_settings_file_null_turns_the_english_model_off(capsys: pytest.CaptureFixture[str],
                                                         small_catalog_dir: Path, data_dir: Path,
                                                         tmp_path: Path) -> None:
    settings = tmp_path / "s.yaml"
    settings.write_text("english_model: null\n", encoding="utf-8")
    code, out, _ = run(capsys, "search", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                       "--settings", str(settings), "--json", "book a meeting room")
    assert code == 0
    payload = json.loads(out)
    assert "turned off" in payload["absent_signals"]["dense_en"]
    assert all("dense_en" not in c["signals"] for c in payload["candidates"])


@pytest.mark.slow
def test_audit_log_from_the_cli_and_its_summary(capsys: pytest.CaptureFixture[str], small_catalog_dir: Path,
                                                data_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "audit" / "audit.jsonl"
    for query in ("book a meeting room", "will it rain tomorrow in Berlin"):
        code, _, _ = run(capsys, "search", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                         "--audit-log", str(log), "--audit-requests", "hash", query)
        assert code == 0
    from toolrag.audit import _flush_all

    _flush_all()  # what the interpreter does at exit
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2 and all("request_sha256" in r and "request" not in r for r in records)
    code, out, _ = run(capsys, "audit", "--log", str(log))
    assert code == 0 and out.startswith("2 searches (") and out.count("\n") == 1
    code, _, err = run(capsys, "audit", "--log", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "no audit log at" in err


@pytest.mark.slow
def test_the_app_status_line_shows_skipped_and_degraded(imported: Path, tmp_path: Path, models: object) -> None:
    from toolrag.ui import Backend

    backend = Backend(imported, data_dir=tmp_path / "d", models=models)
    backend.build()
    status = backend.status_html()
    assert "ready: 3 tools indexed" in status and "(1 skipped, 2 degraded)" in status


def test_serve_needs_a_catalog_or_a_gateway(capsys: pytest.CaptureFixture[str], imported: Path) -> None:
    code, _, err = run(capsys, "serve")
    assert code == 2 and "serve what? give --catalog FOLDER" in err
    code, _, err = run(capsys, "serve", "--catalog", str(imported), "--gateway", "g.yaml")
    assert code == 2 and "not both" in err
    code, _, err = run(capsys, "serve", "--gateway", str(imported / "missing.yaml"))
    assert code == 2 and "cannot read gateway config" in err
