"""OpenTelemetry traces: a span per search with a child per stage, a span per ``call_tool`` with the upstream
call inside it; the caller's W3C trace continued and passed on to the upstream server.

Off unless asked for: :func:`configure` (called by ``toolrag serve`` and the app) installs the SDK's tracer
provider only when the standard variables name an exporter (``OTEL_TRACES_EXPORTER``, or an OTLP endpoint in
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; ``OTEL_SDK_DISABLED=true`` wins). The
SDK reads the rest itself (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, the OTLP headers and protocol
options). A process that installed its own provider (a library caller, the tests' in-memory exporter) gets
toolrag's spans there. With no provider every hook returns after one check: no span object is made.

Spans never hold a tool's arguments; the request's text only when the audit log keeps it
(``TOOLRAG_AUDIT_REQUESTS=text``), else only its SHA-256 (the same redaction as the audit log).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from toolrag.config import audit_hashes_requests, env
from toolrag.env_vars import OTEL_DISABLED_ENV, OTEL_ENDPOINT_ENV, OTEL_EXPORTER_ENV, OTEL_TRACES_ENDPOINT_ENV
from toolrag.observe.metrics import stage_times

__all__ = ["configure", "search_span", "span", "tracer"]

log = logging.getLogger(__name__)
_configured = False


def configure() -> bool:
    """Install the SDK's tracer provider with the exporters the ``OTEL_*`` variables name (once per process);
    True when traces are exported. Nothing happens when none is named or another provider is installed already."""
    global _configured
    if _configured:
        return tracer() is not None
    _configured = True
    names = env(OTEL_EXPORTER_ENV).lower() or ("otlp" if env(OTEL_ENDPOINT_ENV) or env(OTEL_TRACES_ENDPOINT_ENV)
                                               else "")
    if not names or names == "none" or env(OTEL_DISABLED_ENV).lower() == "true":
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError as exc:
        log.warning("%s=%s but the OpenTelemetry SDK is missing (%s): pip install 'toolrag[observe]'; traces off",
                    OTEL_EXPORTER_ENV, names, exc)
        return False
    if tracer() is not None:
        return True  # the host process installed its own provider
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "toolrag"}))
    provider = TracerProvider(resource=resource)
    for name in (n.strip() for n in names.split(",") if n.strip()):
        exporter: SpanExporter
        if name == "console":
            exporter = ConsoleSpanExporter()
        elif name == "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
            except ImportError as exc:
                log.warning("OTLP trace exporter missing (%s): pip install 'toolrag[observe]'", exc)
                continue
            exporter = OTLPSpanExporter()
        else:
            log.warning("%s=%s: toolrag knows the exporters otlp, console and none; %r skipped", OTEL_EXPORTER_ENV,
                        names, name)
            continue
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    log.info("OpenTelemetry traces exported (%s)", names)
    return True


def tracer() -> Any:
    """toolrag's tracer when a tracer provider is installed, else ``None`` (traces off: nothing to record)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return None
    return trace.get_tracer("toolrag")


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """A span around a block, current inside it (``None`` when traces are off); an exception is recorded."""
    t = tracer()
    if t is None:
        yield None
        return
    with t.start_as_current_span(name, attributes=_clean(attributes or {})) as current:
        yield current


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if v is not None}


def request_attributes(text: str, *, redact: bool | None) -> dict[str, Any]:
    """The request as span attributes: its SHA-256, and its text unless the audit log is redacted."""
    out: dict[str, Any] = {"toolrag.request.sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}
    if not (audit_hashes_requests() if redact is None else redact):
        out["toolrag.request.text"] = text
    return out


def search_span(result: Any, *, role: str | None, started_ns: int, ended_ns: int, redact: bool | None) -> None:
    """The span of one finished search (child of the current span: the MCP request, the caller's trace) and a
    child per stage. The stages' spans are laid end to end from the search's start with the durations the search
    measured (``SearchResult.timing_ms``), so the search itself carries no tracing code."""
    t = tracer()
    if t is None:
        return
    from opentelemetry import trace

    top = [c.id for c in result.candidates[:3]]
    attributes = {"toolrag.decision": result.decision.value,
                  "toolrag.decided_by": getattr(result.decided_by, "value", str(result.decided_by)),
                  "toolrag.role": role or "", "toolrag.index.version": getattr(result, "index_version", None),
                  "toolrag.candidates": top, "toolrag.selected": list(result.selected),
                  **request_attributes(result.query, redact=redact)}
    parent = t.start_span("toolrag.search", start_time=started_ns, attributes=_clean(attributes))
    context = trace.set_span_in_context(parent)
    cursor = started_ns
    for stage, ms in stage_times(result.timing_ms):
        child = t.start_span(f"toolrag.search.{stage}", context=context, start_time=cursor)
        cursor = min(cursor + int(ms * 1e6), ended_ns)
        child.end(end_time=cursor)
    parent.end(end_time=ended_ns)
