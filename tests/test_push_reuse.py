"""A push encodes only the texts and images whose vector the Chroma server does not keep (toolrag.index.held).

Catalog A is pushed, then B (two tools' texts and an example image changed), C, D and E (each a step away, C
partly back to A), so A is no longer kept; A is pushed again. Of A's texts and images, only the one no kept
version holds is encoded; the rest come from the held collections, and the version served is the one a fresh
build makes. Vectors are reused only within one model's collection: other models encode everything.

The pure part (what the kept versions hold, by kind and model) runs in the quick tier; the pushes run with stub
models on an embedded Chroma (exact counts of texts encoded), and with the real models on a ``chroma run`` server,
counting the texts and images encoded by the models themselves.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ASSETS, SMALL_CATALOG

from toolrag.catalog.loader import load_catalog
from toolrag.catalog.profile import Catalog
from toolrag.index.held import held_name, kept_contents
from toolrag.index.published import CONTENT_PREFIX, version_contents

#: Descriptions of catalog A that the other catalogs change.
A = {"code": "Search the company's source code repositories for a function, class or string.",
     "forecast": "Weather forecast for the next 1 to 7 days for a city.",
     "book": "Book a meeting room for a time slot and invite attendees.",
     "payroll": "Approve the monthly payroll run so salaries are paid. Irreversible; HR managers only."}
B2 = "Weather outlook for a city over the coming week, day by day."
#: Each catalog as its changes to A (tool -> description; "image": the portrait tool's example image).
CATALOGS: dict[str, dict[str, str]] = {
    "A": {},
    "B": {"code": "Find a function, class or string in the company's git repositories.", "forecast": B2,
          "image": "coffee.jpg"},
    "C": {"forecast": B2, "book": "Reserve a meeting room and send the invitations."},
    "D": {"forecast": B2, "book": "Reserve a meeting room and send the invitations.",
          "payroll": "Sign off the monthly salary run (HR managers only; it cannot be undone).",
          "image": "coffee.jpg"},
    "E": {"code": "Look up where a symbol is defined across every code repository.", "forecast": B2,
          "book": "Reserve a meeting room and send the invitations.",
          "payroll": "Sign off the monthly salary run (HR managers only; it cannot be undone).",
          "image": "coffee.jpg"},
}


def write_catalog(base: Path, folder: Path, changes: dict[str, str], *, images: bool = True) -> Catalog:
    """The small catalog (tests/conftest.py) with ``changes`` made, in ``folder`` (``base``: its assets)."""
    text = SMALL_CATALOG
    for key, new in changes.items():
        if key != "image":
            assert A[key] in text
            text = text.replace(A[key], new)
    if "image" in changes:
        text = text.replace("path: astronaut.jpg", f"path: {changes['image']}")
    if not images:
        text = "\n".join(line for line in text.splitlines() if "images:" not in line) + "\n"
    folder.mkdir(parents=True)
    (folder / "tools.yaml").write_text(text, encoding="utf-8")
    shutil.copy(base / "catalog.yaml", folder / "catalog.yaml")
    shutil.copytree(base / "assets", folder / "assets")
    if "image" in changes:
        shutil.copy(ASSETS / changes["image"], folder / "assets" / changes["image"])
    return load_catalog(folder)


def test_what_the_kept_versions_hold_counts_per_kind_and_model() -> None:
    """A version's contents record holds hash prefixes of its texts and images; only versions whose collection of a
    kind is the pusher's (same index, kind and model) count for that kind, and a version without one holds nothing."""
    mine = {"dense": "toolrag-dense-aaa", "dense_en": "toolrag-dense-en-bbb", "visual": "toolrag-visual-ccc"}
    text, image = "f" * 64, "0123456789abcdef"
    record = version_contents(mine, [text, text, "e" * 64], [image])
    assert record == {"collections": dict(sorted(mine.items())), "texts": ["e" * CONTENT_PREFIX, "f" * CONTENT_PREFIX],
                      "images": [image]}
    other_model = version_contents({**mine, "dense_en": "toolrag-dense-en-zzz"}, ["d" * 64], ["fedcba9876543210"])
    kept = kept_contents([record, other_model, None], mine)
    assert kept["dense"] == {"d" * 16, "e" * 16, "f" * 16}  # both versions' e5 collection is this one
    assert kept["dense_en"] == {"e" * 16, "f" * 16}  # the other version's English model is another model
    assert kept["visual"] == {image, "fedcba9876543210"}  # images are keyed by their content hash
    assert kept_contents([], mine) == {"dense": set(), "dense_en": set(), "visual": set()}
    assert held_name("toolrag-dense-aaa") == "toolrag-dense-aaa-held"


