"""The package layering of docs/architecture.md, checked on the source: imports only go down.

A module may import from its own package and from the layers below its own; never from a layer above (the
flow is one way: catalog -> encode -> index -> search -> evaluation -> serve / ui / cli). Lazy imports inside
functions count too, so a shortcut back up cannot hide there. No module of toolrag, bench, scripts or app.py
reaches itself through imports, and no file of the repository but the tests passes 450 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "toolrag"
#: Layer of each top-level part of the package (a module at the top or a subpackage).
LAYERS = {
    "errors": 0, "stats": 0, "text": 0, "signals": 0, "progress": 0, "yamlio": 0, "jsonio": 0, "gcpause": 0,
    "env_vars": 0, "version": 0, "paths": 0,
    "config": 1, "files": 1, "images": 1, "strict": 1, "language": 1,
    "settings": 2, "audit": 2, "observe": 2,
    "catalog": 3,
    "encode": 4,
    "index": 5,
    "decision": 6,
    "search": 7,
    "evaluation": 8,
    "serve": 9, "ui": 9, "adapters": 9, "cli": 10,
}


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") >= 1 else ""


def _imports(file: Path) -> list[tuple[int, str]]:
    tree = ast.parse(file.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "toolrag":
                found += [(node.lineno, f"toolrag.{alias.name}") for alias in node.names]
            elif node.module.startswith("toolrag."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("toolrag.")]
    return found


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if p.name != "__main__.py" and p != ROOT / "__init__.py")


def test_every_part_has_a_layer() -> None:
    parts = {p.relative_to(ROOT).parts[0].removesuffix(".py") for p in _modules()}
    assert parts <= set(LAYERS), f"add {sorted(parts - set(LAYERS))} to LAYERS and docs/architecture.md"


@pytest.mark.parametrize("file", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_go_down(file: Path) -> None:
    own = file.relative_to(ROOT).parts[0].removesuffix(".py")
    upward = [f"line {line}: {module} (layer {LAYERS[_part(module)]} > {LAYERS[own]})"
              for line, module in _imports(file)
              if _part(module) != own and LAYERS.get(_part(module), -1) >= LAYERS[own]]
    assert not upward, f"{file.relative_to(ROOT)} imports upward or sideways: {upward}"


#: A module owns one concern and stays under about 400 lines (docs/architecture.md); past this it is split. The
#: same bound holds for every file of the repository but the tests (:func:`test_no_repository_file_is_too_long`).
MAX_MODULE_LINES = 450


# ------------------------------------------------------------------------------------------ import circles
REPO = ROOT.parent
#: The code whose modules may not import each other in a circle: the package, the scripts and the app.
CODE = ("toolrag", "bench", "scripts")


def _module_files() -> dict[str, Path]:
    found = {"app": REPO / "app.py"}
    for base in CODE:
        for file in (REPO / base).rglob("*.py"):
            name = ".".join(file.relative_to(REPO).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = file
    return found


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module -> the modules of ``modules`` it imports anywhere (function-level imports included).
    ``from package import name`` counts as importing ``package.name`` when that is a module, else ``package``."""
    graph: dict[str, set[str]] = {}
    for name, file in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    edges.add(target if target in modules else node.module)
            elif isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
        graph[name] = {edge for edge in edges if edge in modules and edge != name}
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as the path of modules that closes it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_no_import_circle() -> None:
    """No module reaches itself through imports (two modules importing each other included), lazy imports in
    functions counted: a circle hidden in a function is one edit away from an import error."""
    modules = _module_files()
    assert {"toolrag.config", "bench.common", "scripts.render_assets", "app"} <= set(modules)
    circle = _circle(_import_graph(modules))
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_circle_check_sees_lazy_imports(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from pkg import b\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("def f():\n    from pkg.a import thing\n    import os\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("import pkg.a\n", encoding="utf-8")
    graph = _import_graph({"pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py", "pkg.c": tmp_path / "c.py"})
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a"}}
    assert _circle(graph) == ["pkg.a", "pkg.b", "pkg.a"]
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) is None


# ------------------------------------------------------------------------------------------- file sizes
#: Files past the limit that are not code, each with why it stays one file. The test fails when one of them
#: drops under the limit (the exception is then stale) or when a file not listed here passes it.
LONG_FILES = {
    "docs/benchmarks.md": "the benchmark tables, each section rewritten in place by its bench script (--write-docs)",
    "sample_tools/queries.yaml": "the bundled labelled requests: the one file toolrag eval and the app read",
}


def _repository_files() -> list[str]:
    """Tracked and new (not ignored) files of the checkout, or every file when git is unavailable."""
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, encoding="utf-8", timeout=60, check=True).stdout
        return sorted({line for line in out.splitlines() if (REPO / line).is_file()})
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "_artifacts"}
        return sorted(p.relative_to(REPO).as_posix() for p in REPO.rglob("*")
                      if p.is_file() and not skip & set(p.relative_to(REPO).parts))


def _text_lines(path: Path) -> int | None:
    """Lines of a text file; None for a binary one (an image)."""
    try:
        return len(path.read_text(encoding="utf-8").splitlines())
    except UnicodeDecodeError:
        return None


def test_no_repository_file_is_too_long() -> None:
    sizes = {name: _text_lines(REPO / name) for name in _repository_files() if not name.startswith("tests/")}
    too_long = {name: n for name, n in sizes.items() if n is not None and n > MAX_MODULE_LINES}
    unlisted = {name: n for name, n in too_long.items() if name not in LONG_FILES}
    assert not unlisted, f"split these files (at most {MAX_MODULE_LINES} lines each): {unlisted}"
    stale = sorted(set(LONG_FILES) - set(too_long))
    assert not stale, f"drop these from LONG_FILES, they are short now (or gone): {stale}"
    assert "scripts/render_assets.py" in sizes and "README.md" in sizes  # the walk saw the repository


#: What the repository's top level holds (the layout docs/architecture.md describes): a file a command wrote at
#: the top (a benchmark's --out, a scratch result) fails here rather than being committed beside the code.
TOP_LEVEL = {".ci", ".gitignore", "README.md", "app.py", "assets", "bench", "docs", "examples", "pyproject.toml",
             "requirements-dev.txt", "requirements.txt", "sample_tools", "scripts", "tests", "toolrag"}


def test_the_top_level_holds_the_designed_layout_alone() -> None:
    top = {name.split("/")[0] for name in _repository_files()}
    assert top <= TOP_LEVEL, f"move or delete these (results go to the bench folder, docs/ or tests/_artifacts): " \
                             f"{sorted(top - TOP_LEVEL)}"
    assert {"app.py", "toolrag", "tests", "README.md"} <= top  # the walk saw the repository


def test_a_quick_run_imports_no_heavy_library(request: pytest.FixtureRequest) -> None:
    """Collecting the quick tier imported gradio (7 s: a test file imported it at its top for a slow test). Under
    --quick no test file, plugin or conftest imports a library of :data:`quick_tier.HEAVY` (this test lives here:
    tests/test_quick_tier.py is never collected by a quick run)."""
    import sys

    from quick_tier import HEAVY

    if not request.config.getoption("--quick"):
        pytest.skip("the full suite imports them on purpose")
    assert sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY)) == []
