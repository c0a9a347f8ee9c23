"""Start a real Chroma server for tests: ``with running_chroma_server(tmp_path) as url: ...``.

Reusable by any test module (store, CLI, app). The server is ``chroma run`` (the CLI shipped with chromadb)
bound to 127.0.0.1 on a free port, with its data under ``tmp_path``; it is stopped by pid on exit.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from net_support import free_port

READY_TIMEOUT_S = 60.0
_ATTEMPTS = 3  # a free port can be taken between choosing it and the server binding it


def chroma_executable() -> str:
    """The ``chroma`` CLI next to the running Python, else the one on PATH."""
    here = Path(sys.executable).with_name("chroma")
    if here.exists():
        return str(here)
    found = shutil.which("chroma")
    if found is None:
        raise RuntimeError("`chroma` executable not found next to Python or on PATH: pip install chromadb")
    return found


def _heartbeat_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _start(data_dir: Path, log_path: Path, port: int | None = None) -> tuple[subprocess.Popen[bytes], str]:
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [chroma_executable(), "run", "--path", str(data_dir), "--host", "127.0.0.1", "--port", str(port)]
    with log_path.open("ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if _heartbeat_ok(url):
            return proc, url
        time.sleep(0.2)
    _stop(proc)
    tail = log_path.read_text(errors="replace", encoding="utf-8")[-2000:]
    raise RuntimeError(
        f"Chroma server {url} did not become ready (exit code {proc.returncode}); log:\n{tail}"
    )


@contextmanager
def running_chroma_server(tmp_path: Path) -> Iterator[str]:
    """Run ``chroma run --path <tmp_path>/chroma-server --host 127.0.0.1 --port <free>``; yield its URL."""
    data_dir = tmp_path / "chroma-server"
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = tmp_path / "chroma-server.log"
    error: RuntimeError | None = None
    for _ in range(_ATTEMPTS):
        try:
            proc, url = _start(data_dir, log_path)
            break
        except RuntimeError as exc:
            error = exc
    else:
        raise RuntimeError(str(error))
    try:
        yield url
    finally:
        _stop(proc)


class ChromaServer:
    """A ``chroma run`` server that a test can stop and start again on the same port and data folder (a store
    that goes down and comes back): ``with ChromaServer(tmp_path) as server: ... server.stop(); server.start()``."""

    def __init__(self, tmp_path: Path) -> None:
        self.data_dir = tmp_path / "chroma-server"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = tmp_path / "chroma-server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.url = ""

    def start(self) -> str:
        error: RuntimeError | None = None
        for _ in range(_ATTEMPTS if self.port is None else 1):
            try:
                self.proc, self.url = _start(self.data_dir, self.log_path, self.port)
                self.port = int(self.url.rsplit(":", 1)[1])
                return self.url
            except RuntimeError as exc:
                error = exc
        raise RuntimeError(str(error))

    def stop(self) -> None:
        if self.proc is not None:
            self.resume()  # a paused server cannot act on SIGTERM
            _stop(self.proc)
            self.proc = None

    def pause(self) -> None:
        """SIGSTOP the server: it keeps its port (connections are accepted) and answers nothing, as a hung one.
        Returns once the kernel shows it stopped (a signal is delivered when the process is next scheduled: on a
        busy machine it could still answer a request sent at once)."""
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGSTOP)
            stat = Path(f"/proc/{self.proc.pid}/stat")
            deadline = time.monotonic() + 10
            while stat.exists() and time.monotonic() < deadline:
                if stat.read_text().rpartition(")")[2].split()[0] in ("T", "t"):
                    break
                time.sleep(0.01)

    def resume(self) -> None:
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGCONT)

    def __enter__(self) -> ChromaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
