"""The commands the benchmark scripts write into docs/ name no path of the machine that ran them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import shown_command  # noqa: E402


@pytest.mark.parametrize(("raw", "shown"), [
    ([], "python -m bench.decisions"),
    (["--write-docs"], "python -m bench.decisions --write-docs"),
    (["--out", "results/x.json", "--write-docs"], "python -m bench.decisions --write-docs"),
    (["--out=results/x.json", "--sets", "bundled"], "python -m bench.decisions --sets bundled"),
    (["--bench-dir", "cache", "--benchmarks=../sets", "--limit", "50"],
     "python -m bench.decisions --limit 50"),
    # a value that merely looks like an option name is kept when it follows another option
    (["--sets", "bundled,seal_in", "--precision-target", "0.9"],
     "python -m bench.decisions --sets bundled,seal_in --precision-target 0.9"),
])
def test_shown_command_drops_machine_paths(raw: list[str], shown: str) -> None:
    assert shown_command("bench.decisions", raw) == shown


def test_the_latency_script_shows_its_command_the_same_way() -> None:
    assert shown_command("bench.latency", ["--bench-dir", "cache", "tokens", "--benchmarks", "../sets", "--n", "50"]) \
        == "python -m bench.latency tokens --n 50"


def test_every_script_parses_its_arguments_through_the_one_scaffold() -> None:
    """Each bench script with a main() builds its arguments with bench.common.parse_args."""
    scripts = [p for p in sorted((ROOT / "bench").glob("*.py")) if "\ndef main(" in p.read_text(encoding="utf-8")]
    assert len(scripts) >= 15
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        assert "parse_args(" in text and "ArgumentParser(" not in text, script.name


def test_parse_args_and_keep_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from bench.common import keep_results, parse_args

    def options(parser: Any) -> None:
        parser.add_argument("--limit", type=int, default=None)

    args = parse_args("bench.example", "an example", ["--bench-dir", str(tmp_path), "--out", str(tmp_path / "r.json"),
                                                      "--limit", "5", "--write-docs"], options, benchmarks=True,
                      results="example.json", docs="nothing")
    assert (args.limit, args.benchmarks, args.write_docs) == (5, None, True)
    assert args.command_line == "python -m bench.example --limit 5 --write-docs"
    written: list[dict[str, Any]] = []
    assert keep_results(args, {"n": 1}, "example.json", lambda r: f"| n | {r['n']} |", written.append) == 0
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8")) == {"n": 1}
    assert capsys.readouterr().out == "| n | 1 |\n" and written == [{"n": 1}]
    args = parse_args("bench.example", "an example", ["--bench-dir", str(tmp_path)], results="example.json")
    keep_results(args, {"n": 2}, "example.json", str)
    assert json.loads((tmp_path / "example.json").read_text(encoding="utf-8")) == {"n": 2}


def test_at_least_names_the_bound() -> None:
    import argparse

    from bench.common import at_least

    assert at_least(1)("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="must be at least 10, got 5"):
        at_least(10)("5")
    with pytest.raises(argparse.ArgumentTypeError, match="'x' is not a whole number"):
        at_least(0)("x")


def test_the_quality_table_has_one_rendering() -> None:
    from bench.quality_table import HEADER, quality_rows

    values = {"recall@5": 0.77694, "ndcg@5": 0.5, "ndcg@10": 0.69351, "completeness@5": 1.0, "mrr@10": 0.25}
    results = {"sets": {"seal_in": {"label": "Seal-Tools in-domain", "methods": {
        "hybrid": values, "rerank": {"skipped": "no cross-encoder offline"}}}}}
    assert quality_rows(results) == [*HEADER,
                                     "| Seal-Tools in-domain | **hybrid (shipped defaults)** | 77.69 | 50.00 | 69.35 | "
                                     "100.00 | 25.00 |",
                                     "|  | hybrid + rerank | n/a: no cross-encoder offline | | | | |"]
