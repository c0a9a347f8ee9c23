"""Image episodes for the decision model: training requests shown as pictures, and photos that need no tool.

The decision reads an image by its signals' standing (``toolrag.decision.view``: the text read in it against the
no-tool requests and among the visible tools, how much text, the concepts' z). It learns them here, never from
the bundled catalog's assets or its queries (they stay the test):

- ``img_gold`` / ``img_sibling``: a labelled training request drawn as a picture (a document, a screenshot, a
  receipt, a card or a note, slightly turned and recompressed), with a short deictic text ("handle this",
  "处理一下", or nothing typed; a fifth of them type the request itself), to its gold tools among distractors ->
  EXECUTE, and to the same tools without the gold ones -> NO_TOOL;
- ``img_foreign``: a request of another source drawn as a picture, to this catalog -> NO_TOOL;
- ``photo_none``: a photo without text and a deictic text (or none) -> NO_TOOL: a picture that asks for nothing
  a listed tool does;
- ``photo_gold`` / ``photo_sibling``: a text episode with a photo attached -> what the text asks (a photo
  alone does not make a request need no tool).

Photos: scikit-image's sample photographs that the bundled assets do not use (``--skimage-data``, the wheel's
``skimage/data`` folder, as ``scripts/render_assets.py`` reads it) and scikit-learn's two sample images (always
installed), cropped, mirrored and recoloured per episode. A picture is drawn from its :class:`Picture` when the
episode is searched: nothing is stored.
"""

from __future__ import annotations

import io
import random
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from PIL import Image, ImageFilter

from bench.decision_episodes import GROUPS, Episode, Space, _catalog, _nearest, read_pairs, size_draw
from bench.train_data import FOLDERS

__all__ = ["Picture", "build_image_episodes", "draw", "photo_files"]

#: What a user types beside a picture that says nothing of its own (and "" for nothing typed).
DEICTIC: Mapping[str, tuple[str, ...]] = {
    "en": ("handle this", "take care of this please", "can you do this for me?", "please process this",
           "see attached", "this one", "", ""),
    "zh": ("处理一下", "帮我弄一下这个", "看看这个", "按这个办", "这个", "帮我搞定", "", ""),
}
STYLES = ("document", "screenshot", "receipt", "card", "note")
#: scikit-image's sample photographs the bundled assets do not use (assets/ATTRIBUTION.md lists those that are).
SKIMAGE_PHOTOS = ("motorcycle_left.png", "motorcycle_right.png", "gravel.png", "grass.png", "brick.png",
                  "coins.png", "moon.png", "retina.jpg", "ihc.png", "cell.png", "color.png",
                  "clock_motion.png")
_BUNDLED = ("astronaut", "rocket", "hubble", "chelsea", "coffee", "camera", "horse")
#: Requests drawn per training folder (``img_gold`` and ``img_sibling`` each), photo episodes in all.
PER_FOLDER, PHOTO_NONE, PHOTO_TEXT = 70, 260, 320


@dataclass(frozen=True)
class Picture:
    """How to draw one request image: ``text`` in ``style`` (a rendered picture), or the photo ``photo``
    (``text`` empty), varied by ``seed``."""

    style: str
    text: str
    seed: int
    photo: str = ""


def photo_files(skimage_data: Path | None) -> list[Path]:
    """The photos: scikit-learn's two sample images and the unused scikit-image ones in ``skimage_data``."""
    import sklearn.datasets

    files = [Path(f) for f in sklearn.datasets.load_sample_images().filenames]
    if skimage_data is not None:
        files += [skimage_data / name for name in SKIMAGE_PHOTOS if (skimage_data / name).is_file()
                  and not name.startswith(_BUNDLED)]
    return files


