"""Loading and validating catalogs: every accepted format and every bad-input case names file, line, field."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from toolrag.catalog.loader import load_catalog, parse_profile_yaml
from toolrag.catalog.profile import ToolProfile
from toolrag.errors import CatalogError, ProfileError, ToolNotFound

GOOD = """\
- id: erp.inventory.query_stock
  name: query_stock
  description: Current on-hand stock of a material in a warehouse, for buyers and planners.
  category: erp
  tags: [inventory, 库存]
  parameters:
    type: object
    properties:
      sku: {type: string, description: the material number}
      warehouseCode: {type: string, description: warehouse code}
    required: [sku]
  examples:
    - query: how many SKU-1001 are in stock
    - {query: 查一下库存, arguments: {sku: A1}}
  negative_examples: [show purchase orders in transit]
  permissions: [erp.read]
- id: hr.payroll.approve
  description: Approve the monthly payroll run; irreversible.
  mutation: true
  permissions: [hr.payroll.approve]
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def problems(exc: pytest.ExceptionInfo[ProfileError]) -> list[str]:
    return [str(problem) for problem in exc.value.problems]


def test_loads_yaml_list_with_defaults_and_texts(tmp_path: Path) -> None:
    write(tmp_path, "erp.yaml", GOOD)
    catalog = load_catalog(tmp_path)
    assert catalog.ids == ["erp.inventory.query_stock", "hr.payroll.approve"]
    stock = catalog.get("erp.inventory.query_stock")
    assert stock is not None and stock.examples[1].arguments == {"sku": "A1"}
    payroll = catalog.get("hr.payroll.approve")
    assert payroll is not None
    assert payroll.name == "hr_payroll_approve"  # derived from the id: dots are not allowed in names
    assert payroll.perm_key == "hr.payroll.approve" and payroll.mutation
    # The embedded text has the examples but never the raw schema; BM25's text has the parameter names.
    assert "how many SKU-1001" in stock.document_text()
    assert "warehouse code" not in stock.document_text()
    assert "warehouse Code warehouse code" in stock.lexical_text()
    assert stock.openai_tool()["function"]["parameters"]["required"] == ["sku"]


def test_queries_and_catalog_meta_are_not_profiles(tmp_path: Path) -> None:
    write(tmp_path, "erp.yaml", GOOD)
    write(tmp_path, "queries.yaml", "- {query: x, gold: []}\n")
    write(tmp_path, "catalog.yaml", "name: Demo\nroles:\n  hr: [hr.payroll.approve]\n  guest: []\n")
    catalog = load_catalog(tmp_path)
    assert catalog.name == "Demo" and len(catalog) == 2
    assert catalog.role_codes("hr") == ("hr.payroll.approve",)
    with pytest.raises(CatalogError, match="unknown role 'boss'.*guest, hr"):
        catalog.role_codes("boss")


def test_openai_mcp_and_jsonl_formats(tmp_path: Path) -> None:
    openai = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather",
                                                "parameters": {"type": "object", "properties": {}}}}]
    mcp = {"tools": [{"name": "delete_file", "description": "Delete a file",
                      "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
                      "annotations": {"destructiveHint": True}}]}
    jsonl = json.dumps({"id": "a.b", "description": "A tool"}) + "\n\n" + json.dumps({"id": "c", "description": "C"})
    assert load_catalog(write(tmp_path, "o.json", json.dumps(openai))).ids == ["get_weather"]
    deleted = load_catalog(write(tmp_path, "m.json", json.dumps(mcp))).get("delete_file")
    assert deleted is not None and deleted.mutation
    assert load_catalog(write(tmp_path, "p.jsonl", jsonl)).ids == ["a.b", "c"]


