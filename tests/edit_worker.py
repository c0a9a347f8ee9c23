"""A second process editing a catalog, for the multi-process editing tests (``tests/test_edit_processes.py``).

``python tests/edit_worker.py edit CATALOG DATA_DIR NAME SHARED_ID OWN_ID ROUNDS GO_FILE [versionless]``:
builds a real retriever (the packaged multilingual text and image models) and a :class:`CatalogEditor` on the
catalog, writes ``ready`` to stdout, waits for ``GO_FILE`` to exist, then ROUNDS times adds an example ``NAME
edit N`` to the shared tool and to its own tool (read, change, save with the version read, or with none when
``versionless``: the editor compares with what it read; a save refused because the other process saved first is
read again and retried). Prints one JSON line: saves and refused saves.

``python tests/edit_worker.py hang-in-write|hang-in-check CATALOG``: starts a save that hangs after writing
its temp file (before the rename) or while validating its copy of the catalog, so the test can kill -9 it
and check that the next editor removes what it left. The save never reaches the index, so this mode edits
through a target that only holds the catalog (no model is loaded).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from toolrag.config import configure_environment

configure_environment(offline=True)

from toolrag.catalog.editor import CatalogEditor  # noqa: E402
from toolrag.catalog.loader import load_catalog  # noqa: E402
from toolrag.catalog.profile import Catalog  # noqa: E402
from toolrag.errors import CatalogError  # noqa: E402

CONFLICT = "after you opened it"


def add_example(editor: CatalogEditor, tool_id: str, query: str, *, versioned: bool = True) -> int:
    """Add ``query`` to the tool's examples; returns how many saves were refused before it went through.
    ``versioned=False`` saves without ``base_version``, as a script that just read the profile does."""
    refused = 0
    while True:
        read = editor.read_profile(tool_id)
        text = read.text.replace("examples:\n", f"examples:\n  - query: {query}\n", 1)
        if text == read.text:
            text = read.text.rstrip("\n") + f"\nexamples:\n  - query: {query}\n"
        try:
            editor.save(tool_id, text, base_version=read.version if versioned else None)
            return refused
        except CatalogError as exc:
            if CONFLICT not in str(exc):
                raise
            refused += 1


def edit(catalog: str, data_dir: str, name: str, shared: str, own: str, rounds: int, go: str,
         versioned: bool = True) -> None:
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    # The real packaged models, without the English one: this process's index only has to stay in step.
    retriever = ToolRetriever.from_catalog(catalog, data_dir=data_dir, settings=Settings(english_model=None))
    editor = CatalogEditor(retriever)
    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.01)
    refused = 0
    for n in range(rounds):
        refused += add_example(editor, shared, f"{name} edit {n}", versioned=versioned)
        refused += add_example(editor, own, f"{name} edit {n}", versioned=versioned)
    print(json.dumps({"saves": 2 * rounds, "refused": refused}), flush=True)


class CatalogOnly:
    """An edit target that holds the catalog and re-indexes nothing (the hanging saves never get there)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def reload(self, catalog: Catalog) -> int:
        self.catalog = catalog
        return 0

    def rank_of(self, tool_id: str, query: str, **kwargs: Any) -> int | None:
        return None


def hang(mode: str, catalog: str) -> None:
    import toolrag.catalog.staging as staging
    import toolrag.files as files

    def forever(*args: Any, **kwargs: Any) -> Any:
        print("hanging", flush=True)
        time.sleep(600)

    if mode == "hang-in-write":
        files.os.replace = forever
    else:
        staging.load_catalog = forever
    editor = CatalogEditor(CatalogOnly(load_catalog(catalog)))
    tool = editor.catalog.tools[0]
    read = editor.read_profile(tool.id)
    editor.save(tool.id, read.text.replace("examples:\n", "examples:\n  - query: never saved\n", 1),
                base_version=read.version)


if __name__ == "__main__":
    if sys.argv[1] == "edit":
        edit(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7]), sys.argv[8],
             versioned=sys.argv[9:] != ["versionless"])
    else:
        hang(sys.argv[1], sys.argv[2])
