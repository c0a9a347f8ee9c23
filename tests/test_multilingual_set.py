"""The multilingual labelled set (sample_tools/queries_multilingual.yaml) and the per-language report of an
evaluation (issue 43): pure logic and the real file, no models."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from toolrag.catalog.loader import load_catalog
from toolrag.errors import QueryError
from toolrag.evaluation.evaluator import QueryOutcome, evaluate
from toolrag.evaluation.queries import QueryRow, load_queries
from toolrag.search.results import Decision

REPO = Path(__file__).resolve().parents[1]
LANGS = {"en", "ja", "ko", "ru", "es", "de", "fr", "pt", "vi"}


def test_the_set_loads_and_every_gold_id_exists() -> None:
    rows = load_queries(REPO / "sample_tools" / "queries_multilingual.yaml")
    catalog = load_catalog(REPO / "sample_tools")
    counts = Counter(r.lang for r in rows)
    assert set(counts) == LANGS and set(counts.values()) == {30}
    assert {g for r in rows for g in r.gold} <= set(catalog.ids)
    # every translation keeps the labels of its English row (rows come in groups of nine, English first)
    for start in range(0, len(rows), len(LANGS)):
        group = rows[start:start + len(LANGS)]
        assert group[0].lang == "en"
        assert {(r.gold, r.expect, r.permissions) for r in group} == {(group[0].gold, group[0].expect,
                                                                         group[0].permissions)}
    english = {r.query for r in load_queries(REPO / "sample_tools" / "queries.yaml")}
    assert {r.query for r in rows if r.lang == "en"} <= english
    assert Counter(r.expect for r in rows if r.lang == "en") == {Decision.EXECUTE: 18, Decision.CLARIFY: 6,
                                                                 Decision.NO_TOOL: 6}


@pytest.mark.parametrize("value", ["RU", "russian", "r", 7, "ru_RU"])
def test_a_bad_lang_is_refused_with_its_line(tmp_path: Path, value: object) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(f"- query: hola\n  gold: []\n  lang: {value}\n", encoding="utf-8")
    with pytest.raises(QueryError, match=r"row 1, line 3, field 'lang'.*ISO 639") as info:
        load_queries(path)
    assert info.value.field == "lang"


def test_lang_tags_are_read(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("query,gold,lang\nhola,a,es\nolá,a,pt-BR\nhello,a,\n", encoding="utf-8")
    assert [r.lang for r in load_queries(path)] == ["es", "pt-BR", None]


def test_the_language_table_compares_each_language_with_english() -> None:
    rows = [QueryRow("a", ("t1",), expect=Decision.EXECUTE, lang="en"),
            QueryRow("b", ("t2",), expect=Decision.EXECUTE, lang="en"),
            QueryRow("c", (), expect=Decision.NO_TOOL, lang="en"),
            QueryRow("a'", ("t1",), expect=Decision.EXECUTE, lang="ru"),
            QueryRow("b'", ("t2",), expect=Decision.EXECUTE, lang="ru"),
            QueryRow("c'", (), expect=Decision.NO_TOOL, lang="ru"),
            QueryRow("d", ("t3",))]
    got = {"a": (("t1", "t2"), Decision.EXECUTE, ("t1",)), "b": (("t2",), Decision.CLARIFY, ("t2", "t9")),
           "c": (("t1",), Decision.NO_TOOL, ()), "a'": (("t2", "t1"), Decision.EXECUTE, ("t2",)),
           "b'": (("t2",), Decision.NO_TOOL, ()), "c'": (("t1",), Decision.EXECUTE, ("t1",)),
           "d": (("t3",), Decision.EXECUTE, ("t3",))}
    report = evaluate(lambda r: QueryOutcome(r, *got[r.query]), rows)
    lines = {line.lang: line for line in report.languages()}
    assert [line.lang for line in report.languages()] == ["en", "ru"]  # English first; untagged rows left out
    en, ru = lines["en"], lines["ru"]
    assert (en.rows, en.top1, en.injected, en.decision_accuracy) == (3, 1.0, 1.0, 2 / 3)
    assert (ru.rows, ru.top1, ru.injected, ru.decision_accuracy) == (3, 0.5, 0.0, 1 / 3)
    table = report.format_languages()
    assert "ru" in table and "(-50.0)" in table and "(-100.0)" in table
    data = report.to_json(n_tools=3)
    assert data["languages"][1] == {"lang": "ru", "rows": 3, "top1": 0.5, "injected": 0.0,
                                    "decision_accuracy": 1 / 3}
    assert data["per_query"][0]["lang"] == "en" and data["per_query"][0]["selected"] == ["t1"]
    assert "lang" not in data["per_query"][-1]
