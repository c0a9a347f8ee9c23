"""What the commands share: the catalog/model/store options, settings from flags, opening a retriever.

Every command checks what it can without a model first (settings, the catalog, the request, the labelled
queries), so a mistake is reported in well under a second and nothing is opened or written for it."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Iterable, Iterator

from toolrag.audit import AuditLog
from toolrag.catalog.loader import catalog_files, load_catalog
from toolrag.catalog.profile import Catalog
from toolrag.catalog.report import LoadMode
from toolrag.config import audit_hashes_requests
from toolrag.env_vars import AUDIT_LOG_ENV, CHROMA_URL_ENV
from toolrag.errors import SettingsError
from toolrag.index.client import chroma_url
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Fusion, Normalization, Settings
from toolrag.signals import SIGNALS

__all__ = ["audit_from_args", "catalog_options", "cli_progress", "codes", "load_inputs", "load_mode", "open_catalog",
           "open_retriever", "query_options", "settings_from_args", "warn"]

#: Warnings of a lenient load printed on stderr before "... more" (``toolrag lint`` prints them all).
_WARNINGS_SHOWN = 3

log = logging.getLogger("toolrag.cli")


def catalog_options(*, catalog: bool | None = True) -> argparse.ArgumentParser:
    """Options of every command that opens a catalog: where it is (``catalog``: True required, None optional,
    False no such option), where the index lives, which models."""
    common = argparse.ArgumentParser(add_help=False)
    if catalog is not False:
        common.add_argument("--catalog", required=bool(catalog),
                            help="catalog folder or file (YAML, JSONL, OpenAI, MCP)")
    common.add_argument("--data-dir", help="index folder (default: TOOLRAG_DATA_DIR or ~/.cache/toolrag)")
    common.add_argument("--chroma-url", help="use a Chroma server, e.g. http://127.0.0.1:8000 "
                                             f"(default: {CHROMA_URL_ENV}, else an embedded index)")
    common.add_argument("--settings", help="YAML file of settings (weights, thresholds, models)")
    common.add_argument("--text-model", help="multilingual text model: e5, a path or a Hub id")
    common.add_argument("--english-model", help="English text model: minilm, a path, a Hub id, or none")
    common.add_argument("--clip-model", help="open_clip model (ARCH:TAG, hf-hub:ID, random:ARCH, none)")
    common.add_argument("--rerank-model", help="cross-encoder path or Hub id (none = off)")
    strictness = common.add_mutually_exclusive_group()
    strictness.add_argument("--strict", dest="load_mode", action="store_const", const=LoadMode.STRICT.value,
                            help="refuse the catalog on any problem (default for YAML)")
    strictness.add_argument("--lenient", dest="load_mode", action="store_const", const=LoadMode.LENIENT.value,
                            help="drop bad fields and skip unusable tools with warnings (default for .json/.jsonl)")
    common.add_argument("--audit-log", help=f"append every search to this JSON Lines file (default: {AUDIT_LOG_ENV})")
    common.add_argument("--audit-requests", choices=["text", "hash"],
                        help="keep each request's text in the audit log, or only its SHA-256")
    common.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    return common


def query_options() -> argparse.ArgumentParser:
    """Options of the commands that search: the caller, and the retrieval settings to override."""
    opts = argparse.ArgumentParser(add_help=False)
    opts.add_argument("--permissions", default="", help="comma-separated permission codes of the caller")
    opts.add_argument("--role", help="a role named in the catalog's catalog.yaml")
    opts.add_argument("--top-k", type=int)
    opts.add_argument("--fusion", choices=[f.value for f in Fusion])
    opts.add_argument("--normalization", choices=[n.value for n in Normalization])
    opts.add_argument("--weight", action="append", default=[], metavar="SIGNAL=W",
                      help=f"signal weight, repeatable; signals: {', '.join(SIGNALS)}")
    opts.add_argument("--rerank", action="store_true", help="rerank the top candidates")
    opts.add_argument("--precision-target", type=float, metavar="P",
                      help="the decision's operating point: EXECUTE only where this share of calls was right on "
                           "held-out sources (0.5-0.99; default: the decision model's; higher: fewer, surer calls)")
    opts.add_argument("--clean-target", type=float, metavar="C",
                      help="the decision's other operating point: inject nothing for this share of requests no tool "
                           "served on held-out sources; below it a request gets the candidates and a question "
                           "(0.5-0.99; default: the decision model's; higher: fewer stray tools)")
    opts.add_argument("--json", action="store_true", help="print JSON")
    return opts


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The settings file (if any) with the flags that were given on top; an absent flag changes nothing."""
    base = Settings.from_yaml(args.settings) if args.settings else Settings()
    weights: dict[str, float] = {}
    for item in getattr(args, "weight", []):
        name, _, value = item.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise SettingsError(f"--weight {item!r}: expected SIGNAL=NUMBER, e.g. bm25=0.3") from None
    flags = {
        "text_model": args.text_model,
        "english_model": args.english_model,
        "clip_model": args.clip_model,
        "rerank_model": args.rerank_model,
        "top_k": getattr(args, "top_k", None),
        "fusion": getattr(args, "fusion", None),
        "normalization": getattr(args, "normalization", None),
        "weights": weights or None,
        "precision_target": getattr(args, "precision_target", None),
        "clean_target": getattr(args, "clean_target", None),
        "rerank": True if getattr(args, "rerank", False) else None,
    }
    return base.with_overrides(**{name: value for name, value in flags.items() if value is not None})


