"""Decisions through the real retriever: the bundled catalog's decision model is fitted for real (simulated
requests from the catalog itself, the bundled no-tool requests, real e5 + MiniLM + BM25), then the cases of
issue 10 run as a user would run them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toolrag.errors import QueryError
from toolrag.search.decision_model import DecisionModel
from toolrag.search.features import FEATURES
from toolrag.search.results import Decision, DecisionSource

pytestmark = pytest.mark.slow  # real models or a real Chroma index

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def test_model_is_fitted_from_the_catalog_and_stored(sample_retriever: Any, data_dir: Path) -> None:
    model = sample_retriever.decision_model()
    cases = model.summary["cases"]
    # every kind of simulated request is there: left-out examples, the same with their tool removed, the
    # bundled no-tool requests (330, English and Chinese), requests between look-alikes and two-tool requests
    assert cases["example"] >= 100 and cases["removed"] == cases["example"] and cases["no_tool"] >= 300
    assert cases.get("vague", 0) >= 5 and cases.get("pair", 0) >= 20
    assert 0.0 <= model.execute_floor <= 1.0 and 0.7 < model.reference["example_cosine"] < 1.0
    assert 0.0 < model.clarify_max_gap < 1.0  # the upper quartile of the leads among its simulated ambiguous requests
    stored = data_dir / "decisions" / f"{model.key}.json"
    assert stored.is_file()
    again = DecisionModel.from_json(stored.read_text(encoding="utf-8"))
    assert again is not None and np.allclose(again.tool_coef, model.tool_coef)
    # the coefficients are readable: one per feature and class
    assert set(model.coefficients()["tool"]) == set(FEATURES)


def test_simulated_requests_get_the_vectors_a_search_gets(sample_retriever: Any) -> None:
    # The two models encode the simulated requests side by side; each vector must still be exactly what that
    # model gives the request alone, as in a search (the English model reads a mostly-Chinese request's gloss).
    from toolrag.search import simulate
    from toolrag.search.gloss import english_reading

    snap, models = sample_retriever.index.snapshot, sample_retriever.models
    requests = simulate.build_requests(snap, np.flatnonzero(~snap.deprecated), lambda t: len(t.split()),
                                       sample_retriever.decisions.chat_texts())
    chat = sample_retriever.decisions.chat_vectors()
    encoders = {"dense": models.text.encode_queries, "dense_en": models.english.encode_queries}
    vectors = simulate._vectors(snap, requests, encoders, chat, lambda t: len(t.split()))
    encoded = [i for i, r in enumerate(requests) if r.kind not in ("no_tool", "pair")][:40]
    texts = [requests[i].text for i in encoded]
    np.testing.assert_array_equal(vectors["dense"][encoded], models.text.encode_queries(texts))
    english = [i for i, t in zip(encoded, texts, strict=True) if not np.isnan(vectors["dense_en"][i]).any()]
    assert len(english) == len(encoded)  # every request has an English reading (the gloss of a Chinese one)
    assert np.array_equal(vectors["dense_en"][english],
                          models.english.encode_queries([english_reading(requests[i].text) for i in english]))
    for i in encoded:  # a search of the same text gets the same English vector
        read = sample_retriever.analyzer.analyze(requests[i].text, settings=sample_retriever.settings)
        assert np.array_equal(read.vectors["dense_en"], vectors["dense_en"][i]), requests[i].text
    # the bundled no-tool requests are encoded side by side the same way (a calibrator without a cache folder)
    from toolrag.search.calibration import DecisionCalibrator

    fresh = DecisionCalibrator(models)
    fresh_chat, texts = fresh.chat_vectors(), fresh.chat_texts()
    np.testing.assert_array_equal(fresh_chat["dense"], chat["dense"])
    np.testing.assert_array_equal(fresh_chat["dense"][:20], models.text.encode_queries(list(texts[:20])))
    readable = [i for i in range(40) if not fresh.chat_cjk()[i]]
    assert readable and np.array_equal(fresh_chat["dense_en"][readable],
                                       models.english.encode_queries([texts[i] for i in readable]))
    chinese = np.flatnonzero(fresh.chat_cjk())[:20]  # the English model reads their gloss, as in a search
    assert len(chinese) and np.array_equal(fresh_chat["dense_en"][chinese],
                                           models.english.encode_queries([english_reading(texts[i]) for i in chinese]))


def test_no_tool_request_vectors_are_encoded_once_per_model_not_per_data_folder(
        sample_retriever: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two indexes in two data folders share the bundled no-tool requests' vectors, cached beside the built
    models: the second calibrator reads them and encodes nothing."""
    import dataclasses

    from toolrag.config import DATA_DIR_ENV
    from toolrag.search.calibration import DecisionCalibrator

    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "shared"))
    models = sample_retriever.models
    first = DecisionCalibrator(models, folder=tmp_path / "one" / "decisions").chat_vectors()
    cached = sorted(p.name for p in (tmp_path / "shared" / "models" / "no-tool-requests").iterdir())
    assert len(cached) == 2 and all(n.startswith("chat-") and n.endswith(".npy") for n in cached)

    class Refuses:
        def __init__(self, model: Any) -> None:
            self.fingerprint = model.fingerprint

        def encode_queries(self, texts: list[str]) -> np.ndarray:
            raise AssertionError(f"encoded {len(texts)} no-tool requests again")

    refusing = dataclasses.replace(models, text=Refuses(models.text), english=Refuses(models.english))
    second = DecisionCalibrator(refusing, folder=tmp_path / "two" / "decisions").chat_vectors()
    assert second.keys() == first.keys() == {"dense", "dense_en"}
    for signal in first:
        np.testing.assert_array_equal(second[signal], first[signal])
    assert not (tmp_path / "two").exists()  # nothing written into the second index's folder


