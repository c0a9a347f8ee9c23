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

import contextlib
import dataclasses
import html
import logging
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrag.catalog.caller import Caller
from toolrag.catalog.editor import CatalogEditor
from toolrag.catalog.lint import refuse_unusable_images
from toolrag.catalog.loader import load_catalog
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.catalog.staging import catalog_state
from toolrag.config import data_dir as default_data_dir
from toolrag.config import environ as config_environ
from toolrag.config import switch_setting
from toolrag.env_vars import AUTH_ENV, EDITING_ENV, EDITORS_ENV, MAP_WARMUP_ENV, PUBLIC_ROLE_ENV, USER_ROLES_ENV
from toolrag.errors import SettingsError, StoreError, ToolragError
from toolrag.evaluation import projection
from toolrag.index.replica import ReplicaIndex
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings
from toolrag.strict import closest

__all__ = ["AUTH_ENV", "EDITING_ENV", "EDITORS_ENV", "Access", "Backend", "View"]

log = logging.getLogger(__name__)

_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_ON, _OFF = frozenset({"1", "on", "true", "yes"}), frozenset({"0", "off", "false", "no"})


@dataclass(frozen=True)
class Access:
    """Who may edit the catalog through the app, decided once at start from where the app is served.

    On the local machine (bound to 127.0.0.1, the default of ``python app.py``) editing is on, as it always
    was. A shared deployment (a Hugging Face Space: ``SPACE_ID``; a bind address other than loopback:
    ``GRADIO_SERVER_NAME``; a share link: ``GRADIO_SHARE``/``share=True``) is read-only unless
    ``TOOLRAG_EDITING=on``, and then only with credentials: ``TOOLRAG_AUTH=user:password,...`` puts the whole
    app behind Gradio's sign-in, or on a Space ``TOOLRAG_EDITORS=hf_user,...`` lets those Hugging Face users
    edit after signing in with Hugging Face. ``TOOLRAG_EDITING=off`` makes any instance read-only. A read-only
    app registers no editing endpoint at all.

    What a shared app shows (:meth:`Backend.view`): to every visitor only the tools of the public role
    (``TOOLRAG_PUBLIC_ROLE``; unset: the tools that need no permission code), in every output; a user signed
    in with ``TOOLRAG_AUTH`` (or with Hugging Face on a Space) also sees the tools of the roles
    ``TOOLRAG_USER_ROLES=user:role,...`` gives them, and a signed-in editor sees every tool. Locally every
    tool is shown, as always.
    """

    editing: bool
    shared: bool
    reason: str
    auth: tuple[tuple[str, str], ...] = ()
    editors: tuple[str, ...] = ()
    public_role: str | None = None
    user_roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_env(cls, *, server_name: str | None = None, share: bool | None = None,
                 environ: Mapping[str, str] | None = None) -> Access:
        """The access of an app served at ``server_name`` (default ``GRADIO_SERVER_NAME``, else loopback)
        with or without a share link (default ``GRADIO_SHARE``), from the environment."""
        env = config_environ() if environ is None else environ
        access = cls._from_env(env, server_name, share)
        public = env.get(PUBLIC_ROLE_ENV, "").strip() or None
        return dataclasses.replace(access, public_role=public, user_roles=_user_roles(env.get(USER_ROLES_ENV, "")))

    @classmethod
    def _from_env(cls, env: Mapping[str, str], server_name: str | None, share: bool | None) -> Access:
        flag = env.get(EDITING_ENV, "").strip().lower()
        if flag and flag not in _ON | _OFF:
            raise SettingsError(f"{EDITING_ENV}={flag!r}: use on (edit, with credentials when shared) or off "
                                "(read-only)")
        auth = _credentials(env.get(AUTH_ENV, ""))
        editors = tuple(u.strip() for u in env.get(EDITORS_ENV, "").split(",") if u.strip())
        host = (server_name if server_name is not None else env.get("GRADIO_SERVER_NAME", "")).strip()
        share = share if share is not None else env.get("GRADIO_SHARE", "").strip().lower() in _ON
        where = [w for w, on in (("a Hugging Face Space", bool(env.get("SPACE_ID"))),
                                 (f"bound to {host}", bool(host) and host not in _LOCAL_HOSTS),
                                 ("a share link", share)) if on]
        shared = bool(where)
        if flag in _OFF:
            return cls(False, shared, f"read-only: {EDITING_ENV}=off", auth, editors)
        if not shared:
            note = "signed-in users" if auth else "bound to this machine only"
            return cls(True, False, f"editing on: local ({note})", auth, editors)
        place = " and ".join(where)
        if flag not in _ON:
            return cls(False, True, f"read-only: shared ({place}); set {EDITING_ENV}=on with {AUTH_ENV} (or "
                                    f"{EDITORS_ENV} on a Space) to allow editing", auth, editors)
        if auth:
            return cls(True, True, f"editing on for signed-in users ({place}, {AUTH_ENV})", auth, editors)
        if editors and env.get("SPACE_ID"):
            return cls(True, True, f"editing on for the Hugging Face users in {EDITORS_ENV} after signing in "
                                   f"({place})", (), editors)
        log.warning("%s=on but no credentials (%s, or %s on a Space): the shared app stays read-only",
                    EDITING_ENV, AUTH_ENV, EDITORS_ENV)
        return cls(False, True, f"read-only: {EDITING_ENV}=on but no credentials are set ({AUTH_ENV}=user:password"
                                f", or {EDITORS_ENV}=hf_user on a Space); editing a shared app needs sign-in",
                   auth, editors)

    @classmethod
    def local(cls) -> Access:
        """Editing on, no sign-in: the playground on the local machine (and the default of the test suite)."""
        return cls(True, False, "editing on: local (bound to this machine only)")

    def is_editor(self, user: str | None) -> bool:
        """Whether ``user`` (signed in with ``TOOLRAG_AUTH``, or with Hugging Face on a Space) may edit."""
        if not (self.editing and user):
            return False
        return any(user == name for name, _ in self.auth) if self.auth else user in self.editors


