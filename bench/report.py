"""Write the generated sections of docs/benchmarks.md from the results the bench scripts stored.

Each section sits between ``<!-- BEGIN name -->`` and ``<!-- END name -->`` markers; everything outside the
markers (the method, the discussion) is hand-written and left alone. Numbers are only ever copied from the
JSON files the scripts wrote, next to the command that produced them.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from bench.common import REPO, parse_args
from bench.datasets import bench_dir, benchmarks_dir
from bench.quality_table import METRICS, pct, quality_rows

__all__ = ["baseline_rows", "write_latency_section", "write_quality_section", "write_section"]

DOC = REPO / "docs" / "benchmarks.md"
_BASELINE_SETS = {"MetaTool single": "metatool_single", "MetaTool two-tool": "metatool_multi",
                  "Seal-Tools test in-domain": "seal_in", "Gorilla HF": "gorilla"}


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace the text between the markers of section ``name`` (appending the section when missing)."""
    text = doc.read_text(encoding="utf-8") if doc.is_file() else "# Benchmarks\n"
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    # A command's cache folder (--bench-dir) is a path of the machine that ran it: not for the docs.
    body = re.sub(r" --bench-dir \S+", "", body)
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")


def baseline_rows(readme: Path | None = None) -> dict[str, list[tuple[str, list[float]]]]:
    """The baseline table of ../shared/benchmarks/README.md: set -> [(method, [R@5, NDCG@5, NDCG@10, Comp@5,
    MRR@10])], read from the file so the comparison never drifts from it."""
    path = readme or benchmarks_dir() / "README.md"
    out: dict[str, list[tuple[str, list[float]]]] = {}
    current = None
    in_table = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("| set | method | R@5"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        if not in_table or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0]:
            current = next((key for prefix, key in _BASELINE_SETS.items() if cells[0].startswith(prefix)), None)
        if current is not None:
            out.setdefault(current, []).append((cells[1], [float(c) for c in cells[2:7]]))
    return out


def _engine_line(results: dict[str, Any]) -> str:
    engine = str(results.get("engine", "this repository"))
    return f"Engine: {engine}  " if "revision" in engine else f"Engine: {engine}, revision {results['revision']}  "


def write_quality_section(results: dict[str, Any]) -> None:
    """The quality table, the comparison with the baseline table and the no-tool numbers."""
    lines = [f"Command: `{results['command']}`  ", f"Date: {results['date']}; machine: {results['machine']}  ",
             _engine_line(results),
             "Models: " + ", ".join(f"{k} = `{v}`" for k, v in results.get("models", {}).items()) + "  ",
             "Shipped settings: normalization `{}`, fusion `{}`, text weights {}".format(
                 results["settings"]["normalization"], results["settings"]["fusion"],
                 ", ".join(f"{k} {v:g}" for k, v in results["settings"]["weights"].items()
                           if k in ("dense", "dense_en", "bm25"))),
             "", *quality_rows(results)]
    lines += ["", "Shipped hybrid against the better single signal (same run) and the README's baseline table "
              "(its rows for the whole set; ours on the subset above):", "",
              "| set | hybrid NDCG@10 | best single NDCG@10 | best baseline NDCG@10 | hybrid R@5 | best single R@5 "
              "| best baseline R@5 | metrics (of 5) where hybrid >= every baseline row |",
              "|---|---|---|---|---|---|---|---|"]
    baselines = baseline_rows()
    for name, entry in results["sets"].items():
        methods = entry["methods"]
        if "hybrid" not in methods or "skipped" in methods["hybrid"]:
            continue
        singles = [v for k, v in methods.items() if k in ("bm25", "dense_e5", "dense_minilm") and "skipped" not in v]
        base = baselines.get(name, [])
        best_single = {m: max(v[m] for v in singles) for m in METRICS} if singles else {}
        best_base = [max(row[1][i] for row in base) for i in range(5)] if base else []
        wins = sum(100 * methods["hybrid"][m] >= best_base[i] for i, m in enumerate(METRICS)) if base else None
        lines.append(f"| {entry['label']} | {pct(methods['hybrid']['ndcg@10'])} | "
                     f"{pct(best_single.get('ndcg@10', float('nan')))} | "
                     f"{best_base[2] if base else 'n/a'} | {pct(methods['hybrid']['recall@5'])} | "
                     f"{pct(best_single.get('recall@5', float('nan')))} | {best_base[0] if base else 'n/a'} | "
                     f"{wins if wins is not None else 'n/a'} |")
    nt = results.get("no_tool")
    if nt:
        lines += ["", "No-tool detection on MetaTool `Task1.json` (520 need-a-tool + 520 need-no-tool queries):", "",
                  "| measure | value |", "|---|---|",
                  "| AUC of the top cosine (the best e5 cosine among the top candidates) | "
                  f"{pct(nt['auc_confidence'])} |"]
        for name, value in nt.get("auc_top_cosine", {}).items():
            lines.append(f"| AUC of the top {name} score over the catalog | {pct(value)} |")
        lines += [f"| decision accuracy of the shipped settings and decision model (all 1,040) | "
                  f"{pct(nt['accuracy'])} |",
                  f"| ... on the report half (rows 4k+2, 4k+3) | {pct(nt['accuracy_report_half'])} |",
                  f"| need-a-tool queries not answered NO_TOOL | {pct(nt['tool_recall'])} |",
                  f"| no-tool queries answered NO_TOOL | {pct(nt['no_tool_recall'])} |"]
    write_section("quality", "\n".join(lines))