def test_simulated_requests_read_a_web_address_as_a_search_does(sample_retriever: Any) -> None:
    # The bundled catalog has example requests with an address ("summarize https://blog.example.com/..."): the
    # simulation reads them as a search does ("the web page URL"), and the tool's texts lose the example as written.
    from toolrag.search import simulate
    from toolrag.decision.addresses import ADDRESS_STAND_IN, has_web_address

    snap = sample_retriever.index.snapshot
    requests = simulate.build_requests(snap, np.flatnonzero(~snap.deprecated), lambda t: len(t.split()), ())
    with_address = [r for r in requests if r.kind == "example" and has_web_address(r.left_out[0][1])]
    assert len(with_address) >= 2
    for request in with_address:
        assert ADDRESS_STAND_IN in request.text and not has_web_address(request.text)
        read = sample_retriever.analyzer.analyze(request.left_out[0][1], settings=sample_retriever.settings)
        assert read.text == request.text


def test_model_key_follows_catalog_and_weights(sample_retriever: Any) -> None:
    snap = sample_retriever.index.snapshot
    base = sample_retriever.decisions.key(snap, sample_retriever.settings)
    other = sample_retriever.settings.with_overrides(weights={"bm25": 0.5})
    assert sample_retriever.decisions.key(snap, other) != base
    assert sample_retriever.decisions.key(snap, sample_retriever.settings) == base