@dataclass(frozen=True)
class View:
    """What one caller of the playground may see: every tool (``codes`` is ``None``: the local playground, a
    signed-in editor), or the tools whose permission codes are all in ``codes``. ``who`` says why, for
    messages. Every output of the app (search, map, profiles, evaluation, report) goes through one."""

    codes: frozenset[str] | None
    who: str

    @property
    def everything(self) -> bool:
        return self.codes is None

    def caller(self, catalog: Catalog) -> Caller:
        """The :class:`Caller` this view is: the catalog's author (every code) or the holder of ``codes``."""
        return Caller.author(catalog, include_deprecated=True) if self.codes is None else Caller(self.codes)

    def sees(self, tool: ToolProfile) -> bool:
        return self.codes is None or Caller(self.codes).may_use(tool)

    def catalog(self, catalog: Catalog) -> Catalog:
        """``catalog`` with only the tools this caller may see."""
        if self.codes is None:
            return catalog
        return Catalog(tuple(t for t in catalog.tools if self.sees(t)), catalog.name, catalog.root,
                       catalog.assets_dir, catalog.roles, catalog.report)

    def roles(self, catalog: Catalog) -> list[str]:
        """The catalog's roles this caller may act as: those granting no code beyond the caller's."""
        caller = self.caller(catalog)
        return [r for r in catalog.roles if caller.permits(catalog.role_codes(r))]

    def check_role(self, catalog: Catalog, role: str | None) -> None:
        """Refuse a role that grants more than this caller holds (the role picker offers only the others)."""
        if role and role in catalog.roles and role not in self.roles(catalog):
            raise ToolragError(f"role {role!r} is not available to you ({self.who}); sign in as a user who holds "
                               "it")


def _user_roles(raw: str) -> dict[str, tuple[str, ...]]:
    """``user:role,user:role2`` as user -> roles."""
    out: dict[str, list[str]] = {}
    for item in raw.replace("\n", ",").split(","):
        if item.strip():
            user, sep, role = (part.strip() for part in item.partition(":"))
            if not sep or not user or not role:
                raise SettingsError(f"{USER_ROLES_ENV}: {item.strip()!r} is not user:role; write user:role pairs "
                                    "separated by commas (a user may appear in several)")
            out.setdefault(user, []).append(role)
    return {user: tuple(roles) for user, roles in out.items()}


