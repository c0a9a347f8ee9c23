"""A retriever serving a published index (:mod:`toolrag.index.published`): one of several replicas behind one
Chroma server, following the index's versions live.

``open_replica(index="tools", chroma_url=...)`` serves what the manifest names, without any catalog file (read-only);
with ``catalog=`` the folder is pushed first when the manifest does not name its version (built once, whichever
replica gets the lease) and the replica's edits are pushed too. Either way the replica then follows the manifest:
a version pushed anywhere is served here within a poll interval plus its load time, and a search in flight
finishes on the version it started with.
"""

from __future__ import annotations

import logging
from pathlib import Path

from toolrag.audit import AuditLog
from toolrag.catalog.lint import refuse_unusable_images
from toolrag.catalog.loader import load_catalog
from toolrag.catalog.profile import Catalog
from toolrag.config import data_dir as default_data_dir
from toolrag.config import seconds_setting
from toolrag.encode.models import ModelSet, load_models
from toolrag.env_vars import INDEX_POLL_ENV
from toolrag.errors import SettingsError
from toolrag.index.client import StoreConfig, chroma_url_parts, open_client
from toolrag.index.published import check_index_name
from toolrag.index.push import open_pusher
from toolrag.index.replica import ReplicaIndex
from toolrag.progress import Progress
from toolrag.search.no_tool_bank import bank_decider, bank_folder
from toolrag.search.query import QueryAnalyzer
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings

__all__ = ["open_replica"]

log = logging.getLogger(__name__)


def open_replica(*, index: str, chroma_url: str | None, catalog: str | Path | Catalog | None = None,
                 settings: Settings | None = None, data_dir: str | Path | None = None, models: ModelSet | None = None,
                 audit: AuditLog | None = None, progress: Progress | None = None, follow: bool = True,
                 wait: float | None = 0.0) -> ToolRetriever:
    """A retriever over the published index ``index`` on the Chroma server ``chroma_url``.

    ``catalog``: the catalog's folder (or a loaded catalog): its version is pushed before serving (StoreError when
    the server cannot be reached). Without it the replica is read-only and tolerates a server that is down or an
    index not pushed yet: it is not ready (``retriever.index.health()``) until a version loads. ``wait``: seconds
    to wait for a first version (``None``: until one comes; the default 0 reads the manifest once). ``follow``:
    start the thread that follows the manifest."""
    check_index_name(index)
    if not chroma_url:
        raise SettingsError(f"--index {index}: a published index lives on a Chroma server; give --chroma-url "
                            "http://host:port (or TOOLRAG_CHROMA_URL)")
    chroma_url_parts(chroma_url)  # a URL that can never work is refused at start, not retried every poll
    settings = settings or Settings()
    audit = audit if audit is not None else AuditLog.from_env()
    cat = catalog if isinstance(catalog, Catalog) or catalog is None else load_catalog(catalog)
    if cat is not None:
        refuse_unusable_images(cat)
        open_client(StoreConfig(url=chroma_url))  # a writer needs the server: a closed port fails before the models
    poll = seconds_setting(INDEX_POLL_ENV, 2.0)
    models = models or load_models(settings, progress=progress)
    pusher = open_pusher(chroma_url, index, models, progress=progress) if cat is not None else None
    replica = ReplicaIndex(chroma_url, index, models, pusher=pusher, poll=poll)
    folder = Path(data_dir) if data_dir else default_data_dir()
    # the decision needs nothing per catalog (the shipped model): a new version is served as it loads
    retriever = ToolRetriever.around(replica, settings=settings, audit=audit,
                                     decider=bank_decider(QueryAnalyzer(models), folder=bank_folder(folder)))
    if pusher is not None and cat is not None:
        replica.adopt(pusher.push(cat))
    elif wait is None or wait > 0:
        replica.wait_loaded(wait)
    else:
        replica.poll_once()
    if follow:
        replica.follow()
    return retriever
