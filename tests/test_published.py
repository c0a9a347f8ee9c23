"""A published index's parts: the catalog as JSON and back, a version's data packed and checked, the version id,
the names and settings refused with a clear error, the metrics' text; and, on a real (embedded) Chroma, the
manifest, complete versions, the versions kept, and build leases taken over when they expire.

The same behaviour runs end to end with a Chroma server and ``toolrag`` processes in tests/test_replicas.py.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import ASSETS, SAMPLE

from toolrag.catalog.loader import load_catalog
from toolrag.catalog.wire import catalog_from_json, catalog_to_json
from toolrag.config import index_name, seconds_setting
from toolrag.env_vars import INDEX_POLL_ENV
from toolrag.errors import SettingsError, StoreError
from toolrag.index.published import KEEP_VERSIONS, PublishedIndex, check_index_name, pack, unpack, version_of
from toolrag.index.serving import SavedState
from toolrag.version import __version__


def _state(n: int = 3) -> SavedState:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(n, 4)).astype(np.float32)
    return SavedState(
        fingerprint="", ids=tuple(f"t{i}" for i in range(n)), vectors={"dense": vectors}, image_ids=(),
        image_vectors={}, ocr_texts={}, image_text=np.zeros((0, 4), np.float32), english=np.ones(n, bool),
        bm25={"terms": np.arange(n, dtype=np.int32), "docs": np.arange(n, dtype=np.int32),
              "tf": np.ones(n, np.float32), "lengths": np.ones(n, np.float32), "keys": np.arange(n, dtype=np.int64),
              "vocab": ["a", "b", "c"], "k1": 1.2, "b": 0.75}, ann={})


def test_a_catalog_travels_as_json_without_paths_of_this_machine(tmp_path: Path) -> None:
    catalog = load_catalog(SAMPLE)
    data = catalog_to_json(catalog)
    text = json.dumps(data, ensure_ascii=False)
    assert str(SAMPLE.parent) not in text and str(ASSETS) not in text
    back = catalog_from_json(json.loads(text))
    assert back.name == catalog.name and back.roles == catalog.roles and back.root is None
    for before, after in zip(catalog.tools, back.tools, strict=True):
        assert (after.id, after.text_hash(), after.lexical_text(), after.perm_key, dict(after.parameters)) == (
            before.id, before.text_hash(), before.lexical_text(), before.perm_key, dict(before.parameters))
        assert [i.path for i in after.images] == [i.path for i in before.images]
    # The same catalog in another folder is the same JSON, so the same version.
    copy = tmp_path / "elsewhere"
    shutil.copytree(SAMPLE, copy / "sample_tools")
    shutil.copytree(ASSETS, copy / "assets")
    assert catalog_to_json(load_catalog(copy / "sample_tools")) == data
    with pytest.raises(ValueError, match="format 99"):
        catalog_from_json({**data, "format": 99})


def test_a_version_is_packed_checked_and_named_by_its_sources() -> None:
    state = _state()
    blob = pack(name="tools", version="v1", catalog_json={"format": 1}, state=state,
                collections={"dense": "toolrag-dense-x"})
    meta, back = unpack(blob)
    assert meta["collections"] == {"dense": "toolrag-dense-x"} and meta["catalog"] == {"format": 1}
    assert back.ids == state.ids and np.array_equal(back.vectors["dense"], state.vectors["dense"])
    assert back.bm25["vocab"] == ["a", "b", "c"] and np.array_equal(back.bm25["keys"], state.bm25["keys"])
    with pytest.raises(ValueError, match="cannot be read"):
        unpack(b"not a version")
    one = version_of({"tools": [{"id": "a", "description": "x"}]}, [], {"dense": "c"})
    assert one == version_of({"tools": [{"id": "a", "description": "x"}]}, [], {"dense": "c"}) and len(one) == 16
    assert one != version_of({"tools": [{"id": "a", "description": "y"}]}, [], {"dense": "c"})
    assert one != version_of({"tools": [{"id": "a", "description": "x"}]}, ["a#0123"], {"dense": "c"})
    assert one != version_of({"tools": [{"id": "a", "description": "x"}]}, [], {"dense": "other-model"})


def test_names_and_settings_are_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    assert check_index_name("tools-prod_2") == "tools-prod_2"
    for bad in ("", "-x", "a b", "x" * 65, "tools/prod"):
        with pytest.raises(SettingsError, match="--index tools-prod"):
            check_index_name(bad)
    monkeypatch.setenv("TOOLRAG_INDEX", " tools ")
    assert index_name(None) == "tools" and index_name("other") == "other"
    monkeypatch.setenv(INDEX_POLL_ENV, "0.5")
    assert seconds_setting(INDEX_POLL_ENV, 2.0) == 0.5
    for bad in ("0", "-1", "soon", "inf"):
        monkeypatch.setenv(INDEX_POLL_ENV, bad)
        with pytest.raises(SettingsError, match=f"{INDEX_POLL_ENV}=.*positive number of seconds"):
            seconds_setting(INDEX_POLL_ENV, 2.0)


def test_metrics_are_prometheus_text_without_the_request() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from toolrag.observe import metrics

    result = SimpleNamespace(decision=SimpleNamespace(value="EXECUTE"), decided_by=SimpleNamespace(value="model"),
                             timing_ms={"encode_text": 12.0, "score": 1.0, "fusion": 0.5, "decision": 2.0,
                                        "total": 16.0}, query="secret request text")
    metrics.record_search(result, role="employee")
    metrics.record_call("refused", role=None, seconds=0.01)
    metrics.record_upstream("files", error="timeout")
    body, content_type = metrics.render({"index": "tools", "version": "abc", "tools": 8, "serial": 3,
                                         "ready": True, "decision_model": "2026-12-07-x"})
    text = body.decode()
    assert content_type.startswith("text/plain") and "secret" not in text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    key = ("toolrag_searches_total", (("decided_by", "model"), ("decision", "EXECUTE"), ("role", "employee")))
    assert samples[key] >= 1
    assert samples[("toolrag_search_seconds_count", (("stage", "encode"),))] >= 1
    assert samples[("toolrag_calls_total", (("outcome", "refused"), ("role", "none")))] >= 1
    assert samples[("toolrag_upstream_errors_total", (("kind", "timeout"), ("server", "files")))] >= 1
    assert samples[("toolrag_index_info", (("index", "tools"), ("version", "abc")))] == 1
    assert samples[("toolrag_index_tools", (("index", "tools"),))] == 8 and samples[("toolrag_ready", ())] == 1
    assert samples[("toolrag_build_info", (("decision_model", "2026-12-07-x"), ("version", __version__)))] == 1
    assert metrics.stage_times({"encode_text": 3.0, "encode_image": 4.0, "decision": 1.0}) == [
        ("encode", 7.0), ("decide", 1.0)]


@pytest.mark.slow
def test_manifest_versions_and_leases_on_a_real_chroma(tmp_path: Path) -> None:
    from toolrag.index.client import StoreConfig, open_client

    index = PublishedIndex(open_client(StoreConfig(path=tmp_path / "chroma")), "tools")
    assert index.manifest().version is None
    blob = b"x" * 7_000_001  # three chunks
    with pytest.raises(StoreError, match="not complete"):
        index.flip("v0", tools=1)
    index.write("v0", blob)
    assert index.complete("v0") and index.read("v0") == blob
    versions = [f"v{n}" for n in range(KEEP_VERSIONS + 3)]
    for n, version in enumerate(versions):
        if version != "v0":
            index.write(version, version.encode())
        manifest = index.flip(version, tools=n)
        assert (manifest.version, manifest.serial) == (version, n + 1) and index.manifest() == manifest
    kept = index.manifest().kept
    assert kept == tuple(reversed(versions))[: KEEP_VERSIONS + 1]
    assert not index.complete("v0") and index.complete(kept[-1])  # older versions deleted, kept ones not
    # A chunk changed under a reader: refused by its checksum, never served.
    collection = index.client.get_collection(index.data_name(kept[0]), embedding_function=None)
    collection.update(ids=["chunk-00000"], metadatas=[{"data": "AAAA"}])
    with pytest.raises(StoreError, match="checksum"):
        index.read(kept[0])

    # Leases: one holder at a time; an expired one is taken over, and its holder learns it lost it.
    first = index.acquire("v9", owner="a", ttl=0.6, heartbeat=False)  # a holder that stalls: no renewal
    assert first is not None and index.acquire("v9", owner="b", ttl=5, heartbeat=False) is None
    assert first.renew() and index.lease_holder("v9")[0] == "a"  # type: ignore[index]
    time.sleep(0.8)
    second = index.acquire("v9", owner="b", ttl=5, heartbeat=False)
    assert second is not None and index.lease_holder("v9")[0] == "b"  # type: ignore[index]
    assert not first.renew()
    with pytest.raises(StoreError, match="lease to build version v9 .* was lost"):
        first.check()
    first.release()
    assert index.lease_holder("v9")[0] == "b"  # type: ignore[index]  # the loser leaves the new lease alone
    second.release()
    assert index.lease_holder("v9") is None


@pytest.mark.slow
def test_expired_leases_of_versions_never_pushed_are_removed(tmp_path: Path) -> None:
    """A builder killed before its flip, whose folder is never pushed again: its lease (and half-written data)
    is removed at the next lease taken or flip, not left on the server; a live lease and complete data stay."""
    from toolrag.index.client import StoreConfig, open_client

    index = PublishedIndex(open_client(StoreConfig(path=tmp_path / "chroma")), "tools")
    names = lambda: {c.name for c in index.client.list_collections()}  # noqa: E731
    dead = index.acquire("dead0", owner="host:1:killed", ttl=0.3, heartbeat=False)
    index.client.create_collection(index.data_name("dead0"), metadata={"complete": False}, embedding_function=None)
    flipped = index.acquire("dead1", owner="host:2:killed", ttl=0.3, heartbeat=False)
    index.write("dead1", b"complete but never flipped")
    alive = index.acquire("alive", owner="host:3:building", ttl=60, heartbeat=False)
    assert dead is not None and flipped is not None and alive is not None
    time.sleep(0.5)
    taken = index.acquire("next", owner="host:4:new", ttl=60, heartbeat=False)  # a lease taken sweeps
    assert taken is not None
    assert index.lease_holder("dead0") is None and index.lease_holder("dead1") is None
    assert index.data_name("dead0") not in names() and index.complete("dead1")  # complete data may still be flipped
    assert index.lease_holder("alive") is not None and index.lease_holder("next") is not None
    # the same at a flip
    late = index.acquire("dead2", owner="host:5:killed", ttl=0.3, heartbeat=False)
    assert late is not None
    time.sleep(0.5)
    index.write("v1", b"x")
    index.flip("v1", tools=1)
    assert index.lease_holder("dead2") is None and index.lease_holder("alive") is not None
