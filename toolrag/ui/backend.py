""":class:`Backend` is the process-wide state every browser session shares: the catalog, the one retriever
(built in a background thread so the page answers at once and shows "preparing models / indexing N%"), the
catalog editor (edits serialised by one lock) and the map warm-up. It imports no gradio, so it is usable and
testable on its own; :func:`toolrag.ui.app.create_app` builds the Blocks app around it::

    from toolrag.ui import Backend
    from toolrag.ui.app import create_app
    backend = Backend("sample_tools"); backend.start()
    create_app(backend).launch()
"""

from __future__ import annotations

import html
import logging
import threading
from pathlib import Path
from typing import Any

from toolrag.catalog.editor import CatalogEditor
from toolrag.catalog.loader import load_catalog
from toolrag.catalog.profile import Catalog
from toolrag.config import data_dir as default_data_dir
from toolrag.errors import ToolragError
from toolrag.evaluation import projection
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings

__all__ = ["Backend"]

log = logging.getLogger(__name__)


class Backend:
    """Process-wide state shared by every session: catalog, retriever, editor, build progress."""

    def __init__(self, catalog_path: str | Path, *, data_dir: str | Path | None = None,
                 settings: Settings | None = None, chroma_url: str | None = None, models: Any = None) -> None:
        self.catalog_path = Path(catalog_path)
        self.catalog: Catalog = load_catalog(self.catalog_path)  # fast; a broken catalog fails at start
        self.data_dir = Path(data_dir) if data_dir else None
        self.settings = settings or Settings()
        self.chroma_url = chroma_url
        self.models = models
        self.lock = threading.Lock()
        self.retriever: ToolRetriever | None = None
        self.editor: CatalogEditor | None = None
        self.error: str | None = None
        self.progress: tuple[float, str] = (0.0, "waiting to start")
        self._ready = threading.Event()
        self._started = False

    # -------------------------------------------------------------------------------------------- building

    def start(self) -> threading.Thread:
        """Build the retriever in a daemon thread (then warm UMAP and cache the catalog's map)."""
        self._started = True
        thread = threading.Thread(target=self.build, name="toolrag-build", daemon=True)
        thread.start()
        return thread

    def build(self) -> None:
        """Load the models and index the catalog (encoding only what the cache lacks); never raises."""
        self._started = True
        try:
            self.retriever = ToolRetriever.from_catalog(
                self.catalog, settings=self.settings, data_dir=self.data_dir, chroma_url=self.chroma_url,
                progress=self._on_progress, models=self.models)
            self.editor = CatalogEditor(self.retriever, lock=self.lock, catalog_path=self.catalog_path)
            self.progress = (1.0, "ready")
        except Exception as exc:  # shown in the status bar and in every handler's toast
            log.exception("building the retriever failed")
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._ready.set()
        if self.retriever is not None:
            threading.Thread(target=self._warm_map, args=(self.data_dir or default_data_dir(),),
                             name="toolrag-map", daemon=True).start()

    def _warm_map(self, folder: Path) -> None:
        """Compile UMAP and cache the catalog's projection, so the first map request is fast."""
        try:
            projection.warm_up(folder)
            ids, vectors = self.retriever.tool_vectors()  # type: ignore[union-attr]
            projection.project(vectors, list(ids))
        except Exception:
            log.exception("map warm-up failed (the map falls back to PCA)")

    def _on_progress(self, fraction: float, message: str) -> None:
        # load_models reports "loading ..." and "models ready"; everything after that is the index build.
        phase = "preparing models" if message.startswith("loading") or message == "models ready" else "indexing"
        text = message if message.startswith(phase) else f"{phase}: {message}"
        self.progress = (max(0.0, min(1.0, float(fraction))), text)

    # ------------------------------------------------------------------------------------------- using

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self.retriever is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the build finished (or failed); True when it has."""
        return self._ready.wait(timeout)

    def status_html(self) -> str:
        """The status line at the top of the page."""
        if self.error:
            return f'<div class="toolrag-status error">⚠ the index could not be built: {html.escape(self.error)}</div>'
        if not self.ready:
            fraction, message = self.progress
            return f'<div class="toolrag-status">◌ {html.escape(message)} — {fraction:.0%}</div>'
        retriever = self.require()
        off = ", ".join(sorted(retriever.signal_notes()))
        extra = f" · off here: {off} (see the notes by the sliders)" if off else " · all signals on"
        report = retriever.catalog.report  # imported catalogs may have skipped or degraded tools
        return (f'<div class="toolrag-status ready">● ready: {len(retriever.catalog)} tools indexed from '
                f"<code>{html.escape(self.catalog_path.name)}</code> ({report.skipped} skipped, "
                f"{report.degraded} degraded){extra}</div>")

    def require(self) -> ToolRetriever:
        """The retriever, or a ``ToolragError`` while it is still being built (or if the build failed)."""
        if self.error:
            raise ToolragError(f"the index could not be built: {self.error}")
        if not self.ready:
            fraction, message = self.progress
            raise ToolragError(f"still indexing... {fraction:.0%} ({message}); try again in a moment")
        return self.retriever  # type: ignore[return-value]

    def require_editor(self) -> CatalogEditor:
        self.require()
        if self.editor is None:  # pragma: no cover - set together with the retriever
            raise ToolragError("the catalog editor is not available")
        return self.editor
