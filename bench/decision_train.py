"""Train the decision model across many catalogs, validate it leave-one-source-out, ship it.

    python -m bench.decision_train                     # episodes -> searches -> LOSO tables (nothing written)
    python -m bench.decision_train --export            # ... and write toolrag/decision/model.json
    python -m bench.decision_train --write-docs        # ... and the tables of docs/decisions.md
    python -m bench.decision_train --limit 60          # a quick run: 60 requests per folder

The shipped model's photos include scikit-image's sample photographs (bench/decision_images.py says which):

    pip download scikit-image==0.25.2 --no-deps -d /tmp/skimg && (cd /tmp/skimg && unzip -q -o scikit_image-*.whl)
    python -m bench.decision_train --skimage-data /tmp/skimg/skimage/data --export --write-docs

Every episode (``bench.decision_episodes``) is searched through ``ToolRetriever.search`` with the episode's tools
as the caller's visible tools, so the features are exactly what a search of that catalog reads
(``toolrag.decision.view.build_view``: one builder for serving and training). The searches are kept in the bench
folder (``decision-episodes-<key>.pkl``, keyed by toolrag's code and the episodes), so refitting costs seconds.
Then ``bench.decision_fit`` fits each candidate family leave-one-source-out (never scored on a source it was
fitted on), picks the operating points on the held-out predictions, prints the tables, and with ``--export``
fits the winner on every source and writes it as package data. CPU only; about 15 minutes here for the text
episodes' searches and 10 for the image episodes' (OCR), seconds for the fits.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO, index_dir, keep_results, machine, parse_args, say
from bench.datasets import bench_dir
from bench.decision_episodes import (
    CROSS_SIDES,
    EPISODES_VERSION,
    GROUPS,
    SHIFT_GROUPS,
    Episode,
    Space,
    build_cross,
    build_episodes,
    build_foreign,
    pool_decision_sets,
)
from bench.train_data import FOLDERS, prepare_training

__all__ = ["collect", "episode_key", "fitted_shift", "main", "split_shift"]

#: Modules whose code decides nothing of the features (the policy and the model read them): a change there
#: keeps the cached searches.
_NOT_FEATURES = ("decision/policy.py", "decision/model.py", "decision/decider.py", "decision/outcome.py")


def episode_key(seed: int, limit: int | None) -> str:
    """The cache key of the searched episodes: toolrag's code (but the policy and the model) and data files, the
    episode builder and its arguments."""
    digest = hashlib.sha256(f"{EPISODES_VERSION}|{seed}|{limit}".encode())
    for file in sorted((REPO / "toolrag").rglob("*.py")):
        if not any(str(file).endswith(part) for part in _NOT_FEATURES):
            digest.update(file.read_bytes())
    for data in sorted((REPO / "toolrag" / "data").rglob("*.yaml")):  # the no-tool requests the features read
        digest.update(data.read_bytes())
    for name in ("decision_episodes.py", "decision_images.py", "decision_conversations.py"):
        digest.update((REPO / "bench" / name).read_bytes())
    return digest.hexdigest()[:16]


def _retrievers(root: Path, index: Path, sources: Sequence[str]) -> dict[str, Any]:
    from toolrag.encode.models import load_models
    from toolrag.search.query import QueryAnalyzer
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    models = load_models(Settings())
    analyzer = QueryAnalyzer(models, cache_size=80_000)
    out = {}
    for source in sources:
        start = time.perf_counter()
        retriever = ToolRetriever.from_catalog(root / source / "catalog", data_dir=index / "train", models=models)
        retriever.analyzer = analyzer  # one cache of query vectors for every source
        out[source] = retriever
        say(f"{source}: {len(retriever.catalog)} tools ready in {time.perf_counter() - start:.0f}s")
    return out


def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The searched episodes, text then image ones (each from its cache when toolrag's features and the episodes
    are unchanged)."""
    root = prepare_training(args.training, args.bench_dir)
    key = episode_key(args.seed, args.limit)
    folder = bench_dir(args.bench_dir)
    text_cache = folder / f"decision-episodes-{key}.pkl"
    image_cache = folder / f"decision-images-{key}.pkl"
    if getattr(args, "reuse", False):
        text_cache, image_cache = (_newest(folder, cache) for cache in (text_cache, image_cache))
    if getattr(args, "text_episodes", None):
        text_cache = _given_cache(Path(args.text_episodes), folder)
        say(f"--text-episodes: the text episodes as {text_cache.name} holds them")
    want_images = not getattr(args, "no_images", False)
    records = _load(text_cache)
    images = _load(image_cache) if want_images else []
    if images:
        images = _padded(images)
    decisions = pool_decision_sets(root, args.training)
    if records is not None:
        records = _padded(records) + _added(args, root, decisions, records, folder, key)
    if records is None or images is None:
        records, images = _searched(args, root, decisions, records, images, folder, text_cache, image_cache)
    records, conversations = _conversations(args, root, decisions, records, folder, key)
    if getattr(args, "foreign", "as-built") != "as-built":
        records = _foreign_redrawn(args, root, records, folder, key)
    sources = cross_sources(getattr(args, "cross_extra", "") or "")
    if sources:
        records = records + _cross_extra(args, root, folder, key, sources)
    return records + images + conversations  # appended last: the other episodes' draws stay as they were


