"""The commands the benchmark scripts write into docs/ name no path of the machine that ran them."""

from __future__ import annotations

import sys
from pathlib import Path

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
    (["--sets", "bundled,seal_in", "--execute-share", "0.3"],
     "python -m bench.decisions --sets bundled,seal_in --execute-share 0.3"),
])
def test_shown_command_drops_machine_paths(raw: list[str], shown: str) -> None:
    assert shown_command("bench.decisions", raw) == shown


def test_the_latency_script_shows_its_command_the_same_way() -> None:
    assert shown_command("bench.latency", ["--bench-dir", "cache", "tokens", "--benchmarks", "../sets", "--n", "50"]) \
        == "python -m bench.latency tokens --n 50"
