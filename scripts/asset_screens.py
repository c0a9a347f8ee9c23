"""Templates of the rendered screens and boards (scripts/render_assets.py): bar and line charts, error dialogs,
sign-in pages, terminals, spreadsheets, whiteboards and printed notices. Each draws what
scripts/asset_documents.yaml gives it; layout and style live here, content there.
"""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from scripts.asset_drawing import (
    BLACK,
    BLUE,
    GREY,
    LIGHT,
    WHITE,
    Color,
    button,
    canvas,
    draw_text,
    font,
    seal,
    window,
)

__all__ = ["bar_chart", "error_dialog", "line_chart", "login", "notice", "sheet", "terminal", "whiteboard"]


def bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    unit: str,
    color: Color,
    ymax: float,
    step: float,
) -> Image.Image:
    w, h = 1100, 720
    img, d = canvas(w, h)
    f_t, f, f_s = font(38), font(26), font(22)
    draw_text(d, (w / 2, 30), title, f_t, anchor="ma", bold=True)
    x0, y0, x1, y1 = 130, 110, w - 60, h - 110
    v = 0.0
    while v <= ymax + 1e-9:
        y = y1 - (y1 - y0) * v / ymax
        d.line([(x0, y), (x1, y)], fill=LIGHT, width=1)
        draw_text(d, (x0 - 14, y), f"{v:g}", f_s, GREY, anchor="rm")
        v += step
    d.line([(x0, y0), (x0, y1), (x1, y1)], fill=BLACK, width=3)
    slot = (x1 - x0) / len(values)
    for i, (label, val) in enumerate(zip(labels, values, strict=True)):
        cx = x0 + slot * (i + 0.5)
        top = y1 - (y1 - y0) * val / ymax
        d.rectangle([cx - slot * 0.3, top, cx + slot * 0.3, y1], fill=color)
        draw_text(d, (cx, top - 10), f"{val:g}", f, anchor="md", bold=True)
        draw_text(d, (cx, y1 + 16), label, f, anchor="ma")
    draw_text(d, (40, y0 - 50), unit, f_s, GREY)
    return img


def line_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float], Color]],
    unit: str,
    ymax: float,
    step: float,
) -> Image.Image:
    w, h = 1200, 720
    img, d = canvas(w, h)
    f_t, f, f_s = font(36, "bold"), font(24, "sans"), font(22, "sans")
    draw_text(d, (w / 2, 28), title, f_t, anchor="ma")
    x0, y0, x1, y1 = 120, 120, w - 60, h - 100
    v = 0.0
    while v <= ymax + 1e-9:
        y = y1 - (y1 - y0) * v / ymax
        d.line([(x0, y), (x1, y)], fill=LIGHT, width=1)
        draw_text(d, (x0 - 14, y), f"{v:g}", f_s, GREY, anchor="rm")
        v += step
    d.line([(x0, y0), (x0, y1), (x1, y1)], fill=BLACK, width=3)
    dx = (x1 - x0) / (len(labels) - 1)
    for i, label in enumerate(labels):
        draw_text(d, (x0 + dx * i, y1 + 14), label, f, anchor="ma")
    lx = x0 + 20
    for name, vals, color in series:
        pts = [(x0 + dx * i, y1 - (y1 - y0) * val / ymax) for i, val in enumerate(vals)]
        d.line(pts, fill=color, width=5, joint="curve")
        for (px, py), val in zip(pts, vals, strict=True):
            d.ellipse([px - 7, py - 7, px + 7, py + 7], fill=color)
            draw_text(d, (px, py - 14), f"{val:g}", f_s, color, anchor="md")
        d.rectangle([lx, 82, lx + 30, 96], fill=color)
        draw_text(d, (lx + 40, 89), name, f_s, anchor="lm")
        lx += 60 + int(d.textlength(name, font=f_s))
    draw_text(d, (x1, 82), unit, f_s, GREY, anchor="rm")
    return img


def error_dialog(
    app: str, headline: str, lines: Sequence[str], code: str, buttons: Sequence[str]
) -> Image.Image:
    w, h = 1000, 480
    img, d = window(w, h, app)
    d.ellipse([60, 110, 150, 200], fill=(210, 40, 40))
    d.line([(85, 135), (125, 175)], fill=WHITE, width=10)
    d.line([(125, 135), (85, 175)], fill=WHITE, width=10)
    draw_text(d, (180, 110), headline, font(30, "bold"))
    y = 160
    for line in lines:
        draw_text(d, (180, y), line, font(24, "sans"))
        y += 36
    draw_text(d, (180, y + 10), code, font(24, "mono"), GREY)
    bx = w - 60
    for i, label in enumerate(reversed(buttons)):
        bx -= 170
        button(d, bx, h - 110, 150, label, primary=i == 0)
        bx -= 20
    return img


