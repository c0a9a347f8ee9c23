"""The training pipeline's pure part (``bench.train_bi.triples``), on a hand-made mined folder: what a request is
trained against. The pipeline itself runs for hours on public data that is not in the repository
(``python -m bench.train``, docs/models.md)."""

from __future__ import annotations

import numpy as np

from bench.train_bi import triples
from bench.train_sets import Mined


def mined(cands: list[list[str]], gold: list[list[int]]) -> Mined:
    ids = ["a", "b", "c", "d", "e"]
    texts = ["book a room", "book a room", "weather now", "send mail", "天气"]  # b is a card twin of a
    rows = [{"text": f"request {i}", "gloss": "gloss" if i == 1 else "", "cands": [{"id": c} for c in cs]}
            for i, cs in enumerate(cands)]
    return Mined("hand", ids, np.array([True, True, True, True, False]), texts, rows,
                 [np.array(g, dtype=np.int64) for g in gold])


def test_a_request_meets_its_gold_text_and_a_mined_negative_that_is_neither_gold_nor_its_twin() -> None:
    # request 0: gold a; the retriever ranked b (a's twin), a, c: the only hard negative left is c.
    # request 1 (read through its gloss): gold c and e; e is Chinese-only, so one triple, against d.
    m = mined([["b", "a", "c"], ["e", "d", "c"]], [[0], [2, 4]])
    assert triples(m) == [("request 0", "book a room", "weather now"), ("gloss", "weather now", "send mail")]


def test_a_request_whose_gold_tools_the_english_model_cannot_read_is_left_out() -> None:
    assert triples(mined([["a", "b"]], [[4]])) == []