def _searched(args: argparse.Namespace, root: Path, decisions: dict[str, list[dict[str, Any]]],
              records: list[dict[str, Any]] | None, images: list[dict[str, Any]] | None, folder: Path,
              text_cache: Path, image_cache: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The text and image episodes no cache held, built and searched with this code (and kept)."""
    retrievers = _retrievers(root, index_dir(folder), [*FOLDERS, *decisions])
    spaces = _spaces(retrievers)
    episodes = build_episodes(root, spaces, decisions, seed=args.seed, training=args.training, limit=args.limit)
    if records is None:
        records = _search_all(retrievers, episodes, text_cache, histories=True)
    if images is None:
        from bench.decision_images import build_image_episodes, photo_files

        photos = photo_files(Path(args.skimage_data) if args.skimage_data else None)
        say(f"{len(photos)} photos for the image episodes")
        shown = build_image_episodes(root, spaces, episodes, photos=photos, seed=args.seed + 4, limit=args.limit)
        images = _search_all(retrievers, shown, image_cache, histories=False)
    return records, images


def _conversations(args: argparse.Namespace, root: Path, decisions: dict[str, list[dict[str, Any]]],
                   records: list[dict[str, Any]], folder: Path, key: str) -> tuple[list[dict[str, Any]],
                                                                                  list[dict[str, Any]]]:
    """(``records``, the episodes only the history heads are fitted on): the conversations
    (``bench.decision_conversations``; none with ``--no-conversations``) and, when a cache searched the episodes
    with earlier turns before the view read the request's own text (``sem_own`` NaN: the shipped model's cached
    text episodes), those episodes drawn and searched again with this code (``fresh``: for the history heads;
    the cached ones are marked ``stale``: for the text and image heads, which do not read the request's own
    text, so they stay the shipped ones). Kept in ``decision-turns-<key>.pkl`` and
    ``decision-conversations-<key>.pkl``."""
    from bench.decision_conversations import build_conversations
    from toolrag.decision.view import FEATURES

    own = FEATURES.index("sem_own")
    stale = [r for r in records if r["history"] and math.isnan(r["x"][own])]
    if getattr(args, "no_conversations", False):
        return records, []
    turns_cache = folder / f"decision-turns-{key}.pkl"
    talks_cache = folder / f"decision-conversations-{key}.pkl"
    turns = _load(turns_cache) if stale else []
    talks = _load(talks_cache)
    if turns is None or talks is None:
        fitted = [f for f in FOLDERS if GROUPS[f] not in SHIFT_GROUPS]
        sources = sorted({r["source"] for r in stale} | set(fitted if talks is None else ()))
        retrievers = _retrievers(root, index_dir(folder), sources)
        spaces = _spaces(retrievers)
        if turns is None:
            again = [e for e in build_episodes(root, spaces, decisions, seed=args.seed, training=args.training,
                                               limit=args.limit, sources=sorted({r["source"] for r in stale}))
                     if e.history]
            turns = _search_all(retrievers, again, turns_cache, histories=True)
        if talks is None:
            talks = _search_all(retrievers, build_conversations(root, spaces, decisions, sources=fitted,
                                                                seed=args.seed + 17, limit=args.limit),
                                talks_cache, histories=True)
    for r in stale:
        r["stale"] = True
    for r in turns:
        r["fresh"] = True
    if stale:  # drawn by this builder: its catalogs' duplicates moved with the English reading (docs/decisions.md)
        say(f"{len(stale)} cached episodes with earlier turns drawn and searched again with this code for the history "
            f"heads ({len(turns)})")
    say(f"{len(talks)} conversation episodes added")
    return records, list(turns) + list(talks)


def _spaces(retrievers: dict[str, Any]) -> dict[str, Space]:
    """Each source catalog's tools and vectors, as the episode builders read them."""
    return {s: Space(list(r.snapshot.ids), r.snapshot.vectors["dense"], r.snapshot.vectors.get("dense_en"),
                     np.asarray(r.snapshot.english, dtype=bool)) for s, r in retrievers.items()}


