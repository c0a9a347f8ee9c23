"""Templates of the rendered paper documents (scripts/render_assets.py): receipts, VAT invoices, English
invoices, shipping labels, tickets, badges and business cards. Each draws what
scripts/asset_documents.yaml gives it (names, amounts, lines); layout and style live here, content there.
Totals are computed from the items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from PIL import Image

from scripts.asset_drawing import (
    BLACK,
    GREY,
    LIGHT,
    VAT_BROWN,
    WHITE,
    Color,
    barcode,
    canvas,
    dashed,
    draw_text,
    font,
    qr,
    rmb_upper,
    seal,
)

__all__ = ["boarding_pass", "business_card", "invoice_en", "receipt", "shipping_label", "taxi_receipt",
           "train_ticket", "vat_invoice", "visitor_badge"]

ReceiptItem = tuple[str, int, float]


def receipt(
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
    img, d = canvas(w, 2000, (252, 251, 246))
    f_title, f, f_small = font(40), font(28), font(24)
    y = 36
    draw_text(d, (w / 2, y), shop, f_title, anchor="ma", bold=True)
    y += 56
    draw_text(d, (w / 2, y), branch, f, anchor="ma")
    y += 50
    for line in meta:
        draw_text(d, (40, y), line, f_small)
        y += 40
    dashed(d, 30, w - 30, y + 6)
    y += 20
    draw_text(d, (40, y), "品名", f)
    draw_text(d, (380, y), "数量", f, anchor="ra")
    draw_text(d, (600, y), "金额", f, anchor="ra")
    y += 44
    total = 0.0
    for name, qty, price in items:
        amount = qty * price
        total += amount
        draw_text(d, (40, y), name, f)
        draw_text(d, (380, y), str(qty), f, anchor="ra")
        draw_text(d, (600, y), f"{amount:.2f}", f, anchor="ra")
        y += 46
    dashed(d, 30, w - 30, y + 4)
    y += 22
    rows = [("合计", f"¥{total:.2f}")]
    if discount:
        rows.append(("优惠", f"-¥{discount:.2f}"))
    rows.append(("实收", f"¥{total - discount:.2f}"))
    rows.append(("支付方式", pay))
    for label, value in rows:
        draw_text(d, (40, y), label, f, bold=label == "实收")
        draw_text(d, (600, y), value, f, anchor="ra", bold=label == "实收")
        y += 44
    dashed(d, 30, w - 30, y + 4)
    y += 24
    qr(d, w // 2 - 80, y, 160, seed)
    draw_text(d, (w / 2, y + 172), "扫码开具电子发票", f_small, GREY, anchor="ma")
    return img.crop((0, 0, w, y + 220))


def taxi_receipt(title: str, code: str, number: str, rows: Sequence[tuple[str, str]],
                 footer: str) -> Image.Image:
    """A taxi fare receipt (出租汽车专用发票), portrait and narrow; the row labelled 金额 is bold."""
    w = 560
    img, d = canvas(w, 900, (250, 250, 244))
    f_t, f, f_s = font(34), font(28), font(24)
    draw_text(d, (w / 2, 40), title, f_t, anchor="ma", bold=True)
    draw_text(d, (w / 2, 92), code, f_s, GREY, anchor="ma")
    draw_text(d, (w / 2, 126), number, f_s, GREY, anchor="ma")
    d.rectangle([30, 170, w - 30, 790], outline=BLACK, width=2)
    y = 190
    for label, value in rows:
        draw_text(d, (60, y), label, f, bold=label == "金额")
        draw_text(d, (w - 60, y), value, f, anchor="ra", bold=label == "金额")
        y += 54
    draw_text(d, (w / 2, 820), footer, f_s, GREY, anchor="ma")
    return img.crop((0, 0, w, 870))

VatItem = tuple[str, str, str, int, float, float]  # name, spec, unit, qty, unit price (excl. tax), rate


def vat_invoice(
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
    img, d = canvas(w, h, (253, 252, 247))
    c = VAT_BROWN
    f_t, f, f_s = font(44), font(24), font(22)
    qr(d, 40, 30, 130, seed, fill=BLACK)
    draw_text(d, (w / 2, 40), title, f_t, c, anchor="ma", bold=True)
    d.line([(w / 2 - 260, 100), (w / 2 + 260, 100)], fill=c, width=3)
    d.line([(w / 2 - 260, 106), (w / 2 + 260, 106)], fill=c, width=3)
    y = 36
    for label, value in meta:
        draw_text(d, (1010, y), f"{label}：", f_s, c)
        draw_text(d, (1140, y), value, f_s)
        y += 34
    box_top, left, right = 190, 40, w - 40
    d.rectangle([left, box_top, right, 900], outline=c, width=3)
    # buyer block
    d.line([(left, 330), (right, 330)], fill=c, width=2)
    d.line([(100, box_top), (100, 330)], fill=c, width=2)
    for i, ch in enumerate("购买方"):
        draw_text(d, (70, 212 + i * 36), ch, f, c, anchor="ma")
    labels = ["名      称：", "纳税人识别号：", "地 址、电 话：", "开户行及账号："]
    for i, (label, value) in enumerate(zip(labels, buyer, strict=True)):
        draw_text(d, (115, 200 + i * 32), label, f_s, c)
        draw_text(d, (290, 200 + i * 32), value, f_s)
    d.line([(1000, box_top), (1000, 330)], fill=c, width=2)
    draw_text(d, (1020, 200), "密码区", f_s, c)
    for i in range(4):
        draw_text(
            d, (1110, 200 + i * 32), hashlib.sha1(f"{seed}{i}".encode()).hexdigest()[:22], font(18, "mono")
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
        draw_text(d, (x + 12, 342), head, f_s, c)
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
            draw_text(d, (x + 12, y), v, f_s)
        y += 40
    d.line([(left, 650), (right, 650)], fill=c, width=1)
    draw_text(d, (left + 60, 662), "合      计", f_s, c)
    draw_text(d, (892, 662), f"¥{total_amount:.2f}", f_s)
    draw_text(d, (1172, 662), f"¥{total_tax:.2f}", f_s)
    d.line([(left, 700), (right, 700)], fill=c, width=2)
    gross = total_amount + total_tax
    draw_text(d, (left + 20, 716), "价税合计（大写）", f, c)
    draw_text(d, (300, 716), rmb_upper(gross), f)
    draw_text(d, (1000, 716), "（小写）", f, c)
    draw_text(d, (1110, 716), f"¥{gross:.2f}", f, bold=True)
    d.line([(left, 760), (right, 760)], fill=c, width=2)
    d.line([(100, 760), (100, 900)], fill=c, width=2)
    for i, ch in enumerate("销售方"):
        draw_text(d, (70, 772 + i * 36), ch, f, c, anchor="ma")
    for i, (label, value) in enumerate(zip(labels, seller, strict=True)):
        draw_text(d, (115, 768 + i * 32), label, f_s, c)
        draw_text(d, (290, 768 + i * 32), value, f_s)
    d.line([(1000, 760), (1000, 900)], fill=c, width=2)
    draw_text(d, (1020, 770), "备注", f_s, c)
    draw_text(d, (left, 920), people, f_s, c)
    seal(d, 1290, 900, 90, seller_short, tax_id, "发票专用章")
    return img


def invoice_en(
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
    img, d = canvas(w, h)
    f_big, f_b, f, f_s = font(64, "bold"), font(28, "bold"), font(26, "sans"), font(22, "sans")
    d.rectangle([0, 0, w, 24], fill=accent)
    y = 70
    for i, line in enumerate(vendor):
        draw_text(d, (70, y), line, f_b if i == 0 else f_s, BLACK if i == 0 else GREY)
        y += 44 if i == 0 else 32
    draw_text(d, (w - 70, 70), "INVOICE", f_big, accent, anchor="ra")
    y2 = 170
    for label, value in [("Invoice #", number), *dates]:
        draw_text(d, (w - 330, y2), label, f_s, GREY)
        draw_text(d, (w - 70, y2), value, f_s, anchor="ra")
        y2 += 34
    y = max(y, y2) + 40
    draw_text(d, (70, y), "BILL TO", f_b, accent)
    y += 44
    for line in bill_to:
        draw_text(d, (70, y), line, f)
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
        draw_text(d, (x, y + 12), head, f_b, WHITE, anchor=anchor)
    y += 70
    subtotal = 0.0
    for desc, qty, price in items:
        amount = qty * price
        subtotal += amount
        draw_text(d, (80, y), desc, f)
        draw_text(d, (760, y), str(qty), f, anchor="ra")
        draw_text(d, (960, y), f"{price:,.2f}", f, anchor="ra")
        draw_text(d, (w - 80, y), f"{amount:,.2f}", f, anchor="ra")
        y += 50
        d.line([(60, y - 8), (w - 60, y - 8)], fill=LIGHT, width=1)
    y += 20
    tax = round(subtotal * vat, 2)
    for sum_label, sum_value, bold in [
        ("Subtotal", subtotal, False),
        (f"VAT {int(vat * 100)}%", tax, False),
        (f"Total due ({currency})", subtotal + tax, True),
    ]:
        draw_text(d, (960, y), sum_label, f_b if bold else f, anchor="ra")
        draw_text(d, (w - 80, y), f"{sum_value:,.2f}", f_b if bold else f, anchor="ra")
        y += 50
    y += 40
    draw_text(d, (70, y), "Payment terms", f_b)
    y += 42
    for line in terms.split("\n"):
        draw_text(d, (70, y), line, f_s, GREY)
        y += 32
    draw_text(d, (w / 2, h - 60), "Thank you for your business!", f, accent, anchor="ma")
    return img.crop((0, 0, w, h))


def shipping_label(
    sender: Sequence[str], receiver: Sequence[str], tracking: str, service: str, weight: str, date: str
) -> Image.Image:
    w, h = 800, 1200
    img, d = canvas(w, h)
    d.rectangle([10, 10, w - 10, h - 10], outline=BLACK, width=4)
    draw_text(d, (40, 40), "ACME LOGISTICS", font(44, "bold"))
    draw_text(d, (w - 40, 48), service, font(32), anchor="ra", bold=True)
    d.line([(10, 110), (w - 10, 110)], fill=BLACK, width=4)
    draw_text(d, (40, 130), "FROM 寄件人", font(24), GREY)
    y = 168
    for line in sender:
        draw_text(d, (40, y), line, font(26))
        y += 36
    d.line([(10, y + 14), (w - 10, y + 14)], fill=BLACK, width=2)
    y += 34
    draw_text(d, (40, y), "TO 收件人", font(24), GREY)
    y += 40
    for i, line in enumerate(receiver):
        draw_text(d, (40, y), line, font(34 if i == 0 else 30), bold=i == 0)
        y += 50
    d.line([(10, y + 10), (w - 10, y + 10)], fill=BLACK, width=4)
    y += 30
    draw_text(d, (40, y), f"Weight 重量: {weight}", font(26))
    draw_text(d, (w - 40, y), f"Ship date: {date}", font(26, "sans"), anchor="ra")
    y += 60
    barcode(d, 60, y, w - 120, 180, tracking)
    y += 200
    draw_text(d, (w / 2, y), f"Tracking No. {tracking}", font(34, "bold"), anchor="ma")
    y += 70
    qr(d, w - 230, y, 180, tracking)
    draw_text(d, (40, y + 20), "运单号 / Waybill", font(26), GREY)
    draw_text(d, (40, y + 70), "Pieces: 1 of 1", font(26, "sans"))
    draw_text(d, (40, y + 120), "Signature required", font(26, "sans"))
    return img.crop((0, 0, w, min(h, y + 230)))


def boarding_pass(airline: str, title: str, fields: Sequence[tuple[int, int, str, str]],
                  origin: tuple[str, str], destination: tuple[str, str], footer: str, stub: Sequence[str],
                  seed: str) -> Image.Image:
    """An airline boarding pass: ``fields`` are (x, y, label, value); ``origin``/``destination`` are (code,
    airport); ``stub`` the tear-off's three lines."""
    w, h = 1500, 600
    img, d = canvas(w, h, WHITE)
    navy: Color = (20, 50, 110)
    d.rounded_rectangle([10, 10, w - 10, h - 10], radius=24, fill=WHITE, outline=navy, width=4)
    d.rounded_rectangle([10, 10, w - 10, 110], radius=24, fill=navy)
    d.rectangle([10, 80, w - 10, 110], fill=navy)
    draw_text(d, (50, 60), airline, font(36), WHITE, anchor="lm", bold=True)
    draw_text(d, (w - 50, 60), title, font(34), WHITE, anchor="rm")
    d.line([(1080, 110), (1080, h - 10)], fill=LIGHT, width=3)
    f_l, f_v, f_big = font(22), font(34), font(72, "bold")
    for x, y, label, value in fields:
        draw_text(d, (x, y), label, f_l, GREY)
        draw_text(d, (x, y + 32), value, f_v, bold=True)
    draw_text(d, (50, 240), origin[0], f_big, navy)
    draw_text(d, (50, 330), origin[1], f_l, GREY)
    draw_text(d, (300, 270), "→", font(60), navy)
    draw_text(d, (420, 240), destination[0], f_big, navy)
    draw_text(d, (420, 330), destination[1], f_l, GREY)
    draw_text(d, (50, 500), footer, f_l)
    draw_text(d, (1110, 140), stub[0], f_v, bold=True)
    draw_text(d, (1110, 190), stub[1], font(26, "sans"))
    draw_text(d, (1110, 230), stub[2], font(26, "sans"))
    qr(d, 1160, 290, 250, seed)
    return img


