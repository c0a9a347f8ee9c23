"""An immutable view of the index that one search uses: vectors in catalog row order, filter columns, BM25.

An edit builds a new snapshot and swaps it in atomically, so searches running in other threads always see
one consistent index.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog
from toolrag.index.ann import IvfIndex
from toolrag.index.bm25 import BM25Index

__all__ = ["IndexSnapshot", "perm_codes"]

T = TypeVar("T")

#: Derived values one snapshot keeps (a few per caller filter: masks, reference rows and vectors); past this
#: many the memo starts over, so a stream of distinct filters cannot grow memory without bound.
MEMO_LIMIT = 24


@dataclass(frozen=True)
class IndexSnapshot:
    """An immutable view of the index used by one search."""

    catalog: Catalog
    ids: tuple[str, ...]
    row_of: Mapping[str, int]
    vectors: Mapping[str, np.ndarray]          # "dense", "dense_en", "clip_text": (n_tools, dim)
    english: np.ndarray                        # bool (n_tools,): tool text readable by the English model
    image_owner: np.ndarray                    # int (n_images,): row of the tool each image belongs to
    image_vectors: Mapping[str, np.ndarray]    # "visual", "clip_image": (n_images, dim)
    image_text_owner: np.ndarray               # int: tool row of each example image that has OCR text
    image_text: np.ndarray                     # (n, text dim): that OCR text, encoded by the text model
    perm_keys: np.ndarray                      # object (n_tools,)
    categories: np.ndarray                     # object (n_tools,)
    deprecated: np.ndarray                     # bool (n_tools,)
    priority: np.ndarray                       # int (n_tools,)
    bm25: BM25Index
    bm25_texts: tuple[str, ...] = ()
    perm_key_values: tuple[str, ...] = ()     # the distinct permission keys
    perm_key_codes: np.ndarray | None = None   # int (n_tools,): index of each tool's key in perm_key_values
    ann: Mapping[str, IvfIndex] = field(default_factory=dict)  # large catalogs: nearest-neighbour lists
    version: str | None = None                 # the published version served (toolrag.index.published)
    # Not an init field, so dataclasses.replace() gives the new snapshot an empty memo of its own.
    _memo: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def memo(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()``, computed once per snapshot and ``key``: values derived from this snapshot alone (a
        filter's mask, its reference rows and vectors) that every search with the same filter would recompute
        (about 2 ms at 100,000 tools). A new snapshot (an edit) starts empty, so nothing stale is served. Two
        threads may both build a missing value; both results are equal."""
        try:
            return self._memo[key]
        except KeyError:
            pass
        value = build()
        if len(self._memo) >= MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = value
        return value

    def allowed(self, caller: Caller) -> tuple[np.ndarray, int]:
        """Mask of the tools ``caller`` sees (read-only, shared by the searches of callers with the same
        :attr:`toolrag.catalog.caller.Caller.key`); and how many its category, tool and deprecation filters (not
        its permissions) removed. Tools the caller lacks permission for are never counted anywhere."""
        return self.memo(("allowed", caller.key), lambda: self._allowed(caller))

    def _allowed(self, caller: Caller) -> tuple[np.ndarray, int]:
        if self.perm_key_codes is not None:
            values, codes = self.perm_key_values, self.perm_key_codes
        else:
            parts = perm_codes(self.perm_keys.tolist())
            values, codes = parts["perm_key_values"], parts["perm_key_codes"]
        permitted, mask = caller.mask(perm_keys=values, key_of_row=codes, categories=self.categories,
                                      ids=self.ids, deprecated=self.deprecated)
        mask.flags.writeable = False
        return mask, int(permitted.sum() - mask.sum())

    @property
    def distinct_perm_keys(self) -> tuple[str, ...]:
        """The distinct permission keys of the tools (what the store's filter chooses among)."""
        return self.perm_key_values or tuple(sorted(set(self.perm_keys.tolist())))


def perm_codes(keys: list[str]) -> dict[str, Any]:
    """The distinct permission keys and each tool's index among them (for a vectorised permission mask)."""
    if not keys:
        return {"perm_key_values": (), "perm_key_codes": np.zeros(0, dtype=np.int64)}
    values, codes = np.unique(np.asarray(keys, dtype=str), return_inverse=True)
    return {"perm_key_values": tuple(str(v) for v in values.tolist()), "perm_key_codes": codes.astype(np.int64)}


def with_catalog(snapshot: IndexSnapshot, catalog: Catalog) -> IndexSnapshot:
    """Internal helper for tests: the same vectors under another catalog object."""
    return replace(snapshot, catalog=catalog)
