"""A request image: the image model runs beside OCR (in a second thread) and gives what it gives alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toolrag.images import load_image
from toolrag.search.query import QUERY_OCR_LINES, QUERY_OCR_SIDE, QueryAnalyzer
from toolrag.settings import Settings

pytestmark = pytest.mark.slow  # real models or a real Chroma index

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def test_image_features_beside_ocr_match_each_model_run_alone(models: Any) -> None:
    img = load_image(ASSETS / "queries" / "receipt_dinner.png")
    features = QueryAnalyzer(models).analyze("", image=img, settings=Settings())
    feature, concepts = models.image.analyze(img)
    ocr = models.get_ocr().read(img, max_lines=QUERY_OCR_LINES, detector_side=QUERY_OCR_SIDE).text.strip()
    assert ocr and features.ocr_text == ocr  # a receipt has text: the OCR signal is present
    assert list(features.concepts) == list(concepts)
    np.testing.assert_allclose(features.vectors["visual"], np.asarray(feature, dtype=np.float32), atol=1e-6)
    phrase = ", ".join(label for label, _ in concepts)
    np.testing.assert_allclose(features.vectors["concepts"],
                               models.text.encode_queries([f"a photo of {phrase}"])[0], atol=1e-6)
    np.testing.assert_allclose(features.vectors["ocr"], models.text.encode_queries([ocr])[0], atol=1e-6)
    assert {"ocr", "visual", "concepts"}.isdisjoint(features.absent)
