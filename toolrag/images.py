"""Opening images safely: every image toolrag reads (a request's, a tool's example) goes through here.

Pillow only, no models, so the catalog loader, the editor and the encoders share one definition of a usable
image and one error message for each way an image can be unusable.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from toolrag.errors import ImageError

__all__ = ["ImageSource", "image_hash", "load_image"]


ImageSource = str | Path | bytes | Image.Image


def load_image(
    source: ImageSource, *, max_bytes: int = 20_000_000, max_pixels: int = 40_000_000
) -> Image.Image:
    """Open an image from a path, bytes or a PIL image as RGB (alpha on white, EXIF rotation applied).

    Raises ImageError naming the file for a missing file, a non-image, a truncated file (the whole image is
    decoded, truncation is never tolerated), a file above ``max_bytes`` or more than ``max_pixels`` pixels.
    """
    if max_bytes < 1 or max_pixels < 1:
        raise ValueError(f"max_bytes and max_pixels must be positive (got {max_bytes}, {max_pixels})")
    if isinstance(source, Image.Image):
        return _to_rgb(source, name="the given image", max_pixels=max_pixels)
    if isinstance(source, bytes | bytearray | memoryview):
        data, name = bytes(source), f"the uploaded image ({len(source):,} bytes)"
    elif isinstance(source, str | Path):
        path = Path(source).expanduser()
        name = str(path)
        if not path.is_file():
            reason = "is a folder, not an image file" if path.is_dir() else "not found"
            raise ImageError(f"image file {name}: {reason}")
        size = path.stat().st_size
        if size > max_bytes:
            raise ImageError(f"image file {name} is {size:,} bytes, above the limit of {max_bytes:,} bytes; "
                             "use a smaller or more compressed image")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ImageError(f"image file {name} cannot be read: {exc}") from exc
    else:
        raise TypeError(f"unsupported image source type {type(source).__name__}")
    if len(data) > max_bytes:
        raise ImageError(f"{name} is {len(data):,} bytes, above the limit of {max_bytes:,} bytes")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            _check_pixels(img, name, max_pixels)
            img.load()
    except Image.DecompressionBombError as exc:
        raise ImageError(f"{name} has too many pixels (decompression bomb?): {exc}") from exc
    except UnidentifiedImageError as exc:
        raise ImageError(f"{name} is not an image Pillow can read (PNG, JPEG, WebP, ...)") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        kind = "is truncated or corrupt" if "truncat" in str(exc).lower() else "cannot be decoded"
        raise ImageError(f"{name} {kind}: {exc}") from exc
    return _to_rgb(img, name=name, max_pixels=max_pixels)


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
