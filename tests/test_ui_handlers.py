"""The playground's handlers called directly, with the real models on a copy of the sample catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from conftest import ASSETS

from toolrag.evaluation import projection
from toolrag.settings import SIGNALS, Settings
from toolrag.ui import Backend
from toolrag.ui import format as fmt
from toolrag.ui.handlers import MAX_IMAGE_MB, SEARCH_OUTPUTS, Handlers

pytest_plugins = ["ui_support"]
pytestmark = pytest.mark.slow

BASE = Settings()
WEIGHTS = [BASE.weights[s] for s in SIGNALS]


def controls(**changes: Any) -> list[Any]:
    """The search inputs in the order the app wires them (after query and image)."""
    values = {"role": "admin", "categories": [], "top_k": 5, "fusion": "late", "rerank": False,
              "precision_target": 85.0, "clean_target": 85.0}
    values.update({k: v for k, v in changes.items() if k != "weights"})
    return [*values.values(), *changes.get("weights", WEIGHTS)]


@pytest.fixture(scope="module")
def h(ui_backend: Backend) -> Handlers:
    return Handlers(ui_backend)


def test_handlers_refuse_work_until_the_index_is_ready(ui_catalog: Path) -> None:
    idle = Handlers(Backend(ui_catalog))  # never started
    with pytest.raises(gr.Error, match="still indexing"):
        idle.search("帮我报销", None, *controls(), [])
    with pytest.raises(gr.Error, match="still indexing"):
        idle.tool_space(0.9, {})
    with pytest.raises(gr.Error, match="still indexing"):
        idle.save_profile("web.news.latest", "id: x")
    assert "waiting to start — 0%" in idle.b.status_html() and not idle.b.ready


def test_wait_ready_reports_ready_and_unavailable_signals(h: Handlers) -> None:
    status, image_note, _rerank, *sliders = list(h.wait_ready())[-1]
    assert "ready" in status and str(len(h.b.require().catalog)) in status
    assert len(sliders) == len(SIGNALS)
    notes = h.b.require().signal_notes()
    for signal, update in zip(SIGNALS, sliders, strict=True):
        assert update["info"] == fmt.signal_info(signal, notes)
    if "clip" in notes:
        assert "unavailable" in sliders[SIGNALS.index("clip")]["info"] and "clip" in image_note


def test_search_returns_every_view_and_keeps_a_small_history(h: Handlers) -> None:
    history: list[dict[str, Any]] = []
    for i in range(fmt.HISTORY_SIZE + 2):
        out = h.search(f"帮我报销这张餐饮发票 {i}", None, *controls(), history)
        banner, table, _prompt, _tools, tokens, timings, _notes, raw, history, history_df, last, unscored = out
    assert raw["decision"] in banner and len(table.data) == len(raw["candidates"]) <= 5
    # a text request: the image signals scored no candidate, so they fold into one line under the table
    assert last["scored"] == [s for s in SIGNALS if fmt.signal_column(s) in table.data.columns]
    assert "ocr" not in last["scored"] and "ocr" in unscored and "no image" in unscored
    shown, sized = h.result_views(last)
    assert shown["visible"] and sized["visible"] and len(shown["column_widths"]) == len(table.data.columns)
    assert list(table.data["id"]) == [c["id"] for c in raw["candidates"]]
    assert "schema tokens" in tokens and "ms total" in timings
    assert len(history) == fmt.HISTORY_SIZE and history[-1]["query"].endswith(str(fmt.HISTORY_SIZE + 1))
    assert history_df.iloc[0]["query"] == history[-1]["query"]
    assert last["query"].endswith(str(fmt.HISTORY_SIZE + 1)) and last["top"] == list(table.data["id"])


def test_banner_shows_the_probabilities_and_the_reason(h: Handlers) -> None:
    banner, *_ = h.search("给我讲个笑话", None, *controls(), [])
    assert 'data-decision="NO_TOOL"' in banner and "P(no tool)" in banner and "P(right)" in banner
    assert "no tool:" in banner  # the reason, in words


def test_the_decision_models_trade_off_and_reliability(h: Handlers) -> None:
    fig, table = h.reliability(90.0)
    assert fig.layout.title.text.startswith("P(right) on held-out training sources")
    assert len(fig.data) == 2 and len(fig.data[1].x) >= 3  # the diagonal and the bins
    model = h.b.retriever.decider.model
    assert model.version in table and "| 90% (now) |" in table  # the slider's target is marked
    precision_points = [p for p in model.trained["tradeoff"] if p.get("kind", "precision") == "precision"]
    assert table.count("\n| ") == len(precision_points) + 1  # a row per precision target, the header


def test_the_clean_target_slider_moves_the_decision(h: Handlers) -> None:
    """A request the model doubts a tool serves (P(no tool) about 0.74 on the sample catalog): kept clean at a 95%
    clean target, asked about with its candidates at 60% (P(no tool) thresholds about 0.40 and 0.90)."""
    query = "check my account"
    out = h.search(query, None, *controls(clean_target=60.0), [])
    low, low_last = out[7], out[10]
    high = h.search(query, None, *controls(clean_target=95.0), [])[7]
    assert low_last["settings"]["clean_target"] == 0.6  # the slider's percent reaches the settings as a share
    assert low["decision"] == "CLARIFY" and low["selected"] and "60%" in low["decision_reason"]
    assert high["decision"] == "NO_TOOL" and not high["selected"]
    assert high["probabilities"] == low["probabilities"]  # the same distribution, read at another operating point


def test_moving_a_weight_reranks_without_reencoding(h: Handlers, monkeypatch: pytest.MonkeyPatch) -> None:
    query = "把这张发票的金额读出来然后报销"
    text_model = h.b.retriever.analyzer.models.text
    first = h.search(query, None, *controls(top_k=10), [])[7]
    calls: list[Any] = []
    original = text_model.encode_queries
    monkeypatch.setattr(text_model, "encode_queries", lambda texts: calls.append(texts) or original(texts))
    only_bm25 = [1.0 if s == "bm25" else 0.0 for s in SIGNALS]
    second = h.rerun(query, None, *controls(top_k=10, weights=only_bm25), [])[7]
    assert calls == []  # the query vector came from the cache
    assert [c["id"] for c in first["candidates"]] != [c["id"] for c in second["candidates"]]
    bm25 = [c["signals"]["bm25"]["raw"] for c in second["candidates"]]
    assert bm25 == sorted(bm25, reverse=True)  # bm25 alone now decides the order


def test_rerun_does_nothing_before_a_query(h: Handlers) -> None:
    out = h.rerun("", None, *controls(), [])
    assert len(out) == SEARCH_OUTPUTS and all(isinstance(o, type(gr.skip())) for o in out)


def test_role_filters_restricted_tools(h: Handlers) -> None:
    query = "批准本月的工资发放"
    admin = h.search(query, None, *controls(role="admin", top_k=10), [])[7]
    guest = h.search(query, None, *controls(role=fmt.GUEST, top_k=10), [])[7]
    restricted = {t.id for t in h.b.retriever.index.catalog.tools if t.permissions}
    assert restricted & {c["id"] for c in admin["candidates"]}
    assert not restricted & {c["id"] for c in guest["candidates"]}


def test_bad_input_is_a_toast(h: Handlers, tmp_path: Path) -> None:
    with pytest.raises(gr.Error, match="empty query"):
        h.search("   ", None, *controls(), [])
    text_file = tmp_path / "notes.png"
    text_file.write_text("this is not an image", encoding="utf-8")
    with pytest.raises(gr.Error, match="cannot use this image"):
        h.search("报销", str(text_file), *controls(), [])
    big = tmp_path / "big.png"
    big.write_bytes(b"\0" * (MAX_IMAGE_MB * 1_000_000 + 1))
    with pytest.raises(gr.Error, match="limit"):
        h.search("报销", str(big), *controls(), [])
    with pytest.raises(gr.Error, match="unknown category"):
        h.search("报销", None, *controls(categories=["nope"]), [])
    # the app keeps working after errors
    assert h.search("报销", None, *controls(), [])[7]["candidates"]


def test_image_search_reads_the_receipt(h: Handlers) -> None:
    receipt = str(ASSETS / "queries" / "receipt_dinner.png")
    raw = h.search("", receipt, *controls(), [])[7]
    assert raw["candidates"] and any(n.startswith("OCR read") for n in raw["notes"])
    assert "visual" in {s for c in raw["candidates"] for s in c["signals"]}


def test_tool_space_draws_the_last_query_and_lists_lookalikes(h: Handlers) -> None:
    last = h.search("book a meeting room for tomorrow 3pm", None, *controls(), [])[10]
    fig, info, pairs = h.tool_space(0.9, last)
    names = [t.name for t in fig.data]
    assert "query" in names and any(n.startswith("query → top-") for n in names)
    snap = h.b.retriever.index.snapshot
    expected = projection.lookalike_pairs(snap.vectors["dense"], list(snap.ids), threshold=0.9)
    assert len(pairs) == len(expected) and f"{len(expected)} look-alike pair(s)" in info
    assert f"look-alike pairs ({len(expected)})" in names
    fig, _, _ = h.tool_space(0.99, {})
    assert "query" not in [t.name for t in fig.data]


def test_profile_handlers(h: Handlers) -> None:
    text, info, _images, version = h.pick_tool("comm.email.send")
    assert text.startswith("id: comm.email.send") and "communication.yaml" in info and len(version) == 16
    assert "valid" in h.validate_profile("comm.email.send", text)
    with pytest.raises(gr.Error, match="invalid YAML"):
        h.validate_profile("comm.email.send", text + "  bad: [\n")
    last = h.search("帮我发一封邮件给张三，主题是项目延期", None, *controls(top_k=5), [])[10]
    edited = text.replace("examples:\n", "examples:\n  - query: 帮我发一封邮件给张三，主题是项目延期\n", 1)
    with pytest.raises(gr.Error, match="no base_version"):
        h.save_profile("comm.email.send", edited, "", last)
    status, new_text, tool_update, catalog_df, *_, new_version = h.save_profile("comm.email.send", edited, "",
                                                                                last, version)
    assert status.startswith("✓ Saved `comm.email.send`") and "→" in status and new_version != version
    with pytest.raises(gr.Error, match="changed in communication.yaml after you opened it"):
        h.save_profile("comm.email.send", text, "", last, version)  # based on the version before the save
    for act in (lambda: h.save_profile("comm.email.sned", text, "", last, version),  # an id that never existed
                lambda: h.delete_profile("comm.email.sned", "", last, version)):
        with pytest.raises(gr.Error, match="no tool has id 'comm.email.sned'") as unknown:
            act()
        assert "deleted after you opened it" not in unknown.value.message
    assert "项目延期" in new_text and tool_update["value"] == "comm.email.send"
    assert len(catalog_df) == len(h.b.retriever.index.catalog)
    template, tool_value, _note, no_version = h.new_tool("travel")
    assert tool_value["value"] is None and "id: travel.new_tool" in template and no_version == ""
    status, *_, added_version = h.save_profile(None, template, "", {})
    assert status.startswith("✓ Added `travel.new_tool`")
    row, question = h.ask_delete("travel.new_tool")
    assert row["visible"] and "travel.new_tool" in question
    *outputs, row = h.delete_profile("travel.new_tool", "", {}, added_version)
    assert outputs[0].startswith("✓ Deleted") and not row["visible"]
    assert h.b.retriever.index.catalog.get("travel.new_tool") is None
    with pytest.raises(gr.Error, match="pick a tool"):
        h.ask_delete(None)


def test_the_normalisation_control_reaches_the_retriever(h: Handlers) -> None:
    query = "把这张发票的金额读出来然后报销"
    shipped = h.search(query, None, *controls(top_k=10), [])[7]  # no choice: the shipped z-scores
    minmax = h.search(query, None, *controls(top_k=10), [], "minmax")[7]

    def norms(raw: dict[str, Any]) -> list[float]:
        return [s["norm"] for c in raw["candidates"] for s in c["signals"].values()]

    assert norms(minmax) and all(0.0 <= v <= 1.0 for v in norms(minmax))
    assert any(v < 0.0 or v > 1.0 for v in norms(shipped))
    with pytest.raises(gr.Error, match="normalization 'cosine' is not one of"):
        h.search(query, None, *controls(), [], "cosine")


def test_refused_requests_log_one_line_and_show_no_temporary_path(caplog: pytest.LogCaptureFixture) -> None:
    """The probe: the app's log held a full traceback for each of 103 refused calls, and messages showed where
    the server keeps uploads."""
    import logging
    import tempfile

    from toolrag.errors import QueryError
    from toolrag.ui.guard import guard

    upload = f"{tempfile.gettempdir()}/gradio/0a1b2c/receipt.png"

    @guard
    def refuse(kind: str) -> None:
        if kind == "toolrag":
            raise QueryError(f"cannot read {upload}: not an image")
        if kind == "toast":
            raise gr.Error(f"the image {upload} is too large")
        raise KeyError(upload)

    caplog.set_level(logging.INFO, logger="toolrag.ui.guard")
    for kind in ("toolrag", "toast"):
        caplog.clear()
        with pytest.raises(gr.Error) as refused:
            refuse(kind)
        assert refused.value.print_exception is False  # Gradio prints no traceback for it
        assert tempfile.gettempdir() not in refused.value.message and "receipt.png" in refused.value.message
        assert [(r.levelname, r.exc_info) for r in caplog.records] == [("INFO", None)]
        assert "refuse refused:" in caplog.records[0].getMessage()
    caplog.clear()
    with pytest.raises(gr.Error) as failed:  # a bug is still a server error, with its traceback in the log
        refuse("bug")
    assert tempfile.gettempdir() not in failed.value.message
    assert caplog.records[0].levelname == "ERROR" and caplog.records[0].exc_info is not None


def test_no_message_names_a_path_under_gradios_own_upload_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """GRADIO_TEMP_DIR may lie outside the system's temporary folder (a server's own disk): its paths are cut too."""
    from toolrag.ui.guard import public

    monkeypatch.setenv("GRADIO_TEMP_DIR", "/srv/uploads")
    assert public("cannot use this image: /srv/uploads/9f3e/fake.png is not an image") == \
        "cannot use this image: fake.png is not an image"
    monkeypatch.delenv("GRADIO_TEMP_DIR")
    assert public("/srv/uploads/9f3e/fake.png") == "/srv/uploads/9f3e/fake.png"  # not an upload folder then
