"""The validated-catalog cache (toolrag/catalog/cache.py): a large catalog is read back from the data folder
while everything it came from is unchanged, and never otherwise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from toolrag.catalog import cache, loader
from toolrag.catalog.loader import load_catalog
from toolrag.env_vars import CATALOG_CACHE_ENV
from toolrag.errors import ProfileError


@pytest.fixture
def catalog_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of two sample files (one with example images) and their images; the cache in a temporary data
    folder, kept from one tool on (instead of 5,000)."""
    monkeypatch.setenv("TOOLRAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv(CATALOG_CACHE_ENV, raising=False)
    monkeypatch.setattr(cache, "CACHE_MIN_TOOLS", 1)
    folder = tmp_path / "catalog"
    folder.mkdir()
    for name in ("image.yaml", "travel.yaml"):
        shutil.copy(ROOT / "sample_tools" / name, folder / name)
    (folder / "catalog.yaml").write_text("name: cached\nassets_dir: assets\n", encoding="utf-8")
    shutil.copytree(ROOT / "assets", folder / "assets", ignore=shutil.ignore_patterns("queries", "*.py", "*.md"))
    return folder


def _cache_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "data" / "catalogs").glob("catalog-*.pickle"))


def _refuse_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("the catalog was parsed, not read from the cache")

    monkeypatch.setattr(loader._Builder, "add_file", refuse)


def test_an_unchanged_catalog_is_read_back(catalog_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    first = load_catalog(catalog_dir)
    assert len(_cache_files(tmp_path)) == 1 and any(t.images for t in first.tools)
    with monkeypatch.context() as patched:
        _refuse_parsing(patched)
        again = load_catalog(catalog_dir)
    assert again.tools == first.tools and again.name == "cached" and again.report == first.report
    assert again.assets_dir == first.assets_dir and again.roles == first.roles
    # another mode is another cache entry; cache=False and TOOLRAG_CATALOG_CACHE=off read the files
    assert load_catalog(catalog_dir, mode="lenient").tools == first.tools and len(_cache_files(tmp_path)) == 2
    with monkeypatch.context() as patched:
        _refuse_parsing(patched)
        with pytest.raises(AssertionError, match="parsed"):
            load_catalog(catalog_dir, cache=False)
        patched.setenv(CATALOG_CACHE_ENV, "off")
        with pytest.raises(AssertionError, match="parsed"):
            load_catalog(catalog_dir)


def test_an_unknown_cache_setting_is_named_and_ignored(catalog_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    load_catalog(catalog_dir)
    monkeypatch.setenv(CATALOG_CACHE_ENV, "sometimes")
    _refuse_parsing(monkeypatch)
    with caplog.at_level("WARNING", logger="toolrag.config"):
        load_catalog(catalog_dir)  # read back: the cache stays on
    assert "ignoring TOOLRAG_CATALOG_CACHE='sometimes'" in caplog.text and "use off" in caplog.text


def test_any_change_to_what_it_came_from_reads_the_files(catalog_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_catalog(catalog_dir)
    travel = catalog_dir / "travel.yaml"
    # a profile file's content (same size: one letter changed)
    text = travel.read_text(encoding="utf-8")
    travel.write_text(text.replace("Current", "Cvrrent", 1), encoding="utf-8")
    edited = load_catalog(catalog_dir)
    assert edited.tools != first.tools and any("Cvrrent" in t.description for t in edited.tools)
    # catalog.yaml
    (catalog_dir / "catalog.yaml").write_text("name: renamed\nassets_dir: assets\n", encoding="utf-8")
    assert load_catalog(catalog_dir).name == "renamed"
    # a new profile file
    (catalog_dir / "extra.yaml").write_text("- id: extra.tool\n  description: An extra tool\n", encoding="utf-8")
    assert load_catalog(catalog_dir).get("extra.tool") is not None
    # the code that parses and validates
    monkeypatch.setattr(cache, "_code_digest", "another loader")
    with monkeypatch.context() as patched:
        _refuse_parsing(patched)
        with pytest.raises(AssertionError, match="parsed"):
            load_catalog(catalog_dir)
    # an example image that is gone: the loader refuses the catalog, as without a cache
    image = next(t for t in first.tools if t.images).images[0].file
    load_catalog(catalog_dir)
    image.unlink()
    with pytest.raises(ProfileError, match=f"image '{image.name}' not found"):
        load_catalog(catalog_dir)


def test_a_damaged_cache_file_is_replaced(catalog_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
                                          ) -> None:
    first = load_catalog(catalog_dir)
    (file,) = _cache_files(tmp_path)
    file.write_bytes(file.read_bytes()[:100])  # cut short, as by a full disk
    with caplog.at_level("WARNING", logger="toolrag.catalog.cache"):
        again = load_catalog(catalog_dir)
    assert again.tools == first.tools and "cannot be read" in caplog.text and str(file) in caplog.text
    assert file.stat().st_size > 1000 and not list(file.parent.glob("*.tmp"))  # rewritten whole


def test_small_catalogs_are_not_kept(catalog_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "CACHE_MIN_TOOLS", 5_000)
    load_catalog(catalog_dir)
    assert _cache_files(tmp_path) == []


def test_an_unusable_data_folder_only_turns_the_cache_off(catalog_dir: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("TOOLRAG_DATA_DIR", str(blocker / "data"))  # cannot be created under a file
    with caplog.at_level("WARNING", logger="toolrag.catalog.cache"):
        catalog = load_catalog(catalog_dir)
    assert len(catalog) > 0 and "catalog cache off" in caplog.text and str(blocker) in caplog.text


def test_the_code_digest_covers_every_module_the_loader_imports() -> None:
    """The key of a cached catalog covers the loader's own code and every toolrag module it reads with (found
    from the imports, so a new helper module cannot be missed): JSON and YAML readers, text cleaning, errors."""
    import ast

    files = cache.code_files()
    names = {f.relative_to(f.parents[1]).as_posix() for f in files}
    assert {"toolrag/jsonio.py", "toolrag/yamlio.py", "toolrag/text.py", "toolrag/errors.py",
            "catalog/loader.py", "catalog/readers.py", "catalog/schema.py"} <= names
    for file in files:  # closed under imports: every toolrag module a listed file imports is listed
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("toolrag."):
                target = file.parents[1 if file.parent.name == "toolrag" else 2].joinpath(*node.module.split("."))
                assert target.with_suffix(".py") in files or target / "__init__.py" in files, (file, node.module)
