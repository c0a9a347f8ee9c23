"""Web addresses in a request, and tools that take one.

A language model cannot open a web address by itself, so a request that holds one ("what does
https://example.com/pricing say") needs a tool that takes it, even when its words read like chit-chat and no
tool description shares them: small text models barely link a bare URL to "Fetch a URL". The decision's view
(:mod:`toolrag.decision.view`) holds these two facts as the features ``url`` and ``takes_url``, read by the
shipped decision model.

The text models read the request with each address replaced by words that say what it is
(:func:`stand_in_addresses`): "summarize www.python.org/downloads" is read as "summarize the web page URL". The
address's own pieces (python, org, downloads) otherwise pull the request towards tools that share them (a code
search for "python") and away from the one that opens addresses. A file name at the end of the address is kept
("the web page URL whitepaper.pdf"): it says what kind of document is behind it. Pure code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ADDRESS_STAND_IN", "has_web_address", "stand_in_addresses", "takes_web_address"]

#: An http(s) address, or one starting with "www.".
_ADDRESS = re.compile(r"\bhttps?://[^\s<>\"'`]+|\bwww\.[a-z0-9-]+\.[^\s<>\"'`]+", re.IGNORECASE)
#: Words of a parameter name that say it takes an address ("url", "pageUrl", "target_uri", "links").
_ADDRESS_WORDS = frozenset({"url", "urls", "uri", "uris", "link", "links", "href", "website", "webpage"})
#: JSON Schema string formats of an address.
_ADDRESS_FORMATS = frozenset({"uri", "url", "iri", "uri-reference", "iri-reference"})
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
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


def takes_web_address(parameters: Mapping[str, Any]) -> bool:
    """Whether a tool's JSON Schema has a top-level parameter for a web address: its name holds one of the
    words url, uri, link, href, website, webpage (snake, kebab or camel case, plural too), or its string
    format is uri / url / iri. Example: {"properties": {"pageUrl": {"type": "string"}}} -> True;
    {"properties": {"path": {"type": "string"}}} -> False."""
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping):
        return False
    for name, schema in properties.items():
        words = {w.lower() for w in _WORDS.findall(str(name))}
        if words & _ADDRESS_WORDS:
            return True
        if isinstance(schema, Mapping) and str(schema.get("format", "")).lower() in _ADDRESS_FORMATS:
            return True
    return False


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

