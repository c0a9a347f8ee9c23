"""Facts about text that several layers need: the one definition of a CJK character, and the one cleaner
of text that no encoder can read (invalid UTF-8, lone surrogates, control characters).

The tokenizer segments CJK runs with jieba, the English model reads a mostly-CJK text only through its English
segments (:func:`english_segments`), and the clarifying
question is asked in Chinese for a Chinese request: all three use :data:`CJK_RANGES`, so they never disagree
about what counts as Chinese; the language detector (:mod:`toolrag.language`) reads the other writing systems
from :data:`SCRIPT_RANGES`. Every request text (the library, the CLI's arguments, the app) goes through
:func:`clean_text` before anything else reads it.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field

__all__ = ["ADDRESS_STAND_IN", "CJK_RANGES", "SCRIPT_RANGES", "CleanText", "clean_text", "has_cjk", "has_web_address",
           "is_mostly_cjk", "stand_in_addresses"]

#: CJK Unified Ideographs with Extension A, the compatibility ideographs and Extensions B-F (a regex class body).
CJK_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
#: The letters of each writing system the language detector (:mod:`toolrag.language`) tells apart, as regex class
#: bodies; ``Han`` is :data:`CJK_RANGES`. Kana: Hiragana, Katakana (with the prolonged sound mark), its phonetic
#: extensions and the half-width forms; Hangul: syllables, Jamo and compatibility Jamo; Latin: ASCII letters,
#: Latin-1, Extended-A/B and Extended Additional (Vietnamese).
SCRIPT_RANGES = {
    "Han": CJK_RANGES,
    "Kana": "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f",
    "Hangul": "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f",
    "Cyrillic": "\u0400-\u052f",
    "Greek": "\u0370-\u03ff",
    "Hebrew": "\u0590-\u05ff",
    "Arabic": "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff",
    "Devanagari": "\u0900-\u097f",
    "Bengali": "\u0980-\u09ff",
    "Tamil": "\u0b80-\u0bff",
    "Thai": "\u0e00-\u0e7f",
    "Georgian": "\u10a0-\u10ff",
    "Armenian": "\u0530-\u058f",
    "Latin": "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff",
}
_CJK = re.compile(f"[{CJK_RANGES}]")
#: Share of CJK letters from which an English-only model cannot read a text.
MOSTLY_CJK = 0.2


def has_cjk(text: str) -> bool:
    """True when ``text`` contains at least one CJK ideograph."""
    return _CJK.search(text) is not None


def is_mostly_cjk(text: str) -> bool:
    """True when at least 20% of the letters are CJK ideographs: an English-only model can't read the text."""
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(1 for c in letters if _CJK.match(c)) / len(letters) >= MOSTLY_CJK


#: A mostly-Chinese tool text is read by the English model only when its English parts hold this many words.
ENGLISH_SEGMENT_WORDS = 8
#: Bumped whenever :func:`english_segments` changes what it returns (the English model's tool vectors are rebuilt).
ENGLISH_SEGMENTS_VERSION = 1
_SEGMENT = re.compile(r"[:：,，、;；。!！?？()（）]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*")


def english_segments(text: str) -> str:
    """What an English-only model can read of ``text``: the text itself when it is not mostly CJK
    (:func:`is_mostly_cjk`); else its segments (between line breaks and punctuation) that hold no CJK ideograph,
    joined, or "" when they hold fewer than :data:`ENGLISH_SEGMENT_WORDS` words. A bilingual tool (a Chinese
    description with an English name, tags and examples) is then read by the English model through its English
    words, as a catalog of English descriptions with Chinese tags is."""
    if not is_mostly_cjk(text):
        return text
    lines = ((s.strip() for s in _SEGMENT.split(line)) for line in text.splitlines())
    kept = [", ".join(s for s in segments if s and not _CJK.search(s) and _WORD.search(s)) for segments in lines]
    reading = "\n".join(line for line in kept if line)
    return reading if len(_WORD.findall(reading)) >= ENGLISH_SEGMENT_WORDS else ""


# ------------------------------------------------------------------------------------------ cleaning text

#: Undecodable bytes 0x80-0xFF as Python's ``surrogateescape`` decodes them (command-line arguments that are
#: not valid UTF-8): U+DC80-U+DCFF.
_ESCAPED_BYTES = re.compile("[\udc80-\udcff]")
_SURROGATES = re.compile("[\ud800-\udfff]")
#: C0 controls except tab, line feed and carriage return; DEL; C1 controls. NUL included.
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_NONCHARACTERS = re.compile("[\ufdd0-\ufdef\ufffe\uffff]")
_KINDS = (
    (_ESCAPED_BYTES, "invalid UTF-8 byte"),
    (_SURROGATES, "lone surrogate"),
    (_CONTROLS, "control character"),
    (_NONCHARACTERS, "non-character"),
)


