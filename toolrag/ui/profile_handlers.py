"""Handlers of the Profiles tab: a tool's YAML and version, validating, saving, adding and deleting a tool, an
example image or a suggested example request, each change through the catalog editor for a caller allowed to
edit; and what a caller may see (:meth:`ProfileHandlers.view`), which every tab's handlers ask.

:class:`toolrag.ui.handlers.Handlers` extends this class with the Search and Tool space tabs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import gradio as gr

from toolrag.catalog.editor import CatalogEditor, RankProbe, profile_text
from toolrag.catalog.lint import lint_profile
from toolrag.catalog.profile import Catalog
from toolrag.settings import Settings
from toolrag.ui import format as fmt
from toolrag.ui.backend import Backend, View
from toolrag.ui.guard import MAX_IMAGE_MB, caller_name, guard

__all__ = ["ProfileHandlers"]


class ProfileHandlers:
    """The Profiles tab's handlers and the caller's view (tested directly and through a real browser)."""

    def __init__(self, backend: Backend) -> None:
        self.b = backend

    def view(self, request: gr.Request | None = None, oauth: gr.OAuthProfile | None = None) -> View:
        """What the caller of an event may see (every tool locally; see :meth:`Backend.view` where shared)."""
        return self.b.view(caller_name(request, oauth))

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

    @guard
    def pick_tool(self, tool_id: str | None, request: gr.Request | None = None,
                  oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """YAML, summary, image choices and version of the selected tool, among the tools the caller may see
        (where the app is shared: those of the public role and of the caller's sign-in)."""
        return self.profile(tool_id, self.view(request, oauth))

    @guard
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

    @guard
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

    @guard
    def validate_profile(self, tool_id: str | None, yaml_text: str,
                         oauth: gr.OAuthProfile | None = None) -> str:
        profile = self._editor(oauth).validate(tool_id or None, yaml_text)
        warnings = "".join(f"\n- ⚠ {w.message}" for w in lint_profile(profile))
        return f"✓ `{profile.id}` is valid; the catalog still loads.{warnings}"

    @guard
    def save_profile(self, tool_id: str | None, yaml_text: str, rank_query: str | None = None,
                     last: dict[str, Any] | None = None, base_version: str | None = None,
                     oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Save (or add, when no tool is selected) a profile; shows the rank before → after. Refused when the
        tool changed on disk since ``base_version`` was read (another editor saved first)."""
        editor = self._editor(oauth)
        outcome = editor.save(tool_id or None, yaml_text, probe=self._probe(rank_query, last),
                              base_version=self._base(tool_id, base_version))
        return self._after_change("✓ " + outcome.message, outcome.tool_id)

    @guard
    def new_tool(self, category: str | None, oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        template = self._editor(oauth).new_tool_template(category or "general")
        return (template, gr.update(value=None), "New tool: edit the template, then Save (no tool selected = add).",
                "")

    @guard
    def ask_delete(self, tool_id: str | None) -> tuple[Any, ...]:
        if not tool_id:
            raise gr.Error("pick a tool to delete first")
        return gr.update(visible=True), f"Delete `{tool_id}`? Its file keeps a backup under `.history/`."

    @guard
    def delete_profile(self, tool_id: str | None, rank_query: str | None = None,
                       last: dict[str, Any] | None = None, base_version: str | None = None,
                       oauth: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        if not tool_id:
            raise gr.Error("pick a tool to delete first")
        editor = self._editor(oauth)
        outcome = editor.delete(tool_id, probe=self._probe(rank_query, last),
                                base_version=self._base(tool_id, base_version))
        return (*self._after_change("✓ " + outcome.message, None), gr.update(visible=False))

    @guard
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