def test_json_records_keep_their_values_and_load_like_the_same_yaml(tmp_path: Path) -> None:
    """Records read from JSON keep their schemas and example arguments as parsed (no deep copy: nothing else
    refers to them); the profiles equal those of the same tools written as YAML, and a lenient repair or a
    bad schema is reported the same way."""
    import yaml

    from toolrag.catalog.readers import JsonRecord, read_records

    tool = {"id": "shop.order", "description": "Place an order",
            "parameters": {"type": "object", "properties": {"sku": {"type": "string"},
                                                            "lines": {"type": "array", "items": {"type": "integer"}}},
                           "required": ["sku"]},
            "examples": [{"query": "order 3 of SKU-1", "arguments": {"sku": "SKU-1", "lines": [1, 2]}}]}
    bad = {"id": "shop.bad", "description": "Bad schema", "parameters": {"type": "object", "properties": 5}}
    json_dir, yaml_dir = tmp_path / "j", tmp_path / "y"
    write(json_dir, "t.jsonl", json.dumps(tool) + "\n")
    write(yaml_dir, "t.yaml", yaml.safe_dump([tool], sort_keys=False))
    records = read_records(json_dir / "t.jsonl", [])
    assert [type(r) for r, _ in records] == [JsonRecord]
    from_json, from_yaml = load_catalog(json_dir).tools[0], load_catalog(yaml_dir).tools[0]
    assert from_json == from_yaml and list(from_json.parameters["properties"]) == ["sku", "lines"]
    assert from_json.examples[0].arguments == {"sku": "SKU-1", "lines": [1, 2]}
    for name, dump in (("b.json", json.dumps([bad])), ("b.yaml", yaml.safe_dump([bad]))):
        folder = tmp_path / name.replace(".", "_")
        write(folder, name, dump)
        with pytest.raises(ProfileError, match="shop.bad.*parameters"):
            load_catalog(folder, mode="strict")
        lenient = load_catalog(folder, mode="lenient")  # leniently: the bad keyword goes, with a warning
        assert lenient.tools[0].parameters == {"type": "object"}
        assert any("parameters" in w for w in lenient.report.warnings)


def test_invalid_yaml_names_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "bad.yaml", "- id: a\n  description: [unclosed\n")
    with pytest.raises(ProfileError, match=r"bad\.yaml:\d+: invalid YAML"):
        load_catalog(tmp_path)


