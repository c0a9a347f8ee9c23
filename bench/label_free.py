"""How well the label-free risk (``toolrag report`` on a catalog without examples) tracks labelled results.

    python -m bench.label_free                      # every set: measure, print the agreement tables
    python -m bench.label_free --fit                # ... and fit the risk model on the training catalogs
    python -m bench.label_free --fit --export       # ... and write it as toolrag/data/risk_model.json
    python -m bench.label_free --sets sample_tools --write-docs
    python -m bench.label_free --timing 500         # time toolrag report on 500 tools without examples

For each set, every tool gets a *labelled* result and the *label-free* estimate, both through
``ToolRetriever.search``:

- **labelled**: the share of the tool's real requests that find it first (and in the top five). For the
  bundled catalog (``sample_tools``) these are its own examples, each left out of its tool's document, on the
  *full* catalog (``RetrievabilityChecker``, what ``toolrag report`` shows); for the other sets, up to
  ``--per-tool`` labelled requests with that tool as their only gold tool.
- **label-free**: :class:`toolrag.evaluation.label_free.LabelFreeChecker` on a copy of the catalog *without
  any example request* (stripped), so only names, descriptions, tags and parameters are read.

A tool is *at risk* on either side when it is found first by less than half of its requests (estimated:
P(found first) < 0.5): the report's ``weak`` and ``at risk`` statuses. The table gives, per set, the share of
tools on which both sides agree (both at risk or both fine), the share a constant answer would reach (the
majority side), Cohen's kappa, the rank correlation of the estimate with the labelled share, its AUC, and
how often the predicted rival is the tool that most often won the labelled requests the tool lost.

Sets: ``train_*`` are catalogs of the project's training data (``../shared/training``: the risk model is fitted
on them with ``--fit``); ``sample_tools`` (the bundled catalog, 4 examples per tool); ``metatool`` (199 tools,
its single-tool requests, up to ``--per-tool`` per tool), ``gorilla`` (Gorilla HF, one or two requests per
tool: noisy per tool) and ``published_mcp`` (tests/data/published_mcp with its English requests). Every set
but the training ones is evaluation only: nothing is fitted on it.

Results go to ``<bench dir>/label_free.json``; ``--write-docs`` updates docs/label_free.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO, engine_description, index_dir, machine, parse_args, prepare, say, shown_command
from bench.datasets import write_json, write_jsonl
from bench.label_free_stats import agreement, evaluate_agreement, fit_model, format_tables, split_half
from bench.train_data import training_dir

__all__ = ["agreement", "command_line", "export_model", "fit_model", "main", "stripped"]

DOC = REPO / "docs" / "label_free.md"
TRAINING = ("hammerbench_en", "hammerbench_zh", "gorilla_apizoo", "gorilla_torchhub", "callnavi", "toolalpaca_eval")
EVAL_SETS = ("sample_tools", "published_mcp", "metatool", "gorilla")
SETS = (*(f"train_{t}" for t in TRAINING), *EVAL_SETS)


# ------------------------------------------------------------------------------------------ pure helpers
def command_line(raw: Sequence[str]) -> str:
    """The command as docs/ show it: without the machine's paths (``--training`` too) and without ``--reuse``
    (it only skips the sets the last run of the same command measured)."""
    shown = [a for i, a in enumerate(raw) if a != "--reuse" and not a.startswith("--training")
             and (i == 0 or raw[i - 1] != "--training")]
    return shown_command("bench.label_free", shown)


def stripped(catalog: Any) -> Any:
    """``catalog`` without any example request (nor negative example): what an import gives."""
    return dataclasses.replace(catalog, tools=tuple(dataclasses.replace(t, examples=(), negative_examples=())
                                                    for t in catalog.tools))


# ------------------------------------------------------------------------------------------------ sets
def _training_catalog(root: Path, folder: str, training: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A training folder as a JSON Lines catalog (id, description, parameters) and its single-gold requests."""
    src = training / folder
    out = root / "sets" / f"train_{folder}"
    tools = [json.loads(line) for line in (src / "tools.jsonl").read_text(encoding="utf-8").splitlines() if line]
    write_jsonl(out / "catalog" / "tools.jsonl", (
        {"id": t["id"], "description": t.get("description") or t["id"],
         **({"parameters": t["parameters"]} if isinstance(t.get("parameters"), dict) else {})} for t in tools))
    pairs = [json.loads(line) for line in (src / "pairs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return out / "catalog", [{"query": p["query"], "gold": p["gold"]} for p in pairs if len(p["gold"]) == 1]


def _rows_file(path: Path) -> list[dict[str, Any]]:
    from toolrag.evaluation.queries import load_queries

    return [{"query": r.query, "gold": list(r.gold)} for r in load_queries(path) if len(r.gold) == 1]


def _open(args: argparse.Namespace, name: str, models: Any) -> tuple[Any, Any, dict[str, list[str]] | None]:
    """(the full catalog, a retriever over its stripped copy, labelled requests per tool or None for LOO)."""
    from toolrag.catalog.loader import load_catalog
    from toolrag.search.retriever import ToolRetriever

    root = args.root
    labelled: dict[str, list[str]] | None = {}
    if name == "sample_tools":
        path, labelled = REPO / "sample_tools", None
        rows: list[dict[str, Any]] = []
    elif name == "published_mcp":
        path = REPO / "tests" / "data" / "published_mcp" / "tools.json"
        rows = _rows_file(path.parent / "queries_en.yaml")
    elif name == "metatool":
        path = root / "sets" / "metatool" / "catalog"
        rows = [json.loads(x) for x in (root / "sets" / "metatool" / "single_full.jsonl").read_text("utf-8").splitlines()]
    elif name == "gorilla":
        path = root / "sets" / "gorilla_hf" / "catalog"
        rows = [json.loads(x) for x in (root / "sets" / "gorilla_hf" / "all.jsonl").read_text("utf-8").splitlines()]
    else:
        path, rows = _training_catalog(root, name.removeprefix("train_"), Path(args.training))
    full = load_catalog(path)
    if labelled is not None:
        for row in rows:
            if len(row["gold"]) == 1 and full.get(row["gold"][0]) is not None:
                labelled.setdefault(row["gold"][0], []).append(row["query"])
        labelled = {t: qs[:args.per_tool] for t, qs in labelled.items()}
    start = time.perf_counter()
    retriever = ToolRetriever.from_catalog(stripped(full), data_dir=index_dir(root) / "label_free" / name,
                                           models=models)
    say(f"{name}: {len(full)} tools indexed without examples in {time.perf_counter() - start:.1f}s")
    return full, retriever, labelled


def _labelled_loo(args: argparse.Namespace, catalog: Any, models: Any) -> dict[str, dict[str, Any]]:
    """The full catalog's leave-one-out result per tool (what toolrag report shows)."""
    from toolrag.evaluation.loo import RetrievabilityChecker
    from toolrag.search.retriever import ToolRetriever

    full = ToolRetriever.from_catalog(catalog, data_dir=index_dir(args.root) / "label_free" / "full", models=models)
    report = RetrievabilityChecker(cache_dir=args.root / "retrievability").check(full)
    out = {}
    for t in report.tools:
        if t.ranks:
            lost = Counter(o.winner for o in report.outcomes if o.tool_id == t.tool_id and o.rank != 1 and o.winner)
            out[t.tool_id] = {"first": t.first / t.n_examples, "top5": t.top5 / t.n_examples, "n": t.n_examples,
                              "winner": lost.most_common(1)[0][0] if lost else None,
                              "hits": [r == 1 for r in t.ranks]}
    return out


def _labelled_search(retriever: Any, labelled: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    codes = retriever.catalog.permission_codes
    out = {}
    for tool_id, queries in labelled.items():
        ranks, winners = [], Counter()
        for q in queries:
            ids = list(retriever.search(q, permissions=codes, top_k=10, audited=False).ids)
            rank = ids.index(tool_id) + 1 if tool_id in ids else None
            ranks.append(rank)
            if rank != 1 and ids:
                winners[ids[0]] += 1
        out[tool_id] = {"first": sum(r == 1 for r in ranks) / len(ranks),
                        "top5": sum(r is not None and r <= 5 for r in ranks) / len(ranks), "n": len(ranks),
                        "winner": winners.most_common(1)[0][0] if winners else None, "hits": [r == 1 for r in ranks]}
    return out


def measure(args: argparse.Namespace, name: str, models: Any) -> dict[str, Any]:
    from toolrag.evaluation.label_free import LabelFreeChecker
    from toolrag.evaluation.risk import features

    full, retriever, labelled = _open(args, name, models)
    start = time.perf_counter()
    # the labelled side: for sample_tools the full catalog's own examples (leave-one-out); else real requests
    # searched on the catalog as published (no examples, like the label-free side)
    truth = _labelled_loo(args, full, models) if labelled is None else _labelled_search(retriever, labelled)
    say(f"{name}: labelled results of {len(truth)} tools in {time.perf_counter() - start:.1f}s")
    start = time.perf_counter()
    checker = LabelFreeChecker(cache_dir=args.root / "label_free_vectors")
    report = checker.check(retriever, tools=set(truth), suggest=False)
    seconds = time.perf_counter() - start
    feats = features({t.tool_id: t.probes for t in report.tools})
    say(f"{name}: label-free check of {len(report.tools)} tools in {seconds:.1f}s ({report.searched} searches)")
    rows = [{"tool_id": t.tool_id, "features": feats[t.tool_id], "p_first": t.p_first, "p_top5": t.p_top5,
             "rival": t.rival, "labelled_first": truth[t.tool_id]["first"], "labelled_top5": truth[t.tool_id]["top5"],
             "n_labelled": truth[t.tool_id]["n"], "labelled_winner": truth[t.tool_id]["winner"],
             "hits": truth[t.tool_id]["hits"]}
            for t in report.tools if t.tool_id in truth]
    return {"tools": len(full), "rows": rows, "seconds": seconds, "searched": report.searched}


def measure_candidates(args: argparse.Namespace, name: str, models: Any, tool_ids: Sequence[str]
                       ) -> dict[str, dict[str, float]]:
    """Per tool, every candidate predictor the issue lists, through ToolRetriever.search where it is a search:
    the kept features (own_first, own_margin, sentence_first) and those dropped: ``bank_first`` (share of the 3
    bank requests nearest to the tool, by the multilingual model among the BM25 candidates, that find it
    first; on a training catalog, without the bank's requests of that catalog), ``name_first`` (its name as a request finds it), ``nn_distance`` (minus the multilingual cosine of
    its nearest neighbour)."""
    from toolrag.catalog.names import humanize
    from toolrag.evaluation.label_free import LabelFreeChecker, own_text
    from toolrag.evaluation.request_bank import RequestBank
    from toolrag.evaluation.risk import features
    from toolrag.text import is_mostly_cjk

    _, retriever, _ = _open(args, name, models)
    snap = retriever.index.snapshot
    codes = snap.catalog.permission_codes
    report = LabelFreeChecker(cache_dir=args.root / "label_free_vectors").check(retriever, tools=set(tool_ids),
                                                                                 suggest=False)
    kept = features({t.tool_id: t.probes for t in report.tools})
    bank = RequestBank.bundled()
    dense = snap.vectors["dense"]
    out: dict[str, dict[str, float]] = {}
    for tool_id in tool_ids:
        tool = snap.catalog.get(tool_id)
        text = own_text(tool)
        # on a training catalog the bank holds its own labelled requests: those are left out (no leak)
        pool = [r for r in bank.sharing_words(text, lang="zh" if is_mostly_cjk(text) else "en", k=48)
                if f"train_{r.source}" != name][:16]
        vectors = retriever.analyzer.prime([r.query for r in pool])
        row = snap.row_of[tool_id]
        near = sorted(pool, key=lambda r: -float(dense[row] @ vectors[("dense", r.query)]))[:3]
        firsts = [retriever.search(r.query, permissions=codes, top_k=10, audited=False).ids[:1] == [tool_id]
                  for r in near]
        named = retriever.search(humanize(tool.name), permissions=codes, top_k=10, audited=False)
        cosines = dense @ dense[row]
        cosines[row] = -1.0
        out[tool_id] = {**kept[tool_id], "bank_first": sum(firsts) / len(firsts) if firsts else 0.0,
                        "name_first": float(named.ids[:1] == [tool_id]), "nn_distance": -float(cosines.max())}
    say(f"{name}: candidate predictors of {len(out)} tools")
    return out


def time_report(args: argparse.Namespace) -> str:
    """``toolrag report --json`` on the first ``--timing`` Gorilla HF tools (no examples), index built once first
    (not timed), then the report timed twice (cold vectors cache, then warm)."""
    root = args.root
    rows = [json.loads(x) for x in (root / "sets" / "gorilla_hf" / "catalog" / "tools.jsonl").read_text("utf-8").splitlines()]
    folder = root / "sets" / f"timing_{args.timing}"
    seen: set[str] = set()
    tools = [r for r in rows if not (r["id"] in seen or seen.add(r["id"]))][:args.timing]  # type: ignore[func-returns-value]
    write_jsonl(folder / "tools.jsonl", tools)
    data = root / "timing-data"
    cmd = [sys.executable, "-m", "toolrag", "report", "--catalog", str(folder / "tools.jsonl"), "--data-dir", str(data),
           "--json"]
    subprocess.run([sys.executable, "-m", "toolrag", "index", "--catalog", str(folder / "tools.jsonl"),
                    "--data-dir", str(data)], check=True, capture_output=True, cwd=REPO)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, encoding="utf-8", cwd=REPO)
        times.append(time.perf_counter() - start)
    lf = json.loads(out.stdout)["label_free"]
    write_json(root / "timing.json", {"tools": len(tools), "seconds": times})
    return (f"toolrag report --json on {len(tools)} Gorilla HF tools without examples (index built before): "
            f"{times[0]:.1f} s with empty vector caches, {times[1]:.1f} s again; {len(lf['tools'])} tools estimated, "
            f"{len(lf['at_risk'])} at risk, {sum(1 for t in lf['tools'] if t['suggestions'])} with suggestions")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolrag.config import configure_environment

    configure_environment()
    from toolrag.encode.models import load_models
    from toolrag.evaluation.risk import RiskModel, risk_model
    from toolrag.settings import Settings

    args.root = prepare(args.benchmarks, args.bench_dir)
    models = load_models(Settings())
    out_file = args.root / "label_free.json"
    old = json.loads(out_file.read_text(encoding="utf-8")) if out_file.is_file() and args.reuse else {"sets": {}}
    sets = {}
    for name in args.sets.split(","):
        if name in old["sets"]:
            sets[name] = old["sets"][name]
        else:
            sets[name] = measure(args, name, models)
        if args.candidates and name in args.candidates.split(",") and not sets[name].get("candidates"):
            sets[name]["candidates"] = measure_candidates(args, name, models, [r["tool_id"] for r in sets[name]["rows"]])
        out_file.write_text(json.dumps({"sets": {**old["sets"], **sets}}, indent=1), "utf-8")
    model = risk_model()
    if args.fit:
        train = [r for n, s in sets.items() if n.startswith("train_") for r in s["rows"] if r["n_labelled"] >= 2]
        model = RiskModel(first=fit_model(train, "labelled_first"), top5=fit_model(train, "labelled_top5"),
                          fitted_on=f"{len(train)} tools of the training catalogs ({', '.join(TRAINING)})")
    results = {"command": args.command_line, "date": time.strftime("%Y-%m-%d"), "machine": machine(),
               "engine": engine_description(), "sets": sets,
               "model": {"first": dict(model.first), "top5": dict(model.top5), "fitted_on": model.fitted_on}}
    results["agreement"] = evaluate_agreement(results, model)
    results["split_half"] = split_half(sets)
    if args.export:
        results["exported"] = export_model(model, args.command_line)
        say(f"wrote {results['exported']['file']} (version {results['exported']['version']})")
    out_file.write_text(json.dumps(results, indent=1), "utf-8")
    return results


def export_model(model: Any, command: str, path: Path | None = None) -> dict[str, str]:
    """Write ``model`` (a fitted :class:`toolrag.evaluation.risk.RiskModel`) as the shipped risk model,
    ``toolrag/data/risk_model.json`` (or ``path``), atomically: its coefficients, what it was fitted on, ``command``
    and a version (the date and a digest of the coefficients). What the loader would refuse is not written."""
    from toolrag.evaluation.risk import RISK_MODEL_FILE, RiskModel
    from toolrag.files import write_atomic

    path = path if path is not None else RISK_MODEL_FILE
    coefficients = {"first": dict(model.first), "top5": dict(model.top5)}
    digest = hashlib.sha256(json.dumps(coefficients, sort_keys=True).encode()).hexdigest()[:8]
    written = dataclasses.replace(model, version=f"{time.strftime('%Y-%m-%d')}-{digest}", command=command)
    data = written.to_json()
    RiskModel.from_json(data)  # ValueError: not written
    write_atomic(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    shown = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)
    return {"file": shown, "version": written.version}


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--training", default=str(training_dir()),
                            help="folder of the training data (default shared/training beside the repository or a "
                                 "folder above it)")
        parser.add_argument("--sets", default=",".join(SETS))
        parser.add_argument("--per-tool", type=int, default=12, help="labelled requests per tool at most (default 12)")
        parser.add_argument("--fit", action="store_true", help="fit the risk model on the training catalogs")
        parser.add_argument("--export", action="store_true",
                            help="with --fit: write the fitted model as toolrag/data/risk_model.json (package data)")
        parser.add_argument("--reuse", action="store_true", help="reuse the measured sets of the last run")
        parser.add_argument("--candidates", default="",
                            help="also measure every candidate predictor on these sets (comma-separated)")
        parser.add_argument("--timing", type=int, default=0, help="time toolrag report on this many tools instead")

    args = parse_args("bench.label_free", "agreement of the label-free risk with labelled results", argv, options,
                      benchmarks=True, docs="the tables of docs/label_free.md")
    raw = args.argv
    args.command_line = command_line(raw)
    if args.export and not args.fit:
        print("--export writes the model --fit fits: add --fit", file=sys.stderr)
        return 2
    if args.timing:
        args.root = prepare(args.benchmarks, args.bench_dir)
        line = time_report(args)
        print(line)
        if args.write_docs:
            from bench.report import write_section

            write_section("label_free_timing", f"Command: `{args.command_line}`  \nDate: {time.strftime('%Y-%m-%d')}; "
                          f"machine: {machine()}  \nEngine: {engine_description()}\n\n{line}", doc=DOC)
        return 0
    results = run(args)
    print(format_tables(results))
    if args.write_docs:
        from bench.report import write_section

        header = [f"Command: `{results['command']}`  ", f"Date: {results['date']}; machine: {results['machine']}  ",
                  f"Engine: {results['engine']}", "", ""]
        write_section("label_free", "\n".join(header) + format_tables(results), doc=DOC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
