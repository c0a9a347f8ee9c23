"""Opening images safely: every image toolrag reads (a request's, a tool's example) goes through here.

Pillow only, no models, so the catalog loader, the editor, lint, the index and the encoders share one
definition of a usable image and one error message for each way an image can be unusable:

- every image: a readable file or bytes, a decodable, complete image, at most ``max_bytes`` and ``max_pixels``;
- a request's image of a degenerate shape (a side under :data:`MIN_SIDE` pixels, or more than
  :data:`MAX_ASPECT` times longer than wide, like a 1x5000 strip) is padded with white to a shape the models
  read (RapidOCR cannot resize a 1x5000 strip; the image models would crop it to nothing);
- a tool's example image of a degenerate shape (:func:`shape_problem`) is refused by ``toolrag lint``, the
  index and the editor alike (:func:`check_example_image`): it is a mistake in the catalog, not a request.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import math
import re
import stat
import warnings
from pathlib import Path
from typing import BinaryIO

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from toolrag.errors import ImageError
from toolrag.paths import path_problem, shown

__all__ = ["MAX_ASPECT", "MIN_EXAMPLE_SIDE", "MIN_SIDE", "ImageSource", "check_example_image", "decode_base64_image",
           "fit_for_models", "image_hash", "load_image", "probe_example_image", "shape_problem"]


ImageSource = str | Path | bytes | bytearray | memoryview | BinaryIO | np.ndarray | Image.Image
"""What an image may be given as: a path, a ``data:image/...;base64,`` URL, its bytes, a binary file object
(``open(..., "rb")``, ``BytesIO``), a numpy array (height x width, optionally x 1, 3 or 4 channels: uint8, bool,
or floats in 0-1 or 0-255) or a PIL image."""
_KINDS = ("a path, a data:image/...;base64, URL, bytes, a binary file object (BytesIO, open(path, 'rb')), a numpy "
          "array or a PIL image")
#: A URL of a scheme that would need fetching (``https://``, ``ftp://``, ``s3://``...): never fetched.
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
#: Text that is likely an image's bytes as base64 given where a path was expected.
_BASE64 = re.compile(r"^[A-Za-z0-9+/_-]{64,}={0,2}$")

#: Longest side / shortest side beyond which an image is degenerate: padded (a request), refused (an example).
MAX_ASPECT = 20
#: Shortest side a request's image is padded up to (RapidOCR rounds sides to multiples of 32).
MIN_SIDE = 32
#: Shortest side a tool's example image must have.
MIN_EXAMPLE_SIDE = 16
#: A degenerate image's long side is first scaled down to this (what RapidOCR reads at most), so padding a
#: 1x40000 strip does not make an 80-megapixel image.
_MAX_PADDED_SIDE = 2000


def load_image(
    source: ImageSource, *, max_bytes: int = 20_000_000, max_pixels: int = 40_000_000, fit: bool = True
) -> Image.Image:
    """Open an image (any :data:`ImageSource`) as RGB (alpha on white, EXIF rotation applied); with ``fit`` a
    degenerate shape is padded for the models (:func:`fit_for_models`).

    Raises ImageError naming the file for a missing file (or one that is not a regular file), a non-image, a
    truncated file (the whole image is decoded, truncation is never tolerated), a file above ``max_bytes`` or
    more than ``max_pixels`` pixels, and for a source of another type (naming the type and what is accepted).
    """
    if max_bytes < 1 or max_pixels < 1:
        raise ValueError(f"max_bytes and max_pixels must be positive (got {max_bytes}, {max_pixels})")
    if isinstance(source, np.ndarray):
        source = _from_array(source)
    if isinstance(source, Image.Image):
        rgb = _to_rgb(source, name="the given image", max_pixels=max_pixels)
        return fit_for_models(rgb) if fit else rgb
    file: str | None = None  # the image's path, an error's field
    if isinstance(source, bytes | bytearray | memoryview):
        data, name = bytes(source), f"the uploaded image ({len(source):,} bytes)"
    elif callable(getattr(source, "read", None)):
        data, name = _read_stream(source, max_bytes)  # type: ignore[arg-type]
    elif isinstance(source, str) and source.lstrip()[:5].lower() == "data:":
        data, name = decode_base64_image(source), "the image of the data: URL"
    elif isinstance(source, str | Path):
        _check_path(source)
        path = Path(source).expanduser()
        name = file = str(path)
        if not path.is_file():
            raise ImageError(f"image file {name}: {_not_a_file(path)}", file=file)
        size = path.stat().st_size
        if size > max_bytes:
            raise ImageError(f"image file {name} is {size:,} bytes, above the limit of {max_bytes:,} bytes; "
                             "use a smaller or more compressed image", file=file)
        if size == 0:
            raise ImageError(f"image file {name} is empty (0 bytes)", file=file)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ImageError(f"image file {name} cannot be read: {exc}", file=file) from exc
    else:
        raise ImageError(f"an image of type {type(source).__module__}.{type(source).__qualname__} cannot be read: "
                         f"give {_KINDS}")
    if len(data) > max_bytes:
        raise ImageError(f"{name} is {len(data):,} bytes, above the limit of {max_bytes:,} bytes")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            _check_pixels(img, name, max_pixels)
            img.load()
    except Image.DecompressionBombError as exc:
        raise ImageError(f"{name} has too many pixels (decompression bomb?): {exc}", file=file) from exc
    except UnidentifiedImageError as exc:
        raise ImageError(f"{name} is not an image Pillow can read (PNG, JPEG, WebP, ...)", file=file) from exc
    except (OSError, SyntaxError, ValueError) as exc:
        kind = "is truncated or corrupt" if "truncat" in str(exc).lower() else "cannot be decoded"
        raise ImageError(f"{name} {kind}: {exc}", file=file) from exc
    rgb = _to_rgb(img, name=name, max_pixels=max_pixels)
    return fit_for_models(rgb) if fit else rgb


def decode_base64_image(text: str) -> bytes:
    """The bytes of an image given as base64 text or a ``data:image/...;base64,`` URL (MCP callers and web clients
    send images so); an ImageError saying what is expected for anything else."""
    data = text.strip()
    if data[:5].lower() == "data:":
        header, _, data = data.partition(",")
        if not header.lower().endswith(";base64"):
            raise ImageError(f"a data: URL of an image must be base64-encoded ({shown(header)}): use "
                             "data:image/png;base64,<the bytes as base64>")
    try:
        return base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ImageError("expected the image's bytes as base64 (or a data:image/png;base64,... URL)") from None


def _check_path(source: str | Path) -> None:
    """Refuse a value given as an image's path that can never be one: a URL (never fetched: toolrag runs
    offline, and a server must not fetch what a request names), an image's base64 text, a NUL byte or a name
    too long for the file system."""
    text = str(source).strip()
    if _URL.match(text):
        raise ImageError(f"image {shown(text)} is a URL: toolrag does not download images (it runs offline, and a "
                         "server must not fetch what a request names); download it and give its path or bytes")
    problem = path_problem(text)
    if problem is None and Path(text).expanduser().exists():
        return
    if _looks_base64(text):
        raise ImageError(f"image {shown(text)} looks like an image's bytes as base64, not a path: give "
                         "base64.b64decode(text) (the bytes) or a data:image/png;base64,... URL")
    if problem is not None:
        raise ImageError(f"image path {shown(text)} {problem}: give the path of an image file, or the image "
                         "itself (bytes, a data:image/...;base64, URL, a PIL image)")


#: How the image formats Pillow reads most often start (PNG, JPEG, GIF, WebP's RIFF, BMP, TIFF).
_SIGNATURES = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF", b"BM", b"II*\x00", b"MM\x00*")


def _looks_base64(text: str) -> bool:
    """Whether ``text`` is base64 text of an image file (its first bytes decode to an image format's signature)."""
    compact = "".join(text.split())
    if not _BASE64.match(compact):
        return False
    try:
        head = base64.b64decode(compact[:16], validate=True)
    except (binascii.Error, ValueError):
        return False
    return head.startswith(_SIGNATURES)


def shape_problem(size: tuple[int, int], *, min_side: int = MIN_EXAMPLE_SIDE) -> str | None:
    """Why an image of ``size`` (width, height) is degenerate, or ``None``: a side under ``min_side``
    pixels, or the long side more than :data:`MAX_ASPECT` times the short one."""
    width, height = size
    if min(width, height) < min_side:
        return f"a side is under {min_side} pixels"
    if max(width, height) > MAX_ASPECT * min(width, height):
        return f"it is {max(width, height) / min(width, height):.0f} times longer than wide (at most {MAX_ASPECT})"
    return None


def check_example_image(source: ImageSource, *, name: str | None = None) -> Image.Image:
    """Load a tool's example image and refuse a degenerate one (see :func:`shape_problem`) with an
    ImageError naming it; the same rule for ``toolrag lint``, the index and the editor."""
    img = load_image(source, fit=False)
    problem = shape_problem(img.size)
    if problem:
        label = name or (str(source) if isinstance(source, str | Path) else "the image")
        width, height = img.size
        raise ImageError(f"example image {label} is {width}x{height} pixels: {problem}; use an image of at "
                         f"least {MIN_EXAMPLE_SIDE} pixels a side and at most {MAX_ASPECT} times longer than "
                         "wide (crop it to its content)")
    return img


def probe_example_image(path: str | Path, *, max_bytes: int = 20_000_000, max_pixels: int = 40_000_000) -> None:
    """:func:`check_example_image` of a file from its header alone, without decoding the pixels (well under a
    millisecond): a missing or empty file, one that is not an image, too large, too many pixels or of a
    degenerate shape is refused with the same ImageError. Only a file truncated after its header passes
    here; the index decodes every new image completely before writing anything."""
    file = Path(path).expanduser()
    name = str(file)
    if not file.is_file():
        raise ImageError(f"image file {name}: {_not_a_file(file)}")
    size = file.stat().st_size
    if size > max_bytes:
        raise ImageError(f"image file {name} is {size:,} bytes, above the limit of {max_bytes:,} bytes; "
                         "use a smaller or more compressed image")
    if size == 0:
        raise ImageError(f"image file {name} is empty (0 bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(file) as img:
                _check_pixels(img, name, max_pixels)
                width, height = img.size
    except Image.DecompressionBombError as exc:
        raise ImageError(f"{name} has too many pixels (decompression bomb?): {exc}") from exc
    except UnidentifiedImageError as exc:
        raise ImageError(f"{name} is not an image Pillow can read (PNG, JPEG, WebP, ...)") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageError(f"{name} cannot be decoded: {exc}") from exc
    problem = shape_problem((width, height))
    if problem:
        raise ImageError(f"example image {name} is {width}x{height} pixels: {problem}; use an image of at least "
                         f"{MIN_EXAMPLE_SIDE} pixels a side and at most {MAX_ASPECT} times longer than wide (crop it "
                         "to its content)")


def fit_for_models(img: Image.Image) -> Image.Image:
    """``img`` unchanged when its shape is usable, else centred on white so every side is at least
    :data:`MIN_SIDE` pixels and at most :data:`MAX_ASPECT` times the other (a degenerate strip is first
    scaled so its long side is at most 2000 pixels)."""
    width, height = img.size
    if shape_problem(img.size, min_side=MIN_SIDE) is None:
        return img
    long_side = max(width, height)
    if long_side > _MAX_PADDED_SIDE and long_side > MAX_ASPECT * min(width, height):
        scale = _MAX_PADDED_SIDE / long_side
        width, height = max(1, round(width * scale)), max(1, round(height * scale))
        img = img.resize((width, height), Image.Resampling.BILINEAR)
    short = max(MIN_SIDE, math.ceil(max(width, height) / MAX_ASPECT))
    new_size = (max(width, short), max(height, short))
    canvas = Image.new("RGB", new_size, (255, 255, 255))
    canvas.paste(img.convert("RGB"), ((new_size[0] - width) // 2, (new_size[1] - height) // 2))
    return canvas


def _not_a_file(path: Path) -> str:
    """Why ``path`` (not a regular file) cannot be an image file: missing, a folder, a device, a pipe..."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "not found"
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))
    kind = next((label for test, label in kinds if test(mode)), "not a regular file")
    return f"is {kind}, not an image file; give the path of an image file (PNG, JPEG, WebP, ...)"


def _read_stream(stream: BinaryIO, max_bytes: int) -> tuple[bytes, str]:
    """The bytes of a binary file object (read from where it stands, at most ``max_bytes`` + 1) and its name."""
    label = getattr(stream, "name", None)
    name = f"the image file object {label}" if isinstance(label, str) else "the given image file object"
    try:
        data = stream.read(max_bytes + 1)
    except (OSError, ValueError) as exc:  # closed, or not readable
        raise ImageError(f"{name} cannot be read: {exc}") from exc
    if isinstance(data, str):
        raise ImageError(f"{name} is open in text mode: open it in binary mode (open(path, 'rb'))")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ImageError(f"{name} returned {type(data).__name__} from read(), not bytes: give {_KINDS}")
    return bytes(data), name


def _from_array(array: np.ndarray) -> Image.Image:
    """A PIL image of a numpy array: height x width (grey), or x 1, 3 (RGB) or 4 (RGBA) channels; uint8 as is,
    bool as black and white, floats in 0-1 (scaled) or 0-255; anything else is an ImageError naming it."""
    shape, dtype = array.shape, array.dtype
    if array.ndim == 3 and shape[2] == 1:
        array = array[:, :, 0]
    if not (array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (3, 4))) or 0 in array.shape:
        raise ImageError(f"an image array of shape {shape}: give height x width (grey) or height x width x 3 (RGB) "
                         "or x 4 (RGBA)")
    if dtype == np.bool_:
        array = array.astype(np.uint8) * 255
    elif np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer):
        if np.issubdtype(dtype, np.floating):
            if not np.isfinite(array).all():
                raise ImageError(f"an image array of {dtype} holds NaN or infinite values")
            top = float(array.max()) if array.size else 0.0
            array = array * 255.0 if top <= 1.0 else array
        array = np.clip(array, 0, 255).astype(np.uint8)
    else:
        raise ImageError(f"an image array of dtype {dtype}: give uint8 (0-255), bool or float (0-1) values")
    return Image.fromarray(np.ascontiguousarray(array))


def _check_pixels(img: Image.Image, name: str, max_pixels: int) -> None:
    width, height = img.size
    if width * height > max_pixels:
        raise ImageError(f"{name} is {width}x{height} = {width * height:,} pixels, above the limit of "
                         f"{max_pixels:,} (a decompression bomb or an oversized scan); downscale it")
    if width < 1 or height < 1:
        raise ImageError(f"{name} is empty ({width}x{height} pixels)")


def _to_rgb(img: Image.Image, *, name: str, max_pixels: int) -> Image.Image:
    _check_pixels(img, name, max_pixels)
    img = ImageOps.exif_transpose(img) or img
    if img.mode in {"RGBA", "LA", "PA"} or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img.convert("RGB")


def image_hash(image: Image.Image | bytes) -> str:
    """sha256 of file bytes, or of mode + size + pixel bytes of a PIL image: a cache key for OCR/features."""
    h = hashlib.sha256()
    if isinstance(image, Image.Image):
        h.update(f"{image.mode}:{image.size[0]}x{image.size[1]}:".encode())
        h.update(image.tobytes())
    else:
        h.update(bytes(image))
    return h.hexdigest()