def test_unknown_key_suggests_closest(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: something\n  exmaples: [x]\n")
    with pytest.raises(ProfileError, match=r"t\.yaml:3: tool 'a': field 'exmaples': unknown key; did you mean "
                                           r"'examples'\?"):
        load_catalog(tmp_path)


def test_wrong_field_type(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: something\n  tags: invoice\n")
    with pytest.raises(ProfileError, match=r"tool 'a': field 'tags': expected a list"):
        load_catalog(tmp_path)
    write(tmp_path, "t.yaml", "- id: a\n  description: something\n  mutation: yes please\n")
    with pytest.raises(ProfileError, match=r"field 'mutation': expected true or false"):
        load_catalog(tmp_path)


def test_missing_required_field(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n")
    with pytest.raises(ProfileError, match=r"tool 'a': field 'description': is required"):
        load_catalog(tmp_path)


def test_permission_code_with_a_comma_is_refused(tmp_path: Path) -> None:
    # The index stores a tool's codes comma-joined: "a,b" would silently become two codes there.
    write(tmp_path, "t.yaml", "- id: a\n  description: something\n  permissions: ['finance.read,finance.write']\n")
    with pytest.raises(ProfileError, match=r"t\.yaml:3: tool 'a': field 'permissions': .*'finance\.read,finance\."
                                           r"write'.*comma"):
        load_catalog(tmp_path)
    write(tmp_path, "t.yaml", "- id: a\n  description: something\n  permissions: [finance.read, finance.write]\n")
    assert load_catalog(tmp_path).get("a").perm_key == "finance.read,finance.write"  # type: ignore[union-attr]
    write(tmp_path, "catalog.yaml", "roles:\n  clerk: ['finance.read, finance.write']\n")
    with pytest.raises(CatalogError, match=r"catalog\.yaml:2: roles\.clerk: permission code 'finance\.read, "
                                           r"finance\.write'"):
        load_catalog(tmp_path)


@pytest.mark.parametrize(("meta", "message"), [
    ("name: x\nrole:\n  clerk: [finance.read]\n", r"catalog\.yaml:2: unknown key 'role'; did you mean 'roles'"),
    ("roles:\n  clerk: finance.read\n", r"catalog\.yaml:2: roles\.clerk: expected a list .*got text 'finance\.read'"),
    ("roles: [clerk]\n", r"catalog\.yaml:1: roles: expected a mapping"),
    ("name: [a]\n", r"catalog\.yaml:1: name: expected text"),
    ("- just a list\n", r"catalog\.yaml: expected a mapping \(name, assets_dir and roles\)"),
])
def test_catalog_yaml_is_read_strictly(tmp_path: Path, meta: str, message: str) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: something\n")
    write(tmp_path, "catalog.yaml", meta)
    with pytest.raises(CatalogError, match=message):
        load_catalog(tmp_path)


def test_every_problem_of_catalog_yaml_is_listed_at_once(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: something\n")
    write(tmp_path, "catalog.yaml", "nmae: x\ndescription: [a]\nroles:\n  guest: expense.submit\n"
                                    "  clerk: ['a b']\n  hr: [hr.payroll.approve]\n")
    with pytest.raises(ProfileError) as caught:
        load_catalog(tmp_path)
    found = [str(p).split("catalog.yaml")[1] for p in caught.value.problems]
    assert found == [":1: unknown key 'nmae'; did you mean 'name'?", ":2: description: expected text (e.g. a text), "
                     "got a list ['a']", ":4: roles.guest: expected a list (e.g. [expense.submit, travel.book]), got "
                     "text 'expense.submit'", ":5: roles.clerk: permission code 'a b' is not valid: a code may not "
                     "contain a comma or a space (list several codes as separate items)"]
    assert "(+3 more problems; `toolrag lint` lists them all)" in str(caught.value)


def test_an_emptied_profile_file_is_named_not_skipped_in_silence(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: something\n")
    write(tmp_path, "finance.yaml", "# the finance tools, moved elsewhere\n")
    catalog = load_catalog(tmp_path)
    assert catalog.ids == ["a"]
    assert any(w.endswith("finance.yaml: holds no tool profile (empty, or only comments); add its profiles or "
                          "delete the file") for w in catalog.report.warnings)


def test_a_catalog_file_is_named_by_its_folder_and_a_duplicate_in_it_without_a_line(tmp_path: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch
                                                                                    ) -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "description": "the weather in a city"}}
    (tmp_path / "tools.json").write_text(json.dumps([tool, tool]), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    catalog = load_catalog("tools.json")  # a relative path without a folder: the folder is the working one
    assert catalog.name == tmp_path.name
    unnamed = [{"type": "function", "function": {"description": "no name"}}, {"name": None, "inputSchema": {}}, tool]
    (tmp_path / "unnamed.json").write_text(json.dumps(unnamed), encoding="utf-8")
    assert [w.split(": ", 1)[1] for w in load_catalog(tmp_path / "unnamed.json").report.warnings] == [
        "tool without id: field 'function.name': is required; tool skipped",  # the field of the tool's own shape
        "tool without id: field 'name': is required; tool skipped"]
    assert [w for w in catalog.report.warnings if "duplicate" in w] == [
        "duplicate tool id 'get_weather' twice in tools.json; ids must be unique across the catalog; kept the "
        "first, skipped the second"]


def test_catalog_under_a_hidden_folder_loads(tmp_path: Path) -> None:
    # Hidden components count only inside the catalog folder (~/.config/tools, repo/.agents/tools, ../tools).
    folder = tmp_path / ".config" / "tools"
    write(folder, "t.yaml", "- id: a\n  description: something useful\n")
    write(folder / ".history", "t.yaml", "- id: old\n  description: an old version\n")
    assert load_catalog(folder).ids == ["a"]


def test_duplicate_ids_name_both_files(tmp_path: Path) -> None:
    write(tmp_path, "one.yaml", "- id: dup\n  description: first\n")
    write(tmp_path, "two.yaml", "- id: dup\n  description: second\n")
    with pytest.raises(ProfileError, match=r"duplicate tool id 'dup' in .*one\.yaml:1 and .*two\.yaml:1"):
        load_catalog(tmp_path)


def test_image_path_outside_catalog_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(b"x")
    catalog = tmp_path / "cat"
    write(catalog, "t.yaml", "- id: a\n  description: d\n  images: [{path: ../secret.png, caption: c}]\n")
    with pytest.raises(ProfileError, match=r"resolves outside the catalog's assets folder"):
        load_catalog(catalog)


def test_missing_image_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: d\n  images: [{path: nope.png, caption: c}]\n")
    with pytest.raises(ProfileError, match=r"image 'nope.png' not found"):
        load_catalog(tmp_path)


def test_invalid_json_schema(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: d\n  parameters: {type: object, properties: {x: {type: "
                              "strng}}}\n")
    with pytest.raises(ProfileError, match=r"field 'parameters': not a valid JSON Schema at properties/x/type"):
        load_catalog(tmp_path)


def test_yaml_only_values_in_a_schema_are_refused_by_name(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: d\n  parameters: {type: object, properties: {day: "
                              "{type: string, default: 2024-01-01}}}\n")
    with pytest.raises(ProfileError, match=r"field 'parameters': must be plain JSON .*quote dates"):
        load_catalog(tmp_path)


def test_all_problems_are_collected(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: d\n  tags: x\n- id: b\n  descripton: d\n")
    with pytest.raises(ProfileError) as exc:
        load_catalog(tmp_path)
    found = problems(exc)
    # tool a: tags; tool b: the misspelt key, and so the missing description.
    assert len(found) == 3
    assert "field 'descripton': unknown key; did you mean 'description'?" in found[1]
    assert "field 'description': is required" in found[2]
    assert "+2 more problems" in str(exc.value)


def test_empty_and_single_tool_catalogs(tmp_path: Path) -> None:
    # A catalog without any tool is an error naming what the folder holds, never 0 tools that answer NO_TOOL.
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CatalogError, match="has no tools: the folder is empty"):
        load_catalog(empty)
    write(empty, "catalog.yaml", "name: nothing\n")
    with pytest.raises(CatalogError, match=r"holds no profile file \(only catalog\.yaml\)"):
        load_catalog(empty)
    with pytest.raises(CatalogError, match=r"1 profile file\(s\) hold none \(e\.g\. tools\.json\)"):
        load_catalog(write(tmp_path / "openai", "tools.json", "[]"))
    one = tmp_path / "one"
    write(one, "t.yaml", "id: solo\ndescription: the only tool\n")
    assert load_catalog(one).ids == ["solo"]


def test_missing_catalog_path(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="does not exist"):
        load_catalog(tmp_path / "nope")


def test_replaced_by_must_exist(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: old\n  description: d\n  deprecated: true\n  replaced_by: new\n")
    with pytest.raises(ProfileError, match="no tool has id 'new'"):
        load_catalog(tmp_path)


def test_parse_profile_yaml_for_the_editor(tmp_path: Path) -> None:
    profile = parse_profile_yaml("id: x\ndescription: edited\n", source=tmp_path / "x.yaml", assets_dir=tmp_path)
    assert profile.description == "edited"
    with pytest.raises(ProfileError, match="invalid YAML"):
        parse_profile_yaml("id: [\n", source=tmp_path / "x.yaml", assets_dir=tmp_path)


def test_with_tool_keeps_what_the_catalog_computed_only_while_it_still_holds(tmp_path: Path) -> None:
    # with_tool hands cached categories, permission codes and function names to the copy when the new profile
    # leaves them as they were; each edit below must read exactly what a catalog built anew reads.

    from toolrag.catalog.profile import Catalog

    catalog = load_catalog(write(tmp_path / "c", "tools.yaml", GOOD))
    stock = catalog.get("erp.inventory.query_stock")
    assert stock is not None
    edits = [
        dataclasses.replace(stock, description="Stock on hand per warehouse."),  # nothing cached changes
        dataclasses.replace(stock, category="warehouse"),
        dataclasses.replace(stock, permissions=("erp.admin",)),
        dataclasses.replace(stock, name="payroll approve"),  # its function name now collides with the other's
        dataclasses.replace(stock, id="erp.new_tool", name="new_tool"),  # an addition
    ]
    for edit in edits:
        assert (catalog.categories, catalog.permission_codes) and catalog.function_name(stock.id)  # cache them
        edited = catalog.with_tool(edit)
        fresh = Catalog(edited.tools, catalog.name)
        assert edited.get(edit.id) is edit and len(edited) == len(catalog) + (edit.id != stock.id)
        assert [t.id for t in edited.tools][:2] == ["erp.inventory.query_stock", "hr.payroll.approve"]
        assert edited.categories == fresh.categories
        assert edited.permission_codes == fresh.permission_codes
        assert [edited.function_name(i) for i in edited.ids] == [fresh.function_name(i) for i in fresh.ids]
    moved = catalog.with_tool(edits[1]).categories
    assert "warehouse" in moved and "erp" not in moved and "erp" in catalog.categories


def test_rows_changed_since_names_the_edited_rows_and_only_for_the_same_tools(tmp_path: Path) -> None:
    # What an index re-checks after an edit: the rows whose profile object changed, when the ids and their
    # order are the same; None otherwise (then every tool is compared).

    catalog = load_catalog(write(tmp_path / "c", "tools.yaml", GOOD))
    stock, payroll = catalog.tools
    once = catalog.with_tool(dataclasses.replace(stock, description="Stock on hand."))
    assert once.rows_changed_since(catalog) == [0]  # a direct copy knows its row
    twice = once.with_tool(dataclasses.replace(payroll, description="Approve payroll."))
    assert twice.rows_changed_since(catalog) == [0, 1]  # two edits before a sync: found by identity
    assert twice.rows_changed_since(twice) == []
    assert catalog.with_tool(dataclasses.replace(stock, id="new.tool")).rows_changed_since(catalog) is None
    assert catalog.rows_changed_since(once) == [0]
    assert twice.id_order == catalog.id_order and twice.image_rows == catalog.image_rows


def test_derived_texts_are_computed_once_and_ignored_by_equality() -> None:
    tool = ToolProfile(id="a.get_weatherForecast", name="get_weatherForecast", description="Forecast.",
                       permissions=("z.read", "a.read"), parameters={"type": "object", "properties": {
                           "city_name": {"type": "string", "description": "where"}}})
    fresh = dataclasses.replace(tool)
    assert tool.document_text() == "get weather Forecast: Forecast."
    assert tool.lexical_text() == "a.get_weatherForecast\ngeneral\nget weather Forecast: Forecast.\ncity name where"
    assert tool.perm_key == "a.read,z.read"
    assert tool.text_hash() == hashlib.sha256(b"get weather Forecast: Forecast.").hexdigest()
    assert tool.lexical_text() is tool.lexical_text()  # kept, not rebuilt
    assert tool == fresh and repr(tool) == repr(fresh)  # what is kept is not a field
    changed = dataclasses.replace(tool, description="Rain.")  # a new profile computes its own texts
    assert changed.document_text() == "get weather Forecast: Rain." and changed.text_hash() != tool.text_hash()


def test_chinese_tools_marks_tools_with_chinese_text() -> None:
    from toolrag.catalog.profile import Catalog

    english = ToolProfile(id="a.weather", name="get_weather", description="Current weather for a city.")
    chinese = dataclasses.replace(english, id="b.weather", description="查询城市的当前天气。")
    mixed = dataclasses.replace(english, id="c.weather", description="Current weather (当前天气).")
    assert Catalog(tools=(english, chinese, mixed)).chinese_tools == (False, True, True)


def test_a_name_resolves_by_id_then_original_name_then_function_name() -> None:
    from toolrag.catalog.caller import Caller
    from toolrag.catalog.profile import Catalog

    one = ToolProfile(id="a.weather", name="get weather", description="Current weather for a city.")
    two = dataclasses.replace(one, id="b.weather", name="get_weather")
    three = dataclasses.replace(one, id="get_weather", name="weather_now")  # an id equal to another's name
    catalog = Catalog(tools=(one, two, three))
    assert [t.id for t in catalog.tools_named("get weather")] == ["a.weather"]  # original names only
    assert catalog.tools_named(catalog.function_name("a.weather")) == () and catalog.tools_named("nothing") == ()
    caller = Caller()
    assert caller.resolve(catalog, "get_weather").id == "get_weather"  # the id comes first
    assert caller.resolve(catalog, caller.function_names(catalog)["a.weather"]).id == "a.weather"
    assert caller.resolve(catalog, "get weather").id == "a.weather"  # the original name
    with pytest.raises(ToolNotFound):
        caller.resolve(catalog, "GET_WEATHER")  # a call names its tool exactly


def test_a_profile_from_checked_values_equals_the_dataclass_one() -> None:
    # the loader's fast path (no frozen-dataclass __init__) must build the very same profile
    values = {"id": "a.weather", "name": "get_weather", "description": "Current weather for a city.",
              "tags": ("weather",), "priority": 2, "source": Path("tools.yaml"), "line": 3}
    fast, plain = ToolProfile.from_checked(values), ToolProfile(**values)
    assert fast == plain and repr(fast) == repr(plain)
    assert {f.name: getattr(fast, f.name) for f in dataclasses.fields(ToolProfile)} == \
        {f.name: getattr(plain, f.name) for f in dataclasses.fields(ToolProfile)}
    assert fast.document_text() == plain.document_text() and fast.text_hash() == plain.text_hash()
    other = ToolProfile.from_checked({**values, "id": "b.weather"})
    assert other.parameters == fast.parameters and other.parameters is not fast.parameters  # a fresh default
    assert dataclasses.replace(fast, priority=5).priority == 5
    with pytest.raises(TypeError):  # missing or unknown fields: the dataclass's own error
        ToolProfile.from_checked({"id": "x", "name": "x"})
    with pytest.raises(TypeError):
        ToolProfile.from_checked({**values, "colour": "red"})