def _credentials(raw: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in raw.replace("\n", ",").split(","):
        if item.strip():
            user, sep, password = item.strip().partition(":")
            if not sep or not user or not password:
                raise SettingsError(f"{AUTH_ENV}: {user or item.strip()!r} has no password; write "
                                    "user:password pairs separated by commas")
            pairs.append((user, password))
    return tuple(pairs)


class Backend:
    """Process-wide state shared by every session: catalog, retriever, editor, build progress."""

    def __init__(self, catalog_path: str | Path | None, *, data_dir: str | Path | None = None,
                 settings: Settings | None = None, chroma_url: str | None = None, models: Any = None,
                 access: Access | None = None, index: str | None = None) -> None:
        """``index``: the name of an index published on the Chroma server ``chroma_url`` (docs/deploy.md): served
        and followed; without ``catalog_path`` the app needs no catalog file and is read-only, with it the folder
        is pushed under that name (and so are its edits)."""
        self.index = index
        self.catalog_path = Path(catalog_path) if catalog_path is not None else None
        self.access = access or Access.local()
        if self.catalog_path is None:
            if not index:
                raise SettingsError("the playground needs a catalog (TOOLRAG_CATALOG) or a published index "
                                    "(TOOLRAG_INDEX with TOOLRAG_CHROMA_URL)")
            self.access = dataclasses.replace(self.access, editing=False, reason=(
                f"read-only: serving the published index {index!r} (edits need its catalog folder)"))
            self._disk_state = None
            self._catalog = Catalog((), index)
        else:
            self._disk_state = catalog_state(self.catalog_path)  # the editor sees saves made during the build
            self._catalog = load_catalog(self.catalog_path)  # fast; a broken catalog fails at start
            refuse_unusable_images(self._catalog)  # so does an unusable example image (the build would refuse it)
            _check_roles(self.access, self._catalog)
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
        self.warm_up: threading.Thread | None = None  # the model warm-up started after the build

    # -------------------------------------------------------------------------------------------- building

    def start(self) -> threading.Thread:
        """Build the retriever in a daemon thread (then warm UMAP and cache the catalog's map)."""
        self._started = True
        thread = threading.Thread(target=self.build, name="toolrag-build", daemon=True)
        thread.start()
        return thread

    @property
    def catalog(self) -> Catalog:
        """The catalog served now (the retriever's once built: it follows edits and pushed versions)."""
        retriever = self.retriever
        if retriever is not None and self._ready.is_set():
            with contextlib.suppress(StoreError):  # a replica whose first version is not loaded yet
                return retriever.catalog
        return self._catalog

    def build(self) -> None:
        """Load the models and index the catalog (encoding only what the cache lacks); never raises."""
        self._started = True
        try:
            self.retriever = self._open()
            if self.access.editing and self.catalog_path is not None:  # a read-only one never writes the catalog
                self.editor = CatalogEditor(self.retriever, lock=self.lock, catalog_path=self.catalog_path,
                                            disk_state=self._disk_state)
            self.progress = (1.0, "ready")
        except Exception as exc:  # shown in the status bar and in every handler's toast
            log.exception("building the retriever failed")
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._ready.set()
        if self.retriever is not None:
            # OCR and the image model load on first use: warm them now, so the first image search is fast.
            self.warm_up = self.retriever.warm_up_in_background()
            if switch_setting(MAP_WARMUP_ENV, meaning="leave the map's UMAP to the first map request"):
                threading.Thread(target=self._warm_map, args=(self.data_dir or default_data_dir(),),
                                 name="toolrag-map", daemon=True).start()

    def _open(self) -> ToolRetriever:
        if not self.index:
            return ToolRetriever.from_catalog(self._catalog, settings=self.settings, data_dir=self.data_dir,
                                              chroma_url=self.chroma_url, progress=self._on_progress,
                                              models=self.models)
        from toolrag.search.replicas import open_replica

        retriever = open_replica(index=self.index, chroma_url=self.chroma_url,
                                 catalog=self._catalog if self.catalog_path is not None else None,
                                 settings=self.settings, data_dir=self.data_dir, models=self.models,
                                 progress=self._on_progress)
        replica = retriever.index
        while isinstance(replica, ReplicaIndex) and not replica.wait_loaded(5):
            self.progress = (0.0, f"waiting for the published index: {replica.health().reason}")
        _check_roles(self.access, retriever.catalog)
        return retriever

    def health(self) -> dict[str, Any]:
        """What ``/readyz`` answers: ready once the index is built (a replica: its version loaded and its store
        answering), with the index, its version, its tools and the decision model's version."""
        retriever = self.retriever if self.ready else None
        if retriever is None:
            return {"ready": False, "index": self.index, "version": None, "serial": 0, "tools": 0,
                    "reason": self.error or self.progress[1], "decision_model": None}
        return retriever.health()

    def _warm_map(self, folder: Path) -> None:
        """Compile UMAP and cache the catalog's projection, so the first map request is fast."""
        try:
            projection.warm_up(folder)
            ids, vectors = self.retriever.tool_vectors()  # type: ignore[union-attr]
            projection.project(vectors, list(ids))
        except RuntimeError as exc:
            if "after shutdown" not in str(exc):  # else the process exits while this thread imports: nothing to warm
                log.exception("map warm-up failed (the map falls back to PCA)")
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
        # An opt-in Hub model that could not be loaded: the packaged model of its role runs instead.
        extra += "".join(f" · ⚠ {html.escape(note)}" for note in retriever.model_notes())
        report = retriever.catalog.report  # imported catalogs may have skipped or degraded tools
        return (f'<div class="toolrag-status ready">● ready: {len(retriever.catalog)} tools indexed from '
                f"<code>{html.escape(self.catalog_path.name if self.catalog_path else str(self.index))}</code> "
                f"({report.skipped} skipped, "
                f"{report.degraded} degraded){extra}</div>")

    def require(self) -> ToolRetriever:
        """The retriever, or a ``ToolragError`` while it is still being built (or if the build failed)."""
        if self.error:
            raise ToolragError(f"the index could not be built: {self.error}")
        if not self.ready:
            fraction, message = self.progress
            raise ToolragError(f"still indexing... {fraction:.0%} ({message}); try again in a moment")
        return self.retriever  # type: ignore[return-value]

    def view(self, user: str | None = None) -> View:
        """What ``user`` (``None``: a visitor who did not sign in) may see here (see :class:`Access`)."""
        if not self.access.shared:
            return View(None, "the local playground")
        if self.access.is_editor(user):
            return View(None, f"signed in as {user!r}, an editor")
        catalog = self.retriever.catalog if self.ready and self.retriever is not None else self.catalog
        own = self.access.user_roles.get(user, ()) if user else ()
        roles = [r for r in (self.access.public_role, *own) if r]
        codes = frozenset(catalog.role_codes(*(r for r in roles if r in catalog.roles)))
        public = (f"the tools of the public role {self.access.public_role!r}" if self.access.public_role
                  else "the tools that need no permission")
        if not user:
            return View(codes, f"not signed in: {public}")
        return View(codes, f"signed in as {user!r}: {public}" + (f" and of {', '.join(own)}" if own else ""))

    def require_editor(self) -> CatalogEditor:
        self.require()
        if self.editor is None:
            raise ToolragError(f"editing is off on this instance ({self.access.reason})")
        return self.editor


def _check_roles(access: Access, catalog: Catalog) -> None:
    """The roles the sharing settings name must be roles of the catalog (a typo would hide or show the wrong
    tools)."""
    named: list[tuple[str, Collection[str]]] = [(PUBLIC_ROLE_ENV, [access.public_role] if access.public_role else [])]
    named += [(f"{USER_ROLES_ENV} (user {user!r})", roles) for user, roles in access.user_roles.items()]
    for variable, roles in named:
        for role in roles:
            if role not in catalog.roles:
                raise SettingsError(f"{variable}: {role!r} is not a role of catalog {catalog.name!r}; "
                                    f"{closest(role, catalog.roles)}")
