"""Tests of toolrag.evaluation: metrics worked out by hand, query files and the evaluation loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolrag.errors import QueryError
from toolrag.evaluation.evaluator import EvalReport, QueryOutcome, evaluate
from toolrag.evaluation.metrics import METRIC_NAMES, completeness_at, mrr_at, ndcg_at, recall_at
from toolrag.evaluation.queries import QueryRow, load_queries
from toolrag.search.results import Decision

RET = ["a", "b", "c", "d"]
GOLD = {"b", "d"}  # relevant at ranks 2 and 4


# ------------------------------------------------------------------------------------------------ metrics
def test_recall() -> None:
    assert recall_at(RET, GOLD, 1) == 0.0  # top-1 {a}: 0/2
    assert recall_at(RET, GOLD, 2) == 0.5  # {a,b}: 1/2
    assert recall_at(RET, GOLD, 5) == 1.0  # {a,b,c,d}: 2/2


def test_ndcg() -> None:
    # DCG@5 = 1/log2(3) + 1/log2(5) = 0.630930 + 0.430677 = 1.061606; IDCG = 1 + 1/log2(3) = 1.630930
    assert ndcg_at(RET, GOLD, 5) == pytest.approx(0.650920, abs=1e-6)  # 1.061606 / 1.630930
    # DCG@2 = 1/log2(3) = 0.630930; IDCG@2 = 1 + 0.630930 -> 0.386853
    assert ndcg_at(RET, GOLD, 2) == pytest.approx(0.386853, abs=1e-6)
    # k = 1: DCG 0 -> 0; a perfect list -> 1
    assert ndcg_at(RET, GOLD, 1) == 0.0
    assert ndcg_at(["b", "d", "a"], GOLD, 10) == pytest.approx(1.0)
    # gold larger than k: IDCG uses min(|gold|, k) = 1 position -> 1/1; DCG@1 = 1 -> 1.0
    assert ndcg_at(["b"], {"b", "d", "x"}, 1) == 1.0


def test_mrr_and_completeness() -> None:
    assert mrr_at(RET, GOLD, 10) == 0.5  # first gold at rank 2 -> 1/2
    assert mrr_at(RET, GOLD, 1) == 0.0  # not within the top 1
    assert completeness_at(RET, GOLD, 5) == 1.0  # b and d both in top 5
    assert completeness_at(RET, GOLD, 3) == 0.0  # d is at rank 4


def test_duplicates_count_once() -> None:
    ret, gold = ["a", "a", "b"], {"a", "b"}
    # rel = 1, 0 (repeat), 1: DCG@3 = 1 + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3) = 1.630930 -> 0.919721
    assert ndcg_at(ret, gold, 3) == pytest.approx(0.919721, abs=1e-6)
    assert recall_at(ret, gold, 2) == 0.5  # the repeat takes slot 2: {a} -> 1/2
    assert mrr_at(["x", "x", "a"], gold, 3) == pytest.approx(1 / 3)  # 1 / rank 3


def test_empty_gold_is_undefined_and_bad_k() -> None:
    for fn in (recall_at, ndcg_at, mrr_at, completeness_at):
        assert fn(RET, set(), 5) is None
        with pytest.raises(ValueError, match="k"):
            fn(RET, GOLD, 0)


def test_metric_ranges_on_random_lists() -> None:
    import random

    rng = random.Random(2)
    for _ in range(200):
        ret = [rng.choice("abcdefgh") for _ in range(rng.randint(0, 8))]
        gold = set(rng.sample("abcdefgh", rng.randint(1, 4)))
        for k in (1, 3, 5, 10):
            values = [fn(ret, gold, k) for fn in (recall_at, ndcg_at, mrr_at, completeness_at)]
            assert all(v is not None and 0.0 <= v <= 1.0 + 1e-12 for v in values)


# ------------------------------------------------------------------------------------------ query files
def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_load_yaml_all_fields(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "receipt.png").write_bytes(b"\x89PNG")
    path = _write(
        tmp_path / "q.yaml",
        """\
- query: 帮我报销这张餐饮发票
  gold: [finance.expense.submit, finance.expense.submit]
  expect: execute
