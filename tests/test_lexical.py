"""Tests of toolrag.index.tokenize and .bm25: tokenisation and BM25 (scores checked against hand arithmetic)."""

from __future__ import annotations

import math
import random
import re
import tempfile
import threading
import time
from pathlib import Path

import bm25s
import numpy as np
import pytest

from toolrag.index import bm25_triples
from toolrag.index import tokenize as lexical
from toolrag.index.bm25 import BM25Index
from toolrag.index.bm25_docs import DocumentTerms, check_unique
from toolrag.index.tokenize import tokenize


# ------------------------------------------------------------------------------------------ tokenisation
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("get_weather", ["get", "weather"]),
        ("getWeather", ["get", "weather"]),
        ("GetWeatherV2", ["get", "weather", "v2"]),
        ("erp.inventory.query_stock", ["erp", "inventory", "query", "stock"]),
        ("query-stock-level", ["query", "stock", "level"]),
        ("HTTPServer", ["http", "server"]),
        ("parseJSONResponse", ["parse", "json", "response"]),
        ("utf8 base64", ["utf8", "base64"]),
        ("ＧｅｔＷｅａｔｈｅｒ　２０２４", ["get", "weather", "2024"]),  # full-width -> NFKC
        ("Please list my invoices and the queries!", ["list", "invoice", "query"]),  # stop words, plurals
        ("taxes addresses batches status analysis", ["tax", "address", "batch", "status", "analysis"]),
        ("", []),
        ("  ,.;!? ...  ", []),
    ],
)
def test_tokenize_english_and_identifiers(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_tokenize_chinese_sentence_keeps_content_words_and_drops_stop_words() -> None:
    tokens = tokenize("帮我报销这张餐饮发票")
    for word in ("报销", "餐饮", "发票"):
        assert word in tokens
    for stop in ("帮", "我", "这张"):
        assert stop not in tokens


def test_tokenize_mixed_chinese_and_identifier() -> None:
    tokens = tokenize("查一下SKU-1001的库存")
    assert {"sku", "1001", "库存"} <= set(tokens)
    assert not {"的", "一下", "-", "SKU"} & set(tokens)


def test_tokenize_search_mode_emits_sub_words_of_long_words() -> None:
    # lcut_for_search: the compound and its parts, so "邮件" in a query meets "电子邮件" in a description
    tokens = tokenize("发送电子邮件")
    assert {"电子邮件", "邮件", "发送"} <= set(tokens)


def test_tokenize_has_no_punctuation_or_whitespace_tokens() -> None:
    tokens = tokenize("查询：库存（仓库A）。Hello, world! — «quoted» 「引号」")
    assert tokens
    assert all(t.strip() and any(ch.isalnum() for ch in t) for t in tokens)


def test_jieba_initialises_once_across_threads() -> None:
    results: list[object] = []

    def work() -> None:
        tokenize("创建采购订单")
        results.append(lexical._jieba())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r is results[0] for r in results)


def test_jieba_caches_in_the_data_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TOOLRAG_DATA_DIR", str(tmp_path / "data"))
    assert lexical._cache_dir() == tmp_path / "data" / "jieba"
    assert (tmp_path / "data" / "jieba").is_dir()
    (tmp_path / "file").write_text("x", "utf-8")
    monkeypatch.setenv("TOOLRAG_DATA_DIR", str(tmp_path / "file" / "data"))  # unusable: the temp folder
    assert lexical._cache_dir() == Path(tempfile.gettempdir())


# ------------------------------------------------------------------------------------------- BM25 scores
# d1 = [apple, banana, apple] (|d|=3), d2 = [banana, cherry] (|d|=2), d3 = [cherry, date, fig, grape] (|d|=4)
# N = 3, avgdl = (3 + 2 + 4) / 3 = 3, k1 = 1.5, b = 0.75
# length norm K(d) = k1 * (1 - b + b*|d|/avgdl): K(d1) = 1.5*(0.25+0.75) = 1.5;
# K(d2) = 1.5*(0.25+0.5) = 1.125; K(d3) = 1.5*(0.25+1.0) = 1.875
CORPUS_IDS = ["d1", "d2", "d3"]
CORPUS = ["apple banana apple", "banana cherry", "cherry date fig grape"]