@pytest.fixture
def catalogs(tmp_path: Path, small_catalog_dir: Path) -> Iterator[dict[str, Catalog]]:
    yield {name: write_catalog(small_catalog_dir, tmp_path / "catalogs" / name, changes)
           for name, changes in CATALOGS.items()}


def _held_hashes(client: Any, specs: dict[str, tuple[str, int, str]], kind: str) -> set[str]:
    name = held_name(specs[kind][0])
    if name not in {c.name for c in client.list_collections()}:
        return set()
    return set(client.get_collection(name, embedding_function=None).get(include=[])["ids"])


@pytest.mark.slow  # an embedded Chroma
def test_a_push_encodes_only_what_no_kept_version_holds(tmp_path: Path, small_catalog_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Stub text models (no image model), a new pusher per push as with `toolrag index`: exact counts of the texts
    each model encoded."""
    from stub_index import stub_models

    from toolrag.index.client import StoreConfig, open_client
    from toolrag.index.published import PublishedIndex
    from toolrag.index.push import Pusher, catalog_key
    from toolrag.index.tool_index import collection_specs

    monkeypatch.setenv("TOOLRAG_DATA_DIR", str(tmp_path / "data"))
    store = StoreConfig(path=tmp_path / "chroma")
    client = open_client(store)
    cats = {name: write_catalog(small_catalog_dir, tmp_path / "stub" / name, changes, images=False)
            for name, changes in CATALOGS.items()}

    def push(name: str, index: str = "tools", models: Any = None) -> tuple[Any, int]:
        models = models or stub_models()
        result = Pusher(PublishedIndex(client, index), models, store, ttl=30).push(cats[name])
        counted = models.text.encoded + models.english.encoded
        assert result.flipped and result.encoded == counted  # the count a push reports is the models' own
        return result, counted

    encoded = {}
    for name in ("A", "B", "C", "D", "E"):
        encoded[name] = push(name)[1]
    # Two texts per new description (two text models): B changed two tools; C's book, D's payroll, E's code are new,
    # C's code is A's again (held since B replaced it, A being kept then).
    assert encoded == {"A": 16, "B": 4, "C": 2, "D": 2, "E": 2}
    specs = collection_specs(stub_models(), catalog_key("tools"))
    a = {t.id: t.text_hash() for t in cats["A"].tools}
    held = _held_hashes(client, specs, "dense")
    # A is no longer kept: its forecast text (only A held it) is deleted; its code, book and payroll texts are
    # held (C and D, B, B and C hold them).
    assert a["weather.forecast"] not in held
    assert {a["dev.search.code"], a["calendar.book"], a["hr.payroll.approve"]} <= held

    again, counted = push("A")
    assert counted == 2, "A's texts that a kept version holds were encoded again"
    published = PublishedIndex(client, "tools")
    record = published.contents(again.version)
    assert record is not None and record["texts"] == sorted({h[:CONTENT_PREFIX] for h in a.values()})
    assert record["collections"] == {kind: name for kind, (name, _, _) in specs.items()}
    # A record changed under a reader holds nothing (less is kept, nothing is mixed).
    data = client.get_collection(published.data_name(again.version), embedding_function=None)
    data.update(ids=["contents-00000"], metadatas=[{"data": "AAAA"}])
    assert published.contents(again.version) is None
    data.update(ids=["contents-00000"], metadatas=[{"data": "not base64!"}])
    assert published.contents(again.version) is None
    fresh, _ = push("A", index="fresh")  # another index: its own collections, every text encoded
    assert sorted(fresh.snapshot.vectors) == sorted(again.snapshot.vectors) == ["dense", "dense_en"]
    for kind, matrix in fresh.snapshot.vectors.items():
        np.testing.assert_allclose(again.snapshot.vectors[kind], matrix, atol=1e-6)

    # A renamed tool (same text) takes the vector of its old row.
    folder = tmp_path / "stub" / "F"
    shutil.copytree(cats["A"].root, folder)  # type: ignore[arg-type]
    tools = folder / "tools.yaml"
    tools.write_text(tools.read_text(encoding="utf-8").replace("id: dev.search.code", "id: dev.code"), encoding="utf-8")
    cats["F"] = load_catalog(folder)
    assert push("F")[1] == 0

    # Another English model never takes these vectors: each collection (and its held one) is named after its model.
    from stub_index import HashingText

    base = stub_models()
    other = type(base)(text=base.text, english=HashingText("english-v2"), unavailable=dict(base.unavailable))
    push("A", models=other)
    assert other.english.encoded == len(cats["A"]) and other.text.encoded == 0


@pytest.mark.slow
@pytest.mark.server
def test_pushing_an_older_catalog_again_encodes_only_what_the_server_lacks(
        tmp_path: Path, catalogs: dict[str, Catalog], models: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real models on a `chroma run` server, with example images (image features, the text read in them): the
    texts and images the models ran on are counted where they run."""
    from chroma_server import ChromaServer

    import toolrag.index.image_sync as image_sync
    import toolrag.index.text_sync as text_sync
    from toolrag.index.published import PublishedIndex, unpack
    from toolrag.index.push import catalog_key, open_pusher
    from toolrag.index.tool_index import collection_specs

    monkeypatch.setenv("TOOLRAG_DATA_DIR", str(tmp_path / "data"))
    ran = {"texts": 0, "images": 0}
    jobs, load = text_sync.passage_jobs, image_sync.load_image

    def counted_jobs(model: Any, texts: Any) -> Any:
        ran["texts"] += len(texts)
        return jobs(model, texts)

    def counted_load(path: Path) -> Any:
        ran["images"] += 1  # an image is opened only to be encoded or read (OCR)
        return load(path)

    monkeypatch.setattr(text_sync, "passage_jobs", counted_jobs)
    monkeypatch.setattr(image_sync, "load_image", counted_load)
    specs = collection_specs(models, catalog_key("tools"))
    texts_kinds = sum(1 for kind in specs if kind in ("dense", "dense_en", "clip_text"))
    image_kinds = sum(1 for kind in specs if kind in ("visual", "clip_image", "image_text"))
    assert texts_kinds == 2 and image_kinds >= 1

    with ChromaServer(tmp_path) as chroma:
        def push(name: str, index: str = "tools") -> tuple[Any, dict[str, int]]:
            ran.update(texts=0, images=0)
            result = open_pusher(chroma.url, index, models).push(catalogs[name])  # a new process each time
            assert result.flipped and result.encoded == ran["texts"] + ran["images"], (result.encoded, ran)
            return result, dict(ran)

        first, _ = push("A")
        assert push("B")[1] == {"texts": 2 * texts_kinds, "images": image_kinds}  # two texts, one new image
        # C: A's code text and portrait image come back from the held collections; its book text is new.
        assert push("C")[1] == {"texts": texts_kinds, "images": 0}
        assert push("D")[1] == {"texts": texts_kinds, "images": 0}  # B's coffee image is held
        assert push("E")[1] == {"texts": texts_kinds, "images": 0}
        published = PublishedIndex(open_client_for(chroma.url), "tools")
        assert first.version not in published.manifest().kept  # A is no longer kept

        again, ran_again = push("A")
        # Only A's forecast text is on no kept version (B to E all changed it): nothing else is encoded again.
        assert again.version == first.version and ran_again == {"texts": texts_kinds, "images": 0}

        fresh, ran_fresh = push("A", index="fresh")
        assert ran_fresh["texts"] == texts_kinds * len(catalogs["A"]) and ran_fresh["images"] == image_kinds * 2
        _, served = unpack(published.read(again.version))
        _, built = unpack(PublishedIndex(published.client, "fresh").read(fresh.version))
        assert served.ids == built.ids and served.image_ids == built.image_ids
        assert served.ocr_texts == built.ocr_texts
        for kind in built.vectors:
            np.testing.assert_allclose(served.vectors[kind], built.vectors[kind], atol=1e-6)
        for kind in built.image_vectors:
            np.testing.assert_allclose(served.image_vectors[kind], built.image_vectors[kind], atol=1e-6)
        np.testing.assert_allclose(served.image_text, built.image_text, atol=1e-6)


def open_client_for(url: str) -> Any:
    from toolrag.index.client import StoreConfig, open_client

    return open_client(StoreConfig(url=url))
