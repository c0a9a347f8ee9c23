"""Catalog checks before any model runs: what the index would refuse, and what makes a tool hard to find or
leaks a restricted tool's name.

:func:`image_problems` lists every example image the index or the editor would refuse (not an image,
truncated, too large, a degenerate shape: :func:`toolrag.images.check_example_image`), so ``toolrag lint``
refuses a catalog that ``toolrag index`` would refuse. :func:`lint_catalog` gives quality warnings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.errors import ImageError, Problem, ProfileError
from toolrag.images import check_example_image, probe_example_image
from toolrag.strict import closest
from toolrag.text import CJK_RANGES, has_cjk

__all__ = ["STUFFING_THRESHOLD", "LintWarning", "image_problems", "keyword_stuffing", "lint_catalog", "lint_profile",
           "refuse_unusable_images", "repeats_name", "restricted_mentions", "role_problems", "stuffing_warnings"]

MIN_DESCRIPTION_CHARS = 40
MIN_EXAMPLES = 3
#: A description whose :func:`keyword_stuffing` score reaches this is flagged as keyword stuffing.
STUFFING_THRESHOLD = 0.5


@dataclass(frozen=True)
class LintWarning:
    tool_id: str
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"tool_id": self.tool_id, "code": self.code, "message": self.message}


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def repeats_name(tool: ToolProfile) -> bool:
    """Whether the description holds no word beyond the tool's name, id and parameter names (``List files
    (path)`` for ``list_files``: what an import derives when a tool has no description, or a hasty author
    writes)."""
    def words(text: str) -> set[str]:
        spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
        return {w.lower() for w in _WORD.findall(spaced)}

    own = words(tool.description)
    known = words(tool.name) | words(tool.id) | {w for p in tool.parameters.get("properties") or {} for w in words(p)}
    return bool(own) and own <= known


def lint_profile(tool: ToolProfile) -> list[LintWarning]:
    """Warnings for one profile: short description, few examples, no negatives, undocumented parameters."""
    out: list[LintWarning] = []

    def warn(code: str, message: str) -> None:
        out.append(LintWarning(tool.id, code, message))

    if repeats_name(tool):
        warn("description-repeats-name", "the description only repeats the tool's name and parameter names; "
                                         "say what it does, on what, and what it returns")
    elif len(tool.description) < MIN_DESCRIPTION_CHARS:
        warn("short-description", f"description has {len(tool.description)} characters; say what the tool "
                                  f"does, for whom and its limits (at least {MIN_DESCRIPTION_CHARS})")
    if len(tool.examples) < MIN_EXAMPLES:
        warn("few-examples", f"{len(tool.examples)} example queries; add at least {MIN_EXAMPLES} varied ones "
                             "(colloquial, formal, other language)")
    if not tool.negative_examples:
        warn("no-negative-examples", "no negative examples; add requests this tool must not serve")
    properties = tool.parameters.get("properties") or {}
    missing = [name for name, schema in properties.items()
               if not (isinstance(schema, dict) and str(schema.get("description", "")).strip())]
    if missing:
        warn("undocumented-parameters", "parameters without a description: " + ", ".join(missing))
    required = tool.parameters.get("required")
    undefined = [str(name) for name in required if name not in properties] \
        if isinstance(required, list) and isinstance(properties, dict) else []
    if undefined:
        warn("required-not-defined", "required names parameters the schema does not define: " + ", ".join(undefined)
             + f"; a call can never give them (a typo? defined: {', '.join(map(str, properties)) or 'none'})")
    if tool.deprecated and not tool.replaced_by:
        warn("deprecated-without-successor", "deprecated but replaced_by names no successor")
    stuffed = keyword_stuffing(tool.description)
    if stuffed >= STUFFING_THRESHOLD:
        warn("keyword-stuffing", f"keyword stuffing: {100 * stuffed:.0f}% of the description is a bare list of words, "
                                 "not sentences; such a tool comes up for requests it does not serve. Say in a few "
                                 "sentences what it does, for whom and its limits (terms belong in tags or examples)")
    return out


def lint_catalog(catalog: Catalog) -> list[LintWarning]:
    """Every profile's warnings, then the tools whose text names a tool with stricter permissions."""
    return [*(w for tool in catalog for w in lint_profile(tool)), *restricted_mentions(catalog)]