def login(message: Sequence[str], user: str, accent: Color) -> Image.Image:
    w, h = 900, 820
    img, d = canvas(w, h, (236, 240, 245))
    d.rounded_rectangle([150, 60, w - 150, h - 60], radius=16, fill=WHITE, outline=LIGHT, width=2)
    draw_text(d, (w / 2, 110), "Acme SSO", font(44, "bold"), BLUE, anchor="ma")
    draw_text(d, (w / 2, 172), "统一身份认证 · Sign in", font(26), GREY, anchor="ma")
    y = 240
    d.rounded_rectangle([200, y, w - 200, y + 120], radius=8, fill=(253, 236, 236), outline=accent, width=2)
    for i, line in enumerate(message):
        draw_text(d, (225, y + 18 + i * 34), line, font(24), accent)
    y = 400
    for label, value in [("Username 用户名", user), ("Password 密码", "••••••••••")]:
        draw_text(d, (200, y), label, font(24), GREY)
        d.rounded_rectangle([200, y + 36, w - 200, y + 96], radius=6, outline=(160, 160, 160), width=2)
        draw_text(d, (220, y + 66), value, font(26, "sans"), anchor="lm")
        y += 130
    button(d, 200, y + 6, w - 400, "Sign in 登录", primary=True)
    draw_text(d, (w / 2, y + 90), "Forgot password? 忘记密码", font(24), BLUE, anchor="ma")
    return img


def terminal(lines: Sequence[tuple[str, Color]], title: str) -> Image.Image:
    w = 1280
    h = 110 + 40 * len(lines)
    img, d = canvas(w, h, (30, 32, 38))
    d.rectangle([0, 0, w, 44], fill=(55, 58, 66))
    for i, col in enumerate([(240, 90, 80), (245, 190, 50), (90, 200, 90)]):
        d.ellipse([18 + i * 30, 14, 34 + i * 30, 30], fill=col)
    draw_text(d, (w / 2, 22), title, font(20, "sans"), (200, 200, 200), anchor="mm")
    f = font(24, "mono")
    y = 66
    for text, color in lines:
        draw_text(d, (24, y), text, f, color)
        y += 40
    return img


_FG: Color = (220, 220, 220)
_RED: Color = (255, 110, 100)
_YEL: Color = (230, 200, 110)


def whiteboard(lines: Sequence[tuple[str, Color, int]]) -> Image.Image:
    w, h = 1200, 780
    img, d = canvas(w, h, (120, 120, 125))
    d.rectangle([40, 40, w - 40, h - 40], fill=(246, 247, 244), outline=(200, 200, 200), width=6)
    d.rectangle([40, h - 70, w - 40, h - 40], fill=(180, 180, 185))
    y = 80
    for text, color, size in lines:
        draw_text(d, (100 if size < 40 else 90, y), text, font(size), color, bold=True)
        y += size + 26
    return img


def notice(
    title: str,
    body: Sequence[str],
    sign: Sequence[str],
    color: Color,
    stamp: tuple[str, str] | None,
    font_kind: str = "cjk",
) -> Image.Image:
    w, h = 1000, 1300
    img, d = canvas(w, h, (255, 253, 245))
    d.rectangle([30, 30, w - 30, h - 30], outline=color, width=6)
    draw_text(
        d,
        (w / 2, 90),
        title,
        font(56, "bold" if font_kind == "sans" else "cjk"),
        color,
        anchor="ma",
        bold=font_kind == "cjk",
    )
    d.line([(120, 180), (w - 120, 180)], fill=color, width=3)
    y = 230
    f = font(32, font_kind)
    for line in body:
        draw_text(d, (90, y), line, f)
        y += 56
    y += 40
    for line in sign:
        draw_text(d, (w - 90, y), line, f, anchor="ra")
        y += 54
    if stamp:
        seal(d, w - 600, y - 70, 95, stamp[0], stamp[1])
    return img.crop((0, 0, w, min(h, y + 120)))


def sheet(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    widths: Sequence[int],
    numeric: set[int],
) -> Image.Image:
    rh, left, top = 52, 60, 110
    w = left + sum(widths) + 30
    h = top + rh * (len(rows) + 2) + 40
    img, d = canvas(w, h)
    d.rectangle([0, 0, w, 50], fill=(33, 115, 70))
    draw_text(d, (20, 25), title, font(24), WHITE, anchor="lm")
    d.rectangle([0, 50, w, top - 2], fill=(243, 243, 243))
    draw_text(d, (20, 80), "fx", font(22, "sans"), GREY, anchor="lm")
    f = font(26)
    # column letters
    x = left
    for i, cw in enumerate(widths):
        d.rectangle([x, top, x + cw, top + rh], fill=(233, 233, 233), outline=(190, 190, 190))
        draw_text(d, (x + cw / 2, top + rh / 2), chr(ord("A") + i), font(22, "sans"), GREY, anchor="mm")
        x += cw
    all_rows = [headers, *rows]
    for r, row in enumerate(all_rows):
        y = top + rh * (r + 1)
        d.rectangle([0, y, left, y + rh], fill=(233, 233, 233), outline=(190, 190, 190))
        draw_text(d, (left / 2, y + rh / 2), str(r + 1), font(22, "sans"), GREY, anchor="mm")
        x = left
        for c, (cw, cell) in enumerate(zip(widths, row, strict=True)):
            d.rectangle(
                [x, y, x + cw, y + rh], fill=(226, 239, 218) if r == 0 else WHITE, outline=(190, 190, 190)
            )
            if c in numeric and r > 0:
                draw_text(d, (x + cw - 12, y + rh / 2), cell, f, anchor="rm")
            else:
                draw_text(d, (x + 12, y + rh / 2), cell, f, anchor="lm", bold=r == 0)
            x += cw
    return img
