"""Search: analyse the request, score every signal over the permitted tools, normalise, fuse, rerank and
decide; :class:`ToolRetriever` runs it and returns an explained :class:`SearchResult`."""

from toolrag.search.results import Candidate, Decision, SearchResult, SignalScore, TokenReport
from toolrag.search.retriever import ToolRetriever

__all__ = ["Candidate", "Decision", "SearchResult", "SignalScore", "TokenReport", "ToolRetriever"]
