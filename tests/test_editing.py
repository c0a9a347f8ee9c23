"""Catalog editing on real files (a copy of sample_tools + assets) with the real index: save, refuse, crash,
delete, add an image, add a tool from the template."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ASSETS

from toolrag.catalog.editor import CatalogEditor, RankProbe
from toolrag.catalog.loader import load_catalog, parse_profile_yaml
from toolrag.errors import CatalogError, ImageError, ProfileError

pytest_plugins = ["ui_support"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def editor(ui_backend: Any) -> CatalogEditor:
    return ui_backend.editor  # type: ignore[no-any-return]


def folder_state(folder: Path) -> dict[str, bytes]:
    """Every file under the catalog folder (hidden ones included) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def full_ranking(editor: CatalogEditor, query: str) -> list[str]:
    catalog = editor.catalog
    return editor.target.search(query, permissions=catalog.permission_codes, top_k=len(catalog),  # type: ignore[attr-defined,no-any-return]
                                include_deprecated=True).ids


def test_profile_yaml_is_the_item_as_written(editor: CatalogEditor) -> None:
    for tool in editor.catalog.tools[::7]:
        text = editor.profile_yaml(tool.id)
        assert parse_profile_yaml(text, source=tool.source, assets_dir=editor.catalog.assets_dir) == tool  # type: ignore[arg-type]
        body = tool.source.read_text(encoding="utf-8")  # type: ignore[union-attr]
        for line in text.splitlines()[1:]:
            assert line.strip() in body
    commented = editor.profile_yaml("finance.invoice.extract_fields")
    assert "# submit_expense_claim" in commented  # comments survive


def test_save_rewrites_only_that_item_reindexes_only_that_tool_and_moves_its_rank(editor: CatalogEditor) -> None:
    query = "帮我把这周的项目周报整理好发给老板"
    before_ids = full_ranking(editor, query)
    tool_id = before_ids[11]
    tool = editor.catalog.get(tool_id)
    file = Path(tool.source)  # type: ignore[union-attr]
    original = file.read_text(encoding="utf-8")
    others = [t for t in editor.catalog.tools if t.source == tool.source and t.id != tool_id]  # type: ignore[union-attr]
    others_text = {t.id: editor.profile_yaml(t.id) for t in others}
    text = editor.profile_yaml(tool_id)
    edited = text.replace("examples:\n", f"examples:\n  - query: {query}\n  - query: 整理项目周报并发送\n", 1)
    assert edited != text
    outcome = editor.save(tool_id, edited, probe=RankProbe(query))
    assert outcome.action == "saved" and outcome.file == file
    assert outcome.rank_before == before_ids.index(tool_id) + 1
    assert outcome.rank_after is not None and outcome.rank_after < outcome.rank_before and outcome.rank_after <= 3
    assert f"#{outcome.rank_before} → #{outcome.rank_after}" in outcome.message
    # Only that tool's text was re-encoded, once per text model.
    assert outcome.encoded == len(editor.target.index.snapshot.vectors)
    new_body = file.read_text(encoding="utf-8")
    assert query in new_body and new_body != original
    assert {t.id: editor.profile_yaml(t.id) for t in others} == others_text
    assert outcome.backup is not None and outcome.backup.read_text(encoding="utf-8") == original
    assert editor.history(file)[-1] == outcome.backup
    assert load_catalog(editor.path).get(tool_id).examples[0].query == query  # type: ignore[union-attr]
    assert full_ranking(editor, query).index(tool_id) + 1 == outcome.rank_after


