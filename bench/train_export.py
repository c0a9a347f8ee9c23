"""Export the trained relevance model to ONNX Runtime (int8) as shipped in ``toolrag/data/models/relevance/``.

The PyTorch cross-encoder (``bench.train_cross``) is exported with its classification head (one logit per
pair), fused with ONNX Runtime's BERT fusions and quantised to int8 per output channel, as the text models are
(``toolrag.encode.onnx_build``). The export is accepted only when its logits on the probe pairs stay within
:data:`MAX_LOGIT_ERROR` of PyTorch's and rank each probe request's tools the same way. Written beside the model:
``tokenizer.json`` (with the pair template and truncation the model was trained with), ``info.json`` (what it
is, its calibration, how it was checked) and ``reference.json`` (fixed pairs and their logits, which the test
suite reproduces from the shipped file).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MAX_LOGIT_ERROR", "PROBES", "export_relevance"]

MAX_LOGIT_ERROR = 1.0
#: Probe pairs of one request (index pairs): the export must order each pair as PyTorch does.
ORDERED = ((0, 1), (2, 3), (5, 6))
#: Probe pairs: (request, card). English, a glossed Chinese request, a long card, a tool that does not serve.
PROBES = [
    ("what's the weather in Paris tomorrow", "get weather forecast: Weather forecast for the next 1 to 7 days."),
    ("what's the weather in Paris tomorrow", "book meeting room: Book a meeting room for a time slot."),
    ("drop the production database tables", "extract table from image: Reads a table in a photo or scan and "
     "returns its rows and columns as CSV."),
    ("drop the production database tables", "drop table: Drops a table of the production database. "
     "Irreversible; admins only."),
    ("submit expense account food beverage invoice receipt bill", "submit expense claim: 提交费用报销单"),
    ("remind me to call mom at 5pm", "create reminder: Create a reminder that notifies the user at a time."),
    ("remind me to call mom at 5pm", "summarize meeting notes: Summarise the notes of a meeting into action "
     "items, decisions and owners. " * 6),
    ("tell me a joke", "search code: Search the company's source code repositories for a function."),
]


def export_relevance(model_dir: Path, out: Path, *, calibration: dict[str, float], meta: dict[str, Any]) -> Path:
    """Export ``model_dir`` (a transformers sequence-classification folder) into ``out`` (replaced whole, written
    in a temporary folder first). ``calibration``: ``{"a": ..., "b": ...}`` of P(serves) = sigmoid(a x logit + b).
    ``meta``: training facts written into ``info.json``."""
    import onnx
    import torch
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from toolrag.encode.onnx_build import _PREPROCESS_HINT, root_warning_dropped
    from toolrag.encode.relevance import RelevanceModel
    from toolrag.search.relevance_text import MAX_TOKENS

    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".relevance-", dir=out.parent))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    x = tokenizer(["a request"] * 2, ["a tool card"] * 2, return_tensors="pt", padding=True)

    class Logit(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).logits[:, 0]

    raw, fused, final = work / "raw.onnx", work / "fused.onnx", work / "model.onnx"
    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    axes["logit"] = {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(Logit().eval(), tuple(x[n] for n in names), str(raw), input_names=names,
                          output_names=["logit"], dynamic_axes=axes, opset_version=17, dynamo=False)
    config = model.config
    optimized = optimize_model(str(raw), model_type="bert", num_heads=int(config.num_attention_heads),
                               hidden_size=int(config.hidden_size), optimization_options=FusionOptions("bert"),
                               opt_level=1)
    optimized.save_model_to_file(str(fused))
    with root_warning_dropped(_PREPROCESS_HINT):
        quantize_dynamic(fused, final, weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": TensorProto.FLOAT})
    onnx.checker.check_model(str(final))
    raw.unlink()
    fused.unlink()
    backend = tokenizer.backend_tokenizer
    backend.enable_truncation(MAX_TOKENS, strategy="longest_first")
    backend.no_padding()
    (work / "tokenizer.json").write_text(backend.to_str(), encoding="utf-8")
    digest = hashlib.sha256(final.read_bytes()).hexdigest()
    info = {"name": "toolrag-relevance", "base": "sentence-transformers/all-MiniLM-L6-v2 (packaged weights)",
            "max_tokens": MAX_TOKENS, "inputs": names, "pad_id": int(tokenizer.pad_token_id or 0),
            "calibration": calibration, "sha256": digest, **meta}
    (work / "info.json").write_text(json.dumps(info, indent=1, ensure_ascii=False), encoding="utf-8")
    # the check: the int8 graph against PyTorch on the probe pairs, one pair at a time (as served per request)
    with torch.no_grad():
        ref = []
        for q, c in PROBES:
            t = tokenizer([q], [c], truncation="longest_first", max_length=MAX_TOKENS, return_tensors="pt")
            ref.append(float(model(**t).logits[0, 0]))
    runtime = RelevanceModel(work)
    got = [float(runtime.logits(q, [c])[0]) for q, c in PROBES]
    worst = max(abs(a - b) for a, b in zip(ref, got, strict=True))
    swapped = [(i, j) for i, j in ORDERED if (ref[i] > ref[j]) != (got[i] > got[j])]
    if worst > MAX_LOGIT_ERROR or swapped:
        for f in work.iterdir():
            f.unlink()
        work.rmdir()
        raise RuntimeError(f"the int8 export differs from PyTorch by {worst:.3f} on a probe logit (at most "
                           f"{MAX_LOGIT_ERROR}) or orders the probe pairs {swapped} otherwise; not shipped")
    info["max_logit_error"] = round(worst, 4)
    (work / "info.json").write_text(json.dumps(info, indent=1, ensure_ascii=False), encoding="utf-8")
    (work / "reference.json").write_text(json.dumps(
        [{"request": q, "card": c, "logit": round(v, 4)} for (q, c), v in zip(PROBES, got, strict=True)],
        indent=1, ensure_ascii=False), encoding="utf-8")
    if out.exists():
        old = out.with_name(out.name + ".old")
        os.replace(out, old)
        os.replace(work, out)
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    else:
        os.replace(work, out)
    return out


def logits_torch(model_dir: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    """PyTorch logits of pairs (for comparing with the export)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from toolrag.search.relevance_text import MAX_TOKENS

    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    with torch.no_grad():
        t = tokenizer([q for q, _ in pairs], [c for _, c in pairs], truncation="longest_first",
                      max_length=MAX_TOKENS, padding=True, return_tensors="pt")
        return model(**t).logits[:, 0].numpy()