def write_tuning_section(tune: dict[str, Any], previous: dict[str, Any] | None = None) -> None:
    """The dev-split grid: the chosen fusion and its neighbours (and, given the run of another engine on the
    same splits, its single-signal numbers for comparison)."""
    sets = tune["sets"]
    lines = [f"Command: `{tune['command']}`  ", f"Date: {tune['date']}; engine: {tune['engine']}  ",
             f"Dev splits: {', '.join(sets)}; grid step {tune['step']}; exact scoring up to {tune['exact_limit']} "
             "tools, above it the candidate pool", "",
             "Single signals (NDCG@10 / R@5): " + "; ".join(
                 f"{n}: " + ", ".join(f"{s} {pct(v['ndcg@10'])}/{pct(v['recall@5'])}"
                                      for s, v in tune["singles"][n].items())
                 for n in sets), "",
             "| normalisation | dense | dense_en | bm25 | " + " | ".join(f"{n} NDCG@10 / R@5" for n in sets)
             + " | worst margin | smoothed |", "|---|---|---|---|" + "---|" * len(sets) + "---|---|"]
    for r in tune["top"]:
        w = r["weights"]
        cells = " | ".join(f"{pct(r['sets'][n]['ndcg@10'])} / {pct(r['sets'][n]['recall@5'])}" for n in sets)
        lines.append(f"| {r['method']} | {w['dense']:g} | {w['dense_en']:g} | {w['bm25']:g} | {cells} | "
                     f"{100 * r['margin']:+.2f} | {100 * r['smoothed']:+.2f} |")
    if previous is not None:
        lines += ["", f"The same single signals with the engine of `{previous['engine']}` "
                  f"(`{previous['command']}`, {previous['date']}): " + "; ".join(
                      f"{n}: " + ", ".join(f"{s} {pct(v['ndcg@10'])}/{pct(v['recall@5'])}"
                                           for s, v in previous["singles"][n].items())
                      for n in sets if n in previous["singles"])]
    cur = tune.get("current_defaults", {})
    if "sets" in cur:
        lines += ["", "Previous defaults ({} {}): ".format(cur["method"], cur["weights"]) + "; ".join(
            f"{n} {pct(v['ndcg@10'])} / {pct(v['recall@5'])}" for n, v in cur["sets"].items())]
    for n, v in tune.get("pool_statistics", {}).items():
        chosen = tune["chosen"]["sets"][n]
        lines += ["", f"{n}: the chosen weights with z-score statistics from the candidate pool instead of the "
                  f"catalog: NDCG@10 {pct(v['ndcg@10'])} / R@5 {pct(v['recall@5'])} (catalog statistics: "
                  f"{pct(chosen['ndcg@10'])} / {pct(chosen['recall@5'])})."]
    if "check" in tune:
        c = tune["check"]
        lines += ["", f"Check through the engine on the first {c['n']} queries of {sets[0]}: NDCG@10 engine "
                  f"{pct(c['engine']['ndcg@10'])}, offline re-fusion {pct(c['offline']['ndcg@10'])}."]
    nt = tune.get("no_tool", {})
    if "dense" in nt:
        lines += ["", "NO_TOOL threshold calibrated on Task1 rows 4k, 4k+1 (reported on rows 4k+2, 4k+3): " + "; ".join(
            f"{k}: threshold {v['threshold']:.3f}, accuracy {pct(v['calibration_accuracy'])} / "
            f"{pct(v['report_half_accuracy'])}" for k, v in nt.items())]
    write_section("tuning", "\n".join(lines))


def _ms(stage: dict[str, Any] | None) -> str:
    return f"{stage['p50']:.1f} / {stage['p95']:.1f}" if stage else "-"


def write_latency_section(root: Path) -> None:
    """Speed, memory and scale tables from <bench dir>/latency/*.json, into docs/benchmarks.md."""
    write_section("latency", latency_tables(root))


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


