"""Regenerate the images of the bundled sample catalog (``assets/`` and ``assets/queries/``).

The catalog needs realistic pictures for its image-bearing tools and, separately, for the labelled queries
(a different receipt, another invoice, a crop of a photo...), so that image retrieval is evaluated on images
the index has never seen. Two kinds of files are produced:

* documents rendered with Pillow from fixed content (receipts, VAT invoices, charts, UI screenshots, labels,
  tickets, cards). Nothing is random: "QR codes" and barcodes are drawn from SHA-256 digests of fixed strings,
  so the same Pillow and fonts give the same pixels;
* free-licence photos copied from scikit-image's bundled sample data (public domain / CC0), re-encoded to a
  reasonable size, plus crops / flips of them for the queries.

Usage::

    pip download scikit-image --no-deps -d /tmp/skimg && (cd /tmp/skimg && unzip -q -o scikit_image-*.whl)
    python assets/render_assets.py --skimage-data /tmp/skimg/skimage/data

Without ``--skimage-data`` only the rendered documents are regenerated. Chinese text needs the WenQuanYi
Zen Hei font (Debian package ``fonts-wqy-zenhei``); English documents use DejaVu Sans when it is installed
and fall back to WenQuanYi otherwise (the committed files were rendered with both fonts present). Every
output file is listed with its source and licence in ``assets/ATTRIBUTION.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, ImageOps

HERE = Path(__file__).resolve().parent
QUERIES = HERE / "queries"

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
def _font(size: int, kind: str = "cjk") -> Font:
    """Return a font: ``cjk`` (WenQuanYi, also used for mixed text), ``sans``, ``bold`` or ``mono``."""
    if not _CJK_FONT.exists():
        raise SystemExit(f"CJK font {_CJK_FONT} not found: install the Debian package fonts-wqy-zenhei")
    latin = {"sans": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "mono": "DejaVuSansMono.ttf"}
    if kind in latin and (_DEJAVU / latin[kind]).exists():
        return ImageFont.truetype(str(_DEJAVU / latin[kind]), size)
    return ImageFont.truetype(str(_CJK_FONT), size, index=1 if kind == "mono" else 0)


def _text(
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
    if _has_cjk(s) and "wqy" not in str(getattr(f, "path", "")):
        f = _font(int(f.size))
    d.text(xy, s, font=f, fill=fill, anchor=anchor, stroke_width=1 if bold else 0, stroke_fill=fill)


def _has_cjk(s: str) -> bool:
    return any(
        "\u2e80" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" or "\u3000" <= ch <= "\u303f" for ch in s
    )


def _dashed(d: ImageDraw.ImageDraw, x0: int, x1: int, y: int, fill: Color = GREY, dash: int = 10) -> None:
    for x in range(x0, x1, dash * 2):
        d.line([(x, y), (min(x + dash, x1), y)], fill=fill, width=2)


# ------------------------------------------------------------------------------- deterministic codes
def _bits(seed: str, n: int) -> list[int]:
    """``n`` pseudo-random bits derived from ``seed`` by chained SHA-256 (no RNG state involved)."""
    out: list[int] = []
    block = seed.encode()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out.extend((byte >> i) & 1 for byte in block for i in range(8))
    return out[:n]


def _qr(d: ImageDraw.ImageDraw, x: int, y: int, size: int, seed: str, fill: Color = BLACK) -> None:
    """Draw a QR-like 25x25 module block with the three finder squares (not a decodable QR code)."""
    n = 25
    m = size / n
    bits = _bits(seed, n * n)
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


def _barcode(d: ImageDraw.ImageDraw, x: int, y: int, w: int, h: int, seed: str) -> None:
    """Draw a 1-D barcode-like pattern of bars whose widths come from ``seed``."""
    bits = _bits(seed, 400)
    pos, i = x, 0
    while pos < x + w - 6:
        width = 2 + 2 * bits[i] + 2 * bits[i + 1]
        if i % 4 == 0:
            d.rectangle([pos, y, min(pos + width - 1, x + w), y + h], fill=BLACK)
        pos += width
        i = (i + 2) % 398


def _seal(d: ImageDraw.ImageDraw, cx: int, cy: int, r: int, top: str, bottom: str, middle: str = "") -> None:
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
    _text(d, (cx, cy - r * 0.5), top, _font(max(12, r // 5)), SEAL_RED, anchor="mm")
    if middle:
        _text(d, (cx, cy + r * 0.38), middle, _font(max(12, r // 5)), SEAL_RED, anchor="mm")
    _text(d, (cx, cy + r * 0.68), bottom, _font(max(10, r // 7)), SEAL_RED, anchor="mm")


def _cos(k: int) -> float:
    import math

    return math.cos(-math.pi / 2 + k * math.pi / 5)


def _sin(k: int) -> float:
    import math

    return math.sin(-math.pi / 2 + k * math.pi / 5)


def _rmb_upper(amount: float) -> str:
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


def _canvas(w: int, h: int, bg: Color = WHITE) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = Image.new("RGB", (w, h), bg)
    return img, ImageDraw.Draw(img)


# --------------------------------------------------------------------------------- receipts (小票)
ReceiptItem = tuple[str, int, float]


def _receipt(
    shop: str,
    branch: str,
    meta: Sequence[str],
    items: Sequence[ReceiptItem],
    pay: str,
    seed: str,
    discount: float = 0.0,
) -> Image.Image:
    """A thermal-paper style restaurant receipt; totals are computed from the items."""
    w = 640
    img, d = _canvas(w, 2000, (252, 251, 246))
    f_title, f, f_small = _font(40), _font(28), _font(24)
    y = 36
    _text(d, (w / 2, y), shop, f_title, anchor="ma", bold=True)
    y += 56
    _text(d, (w / 2, y), branch, f, anchor="ma")
    y += 50
    for line in meta:
        _text(d, (40, y), line, f_small)
        y += 40
    _dashed(d, 30, w - 30, y + 6)
    y += 20
    _text(d, (40, y), "品名", f)
    _text(d, (380, y), "数量", f, anchor="ra")
    _text(d, (600, y), "金额", f, anchor="ra")
    y += 44
    total = 0.0
    for name, qty, price in items:
        amount = qty * price
        total += amount
        _text(d, (40, y), name, f)
        _text(d, (380, y), str(qty), f, anchor="ra")
        _text(d, (600, y), f"{amount:.2f}", f, anchor="ra")
        y += 46
    _dashed(d, 30, w - 30, y + 4)
    y += 22
    rows = [("合计", f"¥{total:.2f}")]
    if discount:
        rows.append(("优惠", f"-¥{discount:.2f}"))
    rows.append(("实收", f"¥{total - discount:.2f}"))
    rows.append(("支付方式", pay))
    for label, value in rows:
        _text(d, (40, y), label, f, bold=label == "实收")
        _text(d, (600, y), value, f, anchor="ra", bold=label == "实收")
        y += 44
    _dashed(d, 30, w - 30, y + 4)
    y += 24
    _qr(d, w // 2 - 80, y, 160, seed)
    _text(d, (w / 2, y + 172), "扫码开具电子发票", f_small, GREY, anchor="ma")
    return img.crop((0, 0, w, y + 220))


def receipt_zh() -> Image.Image:
    return _receipt(
        "老北京涮肉馆",
        "望京店 · 餐饮小票",
        ["单号：20240315-0086", "桌号：A12    人数：4", "日期：2024-03-15 12:36", "收银员：王芳"],
        [
            ("手切鲜羊肉", 2, 68.0),
            ("肥牛卷", 1, 58.0),
            ("麻酱小料", 4, 6.0),
            ("糖蒜", 1, 12.0),
            ("北冰洋汽水", 4, 8.0),
            ("米饭", 2, 3.0),
        ],
        "微信支付",
        "receipt_zh",
        discount=10.0,
    )


def receipt_dinner() -> Image.Image:
    return _receipt(
        "川味小馆",
        "国贸店 · 结账单",
        ["单号：20240402-0317", "桌号：B05    人数：6", "日期：2024-04-02 19:48", "收银员：刘洋"],
        [
            ("水煮鱼", 1, 128.0),
            ("宫保鸡丁", 1, 46.0),
            ("麻婆豆腐", 1, 32.0),
            ("回锅肉", 1, 52.0),
            ("酸梅汤(扎)", 2, 28.0),
            ("米饭", 6, 3.0),
            ("茶位费", 6, 5.0),
        ],
        "支付宝",
        "receipt_dinner",
    )


def taxi_receipt() -> Image.Image:
    """A Beijing taxi fare receipt (出租汽车专用发票), portrait and narrow."""
    w = 560
    img, d = _canvas(w, 900, (250, 250, 244))
    f_t, f, f_s = _font(34), _font(28), _font(24)
    _text(d, (w / 2, 40), "北京市出租汽车专用发票", f_t, anchor="ma", bold=True)
    _text(d, (w / 2, 92), "发票代码 111002381071", f_s, GREY, anchor="ma")
    _text(d, (w / 2, 126), "发票号码 40871326", f_s, GREY, anchor="ma")
    d.rectangle([30, 170, w - 30, 790], outline=BLACK, width=2)
    rows = [
        ("电话", "96106"),
        ("车号", "京B·T2867"),
        ("证号", "318822"),
        ("日期", "2024-04-08"),
        ("上车", "08:12"),
        ("下车", "08:47"),
        ("单价", "2.30元"),
        ("里程", "21.6km"),
        ("等候", "00:04:10"),
        ("燃油附加费", "1.00元"),
        ("金额", "¥58.70"),
    ]
    y = 190
    for label, value in rows:
        _text(d, (60, y), label, f, bold=label == "金额")
        _text(d, (w - 60, y), value, f, anchor="ra", bold=label == "金额")
        y += 54
    _text(d, (w / 2, 820), "北京市税务局监制", f_s, GREY, anchor="ma")
    return img.crop((0, 0, w, 870))


# ------------------------------------------------------------------------------------ VAT invoices
VatItem = tuple[str, str, str, int, float, float]  # name, spec, unit, qty, unit price (excl. tax), rate


def _vat_invoice(
    title: str,
    meta: Sequence[tuple[str, str]],
    buyer: Sequence[str],
    items: Sequence[VatItem],
    seller: Sequence[str],
    seller_short: str,
    tax_id: str,
    people: str,
    seed: str,
) -> Image.Image:
    w, h = 1500, 1000
    img, d = _canvas(w, h, (253, 252, 247))
    c = VAT_BROWN
    f_t, f, f_s = _font(44), _font(24), _font(22)
    _qr(d, 40, 30, 130, seed, fill=BLACK)
    _text(d, (w / 2, 40), title, f_t, c, anchor="ma", bold=True)
    d.line([(w / 2 - 260, 100), (w / 2 + 260, 100)], fill=c, width=3)
    d.line([(w / 2 - 260, 106), (w / 2 + 260, 106)], fill=c, width=3)
    y = 36
    for label, value in meta:
        _text(d, (1010, y), f"{label}：", f_s, c)
        _text(d, (1140, y), value, f_s)
        y += 34
    box_top, left, right = 190, 40, w - 40
    d.rectangle([left, box_top, right, 900], outline=c, width=3)
    # buyer block
    d.line([(left, 330), (right, 330)], fill=c, width=2)
    d.line([(100, box_top), (100, 330)], fill=c, width=2)
    for i, ch in enumerate("购买方"):
        _text(d, (70, 212 + i * 36), ch, f, c, anchor="ma")
    labels = ["名      称：", "纳税人识别号：", "地 址、电 话：", "开户行及账号："]
    for i, (label, value) in enumerate(zip(labels, buyer, strict=True)):
        _text(d, (115, 200 + i * 32), label, f_s, c)
        _text(d, (290, 200 + i * 32), value, f_s)
    d.line([(1000, box_top), (1000, 330)], fill=c, width=2)
    _text(d, (1020, 200), "密码区", f_s, c)
    for i in range(4):
        _text(
            d, (1110, 200 + i * 32), hashlib.sha1(f"{seed}{i}".encode()).hexdigest()[:22], _font(18, "mono")
        )
    # items table
    cols = [
        (left, "货物或应税劳务、服务名称"),
        (420, "规格型号"),
        (560, "单位"),
        (640, "数量"),
        (740, "单价"),
        (880, "金额"),
        (1060, "税率"),
        (1160, "税额"),
    ]
    for x, head in cols:
        if x != left:
            d.line([(x, 330), (x, 700)], fill=c, width=1)
        _text(d, (x + 12, 342), head, f_s, c)
    d.line([(left, 380), (right, 380)], fill=c, width=1)
    total_amount = total_tax = 0.0
    y = 392
    for name, spec, unit, qty, price, rate in items:
        amount = qty * price
        tax = round(amount * rate, 2)
        total_amount += amount
        total_tax += tax
        vals = [
            name,
            spec,
            unit,
            str(qty),
            f"{price:.2f}",
            f"{amount:.2f}",
            f"{int(rate * 100)}%",
            f"{tax:.2f}",
        ]
        for (x, _), v in zip(cols, vals, strict=True):
            _text(d, (x + 12, y), v, f_s)
        y += 40
    d.line([(left, 650), (right, 650)], fill=c, width=1)
    _text(d, (left + 60, 662), "合      计", f_s, c)
    _text(d, (892, 662), f"¥{total_amount:.2f}", f_s)
    _text(d, (1172, 662), f"¥{total_tax:.2f}", f_s)
    d.line([(left, 700), (right, 700)], fill=c, width=2)
    gross = total_amount + total_tax
    _text(d, (left + 20, 716), "价税合计（大写）", f, c)
    _text(d, (300, 716), _rmb_upper(gross), f)
    _text(d, (1000, 716), "（小写）", f, c)
    _text(d, (1110, 716), f"¥{gross:.2f}", f, bold=True)
    d.line([(left, 760), (right, 760)], fill=c, width=2)
    d.line([(100, 760), (100, 900)], fill=c, width=2)
    for i, ch in enumerate("销售方"):
        _text(d, (70, 772 + i * 36), ch, f, c, anchor="ma")
    for i, (label, value) in enumerate(zip(labels, seller, strict=True)):
        _text(d, (115, 768 + i * 32), label, f_s, c)
        _text(d, (290, 768 + i * 32), value, f_s)
    d.line([(1000, 760), (1000, 900)], fill=c, width=2)
    _text(d, (1020, 770), "备注", f_s, c)
    _text(d, (left, 920), people, f_s, c)
    _seal(d, 1290, 900, 90, seller_short, tax_id, "发票专用章")
    return img


def vat_invoice_zh() -> Image.Image:
    return _vat_invoice(
        "增值税电子普通发票",
        [
            ("发票代码", "011002300211"),
            ("发票号码", "58830417"),
            ("开票日期", "2024年03月18日"),
            ("校 验 码", "62418 93075 11844 20736"),
        ],
        [
            "北京星辰科技有限公司",
            "91110105MA01XXXX8K",
            "北京市朝阳区望京街10号 010-84561234",
            "招商银行望京支行 110912345610201",
        ],
        [
            ("*办公用品*A4复印纸", "70g 500张", "箱", 10, 150.0, 0.13),
            ("*办公用品*中性笔", "0.5mm", "盒", 20, 24.0, 0.13),
            ("*计算机外部设备*无线鼠标", "M220", "个", 5, 79.0, 0.13),
        ],
        [
            "北京晨光文具商贸有限公司",
            "91110108MA00YYYY3Q",
            "北京市海淀区中关村大街27号 010-62558899",
            "工商银行海淀支行 0200004509200123456",
        ],
        "晨光文具商贸",
        "91110108MA00YYYY3Q",
        "收款人：李静      复核：赵敏      开票人：孙磊      销售方：（章）",
        "vat_invoice_zh",
    )


def vat_invoice_special() -> Image.Image:
    return _vat_invoice(
        "增值税专用发票",
        [
            ("发票代码", "3100231130"),
            ("发票号码", "07264519"),
            ("开票日期", "2024年04月09日"),
            ("校 验 码", "17395 40268 83310 56927"),
        ],
        [
            "上海云帆信息技术有限公司",
            "91310115MA1HZZZZ5T",
            "上海市浦东新区张江路88号 021-50801234",
            "中国银行张江支行 4521 7788 9900",
        ],
        [
            ("*信息技术服务*云服务器租用", "8核32G", "月", 12, 1800.0, 0.06),
            ("*信息技术服务*对象存储", "10TB", "月", 12, 450.0, 0.06),
        ],
        [
            "杭州数峰云计算有限公司",
            "91330106MA2CWWWW7L",
            "杭州市西湖区文三路398号 0571-88123456",
            "建设银行文三路支行 3305 0161 6270 0000 1234",
        ],
        "数峰云计算",
        "91330106MA2CWWWW7L",
        "收款人：陈晨      复核：周涛      开票人：吴倩      销售方：（章）",
        "vat_invoice_special",
    )


# -------------------------------------------------------------------------------- English invoices
def _invoice_en(
    vendor: Sequence[str],
    number: str,
    dates: Sequence[tuple[str, str]],
    bill_to: Sequence[str],
    items: Sequence[tuple[str, int, float]],
    vat: float,
    currency: str,
    terms: str,
    accent: Color,
) -> Image.Image:
    w, h = 1240, 1320
    img, d = _canvas(w, h)
    f_big, f_b, f, f_s = _font(64, "bold"), _font(28, "bold"), _font(26, "sans"), _font(22, "sans")
    d.rectangle([0, 0, w, 24], fill=accent)
    y = 70
    for i, line in enumerate(vendor):
        _text(d, (70, y), line, f_b if i == 0 else f_s, BLACK if i == 0 else GREY)
        y += 44 if i == 0 else 32
    _text(d, (w - 70, 70), "INVOICE", f_big, accent, anchor="ra")
    y2 = 170
    for label, value in [("Invoice #", number), *dates]:
        _text(d, (w - 330, y2), label, f_s, GREY)
        _text(d, (w - 70, y2), value, f_s, anchor="ra")
        y2 += 34
    y = max(y, y2) + 40
    _text(d, (70, y), "BILL TO", f_b, accent)
    y += 44
    for line in bill_to:
        _text(d, (70, y), line, f)
        y += 36
    y += 30
    d.rectangle([60, y, w - 60, y + 52], fill=accent)
    heads = [
        (80, "Description", "la"),
        (760, "Qty", "ra"),
        (960, "Unit price", "ra"),
        (w - 80, "Amount", "ra"),
    ]
    for x, head, anchor in heads:
        _text(d, (x, y + 12), head, f_b, WHITE, anchor=anchor)
    y += 70
    subtotal = 0.0
    for desc, qty, price in items:
        amount = qty * price
        subtotal += amount
        _text(d, (80, y), desc, f)
        _text(d, (760, y), str(qty), f, anchor="ra")
        _text(d, (960, y), f"{price:,.2f}", f, anchor="ra")
        _text(d, (w - 80, y), f"{amount:,.2f}", f, anchor="ra")
        y += 50
        d.line([(60, y - 8), (w - 60, y - 8)], fill=LIGHT, width=1)
    y += 20
    tax = round(subtotal * vat, 2)
    for sum_label, sum_value, bold in [
        ("Subtotal", subtotal, False),
        (f"VAT {int(vat * 100)}%", tax, False),
        (f"Total due ({currency})", subtotal + tax, True),
    ]:
        _text(d, (960, y), sum_label, f_b if bold else f, anchor="ra")
        _text(d, (w - 80, y), f"{sum_value:,.2f}", f_b if bold else f, anchor="ra")
        y += 50
    y += 40
    _text(d, (70, y), "Payment terms", f_b)
    y += 42
    for line in terms.split("\n"):
        _text(d, (70, y), line, f_s, GREY)
        y += 32
    _text(d, (w / 2, h - 60), "Thank you for your business!", f, accent, anchor="ma")
    return img.crop((0, 0, w, h))


def invoice_en() -> Image.Image:
    return _invoice_en(
        [
            "Northwind Office Supplies Ltd.",
            "14 Harbour Road, Leeds LS1 4AB, UK",
            "VAT Reg. GB 284 5521 09",
            "billing@northwind.example",
        ],
        "INV-2024-0418",
        [("Date", "18 Apr 2024"), ("Due date", "18 May 2024"), ("PO number", "PO-77120")],
        ["Acme Trading (UK) Ltd.", "Attn: Accounts Payable", "2 Kings Way, Manchester M2 3AA"],
        [
            ("Ergonomic office chair", 6, 189.00),
            ("Standing desk 160x80", 3, 425.00),
            ("Monitor arm, dual", 6, 64.50),
            ("Installation service", 1, 150.00),
        ],
        0.20,
        "GBP",
        "Net 30. Bank transfer to Barclays, sort code 20-45-77, account 43917825.\n"
        "Please quote the invoice number as payment reference.",
        (25, 95, 150),
    )


def invoice_en_2() -> Image.Image:
    return _invoice_en(
        [
            "Contoso Cloud Services GmbH",
            "Friedrichstrasse 120, 10117 Berlin",
            "USt-IdNr. DE 318 456 220",
            "invoices@contoso.example",
        ],
        "CCS-88314",
        [("Date", "02 May 2024"), ("Due date", "16 May 2024"), ("Customer ID", "C-40921")],
        ["Acme Trading GmbH", "Finance department", "Lindenallee 5, 20259 Hamburg"],
        [
            ("Managed Kubernetes cluster (April)", 1, 1240.00),
            ("Block storage 2 TB", 2, 96.00),
            ("Premium support plan", 1, 390.00),
        ],
        0.19,
        "EUR",
        "Payable within 14 days by SEPA transfer.\nIBAN DE44 1001 0010 0987 6543 21.",
        (120, 40, 120),
    )


# ------------------------------------------------------------------------------------------ charts
def _bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    unit: str,
    color: Color,
    ymax: float,
    step: float,
) -> Image.Image:
    w, h = 1100, 720
    img, d = _canvas(w, h)
    f_t, f, f_s = _font(38), _font(26), _font(22)
    _text(d, (w / 2, 30), title, f_t, anchor="ma", bold=True)
    x0, y0, x1, y1 = 130, 110, w - 60, h - 110
    v = 0.0
    while v <= ymax + 1e-9:
        y = y1 - (y1 - y0) * v / ymax
        d.line([(x0, y), (x1, y)], fill=LIGHT, width=1)
        _text(d, (x0 - 14, y), f"{v:g}", f_s, GREY, anchor="rm")
        v += step
    d.line([(x0, y0), (x0, y1), (x1, y1)], fill=BLACK, width=3)
    slot = (x1 - x0) / len(values)
    for i, (label, val) in enumerate(zip(labels, values, strict=True)):
        cx = x0 + slot * (i + 0.5)
        top = y1 - (y1 - y0) * val / ymax
        d.rectangle([cx - slot * 0.3, top, cx + slot * 0.3, y1], fill=color)
        _text(d, (cx, top - 10), f"{val:g}", f, anchor="md", bold=True)
        _text(d, (cx, y1 + 16), label, f, anchor="ma")
    _text(d, (40, y0 - 50), unit, f_s, GREY)
    return img


def bar_chart() -> Image.Image:
    return _bar_chart(
        "2023 年各季度销售额（华东区）",
        ["第一季度", "第二季度", "第三季度", "第四季度"],
        [320, 415, 388, 502],
        "单位：万元",
        (60, 120, 200),
        600,
        100,
    )


def _line_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float], Color]],
    unit: str,
    ymax: float,
    step: float,
) -> Image.Image:
    w, h = 1200, 720
    img, d = _canvas(w, h)
    f_t, f, f_s = _font(36, "bold"), _font(24, "sans"), _font(22, "sans")
    _text(d, (w / 2, 28), title, f_t, anchor="ma")
    x0, y0, x1, y1 = 120, 120, w - 60, h - 100
    v = 0.0
    while v <= ymax + 1e-9:
        y = y1 - (y1 - y0) * v / ymax
        d.line([(x0, y), (x1, y)], fill=LIGHT, width=1)
        _text(d, (x0 - 14, y), f"{v:g}", f_s, GREY, anchor="rm")
        v += step
    d.line([(x0, y0), (x0, y1), (x1, y1)], fill=BLACK, width=3)
    dx = (x1 - x0) / (len(labels) - 1)
    for i, label in enumerate(labels):
        _text(d, (x0 + dx * i, y1 + 14), label, f, anchor="ma")
    lx = x0 + 20
    for name, vals, color in series:
        pts = [(x0 + dx * i, y1 - (y1 - y0) * val / ymax) for i, val in enumerate(vals)]
        d.line(pts, fill=color, width=5, joint="curve")
        for (px, py), val in zip(pts, vals, strict=True):
            d.ellipse([px - 7, py - 7, px + 7, py + 7], fill=color)
            _text(d, (px, py - 14), f"{val:g}", f_s, color, anchor="md")
        d.rectangle([lx, 82, lx + 30, 96], fill=color)
        _text(d, (lx + 40, 89), name, f_s, anchor="lm")
        lx += 60 + int(d.textlength(name, font=f_s))
    _text(d, (x1, 82), unit, f_s, GREY, anchor="rm")
    return img


def line_chart() -> Image.Image:
    return _line_chart(
        "Website visits per month, 2024",
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun"],
        [
            ("Visits", [42, 38, 51, 57, 63, 71], (200, 80, 40)),
            ("Sign-ups", [6, 5, 8, 9, 11, 14], (40, 140, 90)),
        ],
        "thousands",
        80,
        20,
    )


def revenue_chart() -> Image.Image:
    return _line_chart(
        "Monthly revenue by region, H2 2023",
        ["Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
        [
            ("EMEA", [1.8, 1.6, 2.1, 2.4, 2.2, 2.9], (30, 100, 190)),
            ("APAC", [1.1, 1.3, 1.2, 1.6, 1.9, 2.3], (220, 140, 20)),
        ],
        "USD million",
        3.5,
        0.5,
    )


# --------------------------------------------------------------------------------- UI screenshots
def _window(
    w: int, h: int, title: str, bg: Color = (240, 240, 240)
) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img, d = _canvas(w, h, (58, 110, 165))
    d.rectangle([20, 20, w - 20, h - 20], fill=bg, outline=(120, 120, 120), width=2)
    d.rectangle([21, 21, w - 21, 70], fill=WHITE)
    _text(d, (40, 45), title, _font(24, "sans"), anchor="lm")
    # minimise, maximise and close buttons, drawn (the fonts lack the symbols)
    cx = w - 150
    d.line([(cx - 8, 46), (cx + 8, 46)], fill=GREY, width=2)
    d.rectangle([cx + 45 - 8, 37, cx + 45 + 8, 53], outline=GREY, width=2)
    d.line([(cx + 90 - 8, 37), (cx + 90 + 8, 53)], fill=GREY, width=2)
    d.line([(cx + 90 - 8, 53), (cx + 90 + 8, 37)], fill=GREY, width=2)
    return img, d


def _button(d: ImageDraw.ImageDraw, x: int, y: int, w: int, label: str, primary: bool = False) -> None:
    d.rounded_rectangle(
        [x, y, x + w, y + 50],
        radius=6,
        fill=BLUE if primary else WHITE,
        outline=BLUE if primary else (150, 150, 150),
        width=2,
    )
    _text(d, (x + w / 2, y + 25), label, _font(24, "sans"), WHITE if primary else BLACK, anchor="mm")


def _error_dialog(
    app: str, headline: str, lines: Sequence[str], code: str, buttons: Sequence[str]
) -> Image.Image:
    w, h = 1000, 480
    img, d = _window(w, h, app)
    d.ellipse([60, 110, 150, 200], fill=(210, 40, 40))
    d.line([(85, 135), (125, 175)], fill=WHITE, width=10)
    d.line([(125, 135), (85, 175)], fill=WHITE, width=10)
    _text(d, (180, 110), headline, _font(30, "bold"))
    y = 160
    for line in lines:
        _text(d, (180, y), line, _font(24, "sans"))
        y += 36
    _text(d, (180, y + 10), code, _font(24, "mono"), GREY)
    bx = w - 60
    for i, label in enumerate(reversed(buttons)):
        bx -= 170
        _button(d, bx, h - 110, 150, label, primary=i == 0)
        bx -= 20
    return img


def error_dialog() -> Image.Image:
    return _error_dialog(
        "Microsoft Outlook",
        "Cannot connect to the mail server",
        [
            "Outlook could not reach mail.acme.example.",
            "Sending and receiving reported an error.",
            "Check your network connection and try again.",
        ],
        "Error code: 0x800CCC0E",
        ["Details", "Retry", "OK"],
    )


def error_vpn() -> Image.Image:
    return _error_dialog(
        "GlobalConnect VPN",
        "VPN connection failed",
        [
            "The connection to vpn.acme.example was terminated",
            "by the remote computer.",
            "无法连接到公司 VPN，请联系 IT 服务台。",
        ],
        "Error 809 (IKE negotiation timed out)",
        ["Help", "Close"],
    )


def _login(message: Sequence[str], user: str, accent: Color) -> Image.Image:
    w, h = 900, 820
    img, d = _canvas(w, h, (236, 240, 245))
    d.rounded_rectangle([150, 60, w - 150, h - 60], radius=16, fill=WHITE, outline=LIGHT, width=2)
    _text(d, (w / 2, 110), "Acme SSO", _font(44, "bold"), BLUE, anchor="ma")
    _text(d, (w / 2, 172), "统一身份认证 · Sign in", _font(26), GREY, anchor="ma")
    y = 240
    d.rounded_rectangle([200, y, w - 200, y + 120], radius=8, fill=(253, 236, 236), outline=accent, width=2)
    for i, line in enumerate(message):
        _text(d, (225, y + 18 + i * 34), line, _font(24), accent)
    y = 400
    for label, value in [("Username 用户名", user), ("Password 密码", "••••••••••")]:
        _text(d, (200, y), label, _font(24), GREY)
        d.rounded_rectangle([200, y + 36, w - 200, y + 96], radius=6, outline=(160, 160, 160), width=2)
        _text(d, (220, y + 66), value, _font(26, "sans"), anchor="lm")
        y += 130
    _button(d, 200, y + 6, w - 400, "Sign in 登录", primary=True)
    _text(d, (w / 2, y + 90), "Forgot password? 忘记密码", _font(24), BLUE, anchor="ma")
    return img


def login_expired() -> Image.Image:
    return _login(
        ["Your password has expired.", "密码已过期（90 天），请重置后登录。"], "zhang.wei", (190, 40, 40)
    )


def account_locked() -> Image.Image:
    return _login(
        ["Account locked: 5 failed sign-in attempts.", "账号已锁定，请 30 分钟后重试或重置密码。"],
        "li.na@acme.example",
        (190, 40, 40),
    )


def _terminal(lines: Sequence[tuple[str, Color]], title: str) -> Image.Image:
    w = 1280
    h = 110 + 40 * len(lines)
    img, d = _canvas(w, h, (30, 32, 38))
    d.rectangle([0, 0, w, 44], fill=(55, 58, 66))
    for i, col in enumerate([(240, 90, 80), (245, 190, 50), (90, 200, 90)]):
        d.ellipse([18 + i * 30, 14, 34 + i * 30, 30], fill=col)
    _text(d, (w / 2, 22), title, _font(20, "sans"), (200, 200, 200), anchor="mm")
    f = _font(24, "mono")
    y = 66
    for text, color in lines:
        _text(d, (24, y), text, f, color)
        y += 40
    return img


_FG: Color = (220, 220, 220)
_RED: Color = (255, 110, 100)
_YEL: Color = (230, 200, 110)


def stack_trace() -> Image.Image:
    return _terminal(
        [
            ("$ python -m app.jobs.sync_orders --date 2024-05-06", (120, 210, 120)),
            ("INFO  fetched 1,284 orders from ERP", _FG),
            ("Traceback (most recent call last):", _RED),
            ('  File "/srv/app/jobs/sync_orders.py", line 88, in <module>', _FG),
            ("    main()", _YEL),
            ('  File "/srv/app/jobs/sync_orders.py", line 71, in main', _FG),
            ("    upsert(order)", _YEL),
            ('  File "/srv/app/db/orders.py", line 42, in upsert', _FG),
            ('    cust = customers[order["customer_id"]]', _YEL),
            ("KeyError: 'customer_id'", _RED),
        ],
        "deploy@orders-worker-02: ~",
    )


def traceback_java() -> Image.Image:
    return _terminal(
        [
            ("$ kubectl logs payment-svc-7c9f6d-2xk4p --tail=8", (120, 210, 120)),
            ("2024-05-07 09:14:03 ERROR [payment-svc] dispatcherServlet:", _RED),
            ("Servlet.service() threw exception", _FG),
            ('java.lang.NullPointerException: Cannot invoke "Account.getCurrency()"', _RED),
            ('    because "account" is null', _RED),
            ("  at com.acme.pay.RefundService.refund(RefundService.java:117)", _FG),
            ("  at com.acme.pay.RefundController.post(RefundController.java:54)", _FG),
            ("  at jdk.internal.reflect.GeneratedMethodAccessor88.invoke(Unknown Source)", _FG),
            ("  ... 47 common frames omitted", (150, 150, 150)),
        ],
        "kubectl logs payment-svc-7c9f6d-2xk4p",
    )


def error_503() -> Image.Image:
    return _terminal(
        [
            ("$ curl -i https://api.acme.example/v2/orders?since=2024-05-06", (120, 210, 120)),
            ("HTTP/1.1 503 Service Unavailable", _RED),
            ("server: envoy", _FG),
            ("content-type: text/plain", _FG),
            ("retry-after: 30", _FG),
            ("", _FG),
            ("upstream connect error or disconnect/reset before headers.", _YEL),
            ("reset reason: connection failure", _YEL),
        ],
        "dev@laptop-li-na: ~",
    )


# ---------------------------------------------------------------------------------- labels, tables
def _shipping_label(
    sender: Sequence[str], receiver: Sequence[str], tracking: str, service: str, weight: str, date: str
) -> Image.Image:
    w, h = 800, 1200
    img, d = _canvas(w, h)
    d.rectangle([10, 10, w - 10, h - 10], outline=BLACK, width=4)
    _text(d, (40, 40), "ACME LOGISTICS", _font(44, "bold"))
    _text(d, (w - 40, 48), service, _font(32), anchor="ra", bold=True)
    d.line([(10, 110), (w - 10, 110)], fill=BLACK, width=4)
    _text(d, (40, 130), "FROM 寄件人", _font(24), GREY)
    y = 168
    for line in sender:
        _text(d, (40, y), line, _font(26))
        y += 36
    d.line([(10, y + 14), (w - 10, y + 14)], fill=BLACK, width=2)
    y += 34
    _text(d, (40, y), "TO 收件人", _font(24), GREY)
    y += 40
    for i, line in enumerate(receiver):
        _text(d, (40, y), line, _font(34 if i == 0 else 30), bold=i == 0)
        y += 50
    d.line([(10, y + 10), (w - 10, y + 10)], fill=BLACK, width=4)
    y += 30
    _text(d, (40, y), f"Weight 重量: {weight}", _font(26))
    _text(d, (w - 40, y), f"Ship date: {date}", _font(26, "sans"), anchor="ra")
    y += 60
    _barcode(d, 60, y, w - 120, 180, tracking)
    y += 200
    _text(d, (w / 2, y), f"Tracking No. {tracking}", _font(34, "bold"), anchor="ma")
    y += 70
    _qr(d, w - 230, y, 180, tracking)
    _text(d, (40, y + 20), "运单号 / Waybill", _font(26), GREY)
    _text(d, (40, y + 70), "Pieces: 1 of 1", _font(26, "sans"))
    _text(d, (40, y + 120), "Signature required", _font(26, "sans"))
    return img.crop((0, 0, w, min(h, y + 230)))


def shipping_label() -> Image.Image:
    return _shipping_label(
        ["Acme 华东仓 East China DC", "苏州市工业园区星湖街 218 号", "Tel 0512-6288 1100"],
        ["王磊 Wang Lei", "成都市高新区天府大道北段 1700 号", "环球中心 E2-1608", "Tel 138 0813 5521"],
        "AL 4402 8817 3356",
        "EXPRESS 次日达",
        "3.2 kg",
        "2024-05-08",
    )


def shipping_label_2() -> Image.Image:
    return _shipping_label(
        ["Acme Parts Warehouse", "1200 Industrial Pkwy, Reno NV 89502", "Tel +1 775 555 0134"],
        ["Maria Gonzalez", "Bright Dental Clinic", "455 Pine St, Portland OR 97204", "Tel +1 503 555 0188"],
        "AL 9310 2254 6078",
        "GROUND 3-5 DAY",
        "7.8 kg",
        "2024-05-10",
    )


def _sheet(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    widths: Sequence[int],
    numeric: set[int],
) -> Image.Image:
    rh, left, top = 52, 60, 110
    w = left + sum(widths) + 30
    h = top + rh * (len(rows) + 2) + 40
    img, d = _canvas(w, h)
    d.rectangle([0, 0, w, 50], fill=(33, 115, 70))
    _text(d, (20, 25), title, _font(24), WHITE, anchor="lm")
    d.rectangle([0, 50, w, top - 2], fill=(243, 243, 243))
    _text(d, (20, 80), "fx", _font(22, "sans"), GREY, anchor="lm")
    f = _font(26)
    # column letters
    x = left
    for i, cw in enumerate(widths):
        d.rectangle([x, top, x + cw, top + rh], fill=(233, 233, 233), outline=(190, 190, 190))
        _text(d, (x + cw / 2, top + rh / 2), chr(ord("A") + i), _font(22, "sans"), GREY, anchor="mm")
        x += cw
    all_rows = [headers, *rows]
    for r, row in enumerate(all_rows):
        y = top + rh * (r + 1)
        d.rectangle([0, y, left, y + rh], fill=(233, 233, 233), outline=(190, 190, 190))
        _text(d, (left / 2, y + rh / 2), str(r + 1), _font(22, "sans"), GREY, anchor="mm")
        x = left
        for c, (cw, cell) in enumerate(zip(widths, row, strict=True)):
            d.rectangle(
                [x, y, x + cw, y + rh], fill=(226, 239, 218) if r == 0 else WHITE, outline=(190, 190, 190)
            )
            if c in numeric and r > 0:
                _text(d, (x + cw - 12, y + rh / 2), cell, f, anchor="rm")
            else:
                _text(d, (x + 12, y + rh / 2), cell, f, anchor="lm", bold=r == 0)
            x += cw
    return img


def table_sheet() -> Image.Image:
    return _sheet(
        "库存盘点表_2024-05.xlsx",
        ["物料编码", "名称", "仓库", "数量", "单位"],
        [
            ["M-1002", "不锈钢螺栓 M8", "苏州仓", "12,400", "个"],
            ["M-1017", "铝合金支架", "苏州仓", "860", "件"],
            ["M-2001", "锂电池 18650", "成都仓", "3,250", "节"],
            ["M-2045", "电源适配器 65W", "成都仓", "540", "个"],
            ["M-3100", "包装纸箱 40x30", "天津仓", "9,800", "个"],
            ["M-3188", "防静电袋", "天津仓", "21,000", "个"],
        ],
        [170, 300, 160, 150, 110],
        {3},
    )


def table_q() -> Image.Image:
    return _sheet(
        "Q2 travel budget.xlsx",
        ["Department", "Owner", "Budget", "Spent", "Remaining"],
        [
            ["Sales", "J. Carter", "48,000", "31,250", "16,750"],
            ["Marketing", "A. Novak", "22,000", "19,480", "2,520"],
            ["Engineering", "R. Mehta", "35,000", "12,900", "22,100"],
            ["Support", "L. Chen", "9,500", "8,870", "630"],
            ["Finance", "M. Rossi", "6,000", "1,150", "4,850"],
        ],
        [220, 190, 160, 160, 170],
        {2, 3, 4},
    )


# ------------------------------------------------------------------------- whiteboards and notices
def _whiteboard(lines: Sequence[tuple[str, Color, int]]) -> Image.Image:
    w, h = 1200, 780
    img, d = _canvas(w, h, (120, 120, 125))
    d.rectangle([40, 40, w - 40, h - 40], fill=(246, 247, 244), outline=(200, 200, 200), width=6)
    d.rectangle([40, h - 70, w - 40, h - 40], fill=(180, 180, 185))
    y = 80
    for text, color, size in lines:
        _text(d, (100 if size < 40 else 90, y), text, _font(size), color, bold=True)
        y += size + 26
    return img


def whiteboard() -> Image.Image:
    blue, red, green, black = (30, 70, 170), (190, 40, 40), (30, 120, 60), (40, 40, 40)
    return _whiteboard(
        [
            ("Sprint 12 Retro  2024-05-06", blue, 46),
            ("Went well: 发布按时上线, API latency -30%", green, 34),
            ("To improve: 测试环境不稳定, too many meetings", red, 34),
            ("Action items:", black, 38),
            ("1. 李娜 - 修复 staging 数据库 by 05-10", black, 34),
            ("2. Tom - cut standup to 15 min", black, 34),
            ("3. 王磊 - 整理 on-call 手册 by 05-15", black, 34),
            ("Next retro: 05-20 14:00, Room 3F-Orion", blue, 34),
        ]
    )


def whiteboard_q() -> Image.Image:
    blue, red, black = (30, 70, 170), (190, 40, 40), (40, 40, 40)
    return _whiteboard(
        [
            ("产品评审会 2024-05-09", blue, 48),
            ("议题：会员积分改版 v2", black, 36),
            ("结论：先做积分过期提醒，兑换商城延后", black, 34),
            ("风险：财务对账口径未定 (@财务)", red, 34),
            ("待办：", black, 36),
            ("- 陈晨 出交互稿 5/14", black, 34),
            ("- 周涛 评估开发量 5/16", black, 34),
            ("- 下次评审 5/21 上午10点", blue, 34),
        ]
    )


def _notice(
    title: str,
    body: Sequence[str],
    sign: Sequence[str],
    color: Color,
    stamp: tuple[str, str] | None,
    font_kind: str = "cjk",
) -> Image.Image:
    w, h = 1000, 1300
    img, d = _canvas(w, h, (255, 253, 245))
    d.rectangle([30, 30, w - 30, h - 30], outline=color, width=6)
    _text(
        d,
        (w / 2, 90),
        title,
        _font(56, "bold" if font_kind == "sans" else "cjk"),
        color,
        anchor="ma",
        bold=font_kind == "cjk",
    )
    d.line([(120, 180), (w - 120, 180)], fill=color, width=3)
    y = 230
    f = _font(32, font_kind)
    for line in body:
        _text(d, (90, y), line, f)
        y += 56
    y += 40
    for line in sign:
        _text(d, (w - 90, y), line, f, anchor="ra")
        y += 54
    if stamp:
        _seal(d, w - 600, y - 70, 95, stamp[0], stamp[1])
    return img.crop((0, 0, w, min(h, y + 120)))


def notice_zh() -> Image.Image:
    return _notice(
        "通  知",
        [
            "关于3号楼电梯检修的通知",
            "",
            "各位住户、办公人员：",
            "    为保障电梯运行安全，物业将于",
            "2024年5月18日（周六）8:00至17:00",
            "对3号楼1号、2号客梯进行年度检修。",
            "    检修期间请使用4号货梯或步行楼梯，",
            "由此带来的不便敬请谅解。",
            "    咨询电话：010-8456 7788",
        ],
        ["望京科技园物业管理处", "2024年5月13日"],
        SEAL_RED,
        ("物业管理处", "0108"),
    )


def sign_en() -> Image.Image:
    return _notice(
        "PARKING NOTICE",
        [
            "Lot B will be CLOSED for resurfacing",
            "",
            "from Monday 3 June, 6:00 AM",
            "to Friday 7 June, 8:00 PM.",
            "",
            "Please park in Lot C (North entrance)",
            "or use the shuttle from Lot D.",
            "Vehicles left in Lot B will be towed",
            "at the owner's expense.",
            "",
            "Questions: facilities@acme.example",
        ],
        ["Acme Facilities Team"],
        (20, 90, 160),
        None,
        font_kind="sans",
    )


# ------------------------------------------------------------------------------ tickets and cards
def boarding_pass() -> Image.Image:
    w, h = 1500, 600
    img, d = _canvas(w, h, WHITE)
    navy: Color = (20, 50, 110)
    d.rounded_rectangle([10, 10, w - 10, h - 10], radius=24, fill=WHITE, outline=navy, width=4)
    d.rounded_rectangle([10, 10, w - 10, 110], radius=24, fill=navy)
    d.rectangle([10, 80, w - 10, 110], fill=navy)
    _text(d, (50, 60), "CHINA EASTERN 中国东方航空", _font(36), WHITE, anchor="lm", bold=True)
    _text(d, (w - 50, 60), "BOARDING PASS 登机牌", _font(34), WHITE, anchor="rm")
    d.line([(1080, 110), (1080, h - 10)], fill=LIGHT, width=3)
    f_l, f_v, f_big = _font(22), _font(34), _font(72, "bold")
    fields = [
        (50, 140, "NAME 姓名", "ZHANG/WEI"),
        (520, 140, "FLIGHT 航班", "MU5137"),
        (800, 140, "DATE 日期", "18MAR2024"),
        (50, 380, "GATE 登机口", "C23"),
        (300, 380, "BOARDING 登机时间", "07:25"),
        (620, 380, "SEAT 座位", "32A"),
        (820, 380, "CLASS 舱位", "Y"),
    ]
    for x, y, label, value in fields:
        _text(d, (x, y), label, f_l, GREY)
        _text(d, (x, y + 32), value, f_v, bold=True)
    _text(d, (50, 240), "PEK", f_big, navy)
    _text(d, (50, 330), "北京首都 Beijing T2", f_l, GREY)
    _text(d, (300, 270), "→", _font(60), navy)
    _text(d, (420, 240), "SHA", f_big, navy)
    _text(d, (420, 330), "上海虹桥 Shanghai T2", f_l, GREY)
    _text(d, (50, 500), "Departure 起飞 08:00   ETKT 7812345678901   SEQ 118", f_l)
    _text(d, (1110, 140), "ZHANG/WEI", f_v, bold=True)
    _text(d, (1110, 190), "MU5137  PEK → SHA", _font(26, "sans"))
    _text(d, (1110, 230), "18MAR  SEAT 32A", _font(26, "sans"))
    _qr(d, 1160, 290, 250, "MU5137ZHANGWEI")
    return img


def train_ticket() -> Image.Image:
    w, h = 1200, 760
    img, d = _canvas(w, h, (200, 225, 240))
    d.rounded_rectangle(
        [20, 20, w - 20, h - 20], radius=20, fill=(222, 238, 248), outline=(110, 150, 190), width=3
    )
    red: Color = (200, 40, 40)
    _text(d, (60, 50), "E 48H 072 391", _font(30, "mono"), red)
    _text(d, (w - 60, 50), "北京南售", _font(30), anchor="ra")
    _text(d, (160, 130), "北京南 站", _font(60), bold=True)
    _text(d, (600, 135), "G 7", _font(56, "bold"), anchor="ma")
    _text(d, (600, 200), "──────→", _font(34), anchor="ma")
    _text(d, (w - 160, 130), "上海虹桥 站", _font(60), anchor="ra", bold=True)
    _text(d, (160, 215), "Beijingnan", _font(30, "sans"), GREY)
    _text(d, (w - 160, 215), "Shanghaihongqiao", _font(30, "sans"), GREY, anchor="ra")
    _text(d, (110, 300), "2024年05月20日 08:00开", _font(40))
    _text(d, (w - 110, 300), "05车 12F号", _font(40), anchor="ra")
    _text(d, (110, 370), "¥553.0元", _font(40))
    _text(d, (w - 110, 370), "二等座", _font(40), anchor="ra")
    _text(d, (110, 440), "限乘当日当次车", _font(32))
    _text(d, (110, 510), "1101051990****2817 张伟", _font(34))
    _text(d, (110, 590), "买票请到12306 发货请到95306", _font(28), GREY)
    _qr(d, w - 300, 440, 200, "G7-20240520-05-12F")
    return img


def visitor_badge() -> Image.Image:
    w, h = 640, 1000
    img, d = _canvas(w, h, (230, 230, 230))
    d.rounded_rectangle([20, 20, w - 20, h - 20], radius=30, fill=WHITE, outline=(180, 180, 180), width=3)
    d.rounded_rectangle([20, 20, w - 20, 200], radius=30, fill=(230, 120, 20))
    d.rectangle([20, 160, w - 20, 200], fill=(230, 120, 20))
    _text(d, (w / 2, 60), "VISITOR 访客", _font(60), WHITE, anchor="ma", bold=True)
    d.ellipse([w / 2 - 110, 240, w / 2 + 110, 460], fill=(200, 205, 215))
    d.ellipse([w / 2 - 45, 285, w / 2 + 45, 375], fill=(150, 155, 170))
    d.pieslice([w / 2 - 85, 380, w / 2 + 85, 540], 180, 360, fill=(150, 155, 170))
    rows = [
        ("姓名 Name", "赵敏  Zhao Min"),
        ("单位 Company", "华信咨询有限公司"),
        ("被访人 Host", "王芳 · 财务部"),
        ("日期 Date", "2024-05-16"),
        ("有效区域 Area", "3F 会议区"),
    ]
    y = 500
    for label, value in rows:
        _text(d, (60, y), label, _font(22), GREY)
        _text(d, (60, y + 30), value, _font(32))
        y += 80
    _qr(d, w - 200, h - 200, 140, "VISITOR-20240516-ZHAOMIN")
    return img


def _business_card(
    name: str, name2: str, title: str, company: str, lines: Sequence[str], accent: Color, seed: str
) -> Image.Image:
    w, h = 1050, 600
    img, d = _canvas(w, h, WHITE)
    d.rectangle([0, 0, 24, h], fill=accent)
    _text(d, (80, 70), name, _font(60), bold=True)
    _text(d, (80 + d.textlength(name, font=_font(60)) + 30, 94), name2, _font(34, "sans"), GREY)
    _text(d, (80, 160), title, _font(32), accent)
    d.line([(80, 225), (w - 80, 225)], fill=LIGHT, width=2)
    _text(d, (80, 250), company, _font(34), bold=True)
    y = 320
    for line in lines:
        _text(d, (80, y), line, _font(28))
        y += 48
    _qr(d, w - 240, h - 240, 170, seed)
    return img


def business_card() -> Image.Image:
    return _business_card(
        "李娜",
        "Li Na",
        "采购经理 Procurement Manager",
        "上海云帆信息技术有限公司",
        [
            "手机 Mobile: +86 139 1782 4406",
            "邮箱 Email: li.na@yunfan.example",
            "电话 Tel: 021-5080 1234 转 8032",
            "地址：上海市浦东新区张江路88号",
        ],
        (20, 110, 190),
        "card-lina",
    )


def business_card_q() -> Image.Image:
    return _business_card(
        "Daniel Weber",
        "",
        "Head of Partnerships",
        "Contoso Cloud Services GmbH",
        [
            "Mobile: +49 151 2345 6789",
            "daniel.weber@contoso.example",
            "Friedrichstrasse 120, 10117 Berlin",
            "www.contoso.example",
        ],
        (150, 40, 120),
        "card-weber",
    )


# --------------------------------------------------------------------------------------- registry
RENDERED: dict[str, Callable[[], Image.Image]] = {
    "receipt_zh.png": receipt_zh,
    "vat_invoice_zh.png": vat_invoice_zh,
    "invoice_en.png": invoice_en,
    "bar_chart_zh.png": bar_chart,
    "line_chart_en.png": line_chart,
    "error_dialog.png": error_dialog,
    "login_expired.png": login_expired,
    "stack_trace.png": stack_trace,
    "shipping_label.png": shipping_label,
    "table_sheet_zh.png": table_sheet,
    "whiteboard.png": whiteboard,
    "notice_zh.png": notice_zh,
    "boarding_pass.png": boarding_pass,
    "visitor_badge.png": visitor_badge,
    "business_card_zh.png": business_card,
    "queries/receipt_dinner.png": receipt_dinner,
    "queries/taxi_receipt.png": taxi_receipt,
    "queries/vat_invoice_special.png": vat_invoice_special,
    "queries/invoice_en_2.png": invoice_en_2,
    "queries/revenue_chart.png": revenue_chart,
    "queries/error_vpn.png": error_vpn,
    "queries/error_503.png": error_503,
    "queries/account_locked.png": account_locked,
    "queries/traceback_java.png": traceback_java,
    "queries/shipping_label_2.png": shipping_label_2,
    "queries/table_budget.png": table_q,
    "queries/whiteboard_review.png": whiteboard_q,
    "queries/sign_parking.png": sign_en,
    "queries/train_ticket.png": train_ticket,
    "queries/business_card_en.png": business_card_q,
}

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
    """Render every Pillow document listed in ``RENDERED``."""
    written: list[Path] = []
    for out, make in RENDERED.items():
        _save(make(), HERE / out)
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
