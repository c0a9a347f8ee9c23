"""The audit log: one JSON line per search and per forwarded tool call, written without blocking either.

Agents act on toolrag's decisions without a human check, so whoever runs them needs a record of what was
asked, what was decided and why, and which tools were offered. :class:`AuditLog` appends records to a JSON
Lines file from a background thread (a search only puts a dict on a queue), rotates the file by size
(``audit.jsonl`` -> ``audit.jsonl.1`` ...), and never fails a search: a folder that cannot be written gives
one warning and the log turns itself off. Requests can be stored as a SHA-256 hash instead of their text.
:func:`summarize` reads a log back for ``toolrag audit``.

Records are built by their callers (the retriever for searches, the MCP gateway for calls); this module
only writes and reads them, so it sits low in the layers and knows nothing of searches.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import math
import queue
import threading
import weakref
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from toolrag.config import audit_hashes_requests, env
from toolrag.env_vars import AUDIT_LOG_ENV
from toolrag.errors import SettingsError

__all__ = ["AuditLog", "AuditSummary", "read_audit", "read_log", "summarize"]

log = logging.getLogger(__name__)

_STOP = object()
_LIVE: weakref.WeakSet[AuditLog] = weakref.WeakSet()


class AuditLog:
    """Appends audit records to ``path`` (JSON Lines) from a background thread.

    ``hash_requests``: store ``request_sha256`` instead of the request text. ``max_bytes``: rotate when the file
    would grow past it, keeping ``backups`` older files. ``queue_size``: records waiting to be written; when
    the writer falls that far behind, new records are dropped (counted in :attr:`dropped`), never waited for.
    """

    def __init__(self, path: str | Path, *, hash_requests: bool = False, max_bytes: int = 10_000_000,
                 backups: int = 5, queue_size: int = 10_000) -> None:
        if max_bytes < 1 or backups < 0 or queue_size < 1:
            raise ValueError(f"max_bytes ({max_bytes}) and queue_size ({queue_size}) must be positive and backups "
                             f"({backups}) not negative")
        self.path = Path(path).expanduser()
        self.hash_requests = hash_requests
        self.max_bytes, self.backups = max_bytes, backups
        self.dropped = 0
        self.failed: str | None = None
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        _LIVE.add(self)

    @classmethod
    def from_env(cls) -> AuditLog | None:
        """The log named by ``TOOLRAG_AUDIT_LOG`` (``TOOLRAG_AUDIT_REQUESTS=hash`` stores hashes), or ``None``."""
        path = env(AUDIT_LOG_ENV)
        if not path:
            return None
        return cls(path, hash_requests=audit_hashes_requests())

    def request_fields(self, text: str) -> dict[str, str]:
        """The request as the log keeps it: ``{"request": text}`` or ``{"request_sha256": hex}``."""
        if self.hash_requests:
            return {"request_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
        return {"request": text}

    def write(self, record: Mapping[str, Any]) -> None:
        """Queue one record (``time`` added when missing); returns at once, never raises for I/O."""
        if self.failed is not None:
            return
        entry = {"time": _now(), **record}
        self._start()
        try:
            self._queue.put_nowait(entry)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1:
                log.warning("audit log %s cannot keep up; dropping records (see AuditLog.dropped)", self.path)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued record is written (True) or ``timeout`` seconds passed (False)."""
        if self._thread is None:
            return True
        done = threading.Event()
        try:
            self._queue.put(done, timeout=timeout)
        except queue.Full:
            return False
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued and stop the writer thread."""
        thread = self._thread
        if thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=timeout)
        thread.join(timeout)
        self._thread = None

    def _start(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="toolrag-audit", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            if self.failed is None:
                self._append(json.dumps(item, ensure_ascii=False, default=str) + "\n")

    def _append(self, line: str) -> None:
        data = line.encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists() and self.path.stat().st_size + len(data) > self.max_bytes:
                self._rotate()
            with self.path.open("ab") as handle:
                handle.write(data)
        except OSError as exc:
            self.failed = str(exc)
            log.warning("audit log off: cannot write %s (%s); searches go on without it. Set "
                        "TOOLRAG_AUDIT_LOG / --audit-log to a writable file", self.path, exc)

    def _rotate(self) -> None:
        if self.backups == 0:
            self.path.unlink()
            return
        for n in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{n + 1}"))
        self.path.replace(self.path.with_name(f"{self.path.name}.1"))


@atexit.register
def _flush_all() -> None:  # records queued just before the process exits are still written
    for audit in list(_LIVE):
        audit.close(timeout=2.0)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def read_audit(path: str | Path) -> Iterator[dict[str, Any]]:
    """Every record of a log, oldest first: rotated files (``.N`` ... ``.1``) then the current one. A line that
    is not JSON (a crash mid-write) is skipped."""
    for record in _lines(path):
        if record is not None:
            yield record


def _rotated(file: Path) -> list[Path]:
    """The rotated parts of a log (``FILE.1``, ``FILE.2``, ...), oldest first; ``FILE.bak`` is none of them."""
    parts = [p for p in file.parent.glob(f"{file.name}.*") if p.name.rsplit(".", 1)[-1].isdigit()]
    return sorted(parts, key=lambda p: -_suffix_number(p))


def _lines(path: str | Path) -> Iterator[dict[str, Any] | None]:
    """Each non-blank line of a log and its rotated parts, oldest first: the JSON object, or ``None``."""
    file = Path(path).expanduser()
    for part in [*_rotated(file), file]:
        if not part.is_file():
            continue
        with part.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    continue
                record = None
                with contextlib.suppress(json.JSONDecodeError):
                    record = json.loads(line)
                yield record if isinstance(record, dict) else None


def _suffix_number(path: Path) -> int:
    tail = path.name.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 0


@dataclass(frozen=True)
class AuditSummary:
    """What a log holds: searches by decision, calls by outcome, latency percentiles, the time span."""

    searches: int
    decisions: Mapping[str, int]
    calls: int
    outcomes: Mapping[str, int]
    p50_ms: float
    p95_ms: float
    first: str | None
    last: str | None
    skipped: int = 0
    """Lines that are not audit records (not JSON: a write cut short by a crash; or JSON of another kind)."""

    def line(self) -> str:
        """One line for ``toolrag audit``."""
        if not (self.searches or self.calls):
            return "audit log is empty"
        decisions = ", ".join(f"{k} {v}" for k, v in sorted(self.decisions.items()))
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
        latency = (f"search latency p50 {self.p50_ms:.0f} ms p95 {self.p95_ms:.0f} ms" if not math.isnan(self.p50_ms)
                   else "no search latency recorded")
        span = f", {self.first} .. {self.last}" if self.first else ""
        skipped = f"; {self.skipped} line(s) that are not audit records skipped" if self.skipped else ""
        return (f"{self.searches} searches ({decisions or 'none'}), {self.calls} calls ({outcomes or 'none'}), "
                f"{latency}{span}{skipped}")


def read_log(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """The audit records (searches and calls) of a log and its rotated files, oldest first, and how many of its
    lines are not audit records and were skipped (not JSON: a write cut short by a crash, NUL bytes; JSON of
    another kind). The one reader of a log for ``toolrag audit`` and its ``--unmatched`` list: ``SettingsError``
    when there is no log at ``path``, or when none of its lines is an audit record (another file was named)."""
    file = Path(path).expanduser()
    if not file.is_file() and not _rotated(file):
        raise SettingsError(f"no audit log at {file}; searches write one when TOOLRAG_AUDIT_LOG or --audit-log "
                            "names it")
    records: list[dict[str, Any]] = []
    skipped = 0
    for record in _lines(file):
        if record is None or record.get("kind") not in ("search", "call"):
            skipped += 1
        else:
            records.append(record)
    if skipped and not records:
        raise SettingsError(f"{file} is not a toolrag audit log: none of its {skipped} line(s) is a search or call "
                            "record; pass the JSON Lines file that --audit-log or TOOLRAG_AUDIT_LOG names")
    return records, skipped


def summarize(path: str | Path) -> AuditSummary:
    """Summarise a log (and its rotated files) read by :func:`read_log` (its errors)."""
    records, skipped = read_log(path)
    decisions: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    latencies: list[float] = []
    times: list[str] = []
    for record in records:
        if isinstance(record.get("time"), str):
            times.append(record["time"])
        if record["kind"] == "call":
            outcomes[str(record.get("outcome"))] += 1
        else:
            refused = record.get("outcome") == "refused"  # a caller refused before searching (unknown token)
            decisions["refused" if refused else str(record.get("decision"))] += 1
            if isinstance(record.get("latency_ms"), int | float) and not refused:
                latencies.append(float(record["latency_ms"]))
    latencies.sort()
    return AuditSummary(sum(decisions.values()), dict(decisions), sum(outcomes.values()), dict(outcomes),
                        _percentile(latencies, 0.5), _percentile(latencies, 0.95),
                        min(times) if times else None, max(times) if times else None, skipped)


def _percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of sorted ``values`` (rank ceil(q * n), 1-based); NaN when empty."""
    if not values:
        return math.nan
    return values[max(0, math.ceil(q * len(values)) - 1)]
