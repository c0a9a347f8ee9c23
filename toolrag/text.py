"""Language facts about text that several layers need: the one definition of a CJK character.

The tokenizer segments CJK runs with jieba, the English model skips mostly-CJK texts, and the clarifying
question is asked in Chinese for a Chinese request: all three use :data:`CJK_RANGES`, so they never disagree
about what counts as Chinese.
"""

from __future__ import annotations

import re

__all__ = ["CJK_RANGES", "has_cjk", "is_mostly_cjk"]

#: CJK Unified Ideographs with Extension A, the compatibility ideographs and Extensions B-F (a regex class body).
CJK_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
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
