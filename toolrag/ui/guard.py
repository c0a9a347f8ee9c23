"""What every handler of the playground does at the boundary with the browser: a failure becomes a toast that shows
no server path (:func:`guard`), the caller is named from Gradio's or Hugging Face's sign-in (:func:`caller_name`),
and an upload is checked (:data:`MAX_IMAGE_MB`, :func:`checked_image`: a usable image, or toolrag's message).
"""

from __future__ import annotations

import functools
import logging
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import gradio as gr

from toolrag.config import env
from toolrag.errors import ImageError, ToolragError
from toolrag.images import load_image

__all__ = ["MAX_IMAGE_MB", "caller_name", "checked_image", "guard", "public"]

log = logging.getLogger(__name__)
MAX_IMAGE_MB = 10
F = TypeVar("F", bound=Callable[..., Any])


def guard(fn: F) -> F:
    """Turn toolrag errors into a toast with their message; unexpected ones are logged and shown briefly. What
    a caller got wrong (a refused request, a bad value) is logged in one line, not with a traceback; no message
    shows where the server keeps temporary files (an upload's path is shown as its file name)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error as exc:
            exc.message = public(exc.message)
            exc.print_exception = False
            log.info("%s refused: %s", fn.__name__, exc.message)
            raise
        except ToolragError as exc:
            log.info("%s refused: %s", fn.__name__, public(str(exc)))
            raise gr.Error(public(str(exc)), print_exception=False) from None
        except Exception as exc:
            log.exception("handler %s failed", fn.__name__)
            raise gr.Error(public(f"{fn.__name__} failed: {type(exc).__name__}: {exc}")) from None

    return wrapper  # type: ignore[return-value]


def public(message: str) -> str:
    """``message`` with every path under the server's temporary folders (uploads: Gradio's ``GRADIO_TEMP_DIR``,
    else the system's; validation copies) cut to its file name."""
    roots = {tempfile.gettempdir(), env("GRADIO_TEMP_DIR") or tempfile.gettempdir()}
    for root in sorted(roots, key=len, reverse=True):
        temp = re.escape(root.rstrip("/\\"))
        message = re.sub(temp + r"[/\\][^\s'\"]*", lambda m: Path(m.group(0)).name, message)
    return message


def caller_name(request: gr.Request | None, oauth: gr.OAuthProfile | None) -> str | None:
    """Who calls: the user Gradio's sign-in (``TOOLRAG_AUTH``) or Hugging Face's (on a Space) named, if any."""
    name = getattr(request, "username", None) if request is not None else None
    if not name and oauth is not None:
        name = oauth.get("preferred_username")
    return str(name) if name else None


def checked_image(**kwargs: Any) -> gr.Image:
    """A ``gr.Image`` (filepath) whose upload check says what is wrong with a file that is not a usable
    image (toolrag's message, as for a path given to the library) instead of Gradio's generic error. The
    check wraps the component's ``preprocess``: a subclass of a Gradio component would make Gradio write a
    ``.pyi`` stub next to this module at import."""
    image = gr.Image(type="filepath", **kwargs)
    original = image.preprocess

    def preprocess(payload: Any) -> Any:
        try:
            return original(payload)
        except gr.Error:
            raise
        except Exception as exc:
            path = getattr(payload, "path", None)
            try:
                load_image(path) if path else None
            except ImageError as error:  # raised before any handler (and its guard) runs: no server path either
                message = public(f"cannot use this image: {error}")
            else:
                message = public(f"cannot use this upload as an image: {type(exc).__name__}: {exc}")
            log.info("an upload refused: %s", message)
            raise gr.Error(message, print_exception=False) from None

    setattr(image, "preprocess", preprocess)  # noqa: B010 - an instance attribute, on purpose
    return image
