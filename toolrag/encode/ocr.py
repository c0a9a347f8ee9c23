"""OCR: RapidOCR with the PP-OCRv6-small Chinese + English models shipped inside its wheel."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from toolrag.encode.common import require
from toolrag.encode.fingerprint import fingerprint
from toolrag.errors import ModelUnavailable
from toolrag.images import ImageSource, load_image

__all__ = ["OcrEngine", "OcrResult"]


@dataclass(frozen=True)
class OcrResult:
    """Recognised lines (top to bottom) with their confidence; ``text`` joins them with newlines."""

    text: str
    lines: tuple[str, ...]
    scores: tuple[float, ...]


class OcrEngine:
    """RapidOCR with the PP-OCRv6-small Chinese+English detector/recogniser shipped inside the wheel."""

    MODEL_FILES: ClassVar[dict[str, str]] = {
        "Det": "PP-OCRv6_det_small.onnx", "Rec": "PP-OCRv6_rec_small.onnx",
        "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx"}
    model_id = "rapidocr-3.10/PP-OCRv6-small-ch"

    def __init__(self, *, min_score: float = 0.5) -> None:
        rapidocr = require("rapidocr", "rapidocr==3.10.0 onnxruntime")
        folder = Path(rapidocr.__file__).parent / "models"
        paths = {stage: folder / name for stage, name in self.MODEL_FILES.items()}
        missing = [str(p) for p in paths.values() if not p.is_file()]
        if missing:
            raise ModelUnavailable(f"RapidOCR's bundled models are missing ({', '.join(missing)}); "
                                   "pip install --force-reinstall rapidocr==3.10.0")
        logging.getLogger("RapidOCR").setLevel(logging.ERROR)  # "no text found" is not a warning
        params: dict[str, Any] = {"Global.log_level": "error", "Global.text_score": min_score}
        params.update({f"{stage}.model_path": str(p) for stage, p in paths.items()})  # explicit: no downloads
        self._engine = rapidocr.RapidOCR(params=params)
        self._lock = threading.Lock()
        self.min_score = min_score
        self.fingerprint = fingerprint(self.model_id, dim=0, weights=list(paths.values()))

    def read(self, image: ImageSource) -> OcrResult:
        """Text lines found in the image, dropping lines scored below ``min_score``."""
        rgb = load_image(image)
        with self._lock:  # RapidOCR keeps per-call parameters on the engine object
            out = self._engine(rgb)
        pairs = [(str(t).strip(), float(s)) for t, s in zip(out.txts or (), out.scores or (), strict=False)]
        kept = [(t, s) for t, s in pairs if t and s >= self.min_score]
        lines = tuple(t for t, _ in kept)
        return OcrResult(text="\n".join(lines), lines=lines, scores=tuple(s for _, s in kept))