def test_bm25_scores_match_hand_computation() -> None:
    index = BM25Index.build(CORPUS_IDS, CORPUS)
    # apple: df=1, idf = ln(1 + (3-1+0.5)/(1+0.5)) = ln(2.666667) = 0.980829
    # d1: tf=2 -> 0.980829 * 2/(2+1.5) = 0.980829 * 0.571429 = 0.560474
    assert index.scores("apple") == pytest.approx([0.560474, 0.0, 0.0], abs=1e-5)
    # banana, cherry: df=2, idf = ln(1 + (3-2+0.5)/(2+0.5)) = ln(1.6) = 0.470004
    # d1: banana tf=1 -> 0.470004 * 1/(1+1.5) = 0.188001
    # d2: banana + cherry, tf=1 each -> 2 * 0.470004 * 1/(1+1.125) = 2 * 0.221179 = 0.442357
    # d3: cherry tf=1 -> 0.470004 * 1/(1+1.875) = 0.163480
    scores = index.scores("banana cherry")
    assert scores.dtype == np.float32
    assert scores == pytest.approx([0.188001, 0.442357, 0.163480], abs=1e-5)
    # repeated query terms count once: same as above
    assert index.scores("banana banana cherry") == pytest.approx(scores, abs=1e-7)


def test_bm25_unknown_query_gives_zeros() -> None:
    index = BM25Index.build(CORPUS_IDS, CORPUS)
    for query in ("zebra", "", "the of and", "???"):
        scores = index.scores(query)
        assert scores.dtype == np.float32 and scores.shape == (3,) and not scores.any()
        assert index.top(query, k=3) == []


def test_bm25_equals_bm25s_own_index_on_random_corpus() -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(60)]
    docs = [[rng.choice(words) for _ in range(rng.randint(1, 12))] for _ in range(80)]
    ids = [f"t{i:03d}" for i in range(len(docs))]
    index = BM25Index.build(ids, [" ".join(d) for d in docs])
    reference = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    reference.index(docs, show_progress=False)
    for query in (["w1"], ["w2", "w3", "w59"], words[:20]):
        expected = reference.get_scores(query)
        assert index.scores(" ".join(query)) == pytest.approx(expected, rel=1e-5, abs=1e-6)


def test_query_scores_sum_each_terms_entries() -> None:
    weights, docs, starts = (np.array([0.5, 0.2, 0.4], dtype=np.float32), np.array([0, 1, 1], dtype=np.int32),
                             np.array([0, 2, 3]))
    assert bm25_triples.query_scores(weights, docs, starts, [0, 1], 2).tolist() == pytest.approx([0.5, 0.6])
    assert bm25_triples.query_scores(weights, docs, starts, [1], 3).tolist() == pytest.approx([0.0, 0.4, 0.0])
    assert bm25_triples.query_scores(weights, docs, starts, [], 2).dtype == np.float32


def test_toolrag_does_not_import_bm25s() -> None:
    package = Path(__file__).resolve().parent.parent / "toolrag"
    users = [f for f in package.rglob("*.py") if re.search(r"^\s*(import|from) bm25s", f.read_text("utf-8"), re.M)]
    assert not users, f"toolrag scores BM25 itself (toolrag.index.bm25_triples.query_scores): {users}"


def test_term_scores_sum_to_score() -> None:
    index = BM25Index.build(CORPUS_IDS, CORPUS)
    parts = index.term_scores("banana cherry zebra", "d2")
    assert set(parts) == {"banana", "cherry"}
    assert sum(parts.values()) == pytest.approx(float(index.scores("banana cherry")[1]), abs=1e-6)
    assert index.tokens("d1") == ("apple", "banana", "apple")


