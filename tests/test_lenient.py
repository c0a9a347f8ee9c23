"""Imported catalogs as published: lenient loading, original names, function names, schema drafts.

Strict where the author is in control (YAML), lenient where the catalog is imported (OpenAI, MCP, JSON Lines):
every usable tool loads, each dropped field or skipped tool is a warning naming tool, field and reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolrag.catalog.caller import Caller
from toolrag.catalog.loader import load_catalog, load_records
from toolrag.catalog.names import FUNCTION_NAME, assign_function_names, derive_function_name
from toolrag.catalog.schema import check_schema, detect_draft
from toolrag.errors import CatalogError, ProfileError
from toolrag.settings import Settings

LONG = "x" * 195 + ".tool"  # 200 characters, as some real servers emit

# Names taken from public catalogs that the old loader refused (Seal-Tools, a REST API catalog, MCP servers).
ODD_NAMES = ["getPM2.5Level", "Sales_Excl._Tax", "get_rates.", "___x", "requestFirst Aid Assistance",
             "github/create_issue", "fs.read_file", LONG]


def openai(name: Any, description: Any = "Does a useful thing for the user", parameters: Any = None) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": name, "description": description}
    if parameters is not None:
        fn["parameters"] = parameters
    return {"type": "function", "function": fn}


def write(folder: Path, name: str, data: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_odd_names_load_and_get_valid_unique_function_names(tmp_path: Path) -> None:
    file = write(tmp_path, "tools.json", [openai(n) for n in [*ODD_NAMES, "get_rates_"]])
    catalog = load_catalog(file)
    assert catalog.ids == [*ODD_NAMES, "get_rates_"] and catalog.report.clean
    assert [t.name for t in catalog] == catalog.ids  # the original name, what tools/call needs
    names = [catalog.function_name(i) for i in catalog.ids]
    assert all(FUNCTION_NAME.match(n) for n in names) and len(set(names)) == len(names)
    assert catalog.function_name("get_rates_") == "get_rates_"  # a valid name keeps itself
    assert catalog.function_name("get_rates.").startswith("get_rates_") and catalog.function_name("get_rates.") != \
        "get_rates_"
    for tool_id, name in zip(catalog.ids, names, strict=True):
        assert Caller.author(catalog).resolve(catalog, name).id == tool_id  # the way back
        assert catalog.get(tool_id).openai_tool(name)["function"]["name"] == name  # type: ignore[union-attr]
    # Deterministic: loading again gives the same names.
    assert [load_catalog(file).function_name(i) for i in catalog.ids] == names


def test_function_names_are_collision_free() -> None:
    # Two tools with the same valid name (two servers' "search"), a derived name that equals a valid one.
    derived = derive_function_name("a.b")
    pairs = [("s1/search", "search"), ("s2/search", "search"), ("x", "a.b"), ("y", derived), ("z", "a_b")]
    names = assign_function_names(pairs)
    assert names["s1/search"] == "search" and names["y"] == derived and names["z"] == "a_b"
    assert len(set(names.values())) == 5 and all(FUNCTION_NAME.match(n) for n in names.values())
    assert names == assign_function_names(pairs)


def test_lenient_import_drops_bad_fields_and_skips_unusable_tools(tmp_path: Path) -> None:
    rows = [
        {"id": "ok.tool", "description": "Fine", "tags": ["a"]},
        {"id": "bad.tags", "description": "Tags are a number", "tags": 3, "category": "x"},
        {"id": "no.description"},
        {"description": "no id at all"},
        {"id": "ok.tool", "description": "a duplicate id"},
        {"id": "bad.key", "description": "Unknown key", "exmaples": ["x"]},
    ]
    text = "\n".join(json.dumps(r) for r in rows) + "\n{not json\n"
    catalog = load_catalog(write(tmp_path, "tools.jsonl", text))
    assert catalog.ids == ["ok.tool", "bad.tags", "no.description", "bad.key"]
    bad = catalog.get("bad.tags")
    assert bad is not None and bad.tags == () and bad.category == "x"  # only the bad field is dropped
    unnamed = catalog.get("no.description")  # kept, described by its name, so requests can still find it
    assert unnamed is not None and unnamed.description == "No description"
    report = catalog.report
    assert (report.loaded, report.skipped, report.degraded) == (4, 3, 3)
    joined = "\n".join(report.warnings)
    assert "tools.jsonl:2: tool 'bad.tags': field 'tags': expected a list, got int; field dropped" in joined
    assert "tool 'no.description': field 'description': is required; using 'No description'" in joined
    assert "tool without id: field 'id': is required; tool skipped" in joined
    assert "duplicate tool id 'ok.tool'" in joined and "kept the first" in joined
    assert "field 'exmaples': unknown key; did you mean 'examples'?; field dropped" in joined
    assert "tools.jsonl:7: invalid JSON" in joined
    assert report.summary() == "4 tools loaded, 3 skipped, 3 degraded"


def test_strict_flag_refuses_an_import_and_lists_every_problem(tmp_path: Path) -> None:
    file = write(tmp_path, "tools.json", [openai("a", parameters="not a schema"), openai("b", description=None),
                                         openai("c")])
    assert load_catalog(file).ids == ["a", "b", "c"]  # leniently, b is described by its name
    with pytest.raises(ProfileError) as exc:
        load_catalog(file, mode="strict")
    assert len(exc.value.problems) == 2
    assert "tool 'a': field 'parameters': expected a JSON Schema object" in str(exc.value.problems[0])
    assert "tool 'b': field 'description': is required" in str(exc.value.problems[1])
    assert [(p.tool, p.field) for p in exc.value.problems] == [("a", "parameters"), ("b", "description")]


def test_yaml_is_strict_by_default_and_lenient_on_request(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: d\n  tags: 3\n- id: b\n  description: e\n")
    with pytest.raises(ProfileError, match="field 'tags': expected a list"):
        load_catalog(tmp_path)
    catalog = load_catalog(tmp_path, mode="lenient")
    assert catalog.ids == ["a", "b"] and catalog.report.degraded == 1
    with pytest.raises(ValueError, match="mode 'loose' is not one of auto, strict, lenient"):
        load_catalog(tmp_path, mode="loose")


@pytest.mark.parametrize("schema", ["a string", ["a", "list"], 42, {"type": "string"}, {"type": "objekt"}])
def test_schemas_that_are_not_objects_are_dropped_on_import(tmp_path: Path, schema: Any) -> None:
    catalog = load_catalog(write(tmp_path, "m.json", {"tools": [
        {"name": "t", "description": "A tool", "inputSchema": schema}, {"name": "u", "description": "Another"}]}))
    assert catalog.ids == ["t", "u"] and catalog.report.degraded == 1
    tool = catalog.get("t")
    assert tool is not None and tool.parameters.get("type", "object") == "object"
    assert not tool.parameters.get("properties")
    assert "tool 't': field 'parameters'" in catalog.report.warnings[0]


def test_invalid_keywords_are_dropped_not_the_whole_schema(tmp_path: Path) -> None:
    # Seal-Tools as published: Python type names where JSON Schema wants its own.
    params = {"type": "object", "properties": {"city": {"type": "str", "description": "the city"},
                                               "days": {"type": "int", "minimum": 1}}, "required": ["city"]}
    catalog = load_catalog(write(tmp_path, "o.json", [openai("getWeather", parameters=params)]))
    tool = catalog.get("getWeather")
    assert tool is not None
    assert tool.parameters == {"type": "object", "properties": {"city": {"description": "the city"},
                                                                "days": {"minimum": 1}}, "required": ["city"]}
    assert "city" in tool.lexical_text() and "the city" in tool.lexical_text()
    assert catalog.report.degraded == 1 and len(catalog.report.warnings) == 2
    assert "tool 'getWeather': field 'parameters': dropped properties/city/type ('str' is not valid" in \
        "\n".join(catalog.report.warnings)


def test_mcp_tool_without_input_schema_and_flat_openai_entries(tmp_path: Path) -> None:
    mcp = {"tools": [{"name": "ping", "description": "Check the server answers"}]}
    assert load_catalog(write(tmp_path, "m.json", mcp)).get("ping") is not None
    flat = [{"type": "function", "name": "get.time", "description": "Current time", "parameters": {"type": "object"}}]
    assert load_catalog(write(tmp_path, "f.json", flat)).ids == ["get.time"]


def test_schema_drafts_are_detected() -> None:
    assert detect_draft({"$schema": "http://json-schema.org/draft-04/schema#"}) == "4"
    assert detect_draft({"$schema": "https://json-schema.org/draft/2019-09/schema"}) == "2019-09"
    assert detect_draft({"type": "object", "properties": {"n": {"type": "number", "exclusiveMinimum": True}}}) == "4"
    assert detect_draft({"type": "object", "properties": {"n": {"exclusiveMinimum": 0}}}) == "7"
    assert detect_draft({"type": "array", "prefixItems": [{"type": "string"}]}) == "2020-12"
    assert detect_draft({"type": "object", "$defs": {"a": {}}}) == "2020-12"
    assert detect_draft({"type": "object", "if": {}, "then": {}}) == "7"
    # A property *named* like a draft-4 keyword is not a draft-4 form.
    assert detect_draft({"type": "object", "properties": {"exclusiveMinimum": {"type": "boolean"}}}) == "7"
    # Draft-4 forms are valid as draft 4, invalid under the default draft 7.
    draft4 = {"type": "object", "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}}
    assert check_schema(draft4, lenient=False).problems == ()
    declared7 = {**draft4, "$schema": "http://json-schema.org/draft-07/schema#"}
    assert "exclusiveMinimum" in check_schema(declared7, lenient=False).problems[0]


def test_draft4_schema_without_schema_key_loads_strictly(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: ___x\n  description: Counts things\n  parameters: {type: object, properties: "
                              "{n: {type: number, minimum: 0, exclusiveMinimum: true}}}\n")
    tool = load_catalog(tmp_path).get("___x")
    assert tool is not None and tool.parameters["properties"]["n"]["exclusiveMinimum"] is True


def test_negative_examples_in_both_shapes(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- id: a\n  description: d\n  negative_examples: [plain string, {query: like an example}]"
                              "\n")
    assert load_catalog(tmp_path).get("a").negative_examples == (  # type: ignore[union-attr]
        "plain string", "like an example")
    write(tmp_path, "t.yaml", "- id: a\n  description: d\n  negative_examples: [{qeury: typo}]\n")
    with pytest.raises(ProfileError, match="negative_examples': item 0: unknown key 'qeury'"):
        load_catalog(tmp_path)


def test_load_records_builds_a_catalog_in_memory() -> None:
    catalog = load_records([{"name": "fs.read", "description": "Read a file", "inputSchema": {"type": "object"}},
                            {"name": "fs.stat"}, {"name": "fs.bad", "description": ["not", "text"]}],
                           name="files", where="server 'files'")
    assert catalog.ids == ["fs.read", "fs.stat"] and catalog.report.skipped == 1
    assert "server 'files' #2: tool 'fs.stat': field 'description': is required; using 'Fs stat'" in \
        catalog.report.warnings[0]
    with pytest.raises(CatalogError, match="server 'files': no tools to load"):
        load_records([{"name": ""}], name="files", where="server 'files'")


def test_settings_file_null_turns_the_english_model_off(tmp_path: Path) -> None:
    file = tmp_path / "s.yaml"
    file.write_text("english_model: null\ntop_k: 3\n", encoding="utf-8")
    settings = Settings.from_yaml(file)
    assert settings.english_model is None and settings.top_k == 3
    file.write_text("english_model: off\n", encoding="utf-8")
    assert Settings.from_yaml(file).english_model is None


def test_canonical_schema_keys_are_exact() -> None:
    import datetime
    import json
    import math

    from toolrag.jsonio import canonical

    # Key order and separators do not matter; values do, and every key parses back to its value.
    assert canonical({"b": 1, "a": [1.5, "é"]}) == canonical({"a": [1.5, "é"], "b": 1})
    values = [{"minimum": math.nan}, {"minimum": None}, {"minimum": math.inf}, {"n": 2 ** 70}, {"n": 2 ** 70 + 1},
              {1: "int key"}, {"x": 1}, {"x": 1.0}, {"x": True}, {"x": "\ud800"}]
    keys = [canonical(v) for v in values]
    assert len(set(keys)) == len(values)  # NaN, null and infinity, big ints, 1 / 1.0 / true: never one key
    for value, key in zip(values[3:], keys[3:], strict=True):
        back = json.loads(key)
        assert back == {str(k): v for k, v in value.items()}  # JSON keys are strings, as json.dumps writes them
        assert [type(v) for v in back.values()] == [type(v) for v in value.values()]  # 2 ** 70 stays an int
    with pytest.raises(TypeError):
        canonical({"default": datetime.date(2024, 1, 1)})  # YAML reads an unquoted date as a date: not JSON
    # An invalid value found through the fast key gives the same problem as through the standard one.
    assert check_schema({"type": "object", "properties": {"n": {"type": "str"}}}, lenient=False).problems
    assert check_schema({"type": "object", "properties": {"n": {"type": "str"}}, "x": None},
                        lenient=False).problems


@pytest.mark.parametrize(("tags", "found"), [('["ok", " "]', "' '"), ('["ok", 7]', "7"), ('[null]', "None")])
def test_tags_must_be_non_empty_strings(tmp_path: Path, tags: str, found: str) -> None:
    write(tmp_path, "t.jsonl", '{"id": "a", "description": "d", "tags": ' + tags + '}\n')
    with pytest.raises(ProfileError, match=rf"t.jsonl:1: tool 'a': field 'tags': expected a list of non-empty "
                                           rf"strings, found {found}"):
        load_catalog(tmp_path, mode="strict")
    lenient = load_catalog(tmp_path)  # JSON Lines read leniently by default: the field is dropped
    assert lenient.tools[0].tags == () and "field 'tags'" in lenient.report.warnings[0]
    write(tmp_path, "t.jsonl", '{"id": "a", "description": "d", "tags": [" spaced ", "x"]}\n')
    assert load_catalog(tmp_path, mode="strict").tools[0].tags == ("spaced", "x")


def test_mcp_tools_without_a_description_are_kept_and_described_by_name_or_title(tmp_path: Path) -> None:
    listed = {"tools": [
        {"name": "list_files", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"},
                                                                                "recursive": {"type": "boolean"}}}},
        {"name": "read_file", "title": "Read a file", "description": " ", "inputSchema": {"type": "object"}},
        {"name": "getWeatherNow", "description": None},
        {"name": "bad_type", "description": 5},  # a wrong type is still an error, not a missing description
    ]}
    catalog = load_catalog(write(tmp_path, "server.json", listed))
    described = {t.id: t.description for t in catalog.tools}
    assert described == {"list_files": "List files (path, recursive)", "read_file": "Read a file",
                         "getWeatherNow": "Get Weather Now"}
    assert catalog.report.degraded == 2 and catalog.report.skipped == 1  # the title is the server's own words
    assert any("tool 'bad_type': field 'description': expected a non-empty string, got 5; tool skipped" in w
               for w in catalog.report.warnings)
    with pytest.raises(ProfileError, match="tool 'list_files': field 'description': is required"):
        load_catalog(tmp_path / "server.json", mode="strict")