def train_ticket(serial: str, office: str, origin: str, train: str, destination: str, origin_en: str,
                 destination_en: str, departure: str, seat: str, price: str, seat_class: str, note: str,
                 passenger: str, footer: str, seed: str) -> Image.Image:
    """A Chinese high-speed rail ticket (blue paper)."""
    w, h = 1200, 760
    img, d = canvas(w, h, (200, 225, 240))
    d.rounded_rectangle(
        [20, 20, w - 20, h - 20], radius=20, fill=(222, 238, 248), outline=(110, 150, 190), width=3
    )
    red: Color = (200, 40, 40)
    draw_text(d, (60, 50), serial, font(30, "mono"), red)
    draw_text(d, (w - 60, 50), office, font(30), anchor="ra")
    draw_text(d, (160, 130), origin, font(60), bold=True)
    draw_text(d, (600, 135), train, font(56, "bold"), anchor="ma")
    draw_text(d, (600, 200), "──────→", font(34), anchor="ma")
    draw_text(d, (w - 160, 130), destination, font(60), anchor="ra", bold=True)
    draw_text(d, (160, 215), origin_en, font(30, "sans"), GREY)
    draw_text(d, (w - 160, 215), destination_en, font(30, "sans"), GREY, anchor="ra")
    draw_text(d, (110, 300), departure, font(40))
    draw_text(d, (w - 110, 300), seat, font(40), anchor="ra")
    draw_text(d, (110, 370), price, font(40))
    draw_text(d, (w - 110, 370), seat_class, font(40), anchor="ra")
    draw_text(d, (110, 440), note, font(32))
    draw_text(d, (110, 510), passenger, font(34))
    draw_text(d, (110, 590), footer, font(28), GREY)
    qr(d, w - 300, 440, 200, seed)
    return img