def test_restored_index_gives_each_document_its_tokens() -> None:
    # An index restored from its arrays rebuilds a document's tokens from the (term, doc) triples: the same
    # tokens as the built index, repeats kept, in vocabulary order; also after an edit moved documents around.
    rng = random.Random(3)
    words = [f"w{i}" for i in range(40)]
    ids = [f"t{i:03d}" for i in range(60)]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))) for _ in ids]
    built = BM25Index.build(ids, texts)
    restored = BM25Index.from_arrays(ids, built.to_arrays())
    vocab_order = {t: i for i, t in enumerate(built.to_arrays()["vocab"])}
    for doc_id in ids:
        expected = tuple(sorted(built.tokens(doc_id), key=vocab_order.__getitem__))
        assert restored.tokens(doc_id) == expected
        # term_set (what a decision reads): the distinct tokens, the same for a built and a restored index
        assert built.term_set(doc_id) == restored.term_set(doc_id) == frozenset(built.tokens(doc_id))
    edited = built.update({"t005": "w1 w1 brandnew", "t999": "w2 extra"}, {"t010"})
    again = BM25Index.from_arrays([i for i in ids if i != "t010"] + ["t999"], edited.to_arrays())
    assert sorted(again.tokens("t005")) == ["brandnew", "w1", "w1"] and sorted(again.tokens("t999")) == ["extra", "w2"]
    assert again.tokens("t020") == restored.tokens("t020")
    with pytest.raises(KeyError):
        again.tokens("t010")
    with pytest.raises(KeyError):
        again.term_set("t010")


# ---------------------------------------------------------------------------------------------- top()
def test_top_orders_by_score_then_id_and_respects_k_and_mask() -> None:
    ids = ["zeta", "alpha", "mid", "none", "beta"]
    texts = ["invoice tax", "invoice tax", "invoice", "weather", "invoice tax"]
    index = BM25Index.build(ids, texts)
    hits = index.top("invoice tax", k=10)
    # zeta, alpha, beta tie (identical texts) -> id ascending; mid has only "invoice";
    # "none" scores 0 -> left out
    assert [h[0] for h in hits] == ["alpha", "beta", "zeta", "mid"]
    scores = [h[1] for h in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 and math.isfinite(s) for s in scores)
    assert [h[0] for h in index.top("invoice tax", k=2)] == ["alpha", "beta"]
    assert index.top("invoice tax", k=0) == []
    mask = np.array([True, False, True, True, False])
    assert [h[0] for h in index.top("invoice tax", k=10, mask=mask)] == ["zeta", "mid"]
    with pytest.raises(ValueError, match="mask"):
        index.top("invoice", k=3, mask=np.ones(4, dtype=bool))
    with pytest.raises(ValueError, match="k"):
        index.top("invoice", k=-1)


def test_top_invariants_on_random_corpus() -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(30)]
    ids = [f"id{rng.randint(0, 10**6):07d}_{i}" for i in range(300)]
    index = BM25Index.build(ids, [" ".join(rng.choices(words, k=rng.randint(1, 8))) for _ in ids])
    for k in (1, 5, 17, 500):
        query = " ".join(rng.sample(words, 3))
        hits = index.top(query, k=k)
        assert len(hits) <= k
        keys = [(-s, i) for i, s in hits]
        assert keys == sorted(keys)
        scores = index.scores(query)
        assert len(hits) == min(k, int((scores > 0).sum()))
        if hits and len(hits) < int((scores > 0).sum()):  # nothing left out scores higher than the last hit
            kept = {i for i, _ in hits}
            assert max(float(s) for i, s in zip(ids, scores, strict=True) if i not in kept) <= hits[-1][1]


