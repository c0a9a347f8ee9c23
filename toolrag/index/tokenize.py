"""Tokenisation for the BM25 keyword index.

Dense embeddings miss exact identifiers ("SKU-1001", "query_stock") and rare domain words; BM25 over a
tokenisation that understands identifiers and Chinese catches them. This module is pure CPU code: no models.

Tokenisation choices (each measured on the mini catalog of tests/test_lexical.py: docs/measurements.md):

* Chinese runs are segmented with ``jieba.lcut_for_search`` (search-engine mode: a long word is emitted
  *and* its dictionary sub-words, so "电子邮件" yields 电子, 邮件, 电子邮件 and the query "发邮件" still meets
  the tool "发送电子邮件"); plain ``lcut`` emits only the long word and missed requests.
* Identifiers are split into their words (snake, kebab, dotted, camel and Pascal case); letters followed by
  digits stay together ("V2" -> "v2", "utf8"). The whole identifier is *not* emitted as an extra token:
  it changed nothing measurable while inflating term frequencies and document lengths; its parts already match.
* A tiny plural stripper ("invoices" -> "invoice", "queries" -> "query", "batches" -> "batch") is applied
  to English words of documents and queries alike ("claim my travel expenses" was missed without it). It is
  deliberately not a full stemmer: verb forms stay as written.
* Other languages (issue 43): a line's language comes from :func:`toolrag.language.detect_language`, and the words
  of a line in a language with inflections are cut to their Snowball stems (``snowballstemmer``, pure Python:
  "переговорную"/"переговорной" -> "переговорн", "reuniones"/"reunión" -> "reunion"); Japanese (a line with kana),
  Korean and Thai runs, written without spaces between words or with particles glued to them, become overlapping
  character bigrams ("会議室を" -> 会議, 議室, 室を), as CJK search engines index them. Chinese keeps jieba; English
  keeps its plural stripper, so English and Chinese tokens are as before.
"""

from __future__ import annotations

import functools
import logging
import re
import tempfile
import threading
import unicodedata
from pathlib import Path
from typing import Any

from toolrag.config import data_dir
from toolrag.errors import ModelUnavailable, SettingsError
from toolrag.language import DETECTOR_KEY, detect_language
from toolrag.text import CJK_RANGES, SCRIPT_RANGES

__all__ = ["EN_STOPWORDS", "LEXICAL_VERSION", "STEMMED", "ZH_STOPWORDS", "load_segmenter", "segment", "tokenize"]

#: Bumped whenever :func:`tokenize` changes what it returns: saved serving states (their BM25 arrays) and
#: decision models are keyed by it, so an index built with other tokens is rebuilt, never mixed.
#: 3: Snowball stems of inflected languages, character bigrams of Japanese, Korean and Thai (issue 43); the stems
#: follow each line's language, so the language detector's key is part of it.
LEXICAL_VERSION = f"3|{DETECTOR_KEY}"

#: The Snowball stemmer of each language whose words are stemmed (ISO 639-1 -> snowballstemmer's name).
STEMMED = {"ru": "russian", "uk": "russian", "es": "spanish", "de": "german", "fr": "french", "pt": "portuguese",
           "it": "italian", "nl": "dutch", "sv": "swedish", "da": "danish", "fi": "finnish", "ro": "romanian",
           "hu": "hungarian", "tr": "turkish", "pl": "polish", "cs": "czech", "id": "indonesian", "el": "greek",
           "ar": "arabic", "fa": "persian", "hi": "hindi"}
#: Runs written without spaces between words, read as character bigrams: Hangul and Thai always, kana and Han
#: together in a line with kana (Japanese); a Han run in a line without kana is Chinese (jieba).
_BIGRAM_SCRIPTS = SCRIPT_RANGES["Hangul"] + SCRIPT_RANGES["Thai"]
_KANA = SCRIPT_RANGES["Kana"]
_HAS_KANA = re.compile(f"[{_KANA}]")

logger = logging.getLogger(__name__)

