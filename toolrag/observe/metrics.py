"""Prometheus metrics of a serving toolrag (``/metrics`` of ``toolrag serve --transport http`` and of the app).

One registry per process, built on the first record; with ``prometheus_client`` missing every function here is a
no-op and :func:`render` says how to install it. Labels are closed sets (the decision, what decided, the catalog's
role names, the outcome of a call, the upstream server's name from the gateway's config): never the request's
text, never a tool's arguments.

| metric | type | labels |
|---|---|---|
| ``toolrag_searches_total`` | counter | ``decision``, ``decided_by``, ``role`` |
| ``toolrag_search_seconds`` | histogram | ``stage``: ``encode``, ``candidates``, ``score``, ``fuse``, ``rerank``, |
| | | ``decide``, ``total`` |
| ``toolrag_calls_total`` | counter | ``outcome`` (``ok``, ``error``, ``refused``, ``invalid``, |
| | | ``unavailable``), ``role`` |
| ``toolrag_call_seconds`` | histogram | ``stage`` (``total``, ``upstream``) |
| ``toolrag_upstream_errors_total`` | counter | ``server``, ``kind`` (``timeout``, ``error``, ``unavailable``) |
| ``toolrag_index_info`` | gauge (1) | ``index``, ``version`` |
| ``toolrag_index_tools`` | gauge | ``index`` |
| ``toolrag_index_serial`` | gauge | ``index`` (pushes of a published index) |
| ``toolrag_ready`` | gauge | (1 when ``/readyz`` answers 200) |
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

from toolrag.version import __version__

__all__ = ["CONTENT_TYPE", "available", "record_call", "record_index", "record_search", "record_upstream",
           "render", "stage_times"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
#: Latency buckets in seconds: from a cached search (a few ms) to a slow upstream call.
_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: Each stage of a search and the timing keys of :attr:`SearchResult.timing_ms` it sums, in the order they run.
STAGES: Final = (("encode", ("encode_text", "encode_image")), ("candidates", ("index_search", "bm25")),
                 ("score", ("score",)), ("fuse", ("fusion",)), ("rerank", ("rerank",)), ("decide", ("decision",)))

_lock = threading.Lock()
_metrics: dict[str, Any] | None = None
_missing: str | None = None


def available() -> bool:
    """Whether prometheus_client is installed (metrics are recorded)."""
    return _registry() is not None


def _registry() -> dict[str, Any] | None:
    global _metrics, _missing
    if _metrics is not None or _missing is not None:
        return _metrics
    with _lock:
        if _metrics is not None or _missing is not None:
            return _metrics
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
        except ImportError as exc:
            _missing = str(exc)
            return None
        registry = CollectorRegistry()
        _metrics = {
            "registry": registry,
            "searches": Counter("toolrag_searches", "Searches answered, by decision, what decided and caller role",
                                ["decision", "decided_by", "role"], registry=registry),
            "search_seconds": Histogram("toolrag_search_seconds", "Search latency by stage", ["stage"],
                                        buckets=_BUCKETS, registry=registry),
            "calls": Counter("toolrag_calls", "Gateway tool calls, by outcome and caller role", ["outcome", "role"],
                             registry=registry),
            "call_seconds": Histogram("toolrag_call_seconds", "Gateway call latency: the whole call_tool and the "
                                      "upstream call inside it", ["stage"], buckets=_BUCKETS, registry=registry),
            "upstream_errors": Counter("toolrag_upstream_errors", "Upstream MCP server failures, by server and kind",
                                       ["server", "kind"], registry=registry),
            "index_info": Gauge("toolrag_index_info", "The index version served (value 1)", ["index", "version"],
                                registry=registry),
            "index_tools": Gauge("toolrag_index_tools", "Tools in the index served", ["index"], registry=registry),
            "index_serial": Gauge("toolrag_index_serial", "Pushes of the published index served", ["index"],
                                  registry=registry),
            "ready": Gauge("toolrag_ready", "1 when the index is loaded and its store answers", registry=registry),
            "build_info": Gauge("toolrag_build_info", "The toolrag version and the decision model this process "
                                "runs (value 1): replicas part way through an upgrade tell apart",
                                ["version", "decision_model"], registry=registry),
        }
        return _metrics


def stage_times(timing_ms: Mapping[str, float]) -> list[tuple[str, float]]:
    """(stage, milliseconds) of a search's timing, in the order the stages run (a stage that did not run is left
    out)."""
    out = []
    for stage, keys in STAGES:
        found = [timing_ms[k] for k in keys if k in timing_ms]
        if found:
            out.append((stage, float(sum(found))))
    return out


def _role(role: str | None) -> str:
    return role if role else "none"


def record_search(result: Any, *, role: str | None) -> None:
    """Count one search (a :class:`~toolrag.search.results.SearchResult`) and its stages' latencies."""
    m = _registry()
    if m is None:
        return
    decided_by = getattr(result, "decided_by", None)
    m["searches"].labels(result.decision.value, getattr(decided_by, "value", str(decided_by)), _role(role)).inc()
    histogram = m["search_seconds"]
    for stage, ms in stage_times(result.timing_ms):
        histogram.labels(stage).observe(ms / 1000)
    histogram.labels("total").observe(float(result.timing_ms.get("total", 0.0)) / 1000)


def record_call(outcome: str, *, role: str | None, seconds: float) -> None:
    """Count one ``call_tool`` (refused, invalid, failed or done) and its latency."""
    m = _registry()
    if m is not None:
        m["calls"].labels(outcome, _role(role)).inc()
        m["call_seconds"].labels("total").observe(seconds)


def record_upstream(server: str, *, seconds: float | None = None, error: str | None = None) -> None:
    """One upstream call's latency, or one upstream failure (``error``: its kind)."""
    m = _registry()
    if m is None:
        return
    if seconds is not None:
        m["call_seconds"].labels("upstream").observe(seconds)
    if error is not None:
        m["upstream_errors"].labels(server, error).inc()


def record_index(health: Mapping[str, Any]) -> None:
    """The index served now, from a health answer (``index``, ``version``, ``tools``, ``serial``, ``ready``,
    ``decision_model``), and the version this process runs."""
    m = _registry()
    if m is None:
        return
    name = str(health.get("index") or "catalog")
    info = m["index_info"]
    info.clear()
    info.labels(name, str(health.get("version") or "local")).set(1)
    m["index_tools"].labels(name).set(float(health.get("tools") or 0))
    m["index_serial"].labels(name).set(float(health.get("serial") or 0))
    m["ready"].set(1.0 if health.get("ready") else 0.0)
    build = m["build_info"]
    build.clear()
    build.labels(__version__, str(health.get("decision_model") or "none")).set(1)


def render(health: Mapping[str, Any] | None = None) -> tuple[bytes, str]:
    """The Prometheus text of every metric (the index gauges refreshed from ``health`` first), and its content
    type; a one-line comment saying how to install prometheus_client when it is missing."""
    m = _registry()
    if m is None:
        return (f"# metrics off: prometheus_client is not installed ({_missing}); pip install 'toolrag[observe]'\n"
                .encode(), CONTENT_TYPE)
    if health is not None:
        record_index(health)
    from prometheus_client import generate_latest

    return generate_latest(m["registry"]), CONTENT_TYPE