def load_mode(args: argparse.Namespace) -> LoadMode:
    """``--strict`` / ``--lenient``, else the default (YAML strict, imports lenient)."""
    return LoadMode(getattr(args, "load_mode", None) or LoadMode.AUTO.value)


def open_catalog(args: argparse.Namespace) -> Catalog:
    """The catalog of ``--catalog``. How many tools were loaded, skipped and degraded goes to stderr when a file
    was read leniently (an import) or anything was dropped; a clean hand-written catalog loads silently (``-v``
    logs it), so an error stays the one line on stderr."""
    mode = load_mode(args)
    catalog = load_catalog(args.catalog, mode=mode)
    report = catalog.report
    imported = any(mode.lenient_for(file) for file in catalog_files(args.catalog))
    if not (imported or not report.clean):
        log.info("catalog %s: %s", catalog.name, report.summary())
        return catalog
    print(f"catalog {catalog.name}: {report.summary()}", file=sys.stderr)
    for warning in report.warnings[:_WARNINGS_SHOWN]:
        print(f"  {warning}", file=sys.stderr)
    if len(report.warnings) > _WARNINGS_SHOWN:
        print(f"  ... {len(report.warnings) - _WARNINGS_SHOWN} more warnings (toolrag lint lists them all)",
              file=sys.stderr)
    return catalog


def audit_from_args(args: argparse.Namespace) -> AuditLog | None:
    """The audit log of ``--audit-log`` (else ``TOOLRAG_AUDIT_LOG``), or ``None``."""
    path = getattr(args, "audit_log", None)
    audit = AuditLog(path) if path else AuditLog.from_env()
    if audit is not None and getattr(args, "audit_requests", None):
        audit.hash_requests = audit_hashes_requests(args.audit_requests)
    return audit


def load_inputs(args: argparse.Namespace) -> tuple[Catalog, Settings]:
    """The settings and the catalog, checked before any model loads (a mistake in either costs no wait)."""
    settings = settings_from_args(args)
    return open_catalog(args), settings


def warn(notes: Iterable[str]) -> None:
    """Notes on a request (cleaned text, a cut query, an unknown permission code) or on the models (a fallback)
    as warnings on stderr."""
    for note in notes:
        print(f"toolrag: warning: {note}", file=sys.stderr)


def cli_progress(fraction: float, message: str) -> None:
    """Progress of a long step, logged with ``-v``."""
    log.info("%3.0f%% %s", fraction * 100, message)


def open_retriever(args: argparse.Namespace, settings: Settings, catalog: Catalog | None = None) -> ToolRetriever:
    """The retriever of ``--catalog`` (models loaded, index synced), logging progress with ``-v``; an opt-in
    Hub model that fell back to the packaged one is a warning on stderr."""

    retriever = ToolRetriever.from_catalog(
        catalog if catalog is not None else open_catalog(args), settings=settings, data_dir=args.data_dir,
        chroma_url=chroma_url(args.chroma_url), progress=cli_progress,
        audit=audit_from_args(args),
    )
    warn(retriever.model_notes())
    return retriever


def codes(text: str) -> list[str]:
    """Comma-separated permission codes as a list (blanks dropped)."""
    return [c.strip() for c in text.split(",") if c.strip()]


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """While inside, SIGTERM ends the command as Ctrl-C does: an exception (``SystemExit(143)``) that runs every
    ``with`` and ``finally`` on its way out, so a push releases its build lease instead of leaving it to expire."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
