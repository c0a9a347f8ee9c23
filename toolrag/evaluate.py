"""Retrieval metrics, labelled query files and the evaluation loop.

Metrics use binary relevance (a returned id is relevant iff it is in the query's gold set) and 1-based
ranks: position 1 is the first returned id. An id repeated in ``returned`` counts only at its first
position; later copies still occupy their slot but are not relevant (a search that repeats a tool wastes a
slot of the top k). A query with an empty gold set ("no tool fits") has no retrieval metric (the functions
return None); such queries are left out of the averages and only count for decision accuracy.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrag.decision import Decision
from toolrag.errors import QueryError, SettingsError

__all__ = [
    "METRIC_NAMES",
    "Decision",
    "EvalReport",
    "QueryOutcome",
    "QueryRow",
    "completeness_at",
    "evaluate",
    "load_queries",
    "mrr_at",
    "ndcg_at",
    "recall_at",
]


# The metric keys evaluate() reports with its default ks=(1, 5, 10), in report order.
METRIC_NAMES = (
    "recall@1",
    "recall@5",
    "recall@10",
    "ndcg@5",
    "ndcg@10",
    "mrr@10",
    "completeness@5",
    "decision_accuracy",
)


# ------------------------------------------------------------------------------------------------ metrics
def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise SettingsError(f"metric cutoff k must be an integer >= 1, got {k!r}")


def _relevance(returned: Sequence[str], gold: set[str], k: int) -> Iterator[tuple[int, bool]]:
    """(rank, relevant) for the first k positions; a repeated id is relevant only at its first position."""
    seen: set[str] = set()
    for rank, doc_id in enumerate(returned[:k], start=1):
        yield rank, doc_id in gold and doc_id not in seen
        seen.add(doc_id)


def recall_at(returned: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """|gold ∩ top-k| / |gold|; None when gold is empty."""
    _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return None
    return len(gold_set.intersection(returned[:k])) / len(gold_set)


def ndcg_at(returned: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """DCG/IDCG: DCG = sum_{i<=k} rel_i / log2(i + 1), IDCG = sum_{i<=min(|gold|, k)} 1 / log2(i + 1)."""
    _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return None
    dcg = sum(1.0 / math.log2(rank + 1) for rank, rel in _relevance(returned, gold_set, k) if rel)
    idcg = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold_set), k) + 1))
    return dcg / idcg


def mrr_at(returned: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """1 / rank of the first gold id within the top k, else 0; None when gold is empty."""
    _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return None
    return next((1.0 / rank for rank, rel in _relevance(returned, gold_set, k) if rel), 0.0)


def completeness_at(returned: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """1.0 when every gold id is in the top k (the LLM gets all the tools it needs), else 0.0."""
    _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return None
    return 1.0 if gold_set.issubset(returned[:k]) else 0.0


# ------------------------------------------------------------------------------------------------ rows
@dataclass(frozen=True)
class QueryRow:
    """One labelled query: the request, the tools that fit it (gold) and optional context."""

    query: str
    gold: tuple[str, ...]
    image: Path | None = None
    permissions: tuple[str, ...] | None = None
    role: str | None = None
    expect: Decision | None = None
    history: tuple[str, ...] = ()
    line: int | None = None


@dataclass(frozen=True)
class QueryOutcome:
    """What the search returned for one row: ids in rank order and its decision."""

    row: QueryRow
    returned: tuple[str, ...]
    decision: Decision


FIELDS = ("query", "gold", "image", "permissions", "role", "expect", "history")


class _Row:
    """Validation context of one raw row: formats errors with file, row, line and field."""

    def __init__(self, path: Path, number: int, line: int | None, field_lines: dict[str, int]) -> None:
        self.path, self.number, self.line, self.field_lines = path, number, line, field_lines

    def fail(self, field_name: str | None, message: str) -> QueryError:
        line = self.field_lines.get(field_name or "", self.line)
        where = f"{self.path}, row {self.number}" + (f", line {line}" if line else "")
        what = f", field '{field_name}'" if field_name else ""
        return QueryError(f"{where}{what}: {message}")

    def text_list(self, data: dict[str, Any], name: str, example: str) -> tuple[str, ...] | None:
        value = data.get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            hint = f"must be a list of non-empty strings, e.g. {name}: {example}; got {value!r}"
            raise self.fail(name, hint)
        return tuple(dict.fromkeys(value))


def _parse_row(ctx: _Row, data: object, folder: Path) -> QueryRow:
    if not isinstance(data, dict):
        raise ctx.fail(None, f"each row must be a mapping like {{query: ..., gold: [...]}}, got {data!r}")
    for key in data:
        if key not in FIELDS:
            close = difflib.get_close_matches(str(key), FIELDS, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'?" if close else f"valid fields: {', '.join(FIELDS)}"
            raise ctx.fail(str(key), f"unknown field '{key}'; {hint}")
    image: Path | None = None
    if data.get("image") is not None:
        raw = data["image"]
        if not isinstance(raw, str) or not raw.strip():
            raise ctx.fail("image", f"must be a file path relative to {folder}, got {raw!r}")
        image = Path(raw).expanduser()
        image = image if image.is_absolute() else folder / image
        if not image.is_file():
            raise ctx.fail("image", f"file {image} does not exist (paths are relative to {folder})")
    if "query" not in data:
        raise ctx.fail("query", "missing; add query: <the user's request> ('' is allowed only with an image)")
    query = data["query"]
    if query is None and image is not None:
        query = ""
    if not isinstance(query, str):
        raise ctx.fail("query", f"must be text (quote it in YAML), got {query!r}")
    if not query.strip() and image is None:
        raise ctx.fail("query", "is empty and no image is given; write the request or add image: <file>")
    if "gold" not in data:
        raise ctx.fail("gold", "missing; list the ids of the tools that fit, or gold: [] when no tool fits")
    gold = ctx.text_list(data, "gold", "[erp.inventory.query_stock]")
    if gold is None:
        raise ctx.fail("gold", "is null; list the tool ids that fit, or write gold: [] when no tool fits")
    role = data.get("role")
    if role is not None and (not isinstance(role, str) or not role.strip()):
        raise ctx.fail("role", f"must be a role name such as role: finance, got {role!r}")
    expect = _parse_expect(ctx, data.get("expect"))
    if expect is Decision.NO_TOOL and gold:
        raise ctx.fail("expect", "is NO_TOOL but gold lists tools; use gold: [] or another expect")
    if expect is Decision.EXECUTE and not gold:
        raise ctx.fail("expect", "is EXECUTE but gold is empty; list the tool to execute in gold")
    return QueryRow(
        query=query,
        gold=gold,
        image=image,
        permissions=ctx.text_list(data, "permissions", "[finance.read]"),
        role=role,
        expect=expect,
        history=ctx.text_list(data, "history", '["my earlier message"]') or (),
        line=ctx.line,
    )


def _parse_expect(ctx: _Row, value: object) -> Decision | None:
    if value is None:
        return None
    choices = [d.value for d in Decision]
    key = str(value).strip().upper().replace("-", "_").replace(" ", "_")
    if isinstance(value, str) and key in choices:
        return Decision(key)
    close = difflib.get_close_matches(key, choices, n=1, cutoff=0.4)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ctx.fail("expect", f"{value!r} is not valid{hint}; use one of {', '.join(choices)}")


def _yaml_rows(path: Path, text: str) -> list[tuple[int | None, dict[str, int], object]]:
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and start is not None and start is not mark:
            problem += f", {context} started at line {start.line + 1}"
        raise QueryError(f"{path}{where}: invalid YAML ({problem}); fix the syntax there") from None
    finally:
        loader.dispose()
    if data is None:
        return []
    if isinstance(data, dict) and set(data) == {"queries"} and isinstance(node, yaml.MappingNode):
        # also accept `queries: [...]`
        data, node = data["queries"], node.value[0][1]
    if not isinstance(data, list) or not isinstance(node, yaml.SequenceNode):
        raise QueryError(f"{path}: the file must be a YAML list of queries (rows starting with '- query:')")
    rows: list[tuple[int | None, dict[str, int], object]] = []
    for item_node, item in zip(node.value, data, strict=True):
        field_lines: dict[str, int] = {}
        if isinstance(item_node, yaml.MappingNode):
            for key_node, _ in item_node.value:
                key = str(key_node.value)
                if key in field_lines:
                    line = key_node.start_mark.line + 1
                    raise QueryError(f"{path}, line {line}, field '{key}': given twice in one row; keep one")
                field_lines[key] = key_node.start_mark.line + 1
        rows.append((item_node.start_mark.line + 1, field_lines, item))
    return rows


def _jsonl_rows(path: Path, text: str) -> list[tuple[int | None, dict[str, int], object]]:
    if text.lstrip().startswith("["):  # a whole-file JSON array is accepted too (no per-row lines)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"{path}, line {exc.lineno}, column {exc.colno}"
            raise QueryError(f"{where}: invalid JSON ({exc.msg}); fix the syntax there") from None
        return [(None, {}, item) for item in data]
    rows: list[tuple[int | None, dict[str, int], object]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, {}, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise QueryError(
                f"{path}, line {number}, column {exc.colno}: invalid JSON ({exc.msg}); "
                "JSON Lines needs one complete object per line"
            ) from None
    return rows


def load_queries(path: Path) -> list[QueryRow]:
    """Read labelled queries from YAML (a list of mappings) or JSON Lines (.jsonl/.json, one object a line).

    Fields: ``query`` (text; "" only with ``image``), ``gold`` (tool ids; [] = no tool fits), optional
    ``image`` (relative to the file's folder; must exist), ``permissions``, ``role``, ``expect``
    (EXECUTE/CLARIFY/NO_TOOL, any case) and ``history`` (earlier user turns). Every problem raises
    QueryError naming the file, row, line, field and the fix.
    """
    path = Path(path)
    if not path.is_file():
        raise QueryError(f"queries file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".jsonl", ".json"):
        raise QueryError(f"{path}: unknown queries format '{suffix}'; use .yaml/.yml or .jsonl/.json")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise QueryError(f"{path}: cannot read the file as UTF-8 text ({exc})") from None
    raw_rows = _yaml_rows(path, text) if suffix in (".yaml", ".yml") else _jsonl_rows(path, text)
    if not raw_rows:
        raise QueryError(f"{path}: contains no queries; add rows like {{query: ..., gold: [...]}}")
    return [
        _parse_row(_Row(path, number, line, field_lines), data, path.parent)
        for number, (line, field_lines, data) in enumerate(raw_rows, start=1)
    ]


# ---------------------------------------------------------------------------------------------- evaluate
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
                    "decision": o.decision.value,
                    "expect": o.row.expect.value if o.row.expect is not None else None,
                }
                for o in self.per_query
            ],
        }

    def format_table(self) -> str:
        """The metrics as an aligned text table, values in percent with two decimals."""
        width = max([len("metric"), len("queries"), *(len(name) for name in self.metrics)])
        lines = [f"{'metric':<{width}}  {'value':>7}", f"{'-' * width}  {'-' * 7}"]
        lines += [f"{name:<{width}}  {100 * value:>6.2f}%" for name, value in self.metrics.items()]
        lines.append(f"{'queries':<{width}}  {self.n_queries:>7d}")
        return "\n".join(lines)


def _metric_plan(ks: Sequence[int]) -> list[tuple[str, Callable[..., float | None], int]]:
    cutoffs = sorted(set(ks))
    if not cutoffs:
        raise SettingsError("evaluate() needs at least one cutoff in ks, e.g. ks=(1, 5, 10)")
    for k in cutoffs:
        _check_k(k)
    above_one = [k for k in cutoffs if k > 1]
    plan: list[tuple[str, Callable[..., float | None], int]] = []
    plan += [(f"recall@{k}", recall_at, k) for k in cutoffs]
    plan += [(f"ndcg@{k}", ndcg_at, k) for k in above_one]
    plan.append((f"mrr@{cutoffs[-1]}", mrr_at, cutoffs[-1]))
    complete_k = above_one[0] if above_one else cutoffs[-1]
    plan.append((f"completeness@{complete_k}", completeness_at, complete_k))
    return plan


def evaluate(
    search: Callable[[QueryRow], QueryOutcome], rows: Sequence[QueryRow], *, ks: Sequence[int] = (1, 5, 10)
) -> EvalReport:
    """Run ``search`` on every row (in order) and average the metrics.

    Metric keys: ``recall@k`` for each k in ``ks``, ``ndcg@k`` for each k > 1, ``mrr@max(ks)``,
    ``completeness@`` the smallest k > 1 (so the default ks give recall@1/5/10, ndcg@5/10, mrr@10,
    completeness@5), each averaged over rows with a non-empty gold set, and ``decision_accuracy`` over rows
    with ``expect``. A key is omitted when no row defines it.
    """
    plan = _metric_plan(ks)
    outcomes: list[QueryOutcome] = []
    for row in rows:
        outcome = search(row)
        if outcome.row != row:
            raise QueryError(
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
        metrics["decision_accuracy"] = sum(decided) / len(decided)
    return EvalReport(metrics=metrics, n_queries=len(outcomes), per_query=outcomes)