def stuffing_warnings(catalog: Catalog) -> list[LintWarning]:
    """The keyword-stuffing warnings of a catalog's tools (what ``toolrag import mcp`` prints)."""
    return [w for tool in catalog for w in lint_profile(tool) if w.code == "keyword-stuffing"]


def image_problems(catalog: Catalog, tools: list[ToolProfile] | None = None, *, decode: bool = True) -> list[Problem]:
    """``file:line: tool 'id': problem`` for each example image (``images`` and ``examples[].image``) of
    ``tools`` (default: all) that the index or the editor would refuse; ``decode=False`` reads only each
    file's header (:func:`toolrag.images.probe_example_image`: everything but a truncated file, in well under
    a millisecond per image), with the field that names it."""
    problems: list[Problem] = []
    checked: dict[Path, str | None] = {}
    check = check_example_image if decode else probe_example_image
    for tool in tools if tools is not None else catalog.tools:
        for file in dict.fromkeys([*(i.file for i in tool.images), *(e.image for e in tool.examples if e.image)]):
            if file not in checked:
                try:
                    check(file)
                    checked[file] = None
                except ImageError as exc:
                    checked[file] = str(exc)
            if checked[file]:
                where = f"{tool.source}:{tool.line}" if tool.source else catalog.name
                field = "images" if any(i.file == file for i in tool.images) else "examples"
                problems.append(Problem(f"{where}: tool {tool.id!r}: {checked[file]}",
                                        str(tool.source) if tool.source else catalog.name, tool.line, tool.id, field))
    return problems


def refuse_unusable_images(catalog: Catalog) -> None:
    """Refuse (``ProfileError``, the ``file:line`` messages of ``toolrag lint``) a catalog with an example image
    the index would refuse, from the files' headers: what every command and the app check before any model
    loads or any file is written."""
    problems = image_problems(catalog, decode=False)
    if problems:
        more = f" (+{len(problems) - 1} more; `toolrag lint` lists them all)" if len(problems) > 1 else ""
        raise ProfileError(str(problems[0]) + more, problems)


def role_problems(catalog: Catalog) -> list[str]:
    """Roles of ``catalog.yaml`` that hold a permission code no tool needs: a misspelt code grants nothing, so
    the role sees fewer tools than meant (``role 'x': code 'y' ...; did you mean 'z'?``)."""
    used = catalog.permission_codes
    return [f"role {role!r}: permission code {code!r} is needed by no tool, so it grants nothing; "
            f"{closest(code, used)}" for role, codes in catalog.roles.items() for code in codes if code not in used]


def restricted_mentions(catalog: Catalog) -> list[LintWarning]:
    """Warnings for tools whose text (description, embedding text, examples, parameter descriptions) names
    a tool that a caller holding exactly this tool's codes may not use: such a caller would read the restricted
    tool's name in the prompt. A name is found as a search finds the tools a request names
    (:meth:`toolrag.catalog.caller.Caller.mentioned`: an id, original or function name, without case)."""
    if not catalog.permission_codes:
        return []
    everyone = Caller.author(catalog, include_deprecated=True)
    out: list[LintWarning] = []
    for tool in catalog.tools:
        holder = Caller(frozenset(tool.permissions))
        named = dict.fromkeys(i for text in _texts(tool) for i in everyone.mentioned(catalog, text) if i != tool.id)
        for other in (catalog.get(i) for i in named):
            missing = holder.lacks(other.permissions) if other is not None else ()
            if other is None or not missing:
                continue
            out.append(LintWarning(tool.id, "names-restricted-tool",
                                   f"its text names {other.id!r} ({other.name}), which needs {', '.join(missing)} "
                                   "that this tool does not: callers who may use this tool but not that one would "
                                   "read its name in the prompt; leave it out or give this tool the same "
                                   "permissions"))
    return out


def _texts(tool: ToolProfile) -> Iterator[str]:
    yield tool.description
    if tool.embedding_text:
        yield tool.embedding_text
    yield from (e.query for e in tool.examples)
    yield from _schema_texts(tool.parameters)