def left_out(value: str) -> tuple[str, ...]:
    """``--leave-out``: the features a trial's heads do not read besides :data:`bench.decision_fit.LEFT_OUT`;
    exits naming the features on an unknown name."""
    from toolrag.decision.view import FEATURES

    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise SystemExit(f"--leave-out {value}: {', '.join(unknown)} is not a decision feature; choose among "
                         f"{', '.join(FEATURES)}")
    return tuple(names)


def fitted_shift(value: str) -> frozenset[str]:
    """The groups of :data:`SHIFT_GROUPS` that ``--fit-shift`` fits on (``"all"``, a comma-separated list, or
    ``""``: none); exits naming the choices on any other group."""
    also = set(SHIFT_GROUPS) if value == "all" else {v.strip() for v in value.split(",") if v.strip()}
    if also - SHIFT_GROUPS:
        raise SystemExit(f"--fit-shift {value}: {', '.join(sorted(also - SHIFT_GROUPS))} is not a group the shipped "
                         f"model never saw; choose among {', '.join(sorted(SHIFT_GROUPS))} (comma-separated), or "
                         "give the flag alone for all of them")
    return frozenset(also)


def split_shift(records: Sequence[dict[str, Any]], also: frozenset[str]) -> tuple[list[dict[str, Any]],
                                                                                  list[dict[str, Any]]]:
    """(episodes to fit on, episodes of the groups never fitted on): every group but :data:`SHIFT_GROUPS` is
    fitted on, and of those only ``also``."""
    fitted = [r for r in records if r["group"] not in SHIFT_GROUPS or r["group"] in also]
    return fitted, [r for r in records if r["group"] in SHIFT_GROUPS and r["group"] not in also]


def _added(args: argparse.Namespace, root: Path, decisions: dict[str, list[dict[str, Any]]],
           records: Sequence[dict[str, Any]], folder: Path, key: str) -> list[dict[str, Any]]:
    """The text episodes of the sources a cache searched before they joined the training sets lacks (the text
    episodes the shipped model was fitted on hold the first nine folders): built for those sources alone and
    searched with this code, kept in ``decision-added-<key>-<sources>.pkl``."""
    have = {r["source"] for r in records}
    missing = [s for s in (*FOLDERS, *decisions) if s not in have]
    if not missing:
        return []
    tag = hashlib.sha256("|".join(missing).encode()).hexdigest()[:8]
    cache = folder / f"decision-added-{key}-{tag}.pkl"
    kept = _load(cache)
    if kept is not None:
        return kept
    say(f"the cache lacks {', '.join(missing)}: their episodes are built and searched with this code")
    retrievers = _retrievers(root, index_dir(folder), missing)
    spaces = _spaces(retrievers)
    episodes = build_episodes(root, spaces, decisions, seed=args.seed, training=args.training, limit=args.limit,
                              sources=missing)
    return _search_all(retrievers, episodes, cache, histories=True)


def _foreign_redrawn(args: argparse.Namespace, root: Path, records: list[dict[str, Any]], folder: Path,
                     key: str) -> list[dict[str, Any]]:
    """``--foreign redrawn|same-language`` (a trial: docs/decision_trials.md): the fitted folders' ``foreign``
    episodes replaced by ones drawn afresh (:func:`bench.decision_episodes.build_foreign`), in any language or in
    the labelled request's own, searched with this code and kept in ``decision-foreign-<key>-<mode>.pkl``."""
    sources = [f for f in FOLDERS if GROUPS[f] not in SHIFT_GROUPS]
    cache = folder / f"decision-foreign-{key}-{args.foreign}.pkl"
    fresh = _load(cache)
    if fresh is None:
        retrievers = _retrievers(root, index_dir(folder), sources)
        spaces = _spaces(retrievers)
        episodes = build_foreign(root, spaces, sources=sources, seed=args.seed + 11, limit=args.limit,
                                 same_language=args.foreign == "same-language")
        fresh = _search_all(retrievers, episodes, cache, histories=False)
    kept = [r for r in records if not (r["kind"] == "foreign" and r["source"] in sources)]
    say(f"--foreign {args.foreign}: {len(records) - len(kept)} foreign episodes replaced by {len(fresh)}")
    return kept + fresh