def visitor_badge(title: str, rows: Sequence[tuple[str, str]], seed: str) -> Image.Image:
    """A visitor badge with a drawn silhouette; ``rows`` are (label, value)."""
    w, h = 640, 1000
    img, d = canvas(w, h, (230, 230, 230))
    d.rounded_rectangle([20, 20, w - 20, h - 20], radius=30, fill=WHITE, outline=(180, 180, 180), width=3)
    d.rounded_rectangle([20, 20, w - 20, 200], radius=30, fill=(230, 120, 20))
    d.rectangle([20, 160, w - 20, 200], fill=(230, 120, 20))
    draw_text(d, (w / 2, 60), title, font(60), WHITE, anchor="ma", bold=True)
    d.ellipse([w / 2 - 110, 240, w / 2 + 110, 460], fill=(200, 205, 215))
    d.ellipse([w / 2 - 45, 285, w / 2 + 45, 375], fill=(150, 155, 170))
    d.pieslice([w / 2 - 85, 380, w / 2 + 85, 540], 180, 360, fill=(150, 155, 170))
    y = 500
    for label, value in rows:
        draw_text(d, (60, y), label, font(22), GREY)
        draw_text(d, (60, y + 30), value, font(32))
        y += 80
    qr(d, w - 200, h - 200, 140, seed)
    return img


def business_card(
    name: str, name2: str, title: str, company: str, lines: Sequence[str], accent: Color, seed: str
) -> Image.Image:
    w, h = 1050, 600
    img, d = canvas(w, h, WHITE)
    d.rectangle([0, 0, 24, h], fill=accent)
    draw_text(d, (80, 70), name, font(60), bold=True)
    draw_text(d, (80 + d.textlength(name, font=font(60)) + 30, 94), name2, font(34, "sans"), GREY)
    draw_text(d, (80, 160), title, font(32), accent)
    d.line([(80, 225), (w - 80, 225)], fill=LIGHT, width=2)
    draw_text(d, (80, 250), company, font(34), bold=True)
    y = 320
    for line in lines:
        draw_text(d, (80, y), line, font(28))
        y += 48
    qr(d, w - 240, h - 240, 170, seed)
    return img
