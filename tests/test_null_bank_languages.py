"""The decision's no-tool bank split by language (issue 43): the bundled requests' languages as the detector
reads them, and which rows a request in each language is measured against. Pure numpy over the real bank texts
(vectors stand in: the split does not read them); the real bank through the real models is covered by
tests/test_multilingual_search.py and the decision tests."""

from __future__ import annotations

from collections import Counter

import numpy as np

from toolrag.decision.nulls import ALL, MIN_ROWS, NullBank, bank_texts
from toolrag.language import detect_language
from toolrag.text import is_mostly_cjk

MEASURED = ("en", "zh", "ja", "ko", "ru", "es", "de", "fr", "pt", "vi")


def _bank() -> NullBank:
    texts = bank_texts()
    vectors = np.arange(len(texts), dtype=np.float32)[:, None] * np.ones((1, 3), dtype=np.float32)
    return NullBank(texts, tuple(detect_language(t) for t in texts), {"dense": vectors})


def test_every_measured_language_has_its_own_no_tool_requests() -> None:
    counts = Counter(detect_language(t) for t in bank_texts())
    assert all(counts[lang] >= MIN_ROWS for lang in MEASURED), counts


def test_english_and_chinese_requests_read_the_rows_they_read_before() -> None:
    """Before issue 43 the bank was split by is_mostly_cjk: Chinese rows for a Chinese request, the others (all
    English then) for any other. English and Chinese requests still read exactly those rows."""
    bank = _bank()
    texts = bank.texts
    old_zh = {t for t in texts if is_mostly_cjk(t) and detect_language(t) in ("en", "zh")}
    old_en = {t for t in texts if not is_mostly_cjk(t) and detect_language(t) in ("en", "zh")}

    def rows(language: str) -> set[str]:
        picked = bank.by_language[("dense", bank.group(language))][:, 0].astype(int)
        return {texts[i] for i in picked}

    assert rows("zh") == old_zh and rows("en") == old_en and rows("und") == old_en
    near = {texts[i] for i in bank.near[("dense", bank.group("en"))][:, 0].astype(int)}
    assert near == old_zh | old_en == {texts[i] for i in bank.near[("dense", "zh")][:, 0].astype(int)}


def test_other_languages_read_their_own_rows_or_all() -> None:
    bank = _bank()
    assert bank.group("ru") == "ru" and bank.group("ja") == "ja"
    ru = {bank.texts[i] for i in bank.by_language[("dense", "ru")][:, 0].astype(int)}
    assert len(ru) >= MIN_ROWS and all(detect_language(t) == "ru" for t in ru)
    assert bank.group("it") == ALL  # too few Italian rows: measured against every row
    assert len(bank.by_language[("dense", ALL)]) == len(bank.texts)