@pytest.mark.parametrize("mutation, problem", [
    (lambda t: t + "  broken: [unclosed\n", "invalid YAML"),
    (lambda t: t.replace("description:", "descripton:", 1), "did you mean 'description'"),
    (lambda t: t.replace("id: web.news.latest", "id: web.search.public", 1), "already used"),
    (lambda t: t + "replaced_by: no.such.tool\n", "web.yaml:101: .*no tool has id 'no.such.tool'"),  # whole catalog
    (lambda t: t + "images:\n  - {path: missing.png, caption: x}\n", "'missing.png' not found"),
    (lambda t: "", "empty"),
])
def test_refused_edits_change_nothing(editor: CatalogEditor, mutation: Any, problem: str) -> None:
    text = editor.profile_yaml("web.news.latest")
    if "replaced_by: null" in text:
        text = text.replace("replaced_by: null\n", "")
    files = folder_state(editor.folder)
    snapshot = editor.target.index.snapshot
    with pytest.raises((ProfileError, CatalogError), match=problem) as info:
        editor.save("web.news.latest", mutation(text))
    assert str(editor.folder) in str(info.value) or "web.yaml" not in problem  # real path, not the temp copy
    assert folder_state(editor.folder) == files
    assert editor.target.index.snapshot is snapshot
    with pytest.raises((ProfileError, CatalogError)):
        editor.validate("web.news.latest", mutation(text))


def test_a_refused_edit_names_the_line_of_the_file_not_of_the_edited_text(editor: CatalogEditor) -> None:
    """The problem's line is where the key stands in the file (the text is parsed alone, its line 1 being the
    tool's first line there); for a new tool, where it would land."""
    tool = editor.catalog.get("finance.invoice.extract_fields")
    assert tool is not None and tool.source is not None
    lines = tool.source.read_text(encoding="utf-8").split("\n")
    text = editor.profile_yaml(tool.id)
    for bad, key in ((text.replace("category: finance", "categroy: finance", 1), "category: finance"),
                     ("\n---\n" + text.replace("category: finance", "categroy: finance", 1), "category: finance")):
        with pytest.raises(ProfileError, match="'categroy': unknown key") as info:
            editor.validate(tool.id, bad)
        problem = info.value.problems[0]
        assert problem.line is not None and problem.line > tool.line  # type: ignore[operator]
        assert lines[problem.line - 1].strip() == key and f"finance.yaml:{problem.line}:" in problem.message
    web = editor.folder / "web.yaml"  # a new web tool is appended there, after a blank line
    with pytest.raises(ProfileError, match="'mutaton': unknown key") as new:
        editor.validate(None, "id: demo.new_tool\ncategory: web\nmutaton: true\ndescription: A tool to refuse.\n")
    assert new.value.problems[0].line == len(web.read_text(encoding="utf-8").rstrip("\n").split("\n")) + 2 + 2


def test_deleting_a_tool_named_by_replaced_by_is_refused(editor: CatalogEditor) -> None:
    files = folder_state(editor.folder)
    with pytest.raises(ProfileError, match="replaced_by"):
        editor.delete("office.calendar.create_event")
    assert folder_state(editor.folder) == files


