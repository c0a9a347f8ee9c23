"""Event handlers of the playground: each takes component values and returns component values.

Handlers only translate between components and library calls; the views come from :mod:`toolrag.ui.format`.
Every user-facing failure becomes ``gr.Error`` (a toast) and leaves the rest of the app working. They are
tested directly (``tests/test_ui_handlers.py``) and through a real browser.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

import gradio as gr

from toolrag.catalog.editor import CatalogEditor, RankProbe, profile_text
from toolrag.catalog.lint import lint_profile
from toolrag.catalog.profile import Catalog
from toolrag.errors import ImageError, QueryError, ToolragError
from toolrag.evaluation import projection
from toolrag.evaluation.reliability import ReliabilityBin, reliability_figure
from toolrag.images import load_image
from toolrag.settings import Settings
from toolrag.signals import SIGNALS
from toolrag.ui import format as fmt
from toolrag.ui.backend import Backend, View

__all__ = ["MAX_IMAGE_MB", "Handlers", "checked_image"]

log = logging.getLogger(__name__)
MAX_IMAGE_MB = 10
#: How many values :meth:`Handlers.search` returns (the Search tab's outputs).
SEARCH_OUTPUTS = 12
F = TypeVar("F", bound=Callable[..., Any])


def _guard(fn: F) -> F:
    """Turn toolrag errors into a toast with their message; unexpected ones are logged and shown briefly. What
    a caller got wrong (a refused request, a bad value) is logged in one line, not with a traceback; no message
    shows where the server keeps temporary files (an upload's path is shown as its file name)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error as exc:
            exc.message = _public(exc.message)
            exc.print_exception = False
            log.info("%s refused: %s", fn.__name__, exc.message)
            raise
        except ToolragError as exc:
            log.info("%s refused: %s", fn.__name__, _public(str(exc)))
            raise gr.Error(_public(str(exc)), print_exception=False) from None
        except Exception as exc:
            log.exception("handler %s failed", fn.__name__)
            raise gr.Error(_public(f"{fn.__name__} failed: {type(exc).__name__}: {exc}")) from None

    return wrapper  # type: ignore[return-value]


def _public(message: str) -> str:
    """``message`` with every path under the server's temporary folder (uploads, validation copies) cut to its
    file name."""
    temp = re.escape(tempfile.gettempdir().rstrip("/\\"))
    return re.sub(temp + r"[/\\][^\s'\"]*", lambda m: Path(m.group(0)).name, message)


def _skip_before_first_query(fn: F) -> F:
    """``fn`` (a search) only once there is a request: a control moved before the first query changes nothing.
    The wrapper keeps ``fn``'s signature, so Gradio passes it the caller's request as it does to ``fn``."""

    @functools.wraps(fn)
    def wrapper(self: Any, query: str, image: str | None, *rest: Any, **kwargs: Any) -> Any:
        if not (query or "").strip() and not image:
            return tuple(gr.skip() for _ in range(SEARCH_OUTPUTS))
        return fn(self, query, image, *rest, **kwargs)

    return wrapper  # type: ignore[return-value]


def _user(request: gr.Request | None, oauth: gr.OAuthProfile | None) -> str | None:
    """Who calls: the user Gradio's sign-in (``TOOLRAG_AUTH``) or Hugging Face's (on a Space) named, if any."""
    name = getattr(request, "username", None) if request is not None else None
    if not name and oauth is not None:
        name = oauth.get("preferred_username")
    return str(name) if name else None


class Handlers:
    """Event handlers; each takes component values and returns component values (tested directly)."""

    def __init__(self, backend: Backend) -> None:
        self.b = backend

    def view(self, request: gr.Request | None = None, oauth: gr.OAuthProfile | None = None) -> View:
        """What the caller of an event may see (every tool locally; see :meth:`Backend.view` where shared)."""
        return self.b.view(_user(request, oauth))

    # ----------------------------------------------------------------------------------------------- search

    def wait_ready(self, progress: gr.Progress = gr.Progress()) -> Iterator[tuple[Any, ...]]:  # noqa: B008
        """On page load: stream the build progress (status line + bar) until the retriever is ready, then
        the notes on signals that can't run here."""
        keep = tuple(gr.skip() for _ in range(2 + len(SIGNALS)))
        while not self.b.wait(0.5):
            fraction, message = self.b.progress
            progress(fraction, desc=message)
            yield (self.b.status_html(), *keep)
        notes = self.b.require().signal_notes() if self.b.ready else {}
        sliders = [gr.update(info=fmt.signal_info(s, notes)) for s in SIGNALS]
        note = fmt.image_note(notes) if self.b.ready else ""
        rerank_note = getattr(self.b.retriever, "reranker_note", "") if self.b.ready else ""
        yield (self.b.status_html(), note, gr.update(info=rerank_note or "cross-encoder on the top-N"), *sliders)

    @_guard
    def search(self, query: str, image: str | None, role: str, categories: list[str] | None, top_k: float,
               fusion: str, rerank: bool, precision_target: float,
               w_dense: float, w_dense_en: float, w_bm25: float, w_ocr: float, w_visual: float,
               w_concepts: float, w_clip: float, history: list[dict[str, Any]] | None = None,
               normalization: str | None = None, request: gr.Request | None = None,
               oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Rank the tools for a request; returns every view of the result plus the session's state. Where the
        app is shared, the role must be one the caller holds (:meth:`view`)."""
        retriever = self.b.require()
        query = query or ""
        if not query.strip() and not image:
            raise gr.Error("empty query: type a request (any language the multilingual model reads) or upload an "
                           "image")
        if image and Path(image).stat().st_size > MAX_IMAGE_MB * 1_000_000:
            raise gr.Error(f"the image is {Path(image).stat().st_size / 1e6:.1f} MB; the limit is {MAX_IMAGE_MB} MB")
        weights = dict(zip(SIGNALS, (w_dense, w_dense_en, w_bm25, w_ocr, w_visual, w_concepts, w_clip),
                           strict=True))
        settings = fmt.build_settings(retriever.settings, fusion=fusion, top_k=top_k, rerank=rerank,
                                      precision_target=precision_target,
                                      weights=weights, normalization=normalization)
        role_name = None if not role or role == fmt.GUEST else role
        self.view(request, oauth).check_role(retriever.catalog, role_name)
        try:
            result = retriever.search(query, image=image or None, role=role_name, categories=categories or None,
                                      settings=settings)
        except ImageError as exc:
            raise gr.Error(f"cannot use this image: {exc}") from None
        entry = fmt.history_entry(result, image=bool(image), role=role or fmt.GUEST, settings=settings)
        history = [*(history or []), entry][-fmt.HISTORY_SIZE:]
        last = {"query": query, "image": image, "role": role_name, "settings": settings.to_dict(),
                "top": result.ids, "scored": fmt.scored_signals(result)}
        return (fmt.decision_banner(result), fmt.results_table(result), fmt.prompt_text(result),
                fmt.tools_json(result), fmt.token_text(result), fmt.timings_text(result),
                fmt.notes_text(result), result.to_json(), history, fmt.history_table(history), last,
                fmt.unscored_text(result))

    rerun = _skip_before_first_query(search)
    """Re-rank after a control changed; nothing happens before the first query."""

    @staticmethod
    def result_views(last: dict[str, Any] | None) -> tuple[Any, ...]:
        """After a search: the ranked table (its columns sized for the signals that scored) and the history
        appear; nothing is drawn before the first search."""
        if not last or "scored" not in last:
            return gr.skip(), gr.skip()
        return (gr.update(visible=True, column_widths=fmt.result_widths(len(last["scored"]))),
                gr.update(visible=True))

    @_guard
    def reliability(self, target: float | None = None) -> tuple[Any, str]:
        """The decision model's operating points (the trade-off behind the precision-target slider, ``target`` in
        percent) and the reliability of its P(right), both measured on held-out training sources."""
        model = self.b.require().decider.model
        if model is None:
            raise gr.Error(f"no decision model: {self.b.require().decider.note}")
        held = model.trained.get("reliability", [])
        bins = [ReliabilityBin(0.0, 1.0, float(p), float(o), max(1, round(1000 * w))) for p, o, w in held]
        figure = reliability_figure(bins, title="P(right) on held-out training sources")
        return figure, fmt.tradeoff_table(model, None if target is None else float(target) / 100)

    # ------------------------------------------------------------------------------------------ tool space

    @_guard
    def tool_space(self, threshold: float, last: dict[str, Any] | None, request: gr.Request | None = None,
                   oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """The map with the session's last query, and the look-alike pairs at ``threshold``: of the tools the
        caller may see (every tool locally)."""
        retriever = self.b.require()
        view = self.view(request, oauth)
        catalog = view.catalog(retriever.catalog)
        all_ids, all_vectors = retriever.tool_vectors()
        shown = [(i, tool) for i, tool in enumerate(catalog.get(tool_id) for tool_id in all_ids) if tool is not None]
        tools, vectors = [tool for _, tool in shown], all_vectors[[i for i, _ in shown]]
        ids = [tool.id for tool in tools]
        pairs = projection.lookalike_pairs(vectors, ids, threshold=float(threshold))
        qvec, label, top = None, "query", []
        if last and (last.get("query") or last.get("image")):
            settings = Settings(**last["settings"]) if last.get("settings") else retriever.settings
            try:
                qvec = retriever.request_vector(last.get("query") or "", image=last.get("image"), settings=settings)
            except (QueryError, ImageError) as exc:
                log.info("query not drawn on the map: %s", exc)
            label, top = last.get("query") or "(image)", [t for t in last.get("top") or [] if t in ids]
        method: Literal["auto", "pca"] = "auto" if projection.umap_ready() else "pca"
        note = "" if method == "auto" else "UMAP is still compiling in the background: PCA shown"
        fig = projection.tool_space_figure(tools, vectors, query_vector=qvec, query_label=label, top_ids=top,
                                           pairs=pairs, method=method, note=note)
        info = (f"{len(pairs)} look-alike pair(s) with cosine ≥ {float(threshold):.2f}. "
                "Red lines join look-alikes; ◆ marks tools with example images; ★ is your last query.")
        return fig, info, fmt.lookalike_table(pairs, catalog)

    # -------------------------------------------------------------------------------------------- profiles

    def visible_catalog(self, catalog: Catalog, view: View | None = None) -> Catalog:
        """The tools ``view`` may see (default: a visitor who did not sign in): every tool locally; where the
        app is shared, those of the public role (and of the signed-in user's roles), so no other tool's
        profile, name or description is served."""
        return (view or self.b.view()).catalog(catalog)

    def _tool_choices(self, view: View) -> list[tuple[str, str]]:
        return [(f"{t.id} — {t.name}", t.id) for t in self.visible_catalog(self.b.require().catalog, view).tools]

    def role_choices(self, view: View) -> list[str]:
        """The role picker's choices for ``view``: :data:`fmt.GUEST` and the roles the caller holds."""
        return fmt.role_choices(catalog := self.b.catalog if not self.b.ready else self.b.require().catalog,
                                view.roles(catalog))

    def role_picker(self, role: str | None, request: gr.Request | None = None,
                    oauth: gr.OAuthProfile | None = None) -> Any:
        """On page load: the role picker offers only the roles the caller holds (every role locally)."""
        choices = self.role_choices(self.view(request, oauth))
        if role in choices:  # the value stays (a link may be setting it at the same time)
            return gr.update(choices=choices)
        fallback = self.b.access.public_role if self.b.access.public_role in choices else fmt.GUEST
        return gr.update(choices=choices, value=fallback)

    def _editor(self, oauth: gr.OAuthProfile | None) -> CatalogEditor:
        """The editor, for a caller allowed to edit (with ``TOOLRAG_EDITORS``: a listed, signed-in HF user)."""
        editors = self.b.access.editors if self.b.access.editing and not self.b.access.auth else ()
        if editors:
            user = oauth.get("preferred_username") if oauth is not None else None
            if user not in editors:
                who = f"signed in as {user!r}, which is" if user else "not signed in:"
                raise gr.Error(f"only this Space's editors may edit ({who} not one of them); sign in with "
                               "Hugging Face as an editor")
        return self.b.require_editor()

    def _probe(self, rank_query: str | None, last: dict[str, Any] | None) -> RankProbe | None:
        last = last or {}
        text = (rank_query or "").strip() or last.get("query") or ""
        same = text == (last.get("query") or "")
        image = last.get("image") if same else None
        if not text.strip() and not image:
            return None
        settings = Settings(**last["settings"]) if same and last.get("settings") else None
        return RankProbe(query=text, image=image, settings=settings)

    def _after_change(self, message: str, tool_id: str | None) -> tuple[Any, ...]:
        catalog = self.b.require().catalog
        editor = self.b.require_editor()
        read = editor.read_profile(tool_id) if tool_id and catalog.get(tool_id) else None
        editors = View(None, "an editor")  # only an editor gets here (_editor checked who calls)
        return (message, read.text if read else "", gr.update(choices=self._tool_choices(editors), value=tool_id),
                fmt.catalog_table(catalog), gr.update(choices=catalog.categories),
                gr.update(choices=catalog.categories), read.version if read else "")

    @staticmethod
    def _base(tool_id: str | None, base_version: str | None) -> str | None:
        """The version an edit of an existing tool is based on; the app requires one (no blind overwrite)."""
        if tool_id and not (base_version or "").strip():
            raise gr.Error(f"no base_version for {tool_id!r}: load the tool first (/profile returns its version) "
                           "so a save cannot overwrite someone else's newer edit")
        return (base_version or "").strip() or None

    @_guard
    def pick_tool(self, tool_id: str | None, request: gr.Request | None = None,
                  oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """YAML, summary, image choices and version of the selected tool, among the tools the caller may see
        (where the app is shared: those of the public role and of the caller's sign-in)."""
        return self.profile(tool_id, self.view(request, oauth))

    @_guard
    def profile(self, tool_id: str | None, view: View) -> tuple[Any, ...]:
        """:meth:`pick_tool` for a caller who may see ``view``."""
        if not tool_id:
            return "", "", gr.update(choices=[], value=None), ""
        catalog = self.visible_catalog(self.b.require().catalog, view)
        tool = catalog.get(tool_id)
        if tool is None:
            raise gr.Error(f"no tool has id {tool_id!r}" + ("" if view.everything else
                                                            f" among the tools you may see ({view.who})"))
        if self.b.editor is not None and view.everything:
            read = self.b.editor.read_profile(tool_id)
            text, version = read.text, read.version
        else:
            successor = view.caller(catalog).successor(catalog, tool)  # a hidden successor is not named
            text, version = profile_text(dataclasses.replace(tool, replaced_by=successor)), ""
        lint = "".join(f"\n- ⚠ {w.message}" for w in lint_profile(tool)) or "\n- ✓ no lint warnings"
        info = f"`{tool.id}` · {tool.source.name if tool.source else '?'}:{tool.line}{lint}"
        images = [i.path for i in tool.images]
        return text, info, gr.update(choices=images, value=None), version

    @_guard
    def accept_example(self, tool_id: str | None, query: str | None, rank_query: str | None = None,
                       last: dict[str, Any] | None = None, oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Add a suggested example request to a tool (the catalog's ``extra_examples.yaml``, re-indexed): the
        status, the tool's YAML, the tool picker, the catalog table and the version, as after a save."""
        if not tool_id or not (query or "").strip():
            raise gr.Error("pick a tool and a suggested request first")
        outcome = self._editor(oauth).add_examples(tool_id, [str(query)], probe=self._probe(rank_query, last))
        message = (f"✓ Added “{query}” to the examples of `{tool_id}` in {outcome.file.name}"
                   if outcome.action != "unchanged" else f"`{tool_id}` already has “{query}” as an example")
        if outcome.query:
            before, after = (f"#{r}" if r else "not ranked" for r in (outcome.rank_before, outcome.rank_after))
            message += f". Rank for “{outcome.query}”: {before} → {after}"
        status, code, tool, table, _, _, version = self._after_change(message, tool_id)
        return status, code, tool, table, version

    @_guard
    def validate_profile(self, tool_id: str | None, yaml_text: str,
                         oauth: gr.OAuthProfile | None = None) -> str:
        profile = self._editor(oauth).validate(tool_id or None, yaml_text)
        warnings = "".join(f"\n- ⚠ {w.message}" for w in lint_profile(profile))
        return f"✓ `{profile.id}` is valid; the catalog still loads.{warnings}"

    @_guard
    def save_profile(self, tool_id: str | None, yaml_text: str, rank_query: str | None = None,
                     last: dict[str, Any] | None = None, base_version: str | None = None,
                     oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Save (or add, when no tool is selected) a profile; shows the rank before → after. Refused when the
        tool changed on disk since ``base_version`` was read (another editor saved first)."""
        editor = self._editor(oauth)
        outcome = editor.save(tool_id or None, yaml_text, probe=self._probe(rank_query, last),
                              base_version=self._base(tool_id, base_version))
        return self._after_change("✓ " + outcome.message, outcome.tool_id)

    @_guard
    def new_tool(self, category: str | None, oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        template = self._editor(oauth).new_tool_template(category or "general")
        return (template, gr.update(value=None), "New tool: edit the template, then Save (no tool selected = add).",
                "")

    @_guard
    def ask_delete(self, tool_id: str | None) -> tuple[Any, ...]:
        if not tool_id:
            raise gr.Error("pick a tool to delete first")
        return gr.update(visible=True), f"Delete `{tool_id}`? Its file keeps a backup under `.history/`."

    @_guard
    def delete_profile(self, tool_id: str | None, rank_query: str | None = None,
                       last: dict[str, Any] | None = None, base_version: str | None = None,
                       oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        if not tool_id:
            raise gr.Error("pick a tool to delete first")
        editor = self._editor(oauth)
        outcome = editor.delete(tool_id, probe=self._probe(rank_query, last),
                                base_version=self._base(tool_id, base_version))
        return (*self._after_change("✓ " + outcome.message, None), gr.update(visible=False))

    @_guard
    def add_image(self, tool_id: str | None, image: str | None, caption: str, replace: str | None,
                  rank_query: str | None = None, last: dict[str, Any] | None = None,
                  base_version: str | None = None, oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        if not tool_id:
            raise gr.Error("pick a tool first")
        if not image:
            raise gr.Error("upload an image first")
        if Path(image).stat().st_size > MAX_IMAGE_MB * 1_000_000:
            raise gr.Error(f"the image is above {MAX_IMAGE_MB} MB")
        editor = self._editor(oauth)
        outcome = editor.add_image(tool_id, image, caption or "", replace=replace or None,
                                   probe=self._probe(rank_query, last), base_version=self._base(tool_id, base_version))
        return self._after_change("✓ " + outcome.message, outcome.tool_id)

    def catalog_views(self, request: gr.Request | None = None, oauth: gr.OAuthProfile | None = None
                      ) -> tuple[Any, ...]:
        """On page load: the tool list, catalog table and categories as they are now (others may have
        edited the catalog since the app started), of the tools the caller may see."""
        if not self.b.ready:
            return tuple(gr.skip() for _ in range(4))
        view = self.view(request, oauth)
        catalog = self.visible_catalog(self.b.require().catalog, view)
        return (gr.update(choices=self._tool_choices(view)), fmt.catalog_table(catalog),
                gr.update(choices=catalog.categories), gr.update(choices=catalog.categories))


def checked_image(**kwargs: Any) -> gr.Image:
    """A ``gr.Image`` (filepath) whose upload check says what is wrong with a file that is not a usable
    image (toolrag's message, as for a path given to the library) instead of Gradio's generic error. The
    check wraps the component's ``preprocess``: a subclass of a Gradio component would make Gradio write a
    ``.pyi`` stub next to this module at import."""
    image = gr.Image(type="filepath", **kwargs)
    original = image.preprocess

    def preprocess(payload: Any) -> Any:
        try:
            return original(payload)
        except gr.Error:
            raise
        except Exception as exc:
            path = getattr(payload, "path", None)
            try:
                load_image(path) if path else None
            except ImageError as error:
                raise gr.Error(f"cannot use this image: {error}") from None
            raise gr.Error(f"cannot use this upload as an image: {type(exc).__name__}: {exc}") from None

    setattr(image, "preprocess", preprocess)  # noqa: B010 - an instance attribute, on purpose
    return image
