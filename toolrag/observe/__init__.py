"""Observability of a running toolrag: Prometheus metrics (:mod:`toolrag.observe.metrics`) and OpenTelemetry
traces (:mod:`toolrag.observe.tracing`), both optional (the ``observe`` extra). Nothing here imports
prometheus_client or OpenTelemetry until a metric is recorded or a span started, and with neither installed every
hook is a no-op; ``import toolrag`` stays light."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["search_done"]


def search_done(result: Any, *, role: str | None, started_ns: int, redact: bool | None) -> None:
    """Record one search answered for a caller: its counters and stage latencies (metrics) and its spans (traces).
    ``redact``: whether the audit log keeps only the request's hash (``None``: the environment's setting)."""
    from toolrag.observe import metrics, tracing

    metrics.record_search(result, role=role)
    tracing.search_span(result, role=role, started_ns=started_ns, ended_ns=time.time_ns(), redact=redact)
