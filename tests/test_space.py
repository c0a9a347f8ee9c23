"""``app.py`` started as a Hugging Face Space starts it, with the Hub unreachable, and driven in Chromium.

A Space sets ``SPACE_ID`` and serves on 0.0.0.0. Its data folder starts with nothing but the model folders the
suite's own ``models`` fixture built from the packaged weights (linked, not built again: that is 90 s of CPU, done
once per machine by the suite, whose vectors test_encoders.py checks against sentence-transformers): no index, no
cache, no decision bank. The Hub is made unreachable the way an outage would: ``HF_ENDPOINT`` points at a closed
port and an audit hook in the app's process refuses every connection to a host other than this machine (and
records it). The page must reach "ready: 78 tools" and answer a text search and an image search with the same
tools as ``python app.py`` started locally (on 127.0.0.1, offline) on the same catalog, and the local start must
find the index the Space built (the same packaged weights, so the same fingerprints: no new Chroma collection).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from conftest import ASSETS, ROOT
from ui_support import CHROMIUM, copy_catalog, free_port, loopback_context

pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: Runs app.py as ``python app.py`` would, after an audit hook that refuses non-loopback connections.
_GUARDED_APP = """
import runpy, socket, sys

def guard(event, args):
    if event not in ("socket.connect", "socket.getaddrinfo"):
        return
    if event == "socket.connect":
        if getattr(args[0], "family", None) == socket.AF_UNIX:
            return
        host = args[1][0] if isinstance(args[1], tuple) and args[1] else None
    else:
        host = args[0].decode() if isinstance(args[0], bytes) else args[0]
    if host and host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0") and not str(host).startswith("127."):
        print(f"NETWORK BLOCKED: {event} {host}", file=sys.stderr, flush=True)
        raise ConnectionRefusedError(f"the network is unreachable from this test ({host})")

sys.addaudithook(guard)
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
TEXT_QUERY = "北京明天会下雨吗？帮我查一下天气预报"
IMAGE = ASSETS / "queries" / "taxi_receipt.png"
#: A fresh data folder builds the index, reads the example images and encodes the no-tool requests: a minute or
#: two on 2 cores (more when the model folders are not there to link).
READY_MS = 900_000
#: The folders of built models in a data folder's ``models`` (what load_models builds from the packaged weights).
MODEL_FOLDERS = ("e5-small-packaged-", "text-onnx-", "image-onnx-")


def _link_built_models(data: Path) -> list[str]:
    """The model folders the suite's ``models`` built (in its data folder), linked into ``data``'s (copied where a
    link cannot be made): what a Space's second start finds, without the index or any cache."""
    from toolrag.config import data_dir

    source, target = data_dir() / "models", data / "models"
    target.mkdir(parents=True)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    linked = []
    for folder in sorted(source.iterdir()) if source.is_dir() else []:
        if folder.is_dir() and folder.name.startswith(MODEL_FOLDERS):
            shutil.copytree(folder, target / folder.name, copy_function=link)
            linked.append(folder.name)
    return linked


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def _environment(**changes: str) -> dict[str, str]:
    """This process's environment without toolrag's, the Hub's or the suite's settings, plus ``changes``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TOOLRAG_", "HF_", "GRADIO_", "SPACE_")) and k != "SENTENCE_TRANSFORMERS_HOME"}
    return {**env, **changes}


class App:
    """``app.py`` in a child process, its output in a log file, stopped by its own pid."""

    def __init__(self, env: dict[str, str], log: Path, *, guarded: bool) -> None:
        self.port = int(env["GRADIO_SERVER_PORT"])
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = log
        command = [sys.executable, "-c", _GUARDED_APP, "app.py"] if guarded else [sys.executable, "app.py"]
        with log.open("wb") as out:
            self.proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(self.url + "config", timeout=5) as response:
                    if response.status == 200:
                        return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"app.py did not serve; its log ends:\n{self.tail()}") from None
            time.sleep(0.5)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])

    def peak_mb(self) -> float:
        """The app process's peak resident memory so far (VmHWM), in MB; 0 where /proc does not tell."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text(encoding="utf-8")
        except OSError:
            return 0.0
        return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0.0)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import expect as pw_expect
    from playwright.sync_api import sync_playwright

    pw_expect.set_options(timeout=120_000)  # a first search loads models in a process that just started
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (scripts/test.sh does it)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-dev-shm-usage"])
        yield browser
        browser.close()