def test_model_key_follows_the_tokenisation(sample_retriever: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # a model fitted on other BM25 tokens is refitted, not reused (the saved index is rebuilt likewise)
    from toolrag.search import calibration

    snap, settings = sample_retriever.index.snapshot, sample_retriever.settings
    base = sample_retriever.decisions.key(snap, settings)
    monkeypatch.setattr(calibration, "LEXICAL_VERSION", calibration.LEXICAL_VERSION + 1)
    sample_retriever.decisions._last_key = None  # the key of the last (snapshot, weights) is kept
    assert sample_retriever.decisions.key(snap, settings) != base


def test_model_key_follows_the_keyword_texts(sample_retriever: Any) -> None:
    # The key reads each tool's keyword text: its profile's text and the text read in its example images. A
    # change to either refits the model.
    from dataclasses import replace

    from toolrag.search.calibration import DecisionCalibrator

    snap, settings = sample_retriever.index.snapshot, sample_retriever.settings
    base = DecisionCalibrator(sample_retriever.index.models).key(snap, settings)
    plain = next(r for r, t in enumerate(snap.catalog.tools) if snap.bm25_texts[r] == t.lexical_text())
    read = next(r for r, t in enumerate(snap.catalog.tools) if snap.bm25_texts[r] != t.lexical_text())

    def key_with(texts: tuple[str, ...]) -> str:
        return DecisionCalibrator(sample_retriever.index.models).key(replace(snap, bm25_texts=texts), settings)

    texts = list(snap.bm25_texts)
    texts[read] += " receipt"  # other text read in an example image
    assert key_with(tuple(texts)) != base
    assert key_with(tuple(snap.bm25_texts)) == base
    tools = list(snap.catalog.tools)
    edited = replace(tools[plain], parameters={"type": "object", "properties": {
        "cost_centre": {"type": "string", "description": "the cost centre to charge"}}})
    assert edited.lexical_text() != tools[plain].lexical_text()
    tools[plain] = edited
    texts = list(snap.bm25_texts)
    texts[plain] = edited.lexical_text()
    changed = replace(snap, catalog=replace(snap.catalog, tools=tuple(tools)), bm25_texts=tuple(texts))
    assert DecisionCalibrator(sample_retriever.index.models).key(changed, settings) != base


@pytest.mark.parametrize("query", [
    "delete the account of the intern who left",
    "pay the supplier invoice from ACME for March",
])
def test_best_tool_hidden_by_permissions_gives_no_tool(sample_retriever: Any, query: str) -> None:
    result = sample_retriever.search(query, role="employee")
    hidden = {"it.account.delete_user", "it.account.disable_user", "finance.payment.pay_vendor"}
    assert not hidden & set(result.ids)
    assert result.decision is Decision.NO_TOOL, (result.ids[:3], result.decision_reason)
    assert result.decision_reason.startswith("no tool") and result.tools == () and result.selected == ()


@pytest.mark.parametrize(("query", "caller"), [
    ("approve my team's pending leave requests", {"role": "employee"}),
    ("roll back payment-svc in prod to yesterday's build", {"role": "employee"}),
    # book a flight, by a caller with no permission codes (travel.flight.book needs travel.book, which every
    # role has): the flight search ranks first and only reads
    ("订一张明天北京飞上海的机票", {"permissions": ()}),
])
def test_a_request_of_change_is_not_sent_to_a_tool_that_only_reads(sample_retriever: Any, query: str,
                                                                  caller: dict[str, Any]) -> None:
    """No tool approves leave, and the tools that roll a deploy back or book a flight are hidden from these
    callers; the permitted reader on the same topic ranks first and used to be called (docs/decisions.md,
    ``change_reader``)."""
    result = sample_retriever.search(query, **caller)
    assert not {"dev.deploy.rollback", "hr.payroll.approve", "travel.flight.book"} & set(result.ids)
    assert result.decision is Decision.NO_TOOL, (result.ids[:3], result.decision_reason)
    assert "only reads" in result.decision_reason and result.selected == ()


@pytest.mark.parametrize(("query", "placeholder"), [
    ("schedule something", "something"),  # the case: the model alone gave P(right) 0.50 and called it
    ("处理一下这张发票", "处理一下"),
])
def test_vague_request_asks(sample_retriever: Any, query: str, placeholder: str) -> None:
    result = sample_retriever.search(query, role="employee")
    assert result.decision is Decision.CLARIFY, (result.ids[:3], result.decision_reason)
    assert result.clarification and result.candidates[0].name in result.clarification
    assert len(result.selected) >= 2
    assert result.decision_reason.startswith(f'asks: the request leaves open what it is about ("{placeholder}")')


def test_look_alike_request_asks(sample_retriever: Any) -> None:
    # two weather tools (current, forecast) both fit "check the weather"
    result = sample_retriever.search("check the weather")
    assert result.decision is Decision.CLARIFY, (result.ids[:3], result.decision_reason)
    assert {"travel.weather.current", "travel.weather.forecast"} <= set(result.selected)
    assert result.clarification and result.decision_reason.startswith("asks")


def test_error_screenshot_injects_the_explain_error_tool(sample_retriever: Any) -> None:
    # The ranking still puts create_it_ticket first here (its English profile gets MiniLM's vote, the Chinese
    # explain_error profile cannot: docs/decisions.md); the decision must not leave explain_error out.
    result = sample_retriever.search("what does this error mean and how do I fix it",
                                     image=ASSETS / "queries" / "error_503.png", role="employee")
    assert result.decision is not Decision.NO_TOOL, result.decision_reason
    assert "dev.error.explain" in result.selected, (result.ids[:3], result.selected, result.decision_reason)


def test_a_joke_needs_no_tool(sample_retriever: Any) -> None:
    result = sample_retriever.search("给我讲个笑话")
    assert result.decision is Decision.NO_TOOL
    assert result.scores is not None and result.scores.no_tool > 0.5
    assert "no tool" in result.decision_reason


@pytest.mark.parametrize("query", ["🤖🧾💸🔥🔥🔥", "\u200b\u200b\u200b", "\u200d🔥\ufeff"])
def test_requests_without_meaning_need_no_tool(sample_retriever: Any, query: str) -> None:
    # readable characters, but no letter or digit: nothing a tool could act on
    result = sample_retriever.search(query)
    assert result.decision is Decision.NO_TOOL, result.decision_reason
    assert result.tools == () and result.selected == () and "no letters or digits" in result.decision_reason


@pytest.mark.parametrize("query", ["\x00\x00\x00", "\x07\x1b\x7f"])
def test_requests_of_control_characters_only_are_refused(sample_retriever: Any, query: str) -> None:
    # NUL and other control characters are cleaned away before any model runs (toolrag.search.request);
    # with nothing readable left the request is a caller's mistake, said so, not a decision
    with pytest.raises(QueryError, match="holds no readable text"):
        sample_retriever.search(query)


def test_a_named_tool_comes_first(sample_retriever: Any) -> None:
    result = sample_retriever.search("use get_weather_forecast for Paris")
    assert result.ids[0] == "travel.weather.forecast" and result.decision is Decision.EXECUTE
    assert "names it" in result.decision_reason and result.selected == ("travel.weather.forecast",)
    assert result.decided_by is DecisionSource.NAMED_TOOL and result.to_json()["decided_by"] == "named_tool"
    by_id = sample_retriever.search("please run travel.weather.forecast for Paris")
    assert by_id.ids[0] == "travel.weather.forecast"


def test_naming_a_hidden_tool_reveals_nothing(sample_retriever: Any) -> None:
    result = sample_retriever.search("use pay_vendor_invoice for the ACME invoice", role="employee")
    assert "finance.payment.pay_vendor" not in result.ids
    assert "pay_vendor_invoice" not in result.decision_reason and "names" not in result.decision_reason
    payload = json.dumps(result.to_json(), ensure_ascii=False)
    assert "finance.payment.pay_vendor" not in payload


def test_result_says_why_and_what_to_inject(sample_retriever: Any) -> None:
    result = sample_retriever.search("set up a 30-minute meeting with Tom tomorrow at 10am and invite him")
    assert result.scores is not None and result.decision_reason
    assert result.decided_by is DecisionSource.MODEL and result.to_json()["decided_by"] == "model"
    total = result.scores.ambiguous + result.scores.no_tool
    assert 0.0 <= result.scores.right <= 1.0 - result.scores.no_tool + 1e-9 and total <= 1.0 + 1e-9
    assert 1 <= len(result.selected) <= len(result.candidates)
    assert [t["function"]["name"] for t in result.tools] == [c.name for c in result.candidates[: len(result.selected)]]
    assert result.tokens.selected <= result.tokens.candidates <= result.tokens.all
    payload = result.to_json()
    assert payload["decision_reason"] == result.decision_reason
    assert set(payload["probabilities"]) == {"right", "ambiguous", "no_tool"}
    assert payload["selected"] == list(result.selected) and "candidates" in payload["tokens"]
    assert set(result.decision_features) == set(FEATURES)
    assert result.timing_ms["decision"] >= 0.0


def test_labelled_rows_refine_the_model(small_retriever: Any) -> None:
    from toolrag.evaluation.queries import QueryRow

    before = small_retriever.decision_model()
    rows = [QueryRow("book a room for the team at 3pm", ("calendar.book",), expect=Decision.EXECUTE),
            QueryRow("what's the capital of Peru", (), expect=Decision.NO_TOOL),
            QueryRow("weather in Rome", ("weather.current", "weather.forecast"), expect=Decision.CLARIFY)]
    try:
        refined = small_retriever.refine_decisions(rows)
        assert refined.summary["labelled"] == 3 and refined.key == before.key
        assert small_retriever.decision_model() is refined
    finally:
        small_retriever.decisions.fit(small_retriever.index.snapshot, small_retriever.settings)


def test_an_edit_refits_the_decision_model_in_the_background(small_retriever: Any) -> None:
    import dataclasses

    calibrator = small_retriever.decisions
    before = small_retriever.decision_model()
    catalog = small_retriever.catalog
    tool = catalog.tools[0]
    edited = dataclasses.replace(tool, description=tool.description + " Also for team calendars.")
    try:
        small_retriever.reload(catalog.with_tool(edited))
        # until the refit is done the previous model answers; a search never waits for the refit
        assert small_retriever.decision_model().key in {before.key, calibrator.key(small_retriever.index.snapshot,
                                                                                   small_retriever.settings)}
        assert small_retriever.search("book a room at 3pm").scores is not None
        calibrator.wait(120)
        after = small_retriever.decision_model()
        assert after.key == calibrator.key(small_retriever.index.snapshot, small_retriever.settings)
        assert after.key != before.key  # the catalog's text changed, so did the model's key
    finally:
        small_retriever.reload(catalog)
        calibrator.wait(120)
    assert small_retriever.decision_model().key == before.key


@pytest.fixture(scope="module")
def one_tool_retriever(tmp_path_factory: pytest.TempPathFactory, models: Any) -> Any:
    from toolrag.search.retriever import ToolRetriever

    folder = tmp_path_factory.mktemp("one-tool")
    (folder / "tools.json").write_text(json.dumps({"tools": [{
        "name": "get_weather", "description": "Current weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}),
        encoding="utf-8")
    return ToolRetriever.from_catalog(folder, data_dir=folder / "data", models=models)


@pytest.mark.parametrize(("query", "expected"), [
    ("what's the weather in Paris", Decision.EXECUTE),
    ("will it rain in Berlin tomorrow", Decision.EXECUTE),
    ("巴黎现在天气怎么样", Decision.EXECUTE),
    ("tell me a joke", Decision.NO_TOOL),
    ("给我讲个笑话", Decision.NO_TOOL),
    ("delete all my files", Decision.NO_TOOL),
])
def test_a_lone_tool_is_called_only_for_requests_about_it(one_tool_retriever: Any, query: str,
                                                           expected: Decision) -> None:
    # One tool (a one-tool MCP server, or a caller whose permissions leave one): the decision model cannot
    # read a result of one, so the request is measured against the bundled requests that need no tool. It used
    # to call the tool for anything ("tell me a joke" -> get_weather).
    result = one_tool_retriever.search(query)
    assert result.decision is expected, result.decision_reason
    assert "only candidate" in result.decision_reason and "(z " in result.decision_reason
    assert list(result.selected) == (["get_weather"] if expected is Decision.EXECUTE else [])


@pytest.fixture(scope="module")
def three_tool_retriever(tmp_path_factory: pytest.TempPathFactory, models: Any) -> Any:
    from toolrag.search.retriever import ToolRetriever

    folder = tmp_path_factory.mktemp("three-tools")
    string = {"type": "string"}
    tools = [("get_weather", "Current weather for a city.", {"city": string}),
             ("send_email", "Send an email to a recipient.", {"to": string, "body": string}),
             ("create_calendar_event", "Create an event in the user's calendar.", {"title": string, "start": string})]
    (folder / "tools.json").write_text(json.dumps({"tools": [
        {"name": name, "description": text, "inputSchema": {"type": "object", "properties": props}}
        for name, text, props in tools]}), encoding="utf-8")
    return ToolRetriever.from_catalog(folder, data_dir=folder / "data", models=models)


@pytest.mark.parametrize(("query", "expected", "tool"), [
    ("is it raining in London right now", Decision.EXECUTE, "get_weather"),
    ("what's the forecast for Berlin", Decision.EXECUTE, "get_weather"),
    ("create an event called Sprint review next Thursday", Decision.EXECUTE, "create_calendar_event"),
    ("tell me a joke", Decision.NO_TOOL, None),
    ("delete all my files", Decision.NO_TOOL, None),
])
def test_a_catalog_of_a_few_tools_is_decided_on_its_top_tool(three_tool_retriever: Any, query: str,
                                                             expected: Decision, tool: str | None) -> None:
    # Three tools (like many MCP servers): the decision model fitted on three tools' simulated requests answered
    # the first two NO_TOOL and asked about the third; the top tool's standing against the bundled no-tool
    # requests decides instead (python -m bench.small_catalogs).
    result = three_tool_retriever.search(query)
    assert result.decision is expected, result.decision_reason
    assert "3 tools are permitted" in result.decision_reason and "(z " in result.decision_reason
    assert (result.selected[0] if result.selected else None) == tool


_EDIT_THEN_EXIT = """
import dataclasses, sys
from toolrag.config import configure_environment
configure_environment(offline=True)
from toolrag.search.retriever import ToolRetriever
retriever = ToolRetriever.from_catalog(sys.argv[1], data_dir=sys.argv[2])
tool = retriever.catalog.tools[0]
retriever.reload(retriever.catalog.with_tool(dataclasses.replace(tool, description=tool.description + " Edited.")))
print(retriever.decisions.key(retriever.index.snapshot, retriever.settings))
"""


def test_a_process_that_exits_right_after_an_edit_still_stores_the_refitted_model(small_catalog_dir: Path,
                                                                               tmp_path: Path) -> None:
    # The refit runs in a thread the process waits for at exit; by then concurrent.futures refuses new work,
    # and the refit's side-by-side encoding must not fail on it ("refitting ... failed" and nothing stored).
    import subprocess
    import sys

    data = tmp_path / "data"
    done = subprocess.run([sys.executable, "-c", _EDIT_THEN_EXIT, str(small_catalog_dir), str(data)],
                          capture_output=True, encoding="utf-8", timeout=600,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "failed" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    key = done.stdout.strip().splitlines()[-1]
    assert (data / "decisions" / f"{key}.json").is_file()


def test_lookalike_pairs_are_found_block_by_block(sample_retriever: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory stays bounded for large catalogs: the nearest neighbours are found a block of rows at a time,
    with the same pairs as the whole similarity matrix."""
    from toolrag.search import sim_requests

    snap = sample_retriever.index.snapshot
    allowed = np.arange(len(snap.ids))
    whole = sim_requests.lookalikes(snap, allowed)
    monkeypatch.setattr(sim_requests, "_SIM_BLOCK", 7)  # 78 tools: 12 blocks, the last one partial
    blocked = sim_requests.lookalikes(snap, allowed)
    assert [(a, b) for a, b, _ in blocked] == [(a, b) for a, b, _ in whole]
    assert np.allclose([c for *_, c in blocked], [c for *_, c in whole], atol=1e-5)  # BLAS blocking rounds
    dense = snap.vectors["dense"]
    sims = dense @ dense.T
    np.fill_diagonal(sims, -np.inf)
    a, b, cosine = whole[0]  # the closest pair is each other's nearest neighbour: check it by hand
    assert np.isclose(cosine, sims.max()) and {a, b} == set(np.unravel_index(int(sims.argmax()), sims.shape))
    monkeypatch.setattr(sim_requests, "MAX_LOOKALIKE_TOOLS", 20)  # a large catalog: 20 probes, evenly spaced
    sampled = sim_requests.lookalikes(snap, allowed)
    assert 3 <= len(sampled) <= len(whole) and all(s <= whole[0][2] + 1e-6 for _, _, s in sampled)
