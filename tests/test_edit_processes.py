"""Editing one catalog from several processes: a file lock every process respects, saves based on an older
version refused (never a silent last-writer-wins), files another process saved reloaded first, and what
killed saves leave behind removed at the next start. Real processes, real files, the real retriever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT

from toolrag.catalog.editor import LOCK_FILE, CatalogEditor
from toolrag.catalog.loader import load_catalog
from toolrag.catalog.staging import _copy_prefix
from toolrag.errors import CatalogError
from toolrag.files import FileLock
from toolrag.search.retriever import ToolRetriever

pytestmark = pytest.mark.slow
WORKER = Path(__file__).resolve().parent / "edit_worker.py"

CATALOG = """\
# Four text-only tools; the comments must survive every edit.
- id: shared.tool
  name: shared_tool
  description: A tool that both processes edit at the same time, to show that no edit is lost.
  examples:
    - query: the first example
- id: worker.tool
  name: worker_tool
  description: A tool that only the second process edits, in the same file as the others.
  examples:
    - query: the worker's first example
- id: parent.tool  # edited by the test process
  name: parent_tool
  description: A tool that only the test process edits, in the same file as the others.
  examples:
    - query: the parent's first example
- id: other.tool
  name: other_tool
  description: A tool nobody edits; its text must stay byte for byte the same.
  examples:
    - query: nobody edits this one