- query: ""
  image: img/receipt.png
  gold: [finance.expense.submit]
  permissions: [finance.write]
  role: finance
  expect: Clarify
  history: ["I had dinner with a client"]
- query: tell me a joke
  gold: []
  expect: no-tool
""",
    )
    rows = load_queries(path)
    assert len(rows) == 3
    assert rows[0] == QueryRow(
        query="帮我报销这张餐饮发票", gold=("finance.expense.submit",), expect=Decision.EXECUTE, line=1
    )
    assert rows[1].image == tmp_path / "img" / "receipt.png"
    assert rows[1].permissions == ("finance.write",) and rows[1].role == "finance"
    assert rows[1].expect is Decision.CLARIFY and rows[1].history == ("I had dinner with a client",)
    assert rows[1].line == 4
    assert rows[2].gold == () and rows[2].expect is Decision.NO_TOOL and rows[2].permissions is None


def test_load_yaml_queries_wrapper(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.yml", "queries:\n  - query: weather\n    gold: [w]\n")
    assert load_queries(path) == [QueryRow(query="weather", gold=("w",), line=2)]


def test_load_jsonl_and_json_array(tmp_path: Path) -> None:
    lines = [{"query": "stock of SKU-1", "gold": ["erp.q"]}, {"query": "hi", "gold": [], "expect": "NO_TOOL"}]
    path = _write(tmp_path / "q.jsonl", json.dumps(lines[0]) + "\n\n" + json.dumps(lines[1]) + "\n")
    rows = load_queries(path)
    assert [(r.query, r.gold, r.line) for r in rows] == [("stock of SKU-1", ("erp.q",), 1), ("hi", (), 3)]
    array = _write(tmp_path / "q.json", json.dumps(lines, indent=2))
    assert [r.gold for r in load_queries(array)] == [("erp.q",), ()]


@pytest.mark.parametrize(
    ("name", "text", "patterns"),
    [
        ("bad.yaml", "- query: a\n  gold: [x\n- query: b\n", ["line 3", "invalid YAML"]),
        ("typo.yaml", "- query: a\n  gld: [x]\n", ["row 1", "line 2", "'gld'", "did you mean 'gold'"]),
        (
            "empty_q.yaml",
            "- query: a\n  gold: [x]\n- query: '  '\n  gold: [x]\n",
            ["row 2", "line 3", "'query'", "image"],
        ),
        ("no_img.yaml", "- query: a\n  image: gone.png\n  gold: [x]\n", ["line 2", "'image'", "gone.png"]),
        ("expect.yaml", "- query: a\n  gold: [x]\n  expect: EXECUTED\n", ["line 3", "'expect'", "CLARIFY"]),
        ("nogold.yaml", "- query: a\n", ["row 1", "'gold'", "gold: []"]),
        ("goldstr.yaml", "- query: a\n  gold: x\n", ["'gold'", "list"]),
        ("contra.yaml", "- query: a\n  gold: [x]\n  expect: no_tool\n", ["'expect'", "NO_TOOL"]),
        ("dup.yaml", "- query: a\n  gold: [x]\n  gold: [y]\n", ["line 3", "twice"]),
        ("notlist.yaml", "query: a\ngold: [x]\n", ["YAML list"]),
        ("row.yaml", "- just a string\n", ["row 1", "mapping"]),
        ("empty.yaml", "# nothing\n", ["no queries"]),
        ("num.yaml", "- query: 42\n  gold: [x]\n", ["'query'", "text"]),
        ("bad.jsonl", '{"query": "a", "gold": []}\n{"query": "b", gold: []}\n', ["line 2", "invalid JSON"]),
        ("unk.jsonl", '{"query": "a", "gold": [], "rol": "x"}\n', ["line 1", "'rol'", "did you mean 'role'"]),
        ("q.txt", "query: a\n", ["unknown queries format"]),
    ],
)
def test_load_errors(tmp_path: Path, name: str, text: str, patterns: list[str]) -> None:
    path = _write(tmp_path / name, text)
    with pytest.raises(QueryError) as info:
        load_queries(path)
    message = str(info.value)
    assert name in message
    for pattern in patterns:
        assert pattern in message, (pattern, message)


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(QueryError, match="does not exist"):
        load_queries(tmp_path / "nope.yaml")


# ------------------------------------------------------------------------------------------------ evaluate
ROWS = [
    QueryRow("q1", ("b", "d"), expect=Decision.EXECUTE),
    QueryRow("q2", ("x",)),
    QueryRow("q3", (), expect=Decision.NO_TOOL),
    QueryRow("q4", ("z",), expect=Decision.CLARIFY),
]
RESULTS = {
    "q1": (("a", "b", "c", "d"), Decision.EXECUTE),  # right decision
    "q2": (("x", "y"), Decision.EXECUTE),  # no expect: not in decision accuracy
    "q3": (("a",), Decision.EXECUTE),  # wrong decision; empty gold: no retrieval metric
    "q4": ((), Decision.CLARIFY),  # right decision, nothing returned
}


def _fake_search(row: QueryRow) -> QueryOutcome:
    returned, decision = RESULTS[row.query]
    return QueryOutcome(row=row, returned=returned, decision=decision)


def test_evaluate_aggregates() -> None:
    calls: list[str] = []

    def search(row: QueryRow) -> QueryOutcome:
        calls.append(row.query)
        return _fake_search(row)

    report = evaluate(search, ROWS)
    assert calls == ["q1", "q2", "q3", "q4"]
    assert list(report.metrics) == [
        "recall@1", "recall@5", "recall@10", "ndcg@5", "ndcg@10", "mrr@10", "completeness@5",
        "decision_accuracy",
    ]  # fmt: skip
    assert tuple(report.metrics) == METRIC_NAMES
    # averages over q1, q2, q4 (q3 has empty gold)
    expected = {
        "recall@1": 1 / 3,  # (0 + 1 + 0) / 3
        "recall@5": 2 / 3,  # (1 + 1 + 0) / 3
        "recall@10": 2 / 3,
        "ndcg@5": 0.550307,  # (0.650920 + 1 + 0) / 3
        "ndcg@10": 0.550307,  # q1 has 4 results: same as @5
        "mrr@10": 0.5,  # (1/2 + 1 + 0) / 3
        "completeness@5": 2 / 3,  # (1 + 1 + 0) / 3
        "decision_accuracy": 2 / 3,  # q1 right, q3 wrong, q4 right
    }
    assert report.metrics == pytest.approx(expected, abs=1e-6)
    assert report.n_queries == 4 and [o.row for o in report.per_query] == ROWS


def test_evaluate_json_and_table() -> None:
    report = evaluate(_fake_search, ROWS)
    data = report.to_json(n_tools=17)
    assert set(data) == {"metrics", "n_queries", "n_tools", "per_query"}
    assert data["n_tools"] == 17 and data["n_queries"] == 4
    assert data["per_query"][0] == {
        "query": "q1", "gold": ["b", "d"], "returned": ["a", "b", "c", "d"], "selected": [],
        "decision": "EXECUTE", "expect": "EXECUTE",
    }  # fmt: skip
    assert data["per_query"][1]["expect"] is None
    json.dumps(data)  # serialisable
    table = report.format_table()
    assert "recall@1" in table and "33.33%" in table and "55.03%" in table and "decision_accuracy" in table


def test_evaluate_without_expect_or_gold() -> None:
    rows = [QueryRow("q2", ("x",))]
    report = evaluate(_fake_search, rows, ks=(3,))
    # q2 returns (x, y) for gold {x}: x at rank 1 -> every metric 1.0
    assert report.metrics == {"recall@3": 1.0, "ndcg@3": 1.0, "mrr@3": 1.0, "completeness@3": 1.0}
    assert "decision_accuracy" not in report.metrics
    empty = evaluate(_fake_search, [QueryRow("q3", (), expect=Decision.NO_TOOL)])
    assert empty.metrics == {"decision_accuracy": 0.0}  # q3's decision EXECUTE is wrong
    with pytest.raises(ValueError):
        evaluate(_fake_search, rows, ks=())


def test_evaluate_rejects_outcome_of_another_row() -> None:
    def wrong(row: QueryRow) -> QueryOutcome:
        return QueryOutcome(row=ROWS[0], returned=(), decision=Decision.NO_TOOL)

    with pytest.raises(ValueError, match="outcome"):
        evaluate(wrong, ROWS[1:2])
    assert isinstance(evaluate(_fake_search, []), EvalReport)
