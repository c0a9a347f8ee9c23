"""The simulated requests of a catalog (their text and what they are about), for :mod:`toolrag.search.simulate`.

Kinds (see :mod:`toolrag.search.simulate` for how each is scored and labelled): ``example`` (a tool's example
request, left out of its tool), ``description`` (a pseudo-request from a tool's description, for tools without
examples), ``vague`` (between two look-alike tools), ``pair`` (two unrelated tools' requests joined) and
``no_tool`` (the bundled requests that need no tool). Pure text and numpy over the index snapshot: no encoding.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from toolrag.index.snapshot import IndexSnapshot
from toolrag.index.tokenize import EN_STOPWORDS, ZH_STOPWORDS, tokenize
from toolrag.search.addresses import stand_in_addresses
from toolrag.text import has_cjk, is_mostly_cjk

__all__ = ["Lexicon", "Request", "build_requests", "lookalikes", "pseudo_request"]

#: beta of the leave-one-out vector: LOO_SCALE x the example's share of the document's tokens.
LOO_SCALE = 1.5
MAX_EXAMPLES_PER_TOOL = 2
MAX_EXAMPLES = 400
MAX_DESCRIPTIONS = 300
MAX_VAGUE = 60  # edited examples; half as many generic ones
MAX_PAIRS = 90
#: Share of the catalog's nearest-neighbour pairs treated as look-alikes (the closest ones).
LOOKALIKE_SHARE = 0.25
#: Tools whose nearest neighbour is looked up for the look-alike cases (evenly spaced over larger catalogs:
#: the cases are capped at MAX_PAIRS / MAX_VAGUE anyway), and the rows compared at a time, so memory stays
#: bounded (a 100,000-tool catalog's full similarity matrix would need 37 GiB).
MAX_LOOKALIKE_TOOLS = 5000
_SIM_BLOCK = 1024
#: Request context of a pseudo-request: the names, places, dates and numbers real requests carry and tool
#: descriptions do not.
_CONTEXT_EN = ("for Priya Raman by 12 May", "in Hamburg next Tuesday", "order 4471 from Lakeside Ltd",
               "for the Orion project", "around Lyon this weekend", "for my sister Mia", "before 3pm on Friday",
               "for account 88-2190", "near Union Square", "for the Kowalski family", "about the 2019 Corolla",
               "for our Denver office")
_CONTEXT_ZH = ("给王磊，5月12日前", "在杭州西湖附近", "订单号 4471", "这周五下午三点", "给我妹妹小敏", "在成都的分公司",
               "关于那台 2019 款的车", "账户 88-2190")
#: A pseudo-request keeps one content word of the description in KEEP_EVERY.
KEEP_EVERY = 6
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Request:
    text: str
    kind: str
    gold: tuple[int, ...] = ()
    loo: tuple[tuple[int, float], ...] = ()
    """(row, beta): the tool's vectors become unit(d - beta * q) for this request."""
    left_out: tuple[tuple[int, str], ...] = ()
    """(row, example): the example's words leave the tool's BM25 text for this request."""
    chat_self: int = -1
    """Index of this request in the bundled no-tool set (left out of its own similarity)."""
    parts: tuple[int, ...] = ()
    """A two-tool request: the indices of the two requests it joins (its vectors mix theirs)."""


