"""Errors carry their facts as fields beside the message (file, line, tool, field), and print as before."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from toolrag.catalog.loader import load_catalog, parse_profile_yaml
from toolrag.errors import ImageError, Problem, ProfileError, QueryError, SettingsError, ToolragError
from toolrag.evaluation.queries import load_queries
from toolrag.images import load_image
from toolrag.settings import Settings


def test_every_problem_of_a_strict_catalog_is_a_record(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("- id: a\n  description: d\n  tags: x\n- id: b\n  descripton: d\n",
                                     encoding="utf-8")
    with pytest.raises(ProfileError) as caught:
        load_catalog(tmp_path)
    file = str(tmp_path / "t.yaml")
    found = [(p.file, p.line, p.tool, p.field) for p in caught.value.problems]
    assert found == [(file, 3, "a", "tags"), (file, 5, "b", "descripton"), (file, 4, "b", "description")]
    first = caught.value.problems[0]
    assert str(first).startswith(f"{file}:3: tool 'a': field 'tags':")  # the text lint prints, as before
    error = caught.value
    assert (error.file, error.line, error.tool, error.field) == (file, 3, "a", "tags")  # the first problem's
    assert first.to_json() == {"message": first.message, "file": file, "line": 3, "tool": "a", "field": "tags"}


def test_unreadable_files_and_catalog_wide_problems_are_located(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"id": "a", "description": "d"}\n{oops\n', encoding="utf-8")
    with pytest.raises(ProfileError) as caught:
        load_catalog(tmp_path / "bad.jsonl", mode="strict")
    assert [(p.file, p.line, p.tool) for p in caught.value.problems] == [(str(tmp_path / "bad.jsonl"), 2, None)]
    folder = tmp_path / "dup"
    folder.mkdir()
    (folder / "a.yaml").write_text("- id: x\n  description: one\n- id: x\n  description: two\n"
                                   "- id: y\n  description: three\n  replaced_by: gone\n", encoding="utf-8")
    with pytest.raises(ProfileError) as caught:
        load_catalog(folder)
    fields = [(p.tool, p.field, p.line) for p in caught.value.problems]
    assert fields == [("x", "id", 3), ("y", "replaced_by", 5)]
    assert "duplicate tool id 'x'" in str(caught.value.problems[0])


def test_the_editor_parse_error_is_located(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as caught:
        parse_profile_yaml("id: a\ndescription: [unclosed\n", source=tmp_path / "t.yaml", assets_dir=tmp_path)
    assert caught.value.file == str(tmp_path / "t.yaml") and caught.value.line is not None
    assert caught.value.tool is None


def test_a_problem_read_on_a_copy_is_reported_on_the_original() -> None:
    problem = Problem("/tmp/copy/t.yaml:4: tool 'a': field 'images': not found", "/tmp/copy/t.yaml", 4, "a",
                      "images")
    moved = problem.relocated("/tmp/copy", "/home/me/catalog")
    assert str(moved) == "/home/me/catalog/t.yaml:4: tool 'a': field 'images': not found"
    assert (moved.file, moved.line, moved.tool, moved.field) == ("/home/me/catalog/t.yaml", 4, "a", "images")


def test_profile_error_from_text_keeps_working() -> None:
    error = ProfileError("the profile is empty", tool="x", field="id")
    assert [str(p) for p in error.problems] == ["the profile is empty"]
    assert (error.tool, error.field, error.file) == ("x", "id", None)
    again = pickle.loads(pickle.dumps(error))  # errors cross process boundaries (edit workers)
    assert str(again) == "the profile is empty" and again.tool == "x" and str(again.problems[0]) == str(error)
    assert isinstance(ToolragError("plain"), Exception) and ToolragError("plain").file is None


def test_settings_file_error_names_file_line_and_setting(tmp_path: Path) -> None:
    file = tmp_path / "s.yaml"
    file.write_text("top_k: 5\nfusion: sideways\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"s\.yaml:2: fusion 'sideways' is not one of") as caught:
        Settings.from_yaml(file)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(file), 2, "fusion")


def test_query_file_error_names_file_line_and_field(tmp_path: Path) -> None:
    file = tmp_path / "q.yaml"
    file.write_text("- query: hello\n  gold: [a]\n- query: there\n  glod: [b]\n", encoding="utf-8")
    with pytest.raises(QueryError, match="unknown field 'glod'") as caught:
        load_queries(file)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(file), 4, "glod")
    csv = tmp_path / "q.csv"
    csv.write_text("query,gold,colour\nhi,a,red\n", encoding="utf-8")
    with pytest.raises(QueryError, match="unknown column 'colour'") as caught:
        load_queries(csv)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(csv), 1, "colour")


def test_image_error_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.png"
    with pytest.raises(ImageError, match="not found") as caught:
        load_image(missing)
    assert caught.value.file == str(missing)
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not a picture")
    with pytest.raises(ImageError, match="not an image Pillow can read") as caught:
        load_image(junk)
    assert caught.value.file == str(junk)
    with pytest.raises(ImageError) as caught:
        load_image(b"not a picture")
    assert caught.value.file is None


def test_every_error_is_defined_in_errors_and_the_users_ones_are_exported() -> None:
    """One home for errors: every ToolragError subclass in toolrag is a class of toolrag/errors.py (modules
    re-export what they raise); the library's top level exports what a search caller meets."""
    import ast

    import toolrag
    from toolrag import errors

    package = Path(toolrag.__file__).parent
    elsewhere = []
    for file in package.rglob("*.py"):
        if file.name == "errors.py" and file.parent == package:
            continue
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and hasattr(errors, b.id) and isinstance(getattr(errors, b.id), type)
                    and issubclass(getattr(errors, b.id), errors.ToolragError) for b in node.bases):
                elsewhere.append(f"{file.relative_to(package)}:{node.lineno} {node.name}")
    assert elsewhere == []
    for name in ("Caller", "ToolNotFound", "HubModelUnavailable", "QueryError"):
        assert name in toolrag.__all__ and hasattr(toolrag, name)