@dataclass(frozen=True)
class CleanText:
    """Text with invalid code points replaced by spaces, what was replaced and how much was cut.

    ``removed`` maps a kind ("invalid UTF-8 byte", "lone surrogate", "control character", "non-character") to its count;
    ``length`` is the length of the text before cutting (``cut`` characters beyond the limit were dropped)."""

    text: str
    removed: dict[str, int] = field(default_factory=dict)
    length: int = 0
    cut: int = 0

    def notes(self, what: str) -> list[str]:
        """Sentences that tell the user what happened to ``what`` (e.g. "the query"); empty when nothing."""
        out = []
        if self.removed:
            out.append(f"{what} had {_describe(self.removed)}; replaced by spaces")
        if self.cut:
            out.append(f"{what} has {self.length:,} characters; only the first {self.length - self.cut:,} "
                       "were used")
        return out


def _describe(removed: dict[str, int]) -> str:
    parts = [f"{n} {kind}{'s' if n != 1 else ''}" for _, kind in _KINDS if (n := removed.get(kind, 0))]
    return " and ".join(parts)


def clean_text(text: str, *, limit: int | None = None) -> CleanText:
    """Replace what no encoder can read by spaces and cut the text to ``limit`` characters.

    Bytes escaped by ``surrogateescape`` (``sys.argv`` in a locale that is not UTF-8) that form UTF-8 are read as
    the text they spell. Replaced: bytes that are not UTF-8, surrogates
    without a partner (surrogate pairs are joined into their character first), control characters except
    tab and line breaks (NUL included) and the non-characters U+FDD0-U+FDEF, U+FFFE and U+FFFF. The cut comes
    after cleaning. ``str`` only: anything else is a ``TypeError`` (a bug in the caller).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    length = len(text)
    if limit is not None and length > limit:
        # Cleaning never lengthens the text, so cleaning a generous prefix gives the same first ``limit``.
        text = text[: 2 * limit]
    removed: dict[str, int] = {}
    if _ESCAPED_BYTES.search(text):
        # Bytes that are UTF-8 after all, read as another encoding (the arguments of a process run in the C
        # or POSIX locale): the text they spell.
        with contextlib.suppress(UnicodeError):
            text = text.encode("utf-8", "surrogateescape").decode("utf-8")
    if _SURROGATES.search(text):
        escaped = len(_ESCAPED_BYTES.findall(text))
        # Join surrogate pairs (e.g. an emoji written as two JSON escapes); lone ones stay to be counted.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        if escaped:
            removed["invalid UTF-8 byte"] = escaped
            text = _ESCAPED_BYTES.sub(" ", text)
    for pattern, kind in _KINDS[1:]:
        text, n = pattern.subn(" ", text)
        if n:
            removed[kind] = n
    cut = 0
    if limit is not None and len(text) > limit:
        text = text[:limit]
        cut = length - limit
    return CleanText(text, removed, length, cut)


# Web addresses in a request. The text models read the request with each address replaced by words that say what
# it is (:func:`stand_in_addresses`): "summarize www.python.org/downloads" is read as "summarize the web page URL".
# The address's own pieces (python, org, downloads) otherwise pull the request towards tools that share them (a
# code search for "python") and away from the one that opens addresses. A file name at the end of the address is
# kept ("the web page URL whitepaper.pdf"): it says what kind of document is behind it.

#: An http(s) address, or one starting with "www.".
_ADDRESS = re.compile(r"\bhttps?://[^\s<>\"'`]+|\bwww\.[a-z0-9-]+\.[^\s<>\"'`]+", re.IGNORECASE)
#: What the text models read in place of an address, in a Chinese request too: "URL" is what tool descriptions
#: in any language say, while a Chinese stand-in (网页链接) also matched a document tool whose description says
#: "网页链接请用..." (for web links use ...), and the address's own letters were no Chinese either.
ADDRESS_STAND_IN = "the web page URL"
#: A file name ending an address's path ("whitepaper.pdf"); page extensions (html, php, ...) say nothing more.
_FILE_NAME = re.compile(r"/([^/?#]+\.([A-Za-z0-9]{2,5}))(?:[?#].*)?$")
_PAGE_EXTENSIONS = frozenset({"html", "htm", "php", "asp", "aspx", "jsp", "shtml", "cgi"})


def has_web_address(text: str) -> bool:
    """Whether ``text`` holds an http(s) address or one starting with "www.". Example: "summarize
    https://example.com/a.pdf" -> True; "what is HTTPS?" -> False."""
    return _ADDRESS.search(text) is not None


def stand_in_addresses(text: str) -> str:
    """``text`` with each web address replaced by :data:`ADDRESS_STAND_IN`, followed by the file name the
    address ends in, if any. Example: "summarize https://example.com/files/whitepaper.pdf" -> "summarize the web
    page URL whitepaper.pdf"; text without an address is returned as it is."""
    if _ADDRESS.search(text) is None:
        return text

    def stand_in(match: re.Match[str]) -> str:
        address = match.group(0).rstrip(".,;:!?)]}，。")
        tail = match.group(0)[len(address):]
        name = _FILE_NAME.search(address)
        if name is not None and name.group(2).lower() not in _PAGE_EXTENSIONS:
            return f"{ADDRESS_STAND_IN} {name.group(1)}{tail}"
        return ADDRESS_STAND_IN + tail

    return _ADDRESS.sub(stand_in, text)

