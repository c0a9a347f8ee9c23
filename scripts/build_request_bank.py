"""Build the bundled bank of real requests (``toolrag/data/request_bank/``) from the project's training data.

    python scripts/build_request_bank.py                       # reads ../shared/training beside the repository
    python scripts/build_request_bank.py --training DIR        # another copy of the training folders

The label-free check of ``toolrag report`` suggests example requests for a tool from this bank (requests people
wrote for other catalogs' tools, the nearest ones that the real search sends to the tool). It reads every
``<folder>/pairs.jsonl`` of the training data (never ``shared/benchmarks``: that is evaluation data) and keeps
each distinct request once (whitespace collapsed, case folded), without the follow-up turns that only make
sense after an earlier message (ACEBench ``context``) and without requests over ``MAX_CHARS`` characters (an
example request is short). It writes:

- ``requests.jsonl.gz`` (gzip): ``{"query", "lang", "source"}`` per line, ``source`` being the training folder;
- ``licenses/<folder>.LICENSE``: each source folder's licence file, copied as it is;
- ``licenses/<folder>.FORMAT.md``: the folder's own account of its origin (repository, commit, files,
  conversion, caveats), copied as it is;
- ``ATTRIBUTION.md``: each source's repository, commit and licence (from its ``FORMAT.md``) and how many of
  its requests the bank keeps.

The output is deterministic (sorted by source folder, then in file order), so rebuilding changes nothing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "toolrag" / "data" / "request_bank"
#: Longer requests are not kept: an example request is a sentence or two.
MAX_CHARS = 200
MIN_CHARS = 6


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()


def _origin(format_md: Path) -> tuple[str, str]:
    """(repository @ commit, licence) as a training folder's FORMAT.md states them."""
    text = format_md.read_text(encoding="utf-8") if format_md.is_file() else ""
    source = re.search(r"Source: (\S+)(?: @ | \(HEAD )([0-9a-f]{7,40})", text)
    licence = re.search(r"Licen[cs]e: ([^(\n]+?)\s*\(", text)
    return (f"{source.group(1)} @ {source.group(2)[:12]}" if source else "see its FORMAT.md",
            licence.group(1).strip() if licence else "see its LICENSE")


def build(training: Path, out: Path) -> dict[str, int]:
    folders = sorted(p for p in training.iterdir() if (p / "pairs.jsonl").is_file())
    if not folders:
        raise SystemExit(f"no <folder>/pairs.jsonl under {training}: pass --training DIR")
    seen: set[str] = set()
    rows: list[dict[str, str]] = []
    counts: dict[str, int] = {}
    for folder in folders:
        kept = 0
        for line in (folder / "pairs.jsonl").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            pair = json.loads(line)
            query = re.sub(r"\s+", " ", str(pair.get("query", ""))).strip()
            key = _key(query)
            if pair.get("context") or not MIN_CHARS <= len(query) <= MAX_CHARS or key in seen:
                continue
            seen.add(key)
            rows.append({"query": query, "lang": str(pair.get("lang", "en")), "source": folder.name})
            kept += 1
        counts[folder.name] = kept
    shutil.rmtree(out, ignore_errors=True)
    (out / "licenses").mkdir(parents=True)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    with (out / "requests.jsonl.gz").open("wb") as raw, \
            gzip.GzipFile(filename="requests.jsonl", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fh:
        fh.write(text.encode("utf-8"))  # mtime 0: the same requests give the same bytes
    notes = ["# Where the bundled requests come from", "",
             "`requests.jsonl.gz` holds requests people wrote for the tools of other catalogs, used by the label-free",
             "check of `toolrag report` to suggest example requests. It is built by `scripts/build_request_bank.py`",
             "from the project's training data (request -> tool pairs of public tool-use datasets, checked against",
             "the evaluation sets and decontaminated). Each source's licence file and its own account of where it",
             "comes from (`FORMAT.md`) are in `licenses/`. Most requests were generated with language models by the",
             "dataset authors.", "",
             "| source | requests kept | repository @ commit | licence |", "|---|---|---|---|"]
    for folder in folders:
        for name in ("LICENSE", "FORMAT.md"):
            if (folder / name).is_file():
                suffix = name.split(".")[0] if name == "LICENSE" else name
                shutil.copyfile(folder / name, out / "licenses" / f"{folder.name}.{suffix}")
        origin, licence = _origin(folder / "FORMAT.md")
        notes.append(f"| `{folder.name}` | {counts[folder.name]:,} | {origin} | {licence} |")
    (out / "ATTRIBUTION.md").write_text("\n".join(notes) + "\n", encoding="utf-8")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = next((f / "shared" / "training" for f in REPO.parents if (f / "shared" / "training").is_dir()),
                   REPO.parent / "shared" / "training")
    parser.add_argument("--training", default=str(default),
                        help="the training folders (default: shared/training beside the repository or a folder above)")
    parser.add_argument("--out", default=str(OUT), help="where to write the bank (default: toolrag/data/request_bank)")
    args = parser.parse_args(argv)
    counts = build(Path(args.training), Path(args.out))
    print(f"{sum(counts.values()):,} requests from {len(counts)} sources: "
          + ", ".join(f"{k} {v:,}" for k, v in counts.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
