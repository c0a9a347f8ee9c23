"""Sanity guard: the shipped hybrid must keep its recall on a fixed slice of a public benchmark.

The slice (``tests/data/metatool``, MIT, origin in its README): MetaTool's 199 tools and 200 of its single-tool
queries (every 103rd row of ``all_clean_data.csv``), converted by ``bench/datasets.py``'s MetaTool conversion
and loaded through the normal catalog and query loaders, then scored by the evaluator behind ``toolrag eval``
with the default settings and the real models. The test fails when Recall@5 falls below the value recorded
for this slice minus ``MARGIN``: a change to the fusion, the defaults, the document text or the tokenizer that
costs retrieval quality shows up here before the full benchmark (``python -m bench.quality``) is re-run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.datasets import GUARD_QUERIES, metatool_rows, metatool_tools, write_json, write_jsonl  # noqa: E402

pytestmark = pytest.mark.slow  # real models or a real Chroma index

SLICE = ROOT / "tests" / "data" / "metatool"
#: Recall@5 of the shipped defaults on this slice, recorded with `python -m bench.quality --sets
#: metatool_guard --methods hybrid` (docs/benchmarks.md); re-record it there when a change is meant to move it.
RECORDED_RECALL_AT_5 = 0.800
#: Allowed drop: 3 of the 200 queries (0.015) plus run-to-run noise of the packaged models across machines.
MARGIN = 0.02


@pytest.fixture(scope="module")
def guard_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("metatool-guard")
    write_json(folder / "catalog" / "tools.json", metatool_tools(SLICE / "plugin_des.json"))  # as published
    write_jsonl(folder / "guard.jsonl", metatool_rows(SLICE / "guard.csv"))
    return folder / "catalog", folder / "guard.jsonl"


def test_default_hybrid_keeps_its_recall_on_the_metatool_slice(
    guard_set: tuple[Path, Path], data_dir: Path, models: object
) -> None:
    from toolrag import Evaluator, load_catalog, load_queries
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    catalog_dir, queries_file = guard_set
    catalog = load_catalog(catalog_dir)
    rows = load_queries(queries_file)
    assert len(catalog) == 199
    assert len(rows) == GUARD_QUERIES
    assert all(catalog.get(g) is not None for r in rows for g in r.gold)
    retriever = ToolRetriever.from_catalog(catalog, settings=Settings(), data_dir=data_dir,
                                           models=models)  # type: ignore[arg-type]
    report = retriever.evaluate(Evaluator(rows))
    recall = report.metrics["recall@5"]
    assert 0.0 <= report.metrics["recall@1"] <= recall <= report.metrics["recall@10"] <= 1.0
    floor = RECORDED_RECALL_AT_5 - MARGIN
    assert recall >= floor, (
        f"default hybrid Recall@5 on the MetaTool guard slice is {recall:.3f}, below the recorded "
        f"{RECORDED_RECALL_AT_5:.3f} - {MARGIN} = {floor:.3f}; run `python -m bench.quality` to see which set and "
        "signal lost quality (docs/benchmarks.md)"
    )
