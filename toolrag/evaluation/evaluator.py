"""The evaluator: labelled rows in, a report out, through the same :meth:`ToolRetriever.search` users call.

Built once from labelled rows and called with a retriever, in the manner of sentence-transformers'
evaluators: ``Evaluator(rows)(retriever)`` or ``retriever.evaluate(Evaluator(rows))``. The CLI's ``eval``,
``toolrag tune``, the app and ``bench/`` all run labelled rows through :meth:`Evaluator.run_row`, so there is
one code path from a labelled row to a search.

Metrics (:mod:`toolrag.evaluation.metrics`) use binary relevance and 1-based ranks; rows with an empty gold
set ("no tool fits") have no retrieval metric and count only for decision accuracy.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from toolrag.catalog.profile import Catalog
from toolrag.errors import QueryError, ToolragError
from toolrag.evaluation.metrics import DECISION_ACCURACY, metric_plan
from toolrag.evaluation.queries import QueryRow
from toolrag.progress import Progress
from toolrag.search.request import unknown_codes
from toolrag.search.results import Decision, SearchResult
from toolrag.settings import Settings

__all__ = ["EvalReport", "Evaluator", "LanguageLine", "QueryOutcome", "Searcher", "evaluate"]

#: Rows whose request texts are encoded together before they are searched (see ToolRetriever.prepare).
_PREPARE_CHUNK = 256


class Searcher(Protocol):
    """What an evaluator needs of a retriever (:class:`toolrag.search.retriever.ToolRetriever` is one)."""

    settings: Settings

    def search(self, query: str = "", *, image: Any = None, history: Sequence[str] = (),
               permissions: Collection[str] | None = None, role: str | None = None,
               categories: Collection[str] | None = None, include_deprecated: bool = False,
               top_k: int | None = None, settings: Settings | None = None, audited: bool = True) -> SearchResult: ...


@dataclass(frozen=True)
class QueryOutcome:
    """What the search returned for one row: ids in rank order, its decision and the tools it injected
    (``SearchResult.selected``)."""

    row: QueryRow
    returned: tuple[str, ...]
    decision: Decision
    selected: tuple[str, ...] = ()


@dataclass(frozen=True)
class LanguageLine:
    """One language's rows of an evaluation: the share whose first tool is a gold one (``top1``) and whose
    injected tools hold a gold one (``injected``), both over rows with gold tools, and the decision accuracy
    over rows with ``expect``; ``None`` where no row defines it."""

    lang: str
    rows: int
    top1: float | None
    injected: float | None
    decision_accuracy: float | None

    def to_json(self) -> dict[str, Any]:
        return {"lang": self.lang, "rows": self.rows, "top1": self.top1, "injected": self.injected,
                "decision_accuracy": self.decision_accuracy}


def _share(values: list[bool]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class EvalReport:
    """Averaged metrics (fractions in [0, 1]) and the per-query outcomes in input order."""

    metrics: dict[str, float]
    n_queries: int
    per_query: list[QueryOutcome] = field(default_factory=list)

    def to_json(self, n_tools: int) -> dict[str, Any]:
        """A JSON-ready dict: metrics, counts and, per query, query/gold/returned/decision/expect."""
        return {
            "metrics": dict(self.metrics),
            "n_queries": self.n_queries,
            "n_tools": n_tools,
            "per_query": [
                {
                    "query": o.row.query,
                    "gold": list(o.row.gold),
                    "returned": list(o.returned),
                    "selected": list(o.selected),
                    "decision": o.decision.value,
                    "expect": o.row.expect.value if o.row.expect is not None else None,
                    **({"lang": o.row.lang} if o.row.lang else {}),
                }
                for o in self.per_query
            ],
            **({"languages": [line.to_json() for line in self.languages()]} if self.languages() else {}),
        }

    def languages(self) -> list[LanguageLine]:
        """Each language's figures over the rows that name it (``lang``), English first, then by tag; empty
        when no row names a language."""
        groups: dict[str, list[QueryOutcome]] = {}
        for o in self.per_query:
            if o.row.lang:
                groups.setdefault(o.row.lang, []).append(o)
        return [LanguageLine(
            lang, len(outs),
            _share([bool(o.returned) and o.returned[0] in o.row.gold for o in outs if o.row.gold]),
            _share([any(t in o.row.gold for t in o.selected) for o in outs if o.row.gold]),
            _share([o.decision == o.row.expect for o in outs if o.row.expect is not None]),
        ) for lang, outs in sorted(groups.items(), key=lambda item: (item[0] != "en", item[0]))]

    def format_languages(self) -> str:
        """:meth:`languages` as an aligned text table in percent, each figure beside its difference from the
        English rows (``en``) where the file has them; empty when no row names a language."""
        lines = self.languages()
        if not lines:
            return ""
        base = next((line for line in lines if line.lang == "en"), None)

        def cell(line: LanguageLine, name: str) -> str:
            value = getattr(line, name)
            if value is None:
                return f"{'-':>16}"
            ref = getattr(base, name) if base is not None and line is not base else None
            delta = f" ({100 * (value - ref):+5.1f})" if ref is not None else " " * 8
            return f"{100 * value:7.1f}%{delta}"

        out = [f"{'lang':<6}{'rows':>5}  {'top-1':>16}  {'injected':>16}  {'decision':>16}"]
        out += [f"{line.lang:<6}{line.rows:>5}  {cell(line, 'top1')}  {cell(line, 'injected')}  "
                f"{cell(line, 'decision_accuracy')}" for line in lines]
        return "\n".join(out)

    def unmeasured(self, name: str) -> str:
        """Why metric ``name`` is not in :attr:`metrics` (what a ``--fail-under`` on it says)."""
        if name == DECISION_ACCURACY:
            return "not measured: no labelled request says which decision it expects (expect: EXECUTE, ...)"
        if not any(o.row.gold for o in self.per_query):
            return "not measured: no labelled request has a gold tool"
        return "not measured: this evaluation computes " + ", ".join(self.metrics)

    def format_table(self) -> str:
        """The metrics as an aligned text table, values in percent with two decimals."""
        width = max([len("metric"), len("queries"), *(len(name) for name in self.metrics)])
        lines = [f"{'metric':<{width}}  {'value':>7}", f"{'-' * width}  {'-' * 7}"]
        lines += [f"{name:<{width}}  {100 * value:>6.2f}%" for name, value in self.metrics.items()]
        lines.append(f"{'queries':<{width}}  {self.n_queries:>7d}")
        return "\n".join(lines)


def evaluate(
    search: Callable[[QueryRow], QueryOutcome], rows: Sequence[QueryRow], *, ks: Sequence[int] = (1, 5, 10)
) -> EvalReport:
    """Run ``search`` on every row (in order) and average the metrics.

    Metric keys: ``recall@k`` for each k in ``ks``, ``ndcg@k`` for each k > 1, ``mrr@max(ks)``,
    ``completeness@`` the smallest k > 1 (so the default ks give recall@1/5/10, ndcg@5/10, mrr@10,
    completeness@5), each averaged over rows with a non-empty gold set, and ``decision_accuracy`` over rows
    with ``expect``. A key is omitted when no row defines it.
    """
    plan = metric_plan(ks)
    outcomes: list[QueryOutcome] = []
    for row in rows:
        outcome = search(row)
        if outcome.row != row:
            raise ValueError(
                f"search returned the outcome of {outcome.row.query!r} for query {row.query!r}; "
                "it must return QueryOutcome(row=row, ...) for the row it was given"
            )
        outcomes.append(outcome)
    metrics: dict[str, float] = {}
    for name, fn, k in plan:
        values = [v for o in outcomes if (v := fn(o.returned, o.row.gold, k)) is not None]
        if values:
            metrics[name] = sum(values) / len(values)
    decided = [o.decision == o.row.expect for o in outcomes if o.row.expect is not None]
    if decided:
        metrics[DECISION_ACCURACY] = sum(decided) / len(decided)
    return EvalReport(metrics=metrics, n_queries=len(outcomes), per_query=outcomes)


class Evaluator:
    """Evaluates a retriever on labelled rows: every row through :meth:`ToolRetriever.search`, then metrics.

    ``ks`` are the metric cutoffs (see :func:`toolrag.evaluation.metrics.metric_plan`); ``permissions`` and
    ``role`` apply to rows that name neither (a CLI's ``--permissions``/``--role``).
    """

    def __init__(self, rows: Sequence[QueryRow], *, ks: Sequence[int] = (1, 5, 10), name: str = "",
                 permissions: Collection[str] | None = None, role: str | None = None) -> None:
        metric_plan(ks)  # a bad cutoff fails here, not after the searches
        self.ks = tuple(ks)
        self.name = name
        self._defaults = (tuple(permissions or ()), role)
        self.rows = tuple(r if r.permissions is not None or r.role or (permissions is None and role is None)
                          else replace(r, permissions=tuple(permissions or ()), role=role) for r in rows)

    def check(self, catalog: Catalog) -> None:
        """Refuse rows that cannot be scored against ``catalog`` (QueryError, before any search): gold ids it
        lacks, named with the closest ids (a typo would otherwise score every metric 0), roles it does not
        define and permission codes that no tool or role of it uses."""
        known = set(catalog.ids)
        missing: dict[str, QueryRow] = {}
        for row in self.rows:
            for gold in row.gold:
                if gold not in known:
                    missing.setdefault(gold, row)
        if missing:
            shown = [f"{g!r} (line {missing[g].line or '?'}{_closest(g, catalog.ids)})" for g in list(missing)[:3]]
            more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            raise QueryError(f"{len(missing)} gold id{'s are' if len(missing) > 1 else ' is'} not in catalog "
                             f"{catalog.name!r}: {', '.join(shown)}{more}; fix the ids in the queries file")
        permissions, role = self._defaults
        unknown = unknown_codes(catalog, permissions)
        if unknown:
            raise QueryError(f"permission code {unknown[0]!r} (given for every row) is used by no tool or role of "
                             f"catalog {catalog.name!r}; fix the spelling (it would grant nothing)")
        if role:
            catalog.role_codes(role)  # CatalogError naming the roles
        for row in self.rows:
            if row.role and row.role not in catalog.roles:
                known_roles = ", ".join(sorted(catalog.roles)) or "(none)"
                raise QueryError(f"query row {row.line or '?'}: unknown role {row.role!r}; roles of catalog "
                                 f"{catalog.name!r}: {known_roles}")
            unknown = unknown_codes(catalog, row.permissions or ())
            if unknown:
                raise QueryError(f"query row {row.line or '?'}: permission code {unknown[0]!r} is used by no tool "
                                 f"or role of catalog {catalog.name!r}; fix the spelling (it would grant nothing)")

    def run_row(self, retriever: Searcher, row: QueryRow, *, settings: Settings | None = None,
                top_k: int | None = None) -> SearchResult:
        """Search one labelled row as a user would; a refused row names its line."""
        try:
            return retriever.search(row.query, image=row.image, history=row.history, permissions=row.permissions,
                                    role=row.role, settings=settings, top_k=top_k, audited=False)
        except ToolragError as exc:
            raise QueryError(f"query row {row.line or '?'} ({row.query[:40]!r}): {exc}") from exc

    def __call__(self, retriever: Searcher, *, settings: Settings | None = None,
                 progress: Progress | None = None) -> EvalReport:
        """Run every row and score it; the result list of each row is at least as deep as the largest cutoff."""
        catalog = getattr(retriever, "catalog", None)
        if isinstance(catalog, Catalog):
            self.check(catalog)
        cfg = settings or retriever.settings
        depth = max(max(self.ks), cfg.top_k)
        say = progress or (lambda f, m: None)
        total = len(self.rows)

        counter = itertools.count(1)
        # Retrievers that can (ToolRetriever.prepare) encode the request texts of the next rows in one pass
        # per model; each row is then searched as usual, with the same result as without it.
        prepare = getattr(retriever, "prepare", None)
        chunk = max(1, min(_PREPARE_CHUNK, getattr(getattr(retriever, "analyzer", None), "cache_size", 512) // 2))

        def run(row: QueryRow) -> QueryOutcome:
            done_before = next(counter) - 1
            if prepare is not None and done_before % chunk == 0:
                upcoming = self.rows[done_before:done_before + chunk]
                prepare([r.query for r in upcoming], histories=[r.history for r in upcoming])
            result = self.run_row(retriever, row, settings=cfg, top_k=depth)
            done = done_before + 1
            say(done / max(total, 1), f"evaluated {done}/{total} labelled requests")
            return QueryOutcome(row, tuple(result.ids), result.decision, tuple(result.selected))

        return evaluate(run, self.rows, ks=self.ks)


def _closest(value: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(value, choices, n=2, cutoff=0.6)
    return f"; closest: {', '.join(repr(c) for c in close)}" if close else ""
