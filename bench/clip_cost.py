"""What switching CLIP on costs, measured without its weights (no CLIP weights ship in a package, and the Hub
is out of reach here): the same architecture with random weights computes exactly as much.

    python -m bench.clip_cost                            # 20 images and 20 requests, one thread
    TOOLRAG_BENCH_THREADS=2 python -m bench.clip_cost    # as on a 2-vCPU Space

The multilingual CLIP docs/space.md suggests (``xlm-roberta-base-ViT-B-32:laion5b_s13b_b90k``) is open_clip's
ViT-B-32 image tower (built here as it is, from open_clip's own configuration) and an XLM-RoBERTa-base text
tower (built from xlm-roberta-base's published configuration, with open_clip's MLP projection to 512). Prints
the parameters of each tower and their fp32 size (what the checkpoint holds), the memory the two towers add to
the process, the p50 time to encode one image and one request, and what indexing the example images of the
bundled catalog adds. The download time and the first start on a Space are not measured: they depend on the
Space's network and disk.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import REPO, at_least, machine, parse_args, say

#: xlm-roberta-base's config.json (the text tower of the multilingual CLIP).
XLM_R_BASE = {"vocab_size": 250002, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
              "intermediate_size": 3072, "max_position_embeddings": 514, "type_vocab_size": 1,
              "layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2}


def _rss_mb() -> float:
    with open("/proc/self/statm", encoding="utf-8") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def _p50_ms(run: object, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--n", type=at_least(1), default=20, help="images and requests timed")

    args = parse_args("bench.clip_cost", __doc__.split("\n")[0], argv, options, cache=False)
    import open_clip
    import torch
    from PIL import Image
    from transformers import XLMRobertaConfig, XLMRobertaModel

    from toolrag.catalog.loader import load_catalog

    before = _rss_mb()
    say("building the ViT-B-32 image tower and the XLM-RoBERTa-base text tower (random weights)")
    torch.manual_seed(0)
    visual = open_clip.create_model("ViT-B-32", pretrained=None).visual.eval()
    text = XLMRobertaModel(XLMRobertaConfig(**XLM_R_BASE), add_pooling_layer=False).eval()
    hidden = XLM_R_BASE["hidden_size"]
    proj = torch.nn.Sequential(torch.nn.Linear(hidden, (hidden + 512) // 2, bias=False), torch.nn.GELU(),
                               torch.nn.Linear((hidden + 512) // 2, 512, bias=False)).eval()
    added = _rss_mb() - before
    n_visual = sum(p.numel() for p in visual.parameters())
    n_text = sum(p.numel() for p in text.parameters()) + sum(p.numel() for p in proj.parameters())
    preprocess = open_clip.image_transform(224, is_train=False)
    photo = Image.open(REPO / "assets" / "chelsea.jpg").convert("RGB")
    ids = torch.randint(5, XLM_R_BASE["vocab_size"], (1, 16))  # a 14-word request and its two special tokens

    def image() -> None:
        with torch.inference_mode():
            visual(preprocess(photo).unsqueeze(0))

    def request() -> None:
        with torch.inference_mode():
            out = text(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            proj(out.mean(dim=1))

    image()
    request()  # the first call of each allocates its buffers
    say(f"timing {args.n} images and {args.n} requests")
    per_image, per_request = _p50_ms(image, args.n), _p50_ms(request, args.n)
    catalog = load_catalog(REPO / "sample_tools")
    n_images = sum(len(tool.images) for tool in catalog.tools)
    print(f"{machine()}; torch {torch.__version__}, {torch.get_num_threads()} threads\n")
    print("| part | parameters | fp32 size | cost |")
    print("|---|---|---|---|")
    print(f"| image tower (ViT-B-32) | {n_visual / 1e6:.1f} M | {n_visual * 4 / 2**20:.0f} MiB | "
          f"{per_image:.0f} ms per image (p50 of {args.n}) |")
    print(f"| text tower (XLM-RoBERTa-base + projection) | {n_text / 1e6:.1f} M | {n_text * 4 / 2**20:.0f} MiB | "
          f"{per_request:.0f} ms per 16-token request (p50 of {args.n}) |")
    print(f"| both | {(n_visual + n_text) / 1e6:.1f} M | {(n_visual + n_text) * 4 / 2**20:.0f} MiB | "
          f"{added:.0f} MB more resident memory |")
    print(f"| indexing the bundled catalog's {n_images} example images | | | "
          f"about {n_images * per_image / 1000:.1f} s more |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
