"""The catalog report as one caller sees it: only the tools a role (or a set of permission codes) may use.

Every question of what a caller may see goes through its :class:`toolrag.catalog.caller.Caller`
(:func:`report_caller` makes it from a role and codes; the functions below take a caller, or the codes it holds).
``toolrag report --role employee`` and :func:`toolrag.evaluation.report.build_report` search as the caller from
the start (the retrievability and label-free checkers take ``caller=``), so every figure is what a catalog
without the hidden tools gives. The app's Evaluate tab (its "as role" choice, and every visitor of a shared app)
filters the author's report with the functions below instead, where it is shown: a tool the caller may not use
is named nowhere (retrievability, confusions, look-alikes, lint, labelled requests).

- Retrievability: the examples of the visible tools, each ranked among the visible tools only (the tools
  ranked above it that the caller may not see are taken out; an example not in the first results stays
  unranked), confusions and look-alikes between visible tools, lint warnings of visible tools that name no
  hidden one. These searches are the author's (every tool), so normalisation is over the whole catalog: ranks
  can differ from a search by that caller by a near-tie.
- Labelled requests: the rows whose expected tools the caller may see and whose own role or codes grant
  nothing beyond the caller's; rows that name neither are searched as the caller.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Collection, Sequence

import numpy as np

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog
from toolrag.evaluation.evaluator import EvalReport, QueryOutcome, evaluate
from toolrag.evaluation.queries import QueryRow
from toolrag.evaluation.retrievability import RetrievabilityReport, summarize
from toolrag.evaluation.risk import LabelFreeReport

__all__ = ["estimate_for", "evaluation_for", "report_caller", "retrievability_for", "visible_rows"]


def report_caller(catalog: Catalog, *, role: str | None = None, permissions: Collection[str] | None = None
                  ) -> Caller | None:
    """The caller with ``role`` and ``permissions``; ``None`` when neither is given (the author, who sees every
    tool). An unknown role is a ``CatalogError`` naming the roles."""
    if role is None and permissions is None:
        return None
    return Caller.of(catalog, role=role, permissions=permissions)


def _caller(who: Caller | Collection[str]) -> Caller:
    """A caller, or the caller holding the codes ``who`` (how the app keeps a visitor's view)."""
    return who if isinstance(who, Caller) else Caller(frozenset(who))


def _visible_ids(catalog: Catalog, who: Caller) -> set[str]:
    return {t.id for t in catalog.tools if who.may_use(t)}


def _row_visible(row: QueryRow, catalog: Catalog, who: Caller, visible: set[str]) -> bool:
    """Whether ``who`` may see a labelled row: it holds every code the row's own caller holds (an unknown role
    is a ``CatalogError`` naming the roles) and may use every expected tool."""
    own = Caller.of(catalog, role=row.role, permissions=row.permissions)
    return who.permits(own.codes) and set(row.gold) <= visible


def visible_rows(rows: Sequence[QueryRow], catalog: Catalog, who: Caller | Collection[str], *,
                 role: str | None = None, permissions: Collection[str] | None = None) -> list[QueryRow]:
    """The labelled rows ``who`` (a caller, or the codes it holds) may see; a row that names no role and no codes
    is searched as that caller (``role``, ``permissions``)."""
    caller = _caller(who)
    visible = _visible_ids(catalog, caller)
    out = []
    for row in rows:
        if not _row_visible(row, catalog, caller, visible):
            continue
        if row.permissions is None and not row.role and (role or permissions):
            row = dataclasses.replace(row, role=role, permissions=tuple(permissions) if permissions else None)
        out.append(row)
    return out


def evaluation_for(report: EvalReport, catalog: Catalog, who: Caller | Collection[str]) -> EvalReport:
    """``report`` with only the rows ``who`` (a caller, or the codes it holds) may see, its metrics computed
    again."""
    caller = _caller(who)
    visible = _visible_ids(catalog, caller)
    kept = {id(o.row): dataclasses.replace(o, returned=tuple(t for t in o.returned if t in visible))
            for o in report.per_query if _row_visible(o.row, catalog, caller, visible)}
    rows = [o.row for o in report.per_query if id(o.row) in kept]

    def outcome(row: QueryRow) -> QueryOutcome:
        return kept[id(row)]

    return evaluate(outcome, rows, ks=_cutoffs(report.metrics))


def _cutoffs(metrics: Collection[str]) -> tuple[int, ...]:
    """The cutoffs a report's metrics were computed at (``recall@5`` ... ), else the evaluator's default."""
    ks = sorted({int(m.group(1)) for name in metrics if (m := re.match(r"recall@(\d+)$", name))})
    return tuple(ks) or (1, 5, 10)


def retrievability_for(report: RetrievabilityReport, catalog: Catalog, who: Caller | Collection[str], *,
                       vectors: tuple[Sequence[str], np.ndarray] | None = None, threshold: float
                       ) -> RetrievabilityReport:
    """``report`` with only the tools ``who`` (a caller, or the codes it holds) may see (see the module docstring).
    ``vectors`` (ids and text vectors, :meth:`ToolRetriever.tool_vectors`) give the cosine of a confusion pair
    that only appears once hidden tools are taken out; ``threshold`` flags look-alikes, as the checker does."""
    visible = _visible_ids(catalog, _caller(who))
    hidden = {t.id for t in catalog.tools} - visible
    outcomes = []
    for o in report.outcomes:
        if o.tool_id not in visible:
            continue
        above = tuple(t for t in o.above if t in visible)
        rank = None if o.rank is None else o.rank - (len(o.above) - len(above))
        outcomes.append(dataclasses.replace(o, above=above, rank=rank))
    cosine = {(c.expected, c.winner): c.cosine for c in report.confusions}
    rows = {tool_id: i for i, tool_id in enumerate(vectors[0])} if vectors is not None else {}
    for o in outcomes:
        winner = o.winner
        if winner is not None and winner != o.tool_id and (o.tool_id, winner) not in cosine:
            cosine[(o.tool_id, winner)] = _cosine(vectors, rows, o.tool_id, winner)
    shown = Catalog(tuple(t for t in catalog.tools if t.id in visible), catalog.name, catalog.root,
                    catalog.assets_dir, catalog.roles, catalog.report)
    lint = [w for w in report.lint if w.tool_id in visible and not any(repr(h) in w.message for h in hidden)]
    return summarize(outcomes, shown, cosine=cosine,
                     lookalikes=[p for p in report.lookalikes if p[0] in visible and p[1] in visible], lint=lint,
                     threshold=threshold, skipped=[t for t in report.health.skipped if t in visible],
                     searched=report.searched, encoded=report.encoded, seconds=report.seconds)


def _cosine(vectors: tuple[Sequence[str], np.ndarray] | None, rows: dict[str, int], a: str, b: str) -> float:
    if vectors is None or a not in rows or b not in rows:
        return math.nan
    x, y = vectors[1][rows[a]], vectors[1][rows[b]]
    return float(x @ y) / max(float(np.linalg.norm(x) * np.linalg.norm(y)), 1e-12)


def estimate_for(report: LabelFreeReport, catalog: Catalog, who: Caller | Collection[str]) -> LabelFreeReport:
    """The label-free estimate as ``who`` (a caller, or the codes it holds) sees it: only the tools it may use,
    and no rival, shared word or winner that names a tool it may not use."""
    visible = _visible_ids(catalog, _caller(who))

    def seen(tool_id: str | None) -> str | None:
        return tool_id if tool_id in visible else None

    tools = []
    for risk in report.tools:
        if risk.tool_id not in visible:
            continue
        probes = tuple(dataclasses.replace(p, winner=seen(p.winner), rival=seen(p.rival),
                                           margin=p.margin if seen(p.rival) else None,
                                           signals=p.signals if seen(p.rival) else {}) for p in risk.probes)
        hidden_rival = risk.rival is not None and risk.rival not in visible
        tools.append(dataclasses.replace(risk, probes=probes, rival=None if hidden_rival else risk.rival,
                                         rival_cosine=None if hidden_rival else risk.rival_cosine,
                                         shared_words=() if hidden_rival else risk.shared_words))
    return dataclasses.replace(report, tools=tuple(tools))
