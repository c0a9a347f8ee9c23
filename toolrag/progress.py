"""Progress reporting: long steps (loading models, indexing, evaluating) call ``progress(fraction, message)``.

The CLI logs it, the app shows it as a bar, library callers may pass their own callback or nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

__all__ = ["Progress", "no_progress"]

log = logging.getLogger(__name__)

#: ``progress(fraction in [0, 1], message)``.
Progress = Callable[[float, str], None]


def no_progress(fraction: float, message: str) -> None:
    """The default callback: progress goes to the debug log only."""
    log.debug("%3.0f%% %s", fraction * 100, message)
