"""Drawing primitives of the rendered sample documents (scripts/render_assets.py): fonts, text that falls back
to WenQuanYi for CJK, dashed rules, deterministic "QR codes", barcodes and seals, the Chinese upper-case amount,
canvases, windows and buttons. Nothing is random: codes come from SHA-256 digests of fixed strings.

Chinese text needs the WenQuanYi Zen Hei font (Debian package ``fonts-wqy-zenhei``); English documents use
DejaVu Sans (``fonts-dejavu-core``) when it is installed and fall back to WenQuanYi otherwise (the committed
files were rendered with both fonts present).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

__all__ = ["BLACK", "BLUE", "GREY", "LIGHT", "SEAL_RED", "VAT_BROWN", "WHITE", "Color", "Font", "barcode",
           "button", "canvas", "dashed", "draw_text", "font", "has_cjk", "qr", "rmb_upper", "seal", "seed_bits",
           "window"]

_CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc")
_DEJAVU = Path("/usr/share/fonts/truetype/dejavu")

Font = ImageFont.FreeTypeFont
Color = tuple[int, int, int]

BLACK: Color = (20, 20, 20)
GREY: Color = (110, 110, 110)
LIGHT: Color = (215, 215, 215)
WHITE: Color = (255, 255, 255)
VAT_BROWN: Color = (150, 80, 40)
SEAL_RED: Color = (205, 30, 30)
BLUE: Color = (30, 90, 180)


# --------------------------------------------------------------------------------------------- fonts
def font(size: int, kind: str = "cjk") -> Font:
    """Return a font: ``cjk`` (WenQuanYi, also used for mixed text), ``sans``, ``bold`` or ``mono``."""
    if not _CJK_FONT.exists():
        raise SystemExit(f"CJK font {_CJK_FONT} not found: install the Debian package fonts-wqy-zenhei")
    latin = {"sans": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "mono": "DejaVuSansMono.ttf"}
    if kind in latin and (_DEJAVU / latin[kind]).exists():
        return ImageFont.truetype(str(_DEJAVU / latin[kind]), size)
    return ImageFont.truetype(str(_CJK_FONT), size, index=1 if kind == "mono" else 0)


def draw_text(
    d: ImageDraw.ImageDraw,
    xy: tuple[float, float],
    s: str,
    f: Font,
    fill: Color = BLACK,
    *,
    anchor: str = "la",
    bold: bool = False,
) -> None:
    """Draw text; ``bold`` fakes a bold weight with a thin stroke (WenQuanYi has no bold face).

    A Latin-only font is swapped for WenQuanYi of the same size when ``s`` holds CJK characters, so mixed
    Chinese/English lines never render as empty boxes.
    """
    if has_cjk(s) and "wqy" not in str(getattr(f, "path", "")):
        f = font(int(f.size))
    d.text(xy, s, font=f, fill=fill, anchor=anchor, stroke_width=1 if bold else 0, stroke_fill=fill)


def has_cjk(s: str) -> bool:
    return any(
        "\u2e80" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" or "\u3000" <= ch <= "\u303f" for ch in s
    )


def dashed(d: ImageDraw.ImageDraw, x0: int, x1: int, y: int, fill: Color = GREY, dash: int = 10) -> None:
    for x in range(x0, x1, dash * 2):
        d.line([(x, y), (min(x + dash, x1), y)], fill=fill, width=2)


# ------------------------------------------------------------------------------- deterministic codes
def seed_bits(seed: str, n: int) -> list[int]:
    """``n`` pseudo-random bits derived from ``seed`` by chained SHA-256 (no RNG state involved)."""
    out: list[int] = []
    block = seed.encode()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out.extend((byte >> i) & 1 for byte in block for i in range(8))
    return out[:n]


def qr(d: ImageDraw.ImageDraw, x: int, y: int, size: int, seed: str, fill: Color = BLACK) -> None:
    """Draw a QR-like 25x25 module block with the three finder squares (not a decodable QR code)."""
    n = 25
    m = size / n
    bits = seed_bits(seed, n * n)
    finders = [(0, 0), (n - 7, 0), (0, n - 7)]

    def in_finder(r: int, c: int) -> bool:
        return any(fr <= r < fr + 8 and fc <= c < fc + 8 for fr, fc in [(-1, -1), (-1, n - 8), (n - 8, -1)])

    for r in range(n):
        for c in range(n):
            if not in_finder(r, c) and bits[r * n + c]:
                d.rectangle([x + c * m, y + r * m, x + (c + 1) * m - 1, y + (r + 1) * m - 1], fill=fill)
    for fr, fc in finders:
        x0, y0 = x + fc * m, y + fr * m
        d.rectangle([x0, y0, x0 + 7 * m - 1, y0 + 7 * m - 1], fill=fill)
        d.rectangle([x0 + m, y0 + m, x0 + 6 * m - 1, y0 + 6 * m - 1], fill=WHITE)
        d.rectangle([x0 + 2 * m, y0 + 2 * m, x0 + 5 * m - 1, y0 + 5 * m - 1], fill=fill)


def barcode(d: ImageDraw.ImageDraw, x: int, y: int, w: int, h: int, seed: str) -> None:
    """Draw a 1-D barcode-like pattern of bars whose widths come from ``seed``."""
    bits = seed_bits(seed, 400)
    pos, i = x, 0
    while pos < x + w - 6:
        width = 2 + 2 * bits[i] + 2 * bits[i + 1]
        if i % 4 == 0:
            d.rectangle([pos, y, min(pos + width - 1, x + w), y + h], fill=BLACK)
        pos += width
        i = (i + 2) % 398


def seal(d: ImageDraw.ImageDraw, cx: int, cy: int, r: int, top: str, bottom: str, middle: str = "") -> None:
    """A round red company seal: ring, star, name above it (set straight), optional label and code below."""
    d.ellipse([cx - r, cy - r, cx + r, cy + r], outline=SEAL_RED, width=5)
    star = [
        (
            cx + (r * 0.22 if k % 2 == 0 else r * 0.09) * _cos(k),
            cy + (r * 0.22 if k % 2 == 0 else r * 0.09) * _sin(k),
        )
        for k in range(10)
    ]
    d.polygon(star, fill=SEAL_RED)
    draw_text(d, (cx, cy - r * 0.5), top, font(max(12, r // 5)), SEAL_RED, anchor="mm")
    if middle:
        draw_text(d, (cx, cy + r * 0.38), middle, font(max(12, r // 5)), SEAL_RED, anchor="mm")
    draw_text(d, (cx, cy + r * 0.68), bottom, font(max(10, r // 7)), SEAL_RED, anchor="mm")


def _cos(k: int) -> float:
    return math.cos(-math.pi / 2 + k * math.pi / 5)


def _sin(k: int) -> float:
    return math.sin(-math.pi / 2 + k * math.pi / 5)


def rmb_upper(amount: float) -> str:
    """Chinese upper-case amount as printed on invoices, e.g. 1130.00 -> 壹仟壹佰叁拾圆整."""
    digits = "零壹贰叁肆伍陆柒捌玖"
    units = ["", "拾", "佰", "仟", "万", "拾", "佰", "仟", "亿"]
    fen_total = round(amount * 100)
    yuan, jiao, fen = fen_total // 100, fen_total // 10 % 10, fen_total % 10
    out, zero = "", False
    s = str(yuan)
    for i, ch in enumerate(s):
        pos = len(s) - 1 - i
        if ch == "0":
            zero = True
            if pos == 4:
                out += "万"
            continue
        if zero and out:
            out += "零"
        zero = False
        out += digits[int(ch)] + units[pos]
    out = (out or "零") + "圆"
    if jiao == 0 and fen == 0:
        return out + "整"
    if jiao:
        out += digits[jiao] + "角"
    elif fen:
        out += "零"
    if fen:
        out += digits[fen] + "分"
    return out


def canvas(w: int, h: int, bg: Color = WHITE) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = Image.new("RGB", (w, h), bg)
    return img, ImageDraw.Draw(img)



def window(
    w: int, h: int, title: str, bg: Color = (240, 240, 240)
) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img, d = canvas(w, h, (58, 110, 165))
    d.rectangle([20, 20, w - 20, h - 20], fill=bg, outline=(120, 120, 120), width=2)
    d.rectangle([21, 21, w - 21, 70], fill=WHITE)
    draw_text(d, (40, 45), title, font(24, "sans"), anchor="lm")
    # minimise, maximise and close buttons, drawn (the fonts lack the symbols)
    cx = w - 150
    d.line([(cx - 8, 46), (cx + 8, 46)], fill=GREY, width=2)
    d.rectangle([cx + 45 - 8, 37, cx + 45 + 8, 53], outline=GREY, width=2)
    d.line([(cx + 90 - 8, 37), (cx + 90 + 8, 53)], fill=GREY, width=2)
    d.line([(cx + 90 - 8, 53), (cx + 90 + 8, 37)], fill=GREY, width=2)
    return img, d


def button(d: ImageDraw.ImageDraw, x: int, y: int, w: int, label: str, primary: bool = False) -> None:
    d.rounded_rectangle(
        [x, y, x + w, y + 50],
        radius=6,
        fill=BLUE if primary else WHITE,
        outline=BLUE if primary else (150, 150, 150),
        width=2,
    )
    draw_text(d, (x + w / 2, y + 25), label, font(24, "sans"), WHITE if primary else BLACK, anchor="mm")

