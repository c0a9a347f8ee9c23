"""Retrieval metrics, each a pure function worked out by hand in the tests, and the one registry of their names.

Metrics use binary relevance (a returned id is relevant iff it is in the query's gold set) and 1-based
ranks: position 1 is the first returned id. An id repeated in ``returned`` counts only at its first
position; later copies still occupy their slot but are not relevant (a search that repeats a tool wastes a
slot of the top k). A query with an empty gold set ("no tool fits") has no retrieval metric (the functions
return None); such queries are left out of the averages and only count for decision accuracy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Iterator, Sequence

__all__ = [
    "DECISION_ACCURACY",
    "METRIC_NAMES",
    "MetricFn",
    "completeness_at",
    "metric",
    "metric_plan",
    "mrr_at",
    "ndcg_at",
    "recall_at",
]

MetricFn = Callable[[Sequence[str], Collection[str], int], "float | None"]
#: The share of rows with ``expect`` whose decision matched it.
DECISION_ACCURACY = "decision_accuracy"


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
        raise ValueError(f"metric cutoff k must be an integer >= 1, got {k!r}")


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

_FUNCTIONS: dict[str, MetricFn] = {"recall": recall_at, "ndcg": ndcg_at, "mrr": mrr_at,
                                   "completeness": completeness_at}
_NAME = re.compile(r"^(recall|ndcg|mrr|completeness)@([1-9][0-9]{0,3})$")


def metric(name: str) -> tuple[MetricFn, int]:
    """The function and cutoff of a metric name such as ``recall@5`` or ``ndcg@10`` (any k from 1 to 9999).

    Raises ValueError naming the valid forms."""
    match = _NAME.match(name.strip().lower())
    if match is None:
        raise ValueError(f"unknown metric {name!r}; use recall@K, ndcg@K, mrr@K or completeness@K "
                         f"(e.g. {', '.join(METRIC_NAMES[:-1])}) or {DECISION_ACCURACY}")
    return _FUNCTIONS[match.group(1)], int(match.group(2))


def metric_plan(ks: Sequence[int]) -> list[tuple[str, MetricFn, int]]:
    """The metrics an evaluation reports for cutoffs ``ks``: ``recall@k`` for each k, ``ndcg@k`` for each
    k > 1, ``mrr@max(ks)`` and ``completeness@`` the smallest k > 1 (the default ks give
    :data:`METRIC_NAMES` but decision accuracy)."""
    cutoffs = sorted(set(ks))
    if not cutoffs:
        raise ValueError("an evaluation needs at least one cutoff in ks, e.g. ks=(1, 5, 10)")
    for k in cutoffs:
        _check_k(k)
    above_one = [k for k in cutoffs if k > 1]
    plan: list[tuple[str, MetricFn, int]] = []
    plan += [(f"recall@{k}", recall_at, k) for k in cutoffs]
    plan += [(f"ndcg@{k}", ndcg_at, k) for k in above_one]
    plan.append((f"mrr@{cutoffs[-1]}", mrr_at, cutoffs[-1]))
    complete_k = above_one[0] if above_one else cutoffs[-1]
    plan.append((f"completeness@{complete_k}", completeness_at, complete_k))
    return plan
