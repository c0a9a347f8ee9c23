"""The sample documents in assets/ are what scripts/render_assets.py draws from scripts/asset_documents.yaml:
each rendering equals the committed picture pixel for pixel (the fonts of scripts/test.sh installed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageChops

from scripts import asset_drawing, render_assets

ASSETS = Path(__file__).resolve().parent.parent / "assets"
DOCUMENTS = render_assets.documents()


def test_every_rendered_document_is_committed_and_listed() -> None:
    attribution = (ASSETS / "ATTRIBUTION.md").read_text(encoding="utf-8")
    for out in DOCUMENTS:
        assert (ASSETS / out).is_file(), out
        assert f"`{out}`" in attribution, f"list {out} in assets/ATTRIBUTION.md"


@pytest.mark.parametrize("out", sorted(DOCUMENTS))
def test_rendering_equals_the_committed_picture(out: str) -> None:
    rendered = render_assets.render(DOCUMENTS[out])
    with Image.open(ASSETS / out) as committed:
        assert (rendered.mode, rendered.size) == (committed.mode, committed.size)
        assert ImageChops.difference(rendered, committed.convert(rendered.mode)).getbbox() is None, (
            f"{out} renders differently from the committed file: python -m scripts.render_assets rewrites it")


def test_a_document_naming_an_unknown_template_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "docs.yaml"
    bad.write_text("receipt.png:\n  template: recipe\n  shop: x\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"docs.yaml: receipt.png: 'template' must be one of bar_chart, "):
        render_assets.documents(bad)


def test_chinese_upper_case_amounts() -> None:
    assert asset_drawing.rmb_upper(1130.0) == "壹仟壹佰叁拾圆整"
    assert asset_drawing.rmb_upper(10005.5) == "壹万零伍圆伍角"
    assert asset_drawing.rmb_upper(0.07) == "零圆零柒分"