_CJK = CJK_RANGES
_SPACELESS = _CJK + _KANA + _BIGRAM_SCRIPTS
# A CJK run, a Japanese run (Han and kana), a Hangul or Thai run, or a run of other letters/digits (no
# underscore): every other character separates tokens.
_SEGMENT_RE = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<kana>[{_CJK}{_KANA}]+)|(?P<bigram>[{_BIGRAM_SCRIPTS}]+)"
                         rf"|(?P<word>[^\W_{_SPACELESS}]+)")
_JA_SEGMENT_RE = re.compile(rf"(?P<kana>[{_CJK}{_KANA}]+)|(?P<bigram>[{_BIGRAM_SCRIPTS}]+)"
                            rf"|(?P<word>[^\W_{_SPACELESS}]+)")
# Split points inside a word: lower/digit -> Upper ("getWeather", "V2Api"), and the end of an acronym
# ("HTTPServer" -> HTTP | Server). Letter -> digit is not a split point ("V2", "utf8").
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# fmt: off
# Dropped tokens: function words that say nothing about which tool fits ("'s" and "n't" leave s, t, ...).
EN_STOPWORDS = frozenset(
    {
        "a", "an", "the", "of", "to", "for", "in", "on", "at", "by", "from", "with", "and", "or", "not",
        "no", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "my", "me", "i",
        "you", "your", "we", "our", "us", "it", "its", "this", "that", "these", "those", "there", "here",
        "what", "which", "who", "how", "when", "where", "please", "can", "could", "would", "should", "will",
        "shall", "may", "might", "must", "want", "need", "some", "any", "all", "just", "also", "s", "t",
        "d", "ll", "re", "ve", "m",
    }
)
ZH_STOPWORDS = frozenset(
    {
        "的", "了", "是", "我", "你", "他", "她", "它", "们", "我们", "你们",
        "吗", "呢", "吧", "啊", "呀", "把", "给", "帮", "帮我", "一下", "这个",
        "那个", "这", "那", "这张", "那张", "这些", "那些", "请", "请问", "麻烦",
        "和", "与", "及", "或", "在", "也", "都", "就", "要", "我要", "想",
        "我想", "能", "可以", "一个", "一张", "怎么", "怎么样", "什么", "如何",
    }
)
# fmt: on

_JIEBA_LOCK = threading.Lock()
_JIEBA: Any = None


def _cache_dir() -> Path:
    """Writable folder for jieba's prefix-dictionary cache: ``jieba`` in the data folder
    (:func:`toolrag.config.data_dir`), else the temp folder."""
    try:
        folder = data_dir() / "jieba"
        folder.mkdir(parents=True, exist_ok=True)
    except (OSError, SettingsError) as exc:
        logger.warning("jieba caches into the temp folder: %s", exc)
        return Path(tempfile.gettempdir())
    return folder


def _jieba() -> Any:
    """The process-wide jieba tokenizer, initialised once (thread-safe; takes about 1-2 s the first time)."""
    global _JIEBA
    if _JIEBA is None:
        with _JIEBA_LOCK:
            if _JIEBA is None:
                try:
                    import jieba
                except ImportError as exc:  # pragma: no cover - jieba is a hard dependency
                    raise ModelUnavailable(
                        "Chinese text needs the jieba segmenter: pip install jieba==0.42.1"
                    ) from exc
                jieba.setLogLevel(logging.WARNING)
                segmenter = jieba.Tokenizer()
                segmenter.tmp_dir = str(_cache_dir())
                segmenter.initialize()
                _JIEBA = segmenter
    return _JIEBA


def load_segmenter() -> None:
    """Load jieba's dictionary now (the first Chinese text otherwise pays it: about a second on this CPU)."""
    _jieba()


def segment(text: str) -> list[str]:
    """``text`` cut into words by jieba's precise mode (each word once, in order; Latin runs and punctuation come
    out as they are): for reading a Chinese text word by word, not for BM25 (which uses the search mode)."""
    return list(_jieba().lcut(text))


