"""The ``toolrag`` command line, in-process (shares the loaded models) and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ASSETS, ROOT, SAMPLE

from toolrag.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_search_json_shape(capsys: pytest.CaptureFixture[str], small_catalog_dir: Path, data_dir: Path) -> None:
    code, out, _ = run(capsys, "search", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                       "--json", "--top-k", "3", "will it rain tomorrow in Berlin")
    assert code == 0
    payload = json.loads(out)
    assert {"decision", "clarification", "candidates", "filtered_out", "tokens", "timing_ms"} <= set(payload)
    assert payload["candidates"][0]["id"] == "weather.forecast"
    assert len(payload["candidates"]) == 3
    signal = payload["candidates"][0]["signals"]["dense"]
    assert set(signal) == {"raw", "norm", "rank", "weight", "contribution"}
    assert set(payload["tokens"]) >= {"selected", "all"}


@pytest.mark.slow
def test_search_text_output_with_image_and_role(capsys: pytest.CaptureFixture[str], small_catalog_dir: Path,
                                                data_dir: Path) -> None:
    code, out, _ = run(capsys, "search", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                       "--role", "employee", "帮我报销这张餐饮发票", "--image",
                       str(ASSETS / "queries" / "receipt_dinner.png"))
    assert code == 0
    assert out.splitlines()[0].startswith("decision: ")
    assert "finance.expense.submit" in out and "hr.payroll.approve" not in out
    assert "OCR read:" in out


@pytest.mark.slow
def test_weights_and_fusion_flags(capsys: pytest.CaptureFixture[str], small_catalog_dir: Path,
                                  data_dir: Path) -> None:
    code, out, _ = run(capsys, "search", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                       "--json", "--fusion", "rrf", "--weight", "bm25=0", "weather tomorrow")
    assert code == 0
    top = json.loads(out)["candidates"][0]
    assert top["signals"]["bm25"]["weight"] == 0.0 and top["signals"]["bm25"]["contribution"] == 0.0


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``toolrag --version`` says the version pyproject.toml gives the package."""
    import tomllib

    import toolrag

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert done.value.code == 0 and capsys.readouterr().out == f"toolrag {declared}\n"
    assert toolrag.__version__ == declared


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "--catalog", "SMALL", "   "], "empty query"),
        (["search", "--catalog", "SMALL", "x", "--role", "boss"], "unknown role 'boss'"),
        (["search", "--catalog", "SMALL", "x", "--weight", "bm25=lots"], "expected SIGNAL=NUMBER"),
        (["search", "--catalog", "SMALL", "x", "--image", "/nonexistent/receipt.png"], "receipt.png"),
        (["search", "--catalog", "/nonexistent/catalog", "x"], "does not exist"),
        (["eval", "--catalog", "SMALL", "--queries", "Q", "--fail-under", "recal@5=0.5"], "unknown metric"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], small_catalog_dir: Path,
                                         data_dir: Path, tmp_path: Path, args: list[str], message: str) -> None:
    queries = tmp_path / "q.yaml"
    queries.write_text("- {query: weather, gold: [weather.current]}\n", "utf-8")
    args = [str(small_catalog_dir) if a == "SMALL" else str(queries) if a == "Q" else a for a in args]
    code, _, err = run(capsys, *args, "--data-dir", str(data_dir))
    assert code == 2
    # One line for the error (after the catalog's loaded/skipped/degraded line when the catalog loaded).
    error = [line for line in err.splitlines() if line.startswith("toolrag: ")]
    assert len(error) == 1 and err.splitlines()[-1] == error[0] and message in error[0]