"""


def make_catalog(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "tools.yaml").write_text(CATALOG, encoding="utf-8")
    return folder


def examples(folder: Path, tool_id: str) -> list[str]:
    return [e.query for e in load_catalog(folder).get(tool_id).examples]  # type: ignore[union-attr]


def add_example(editor: CatalogEditor, tool_id: str, query: str, *, versioned: bool = True) -> int:
    from edit_worker import add_example as worker_add

    return worker_add(editor, tool_id, query, versioned=versioned)


@pytest.fixture()
def catalog(tmp_path: Path) -> Path:
    return make_catalog(tmp_path / "catalog")


@pytest.mark.parametrize("versioned", [True, False], ids=["base_version", "no version"])
def test_two_processes_editing_one_catalog_lose_nothing(catalog: Path, tmp_path: Path, models: Any,
                                                        versioned: bool) -> None:
    """Saves with the version read, and saves without one (the probe lost 40 of 80 of those): every edit of
    both processes is in the file."""
    rounds = 4
    go = tmp_path / "go"
    worker = subprocess.Popen([sys.executable, str(WORKER), "edit", str(catalog), str(tmp_path / "worker-data"),
                               "worker", "shared.tool", "worker.tool", str(rounds), str(go),
                               *(() if versioned else ("versionless",))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8", cwd=ROOT)
    try:
        retriever = ToolRetriever.from_catalog(catalog, data_dir=tmp_path / "parent-data", models=models)
        editor = CatalogEditor(retriever)
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready", worker.stderr.read()  # type: ignore[union-attr]
        go.touch()
        refused = 0
        for n in range(rounds):
            refused += add_example(editor, "shared.tool", f"parent edit {n}", versioned=versioned)
            refused += add_example(editor, "parent.tool", f"parent edit {n}", versioned=versioned)
        out, err = worker.communicate(timeout=600)
    finally:
        worker.kill()
    assert worker.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    shared = examples(catalog, "shared.tool")
    # Every save of both processes is in the file: nothing was overwritten by the other process.
    assert sorted(q for q in shared if "edit" in q) == sorted(
        [f"parent edit {n}" for n in range(rounds)] + [f"worker edit {n}" for n in range(rounds)])
    assert [q for q in examples(catalog, "worker.tool") if "edit" in q] == [
        f"worker edit {n}" for n in reversed(range(rounds))]
    assert [q for q in examples(catalog, "parent.tool") if "edit" in q] == [
        f"parent edit {n}" for n in reversed(range(rounds))]
    text = (catalog / "tools.yaml").read_text(encoding="utf-8")
    assert "# Four text-only tools" in text and "# edited by the test process" in text
    assert CATALOG[CATALOG.index("- id: other.tool"):] in text
    # The parent's index caught up with the worker's saves: it searches the file's current text.
    editor.read_profile("worker.tool")
    assert editor.catalog.get("worker.tool") == load_catalog(catalog).get("worker.tool")
    assert retriever.search(f"worker edit {rounds - 1}", top_k=1).ids == ["worker.tool"]
    assert report["saves"] == 2 * rounds and refused + report["refused"] >= 0
    assert not list(catalog.rglob("*.tmp"))


def test_a_save_based_on_an_older_version_is_refused(catalog: Path, tmp_path: Path, models: Any) -> None:
    first = CatalogEditor(ToolRetriever.from_catalog(catalog, data_dir=tmp_path / "a", models=models))
    second = CatalogEditor(ToolRetriever.from_catalog(catalog, data_dir=tmp_path / "b", models=models))
    mine = first.read_profile("shared.tool")
    theirs = second.read_profile("shared.tool")
    second.save("shared.tool", theirs.text.replace("the first example", "their change"), base_version=theirs.version)
    saved = (catalog / "tools.yaml").read_bytes()
    with pytest.raises(CatalogError, match="was changed in tools.yaml after you opened it.*nothing was saved"):
        first.save("shared.tool", mine.text.replace("the first example", "my change"), base_version=mine.version)
    assert (catalog / "tools.yaml").read_bytes() == saved
    again = first.read_profile("shared.tool")  # re-read: the other editor's save is there, and saving works
    assert "their change" in again.text and again.version != mine.version
    first.save("shared.tool", again.text.replace("their change", "both changes"), base_version=again.version)
    assert "both changes" in examples(catalog, "shared.tool")
    with pytest.raises(CatalogError, match="changed in tools.yaml after you opened it"):
        first.delete("shared.tool", base_version=again.version)  # stale: the save above changed it
    other = first.read_profile("other.tool")
    second.delete("other.tool", base_version=second.read_profile("other.tool").version)
    with pytest.raises(CatalogError, match="was deleted after you opened it"):
        first.save("other.tool", other.text, base_version=other.version)
    assert load_catalog(catalog).get("other.tool") is None and first.catalog.get("other.tool") is None


def test_an_edit_waits_for_another_process_holding_the_lock(catalog: Path, tmp_path: Path, models: Any) -> None:
    editor = CatalogEditor(ToolRetriever.from_catalog(catalog, data_dir=tmp_path / "d", models=models),
                           lock_timeout=0.5)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(catalog / LOCK_FILE)!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)\n")],
        stdout=subprocess.PIPE, encoding="utf-8")
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        read = editor.read_profile("other.tool")  # reading needs no lock
        before = (catalog / "tools.yaml").read_bytes()
        with pytest.raises(CatalogError, match="being changed by another process.*try again"):
            editor.save("other.tool", read.text.replace("nobody", "somebody"), base_version=read.version)
        assert (catalog / "tools.yaml").read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the lock of the killed process: the edit goes through now.
    editor.save("other.tool", read.text.replace("nobody", "somebody"), base_version=read.version)
    assert "somebody edits this one" in examples(catalog, "other.tool")


def test_one_lock_file_serialises_lock_objects_of_one_process(tmp_path: Path) -> None:
    lock_file, order = tmp_path / "x.lock", []
    other = FileLock(lock_file, timeout=5)
    with FileLock(lock_file, timeout=5):
        thread = threading.Thread(target=lambda: order.append(f"thread got it: {other.acquire()}"))
        thread.start()
        time.sleep(0.2)
        order.append("main releases")
    thread.join(5)
    assert order == ["main releases", "thread got it: True"]
    assert FileLock(lock_file).acquire(timeout=0) is False
    other.release()
    assert FileLock(lock_file).acquire(timeout=0) is True


@pytest.mark.parametrize("mode, leftover", [("hang-in-write", "temp file"), ("hang-in-check", "copy")])
def test_leftovers_of_a_killed_save_are_removed_at_the_next_start(catalog: Path, tmp_path: Path, models: Any,
                                                                  mode: str, leftover: str) -> None:
    copies = Path(tempfile.gettempdir())
    prefix = _copy_prefix(catalog)
    before = (catalog / "tools.yaml").read_bytes()
    worker = subprocess.Popen([sys.executable, str(WORKER), mode, str(catalog)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, encoding="utf-8", cwd=ROOT)
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "hanging", worker.stderr.read()  # type: ignore[union-attr]
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    temps = list(catalog.glob(".tools.yaml.*.tmp"))
    kept = list(copies.glob(prefix + "*"))
    assert (temps if leftover == "temp file" else kept), "the killed save left nothing to clean"
    assert (catalog / "tools.yaml").read_bytes() == before  # the file itself is intact
    CatalogEditor(ToolRetriever.from_catalog(catalog, data_dir=tmp_path / "d", models=models))
    assert not list(catalog.glob(".tools.yaml.*.tmp")) and not list(copies.glob(prefix + "*"))
    assert yaml.safe_load(before) == yaml.safe_load((catalog / "tools.yaml").read_bytes())

