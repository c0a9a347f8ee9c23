"""OCR: RapidOCR with the PP-OCRv6-small Chinese + English models shipped inside its wheel."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from toolrag.encode.common import require
from toolrag.encode.fingerprint import fingerprint
from toolrag.encode.onnx_text import default_threads
from toolrag.errors import ModelUnavailable
from toolrag.images import ImageSource, load_image

__all__ = ["DETECTOR_SIDE", "OcrEngine", "OcrResult"]

#: The detector sees the image at its own size, scaled down so that its long side is at most this.
DETECTOR_SIDE = 960


@dataclass(frozen=True)
class OcrResult:
    """Recognised lines (top to bottom) with their confidence; ``text`` joins them with newlines."""

    text: str
    lines: tuple[str, ...]
    scores: tuple[float, ...]


class OcrEngine:
    """RapidOCR with the PP-OCRv6-small Chinese+English detector/recogniser shipped inside the wheel.

    Tuned for the time a search may spend on its image (docs/benchmarks.md): the detector works at the
    image's own size up to 960 pixels on the long side (RapidOCR's default scales every image *up* to 736
    pixels on the short side, which multiplies the work on photos and finds letters in fur and clouds); no
    angle classifier (documents and screenshots are upright; it only tells 0 from 180 degrees); an image in
    which the detector finds no text is not recognised at all; and a request image is read only in its
    ``max_lines`` most prominent lines (the tallest boxes, kept in reading order).

    Each line is recognised on its own, at its own width: RapidOCR's default batches of six pad every line to
    the widest of its batch, which costs time on documents with long and short lines and changed a few
    characters ("E磊" for "王磊"). The lines of an image are shared between the calling thread and one helper
    thread (ONNX Runtime releases the GIL), so the second core works while the first recognises;
    each line's text is the same whichever thread reads it.
    """

    MODEL_FILES: ClassVar[dict[str, str]] = {
        "Det": "PP-OCRv6_det_small.onnx", "Rec": "PP-OCRv6_rec_small.onnx",
        "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx"}
    #: The models and how lines are read (each line alone: docs/measurements.md): the collection of the text read
    #: in example images is named after it, so text read one way is never mixed with text read another way.
    model_id = "rapidocr-3.10/PP-OCRv6-small-ch/line-by-line"

    def __init__(self, *, min_score: float = 0.5, detector_side: int = DETECTOR_SIDE) -> None:
        rapidocr = require("rapidocr", "rapidocr==3.10.0 onnxruntime")
        folder = Path(rapidocr.__file__).parent / "models"
        paths = {stage: folder / name for stage, name in self.MODEL_FILES.items()}
        missing = [str(p) for p in paths.values() if not p.is_file()]
        if missing:
            raise ModelUnavailable(f"RapidOCR's bundled models are missing ({', '.join(missing)}); "
                                   "pip install --force-reinstall rapidocr==3.10.0")
        logging.getLogger("RapidOCR").setLevel(logging.ERROR)  # "no text found" is not a warning
        params: dict[str, Any] = {
            "Global.log_level": "error", "Global.text_score": min_score, "Global.use_cls": False,
            "Det.limit_type": "max", "Det.limit_side_len": detector_side,
            "EngineConfig.onnxruntime.intra_op_num_threads": default_threads(),
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
            "EngineConfig.onnxruntime.enable_cpu_mem_arena": True,  # RapidOCR's default, off, reallocates per call
            "Rec.rec_batch_num": 1,
        }
        params.update({f"{stage}.model_path": str(p) for stage, p in paths.items()})  # explicit: no downloads
        self._engine = _capped(rapidocr.RapidOCR)(params=params)
        self._engine.helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolrag-ocr")
        self._lock = threading.Lock()
        self.min_score = min_score
        self.detector_side = detector_side
        self.fingerprint = fingerprint(self.model_id, dim=0, weights=list(paths.values()))

    def read(self, image: ImageSource, *, max_lines: int | None = None, detector_side: int | None = None
             ) -> OcrResult:
        """Text lines found in the image, dropping lines scored below ``min_score``; with ``max_lines``, only
        that many of the most prominent lines are recognised; ``detector_side`` overrides the detector's
        size for this call (lines are always recognised from the full-size image)."""
        if max_lines is not None and max_lines < 1:
            raise ValueError(f"max_lines must be at least 1, got {max_lines}")
        if detector_side is not None and detector_side < 32:
            raise ValueError(f"detector_side must be at least 32 pixels, got {detector_side}")
        rgb = load_image(image)
        with self._lock:  # RapidOCR keeps per-call parameters on the engine object
            self._engine.max_lines = max_lines
            self._engine.detector_side = detector_side or self.detector_side
            out = self._engine(rgb)
        pairs = [(str(t).strip(), float(s)) for t, s in zip(out.txts or (), out.scores or (), strict=False)]
        kept = [(t, s) for t, s in pairs if t and s >= self.min_score]
        lines = tuple(t for t, _ in kept)
        return OcrResult(text="\n".join(lines), lines=lines, scores=tuple(s for _, s in kept))


def _capped(base: type) -> type:
    """RapidOCR whose detector size is set per call, that recognises only the ``max_lines`` tallest
    detected lines (in their reading order), and recognises in two threads."""

    class Capped(base):
        max_lines: int | None = None
        detector_side: int = DETECTOR_SIDE
        helper: ThreadPoolExecutor | None = None

        def recognize_txt(self, img: list[np.ndarray]) -> Any:
            parts = _halves([crop.shape[1] / max(1, crop.shape[0]) for crop in img])
            if self.helper is None or not parts[1]:
                return super().recognize_txt(img)
            try:
                later = self.helper.submit(super().recognize_txt, [img[i] for i in parts[1]])
            except RuntimeError:  # the interpreter is shutting down: no new threads, read them all here
                return super().recognize_txt(img)
            first = super().recognize_txt([img[i] for i in parts[0]])
            second = later.result()
            out = first
            for field in ("txts", "scores", "word_results"):
                placed: list[Any] = [None] * len(img)
                for part, res in zip(parts, (first, second), strict=True):
                    for i, value in zip(part, getattr(res, field), strict=True):
                        placed[i] = value
                setattr(out, field, placed if field == "scores" else tuple(placed))
            out.imgs = list(img)
            return out

        def detect_and_crop(self, img: Any, op_record: Any) -> Any:
            self._load_det_model().limit_side_len = self.detector_side  # read by each call's pre-processing
            crops, det = super().detect_and_crop(img, op_record)
            limit = self.max_lines
            if limit is not None and len(crops) > limit and det.boxes is not None and det.scores is not None:
                boxes = np.asarray(det.boxes, dtype=np.float32)
                heights = np.linalg.norm(boxes[:, 3] - boxes[:, 0], axis=1)
                keep = np.sort(np.argsort(-heights, kind="stable")[:limit])
                crops = [crops[i] for i in keep]
                det.boxes = det.boxes[keep]
                det.scores = [det.scores[i] for i in keep]
            return crops, det

    return Capped


def _halves(widths: list[float]) -> tuple[list[int], list[int]]:
    """Line indices in two groups of about equal recognition work (a line costs about its width, at least
    RapidOCR's minimum of 320 / 48): the longest line first, each to the lighter group; each group in
    reading order."""
    groups: tuple[list[int], list[int]] = ([], [])
    load = [0.0, 0.0]
    for i in sorted(range(len(widths)), key=lambda j: -widths[j]):
        g = 0 if load[0] <= load[1] else 1
        groups[g].append(i)
        load[g] += max(widths[i], 320 / 48)
    return sorted(groups[0]), sorted(groups[1])