@pytest.mark.slow
def test_eval_json_and_fail_under(capsys: pytest.CaptureFixture[str], small_catalog_dir: Path, data_dir: Path,
                                  tmp_path: Path) -> None:
    queries = tmp_path / "q.yaml"
    queries.write_text(
        "- {query: will it rain tomorrow in Berlin, gold: [weather.forecast], expect: EXECUTE}\n"
        "- {query: 北京现在天气, gold: [weather.current]}\n"
        "- {query: tell me a joke, gold: [], expect: NO_TOOL}\n"
        "- {query: book a meeting room for friday, gold: [dev.search.code]}\n", encoding="utf-8")
    code, out, _ = run(capsys, "eval", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                       "--queries", str(queries), "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["n_queries"] == 4 and payload["n_tools"] == 8
    assert [row["query"] for row in payload["per_query"]] == ["will it rain tomorrow in Berlin", "北京现在天气",
                                                             "tell me a joke", "book a meeting room for friday"]
    assert payload["per_query"][0]["returned"][0] == "weather.forecast"
    assert 0.0 <= payload["metrics"]["recall@5"] <= 1.0
    code, _, err = run(capsys, "eval", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                       "--queries", str(queries), "--fail-under", "recall@1=0.9")
    assert code == 1 and "recall@1" in err
    code, out, _ = run(capsys, "eval", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                       "--queries", str(queries), "--fail-under", "recall@10=50%")
    assert code == 0 and "recall@5" in out.lower()


@pytest.mark.slow
def test_index_reports_incremental_encoding(capsys: pytest.CaptureFixture[str], small_catalog_dir: Path,
                                            tmp_path: Path) -> None:
    fresh = tmp_path / "data"
    code, out, _ = run(capsys, "index", "--catalog", str(small_catalog_dir), "--data-dir", str(fresh))
    assert code == 0 and "indexed 8 tools" in out and "(0 texts/images encoded" not in out
    code, out, _ = run(capsys, "index", "--catalog", str(small_catalog_dir), "--data-dir", str(fresh))
    assert code == 0 and "(0 texts/images encoded" in out


def test_lint(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("- id: a\n  description: short\n  parameters: {type: object, properties: "
                                     "{x: {type: string}}}\n", encoding="utf-8")
    code, out, _ = run(capsys, "lint", "--catalog", str(tmp_path))
    assert code == 0
    assert "a: description has 5 characters" in out and "parameters without a description: x" in out
    (tmp_path / "t.yaml").write_text("- id: a\n  descriptin: x\n", "utf-8")
    code, out, err = run(capsys, "lint", "--catalog", str(tmp_path))
    assert code == 2 and "did you mean 'description'" in out and err.startswith("toolrag: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- id: a\n  description: [unclosed\n", "invalid YAML"),
        ("- id: a\n  description: d\n  tags: 3\n", "field 'tags': expected a list"),
        ("- id: a\n  description: d\n- id: a\n  description: e\n", "duplicate tool id 'a'"),
        ("- id: a\n  description: d\n  images: [{path: ../../etc/passwd, caption: x}]\n", "outside the catalog"),
        ("- id: a\n  description: d\n  parameters: {type: object, required: yes}\n", "not a valid JSON Schema"),
    ],
)
def test_broken_catalog_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str,
                                message: str) -> None:
    (tmp_path / "tools.yaml").write_text(text, "utf-8")
    code, _, err = run(capsys, "search", "--catalog", str(tmp_path), "--data-dir", str(tmp_path / "d"), "x")
    assert code == 2 and err.startswith("toolrag: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()  # nothing indexed from a catalog that fails validation


def test_sample_catalog_lints_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "lint", "--catalog", str(SAMPLE), "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["n_tools"] >= 60
    assert [w for w in payload["warnings"] if w["code"] != "no-negative-examples"] == []


@pytest.mark.slow
def test_console_entry_point_as_subprocess(small_catalog_dir: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    data = str(tmp_path / "data")
    done = subprocess.run([sys.executable, "-m", "toolrag", "search", "--catalog", str(small_catalog_dir),
                           "--data-dir", data, "--json", "book a meeting room"],
                          capture_output=True, encoding="utf-8", cwd=ROOT, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    payload: dict[str, Any] = json.loads(done.stdout)
    assert payload["candidates"][0]["id"] == "calendar.book"
    bad = subprocess.run([sys.executable, "-m", "toolrag", "search", "--catalog", str(small_catalog_dir),
                          "--data-dir", data, ""],
                         capture_output=True, encoding="utf-8", cwd=ROOT, env=env, timeout=600)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("toolrag: empty query")
    assert "Traceback" not in bad.stderr


@pytest.mark.slow
def test_text_search_on_a_built_index_loads_no_image_network(small_retriever: Any, small_catalog_dir: Path,
                                                              data_dir: Path) -> None:
    # The image model loads on the first image it reads: a one-shot text search from the CLI, on an index whose
    # example images are encoded already, starts without torch (about 3 s of its start-up before).
    code = ("import sys; from toolrag.cli.main import main; "
            f"rc = main(['search', '--catalog', {str(small_catalog_dir)!r}, '--data-dir', {str(data_dir)!r}, "
            "'--json', 'book a meeting room']); print('torch' in sys.modules, file=sys.stderr); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, encoding="utf-8", cwd=ROOT,
                          env=dict(os.environ), timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["candidates"][0]["id"] == "calendar.book"
    assert done.stderr.strip().splitlines()[-1] == "False", done.stderr
    # with an image the network loads, and the image's signals are scored
    image = small_retriever.search("what is this receipt", image=ASSETS / "receipt_zh.png")
    assert "visual" not in image.absent_signals and image.candidates
