"""The playground where it is shared: who may edit is decided from where it is served, a read-only instance
has no editing endpoint and serves no restricted profile, sign-in guards editing, and bad uploads get
toolrag's message. Real servers on loopback ports, real ``gradio_client`` calls, the real handlers."""

from __future__ import annotations

import copy
import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from PIL import Image
from ui_support import Server, free_port

from toolrag.catalog.editor import LOCK_FILE
from toolrag.errors import SettingsError
from toolrag.ui import Access, Backend
from toolrag.ui import format as fmt
from toolrag.ui.app import create_app, launch
from toolrag.ui.handlers import Handlers

pytest_plugins = ["ui_support"]
pytestmark = pytest.mark.slow

EDITING_ENDPOINTS = {"/save_profile", "/delete_profile", "/add_image", "/new_tool", "/validate_profile"}
#: The Evaluate tab (the editors' studio): its reports name every tool, so a read-only app has none of it.
STUDIO_ENDPOINTS = {"/evaluate", "/retrievability", "/tune", "/report", "/save_settings", "/unmatched"}


@pytest.mark.parametrize(("environ", "share", "editing", "shared", "reason"), [
    ({}, None, True, False, "editing on: local"),
    ({"GRADIO_SERVER_NAME": "127.0.0.1"}, None, True, False, "editing on: local"),
    ({"GRADIO_SERVER_NAME": "0.0.0.0"}, None, False, True, "read-only: shared (bound to 0.0.0.0)"),
    ({"SPACE_ID": "me/demo"}, None, False, True, "read-only: shared (a Hugging Face Space)"),
    ({}, True, False, True, "read-only: shared (a share link)"),
    ({"GRADIO_SHARE": "true"}, None, False, True, "a share link"),
    ({"SPACE_ID": "me/demo", "TOOLRAG_EDITING": "on"}, None, False, True, "but no credentials are set"),
    ({"GRADIO_SERVER_NAME": "0.0.0.0", "TOOLRAG_EDITING": "on", "TOOLRAG_EDITORS": "alice"}, None, False, True,
     "no credentials"),  # Hugging Face sign-in exists on a Space only
    ({"SPACE_ID": "me/demo", "TOOLRAG_EDITING": "on", "TOOLRAG_AUTH": "ed:pw"}, None, True, True,
     "editing on for signed-in users"),
    ({"SPACE_ID": "me/demo", "TOOLRAG_EDITING": "on", "TOOLRAG_EDITORS": "alice, bob"}, None, True, True,
     "Hugging Face users in TOOLRAG_EDITORS"),
    ({"TOOLRAG_EDITING": "off"}, None, False, False, "read-only: TOOLRAG_EDITING=off"),
])
def test_who_may_edit_follows_where_the_app_is_served(environ: dict[str, str], share: bool | None, editing: bool,
                                                      shared: bool, reason: str) -> None:
    access = Access.from_env(environ=environ, share=share)
    assert (access.editing, access.shared) == (editing, shared) and reason in access.reason


def test_bad_sharing_settings_are_refused() -> None:
    with pytest.raises(SettingsError, match="TOOLRAG_EDITING='maybe': use on .* or off"):
        Access.from_env(environ={"TOOLRAG_EDITING": "maybe"})
    with pytest.raises(SettingsError, match="TOOLRAG_AUTH: 'editor' has no password"):
        Access.from_env(environ={"TOOLRAG_AUTH": "editor"})
    assert Access.from_env(environ={"TOOLRAG_AUTH": "a:1, b:x:y", "SPACE_ID": "s", "TOOLRAG_EDITING": "on"}).auth == (
        ("a", "1"), ("b", "x:y"))


def variant(backend: Backend, environ: dict[str, str]) -> Backend:
    """The session's backend (same retriever and index) under another access."""
    other = copy.copy(backend)
    other.access = Access.from_env(environ=environ)
    if not other.access.editing:
        other.editor = None
    return other


@pytest.fixture(scope="module")
def readonly(ui_backend: Backend) -> Iterator[Server]:
    """The app as a Space serves it without TOOLRAG_EDITING."""
    backend = variant(ui_backend, {"SPACE_ID": "me/demo"})
    yield from serve(backend)


