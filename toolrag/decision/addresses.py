"""Tools that take a web address.

A language model cannot open a web address by itself, so a request that holds one ("what does
https://example.com/pricing say") needs a tool that takes it, even when its words read like chit-chat and no
tool description shares them. The decision's view (:mod:`toolrag.decision.view`) holds the two facts as the
features ``url`` (the request holds an address: :func:`toolrag.text.has_web_address`, read where the search reads
the request) and ``takes_url`` (the top tool takes one: :func:`takes_web_address`). Pure code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["takes_web_address"]

#: Words of a parameter name that say it takes an address ("url", "pageUrl", "target_uri", "links").
_ADDRESS_WORDS = frozenset({"url", "urls", "uri", "uris", "link", "links", "href", "website", "webpage"})
#: JSON Schema string formats of an address.
_ADDRESS_FORMATS = frozenset({"uri", "url", "iri", "uri-reference", "iri-reference"})
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
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