def build_requests(snap: IndexSnapshot, allowed: np.ndarray, token_count: Callable[[str], int],
              chat: Sequence[str]) -> list[Request]:
    tools = snap.catalog.tools
    out: list[Request] = []
    with_examples = [int(r) for r in allowed if any(e.query.strip() for e in tools[r].examples)]
    per_tool = max(1, min(MAX_EXAMPLES_PER_TOOL, MAX_EXAMPLES // max(len(with_examples), 1)))
    for row in _spread(with_examples, MAX_EXAMPLES // per_tool):
        tool = tools[row]
        doc_tokens = max(token_count(tool.document_text()), 1)
        for ex in [e for e in tool.examples if e.query.strip()][:per_tool]:
            beta = LOO_SCALE * token_count(ex.query) / doc_tokens
            # read as a search reads it (a web address as "the web page URL"); the tool's texts lose the
            # example as written
            out.append(Request(stand_in_addresses(ex.query.strip()), "example", (row,), ((row, min(beta, 0.5)),),
                                ((row, ex.query.strip()),)))
    taken = set(with_examples)
    bare = [int(r) for r in allowed if int(r) not in taken]
    for n, row in enumerate(_spread(bare, MAX_DESCRIPTIONS)):
        text = pseudo_request(tools[row].description, n)
        if text:
            out.append(Request(text, "description", (row,)))
    out.extend(_vague(snap, allowed, out))
    out.extend(_pairs(snap, out))
    out.extend(Request(text, "no_tool", chat_self=i) for i, text in enumerate(chat))
    return out


def _spread(rows: Sequence[int], limit: int) -> list[int]:
    """At most ``limit`` of ``rows`` at evenly spaced positions (deterministic)."""
    if len(rows) <= limit:
        return list(rows)
    picks = np.round(np.linspace(0, len(rows) - 1, limit)).astype(int)
    return [rows[i] for i in picks]


def _content(token: str) -> bool:
    low = token.lower().strip(".,;:!?()[]{}\"'")
    return bool(low) and low not in EN_STOPWORDS and low not in ZH_STOPWORDS


def _pieces(text: str) -> list[str]:
    """Surface pieces of a text: words, and Chinese words from jieba's plain segmentation."""
    if not has_cjk(text):
        return _WORD.findall(text)
    from toolrag.index.tokenize import _jieba

    return [p for p in _jieba().lcut(text) if p.strip()]


def _join(pieces: Sequence[str], cjk: bool) -> str:
    return ("" if cjk else " ").join(pieces).strip()


def pseudo_request(description: str, n: int) -> str:
    """One content word in :data:`KEEP_EVERY` of the description's first sentence (the first always), plus a
    request context with names, places or numbers no tool text has."""
    first = re.split(r"(?<=[.!?。！？])\s*", description.strip(), maxsplit=1)[0].rstrip(".!?。！？ ")
    cjk = has_cjk(first)
    pieces = _pieces(first)
    content = [i for i, p in enumerate(pieces) if _content(p)]
    if len(content) < 2:
        return ""
    dropped = {c for k, c in enumerate(content) if k % KEEP_EVERY}
    kept = [p for i, p in enumerate(pieces) if i not in dropped]
    context = _CONTEXT_ZH[n % len(_CONTEXT_ZH)] if cjk else _CONTEXT_EN[n % len(_CONTEXT_EN)]
    return _join(kept, cjk) + ("，" if cjk else ", ") + context


def lookalikes(snap: IndexSnapshot, allowed: np.ndarray) -> list[tuple[int, int, float]]:
    """Each tool (at most MAX_LOOKALIKE_TOOLS, evenly spaced) with its nearest neighbour among all permitted
    tools (multilingual profile cosine), the closest LOOKALIKE_SHARE of these pairs, most similar first."""
    dense = snap.vectors["dense"][allowed]
    n = len(allowed)
    probe = np.arange(n) if n <= MAX_LOOKALIKE_TOOLS else np.linspace(0, n - 1, MAX_LOOKALIKE_TOOLS).astype(int)
    pairs: dict[tuple[int, int], float] = {}
    for start in range(0, len(probe), _SIM_BLOCK):
        rows = probe[start:start + _SIM_BLOCK]
        sims = dense[rows] @ dense.T
        sims[np.arange(len(rows)), rows] = -np.inf  # a tool is not its own neighbour
        nearest = sims.argmax(axis=1)
        for k, (i, j) in enumerate(zip(rows, nearest, strict=True)):
            a, b = sorted((int(allowed[i]), int(allowed[j])))
            pairs[(a, b)] = float(sims[k, j])
    ranked = sorted(((a, b, s) for (a, b), s in pairs.items()), key=lambda p: -p[2])
    return ranked[: max(3, math.ceil(LOOKALIKE_SHARE * len(ranked)))]


class Lexicon:
    """BM25 facts of the snapshot for simulated requests: each tool's term counts (read from the index),
    document frequencies, and BM25 scores of a tool's text with an example's words left out."""

    def __init__(self, snap: IndexSnapshot) -> None:
        self.snap = snap
        self._counts: dict[int, Counter[str]] = {}
        self.df: Counter[str] = Counter()
        lengths = []
        for doc_id in snap.ids:
            tokens = snap.bm25.tokens(doc_id)
            self.df.update(set(tokens))
            lengths.append(len(tokens))
        self.n = len(snap.ids)
        self.avgdl = float(np.mean(lengths)) if lengths and sum(lengths) else 1.0
        self._example_terms: dict[str, Counter[str]] = {}

    def counts(self, row: int) -> Counter[str]:
        if row not in self._counts:
            self._counts[row] = Counter(self.snap.bm25.tokens(self.snap.ids[row]))
        return self._counts[row]

    def without(self, row: int, example: str) -> Counter[str]:
        """The tool's term counts without one example's words (its line in the tool's text)."""
        if example not in self._example_terms:
            self._example_terms[example] = Counter(tokenize(example))
        return self.counts(row) - self._example_terms[example]

    def score(self, terms: Sequence[str], counts: Counter[str]) -> float:
        """BM25 (Lucene idf, as :class:`toolrag.index.bm25.BM25Index`) of distinct ``terms`` in a text with
        these term counts; document frequencies and mean length are the catalog's."""
        k1, b = self.snap.bm25.k1, self.snap.bm25.b
        length = sum(counts.values())
        total = 0.0
        for term in dict.fromkeys(terms):
            tf = counts.get(term, 0)
            df = self.df.get(term, 0)
            if tf <= 0 or df <= 0:
                continue
            idf = math.log1p((self.n - df + 0.5) / (df + 0.5))
            total += idf * tf / (tf + k1 * (1.0 - b + b * length / self.avgdl))
        return total


def _vague(snap: IndexSnapshot, allowed: np.ndarray, base: Sequence[Request]) -> list[Request]:
    """Requests between look-alikes: a request of one with the words only its own profile has removed."""
    by_row: dict[int, list[Request]] = {}
    for r in base:
        by_row.setdefault(r.gold[0], []).append(r)
    out: list[Request] = []
    lexicon = Lexicon(snap)
    pairs = lookalikes(snap, allowed)
    for a, b, _ in pairs:
        for own, other in ((a, b), (b, a)):
            for req in by_row.get(own, [])[:2]:
                # the example's own words (names, numbers) are not what sets its tool apart: compare the
                # tool's text without the example
                example = dict(req.left_out).get(own)
                own_words = lexicon.without(own, example) if example is not None else lexicon.counts(own)
                other_words = lexicon.counts(other)
                cjk = has_cjk(req.text)
                pieces = _pieces(req.text)
                kept = [p for p in pieces if not any(own_words.get(t, 0) > 0 and t not in other_words
                                                     for t in tokenize(p))]
                if len(kept) == len(pieces) or not any(_content(p) for p in kept):
                    continue
                out.append(Request(_join(kept, cjk), "vague", (own, other), req.loo, req.left_out))
    generic = [g for n, (a, b, _) in enumerate(pairs)
               if (g := _shared_request(snap, lexicon, a, b, n)) is not None]
    return _spread_requests(out, MAX_VAGUE) + _spread_requests(generic, MAX_VAGUE // 2)


_SHARED_EN = ("{a} something", "help me with the {a}", "I need {a} {b}", "can you do the {a} thing",
              "{a} {b} please", "something about {a}")
_SHARED_ZH = ("帮我{a}一下", "{a}的事帮我弄一下", "处理一下{a}", "{a}{b}")


def _shared_request(snap: IndexSnapshot, lexicon: Lexicon, a: int, b: int, n: int) -> Request | None:
    """A generic request made of the words two look-alikes share ("schedule something", "帮我翻译一下"): the
    two rarest content words of the catalog that both tools' names and descriptions use, in a template."""
    tools = snap.catalog.tools

    def words(row: int) -> set[str]:
        tool = tools[row]
        return set(tokenize(f"{tool.name} {tool.description}"))

    shared = [t for t in words(a) & words(b) if _content(t) and not t.isdigit() and len(t) > 1]
    if not shared:
        return None
    shared.sort(key=lambda t: (lexicon.df.get(t, 0), t))
    first, second = shared[0], shared[1] if len(shared) > 1 else ""
    cjk = is_mostly_cjk(tools[a].description) and is_mostly_cjk(tools[b].description)
    templates = [t for t in (_SHARED_ZH if cjk else _SHARED_EN) if second or "{b}" not in t]
    text = templates[n % len(templates)].format(a=first, b=second).strip()
    return Request(text, "vague", (a, b))


def _pairs(snap: IndexSnapshot, base: Sequence[Request]) -> list[Request]:
    """Two-tool requests: requests of two tools that are not close neighbours, joined."""
    singles = [i for i, r in enumerate(base) if r.kind in ("example", "description")]
    if len(singles) < 4:
        return []
    dense = snap.vectors["dense"]
    limit = _median_nn(snap)
    out: list[Request] = []
    half = len(singles) // 2
    step = max(1, half // MAX_PAIRS)
    for k in range(0, half, step):
        i, j = singles[k], singles[(k + half + 7) % len(singles)]
        a, b = base[i], base[j]
        ra, rb = a.gold[0], b.gold[0]
        if ra == rb or float(dense[ra] @ dense[rb]) >= limit:
            continue
        cjk = has_cjk(a.text) and has_cjk(b.text)
        text = f"{a.text}，然后{b.text}" if cjk else f"{a.text.rstrip('.?!')}, and {b.text}"
        out.append(Request(text, "pair", (ra, rb), a.loo + b.loo, a.left_out + b.left_out, parts=(i, j)))
    return out[:MAX_PAIRS]


def _median_nn(snap: IndexSnapshot) -> float:
    dense = snap.vectors["dense"]
    if len(dense) < 2:
        return 1.0
    sample = dense[_spread(list(range(len(dense))), 2000)]
    sims = sample @ dense.T
    sims[sims > 0.9999] = -np.inf  # each tool itself
    return float(np.median(sims.max(axis=1)))


def _spread_requests(requests: Sequence[Request], limit: int) -> list[Request]:
    return [requests[i] for i in _spread(list(range(len(requests))), limit)]
