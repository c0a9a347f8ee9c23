"""What a request leaves open for a tool: its required parameters that the request gives no value for.

"Plan an auction event, I have event id 12345 and the venue" serves ``auctionEventPlanner``, but its required
``date`` is nowhere in the request: the agent has to ask before it can call. Each required parameter is read for
the kind of value it takes (a date or time, a number, an e-mail or web address, an id, a choice of listed
values, a place) and the request for a value of that kind; a parameter of free text counts as given when the
request says something beyond its verb. A request with an image gives every parameter that takes an image or a
file (``image_url``, ``photo``, ``screenshot``, ``attachment``, ``图片`` ...), and the text read in the image counts
as the request's own (the boarding pass holds the flight and the date). Word-level and approximate on purpose:
the decision model learns how much to trust it (``open`` in :data:`toolrag.decision.view.FEATURES`). Pure code,
no model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolrag.text import CJK_RANGES, has_web_address

__all__ = ["open_parameters", "required_parameters"]

_DATE = re.compile(
    r"\d{1,4}[-/.]\d{1,2}(?:[-/.]\d{1,4})?|\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\b\d{1,2}:\d{2}\b|\b(?:today|tomorrow|"
    r"tonight|yesterday|now|noon|midnight|morning|afternoon|evening|weekend|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|next|last|this)\b|\b(?:19|20)\d{2}\b"
    r"|今天|明天|后天|昨天|前天|今晚|明晚|周[一二三四五六日末]|星期|下周|上周|本周|下个月|上个月|[0-9一二三四五六七八九十]+[月日号点时]",
    re.IGNORECASE)
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|hundred|"
                     r"thousand|dozen|half|a couple)\b|[一二两三四五六七八九十百千万半]", re.IGNORECASE)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
_IDENT = re.compile(r"\b(?=[A-Za-z_-]*\d)[A-Za-z0-9][A-Za-z0-9_-]{2,}\b|\b\d{3,}\b")
_QUOTED = re.compile(r"[\"“”'‘’「」『』《》][^\"“”'‘’「」『』《》]{1,80}[\"“”'‘’「」『』《》]")
_WORDS = re.compile(f"[A-Za-z]+|[{CJK_RANGES}]")
#: Words of a parameter's name or description that say which kind of value it takes.
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"e-?mail|邮箱", re.I)),
    ("url", re.compile(r"\b(?:url|uri|link|href|website|webpage)s?\b|网址|链接", re.I)),
    ("date", re.compile(r"date|time|day|when|deadline|start|end|period|month|year|schedule|日期|时间|时段|天", re.I)),
    ("number", re.compile(r"amount|count|number|num\b|quantity|price|age|size|limit|rate|budget|total|percent|"
                          r"duration|score|数量|金额|价格|人数|数目", re.I)),
    ("id", re.compile(r"(?:^|_|\b)id\b|ids\b|code|sku|serial|编号|单号|号码|账号", re.I)),
    ("phone", re.compile(r"phone|mobile|tel\b|电话|手机", re.I)),
)
#: Words of a parameter's name or description that say it takes an image or a file: given by a request's image.
_PICTURE = re.compile(r"image|img|photo|picture|pic\b|screenshot|scan|file|attachment|upload|document|receipt|"
                      r"图片|照片|截图|图像|扫描|文件|附件|上传", re.I)


def required_parameters(parameters: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The top-level parameters a tool's JSON Schema marks required, with their schemas."""
    if not isinstance(parameters, Mapping):
        return []
    properties = parameters.get("properties")
    required = parameters.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return []
    return [(name, s if isinstance(s, Mapping) else {}) for name in required
            if isinstance(name, str) and name in properties for s in (properties[name],)]


def _kind(name: str, schema: Mapping[str, Any]) -> str:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "enum"
    kind = schema.get("type")
    if kind == "boolean":
        return "boolean"
    words = f"{name} {schema.get('description', '')}"
    for label, pattern in _KINDS:
        if pattern.search(name) or (label in ("date", "email", "url") and pattern.search(words)):
            return label
    if kind in ("integer", "number"):
        return "number"
    return "text"


def _given(kind: str, schema: Mapping[str, Any], text: str, content_words: int) -> bool:
    if kind == "boolean":
        return True
    if kind == "enum":
        low = text.lower()
        return any(isinstance(v, str | int | float) and str(v).lower() in low for v in schema["enum"])
    if kind == "email":
        return _EMAIL.search(text) is not None
    if kind == "url":
        return has_web_address(text)
    if kind == "date":
        return _DATE.search(text) is not None
    if kind in ("number", "phone"):
        return _NUMBER.search(text) is not None
    if kind == "id":
        return _IDENT.search(text) is not None or _QUOTED.search(text) is not None
    return content_words >= 3


def open_parameters(parameters: Mapping[str, Any], text: str, *, image: bool = False,
                    read: str = "") -> tuple[tuple[str, ...], int]:
    """The required parameters of a tool for which ``text`` holds no value of their kind (schema order), and how
    many it requires. ``image``: the request has an image, which gives every parameter taking an image or a file;
    ``read``: the text read in it, read as the request's own."""
    required = required_parameters(parameters)
    said = f"{text} {read}" if read else text
    content_words = len(_WORDS.findall(said))
    return tuple(name for name, schema in required
                 if not (image and _PICTURE.search(f"{name} {schema.get('description', '')}"))
                 and not _given(_kind(name, schema), schema, said, content_words)), len(required)
