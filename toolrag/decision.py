"""The decision a search makes about a query: call a tool, ask the user, or answer without tools.

Kept in its own tiny module so that labelled query files, the search pipeline and the app can share it
without importing each other.
"""

from __future__ import annotations

from enum import Enum


class Decision(str, Enum):
    """What the agent should do with the retrieved tools."""

    EXECUTE = "EXECUTE"  # a tool clearly fits: call it
    CLARIFY = "CLARIFY"  # several tools fit about equally, or a required detail is missing: ask the user
    NO_TOOL = "NO_TOOL"  # no tool fits: answer directly
