"""Request pictures drawn for the tests of issue 44's playground cases: a Python traceback in a terminal, a
Chinese business card and a boarding pass. They are other pictures than the bundled tools' example images
(``assets/stack_trace.png``, ``assets/business_card_zh.png``, ``assets/boarding_pass.png``): other content,
layout and fonts, so the search reads them as a user's picture, not as an example it already holds. Drawn with
Pillow and the Debian fonts scripts/test.sh installs; all content is invented."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

__all__ = ["boarding_pass", "business_card", "traceback_screenshot"]

_FONTS = Path("/usr/share/fonts/truetype")


def _font(size: int, name: str = "dejavu/DejaVuSans.ttf") -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(_FONTS / name), size)


def _lines(img: Image.Image, lines: list[tuple[str, int, str]], x: int, y: int, fill: tuple[int, int, int],
           gap: float = 1.5) -> Image.Image:
    d = ImageDraw.Draw(img)
    for text, size, name in lines:
        d.text((x, y), text, font=_font(size, name), fill=fill)
        y += int(size * gap)
    return img


def traceback_screenshot() -> Image.Image:
    """A terminal window: a nightly job's Python traceback ending in a KeyError."""
    mono = "dejavu/DejaVuSansMono.ttf"
    lines = ["$ python jobs/nightly_export.py --date 2026-11-30",
             "Traceback (most recent call last):",
             '  File "/srv/jobs/nightly_export.py", line 88, in <module>',
             "    main()",
             '  File "/srv/jobs/nightly_export.py", line 61, in main',
             '    rows = load_rows(config["source_table"])',
             "KeyError: 'source_table'"]
    img = Image.new("RGB", (1100, 330), (30, 30, 36))
    ImageDraw.Draw(img).rectangle([0, 0, 1100, 34], fill=(60, 60, 70))
    return _lines(img, [(line, 22, mono) for line in lines], 24, 56, (220, 220, 220))


def business_card() -> Image.Image:
    """A Chinese business card: company, name, title, phone, e-mail, address."""
    cjk = "wqy/wqy-zenhei.ttc"
    img = Image.new("RGB", (900, 520), (248, 246, 240))
    ImageDraw.Draw(img).rectangle([0, 0, 24, 520], fill=(20, 90, 160))
    return _lines(img, [("星河智能科技有限公司", 34, cjk), ("李明  Li Ming", 44, cjk), ("销售总监", 28, cjk),
                        ("手机：138 0013 8000", 26, cjk), ("邮箱：liming@xinghe.example", 26, cjk),
                        ("地址：深圳市南山区科技园科苑路 15 号", 26, cjk)], 70, 50, (30, 30, 30), gap=1.7)


def boarding_pass() -> Image.Image:
    """An airline boarding pass: passenger, flight, route, date, seat, gate, boarding time."""
    img = Image.new("RGB", (1000, 400), (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, 1000, 70], fill=(170, 20, 40))
    d.text((30, 14), "BOARDING PASS", font=_font(36, "dejavu/DejaVuSans-Bold.ttf"), fill=(255, 255, 255))
    return _lines(img, [("Passenger  CHEN/JING", 28, "dejavu/DejaVuSans.ttf"),
                        ("Flight  CA1831      Date  12DEC", 28, "dejavu/DejaVuSans.ttf"),
                        ("From  BEIJING PEK   To  SHANGHAI SHA", 28, "dejavu/DejaVuSans.ttf"),
                        ("Seat  18C   Gate  B12   Boarding  08:35", 28, "dejavu/DejaVuSans.ttf")],
                  30, 110, (20, 20, 20), gap=1.8)