def draw(picture: Picture) -> Image.Image:
    """The picture, drawn (deterministic for one :class:`Picture`)."""
    rng = random.Random(picture.seed)
    img = _photo(picture, rng) if picture.photo else _render(picture, rng)
    if rng.random() < 0.5:
        img = img.rotate(rng.uniform(-2.5, 2.5), expand=True, fillcolor=(250, 250, 250))
    if rng.random() < 0.3:
        img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 0.9)))
    scale = rng.uniform(0.75, 1.0)
    img = img.resize((max(64, int(img.width * scale)), max(64, int(img.height * scale))))
    buffer = io.BytesIO()
    img.convert("RGB").save(buffer, "JPEG", quality=rng.randint(60, 92))
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def _photo(picture: Picture, rng: random.Random) -> Image.Image:
    from PIL import ImageEnhance, ImageOps

    img = Image.open(picture.photo).convert("RGB")
    w, h = img.size
    cw, ch = int(w * rng.uniform(0.5, 1.0)), int(h * rng.uniform(0.5, 1.0))
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    img = img.crop((x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        img = ImageOps.mirror(img)
    img = ImageEnhance.Color(img).enhance(rng.uniform(0.4, 1.4))
    return ImageEnhance.Brightness(img).enhance(rng.uniform(0.8, 1.2))


def _render(picture: Picture, rng: random.Random) -> Image.Image:
    from scripts.asset_drawing import BLACK, GREY, barcode, canvas, draw_text, font, has_cjk, window

    cjk = has_cjk(picture.text)
    width = {"document": 900, "screenshot": 1000, "receipt": 480, "card": 700, "note": 560}[picture.style]
    size = {"receipt": 22, "card": 30, "note": 28}.get(picture.style, 26)
    per_line = max(8, int((width - 120) / (size * (1.0 if cjk else 0.55))))
    lines = _wrap(picture.text, per_line, cjk)[:8]
    body = font(size, "mono" if picture.style == "receipt" else "sans")
    top = {"screenshot": 110, "receipt": 90, "document": 120}.get(picture.style, 50)
    height = top + len(lines) * int(size * 1.6) + (140 if picture.style == "receipt" else 70)
    if picture.style == "screenshot":
        img, d = window(width, height, rng.choice(("Message", "Ticket", "Chat", "消息", "工单")))
    else:
        bg = {"card": rng.choice(((236, 242, 250), (250, 244, 232), (240, 240, 240))), "note": (255, 240, 150)}
        img, d = canvas(width, height, bg.get(picture.style, (255, 255, 255)))
    if picture.style == "document":
        draw_text(d, (60, 50), rng.choice(("Request", "Memo", "Notice", "申请", "备忘")), font(34, "bold"), bold=True)
        d.line([(60, 95), (width - 60, 95)], fill=GREY, width=2)
    if picture.style == "receipt":
        draw_text(d, (width / 2, 45), rng.choice(("RECEIPT", "ORDER", "收据")), font(30, "bold"), anchor="mm")
    for i, line in enumerate(lines):
        draw_text(d, (60, top + i * int(size * 1.6)), line, body, BLACK)
    if picture.style == "receipt":
        barcode(d, 60, height - 110, width - 120, 70, str(picture.seed))
    return img


def _wrap(text: str, width: int, cjk: bool) -> list[str]:
    if not cjk:
        return textwrap.wrap(text, width) or [text]
    return [text[i:i + width] for i in range(0, len(text), width)] or [text]


def build_image_episodes(root: Path, spaces: Mapping[str, Space], text_episodes: Sequence[Episode], *,
                         photos: Sequence[Path], seed: int = 11, limit: int | None = None) -> list[Episode]:
    """The image episodes (:mod:`bench.decision_images`); ``root``: the converted training folders,
    ``spaces``: each source's tools (the catalogs are drawn as for text episodes), ``text_episodes``: the text
    episodes photos are attached to, ``photos``: :func:`photo_files`; ``limit`` scales the counts down."""
    rng = random.Random(seed)
    per_folder = min(PER_FOLDER, limit) if limit else PER_FOLDER
    scale = per_folder / PER_FOLDER
    pairs = read_pairs(root)
    pool = [(f, p) for f in FOLDERS for p in pairs[f]]
    out: list[Episode] = []
    for folder in FOLDERS:
        space = spaces[folder]
        position = {tool_id: i for i, tool_id in enumerate(space.ids)}
        for pair in rng.sample(pairs[folder], min(per_folder, len(pairs[folder]))):
            gold = tuple(g for g in pair["gold"] if g in position)
            if not gold:
                continue
            lang = pair.get("lang", "en")
            picture = Picture(rng.choice(STYLES), pair["query"], rng.randrange(1 << 30))
            typed = pair["query"] if rng.random() < 0.2 else rng.choice(DEICTIC["zh" if lang == "zh" else "en"])
            tools = _catalog(rng, gold, space, position)
            out.append(Episode(folder, "img_gold", typed, (), tools, gold, "EXECUTE", lang, picture))
            siblings = tuple(t for t in tools if t not in gold) or _nearest(gold, space, position, 1, rng)
            out.append(Episode(folder, "img_sibling", typed, (), siblings, gold, "NO_TOOL", lang, picture))
            if rng.random() < 0.3:
                other_folder, other = rng.choice(pool)
                while GROUPS[other_folder] == GROUPS[folder]:
                    other_folder, other = rng.choice(pool)
                other_lang = other.get("lang", "en")
                shown = Picture(rng.choice(STYLES), other["query"], rng.randrange(1 << 30))
                out.append(Episode(folder, "img_foreign", rng.choice(DEICTIC["zh" if other_lang == "zh" else "en"]),
                                   (), tools, (), "NO_TOOL", other_lang, shown))
    if photos:
        variants = [Picture("photo", "", rng.randrange(1 << 30), str(rng.choice(photos))) for _ in range(120)]
        for _ in range(round(PHOTO_NONE * scale)):
            folder = rng.choice(FOLDERS)
            ids = list(spaces[folder].ids)
            visible = tuple(sorted(rng.sample(ids, size_draw(rng, len(ids))), key=ids.index))
            lang = rng.choice(("en", "en", "zh"))
            out.append(Episode(folder, "photo_none", rng.choice(DEICTIC[lang]), (), visible, (), "NO_TOOL", lang,
                               rng.choice(variants)))
        texts = [e for e in text_episodes if e.kind in ("gold", "sibling") and not e.history]
        for episode in rng.sample(texts, min(round(PHOTO_TEXT * scale), len(texts))):
            out.append(replace(episode, kind=f"photo_{episode.kind}", image=rng.choice(variants)))
    return out


def image_of(episode: Episode) -> Any:
    """The episode's picture, drawn (``None`` for a text episode)."""
    return None if episode.image is None else draw(episode.image)
