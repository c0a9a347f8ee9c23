"""Tests of toolrag.index.store against real Chroma (embedded folder and a `chroma run` server), no mocks.

Expected results come from numpy brute-force cosine search over the same vectors, never from the store.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import perm_key
from toolrag.errors import SettingsError, StoreError
from toolrag.index.client import StoreConfig, chroma_url, open_client
from toolrag.index.filters import build_where, matches_nothing
from toolrag.index.store import Hit, VectorCollection, collection_name

try:
    from chroma_server import ChromaServer, free_port, running_chroma_server
except ImportError:  # tests/ imported as a package
    from tests.chroma_server import ChromaServer, free_port, running_chroma_server

DIM = 32
N = 50
PERM_KEYS = ["", "hr.payroll", "finance.approve,hr.payroll", "it.admin"]
CATEGORIES = ["hr", "finance", "it"]


def _unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    x = rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _rows(seed: int = 0) -> tuple[list[str], np.ndarray, list[dict[str, Any]]]:
    rng = np.random.default_rng(seed)
    ids = [f"tool_{i:02d}" for i in range(N)]
    metas = [
        {
            "tool_id": tid,
            "perm_key": PERM_KEYS[i % len(PERM_KEYS)],
            "category": CATEGORIES[i % len(CATEGORIES)],
            "deprecated": i % 5 == 0,
            "mutation": i % 2 == 0,
        }
        for i, tid in enumerate(ids)
    ]
    return ids, _unit(rng, N), metas


def _brute(ids: list[str], vecs: np.ndarray, q: np.ndarray, k: int, keep: list[bool] | None = None):
    sims = vecs.astype(np.float64) @ (q / np.linalg.norm(q))
    order = [i for i in np.argsort(-sims, kind="stable") if keep is None or keep[i]][:k]
    return [ids[i] for i in order], [float(sims[i]) for i in order]


def _check_hits(hits: list[Hit], k: int, want_ids: list[str], want_sims: list[float]) -> None:
    assert len(hits) <= k
    sims = [h.similarity for h in hits]
    assert sims == sorted(sims, reverse=True)
    assert [h.id for h in hits] == want_ids
    np.testing.assert_allclose(sims, want_sims, atol=1e-5)


def _satisfies(
    meta: Mapping[str, Any], keys: set[str] | None, cats: set[str] | None, deprecated: bool
) -> bool:
    return (
        (keys is None or meta["perm_key"] in keys)
        and (cats is None or meta["category"] in cats)
        and (deprecated or meta["deprecated"] is False)
    )


def _round_trip(client: Any, name: str) -> None:
    """Upsert / query / filter / re-upsert / delete on one collection; shared by embedded and server tests."""
    ids, vecs, metas = _rows()
    col = VectorCollection(client, name, dim=DIM, fingerprint="fp-round-trip")
    assert col.count() == 0
    col.upsert(ids, vecs, metas)
    assert col.count() == N
    rng = np.random.default_rng(1)
    for q in _unit(rng, 5):
        for k in (1, 7, N + 10):
            _check_hits(col.query(q, k=k), k, *_brute(ids, vecs, q, k))
    q = _unit(rng, 1)[0]
    where = build_where(Caller(frozenset({"hr.payroll"}), categories=frozenset({"hr", "it"})), PERM_KEYS)
    keep = [_satisfies(m, {"", "hr.payroll"}, {"hr", "it"}, False) for m in metas]
    hits = col.query(q, k=5, where=where)
    _check_hits(hits, 5, *_brute(ids, vecs, q, 5, keep))
    assert all(_satisfies(h.metadata, {"", "hr.payroll"}, {"hr", "it"}, False) for h in hits)
    bare = col.query(q, k=5, where=where, with_metadata=False)  # the same hits, without the metadata read
    assert [(h.id, h.similarity) for h in bare] == [(h.id, h.similarity) for h in hits]
    assert all(h.metadata == {} for h in bare)
    # Re-upsert one row onto the query direction with new metadata: it becomes the exact top hit.
    col.upsert([ids[3]], q[None, :], [{**metas[3], "category": "moved"}])
    top = col.query(q, k=1)[0]
    assert top.id == ids[3] and top.similarity == pytest.approx(1.0, abs=1e-5)
    assert top.metadata["category"] == "moved" and col.get_metadata()[ids[3]]["category"] == "moved"
    got_ids, got = col.get_vectors([ids[3], "missing", ids[0]])
    assert got_ids == [ids[3], ids[0]]
    np.testing.assert_allclose(got, np.stack([q, vecs[0]]), atol=1e-6)
    col.delete([ids[3], "never-stored"])
    assert col.count() == N - 1
    assert ids[3] not in {h.id for h in col.query(q, k=N)}
    assert ids[3] not in col.get_metadata()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Any]:
    c = open_client(StoreConfig(path=tmp_path / "db"))
    yield c
    c.close()


# --------------------------------------------------------------------------------------- embedded
@pytest.mark.slow
def test_round_trip_embedded(client: Any) -> None:
    _round_trip(client, collection_name("text", "model-a"))


@pytest.mark.slow
def test_persistence_across_clients(tmp_path: Path) -> None:
    ids, vecs, metas = _rows(seed=3)
    name = collection_name("text", "model-p")
    c1 = open_client(StoreConfig(path=tmp_path / "db"))
    VectorCollection(c1, name, dim=DIM, fingerprint="model-p").upsert(ids, vecs, metas)
    c1.close()
    c2 = open_client(StoreConfig(path=tmp_path / "db"))
    try:
        col = VectorCollection(c2, name, dim=DIM, fingerprint="model-p")
        assert col.count() == N
        got_ids, got = col.get_vectors()
        order = [ids.index(i) for i in got_ids]
        assert sorted(got_ids) == sorted(ids)
        np.testing.assert_allclose(got, vecs[order], atol=1e-6)
        assert col.get_metadata() == dict(zip(ids, metas, strict=True))
        q = _unit(np.random.default_rng(9), 1)[0]
        _check_hits(col.query(q, k=4), 4, *_brute(ids, vecs, q, 4))
    finally:
        c2.close()


@pytest.mark.slow
def test_fingerprint_or_dim_change_recreates_empty(client: Any) -> None:
    ids, vecs, metas = _rows()
    name = "toolrag-text-shared"
    VectorCollection(client, name, dim=DIM, fingerprint="a").upsert(ids, vecs, metas)
    assert VectorCollection(client, name, dim=DIM, fingerprint="a").count() == N  # same model: kept
    other = VectorCollection(client, name, dim=DIM, fingerprint="b")
    assert other.count() == 0
    other.upsert(ids[:2], vecs[:2], metas[:2])
    smaller = VectorCollection(client, name, dim=8, fingerprint="b")
    assert smaller.count() == 0
    with pytest.raises(ValueError, match=r"shape \(n, 8\)"):
        smaller.upsert(ids[:2], vecs[:2], metas[:2])


@pytest.mark.slow
def test_large_upsert_is_batched_and_reads_are_paged(client: Any) -> None:
    n = client.get_max_batch_size() + 37
    rng = np.random.default_rng(5)
    vecs = _unit(rng, n, 4)
    ids = [f"r{i}" for i in range(n)]
    col = VectorCollection(client, "toolrag-big-test", dim=4, fingerprint="big")
    col.upsert(ids, vecs, [{"tool_id": i} for i in ids])
    assert col.count() == n
    meta = col.get_metadata()
    assert len(meta) == n and all(meta[i] == {"tool_id": i} for i in ids)
    got_ids, got = col.get_vectors()
    assert len(got_ids) == n == len(set(got_ids))
    index = {i: j for j, i in enumerate(ids)}
    np.testing.assert_allclose(got, vecs[[index[i] for i in got_ids]], atol=1e-6)
    col.delete(ids[::100])
    assert col.count() == n - len(ids[::100])


@pytest.mark.slow
def test_rename_swaps_staging_into_place(client: Any) -> None:
    ids, vecs, metas = _rows()
    final = collection_name("text", "m")
    live = VectorCollection(client, final, dim=DIM, fingerprint="m")
    live.upsert(ids[:5], vecs[:5], metas[:5])
    staging = VectorCollection(client, collection_name("text", "m", staging=True), dim=DIM, fingerprint="m")
    staging.upsert(ids, vecs, metas)
    staging.rename(final)
    assert staging.name == final
    reopened = VectorCollection(client, final, dim=DIM, fingerprint="m")
    assert reopened.count() == N
    assert {c.name for c in client.list_collections()} == {final}


@pytest.mark.slow
def test_empty_collection_and_large_k(client: Any) -> None:
    col = VectorCollection(client, "toolrag-empty", dim=DIM, fingerprint="e")
    q = _unit(np.random.default_rng(0), 1)[0]
    assert col.query(q, k=10) == []
    assert col.get_metadata() == {}
    got_ids, got = col.get_vectors()
    assert got_ids == [] and got.shape == (0, DIM)


@pytest.mark.slow
def test_concurrent_queries_during_upserts(client: Any) -> None:
    ids, vecs, metas = _rows()
    col = VectorCollection(client, "toolrag-threads", dim=DIM, fingerprint="t")
    col.upsert(ids, vecs, metas)
    errors: list[BaseException] = []
    stop = threading.Event()
    q = _unit(np.random.default_rng(2), 1)[0]

    def reader() -> None:
        try:
            while not stop.is_set():
                hits = col.query(q, k=10)
                sims = [h.similarity for h in hits]
                if len(hits) != 10 or sims != sorted(sims, reverse=True):
                    raise AssertionError(f"bad result under concurrency: {hits}")
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    rng = np.random.default_rng(4)
    for _ in range(15):
        col.upsert(ids, _unit(rng, N), metas)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors[0]
    assert col.count() == N


# ---------------------------------------------------------------------------------------- filters
def test_a_caller_is_permitted_the_keys_whose_codes_it_holds() -> None:
    def allowed(codes: set[str]) -> set[str]:
        return set(Caller(frozenset(codes)).permitted_keys(PERM_KEYS))

    assert allowed(set()) == {""}
    assert allowed({"hr.payroll"}) == {"", "hr.payroll"}
    assert allowed({"hr.payroll", "finance.approve"}) == {"", "hr.payroll", "finance.approve,hr.payroll"}
    assert perm_key(["hr.payroll", "finance.approve", "hr.payroll"]) == "finance.approve,hr.payroll"
    assert perm_key([]) == ""


def test_build_where_shapes() -> None:
    everything = Caller(frozenset({"hr.payroll", "finance.approve", "it.admin"}), include_deprecated=True)
    assert build_where(everything, PERM_KEYS) is None  # nothing narrowed: no clause
    single = build_where(Caller(include_deprecated=True), PERM_KEYS)
    assert single == {"perm_key": {"$in": [""]}}
    both = build_where(Caller(categories=frozenset({"hr"})), PERM_KEYS)
    assert both is not None and len(both["$and"]) == 3
    assert matches_nothing(build_where(Caller(include_deprecated=True), ["x"]))  # no key permitted
    assert not matches_nothing(both)


CALLERS = [set(), {"hr.payroll"}, {"hr.payroll", "finance.approve"}, None]


@pytest.mark.slow
@pytest.mark.parametrize("codes", CALLERS, ids=["none", "payroll", "payroll+approve", "unfiltered"])
@pytest.mark.parametrize("cats", [None, {"hr"}, {"finance", "it"}], ids=["allcats", "hr", "fin+it"])
@pytest.mark.parametrize("deprecated", [False, True], ids=["nodep", "dep"])
def test_filtered_query_equals_brute_force_over_allowed_subset(
    filtered_col: tuple[VectorCollection, list[str], np.ndarray, list[dict[str, Any]]],
    codes: set[str] | None,
    cats: set[str] | None,
    deprecated: bool,
) -> None:
    col, ids, vecs, metas = filtered_col
    every = {c for k in PERM_KEYS for c in k.split(",") if c}
    caller = Caller(frozenset(every if codes is None else codes), categories=None if cats is None else frozenset(cats),
                    include_deprecated=deprecated)
    keys = None if codes is None else set(caller.permitted_keys(PERM_KEYS))
    if codes == set():
        assert keys == {""}
    if codes == {"hr.payroll"}:
        assert keys == {"", "hr.payroll"}
    where = build_where(caller, PERM_KEYS)
    keep = [_satisfies(m, keys, cats, deprecated) for m in metas]
    assert 0 < sum(keep) < N or (codes is None and cats is None and deprecated)
    for q in _unit(np.random.default_rng(11), 3):
        hits = col.query(q, k=6, where=where)
        assert all(_satisfies(h.metadata, keys, cats, deprecated) for h in hits)
        assert all(_satisfies(metas[ids.index(h.id)], keys, cats, deprecated) for h in hits)
        _check_hits(hits, 6, *_brute(ids, vecs, q, 6, keep))


@pytest.mark.slow
def test_nothing_allowed_returns_empty(
    filtered_col: tuple[VectorCollection, list[str], np.ndarray, list[dict[str, Any]]],
) -> None:
    col = filtered_col[0]
    q = _unit(np.random.default_rng(0), 1)[0]
    for where in (
        build_where(Caller(include_deprecated=True), ["x"]),
        build_where(Caller(categories=frozenset()), PERM_KEYS),
    ):
        assert col.query(q, k=5, where=where) == []
    # an empty $nin removes no row, a one-element $or is unwrapped: both accepted
    assert len(col.query(q, k=5, where={"category": {"$nin": []}})) == 5
    assert len(col.query(q, k=5, where={"$or": [{"category": {"$eq": "hr"}}]})) == 5


@pytest.fixture(scope="module")
def filtered_col(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[VectorCollection, list[str], np.ndarray, list[dict[str, Any]]]]:
    c = open_client(StoreConfig(path=tmp_path_factory.mktemp("filters")))
    ids, vecs, metas = _rows(seed=7)
    col = VectorCollection(c, collection_name("text", "filters"), dim=DIM, fingerprint="filters")
    col.upsert(ids, vecs, metas)
    yield col, ids, vecs, metas
    c.close()


# -------------------------------------------------------------------------------------- bad input
def test_collection_name_is_valid_and_model_specific() -> None:
    a, b = collection_name("text", "model-a"), collection_name("text", "model-b")
    pattern = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$")
    assert a != b and pattern.match(a) and pattern.match(b)
    assert a == collection_name("text", "model-a") and a.startswith("toolrag-text-")
    for kind in ("clip-image", "dense_en", "x"):
        assert pattern.match(collection_name(kind, "m", staging=True))
    with pytest.raises(ValueError, match="kind"):
        collection_name("Text Kind", "m")
    with pytest.raises(ValueError, match="kind"):
        collection_name("-text", "m")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda v: (["a", "b"], v[:2, :8], [{"x": 1}] * 2), r"shape \(n, 32\)"),
        (lambda v: (["a", "b"], v[:2] * 1.01, [{"x": 1}] * 2), "unit length"),
        (lambda v: (["a", "b"], np.where(np.arange(DIM) == 0, np.nan, v[:2]), [{"x": 1}] * 2), "NaN"),
        (lambda v: (["a", "b", "c"], v[:2], [{"x": 1}] * 3), "3 ids"),
        (lambda v: (["a", "b"], v[:2], [{"x": 1}]), "1 metadatas"),
        (lambda v: (["a", "a"], v[:2], [{"x": 1}] * 2), "duplicate"),
        (lambda v: (["a", ""], v[:2], [{"x": 1}] * 2), "non-empty strings"),
        (lambda v: (["a", "b"], v[:2], [{"x": 1}, {"x": [1]}]), "str/int/float/bool"),
        (lambda v: (["a", "b"], v[:2], [{"x": 1}, {}]), "empty metadata"),
    ],
    ids=["dim", "non-unit", "nan", "id-count", "meta-count", "dup", "empty-id", "meta-type", "empty-meta"],
)
def test_bad_upsert_raises(client: Any, make: Any, message: str) -> None:
    col = VectorCollection(client, "toolrag-bad", dim=DIM, fingerprint="bad")
    ids, vecs, metas = make(_unit(np.random.default_rng(0), 3))
    with pytest.raises(ValueError, match=message):
        col.upsert(ids, vecs, metas)
    assert col.count() == 0


@pytest.mark.slow
def test_bad_query_raises(client: Any) -> None:
    col = VectorCollection(client, "toolrag-badq", dim=DIM, fingerprint="bad")
    with pytest.raises(ValueError, match="shape"):
        col.query(np.ones(DIM + 1), k=3)
    with pytest.raises(ValueError, match="non-zero"):
        col.query(np.zeros(DIM), k=3)
    with pytest.raises(ValueError, match="positive integer"):
        col.query(np.ones(DIM), k=0)
    with pytest.raises(StoreError, match="where"):
        col.query(np.ones(DIM), k=3, where={"category": {"$bogus": 1}})
    with pytest.raises(ValueError, match="dim"):
        VectorCollection(client, "toolrag-badq", dim=0, fingerprint="bad")
    with pytest.raises(ValueError, match="name"):
        VectorCollection(client, "-x", dim=DIM, fingerprint="bad")


@pytest.mark.parametrize(
    "url",
    [
        "localhost:8000",
        "ftp://127.0.0.1:8000",
        "http://",
        "http://127.0.0.1:notaport",
        "http://h:99999",
        "http://127.0.0.1:8000/api?x=1",
    ],
)
def test_malformed_url_raises(url: str) -> None:
    with pytest.raises(SettingsError, match="Chroma URL .*e.g. --chroma-url http://127.0.0.1:8000"):
        open_client(StoreConfig(url=url))
    with pytest.raises(SettingsError, match="Chroma URL"):  # the one validator: the CLI's and the app's fallback
        chroma_url(url)


def test_unreachable_server_fails_fast_naming_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    with pytest.raises(StoreError) as info:
        open_client(StoreConfig(url=url, path=Path("/nonexistent-ignored")))
    assert time.monotonic() - start < 10
    assert url in str(info.value) and "chroma run" in str(info.value)


def test_silent_or_foreign_server_fails_fast(tmp_path: Path) -> None:
    """A port that accepts connections but never answers, or answers as another HTTP server."""
    import http.server
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        raised: list[BaseException] = []

        def attempt() -> None:  # in a thread, so a regression (a hang) fails the test instead of blocking it
            try:
                open_client(StoreConfig(url=url))
            except BaseException as exc:
                raised.append(exc)

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(timeout=10)
        assert not worker.is_alive(), f"open_client({url}) still waiting after 10 s"
        assert len(raised) == 1 and isinstance(raised[0], StoreError) and url in str(raised[0])
    handler = http.server.BaseHTTPRequestHandler  # answers 501 to every GET
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as other:
        thread = threading.Thread(target=other.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{other.server_address[1]}"
            with pytest.raises(StoreError, match=r"HTTP 501.*Chroma"):
                open_client(StoreConfig(url=url))
        finally:
            other.shutdown()


def _within(seconds: float, fn: Any) -> BaseException | None:
    """What ``fn()`` raised (``None``: nothing), failing the test when it takes longer than ``seconds`` (it runs in
    a thread, so a regression, a call that waits forever, fails instead of blocking the suite)."""
    raised: list[BaseException | None] = []

    def attempt() -> None:
        try:
            fn()
            raised.append(None)
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    assert not worker.is_alive(), f"still waiting after {seconds} s"
    return raised[0]


@pytest.mark.server
def test_every_call_to_a_hung_server_fails_within_its_timeout(tmp_path: Path) -> None:
    """A server stopped by SIGSTOP keeps its port and answers nothing: each call (a read, a write, a reopen)
    raises a StoreError saying how long it waited; after SIGCONT the same client works again."""
    from toolrag.index.published import PublishedIndex

    with ChromaServer(tmp_path) as server:
        client = open_client(StoreConfig(url=server.url, timeout=1.5))
        index = PublishedIndex(client, "tools", where=server.url)
        col = VectorCollection(client, collection_name("text", "hung"), dim=DIM, fingerprint="fp-hung")
        ids, vecs, metas = _rows(seed=3)
        col.upsert(ids, vecs, metas)
        server.pause()
        try:
            for call in (index.manifest, col.count, lambda: col.upsert(ids, vecs, metas),
                         lambda: open_client(StoreConfig(url=server.url, timeout=1.5))):
                start = time.monotonic()
                error = _within(15, call)
                assert isinstance(error, StoreError), error
                assert time.monotonic() - start < 8
                assert re.search(r"no answer within 1.5 s|cannot reach a Chroma server", str(error)), error
        finally:
            server.resume()
        assert index.manifest().version is None and col.count() == N


def test_unusable_path_and_empty_config_raise(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", "utf-8")
    with pytest.raises(StoreError, match="is a file"):
        open_client(StoreConfig(path=blocker))
    with pytest.raises(StoreError, match=re.escape(str(blocker))):
        open_client(StoreConfig(path=blocker / "sub"))
    with pytest.raises(StoreError, match="no Chroma store"):
        open_client(StoreConfig())


# ------------------------------------------------------------------------------------------ server
@pytest.mark.server
def test_round_trip_server_and_stop(tmp_path: Path) -> None:
    with running_chroma_server(tmp_path) as url:
        client = open_client(StoreConfig(url=url))
        _round_trip(client, collection_name("text", "server-model"))
        # the data lives in the server: a second client sees it, and a staging swap works there too
        other = open_client(StoreConfig(url=url + "/"))
        name = collection_name("text", "server-model")
        col = VectorCollection(other, name, dim=DIM, fingerprint="fp-round-trip")
        assert col.count() == N - 1
        staging = VectorCollection(other, "toolrag-text-srv-staging", dim=DIM, fingerprint="fp-round-trip")
        ids, vecs, metas = _rows(seed=8)
        staging.upsert(ids, vecs, metas)
        staging.rename(name)
        assert VectorCollection(client, name, dim=DIM, fingerprint="fp-round-trip").count() == N
    # the helper stopped the server: the URL no longer answers
    with pytest.raises(StoreError, match=re.escape(url)):
        open_client(StoreConfig(url=url))
