"""One view of the decision for training and serving: a catalog searched on its own gives exactly what a caller that
sees only those tools inside a bigger catalog gets (``bench.decision_train`` searches its episodes as such a
caller, through ``ToolRetriever.search`` itself). And hidden means absent: tools a caller cannot see change
nothing it gets."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog

pytestmark = pytest.mark.slow

#: Tools of the sample catalog that every caller may use, English and Chinese, with look-alikes among them.
PICK = ("office.calendar.create_event", "office.meeting_room.book", "travel.weather.current",
        "travel.weather.forecast", "finance.invoice.verify", "finance.invoice.extract_fields", "web.page.summarize")
REQUESTS = [
    ("book a meeting room for 3pm tomorrow", ()),
    ("will it rain in Berlin this weekend", ()),
    ("帮我报销这张餐饮发票", ()),
    ("summarize https://example.com/pricing", ()),
    ("make it 4pm instead", ("schedule a call with Tom tomorrow at 3pm",)),
    ("tell me a joke", ()),
]


def _plain(result: Any) -> dict[str, Any]:
    """A result as JSON without its timings, and the features it read (NaN made comparable)."""
    out = result.to_json()
    out.pop("timing_ms")
    out["features"] = {k: ("nan" if isinstance(v, float) and math.isnan(v) else v)
                       for k, v in result.decision_features.items()}
    out["candidate_features"] = [{k: ("nan" if math.isnan(v) else v) for k, v in row.items()}
                                 for row in result.candidate_features]
    return out


@pytest.fixture(scope="module")
def alone(sample_retriever: Any, models: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from toolrag.search.retriever import ToolRetriever

    catalog = sample_retriever.catalog
    assert all(catalog.get(i) is not None and not catalog.get(i).permissions for i in PICK), "PICK: anyone may use"
    own = Catalog(tuple(t for t in catalog.tools if t.id in PICK), name=catalog.name, root=catalog.root,
                  assets_dir=catalog.assets_dir, roles=catalog.roles)
    return ToolRetriever.from_catalog(own, data_dir=tmp_path_factory.mktemp("alone"), models=models)


@pytest.mark.parametrize(("query", "history"), REQUESTS)
def test_a_catalog_alone_and_as_visible_tools_give_the_same_result(sample_retriever: Any, alone: Any, query: str,
                                                                  history: tuple[str, ...]) -> None:
    inside = sample_retriever.search(query, history=history, caller=Caller(tools=frozenset(PICK)), audited=False)
    own = alone.search(query, history=history, audited=False)
    # only the count of tools the caller's tool filter set aside differs (it names no tool and moves no score)
    assert own.filtered_out == 0 and inside.filtered_out > 0
    assert {**_plain(inside), "filtered_out": 0} == _plain(own)


def test_hidden_tools_change_nothing_a_caller_gets(sample_retriever: Any, models: Any, tmp_path: Path) -> None:
    """Four tools only an admin may use, sharing the requests' words (English and Chinese) and one a visible
    tool's name, added to the catalog: an employee's results are identical to the last printed digit."""
    import dataclasses

    from toolrag.search.retriever import ToolRetriever

    catalog = sample_retriever.catalog
    extra = [dataclasses.replace(catalog.get("office.meeting_room.book"), id=f"admin.secret.{n}", name=f"secret_{n}",
                                 description=text, permissions=("admin.only",), examples=())
             for n, text in enumerate(["Book meeting rooms and calendar events for tomorrow at 3pm, weather in Berlin",
                                       "报销 餐饮 发票 审批 财务 管理", "Summarize web pages and tell jokes"])]
    # one more, first in the catalog, with the very name of a tool the employee sees: its function name stays
    twin = dataclasses.replace(catalog.get("office.meeting_room.book"), id="admin.secret.room",
                               permissions=("admin.only",), examples=())
    bigger = Catalog((twin, *catalog.tools, *extra), name=catalog.name, root=catalog.root,
                     assets_dir=catalog.assets_dir, roles={**catalog.roles, "admin": ("admin.only",)})
    with_hidden = ToolRetriever.from_catalog(bigger, data_dir=tmp_path, models=models)
    for query, history in REQUESTS:
        before = sample_retriever.search(query, history=history, role="employee", audited=False)
        after = with_hidden.search(query, history=history, role="employee", audited=False)
        assert _plain(before) == _plain(after), query
