"""The package layering of docs/architecture.md, checked on the source: imports only go down.

A module may import from its own package and from the layers below its own; never from a layer above (the
flow is one way: catalog -> encode -> index -> search -> evaluation -> serve / ui / cli). Lazy imports inside
functions count too, so a shortcut back up cannot hide there.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "toolrag"
#: Layer of each top-level part of the package (a module at the top or a subpackage).
LAYERS = {
    "errors": 0, "text": 0, "signals": 0, "progress": 0, "yamlio": 0, "jsonio": 0, "gcpause": 0,
    "config": 1, "files": 1, "images": 1, "strict": 1,
    "settings": 2, "audit": 2,
    "catalog": 3,
    "encode": 4,
    "index": 5,
    "search": 6,
    "evaluation": 7,
    "serve": 8, "ui": 8, "adapters": 8, "cli": 9,
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


#: A module owns one concern and stays under about 400 lines (docs/architecture.md); past this it is split.
MAX_MODULE_LINES = 450


def test_modules_stay_small() -> None:
    sizes = {f.relative_to(ROOT.parent).as_posix(): len(f.read_text(encoding="utf-8").splitlines())
             for f in ROOT.rglob("*.py")}
    too_long = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not too_long, f"split these modules (at most {MAX_MODULE_LINES} lines each): {too_long}"
    assert len(sizes) > 50  # the walk found the package