def test_subset_scores_equal_an_index_of_the_subset_and_keep_each_terms_weights(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller's visible subset scores as an index built over it alone, bit for bit; each term's subset weights
    are computed on its first query for that subset and kept (per subset content: a mask made again finds
    them), so the next searches of that caller compute none."""
    from toolrag.index import bm25_subset

    rng = random.Random(5)
    words = [f"w{i}" for i in range(40)]
    ids = [f"t{i:03d}" for i in range(300)]
    texts = [" ".join(rng.choices(words, k=rng.randint(1, 9))) for _ in ids]
    index = BM25Index.build(ids, texts)
    masks = [np.array([rng.random() < share for _ in ids]) for share in (0.5, 0.2)]
    queries = [" ".join(rng.sample(words, 3)) for _ in range(12)]
    computed: list[int] = []
    real = bm25_triples.subset_weights

    def spy(*args: object, **kwargs: object) -> np.ndarray:
        computed.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bm25_triples, "subset_weights", spy)

    def check(mask: np.ndarray, order: list[str]) -> None:
        alone = BM25Index.build([i for i, m in zip(ids, mask, strict=True) if m],
                                [t for t, m in zip(texts, mask, strict=True) if m])
        for query in order:
            got = index.scores(query, mask)
            assert np.array_equal(got[mask], alone.scores(query)) and not got[~mask].any()

    check(masks[0], queries)
    first = len(computed)
    assert 0 < first <= len({t for q in queries for t in q.split()})  # at most once per distinct term
    check(masks[0].copy(), queries[::-1])  # the same caller's mask made again, the queries in another order
    assert len(computed) == first
    check(masks[1], queries)  # another caller: its own weights
    assert len(computed) > first
    # the least recently used subsets go beyond MAX_SUBSETS; any kept or dropped, the scores stay exact
    for n in range(bm25_subset.MAX_SUBSETS + 1):
        check(np.array([(i * 7 + n) % 11 != 0 for i in range(len(ids))]), queries[:2])
    assert len(index._subsets) == bm25_subset.MAX_SUBSETS
    # threads scoring for two callers at once get the exact scores
    expected = {(q, n): index.scores(q, mask).copy() for q in queries for n, mask in enumerate(masks)}
    errors: list[str] = []

    def work(seed: int) -> None:
        local = random.Random(seed)
        for _ in range(50):
            query, n = local.choice(queries), local.randrange(2)
            if not np.array_equal(index.scores(query, masks[n].copy()), expected[(query, n)]):
                errors.append(f"{query} {n}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


# -------------------------------------------------------------------------------------------- update()
def _counting_tokenizer() -> tuple[list[str], object]:
    seen: list[str] = []

    def tok(text: str) -> list[str]:
        seen.append(text)
        return tokenize(text)

    return seen, tok


def test_update_equals_full_rebuild_and_retokenises_only_changed() -> None:
    seen, tok = _counting_tokenizer()
    ids = ["a", "b", "c", "d"]
    texts = ["create invoice", "query stock level", "send email", "book flight 机票"]
    index = BM25Index.build(ids, texts, tokenizer=tok)  # type: ignore[arg-type]
    seen.clear()
    updated = index.update({"b": "query stock of a SKU", "e": "发票 invoice archive"}, removed=["c"])
    assert seen == ["query stock of a SKU", "发票 invoice archive"]  # unchanged texts are not tokenised again
    assert updated.ids == ("a", "b", "d", "e")
    rebuilt = BM25Index.build(
        ["a", "b", "d", "e"],
        ["create invoice", "query stock of a SKU", "book flight 机票", "发票 invoice archive"],
    )
    for query in ("invoice", "stock sku", "机票 flight", "email", "发票"):
        np.testing.assert_allclose(updated.scores(query), rebuilt.scores(query), rtol=1e-6)
        assert updated.top(query, k=3) == rebuilt.top(query, k=3)
    assert index.ids == tuple(ids) and index.scores("email")[2] > 0  # the old index is unchanged
    # a text seen before comes from the cache
    seen.clear()
    updated.update({"b": "query stock level"}, removed=[])
    assert seen == []


def test_replacing_texts_equals_a_rebuild_built_or_restored_and_leaves_the_old_index_alone() -> None:
    # An edit (texts replaced, no id added or removed) takes update()'s replacement path: changed slots are
    # overwritten in place of rebuilding every per-document list. Scores, top() and tokens must equal a full
    # build of the final texts, for a built index and one restored from its arrays (no document tokens kept).
    rng = random.Random(5)
    words = [f"w{i}" for i in range(30)]
    ids = [f"t{i:03d}" for i in range(80)]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in ids]
    built = BM25Index.build(ids, texts, tokenizer=str.split)
    restored = BM25Index.from_arrays(ids, built.to_arrays(), tokenizer=str.split)
    edits = {"t003": "w1 w1 novel", "t040": "w2", "t079": texts[0]}  # a new term, a shorter text, a seen text
    final = [edits.get(i, t) for i, t in zip(ids, texts, strict=True)]
    rebuilt = BM25Index.build(ids, final, tokenizer=str.split)
    for index in (built, restored):
        before = {q: index.scores(q).copy() for q in ("w1 novel", "w2 w5", "w7")}
        updated = index.update(edits, removed=[])
        assert updated.ids == tuple(ids)
        for query in ("w1 novel", "w2 w5", "w7", "novel"):
            np.testing.assert_allclose(updated.scores(query), rebuilt.scores(query), rtol=1e-6)
            assert updated.top(query, k=5) == rebuilt.top(query, k=5)
        assert sorted(updated.tokens("t003")) == ["novel", "w1", "w1"]
        for query, scores in before.items():  # the index the edit started from still scores the old texts
            np.testing.assert_array_equal(index.scores(query), scores)
        assert "novel" not in index._vocab


def test_many_replaced_texts_and_none_equal_a_rebuild() -> None:
    # Up to FEW_DOCS replaced documents take the splice path (old entries found per document, df updated);
    # more take the mask path: both must equal a rebuild. No change at all gives the same scores.
    rng = random.Random(9)
    words = [f"w{i}" for i in range(25)]
    ids = [f"t{i:03d}" for i in range(60)]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 7))) for _ in ids]
    index = BM25Index.from_arrays(ids, BM25Index.build(ids, texts, tokenizer=str.split).to_arrays(),
                                  tokenizer=str.split)
    for count in (1, bm25_triples.FEW_DOCS, bm25_triples.FEW_DOCS + 3):
        edits = {ids[i]: " ".join(rng.choice([*words, "fresh"]) for _ in range(rng.randint(0, 6)))
                 for i in rng.sample(range(len(ids)), count)}
        rebuilt = BM25Index.build(ids, [edits.get(i, t) for i, t in zip(ids, texts, strict=True)],
                                  tokenizer=str.split)
        updated = index.update(edits, removed=[])
        for query in ("w1 w2", "fresh w3", "w24"):
            np.testing.assert_allclose(updated.scores(query), rebuilt.scores(query), rtol=1e-6)
            assert updated.top(query, k=6) == rebuilt.top(query, k=6)
    np.testing.assert_array_equal(index.update({}, removed=[]).scores("w1 w5"), index.scores("w1 w5"))


def test_splice_and_lucene_weights_by_hand() -> None:
    values = np.array([10, 20, 30, 40])
    # drop position 1 (20); insert 15 where it was and 35 before position 3 (40)
    spliced = bm25_triples.splice(values, np.array([1]), np.array([1, 3]), np.array([15, 35]))
    assert spliced.tolist() == [10, 15, 30, 35, 40]
    terms, docs = np.array([0, 0, 2]), np.array([1, 4, 0])  # sorted by term, then doc
    assert bm25_triples.insertion_points(terms, docs, np.array([0, 1, 3]), np.array([3, 0, 0])).tolist() == [1, 2, 3]
    # Two one-token documents "a" and "b": N = 2, df = 1, tf = 1, dl = avgdl = 1, k1 = 1.5, b = 0.75:
    # idf = ln(1 + (2 - 1 + 0.5) / (1 + 0.5)) = ln 2; weight = ln 2 * 1 / (1 + 1.5 * 1) = 0.27726
    weights = bm25_triples.lucene_weights(np.array([0, 1]), np.array([0, 1]), np.array([1, 1]), np.array([1, 1]),
                                          np.array([1, 1]), k1=1.5, b=0.75)
    np.testing.assert_allclose(weights, [0.27726, 0.27726], rtol=1e-4)
    assert weights.dtype == np.float32


def test_document_terms_by_hand() -> None:
    # vocabulary a=0, b=1, c=2; triples sorted by term then document: (a, doc 1, tf 2), (b, doc 0, tf 1),
    # (c, doc 1, tf 1); doc 2 is empty. Document order: doc 0 -> [b], doc 1 -> [a, a, c], doc 2 -> [].
    terms, docs, tf = np.array([0, 1, 2]), np.array([1, 0, 1]), np.array([2, 1, 1])
    view = DocumentTerms.build(docs, 3, {"a": 0, "b": 1, "c": 2})
    assert view.starts.tolist() == [0, 1, 3, 3]
    assert [view.tokens(p, terms, tf) for p in range(3)] == [("b",), ("a", "a", "c"), ()]
    assert [view.term_set(p, terms) for p in range(3)] == [frozenset("b"), frozenset("ac"), frozenset()]
    with pytest.raises(ValueError, match=r"\['x'\]"):
        check_unique(["x", "y", "x"])


def test_update_compacts_vocabulary_after_heavy_churn() -> None:
    big = " ".join(f"rare{i}" for i in range(1500))
    index = BM25Index.build(["big", "a", "b"], [big, "invoice tax", "weather"], tokenizer=str.split)
    shrunk = index.update({}, removed=["big"]).update({"a": "invoice archive"}, removed=[])
    assert len(shrunk._vocab) < 10  # the 1500 dead terms were dropped
    rebuilt = BM25Index.build(["a", "b"], ["invoice archive", "weather"], tokenizer=str.split)
    for query in ("invoice", "weather archive", "rare7"):
        np.testing.assert_allclose(shrunk.scores(query), rebuilt.scores(query), rtol=1e-6)


def test_update_errors() -> None:
    index = BM25Index.build(CORPUS_IDS, CORPUS)
    with pytest.raises(ValueError, match="not indexed"):
        index.update({}, removed=["nope"])
    with pytest.raises(ValueError, match="both changed and removed"):
        index.update({"d1": "x"}, removed=["d1"])
    with pytest.raises(ValueError, match="duplicate"):
        BM25Index.build(["a", "a"], ["x", "y"])
    with pytest.raises(ValueError, match="texts"):
        BM25Index.build(["a"], ["x", "y"])
    with pytest.raises(ValueError, match="k1"):
        BM25Index.build(["a"], ["x"], b=2.0)


def test_empty_index() -> None:
    index = BM25Index.build([], [])
    assert index.scores("anything").shape == (0,)
    assert index.top("anything", k=5) == []
    grown = index.update({"x": "weather forecast"}, removed=[])
    assert grown.top("weather", k=5)[0][0] == "x"


def test_update_one_doc_in_10k_index() -> None:
    rng = random.Random(11)
    words = [f"w{i}" for i in range(5000)]
    ids = [f"tool.{i:05d}" for i in range(10_000)]
    texts = [" ".join(rng.choices(words, k=40)) for _ in ids]
    index = BM25Index.build(ids, texts, tokenizer=str.split)
    start = time.perf_counter()
    updated = index.update({"tool.00042": "w1 w2 w3 brandnewword"}, removed=[])
    elapsed = time.perf_counter() - start
    print(f"\nBM25Index.update of 1 doc in a 10,000-doc index: {elapsed * 1000:.1f} ms")
    assert updated.top("brandnewword", k=3)[0][0] == "tool.00042"
    texts[42] = "w1 w2 w3 brandnewword"
    rebuilt = BM25Index.build(ids, texts, tokenizer=str.split)
    for query in ("w1 w2", "w7 w4000 brandnewword"):
        np.testing.assert_allclose(updated.scores(query), rebuilt.scores(query), rtol=1e-6)


# ------------------------------------------------------------------------ mini catalog (tokenizer choices)
MINI_TOOLS = {
    "erp.inventory.query_stock": (
        "queryStock: Query the stock level of a product SKU in a warehouse. 查询商品库存数量"
    ),
    "erp.inventory.adjust_stock": "adjust_stock: Adjust inventory quantities after a stocktake. 调整库存",
    "finance.expense.submit_reimbursement": (
        "submitReimbursement: Submit an expense claim with receipts and invoices for reimbursement. "
        "提交费用报销申请，上传发票"
    ),
    "finance.invoice.create": "create_invoice: Issue a sales invoice to a customer. 开具销售发票",
    "mail.send_email": "sendEmail: Send an email message to one or more recipients. 发送电子邮件",
    "calendar.create_meeting": (
        "createMeeting: Schedule a meeting with attendees in the calendar. 创建日程会议，预约会议室"
    ),
    "weather.get_forecast": "GetWeatherForecast: Get the weather forecast for a city. 查询城市天气预报",
    "travel.book_flight": "bookFlight: Book airline tickets between two cities. 预订机票航班",
    "hr.leave.apply": "applyLeave: Apply for annual or sick leave. 申请年假病假请假",
    "crm.customer.search": "searchCustomers: Search customer records by name or phone. 搜索客户资料",
    "sales.report.monthly": (
        "monthlySalesReport: Generate the monthly sales report as a spreadsheet. 生成月度销售报表"
    ),
    "translate.text": "translateText: Translate text between Chinese and English. 中英文翻译",
    "purchase.order.create": "createPurchaseOrder: Create a purchase order for a supplier. 创建采购订单",
    "logistics.track_shipment": "trackShipment: Track the delivery status of a parcel. 查询快递物流状态",
    "it.ticket.open": "openTicket: Open an IT support ticket for broken laptops or accounts. 提交IT工单",
    "docs.ocr.extract": "ocrExtract: Extract text from scanned documents and photos. 识别图片文字",
}
MINI_QUERIES = [
    ("how many units of SKU-1001 are in stock", "erp.inventory.query_stock"),
    ("查一下SKU-1001的库存", "erp.inventory.query_stock"),
    ("帮我报销这张餐饮发票", "finance.expense.submit_reimbursement"),
    ("claim my travel expenses", "finance.expense.submit_reimbursement"),
    ("reimbursements for receipts", "finance.expense.submit_reimbursement"),
    ("issue invoices to customer ACME", "finance.invoice.create"),
    ("发邮件给张三", "mail.send_email"),
    ("send an email to Bob", "mail.send_email"),
    ("约个会议", "calendar.create_meeting"),
    ("schedule meetings with the team", "calendar.create_meeting"),
    ("明天北京天气怎么样", "weather.get_forecast"),
    ("weather forecasts for Paris", "weather.get_forecast"),
    ("订一张去上海的机票", "travel.book_flight"),
    ("book flights to Tokyo", "travel.book_flight"),
    ("我想请病假", "hr.leave.apply"),
    ("搜索客户电话", "crm.customer.search"),
    ("生成这个月的销售报表", "sales.report.monthly"),
    ("把这段话翻译成英文", "translate.text"),
    ("create purchase orders for supplier", "purchase.order.create"),
    ("我的快递到哪了 物流", "logistics.track_shipment"),
    ("track shipments", "logistics.track_shipment"),
    ("my laptop is broken, open tickets", "it.ticket.open"),
    ("识别这张图片里的文字", "docs.ocr.extract"),
    ("query_stock", "erp.inventory.query_stock"),
]


def test_mini_catalog_top1() -> None:
    ids = list(MINI_TOOLS)
    index = BM25Index.build(ids, [f"{i} {MINI_TOOLS[i]}" for i in ids])
    misses = [q for q, gold in MINI_QUERIES if [h[0] for h in index.top(q, k=1)] != [gold]]
    assert misses == []


def test_words_that_are_not_plurals_keep_their_s() -> None:
    assert tokenize("latest news series") == ["latest", "news", "series"]
    assert tokenize("create new invoices") == ["create", "new", "invoice"]
    # "news" no longer matches tools that "create a new issue"
    index = BM25Index.build(["a", "b"], ["Create a new issue in a repository", "Search the web for news articles"])
    assert index.top("latest news about the AI act", k=2) == [("b", pytest.approx(index.scores("news")[1]))]


def test_saved_states_are_keyed_by_the_tokenisation(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolrag.index import serving

    before = serving.state_fingerprint("cat", {"dense": ("fp", "1")}, "rows")
    monkeypatch.setattr(serving, "LEXICAL_VERSION", f"{serving.LEXICAL_VERSION}-another")
    assert serving.state_fingerprint("cat", {"dense": ("fp", "1")}, "rows") != before