#: Words ending in "s" that are not plurals, or whose stripped form is another common word ("news" is not
#: several "new": tools that "create a new issue" matched every request about the news).
_NOT_PLURAL = frozenset({
    "news", "series", "species", "always", "perhaps", "whereas", "besides", "sometimes", "lens", "canvas",
    "alias", "bias", "atlas", "chaos", "goods", "means", "physics", "mathematics", "economics", "politics",
    "ethics",
})


def _singular(word: str) -> str:
    """Strip an English plural ending from an ASCII word of 4+ letters (consistent, not linguistic)."""
    if len(word) < 4 or not word.isascii() or not word.isalpha() or not word.endswith("s") or word in _NOT_PLURAL:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"  # queries -> query
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]  # addresses -> address, taxes -> tax, batches -> batch
    if word.endswith(("ss", "us", "is")):
        return word  # address, status, analysis
    return word[:-1]  # invoices -> invoice


def _word_tokens(word: str, stem: Any = None) -> list[str]:
    out = []
    for part in _CAMEL_RE.split(word):
        low = part.lower()
        if low and low not in EN_STOPWORDS:
            out.append(_singular(low) if stem is None or not low.isalpha() else stem(low))
    return out


def _bigrams(run: str) -> list[str]:
    """Overlapping character pairs of a run written without spaces; a one-character run is itself."""
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


@functools.cache
def _stemmer(language: str) -> Any:
    """The Snowball stem function of ``language`` (ISO 639-1; ``None`` for a language without one), kept per
    process. A Snowball stemmer holds the word it works on, so one thread stems at a time (behind a lock; the
    words' stems are remembered)."""
    name = STEMMED.get(language)
    if name is None:
        return None
    try:
        import snowballstemmer
    except ImportError as exc:  # pragma: no cover - a pinned dependency
        raise ModelUnavailable("stemming needs snowballstemmer: pip install snowballstemmer==3.1.1") from exc
    stemmer, lock = snowballstemmer.stemmer(name), threading.Lock()

    @functools.lru_cache(maxsize=65_536)
    def stem(word: str) -> str:
        with lock:
            return str(stemmer.stemWord(word))

    return stem


def tokenize(text: str) -> list[str]:
    """Split ``text`` into BM25 terms: identifier parts, lower-cased, Chinese segmented, stop words dropped.

    Steps: NFKC (full-width letters/digits become ASCII); CJK runs go to ``jieba.lcut_for_search``; other
    runs of letters/digits are split at case changes ("GetWeatherV2" -> get, weather, v2) while ``_ . -``
    and all punctuation separate tokens; tokens are lower-cased, English plurals are stripped, and the
    stop lists ``EN_STOPWORDS``/``ZH_STOPWORDS`` are dropped. Order follows the text; repeats are kept
    (they are term frequencies).

    Lines are tokenised apart and remembered (no token spans a line break, so the result is the same): a
    document edited in one line, or searched with one line left out, re-segments that line only.
    """
    tokens: list[str] = []
    for line in text.split("\n"):
        tokens.extend(_line_tokens(line))
    return tokens


@functools.lru_cache(maxsize=65_536)
def _line_tokens(line: str) -> tuple[str, ...]:
    text = unicodedata.normalize("NFKC", line)
    tokens: list[str] = []
    stem = _stemmer(detect_language(text))
    pattern = _JA_SEGMENT_RE if _HAS_KANA.search(text) else _SEGMENT_RE
    for match in pattern.finditer(text):
        kind = match.lastgroup
        run = match.group()
        if kind == "cjk":
            for piece in _jieba().lcut_for_search(run):
                piece = piece.strip()
                if piece and piece not in ZH_STOPWORDS:
                    tokens.append(piece)
        elif kind in ("kana", "bigram"):
            tokens.extend(_bigrams(run))
        else:
            tokens.extend(_word_tokens(run, stem))
    return tuple(tokens)
