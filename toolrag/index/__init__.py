"""The tool index: Chroma collections (the durable store of vectors, embedded or a server), their in-memory
mirror, permission/category filters, the tokenizer and BM25, and the immutable snapshot a search reads."""

from toolrag.index.client import StoreConfig
from toolrag.index.snapshot import IndexSnapshot
from toolrag.index.tool_index import ToolIndex

__all__ = ["IndexSnapshot", "StoreConfig", "ToolIndex"]
