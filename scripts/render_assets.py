"""Regenerate the images of the bundled sample catalog (``assets/`` and ``assets/queries/``).

The catalog needs realistic pictures for its image-bearing tools and, separately, for the labelled queries
(a different receipt, another invoice, a crop of a photo...), so that image retrieval is evaluated on images
the index has never seen. Two kinds of files are produced:

* documents rendered with Pillow: what each one says is data (``scripts/asset_documents.yaml``: the output
  file, its template and the template's arguments), how it looks is code (``scripts/asset_forms.py`` and
  ``scripts/asset_screens.py``, on the primitives of ``scripts/asset_drawing.py``). Nothing is random: "QR
  codes" and barcodes are drawn from SHA-256 digests of fixed strings, so the same Pillow and fonts give the
  same bytes (``tests/test_render_assets.py`` compares every rendering with the committed file);
* free-licence photos copied from scikit-image's bundled sample data (public domain / CC0), re-encoded to a
  reasonable size, plus crops / flips of them for the queries.

Usage::

    pip download scikit-image --no-deps -d /tmp/skimg && (cd /tmp/skimg && unzip -q -o scikit_image-*.whl)
    python -m scripts.render_assets --skimage-data /tmp/skimg/skimage/data

Without ``--skimage-data`` only the rendered documents are regenerated. Chinese text needs the WenQuanYi
Zen Hei font (Debian package ``fonts-wqy-zenhei``); English documents use DejaVu Sans (``fonts-dejavu-core``)
when it is installed and fall back to WenQuanYi otherwise (the committed files were rendered with both fonts
present). Every output file is listed with its source and licence in ``assets/ATTRIBUTION.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from PIL import Image, ImageOps

from scripts import asset_forms, asset_screens

__all__ = ["DOCUMENTS", "PHOTOS", "TEMPLATES", "copy_photos", "documents", "main", "render", "render_documents"]

HERE = Path(__file__).resolve().parent.parent / "assets"
#: The documents' content: output file -> template name and its arguments.
DOCUMENTS = Path(__file__).resolve().with_name("asset_documents.yaml")
#: Every template a document may name.
TEMPLATES: dict[str, Callable[..., Image.Image]] = {
    name: getattr(module, name) for module in (asset_forms, asset_screens) for name in module.__all__
}


def _frozen(value: Any) -> Any:
    """Lists of the YAML file as tuples (colours, rows), the shapes the templates were written for."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def documents(path: Path = DOCUMENTS) -> dict[str, dict[str, Any]]:
    """The content file: output name -> {template, arguments...}; SystemExit naming the entry and the fix."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for out, entry in data.items():
        if not isinstance(entry, dict) or entry.get("template") not in TEMPLATES:
            raise SystemExit(f"{path.name}: {out}: 'template' must be one of {', '.join(sorted(TEMPLATES))}")
    return data


def render(entry: dict[str, Any]) -> Image.Image:
    """One document: its template called with its arguments."""
    arguments = {key: _frozen(value) for key, value in entry.items() if key != "template"}
    return TEMPLATES[entry["template"]](**arguments)


# photo name in assets/ -> (skimage file, max side)
PHOTOS: dict[str, tuple[str, int]] = {
    "astronaut.jpg": ("astronaut.png", 512),
    "chelsea.jpg": ("chelsea.png", 451),
    "coffee.jpg": ("coffee.png", 600),
    "rocket.jpg": ("rocket.jpg", 640),
    "hubble_deep_field.jpg": ("hubble_deep_field.jpg", 800),
    "camera.jpg": ("camera.png", 512),
    "horse.png": ("horse.png", 400),
}


def _flatten(img: Image.Image) -> Image.Image:
    """Grey images stay grey; transparency is composited onto white; everything else becomes RGB."""
    if img.mode in ("L", "1", "I;16"):
        return img.convert("L")
    if img.mode in ("RGBA", "LA", "P"):
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return img.convert("RGB")


def _query_photo_variants(src: Path) -> dict[str, Image.Image]:
    """Crops, flips and small rotations of the photos, so query images differ from the indexed ones."""

    def load(name: str) -> Image.Image:
        return _flatten(Image.open(src / name))

    astronaut = (
        load("astronaut.png")
        .crop((40, 0, 440, 440))
        .rotate(4, resample=Image.Resampling.BICUBIC, fillcolor=(255, 255, 255))
    )
    return {
        "queries/portrait_crop.jpg": astronaut,
        "queries/cat_flipped.jpg": ImageOps.mirror(load("chelsea.png").crop((40, 10, 430, 290))),
        "queries/coffee_crop.jpg": load("coffee.png").crop((90, 40, 510, 390)),
        "queries/rocket_crop.jpg": load("rocket.jpg").crop((170, 0, 470, 427)),
        "queries/hubble_crop.jpg": load("hubble_deep_field.jpg").crop((150, 150, 850, 750)),
        "queries/camera_crop.jpg": load("camera.png").crop((90, 40, 460, 470)),
        "queries/horse_flipped.png": ImageOps.expand(
            ImageOps.mirror(load("horse.png")), border=30, fill=(255, 255, 255)
        ),
    }


def _save(img: Image.Image, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jpg":
        img.save(path, "JPEG", quality=85, optimize=True)
    else:
        img.save(path, "PNG", optimize=True)
    size = path.stat().st_size
    if size > 300_000:
        raise SystemExit(f"{path} is {size} bytes: keep every asset under 300 KB (lower quality or size)")


def copy_photos(skimage_data: Path) -> list[Path]:
    """Re-encode the scikit-image sample photos used by the catalog (and their query variants)."""
    written: list[Path] = []
    for out, (name, side) in PHOTOS.items():
        src = skimage_data / name
        if not src.exists():
            raise SystemExit(
                f"{src} not found: pass the skimage/data folder of an unpacked scikit-image wheel"
            )
        img = _flatten(Image.open(src))
        img.thumbnail((side, side), Image.Resampling.LANCZOS)
        _save(img, HERE / out)
        written.append(HERE / out)
    for out, img in _query_photo_variants(skimage_data).items():
        _save(img, HERE / out)
        written.append(HERE / out)
    return written


def render_documents() -> list[Path]:
    """Render every document of :data:`DOCUMENTS` into ``assets/``."""
    written: list[Path] = []
    for out, entry in documents().items():
        _save(render(entry), HERE / out)
        written.append(HERE / out)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--skimage-data",
        type=Path,
        default=None,
        help="the skimage/data folder of an unpacked scikit-image wheel (copies the photos)",
    )
    args = parser.parse_args(argv)
    written = render_documents()
    if args.skimage_data is not None:
        written += copy_photos(args.skimage_data)
    for path in written:
        sys.stdout.write(f"{path.relative_to(HERE)}  {path.stat().st_size // 1024} KB\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
