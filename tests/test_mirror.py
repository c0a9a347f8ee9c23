"""The in-memory mirror of a Chroma collection: it must always agree with what Chroma holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolrag.errors import StoreError
from toolrag.index.client import StoreConfig, open_client
from toolrag.index.mirror import LazyRows, MirroredCollection
from toolrag.index.store import VectorCollection


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.slow
def test_mirror_agrees_with_chroma_through_edits(tmp_path: Path) -> None:
    client = open_client(StoreConfig(path=tmp_path / "chroma"))
    collection = VectorCollection(client, "mirror-test", dim=4, fingerprint="test")
    mirror = MirroredCollection(collection)
    rng = np.random.default_rng(0)
    ids = [f"t{i}" for i in range(6)]
    vectors = unit(rng.normal(size=(6, 4)))
    mirror.upsert(ids, vectors, [{"n": i} for i in range(6)])
    np.testing.assert_allclose(mirror.matrix(ids), vectors, atol=1e-6)

    edited = unit(rng.normal(size=(1, 4)))
    mirror.upsert(["t2"], edited, [{"n": 20}])  # an edit: same rows, same order -> the fast path
    mirror.delete(["t5"])
    assert mirror.metadata() == collection.get_metadata()
    got = mirror.matrix(ids[:5])
    stored_ids, stored = collection.get_vectors(ids[:5])
    assert stored_ids == ids[:5]
    np.testing.assert_allclose(got, stored, atol=1e-6)
    np.testing.assert_allclose(got[2], edited[0], atol=1e-6)
    found, vecs = mirror.vectors(["t4", "t2"])
    assert found == ["t4", "t2"]
    np.testing.assert_allclose(vecs, stored[[4, 2]], atol=1e-6)

    # A write Chroma refuses leaves the mirror as it was.
    with pytest.raises(ValueError):
        mirror.upsert(["t9"], np.ones((1, 3), dtype=np.float32), [{"n": 9}])
    assert "t9" not in mirror.metadata() and mirror.metadata() == collection.get_metadata()

    # A fresh process reads the same state from Chroma alone.
    again = MirroredCollection(VectorCollection(client, "mirror-test", dim=4, fingerprint="test"))
    np.testing.assert_allclose(again.matrix(ids[:5]), got, atol=1e-6)
    with pytest.raises(StoreError, match="index rows missing after sync: \\['t5'\\]"):
        again.matrix(ids)


@pytest.mark.slow
def test_an_edit_reuses_the_matrix_nobody_holds_and_never_one_still_held(tmp_path: Path) -> None:
    """From the second edit on, an edit writes into the matrix of the snapshot before the live one when
    nothing holds it any more (no copy of the whole matrix); while anything still holds it (a search's
    snapshot), a fresh copy is made and what that holder reads never changes."""
    client = open_client(StoreConfig(path=tmp_path / "chroma"))
    mirror = MirroredCollection(VectorCollection(client, "recycle", dim=4, fingerprint="test"))
    rng = np.random.default_rng(1)
    ids = [f"t{i}" for i in range(5)]

    def edit(row: int) -> np.ndarray:
        mirror.upsert([ids[row]], unit(rng.normal(size=(1, 4))), [{"n": 10 + row}])
        return mirror.matrix(ids)

    mirror.upsert(ids, unit(rng.normal(size=(5, 4))), [{"n": i} for i in range(5)])
    first_id = id(mirror.matrix(ids))  # nobody outside the mirror keeps the first matrix
    second = edit(1)  # a copy: there is no older matrix yet
    assert id(second) != first_id
    third = edit(3)  # written into the first matrix, its row 1 brought up to date
    assert id(third) == first_id
    np.testing.assert_allclose(third, mirror.collection.get_vectors(ids)[1], atol=1e-6)

    before = second.copy()  # ``second`` is still held here (as a search's snapshot would hold it)
    fourth = edit(0)
    assert fourth is not second and fourth is not third
    np.testing.assert_array_equal(second, before)
    np.testing.assert_allclose(fourth, mirror.collection.get_vectors(ids)[1], atol=1e-6)


def test_lazy_rows_build_each_row_once_on_read_and_keep_writes_on_top() -> None:
    built: list[int] = []

    def make(n: int) -> dict[str, int | str]:
        built.append(n)
        return {"n": n}

    rows = LazyRows(["a", "b", "c"], make)
    assert len(rows) == 3 and list(rows) == ["a", "b", "c"] and built == []  # nothing built to count or list
    assert "b" in rows and "z" not in rows and built == []
    assert rows["b"] == {"n": 1} and rows.get("b") == {"n": 1} and built == [1]  # built once
    with pytest.raises(KeyError):
        rows["z"]
    rows["d"] = {"n": 9}  # a new row goes last
    rows["a"] = {"n": 7}  # a known row rewritten: never built
    assert list(rows) == ["a", "b", "c", "d"] and len(rows) == 4
    assert rows.pop("c") == {"n": 2} and "c" not in rows and rows.pop("c", None) is None
    del rows["d"]
    with pytest.raises(KeyError):
        del rows["d"]
    assert list(rows) == ["a", "b"] and len(rows) == 2
    rows["c"] = {"n": 3}  # a deleted known row written again comes back
    assert dict(rows) == {"a": {"n": 7}, "b": {"n": 1}, "c": {"n": 3}} and built == [1, 2]
