"""The one answer to "which language is this request written in?" (issue 43).

First the writing system, by the letters' Unicode ranges (:data:`toolrag.text.SCRIPT_RANGES`): a text whose letters
are at least 20% Hangul is Korean; at least 20% Han and kana together is Japanese when a tenth of those are kana,
else Chinese (exactly :func:`toolrag.text.is_mostly_cjk` when there is no kana, so every Chinese path of the search
reads the same texts as before); Thai, Devanagari, Greek, Hebrew and the others name their language. Texts in
Latin, Cyrillic or Arabic letters go to a naive Bayes identifier of byte n-grams (``py3langid``, a fork of
langid.py, pure Python and numpy, offline; about 0.2 ms a request on this CPU), restricted to the languages of that
script. A Latin text is English unless the identifier gives English less than 0.1 (then it is the likeliest other
language): a short English request ("order me a large pepperoni pizza": Italian 0.49, English 0.25) must not lose
the English model; a short one in another language that the identifier cannot place ("Wird M-1017 knapp?") is
read as English, as before, and so is a Latin text of fewer than four words.
A text without letters is ``und`` (undetermined, BCP 47), which every signal reads as it reads English.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import threading
from typing import Any

from toolrag.errors import ModelUnavailable
from toolrag.text import SCRIPT_RANGES

__all__ = ["DETECTOR_KEY", "ENGLISH_READS", "LANGUAGE_NAMES", "MEASURED", "UNDETERMINED", "detect_language",
           "english_model_reads", "load_identifier", "script_counts"]

#: Bumped whenever :func:`detect_language` changes its answers.
DETECTOR_VERSION = 1
#: Names the detector's answers in the keys of what depends on them (BM25's tokens, what the English model reads):
#: its version and the identifier's, so a saved index tokenised under other answers is rebuilt, never misread.
DETECTOR_KEY = f"lang-v{DETECTOR_VERSION}|py3langid-{importlib.metadata.version('py3langid')}"

#: The answer for a text without letters (a bare id, digits, an image's empty caption).
UNDETERMINED = "und"
#: The languages (:func:`detect_language`) whose requests the English model reads as typed: English and texts
#: without letters. A Chinese request is read through its gloss (:mod:`toolrag.search.gloss`); any other
#: (Japanese, Korean, Russian, Spanish, ...) not at all, so its weight goes to the signals that read it
#: (docs/results.md, "Requests in other languages").
ENGLISH_READS = frozenset({"en", UNDETERMINED})
#: The languages the multilingual labelled set measures (sample_tools/queries_multilingual.yaml; Chinese by the
#: bundled queries.yaml), in the order the playground names them.
MEASURED = ("en", "zh", "ja", "ko", "ru", "es", "de", "fr", "pt", "vi")
#: Each measured language in its own words.
LANGUAGE_NAMES = {"en": "English", "zh": "中文", "ja": "日本語", "ko": "한국어", "ru": "русский", "es": "español",
                  "de": "Deutsch", "fr": "français", "pt": "português", "vi": "Tiếng Việt"}

#: Share of a text's letters from which a writing system other than Latin names its language (as
#: :data:`toolrag.text.MOSTLY_CJK` does for Chinese).
_SHARE = 0.2
#: Scripts written by one language the search serves.
_ONE_LANGUAGE = {"Hangul": "ko", "Thai": "th", "Devanagari": "hi", "Greek": "el", "Hebrew": "he", "Bengali": "bn",
                 "Tamil": "ta", "Georgian": "ka", "Armenian": "hy"}
#: Scripts shared by several languages: the identifier chooses among these.
_SHARED = {
    "Latin": ("en", "es", "de", "fr", "pt", "it", "nl", "vi", "id", "tr", "pl", "cs", "sv", "da", "fi", "ro", "hu"),
    "Cyrillic": ("ru", "uk", "kk"),  # Bulgarian took two Russian requests with English words in them
    "Arabic": ("ar", "fa", "ur"),
}
#: A Latin text of fewer words (an id, a name, a parameter and its description, a line read in a business card:
#: "M-1017", "lines Order lines.", "Tel 138 0813 5521") is English without asking the identifier, which is unsure
#: of so few words ("M-1017" read as Romanian, "Pieces: 1 of 1" as Romanian, "Tel 138 0813 5521" as Italian). A
#: word: a run between spaces with a letter and no digit.
_FEW_WORDS = 4
_WORD = re.compile(r"[^\d\s]*[^\W\d_][^\d\s]*")
#: A Latin text is another language than English only when the identifier gives English less than this.
_NOT_ENGLISH = 0.1
_PATTERNS = {name: re.compile(f"[{ranges}]") for name, ranges in SCRIPT_RANGES.items()}

_LOCK = threading.Lock()
_IDENTIFIER: Any = None


def script_counts(text: str) -> dict[str, int]:
    """How many letters of ``text`` each writing system of :data:`toolrag.text.SCRIPT_RANGES` holds (those with
    none left out)."""
    counts = {name: len(pattern.findall(text)) for name, pattern in _PATTERNS.items()}
    return {name: n for name, n in counts.items() if n}


def load_identifier() -> Any:
    """The process-wide language identifier, read once (about 2 s: its model is a 4.6 MB compressed file)."""
    global _IDENTIFIER
    if _IDENTIFIER is None:
        with _LOCK:
            if _IDENTIFIER is None:
                try:
                    from py3langid.langid import MODEL_FILE, LanguageIdentifier
                except ImportError as exc:  # pragma: no cover - a pinned dependency
                    raise ModelUnavailable("telling languages apart needs py3langid: pip install py3langid==0.4.0"
                                           ) from exc
                identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                identifier.set_languages(sorted({lang for langs in _SHARED.values() for lang in langs}))
                _IDENTIFIER = identifier
    return _IDENTIFIER


@functools.lru_cache(maxsize=8192)
def detect_language(text: str) -> str:
    """The language of ``text`` as an ISO 639-1 code ("en", "zh", "ja", "ko", "ru", "es", ...), or
    :data:`UNDETERMINED` when it has no letters. See the module's docstring for how."""
    counts = script_counts(text)
    letters = sum(1 for c in text if c.isalpha())
    if not counts or not letters:
        return UNDETERMINED
    han, kana = counts.get("Han", 0), counts.get("Kana", 0)
    rivals = {name: n for name, n in counts.items() if name not in ("Latin", "Han", "Kana")}
    rivals["CJK"] = han + kana
    script, n = max(rivals.items(), key=lambda item: item[1])
    if n / letters >= _SHARE:
        if script == "CJK":
            return "ja" if kana and kana * 10 >= han + kana else "zh"
        if script in _ONE_LANGUAGE:
            return _ONE_LANGUAGE[script]
        return _identify(text, _SHARED[script])
    if han / letters >= _SHARE:  # as is_mostly_cjk: a Chinese text with more Cyrillic than Han letters is rare
        return "zh"
    if not counts.get("Latin"):
        return UNDETERMINED
    if sum(1 for w in text.split() if _WORD.fullmatch(w)) < _FEW_WORDS:
        return "en"
    return _identify(text, _SHARED["Latin"])


def _identify(text: str, languages: tuple[str, ...]) -> str:
    ranked = [(lang, p) for lang, p in load_identifier().rank(text) if lang in languages]
    if "en" not in languages:
        return str(ranked[0][0])
    total = sum(p for _, p in ranked) or 1.0
    english = next(p for lang, p in ranked if lang == "en") / total
    return "en" if english >= _NOT_ENGLISH else str(next(lang for lang, _ in ranked if lang != "en"))


def english_model_reads(language: str) -> bool:
    """Whether the English model reads a request in ``language`` at all: as typed (:data:`ENGLISH_READS`) or,
    Chinese, through its gloss. The decision reads a request it does not read as it learned such requests
    (:func:`toolrag.decision.view.as_unread`)."""
    return language in ENGLISH_READS or language == "zh"
