"""The caller owns "may this caller see this tool?" and "which tool does this name mean?" (toolrag.catalog.caller):
the index's mask, the store's filter, the function names a caller is given, the names a text mentions and a
search's filters are all derived from it. Pure logic and the real search over a stub index (quick tier)."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from stub_index import stub_retriever

from toolrag.catalog.caller import Caller
from toolrag.catalog.lint import restricted_mentions
from toolrag.catalog.profile import Catalog, ToolProfile, codes_of, perm_key
from toolrag.errors import QueryError, ToolNotFound
from toolrag.index.filters import build_where, prune_where
from toolrag.search.request import prepare_request


def tool(tool_id: str, name: str, *, permissions: tuple[str, ...] = (), category: str = "general",
         deprecated: bool = False, description: str = "", replaced_by: str | None = None) -> ToolProfile:
    return ToolProfile(id=tool_id, name=name, description=description or f"Tool {tool_id} does its job well.",
                       permissions=permissions, category=category, deprecated=deprecated, replaced_by=replaced_by)


def test_a_hidden_tool_never_renames_a_visible_tools_function() -> None:
    """Two tools with the same name, one restricted: a caller without access gets the visible tool's name as a
    catalog without the hidden tool gives it, whichever comes first; it resolves there, and the hidden one does
    not (as an unknown name)."""
    for name in ("send_message", "send.message"):  # a valid function name, and one that must be derived
        public = tool("chat.send", name)
        secret = tool("admin.send", name, permissions=("admin",))
        for tools in ((secret, public), (public, secret)):
            both = Catalog(tools, roles={"admin": ("admin",)})
            alone = Catalog((public,))
            reader = Caller.of(both, role=None)
            seen = reader.function_names(both)
            assert set(seen) == {"chat.send"}
            assert seen["chat.send"] == Caller().function_names(alone)["chat.send"] == alone.function_name("chat.send")
            if name == "send_message":  # the original name two tools have: refused, whoever calls
                with pytest.raises(QueryError, match=r"by its id.*: chat\.send$"):
                    reader.resolve(both, seen["chat.send"])
            else:
                assert reader.resolve(both, seen["chat.send"]).id == "chat.send"
            admin = Caller.of(both, role="admin")
            names = admin.function_names(both)
            assert len(set(names.values())) == 2  # unique within what a caller sees
            # the tool everyone may use keeps its name for every caller: no name means another tool by role
            assert names["chat.send"] == seen["chat.send"]
            with pytest.raises(ToolNotFound):
                reader.resolve(both, names["admin.send"])


def test_function_names_are_kept_across_an_edit_only_while_nothing_they_depend_on_changes() -> None:
    a, b = tool("a", "lookup"), tool("b", "lookup", permissions=("x",))
    catalog = Catalog((a, b))
    author = Caller.author(catalog)
    assert author.function_names(catalog)["a"] == "lookup" and author.function_names(catalog)["b"] != "lookup"
    edited = catalog.with_tool(dataclasses.replace(b, permissions=()))  # now both need nothing: catalog order
    assert Caller.author(edited).function_names(edited) == {"a": "lookup", "b": author.function_names(catalog)["b"]}
    reworded = catalog.with_tool(dataclasses.replace(a, description="Looks things up, now better worded."))
    assert Caller.author(reworded).function_names(reworded) == author.function_names(catalog)


def _random_catalog(rng: random.Random) -> Catalog:
    codes = ["a", "b", "c"]
    tools = []
    for n in range(rng.randint(0, 12)):
        perms = tuple(sorted(rng.sample(codes, rng.randint(0, 2))))
        tools.append(tool(f"t{n}", f"name{n % 4}", permissions=perms, category=rng.choice(["x", "y", "z"]),
                          deprecated=rng.random() < 0.3))
    return Catalog(tuple(tools))


def _random_caller(rng: random.Random, catalog: Catalog) -> Caller:
    return Caller(frozenset(rng.sample(["a", "b", "c", "d"], rng.randint(0, 3))),
                  categories=rng.choice([None, frozenset(), frozenset({"x"}), frozenset({"y", "z"})]),
                  tools=rng.choice([None, frozenset(rng.sample(catalog.ids, len(catalog) // 2))]),
                  include_deprecated=rng.random() < 0.5)


def test_the_mask_and_the_store_filter_are_the_callers_own_answer() -> None:
    """The index's vectorised mask and the Chroma where-clause keep exactly the tools ``Caller.sees`` keeps
    (the clause leaves the tool allow-list to the mask)."""
    rng = random.Random(7)
    for _ in range(300):
        catalog = _random_catalog(rng)
        caller = _random_caller(rng, catalog)
        keys = sorted({t.perm_key for t in catalog.tools})
        key_of_row = np.array([keys.index(t.perm_key) for t in catalog.tools], dtype=np.int64)
        permitted, seen = caller.mask(perm_keys=keys, key_of_row=key_of_row,
                                      categories=np.array([t.category for t in catalog.tools], dtype=object),
                                      ids=catalog.ids, deprecated=np.array([t.deprecated for t in catalog.tools]))
        assert seen.tolist() == [caller.sees(t) for t in catalog.tools]
        assert permitted.tolist() == [caller.may_use(t) for t in catalog.tools]
        where = build_where(caller, keys)
        pruned = None if where is None else prune_where(where)
        for t in catalog.tools:
            meta = {"perm_key": t.perm_key, "category": t.category, "deprecated": t.deprecated}
            assert _matches(pruned, meta) == dataclasses.replace(caller, tools=None).sees(t)


def _matches(where: object, meta: dict[str, object]) -> bool:
    if where is None:
        return True
    if not isinstance(where, dict):  # prune_where's NOTHING
        return False
    ((key, value),) = where.items()
    if key == "$and":
        return all(_matches(w, meta) for w in value)
    ((op, operand),) = value.items()
    return meta[key] in operand if op == "$in" else meta[key] == operand


def test_a_permission_key_is_written_and_read_in_one_place() -> None:
    for codes in ((), ("b", "a"), ("a", "a", "c")):
        assert set(codes_of(perm_key(codes))) == set(codes)
    assert Caller(frozenset({"a"})).permitted_keys(["", "a", "a,b"]) == {"", "a"}
    assert Caller(frozenset({"a"})).lacks(["b", "a", "c"]) == ("b", "c")


def test_a_request_names_a_tool_without_case_and_never_a_hidden_one() -> None:
    public = tool("mail.send_v2", "sendMail")
    secret = tool("hr.payroll_approve", "approve_payroll", permissions=("hr",))
    plain = tool("web.search", "search")  # a plain word names no tool
    catalog = Catalog((public, secret, plain))
    reader, hr = Caller(), Caller(frozenset({"hr"}))
    text = "use SENDMAIL, then Approve_Payroll, then search"
    assert reader.mentioned(catalog, text) == ["mail.send_v2"]
    assert hr.mentioned(catalog, text) == ["mail.send_v2", "hr.payroll_approve"]
    twin = Catalog((tool("a.send", "send_mail"), tool("b.send", "Send_Mail")))
    assert Caller().mentioned(twin, "send_mail now") == []  # a name two visible tools share names neither


def test_lint_finds_a_restricted_tools_name_as_a_search_does() -> None:
    """The text of a tool everyone may use names a restricted tool, in another case: lint says so, naming the
    codes it lacks; a tool holding those codes is not warned."""
    secret = tool("hr.payroll_approve", "approve_payroll", permissions=("hr",))
    leaky = tool("hr.payroll_view", "view_payroll", description="Shows payroll; to approve it use APPROVE_PAYROLL.")
    peer = tool("hr.payroll_edit", "edit_payroll", permissions=("hr",),
                description="Edits payroll; approve_payroll approves it.")
    warnings = restricted_mentions(Catalog((secret, leaky, peer)))
    assert [(w.tool_id, w.code) for w in warnings] == [("hr.payroll_view", "names-restricted-tool")]
    assert "needs hr that this tool does not" in warnings[0].message


def test_a_successor_is_named_only_to_a_caller_who_may_use_it() -> None:
    new = tool("mail.send2", "send2", permissions=("mail",))
    old = tool("mail.send", "send", deprecated=True, replaced_by="mail.send2")
    catalog = Catalog((old, new))
    assert Caller().successor(catalog, old) is None
    assert Caller(frozenset({"mail"})).successor(catalog, old) == "mail.send2"


def test_include_deprecated_widens_a_given_caller() -> None:
    """``include_deprecated=True`` with ``caller=`` was silently ignored: the deprecated tool stayed hidden."""
    old = tool("files.copy_old", "copy_file_old", deprecated=True, description="Copy a file to another folder.")
    catalog = Catalog((old, tool("files.move", "move_file", description="Move a file to another folder.")))
    caller = Caller()
    assert prepare_request(catalog, "copy a file", caller=caller, include_deprecated=True).caller.include_deprecated
    retriever = stub_retriever(catalog)
    assert "files.copy_old" not in retriever.search("copy a file", caller=caller, audited=False).ids
    assert "files.copy_old" in retriever.search("copy a file", caller=caller, include_deprecated=True,
                                                 audited=False).ids


def test_a_search_names_tools_by_the_callers_function_names() -> None:
    """The same name on a restricted tool does not rename the tool a reader's search returns (result, prompt)."""
    public = tool("chat.send", "send.message", description="Send a chat message to a colleague.")
    secret = tool("admin.send", "send.message", permissions=("admin",),
                  description="Send a chat message to every colleague as the administrator.")
    alone = stub_retriever(Catalog((public,))).search("send a chat message", audited=False)
    both = stub_retriever(Catalog((secret, public))).search("send a chat message", audited=False)
    assert [c.function_name for c in both.candidates] == [c.function_name for c in alone.candidates]
    assert both.tools == alone.tools and both.prompt == alone.prompt


def test_resolution_refuses_a_shared_original_name_for_every_caller() -> None:
    a = tool("files/weather.current", "weather.current")
    b = tool("other/weather.current", "weather.current", permissions=("other",))
    catalog = Catalog((a, b))
    for caller in (Caller(), Caller(frozenset({"other"}))):
        with pytest.raises(QueryError, match="by its id"):
            caller.resolve(catalog, "weather.current")
    assert list(Caller().function_names(catalog)) == ["files/weather.current"]


def test_a_blank_role_is_refused_with_the_fix() -> None:
    """Issue 45: `role=""` silently meant no role in the library (the CLI already refused it)."""
    catalog = Catalog([ToolProfile.from_checked({"id": "a", "name": "a", "description": "A tool."})],
                      roles={"employee": ("x",)})
    for blank in ("", "  "):
        with pytest.raises(QueryError, match="is blank: give a role of the catalog \\(employee\\) or leave it out"):
            Caller.of(catalog, role=blank)
    assert Caller.of(catalog, role=None).role is None and Caller.of(catalog, role="employee").role == "employee"