def _searches(browser: Any, app: App) -> tuple[str, list[str], list[str]]:
    """In a fresh browser context that may only reach the app: the mode and status lines once ready, the tool
    ids of a text search (opened from a link) and of an image search (uploaded), as a person would."""
    context, blocked = loopback_context(browser, timeout_ms=120_000)
    try:
        page = context.new_page()
        page.goto(f"{app.url}?q={quote(TEXT_QUERY)}&role=guest")
        status = page.locator("#status")
        expect(status).to_contain_text("ready: 78 tools", timeout=READY_MS)
        expect(page.locator("#history")).to_contain_text(TEXT_QUERY[:10])
        text_ids = _result_ids(page)
        page.goto(f"{app.url}?role=guest")
        expect(status).to_contain_text("ready: 78 tools")
        page.locator("#query-image input[type=file]").set_input_files(str(IMAGE))
        expect(page.locator("#query-image img")).to_be_visible()
        page.locator("#search-btn").click()
        expect(page.locator("#notes")).to_contain_text("OCR read")
        image_ids = _result_ids(page)
        return f"{page.locator('#mode').inner_text()} {status.inner_text()}", text_ids, image_ids
    except Exception as exc:
        raise AssertionError(f"{exc}\napp.py's log ends:\n{app.tail()}") from exc
    finally:
        context.close()
        assert not blocked, f"the page tried to reach the network: {blocked}"


def _result_ids(page: Any) -> list[str]:
    expect(page.locator("#results [data-testid=cell-0-2]")).not_to_be_empty()
    rows = page.locator("#results [role=row].virtual-row").count()
    return [page.locator(f"#results [data-testid=cell-{r}-2]").inner_text().strip() for r in range(rows)]


def _collections(data: Path) -> set[str]:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(path=str(data / "chroma"), settings=ChromaSettings(anonymized_telemetry=False))
    return {c.name for c in client.list_collections()}


def test_space_start_with_the_hub_unreachable_serves_the_local_results(chromium: Any, models: Any,
                                                                       tmp_path: Path) -> None:
    catalog = copy_catalog(tmp_path)
    data = tmp_path / "space-data"  # nothing indexed, nothing cached: only the built models
    linked = _link_built_models(data)
    closed = free_port()  # nothing listens there: the "Hub" refuses every connection
    common = {"TOOLRAG_CATALOG": str(catalog), "TOOLRAG_DATA_DIR": str(data), "HF_HOME": str(tmp_path / "hf"),
              "GRADIO_TEMP_DIR": str(tmp_path / "gradio"), "GRADIO_ANALYTICS_ENABLED": "False",
              "TOOLRAG_MAP_WARMUP": "off"}  # no map is opened: UMAP's compile would only compete with the searches
    space_env = _environment(**common, SPACE_ID="toolrag-tests/playground", SPACE_HOST="playground.hf.space",
                             GRADIO_SERVER_NAME="0.0.0.0", GRADIO_SERVER_PORT=str(free_port()),
                             HF_ENDPOINT=f"http://127.0.0.1:{closed}")
    space = App(space_env, tmp_path / "space.log", guarded=True)
    started = time.monotonic()
    try:
        space_status, space_text, space_image = _searches(chromium, space)
        took, peak = time.monotonic() - started, space.peak_mb()
    finally:
        space.stop()
    log = space.log.read_text(encoding="utf-8", errors="replace")
    assert "NETWORK BLOCKED" not in log, [line for line in log.splitlines() if "NETWORK BLOCKED" in line]
    assert "read-only" in space_status.lower() and "⚠" not in space_status  # shared, and no model fell back
    built = _collections(data)
    assert built, "the Space built no index"
    rebuilt = [name for name in linked if f"built {data / 'models' / name}" in log]
    assert not rebuilt, f"linked model folders built again: {rebuilt}"
    print(f"\n{space_status}\nSpace start: ready and searched {took:.0f} s after the page served, "
          f"peak memory {peak:.0f} MB\ntext search: {space_text}\nimage search: {space_image}")

    local = App(_environment(**common, GRADIO_SERVER_PORT=str(free_port())), tmp_path / "local.log", guarded=False)
    started = time.monotonic()
    try:
        _, local_text, local_image = _searches(chromium, local)
        print(f"local start on that data folder: ready and searched in {time.monotonic() - started:.0f} s, "
              f"peak memory {local.peak_mb():.0f} MB")
    finally:
        local.stop()
    assert space_text == local_text and space_text[0].startswith("travel.weather")
    assert space_image == local_image and space_image[0].startswith("finance.")
    assert _collections(data) == built  # the same weights read the same index: nothing new was built