def latency_tables(root: Path) -> str:
    """The speed, memory and scale tables of every run in <bench dir>/latency (Markdown)."""
    runs = sorted((json.loads(p.read_text(encoding="utf-8")) for p in (root / "latency").glob("run-*.json")),
                  key=lambda r: (r["models"], r["tools"]))
    nan = float("nan")
    lines = ["Commands and dates are per row (each run is its own process). Times in ms, p50 / p95.", "",
             "| tools | models | build: tools/s | peak RSS MB (models alone) | catalog load s | restart: index "
             "open s (encoded; saved state) | edit one profile p50 ms (encoded) | cache: 1st / 2nd query ms "
             "(speed-up) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        b, rs = r.get("build", {}), r["restart"]
        opened = rs.get("index_open_s", rs.get("load_and_open_s", nan))
        lines.append(
            f"| {r['tools']:,} | {r['models']} | {b.get('tools_per_s', nan):.1f} | "
            f"{r.get('peak_rss_mb', b.get('peak_rss_mb', nan)):.0f} ({r['rss_after_models_mb']:.0f}) | "
            f"{rs.get('catalog_load_s', r.get('catalog_load_s', nan)):.1f} | {opened:.1f} "
            f"({rs['encoded']}; {'yes' if rs.get('from_saved_state') else 'no'}) | {r['edit']['p50_ms']:.0f} "
            f"({r['edit']['encoded_per_edit']}) | {r['cache']['first_p50']:.1f} / {r['cache']['second_p50']:.1f} "
            f"({r['cache']['speedup']:.1f}x) |")
    stages = ("encode_text", "encode_image", "index_search", "bm25", "score", "fusion", "beyond_encoding", "total")
    lines += ["", "| tools | models | query | " + " | ".join(stages) + " |", "|---|---|---|" + "---|" * len(stages)]
    for r in runs:
        for kind in ("text", "text_image"):
            if kind in r:
                lines.append(f"| {r['tools']:,} | {r['models']} | {kind.replace('_', '+')} | "
                             + " | ".join(_ms(r[kind].get(s)) for s in stages) + " |")
        if "server" in r:
            lines.append(f"| {r['tools']:,} | {r['models']} | text, Chroma server | "
                         + " | ".join(_ms(r["server"]["text"].get(s)) for s in stages) + " |")
    real = [r for r in runs if "vs_minilm" in r or "evaluation" in r]
    if real:
        lines += ["", "| tools | models | text backend | search p50 ms (encoding p50) | one plain MiniLM encode p50 "
                  "ms | ratio | evaluation requests/s (identical to one-at-a-time) | first image search after "
                  "warm-up ms |", "|---|---|---|---|---|---|---|---|"]
        for r in real:
            v, e = r.get("vs_minilm", {}), r.get("evaluation", {})
            backend = str(v.get("text_backend", "-")).removeprefix("TextBackend.").lower().replace("_", "-")
            versus = (f"{v['search_p50_ms']:.1f} ({v['encode_text_p50_ms']:.1f}) | {v['plain_minilm_p50_ms']:.1f} | "
                      f"{v['ratio']:.2f}") if v else "- | - | -"
            lines.append(
                f"| {r['tools']:,} | {r['models']} | {backend} | {versus} | {e.get('requests_per_s', nan):.1f} "
                f"({100 * e.get('identical_to_one_at_a_time', nan):.0f}% of {e.get('checked', 0)}) | "
                f"{r.get('first_image_query_ms', nan):.0f} |")
    lines += ["", "Targets (ratios and counts survive a noisy machine better than milliseconds):", "",
              "| target | measured | met |", "|---|---|---|"]
    by = {(r["tools"], r["models"]): r for r in runs}
    for r in runs:
        if "vs_minilm" in r:
            ratio = r["vs_minilm"]["ratio"]
            lines.append(f"| text search <= one plain MiniLM encode, same process ({r['tools']:,}, {r['models']}) | "
                         f"{ratio:.2f}x | {_yes(ratio <= 1.0)} |")
        if r.get("encoder", "real") == "real" and r["tools"] == 10_000:
            v = r["text"]["total"]["p50"]
            lines.append(f"| text search <= 15 ms p50 at 10,000 tools ({r['models']}) | {v:.1f} ms | {_yes(v <= 15)} |")
        if r.get("encoder", "real") == "real" and "text_image" in r:
            v = r["text_image"]["total"]["p50"]
            lines.append(f"| search with an image <= 300 ms p50 ({r['tools']:,}, {r['models']}) | {v:.0f} ms | "
                         f"{_yes(v <= 300)} |")
        if r.get("encoder", "real") == "real" and "build" in r:
            v = r["build"]["tools_per_s"]
            lines.append(f"| indexing with the real models >= 100 tools/s ({r['tools']:,}) | {v:.1f} | "
                         f"{_yes(v >= 100)} |")
        if "evaluation" in r:
            v = r["evaluation"]["requests_per_s"]
            lines.append(f"| evaluation >= 30 labelled requests/s ({r['tools']:,}, {r['models']}) | {v:.1f} | "
                         f"{_yes(v >= 30)} |")
    for models in sorted({r["models"] for r in runs}):
        ten = by.get((10_000, models))
        if ten:
            v = ten["text"]["beyond_encoding"]["p50"]
            lines.append(f"| retrieval beyond encoding at 10,000 tools ({models}) <= 5 ms p50 | {v:.1f} ms | "
                         f"{_yes(v <= 5)} |")
        small, big = by.get((1_000, models)), by.get((100_000, models))
        if big:
            v = big["text"]["beyond_encoding"]["p50"]
            lines.append(f"| beyond encoding at 100,000 tools ({models}) <= 3 ms p50 | {v:.1f} ms | {_yes(v <= 3)} |")
            rs = big["restart"]
            opened = rs.get("index_open_s", rs.get("load_and_open_s", nan))
            lines.append(f"| restart with an unchanged catalog <= 5 s (100,000, {models}) | index {opened:.1f} s + "
                         f"catalog load {rs.get('catalog_load_s', nan):.1f} s | "
                         f"{_yes(opened + rs.get('catalog_load_s', 0.0) <= 5)} (index alone: {_yes(opened <= 5)}) |")
        if small and big:
            ratio = big["text"]["beyond_encoding"]["p50"] / small["text"]["beyond_encoding"]["p50"]
            lines.append(f"| p50 beyond encoding, 100,000 / 1,000 tools ({models}) <= 1.5 | {ratio:.2f} | "
                         f"{_yes(ratio <= 1.5)} |")
    for r in runs:
        e = r["edit"]
        lines.append(f"| re-index one edited profile <= 200 ms ({r['tools']:,} tools, {r['models']}) | "
                     f"{e['p50_ms']:.0f} ms p50, {e['encoded_per_edit']} encoded | {_yes(e['p50_ms'] <= 200)} |")
        lines.append(f"| restart with an unchanged catalog encodes nothing ({r['tools']:,}, {r['models']}) | "
                     f"{r['restart']['encoded']} encoded | {_yes(r['restart']['encoded'] == 0)} |")
        if r.get("encoder", "real") == "real":
            c = r["cache"]
            lines.append(f"| identical second query >= 5x faster ({r['tools']:,}, {r['models']}) | "
                         f"{c['speedup']:.1f}x | {_yes(c['speedup'] >= 5)} |")
    lines += ["", "Commands:", ""] + [f"- `{r['command']}` ({r['date']}; {r.get('engine', '')}; "
                                      f"{r['machine']})" for r in runs]
    tokens = root / "latency" / "tokens.json"
    if tokens.is_file():
        t = json.loads(tokens.read_text(encoding="utf-8"))
        lines += ["", f"Token economy (`{t['command']}`, {t['date']}):", "",
                  "| catalog | tools | queries | schema tokens, top 5 (mean) | of the selection (mean) | whole catalog "
                  "| reduction, top 5 | reduction, selection | tokenizer |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name in ("sample", "seal_tools"):
            if name in t:
                v = t[name]
                sel = (f"{v['selected_tokens_mean']:.0f}", f"{100 * v['selected_reduction']:.1f}%") \
                    if "selected_tokens_mean" in v else ("-", "-")
                lines.append(f"| {name} | {v['tools']:,} | {v['queries']} | {v['top5_tokens_mean']:.0f} | {sel[0]} | "
                             f"{v['catalog_tokens']:,} | {100 * v['reduction']:.1f}% | {sel[1]} | {v['tokenizer']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.report [--quality F] [--tune F] [--tune-previous F] [--latency]``: regenerate sections."""

    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--quality", help="results of bench.quality (JSON)")
        parser.add_argument("--tune", help="results of bench.tune (JSON)")
        parser.add_argument("--tune-previous", help="bench.tune results of another engine, for comparison")
        parser.add_argument("--latency", action="store_true", help="the speed section from <bench dir>/latency")

    args = parse_args("bench.report", main.__doc__ or "", argv, options)
    if args.quality:
        write_quality_section(json.loads(Path(args.quality).read_text(encoding="utf-8")))
    if args.tune:
        prev = json.loads(Path(args.tune_previous).read_text(encoding="utf-8")) if args.tune_previous else None
        write_tuning_section(json.loads(Path(args.tune).read_text(encoding="utf-8")), prev)
    if args.latency:
        write_latency_section(bench_dir(args.bench_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