def cross_sources(value: str) -> tuple[str, ...]:
    """The sources of ``--cross-extra`` (comma-separated names of :data:`CROSS_SIDES`, or ``""``: none); exits
    naming the choices on any other name."""
    names = tuple(v.strip() for v in value.split(",") if v.strip())
    unknown = [n for n in names if n not in CROSS_SIDES]
    if unknown:
        raise SystemExit(f"--cross-extra {value}: {', '.join(unknown)} is not a source with tools in both languages; "
                         f"choose among {', '.join(CROSS_SIDES)}")
    return names


def _cross_extra(args: argparse.Namespace, root: Path, folder: Path, key: str,
                 sources: Sequence[str]) -> list[dict[str, Any]]:
    """``--cross-extra`` (a trial: docs/decision_trials.md): one more ``cross`` and ``cross_sibling`` episode for
    every request of ``sources`` (HammerBench, Glaive: :func:`bench.decision_episodes.build_cross`), searched with
    this code and kept in ``decision-cross-<key>[-<source>].pkl``."""
    out: list[dict[str, Any]] = []
    for source in sources:
        sides = CROSS_SIDES[source]
        cache = folder / f"decision-cross-{key}{'' if source == 'hammerbench' else '-' + source}.pkl"
        fresh = _load(cache)
        if fresh is None:
            retrievers = _retrievers(root, index_dir(folder), sorted(set(sides.values())))
            fresh = _search_all(retrievers, build_cross(root, _spaces(retrievers), seed=args.seed + 13,
                                                        limit=args.limit, sides=sides), cache, histories=False)
        say(f"--cross-extra {source}: {len(fresh)} cross-language episodes added")
        out += fresh
    return out


def _newest(folder: Path, cache: Path) -> Path:
    """``cache``, or (``--reuse``) the newest cache of its kind when it is missing."""
    if cache.is_file():
        return cache
    kind = cache.name.rsplit("-", 1)[0]
    kept = sorted(folder.glob(f"{kind}-*.pkl"), key=lambda f: f.stat().st_mtime)
    if not kept:
        return cache
    say(f"--reuse: {kept[-1].name} was searched with other code; its features may differ from this code's")
    return kept[-1]


def _given_cache(path: Path, folder: Path) -> Path:
    """A cache named on the command line: the path, else that name in the bench folder; a name found in neither
    is an error (it would be searched afresh with this code and written there, fitting on other episodes than the
    ones asked for)."""
    for candidate in (path, folder / path):
        if candidate.is_file():
            return candidate
    print(f"bench.decision_train: --text-episodes {path}: no such file here or in {folder}; give the path of a "
          "decision-episodes-<key>.pkl (scripts/reproduce_decision_model.sh builds the shipped one)", file=sys.stderr)
    raise SystemExit(2)


def _load(cache: Path) -> list[dict[str, Any]] | None:
    if not cache.is_file():
        return None
    say(f"searched episodes from {cache.name}")
    with cache.open("rb") as fh:
        return list(pickle.load(fh))


