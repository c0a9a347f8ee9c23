"""Replicas of a published index, with real parts: a ``chroma run`` server, ``toolrag index --index`` and
``toolrag serve --index --transport http`` as the processes a user starts, the MCP SDK's client.

A push is served by both replicas (one of them without any catalog file) within 10 s; the store going down makes
them not ready (searches go on from the loaded version) and they recover when it returns; two replicas started
together build the version once; a build killed with SIGKILL is finished by the next process, and nothing is
served meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from chroma_server import ChromaServer, free_port
from conftest import ROOT, SAMPLE

from toolrag.decision.model import shipped_model

pytestmark = [pytest.mark.slow, pytest.mark.server]

#: How often a replica reads the manifest here (the default is 2 s).
POLL_S = "1"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRAG_")}
    # no model warm-up: these processes are timed by none of the tests, and ten of them warming OCR and the image
    # model would compete with the servers under test for the CPU
    return {**env, "TOOLRAG_INDEX_POLL": POLL_S, "TOOLRAG_WARMUP": "off", **extra}


def toolrag(*args: str, cwd: Path = ROOT, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolrag", *args], cwd=cwd, env=_env(**env), capture_output=True,
                          encoding="utf-8", timeout=timeout, stdin=subprocess.DEVNULL)


class Replica:
    """``toolrag serve --transport http`` in a child process (its stderr in a file)."""

    def __init__(self, folder: Path, name: str, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
                 ) -> None:
        self.port = free_port()
        self.log = folder / f"{name}.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "toolrag", "serve", "--transport", "http", "--port", str(self.port),
                 "--data-dir", str(folder / f"data-{name}"), *args],
                cwd=cwd, env={**_env(**(env or {})), "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=log,
                stdin=subprocess.DEVNULL)

    def readyz(self) -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())
        except OSError:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the replica exited with {self.proc.returncode}: {self.stderr()[-2000:]}") from None
            return 0, {}

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as response:
            return str(response.read().decode("utf-8"))

    def search(self, query: str) -> dict[str, Any]:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async def call() -> dict[str, Any]:
            async with streamable_http_client(f"http://127.0.0.1:{self.port}/mcp") as (read, write, *_), \
                    ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("search_tools", {"query": query, "k": 3})
                assert not result.is_error, result.content
                answer: dict[str, Any] = result.structured_content
                return answer

        return anyio.run(call)

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@contextlib.contextmanager
def replicas(folder: Path, *specs: tuple[str, tuple[str, ...], Path]) -> Iterator[list[Replica]]:
    started = [Replica(folder, name, *args, cwd=cwd) for name, args, cwd in specs]
    try:
        yield started
    finally:
        for replica in started:
            replica.stop()


@contextlib.contextmanager
def playground(folder: Path, url: str, index: str, cwd: Path) -> Iterator[Replica]:
    """``python app.py`` with ``TOOLRAG_CHROMA_URL`` and ``TOOLRAG_INDEX`` only (no catalog), answering like a
    replica on ``/readyz`` and ``/metrics``."""
    app = Replica.__new__(Replica)
    app.port, app.log = free_port(), folder / "app.log"
    env = {**_env(TOOLRAG_CHROMA_URL=url, TOOLRAG_INDEX=index, TOOLRAG_MAP_WARMUP="off"), "PYTHONPATH": str(ROOT),
           "GRADIO_SERVER_PORT": str(app.port)}  # no map is opened here
    with app.log.open("wb") as log:
        app.proc = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=cwd, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield app
    finally:
        app.stop()


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Seconds until ``check()`` held (AssertionError naming ``what`` after ``timeout``)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout} s")


def push(catalog: Path, url: str, name: str, folder: Path, **env: str) -> str:
    proc = toolrag("index", "--catalog", str(catalog), "--chroma-url", url, "--index", name, "--data-dir",
                   str(folder / "data-push"), **env)
    assert proc.returncode == 0, proc.stderr
    found = re.search(rf"index {name}: version ([0-9a-f]{{16}}) pushed", proc.stdout)
    assert found, proc.stdout
    return found.group(1)


def test_a_push_is_served_by_every_replica_and_the_store_may_go_away(tmp_path: Path, small_catalog_dir: Path) -> None:
    catalog = tmp_path / "catalog"
    shutil.copytree(small_catalog_dir, catalog)
    empty = tmp_path / "elsewhere"  # the read-only replica runs where no catalog file is
    empty.mkdir()
    with ChromaServer(tmp_path) as chroma:
        first = push(catalog, chroma.url, "tools", tmp_path)
        args = ("--chroma-url", chroma.url, "--index", "tools")
        with replicas(tmp_path, ("reader", args, empty), ("writer", (*args, "--catalog", str(catalog)), ROOT)) as (
                reader, writer), playground(tmp_path, chroma.url, "tools", empty) as app:
            for replica in (reader, writer):
                wait_for(lambda r=replica: r.readyz()[0] == 200, 300, "a replica ready")  # type: ignore[misc]
                assert replica.readyz()[1]["version"] == first
            model = shipped_model()[0].version  # type: ignore[union-attr]
            assert reader.readyz()[1] == {"ready": True, "index": "tools", "version": first, "serial": 1, "tools": 8,
                                          "decision_model": model}
            answer = reader.search("where is parseInvoice defined in our code")
            assert answer["tools"][0]["id"] == "dev.search.code" and answer["index_version"] == first

            # A change pushed: both replicas serve it within 10 s, without a restart.
            tools = catalog / "tools.yaml"
            tools.write_text(tools.read_text(encoding="utf-8").replace(
                "Search the company's source code repositories", "Search the company's Mercurial repositories"),
                encoding="utf-8")
            second = push(catalog, chroma.url, "tools", tmp_path)
            assert second != first
            for replica in (reader, writer):
                took = wait_for(lambda r=replica: r.readyz()[1].get("version") == second, 10,  # type: ignore[misc]
                                "the pushed version served")
                assert took < 10
            answer = reader.search("where is parseInvoice defined in our code")
            assert answer["index_version"] == second and "Mercurial" in answer["tools"][0]["description"]
            # The playground serves the same index without catalog files, read-only, and follows it too.
            wait_for(lambda: app.readyz()[1].get("version") == second, 120, "the playground on the pushed version")
            assert "toolrag_index_info" in app.metrics() and app.readyz()[1]["tools"] == 8
            assert '"toolrag.search' not in reader.metrics()  # metrics are Prometheus text
            from prometheus_client.parser import text_string_to_metric_families

            families = {f.name: f for f in text_string_to_metric_families(reader.metrics())}
            info = [s for s in families["toolrag_index_info"].samples if s.value == 1]
            assert [s.labels for s in info] == [{"index": "tools", "version": second}]
            assert sum(s.value for s in families["toolrag_searches"].samples if s.name.endswith("_total")) == 2

            # The store goes away: not ready (with the reason), searches go on from the loaded version.
            chroma.stop()
            wait_for(lambda: reader.readyz()[0] == 503, 20, "readiness false while Chroma is down")
            status, health = reader.readyz()
            assert status == 503 and health["version"] == second and "Chroma" in health["reason"]
            assert reader.search("where is parseInvoice defined in our code")["index_version"] == second
            chroma.start()
            for replica in (reader, writer):
                wait_for(lambda r=replica: r.readyz()[0] == 200, 30, "ready again")  # type: ignore[misc]
            third_text = tools.read_text(encoding="utf-8").replace("Mercurial", "Subversion")
            tools.write_text(third_text, encoding="utf-8")
            third = push(catalog, chroma.url, "tools", tmp_path)
            wait_for(lambda: reader.readyz()[1].get("version") == third, 10, "a push after the store came back")
            assert "Subversion" in reader.search("where is parseInvoice defined in our code")["tools"][0]["description"]
            for replica in (reader, writer):
                assert "Traceback" not in replica.stderr(), replica.stderr()[-3000:]


def test_a_hung_store_makes_a_replica_not_ready_and_it_recovers(tmp_path: Path, small_catalog_dir: Path) -> None:
    """The Chroma server stopped by SIGSTOP (its port open, no answer): /readyz turns 503 within the store's
    timeout plus a poll, saying why (and the log says it once); searches go on from the loaded version; after
    SIGCONT the replica is ready again."""
    with ChromaServer(tmp_path) as chroma:
        version = push(small_catalog_dir, chroma.url, "hung", tmp_path)
        reader = Replica(tmp_path, "reader", "--chroma-url", chroma.url, "--index", "hung",
                         env={"TOOLRAG_CHROMA_TIMEOUT": "2"})
        try:
            wait_for(lambda: reader.readyz()[0] == 200, 300, "the replica ready")
            chroma.pause()
            try:
                took = wait_for(lambda: reader.readyz()[0] == 503, 30, "readiness false while Chroma is hung")
                status, health = reader.readyz()
                assert status == 503 and health["version"] == version and took < 15, (took, health)
                assert re.search(r"no answer within 2 s|cannot reach a Chroma server", health["reason"]), health
                assert reader.search("what is the weather in Paris")["index_version"] == version
            finally:
                chroma.resume()
            wait_for(lambda: reader.readyz()[0] == 200, 30, "ready again after SIGCONT")
            log = reader.stderr()
            assert "Traceback" not in log and re.search(r"index hung: .*(no answer within 2 s|cannot reach)", log), log
        finally:
            reader.stop()


def test_two_replicas_started_together_build_the_version_once(tmp_path: Path, small_catalog_dir: Path) -> None:
    with ChromaServer(tmp_path) as chroma:
        args = ("--catalog", str(small_catalog_dir), "--chroma-url", chroma.url, "--index", "twin")
        with replicas(tmp_path, ("a", args, ROOT), ("b", args, ROOT)) as started:
            for replica in started:
                wait_for(lambda r=replica: r.readyz()[0] == 200, 400, "a replica ready")  # type: ignore[misc]
            health = [replica.readyz()[1] for replica in started]
            assert health[0]["version"] == health[1]["version"] and health[0]["serial"] == 1  # one flip
            logs = [replica.stderr() for replica in started]
            built = [log for log in logs if "built and pushed here" in log]
            assert len(built) == 1, logs
            assert any("already pushed (by another process)" in log for log in logs), logs


def test_sigterm_releases_the_lease_and_pushes_say_what_they_did(tmp_path: Path, small_catalog_dir: Path) -> None:
    """SIGTERM of `toolrag index` releases its build lease at once (as Ctrl-C does), not after the lease expires;
    a push of the version already current says "already pushed" (docs/deploy.md's words); an older catalog pushed
    again is served from the vectors kept on the server (nothing encoded)."""
    import chromadb
    from chromadb.config import Settings

    with ChromaServer(tmp_path) as chroma:
        client = chromadb.HttpClient(host="127.0.0.1", port=chroma.port, settings=Settings(anonymized_telemetry=False))

        def leases() -> list[str]:
            return [c.name for c in client.list_collections() if c.name.startswith("toolrag-index-term-lease-")]

        command = [sys.executable, "-m", "toolrag", "index", "--catalog", str(SAMPLE), "--chroma-url", chroma.url,
                   "--index", "term", "--data-dir", str(tmp_path / "data-term")]
        with (tmp_path / "term.log").open("wb") as log:
            stopped = subprocess.Popen(command, cwd=ROOT, env=_env(TOOLRAG_INDEX_LEASE="600"),
                                       stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
        try:
            wait_for(lambda: bool(leases()), 300, "the build's lease taken")
            time.sleep(1.0)
            stopped.send_signal(signal.SIGTERM)
            assert stopped.wait(timeout=60) == 128 + signal.SIGTERM
        finally:
            if stopped.poll() is None:
                stopped.kill()
        assert leases() == [], "the lease of a build stopped by SIGTERM is left until it expires"
        assert "Traceback" not in (tmp_path / "term.log").read_text(encoding="utf-8", errors="replace")

        first = push(small_catalog_dir, chroma.url, "term", tmp_path)
        again = toolrag("index", "--catalog", str(small_catalog_dir), "--chroma-url", chroma.url, "--index", "term",
                        "--data-dir", str(tmp_path / "data-push"))
        assert again.returncode == 0 and f"index term: version {first} already pushed (serial 1;" in again.stdout
        changed = tmp_path / "changed"
        shutil.copytree(small_catalog_dir, changed)
        tools = changed / "tools.yaml"
        tools.write_text(tools.read_text(encoding="utf-8").replace("Search the company's source code", "Search the "
                                                                   "company's Mercurial code"), encoding="utf-8")
        second = push(changed, chroma.url, "term", tmp_path)
        back = toolrag("index", "--catalog", str(small_catalog_dir), "--chroma-url", chroma.url, "--index", "term",
                       "--data-dir", str(tmp_path / "data-back"))
        assert second != first and back.returncode == 0, back.stderr
        assert f"index term: version {first} pushed (serial 3;" in back.stdout, back.stdout
        assert ", 0 texts/images encoded here)" in back.stdout, back.stdout


def _without_images(folder: Path) -> Path:
    """The sample catalog's 78 tools without their example images (its labelled queries left out): a build that
    still takes several seconds, without the 35 s of CPU of reading 23 pictures."""
    import yaml

    target = folder / "sample_text"
    (folder / "assets").mkdir(parents=True)
    target.mkdir()
    for source in sorted(SAMPLE.glob("*.yaml")):
        if source.name.startswith("queries"):
            continue
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
        if isinstance(data, list):
            for tool in data:
                tool.pop("images", None)
                examples = [{k: v for k, v in ex.items() if k != "image"} if isinstance(ex, dict) else ex
                            for ex in tool.get("examples", [])]
                tool["examples"] = [ex for ex in examples if not isinstance(ex, dict) or ex.get("query")]
        (target / source.name).write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), "utf-8")
    return target


def test_a_build_killed_half_way_is_finished_by_the_next(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    from toolrag.index.published import PublishedIndex

    catalog = _without_images(tmp_path)
    with ChromaServer(tmp_path) as chroma:
        client = chromadb.HttpClient(host="127.0.0.1", port=chroma.port, settings=Settings(anonymized_telemetry=False))
        index = PublishedIndex(client, "big")
        command = [sys.executable, "-m", "toolrag", "index", "--catalog", str(catalog), "--chroma-url", chroma.url,
                   "--index", "big", "--data-dir", str(tmp_path / "data-killed")]
        killed = subprocess.Popen(command, cwd=ROOT, env=_env(TOOLRAG_INDEX_LEASE="3"), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        try:
            def leased() -> bool:
                return any(c.name.startswith("toolrag-index-big-lease-") for c in client.list_collections())

            wait_for(leased, 300, "the build's lease taken")
            time.sleep(0.5)  # the build is under way (5 s for these 78 tools in one process on 2 cores)
            killed.send_signal(signal.SIGKILL)
            killed.wait(timeout=30)
        finally:
            if killed.poll() is None:
                killed.kill()
        version = next(c.name for c in client.list_collections()
                       if c.name.startswith("toolrag-index-big-lease-")).rsplit("-", 1)[1]
        assert index.manifest().version is None and not index.complete(version)  # nothing half-written served
        proc = toolrag("index", "--catalog", str(catalog), "--chroma-url", chroma.url, "--index", "big", "--data-dir",
                       str(tmp_path / "data-next"), TOOLRAG_INDEX_LEASE="3")
        assert proc.returncode == 0, proc.stderr
        assert f"index big: version {version} pushed" in proc.stdout
        assert "its lease expired); finishing it" in proc.stderr and "Traceback" not in proc.stderr
        manifest = index.manifest()
        assert manifest.version == version and manifest.serial == 1 and manifest.tools == 78
        assert index.complete(version) and index.lease_holder(version) is None