def test_crash_between_temp_write_and_rename_leaves_the_file_intact(editor: CatalogEditor,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tool_id = "web.news.latest"
    edited = editor.profile_yaml(tool_id).replace("获取最新新闻资讯", "获取最新的新闻资讯", 1)
    files = {k: v for k, v in folder_state(editor.folder).items() if not k.startswith(".history")}
    snapshot = editor.target.index.snapshot

    def crash(src: Any, dst: Any) -> None:
        raise OSError("simulated power cut before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(CatalogError, match="left unchanged"):
        editor.save(tool_id, edited)
    monkeypatch.undo()
    after = {k: v for k, v in folder_state(editor.folder).items() if not k.startswith(".history")}
    assert after == files  # original intact, no temp file left behind
    assert editor.target.index.snapshot is snapshot


def test_delete_removes_the_tool_from_file_and_index(editor: CatalogEditor) -> None:
    tool_id = "image.vectorize.trace"
    file = Path(editor.catalog.get(tool_id).source)  # type: ignore[union-attr]
    count = len(editor.catalog)
    outcome = editor.delete(tool_id, probe=RankProbe("把这个 logo 转成矢量图"))
    assert outcome.action == "deleted" and outcome.rank_before is not None and outcome.rank_after is None
    assert editor.catalog.get(tool_id) is None and len(editor.catalog) == count - 1
    assert tool_id not in editor.target.index.snapshot.ids
    assert f"id: {tool_id}" not in file.read_text(encoding="utf-8")
    assert tool_id not in full_ranking(editor, "把这个 logo 转成矢量图")
    assert load_catalog(editor.path).get(tool_id) is None
    with pytest.raises(CatalogError, match="no tool has id"):
        editor.delete(tool_id)


def test_add_image_copies_by_content_hash_and_indexes_it(editor: CatalogEditor, tmp_path: Path) -> None:
    tool_id = "image.generate.from_text"  # a tool without images
    photo = ASSETS / "queries" / "rocket_crop.jpg"
    probe = RankProbe("", image=photo)
    outcome = editor.add_image(tool_id, photo, "火箭发射的照片 a rocket launch photo", probe=probe)
    tool = editor.catalog.get(tool_id)
    assert tool is not None and len(tool.images) == 1
    stored = tool.images[0].file
    assert stored.parent == editor.catalog.assets_dir and stored.read_bytes() == photo.read_bytes()
    assert len(stored.stem) == 16 and stored.suffix == ".jpg"
    # The caption changes the text (re-encoded once per text model) and the new image is encoded once per
    # image index (visual features, and the text the index reads in example images); nothing else.
    snap = editor.target.index.snapshot
    assert len(snap.vectors) < outcome.encoded <= len(snap.vectors) + len(snap.image_vectors) + 1
    assert outcome.rank_after is not None and (outcome.rank_before is None or outcome.rank_after <= outcome.rank_before)
    data = yaml.safe_load(Path(tool.source).read_text(encoding="utf-8"))  # type: ignore[arg-type]
    entry = next(d for d in data if d["id"] == tool_id)
    assert entry["images"] == [{"path": stored.name, "caption": "火箭发射的照片 a rocket launch photo"}]
    # Not an image: refused, nothing copied or changed.
    fake = tmp_path / "notes.png"
    fake.write_text("not an image", encoding="utf-8")
    files = folder_state(editor.folder)
    assets = sorted(p.name for p in editor.catalog.assets_dir.iterdir())  # type: ignore[union-attr]
    with pytest.raises(ImageError):
        editor.add_image(tool_id, fake, "x")
    assert folder_state(editor.folder) == files
    assert sorted(p.name for p in editor.catalog.assets_dir.iterdir()) == assets  # type: ignore[union-attr]


def test_new_tool_from_template_goes_into_its_category_file(editor: CatalogEditor) -> None:
    template = editor.new_tool_template("finance")
    first = yaml.safe_load(template)
    assert first["category"] == "finance" and editor.catalog.get(first["id"]) is None
    text = template.replace("an everyday way to ask for it", "把美元换算成人民币的汇率按月导出报表")
    outcome = editor.save(None, text, probe=RankProbe("把美元换算成人民币的汇率按月导出报表"))
    assert outcome.action == "added" and outcome.file.name == "finance.yaml"
    assert outcome.rank_after is not None and outcome.rank_after <= 3
    assert editor.catalog.get(first["id"]) is not None
    assert first["id"] in editor.target.index.snapshot.ids
    assert yaml.safe_load(editor.new_tool_template("finance"))["id"] != first["id"]  # the id is free again
    # A new category gets its own file; saving the same id twice is refused.
    robot = editor.new_tool_template("robotics")
    added = editor.save(None, robot)
    assert added.file == editor.folder / "robotics.yaml" and added.file.is_file()
    with pytest.raises(ProfileError, match="already used"):
        editor.save(None, robot)
    editor.delete(added.tool_id)
    assert editor.catalog.get(added.tool_id) is None
