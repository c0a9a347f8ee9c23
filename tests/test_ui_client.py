"""The named API endpoints through ``gradio_client``, against the app served on a loopback port."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import ASSETS

pytest_plugins = ["ui_support"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(ui_server: Any) -> Any:
    from gradio_client import Client

    return Client(ui_server.url, verbose=False, download_files=False)


def test_search_with_text(client: Any, ui_server: Any) -> None:
    out = client.predict(query="what will the weather be like in Tokyo this weekend", image=None, role="employee",
                         top_k=3, api_name="/search")
    banner, table, _prompt, _tools, _tokens, _timings, _notes, raw, _history, unscored = out
    assert len(raw["candidates"]) <= 3 and raw["decision"] in banner
    assert "not scored:" in unscored and "ocr" in unscored and "ocr" not in table["headers"]
    assert [row[2] for row in table["data"]] == [c["id"] for c in raw["candidates"]]
    library = ui_server.backend.retriever.search("what will the weather be like in Tokyo this weekend",
                                                 role="employee", top_k=3)
    assert [c["id"] for c in raw["candidates"]] == library.ids
    assert "signals" in raw["candidates"][0] and "dense" in raw["candidates"][0]["signals"]


def test_search_with_an_image(client: Any) -> None:
    from gradio_client import handle_file

    out = client.predict(query="", image=handle_file(str(ASSETS / "queries" / "receipt_dinner.png")),
                         role="employee", api_name="/search")
    raw = out[7]
    assert raw["candidates"] and any(note.startswith("OCR read") for note in raw["notes"])


def test_save_profile_moves_the_rank(client: Any, ui_server: Any) -> None:
    query = "查一下上海到北京明天的高铁余票"
    tool_id = "web.news.latest"
    text, _, _, version = client.predict(tool_id=tool_id, api_name="/profile")
    edited = text.replace("examples:\n", f"examples:\n  - query: {query}\n", 1)
    status, new_text, *_ = client.predict(tool_id=tool_id, yaml_text=edited, rank_query=query,
                                          base_version=version, api_name="/save_profile")
    found = re.search(r"Rank for “.*”: (#\d+|not ranked) → #(\d+)", status)
    assert found, status
    before = int(found.group(1)[1:]) if found.group(1).startswith("#") else 10_000
    assert int(found.group(2)) < before
    assert query in new_text and query in Path(ui_server.backend.catalog.get(tool_id).source).read_text("utf-8")


def test_invalid_yaml_is_refused_and_the_file_is_unchanged(client: Any, ui_server: Any) -> None:
    from gradio_client.exceptions import AppError

    tool = ui_server.backend.retriever.index.catalog.get("comm.email.send")
    before = Path(tool.source).read_bytes()
    snapshot = ui_server.backend.retriever.index.snapshot
    version = client.predict(tool_id="comm.email.send", api_name="/profile")[3]
    with pytest.raises(AppError, match="invalid YAML"):
        client.predict(tool_id="comm.email.send", yaml_text="id: comm.email.send\n  name: [oops",
                       rank_query="", base_version=version, api_name="/save_profile")
    assert Path(tool.source).read_bytes() == before
    assert ui_server.backend.retriever.index.snapshot is snapshot


def test_tool_space_endpoint(client: Any) -> None:
    plot, info, pairs = client.predict(threshold=0.9, api_name="/tool_space")
    assert plot["type"] == "plotly" and "look-alike pair" in info
    assert pairs["headers"][:3] == ["tool A", "tool B", "cosine"]
