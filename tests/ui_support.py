"""Fixtures for the editing and playground tests, loaded as a plugin (``pytest_plugins = ["ui_support"]``) so
one catalog copy, one backend, one app server and one browser serve the whole test session.

The app always runs on a temporary COPY of ``sample_tools/`` and ``assets/`` (tests edit it), with the real
models from ``conftest.models``. A network guard fails the run on any non-loopback connection: an audit hook
in this process and a route filter in the browser.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
if "GRADIO_TEMP_DIR" not in os.environ:  # one folder per test process, removed when it ends
    os.environ["GRADIO_TEMP_DIR"] = tempfile.mkdtemp(prefix="toolrag-gradio-")
    atexit.register(shutil.rmtree, os.environ["GRADIO_TEMP_DIR"], ignore_errors=True)

from conftest import ASSETS, ROOT, SAMPLE
from net_support import free_port

CHROMIUM = "/usr/bin/chromium"
#: The docs' screenshots (the README shows search.png): written only by ``python -m scripts.screenshots``
#: (``--update-screenshots``).
DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
#: Where every other run writes them (ignored by git), so the suite leaves a clone unchanged.
ARTIFACT_SCREENSHOTS = ROOT / "tests" / "_artifacts" / "screenshots"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0", ""}


# ------------------------------------------------------------------------------------------ network guard


@dataclass
class _Guard:
    active: bool = False
    violations: list[str] = field(default_factory=list)


GUARD = _Guard()


def _host(value: Any) -> str | None:
    if isinstance(value, tuple) and value:
        return str(value[0])
    if isinstance(value, str | bytes):
        return value.decode() if isinstance(value, bytes) else value
    return None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not GUARD.active or event not in ("socket.connect", "socket.getaddrinfo"):
        return
    if event == "socket.connect":
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) == socket.AF_UNIX:
            return
        host = _host(address)
    else:
        host = _host(args[0])
    if host is not None and host not in LOOPBACK and not host.startswith("127."):
        GUARD.violations.append(f"{event} {host}")
        raise ConnectionRefusedError(f"test network guard: non-loopback connection to {host!r} blocked")


sys.addaudithook(_audit)


@pytest.fixture(scope="session")
def network_guard() -> Iterator[_Guard]:
    """Blocks and records non-loopback connections from this process while UI tests run."""
    GUARD.active = True
    try:
        yield GUARD
    finally:
        GUARD.active = False
    assert not GUARD.violations, f"non-loopback connections attempted: {GUARD.violations}"


@pytest.fixture(scope="session")
def screenshot(request: pytest.FixtureRequest) -> Any:
    """``screenshot(page, name)`` saves a full-page PNG (``full_page=False``: the window) under
    tests/_artifacts/screenshots/, or under docs/screenshots/ with ``--update-screenshots``, and returns its path
    (checked to be a written PNG)."""
    folder = DOCS_SCREENSHOTS if request.config.getoption("--update-screenshots") else ARTIFACT_SCREENSHOTS
    folder.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str, *, full_page: bool = True) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
        return path

    return take


# ------------------------------------------------------------------------------------------ catalog + app


def copy_catalog(folder: Path) -> Path:
    """A copy of the sample catalog and its assets (``assets_dir: ../assets`` keeps working)."""
    shutil.copytree(SAMPLE, folder / "sample_tools")
    shutil.copytree(ASSETS, folder / "assets")
    return folder / "sample_tools"


@pytest.fixture(scope="session")
def ui_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_catalog(tmp_path_factory.mktemp("ui-catalog"))


@pytest.fixture(scope="session")
def ui_backend(ui_catalog: Path, data_dir: Path, models: Any, network_guard: _Guard) -> Any:
    """The playground backend on the catalog copy, built synchronously (indexing the copy once)."""
    from toolrag.ui import Backend

    backend = Backend(ui_catalog, data_dir=data_dir, models=models)
    backend.build()
    assert backend.ready, backend.error
    return backend


@dataclass
class Server:
    url: str
    backend: Any
    demo: Any


@pytest.fixture(scope="session")
def ui_server(ui_backend: Any, network_guard: _Guard) -> Iterator[Server]:
    """The app served on a free loopback port for the whole session."""
    from toolrag.ui.app import create_app

    demo = create_app(ui_backend)
    url = serve_app(demo)
    try:
        yield Server(url, ui_backend, demo)
    finally:
        demo.close()


# ---------------------------------------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def browser(ui_server: Server) -> Iterator[Any]:
    """Chromium for one test module. Not for the whole session: Playwright's sync API keeps an event loop
    running in the main thread while it lives, and a later module that runs its own loop (the MCP tests' anyio,
    another Playwright) would then fail with "Cannot run the event loop while another loop is running"."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=90_000)  # the first OCR / UMAP call of a process takes a while on 2 cores
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (scripts/test.sh does it)")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                      args=["--no-sandbox", "--disable-gpu", "--disable-quic",
                                            "--disable-dev-shm-usage"])
        yield chromium
        chromium.close()


@pytest.fixture()
def page(browser: Any, ui_server: Server) -> Iterator[Any]:
    """A fresh context per test whose requests may only go to the app (or data:/blob: URLs)."""
    context, blocked = loopback_context(browser, timeout_ms=60_000)
    pg = context.new_page()
    pg.goto(ui_server.url)
    try:
        yield pg
    finally:
        context.close()
    assert not blocked, f"the page tried to reach the network: {blocked}"


def serve_app(demo: Any) -> str:
    """Launch a Blocks app on a free loopback port (not blocking) and return its URL once it answers."""
    from toolrag.ui.app import launch

    port = free_port()
    launch(demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "config", timeout=5) as response:
                if response.status == 200:
                    break
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)
    return url


def loopback_context(browser: Any, *, timeout_ms: int, viewport: tuple[int, int] = (1440, 1000)
                     ) -> tuple[Any, list[str]]:
    """A fresh browser context (a window of ``viewport`` pixels) whose requests may only go to loopback (or
    data:/blob: URLs); the second value lists the requests it blocked."""
    blocked: list[str] = []
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, locale="en-US")

    def route(request_route: Any) -> None:
        url = urlparse(request_route.request.url)
        if url.scheme in ("data", "blob") or url.hostname in ("127.0.0.1", "localhost"):
            request_route.continue_()
        else:
            blocked.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", route)
    context.set_default_timeout(timeout_ms)
    return context, blocked