def _schema_texts(schema: object) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _schema_texts(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _schema_texts(item)


# ------------------------------------------------------------------------------------------ keyword stuffing

#: English function words: prose strings content words together with these; a keyword list has few of them.
_FUNCTION_WORDS = frozenset([
    "a", "an", "the", "and", "or", "but", "nor", "so", "yet", "of", "to", "in", "on", "at", "by", "for", "from",
    "with", "without", "within", "into", "onto", "over", "under", "about", "as", "than", "then", "that", "this",
    "these", "those", "which", "who", "whom", "whose", "what", "when", "where", "why", "how", "is", "are", "was",
    "were", "be", "been", "being", "it", "its", "it's", "they", "them", "their", "there", "here", "he", "she",
    "his", "her", "we", "our", "you", "your", "i", "me", "my", "not", "no", "do", "does", "did", "done", "can",
    "could", "will", "would", "shall", "should", "may", "might", "must", "has", "have", "had", "if", "else",
    "also", "only", "just", "each", "every", "any", "all", "some", "such", "via", "per", "through", "including",
    "between", "across", "after", "before", "during", "while", "until", "like", "up", "out", "both", "either",
    "more", "most", "other", "own", "using", "against", "among", "since", "because", "whether",
])
_CJK_FUNCTION = frozenset("的了和与或及并在把为从对将被以可是也都而且则但若如")
#: Punctuation that ends a list item or a clause (ASCII and CJK).
_BREAK = re.compile(r"[,;:|/()\[\]{}.!?\n\u3001\uff0c\uff1b\uff1a\u3002\uff01\uff1f]")
_STUFFING_WORD = re.compile(f"[A-Za-z][A-Za-z0-9_'-]*|[0-9]+|[{CJK_RANGES}]+")
#: A run of this many content words with no function word or punctuation between them is not a phrase.
_LONG_RUN = 10
#: At least this many words, nearly all different (prose repeats its "the", "and", "of"): a list of words.
_LONG_LIST = 50
_DISTINCT = 0.97
#: Bare items (1-3 words, no function word) it takes to make a list of keywords rather than an enumeration.
_MANY_ITEMS = 12
_MIN_WORDS = 12


def keyword_stuffing(description: str) -> float:
    """How much of ``description`` is a bare keyword list, from 0 (sentences) to 1 (nothing but keywords): the
    share of its words that stand in runs of at least 10 content words with no function word or punctuation
    between them, or, when it has at least 12 of them, in bare comma-separated items of 1 to 3 words without a
    function word; a text of 50 words or more that hardly repeats one (prose repeats its "the", "and", "of") is
    a list whatever its punctuation, and scores the share of its content words. A pure function of the text (no
    model), so ``toolrag lint``, the report, ``toolrag import mcp`` and the decision can all read it;
    descriptions under 12 words score 0 (a CJK run counts a word per two characters)."""
    words = _STUFFING_WORD.findall(description)
    weights = [_weight(w) for w in words]
    total = sum(weights)
    if total < _MIN_WORDS:
        return 0.0
    in_runs = 0.0
    bare_items: list[float] = []
    for segment in _BREAK.split(description):
        tokens = _STUFFING_WORD.findall(segment)
        if not tokens:
            continue
        run: list[float] = []
        for token in [*tokens, ""]:
            if token and not _is_function(token):
                run.append(_weight(token))
                continue
            if len(run) >= _LONG_RUN:
                in_runs += sum(run)
            run = []
        if len(tokens) <= 3 and not any(_is_function(t) for t in tokens):
            bare_items.append(sum(_weight(t) for t in tokens))
    listed = sum(bare_items) if len(bare_items) >= _MANY_ITEMS else 0.0
    score = (in_runs + listed) / total
    lowered = [w.lower() for w in words]
    if len(words) >= _LONG_LIST and len(set(lowered)) / len(words) >= _DISTINCT:
        score = max(score, sum(1 for w in lowered if not _is_function(w)) / len(words))
    return min(1.0, score)


def _is_function(token: str) -> bool:
    if has_cjk(token[0]):
        return any(ch in _CJK_FUNCTION for ch in token)
    return token.lower() in _FUNCTION_WORDS


def _weight(token: str) -> float:
    """A CJK run counts as one word per two characters (about one Chinese word), a Latin word as one."""
    return max(1.0, len(token) / 2) if has_cjk(token[0]) else 1.0