def _padded(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records searched before features were appended to the view (``--reuse`` of an older cache): the new
    features NaN. Right where a record has none of them: the image's for a text episode, the request's own
    standing (``sem_own``, ``en_own``) for an episode without earlier turns (:func:`_conversations` searches
    the others again)."""
    from toolrag.decision.view import FEATURES

    for r in records:
        if len(r["x"]) < len(FEATURES):
            r["x"] = np.concatenate([r["x"], np.full(len(FEATURES) - len(r["x"]), np.nan)])
    return records


def _search_all(retrievers: dict[str, Any], episodes: Sequence[Episode], cache: Path, *,
                histories: bool) -> list[dict[str, Any]]:
    """Every episode searched (requests encoded in batches first), kept in ``cache``."""
    say(f"{len(episodes)} episodes; encoding their requests")
    analyzer = next(iter(retrievers.values())).analyzer
    texts = [t for t in dict.fromkeys(e.query for e in episodes) if t]
    for start in range(0, len(texts), 512):
        next(iter(retrievers.values())).prepare(texts[start:start + 512])
    if histories:
        turns = list(dict.fromkeys(e.history for e in episodes if e.history))
        for start in range(0, len(turns), 256):
            batch = turns[start:start + 256]
            analyzer.prepare([e[-1] for e in batch], histories=[list(e) for e in batch])
    records = []
    begin = time.perf_counter()
    for n, episode in enumerate(episodes, start=1):
        records.append(_search(retrievers[episode.source], episode))
        if n % 500 == 0:
            say(f"{n}/{len(episodes)} searched ({(time.perf_counter() - begin) / n * 1000:.1f} ms each)")
    tmp = cache.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        pickle.dump(records, fh)
    tmp.replace(cache)
    return records


def _search(retriever: Any, episode: Episode) -> dict[str, Any]:
    from bench.decision_images import image_of
    from toolrag.catalog.caller import Caller
    from toolrag.decision.view import FEATURES, SELECTION_FEATURES

    result = retriever.search(episode.query, history=episode.history, image=image_of(episode),
                              caller=Caller(tools=frozenset(episode.visible)), top_k=5, audited=False)
    return {"source": episode.source, "group": episode.group, "kind": episode.kind, "expect": episode.expect,
            "gold": episode.gold, "lang": episode.lang, "n": len(episode.visible), "query": episode.query,
            "history": bool(episode.history), "image": episode.image is not None, "top": tuple(result.ids),
            "x": np.array([result.decision_features.get(f, np.nan) for f in FEATURES], dtype=np.float64),
            "cand": np.array([[row.get(f, np.nan) for f in SELECTION_FEATURES] for row in result.candidate_features],
                             dtype=np.float64).reshape(-1, len(SELECTION_FEATURES))}


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--training", help="folder of the training sets (default $TOOLRAG_TRAINING, else "
                                               "shared/training beside the repository)")
        parser.add_argument("--limit", type=int, default=None, help="at most this many requests per folder")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--families", default="trees,logistic", help="model families to compare")
        parser.add_argument("--skimage-data", default=None,
                            help="scikit-image's skimage/data folder: its photos the bundled assets do not use join "
                                 "the image episodes' photos (bench/decision_images.py)")
        parser.add_argument("--no-images", action="store_true", help="text episodes only")
        parser.add_argument("--text-episodes", default=None,
                            help="a searched text-episode cache to fit on (decision-episodes-<key>.pkl), whatever "
                                 "code searched it (the shipped model's: docs/decisions.md says which)")
        parser.add_argument("--export", action="store_true", help="write toolrag/decision/model.json")
        parser.add_argument("--fit-shift", nargs="?", const="all", default="",
                            help="fit on these of the groups the shipped model never saw too (comma-separated, "
                                 "default all of bench.decision_episodes.SHIFT_GROUPS; a trial: "
                                 "docs/decision_trials.md)")
        parser.add_argument("--foreign", choices=("as-built", "redrawn", "same-language"), default="as-built",
                            help="the fitted folders' foreign episodes as the text-episode cache holds them, drawn "
                                 "afresh, or drawn afresh in the labelled request's own language (a trial: "
                                 "docs/decision_trials.md)")
        parser.add_argument("--cross-extra", nargs="?", const="hammerbench", default="",
                            help="one more request-in-the-other-language episode pair (served, nothing serves) per "
                                 "request of these sources with tools in both languages (comma-separated: "
                                 "hammerbench, the default, glaive; a trial: docs/decision_trials.md)")
        parser.add_argument("--leave-out", default="",
                            help="features the heads do not read besides bench.decision_fit.LEFT_OUT (comma-separated"
                                 " names of toolrag.decision.view.FEATURES; a trial: docs/decision_trials.md)")
        parser.add_argument("--no-conversations", action="store_true",
                            help="without the conversation episodes (bench.decision_conversations) and so without "
                                 "history heads (a trial's control)")
        parser.add_argument("--reuse", action="store_true",
                            help="fit on the newest searched episodes even if toolrag's code changed since (quick "
                                 "trials of the fit; never for the shipped model)")

    args = parse_args("bench.decision_train", "decision episodes, leave-one-source-out fits, the shipped model",
                      argv, options, results="decision_train.json", docs="the tables of docs/decisions.md")
    from bench.decision_fit import fit_and_report
    from bench.decision_tables import format_tables, write_docs

    also = fitted_shift(args.fit_shift)
    dropped = left_out(args.leave_out)
    cross_sources(args.cross_extra)  # a bad name exits before any episode is built
    fitted, shift = split_shift(collect(args), also)
    results = fit_and_report(fitted, families=args.families.split(","), export=args.export, shift=shift,
                             left_out=dropped)
    results.update({"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(), "command": args.command_line})
    return keep_results(args, results, "decision_train.json", format_tables, write_docs)


if __name__ == "__main__":
    raise SystemExit(main())