def serve(backend: Backend) -> Iterator[Server]:
    demo = create_app(backend)
    port = free_port()
    launch(demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield Server(f"http://127.0.0.1:{port}/", backend, demo)
    finally:
        demo.close()


def page_config(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "config", timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_a_read_only_app_registers_no_editing_endpoint(readonly: Server) -> None:
    from gradio_client import Client

    client = Client(readonly.url, verbose=False, download_files=False)
    named = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/search", "/profile", "/tool_space"} <= named and not named & (EDITING_ENDPOINTS | STUDIO_ENDPOINTS)
    config = page_config(readonly.url)
    assert "tab-evaluate" not in json.dumps(config) and "share-link" in json.dumps(config)  # the link stays
    assert not {d.get("api_name") for d in config["dependencies"]} & {e[1:] for e in EDITING_ENDPOINTS}
    texts = json.dumps(config, ensure_ascii=False)
    assert "read-only: shared (a Hugging Face Space)" in texts and "Caller role (simulated)" in texts
    def call(endpoint: str, data: list[Any]) -> int:
        request = urllib.request.Request(f"{readonly.url}gradio_api/call/{endpoint}", method="POST",
                                         data=json.dumps({"data": data}).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return exc.code

    assert call("profile", ["comm.email.send"]) == 200
    for endpoint in ("save_profile", "delete_profile", "add_image"):  # not even a raw call reaches one
        assert call(endpoint, ["comm.email.send", "id: x"]) >= 400


def test_a_read_only_app_serves_no_restricted_profile(readonly: Server) -> None:
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    catalog = readonly.backend.require().catalog
    restricted = [t for t in catalog.tools if t.permissions]
    public = next(t for t in catalog.tools if not t.permissions)
    client = Client(readonly.url, verbose=False, download_files=False)
    text, _info, _images, version = client.predict(tool_id=public.id, api_name="/profile")
    assert text.startswith(f"id: {public.id}") and version == ""
    with pytest.raises(AppError, match="no tool has id 'it.account.delete_user' among the tools you may see "
                                       r"\(not signed in: the tools that need no permission\)"):
        client.predict(tool_id="it.account.delete_user", api_name="/profile")
    config = page_config(readonly.url)
    texts = json.dumps(config, ensure_ascii=False)
    assert restricted and not any(f'"{t.id}"' in texts for t in restricted)  # nor in the tool list or table
    # The probe's two leaks: the map's hover data and a search as another role.
    names = [t.id for t in restricted] + [t.name for t in restricted if not t.name.isalpha()]
    plot, _info, pairs = client.predict(threshold=0.85, api_name="/tool_space")
    shown = json.dumps([plot, pairs], ensure_ascii=False)
    assert public.id in shown and not [n for n in names if n in shown]
    with pytest.raises(AppError, match="role 'admin' is not available to you \\(not signed in"):
        client.predict(query="approve this month's payroll", image=None, role="admin", api_name="/search")
    out = client.predict(query="approve this month's payroll", image=None, role=fmt.GUEST, api_name="/search")
    assert out[7]["candidates"] and not [n for n in names if n in json.dumps(out, ensure_ascii=False)]
    role = next(c for c in config["components"] if c.get("props", {}).get("elem_id") == "role")
    # roles that grant nothing, listed once: the catalog's code-less "guest" is the picker's guest itself
    assert [choice[0] for choice in role["props"]["choices"]] == [fmt.GUEST]


def test_a_read_only_backend_never_opens_the_catalog_for_writing(small_catalog_dir: Path, tmp_path: Path,
                                                                 data_dir: Path, models: Any) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(small_catalog_dir, folder)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    backend = Backend(folder, data_dir=data_dir, models=models, access=Access.from_env(environ={"SPACE_ID": "s"}))
    backend.build()
    assert backend.ready and backend.editor is None and not (folder / LOCK_FILE).exists()
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    h = Handlers(backend)
    with pytest.raises(gr.Error, match="among the tools you may see"):
        h.pick_tool("hr.payroll.approve")
    with pytest.raises(gr.Error, match="editing is off on this instance .*read-only: shared"):
        h.save_profile(None, "id: x\ndescription: y\n")
    assert "hr.payroll.approve" not in list(h.catalog_views()[1]["id"])


def test_the_labelled_requests_upload_opens_after_the_page_load_set_the_view(ui_backend: Backend) -> None:
    """The Evaluate tab's upload starts closed and the page load opens it only after ``view_as`` has written the
    session state: an upload made while ``view_as`` ran was overwritten by the state it had read before, and Run
    then evaluated the catalog's own queries instead of the file."""
    demo = create_app(ui_backend)
    config = demo.get_config_file()
    upload = next(c for c in config["components"] if c["props"].get("elem_id") == "eval-file")
    assert upload["props"]["interactive"] is False
    opens = [d for d in config["dependencies"] if upload["id"] in d["outputs"]]
    after = {d["trigger_after"] for d in opens if d["trigger_after"] is not None}
    assert [demo.fns[i].fn.__name__ for i in after] == ["view_as"], after  # type: ignore[union-attr]


def test_sharing_an_app_that_edits_without_sign_in_is_refused(ui_backend: Backend) -> None:
    demo = create_app(ui_backend)
    for where in ({"server_name": "0.0.0.0"}, {"share": True}):
        with pytest.raises(SettingsError, match="edits the catalog without sign-in but would be shared"):
            launch(demo, prevent_thread_lock=True, quiet=True, **where)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def signed_in(ui_backend: Backend) -> Iterator[Server]:
    """A shared app with editing on for the users of TOOLRAG_AUTH (Gradio's sign-in)."""
    environ = {"SPACE_ID": "me/demo", "TOOLRAG_EDITING": "on", "TOOLRAG_AUTH": "editor:s3cret"}
    yield from serve(variant(ui_backend, environ))


def test_editors_sign_in_before_anything(signed_in: Server) -> None:
    from gradio_client import Client

    with pytest.raises(Exception):  # noqa: B017 - gradio_client raises its own errors for a refused login
        Client(signed_in.url, verbose=False, download_files=False)
    with pytest.raises(Exception):  # noqa: B017
        Client(signed_in.url, auth=("editor", "wrong"), verbose=False, download_files=False)
    client = Client(signed_in.url, auth=("editor", "s3cret"), verbose=False, download_files=False)
    named = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert named >= EDITING_ENDPOINTS
    _text, _info, _images, version = client.predict(tool_id="it.account.delete_user", api_name="/profile")
    assert len(version) == 16  # an editor sees every profile, with the version to save against


def test_space_editors_are_checked_by_their_hugging_face_name(ui_backend: Backend) -> None:
    backend = variant(ui_backend, {"SPACE_ID": "me/demo", "TOOLRAG_EDITING": "on", "TOOLRAG_EDITORS": "alice"})
    h = Handlers(backend)
    text = h.pick_tool("comm.email.send")[0]

    def user(name: str) -> gr.OAuthProfile:
        return gr.OAuthProfile({"preferred_username": name, "name": name, "profile": "", "picture": ""})

    with pytest.raises(gr.Error, match="only this Space's editors may edit \\(not signed in"):
        h.validate_profile("comm.email.send", text)
    with pytest.raises(gr.Error, match="signed in as 'bob', which is not one of them"):
        h.validate_profile("comm.email.send", text, user("bob"))
    assert h.validate_profile("comm.email.send", text, user("alice")).startswith("✓ `comm.email.send` is valid")
    # The sign-in button itself (gr.LoginButton) needs a Space's OAuth settings: not built here, offline.


@pytest.fixture(scope="module")
def client(ui_server: Server) -> Any:
    from gradio_client import Client

    return Client(ui_server.url, verbose=False, download_files=False)


def test_an_upload_that_is_not_an_image_gets_toolrags_message(client: Any, tmp_path: Path) -> None:
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    fake = tmp_path / "receipt.png"
    fake.write_text("this is a text file named .png", encoding="utf-8")
    # named by its file name alone: the server's upload folder is never shown (the check runs before the handler)
    with pytest.raises(AppError, match=r"^cannot use this image: receipt\.png is not an image Pillow can read"):
        client.predict(query="报销", image=handle_file(str(fake)), api_name="/search")


def test_a_degenerate_upload_is_searched(client: Any, tmp_path: Path) -> None:
    from gradio_client import handle_file

    strip = tmp_path / "strip.png"  # both orientations are searched through the library in test_bad_inputs
    Image.new("RGB", (1, 5000), (250, 250, 250)).save(strip)
    out = client.predict(query="报销", image=handle_file(str(strip)), api_name="/search")
    assert out[7]["candidates"]


def test_the_local_app_says_it_edits_and_that_the_role_is_simulated(ui_server: Server) -> None:
    texts = json.dumps(page_config(ui_server.url), ensure_ascii=False)
    assert "editing on: local" in texts and "Caller role (simulated)" in texts and "it is not a sign-in" in texts


# ------------------------------------------------------------------ what each caller of a shared app sees


def ids_in(value: Any, tools: list[Any]) -> list[str]:
    """The ids (and non-word names) of ``tools`` that appear anywhere in ``value`` (an API answer)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return [t.id for t in tools if t.id in text or (not t.name.isalpha() and t.name in text)]


@pytest.fixture(scope="module")
def public_employee(ui_backend: Backend) -> Iterator[Server]:
    """A read-only shared app whose public role is employee; alice signs in as an HR admin, bob holds nothing
    more."""
    environ = {"SPACE_ID": "me/demo", "TOOLRAG_PUBLIC_ROLE": "employee", "TOOLRAG_AUTH": "alice:a-pw,bob:b-pw",
               "TOOLRAG_USER_ROLES": "alice:hr_admin"}
    yield from serve(variant(ui_backend, environ))


def test_a_shared_app_shows_each_signed_in_user_only_their_roles_tools(public_employee: Server) -> None:
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    catalog = public_employee.backend.require().catalog
    employee = set(catalog.roles["employee"])
    hr = set(catalog.roles["hr_admin"])
    beyond_employee = [t for t in catalog.tools if not set(t.permissions) <= employee]
    beyond_hr = [t for t in catalog.tools if not set(t.permissions) <= hr]
    with pytest.raises(Exception):  # noqa: B017 - other roles need a sign-in: the whole app asks for one
        Client(public_employee.url, verbose=False, download_files=False)
    bob = Client(public_employee.url, auth=("bob", "b-pw"), verbose=False, download_files=False)
    alice = Client(public_employee.url, auth=("alice", "a-pw"), verbose=False, download_files=False)
    # bob: the public role's tools (employee: expense claims and flights), nothing else, whatever he asks for.
    assert bob.predict(tool_id="finance.expense.submit", api_name="/profile")[0].startswith("id: finance.expense")
    with pytest.raises(AppError, match="no tool has id 'hr.salary.change' among the tools you may see \\(signed in "
                                       "as 'bob': the tools of the public role 'employee'\\)"):
        bob.predict(tool_id="hr.salary.change", api_name="/profile")
    with pytest.raises(AppError, match="role 'hr_admin' is not available to you \\(signed in as 'bob'"):
        bob.predict(query="raise Li Lei's salary by 5%", image=None, role="hr_admin", api_name="/search")
    found = bob.predict(query="submit my taxi receipt", image=None, role="employee", api_name="/search")
    assert "finance.expense.submit" in ids_in(found, catalog.tools) and not ids_in(found, beyond_employee)
    assert not ids_in(bob.predict(threshold=0.85, api_name="/tool_space"), beyond_employee)
    # alice: her sign-in adds the HR admin role; IT's account tools stay hidden from her.
    raised = alice.predict(query="raise Li Lei's salary by 5%", image=None, role="hr_admin", api_name="/search")
    assert "hr.salary.change" in ids_in(raised, catalog.tools) and not ids_in(raised, beyond_hr)
    assert alice.predict(tool_id="hr.salary.change", api_name="/profile")[0].startswith("id: hr.salary.change")
    space = alice.predict(threshold=0.85, api_name="/tool_space")
    assert "hr.salary.change" in ids_in(space, catalog.tools) and not ids_in(space, beyond_hr)
    with pytest.raises(AppError, match="no tool has id 'it.account.delete_user' among the tools you may see"):
        alice.predict(tool_id="it.account.delete_user", api_name="/profile")


@pytest.fixture(scope="module")
def space_editors(ui_backend: Backend) -> Iterator[Server]:
    """A Space where the Hugging Face users of TOOLRAG_EDITORS edit: its Evaluate tab exists, and a visitor who
    did not sign in may call it."""
    yield from serve(variant(ui_backend, {"SPACE_ID": "me/demo", "TOOLRAG_EDITING": "on", "TOOLRAG_EDITORS": "alice"}))


def test_the_evaluate_tab_names_no_restricted_tool_to_a_visitor(space_editors: Server) -> None:
    """The report and the evaluation are outputs too: a visitor's retrievability, labelled requests and HTML
    report name only the tools that need no permission."""
    from gradio_client import Client

    catalog = space_editors.backend.require().catalog
    restricted = [t for t in catalog.tools if t.permissions]
    client = Client(space_editors.url, verbose=False, download_files=False)
    checked = client.predict(scope="it", api_name="/retrievability")
    assert "it.password.reset" in json.dumps(checked) and not ids_in(checked, restricted)
    evaluated = client.predict(api_name="/evaluate")
    assert "labelled requests" in evaluated[1] and not ids_in(evaluated, restricted)
    exported = client.predict(api_name="/report")
    page = Path(exported["path"] if isinstance(exported, dict) else exported).read_text(encoding="utf-8")
    assert "it.password.reset" in page and not ids_in(page, restricted)
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="the unmatched requests are shown to the catalog's editors only"):
        client.predict(below=0.5, api_name="/unmatched")  # users' own words, and any tool's name
    config = page_config(space_editors.url)
    assert "it.password.reset" in json.dumps(config) and not ids_in(config, restricted)  # every list on the page


def test_a_misspelt_public_role_is_refused_at_start(small_catalog_dir: Path) -> None:
    with pytest.raises(SettingsError, match="TOOLRAG_PUBLIC_ROLE: 'employe' is not a role of catalog 'small'; "
                                            "did you mean 'employee'"):
        Backend(small_catalog_dir, access=Access.from_env(environ={"SPACE_ID": "s", "TOOLRAG_PUBLIC_ROLE": "employe"}))
    with pytest.raises(SettingsError, match="TOOLRAG_USER_ROLES: 'alice' is not user:role"):
        Access.from_env(environ={"TOOLRAG_USER_ROLES": "alice"})
    # python app.py says it in one line and exits 2, before any model loads.
    import os
    import subprocess
    import sys

    from conftest import ROOT

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TOOLRAG_")}, "SPACE_ID": "me/demo",
           "TOOLRAG_ONLINE": "0", "TOOLRAG_CATALOG": str(small_catalog_dir), "TOOLRAG_PUBLIC_ROLE": "employe"}
    done = subprocess.run([sys.executable, str(ROOT / "app.py")], env=env, capture_output=True, encoding="utf-8",
                          timeout=300, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == ("toolrag: TOOLRAG_PUBLIC_ROLE: 'employe' is not a role of catalog "
                                                    "'small'; did you mean 'employee'?")


def test_evaluate_as_a_role_filters_every_section_of_the_tab(ui_backend: Backend) -> None:
    """The local studio's "Evaluate as" choice: as employee, retrievability, labelled requests and the HTML
    report name no tool an employee cannot use; as the author, they do."""
    from test_ui_studio import controls

    from toolrag.ui.evaluate_handlers import EVERY_TOOL, StudioHandlers
    from toolrag.ui.studio import Studio

    def text(outputs: Any) -> list[str]:  # tables as JSON (a Styler's data), the rest as text
        return [getattr(getattr(o, "data", o), "to_json", lambda o=o: str(o))() for o in outputs]

    sh = StudioHandlers(Handlers(ui_backend), Studio(ui_backend))
    catalog = ui_backend.require().catalog
    beyond = [t for t in catalog.tools if not set(t.permissions) <= set(catalog.roles["employee"])]
    author, update = sh.view_as(None, {})
    assert update["value"] == EVERY_TOOL and update["choices"][:2] == [EVERY_TOOL, fmt.GUEST]
    employee, update = sh.view_as("employee", {})
    assert update["value"] == "employee"
    as_author = sh.check(gr.Progress(), "hr", author, *controls())
    assert "hr.payroll.approve" in [r["open"] for r in as_author[5]["tools"]]  # the filter has work to do
    assert "retrievability" in as_author[5]["facts"]  # what the tab's summary shows
    switched, _ = sh.view_as("employee", as_author[5])
    assert "facts" not in switched  # the author's figures are not shown as the employee's: check again
    as_employee = sh.check(gr.Progress(), "hr", employee, *controls())
    assert [r["open"] for r in as_employee[5]["tools"]] and not ids_in(text(as_employee), beyond)
    evaluated = sh.evaluate(gr.Progress(), employee, *controls())
    assert "labelled requests" in evaluated[1] and not ids_in(text(evaluated), beyond)
    page = Path(sh.export_for(employee, *controls())).read_text(encoding="utf-8")
    assert "hr.employee.onboard" not in page and not ids_in(page, beyond)
