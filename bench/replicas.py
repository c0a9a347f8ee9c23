"""Replicas of a published index behind one Chroma server: sizing and a load run (docs/deploy.md).

    python -m bench.replicas --sizing 1000 10000     # memory per replica, searches per second per core
    python -m bench.replicas --load 120              # 2 replicas x 8 clients for 120 s, a change pushed 10 s in

Sizing: a synthetic catalog (bench.synthetic) of each size is pushed to a ``chroma run`` server started here; a
read-only replica (``toolrag serve --index --transport http``, no catalog file) is started, warmed with 20
searches and its resident memory read; then this process opens a replica of its own and times searches of
distinct paraphrased requests on one thread (``OMP_NUM_THREADS=1``): searches per second per core.

Load: a synthetic catalog (1,000 tools by default) is pushed, two replicas serve it over MCP (streamable HTTP) and
8 clients (4 per replica, one MCP session each) search back to back for the given time, each request a paraphrase
never sent before (no cached query vector); 10 s in, a change to 10 tools' descriptions is pushed with
``toolrag index`` (its models load while the clients run: give the run 120 s so that both versions answer). Every answer is checked against the catalog of the version it names: an answer
whose tools carry descriptions of another version mixes two versions. Errors, mixed answers, latency percentiles
and the time until both replicas served the push are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO, at_least, keep_results, machine, parse_args, say

sys.path.insert(0, str(REPO / "tests"))
from chroma_server import ChromaServer, free_port  # the suite's real `chroma run` helper

#: Tools whose description the load run's push changes (and the requests that find them).
CHANGED = 10


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRAG_")}
    return {**env, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **extra}


def _push(catalog: Path, url: str, name: str, data: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "toolrag", "index", "--catalog", str(catalog), "--chroma-url", url,
                           "--index", name, "--data-dir", str(data)], cwd=REPO, env=_env(), capture_output=True,
                          encoding="utf-8", stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SystemExit(f"toolrag index failed: {proc.stderr[-2000:]}")
    return proc.stdout.split("version ", 1)[1].split()[0]


def _serve(url: str, name: str, data: Path, cwd: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "toolrag", "serve", "--index", name, "--chroma-url", url,
                             "--transport", "http", "--port", str(port), "--data-dir", str(data)], cwd=cwd,
                            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return proc, port


def _readyz(port: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as response:
            return dict(json.loads(response.read()))
    except urllib.error.HTTPError as exc:
        return dict(json.loads(exc.read()))
    except OSError:
        return {}


def _wait_ready(port: int, version: str | None = None, timeout: float = 900) -> None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        health = _readyz(port)
        if health.get("ready") and (version is None or health.get("version") == version):
            return
        time.sleep(0.2)
    raise SystemExit(f"the replica on port {port} was not ready within {timeout} s")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _search(port: int, queries: Sequence[str]) -> list[dict[str, Any]]:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> list[dict[str, Any]]:
        out = []
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_), \
                ClientSession(read, write) as session:
            await session.initialize()
            for query in queries:
                out.append((await session.call_tool("search_tools", {"query": query, "k": 3})).structured_content)
        return out

    return anyio.run(run)


# ------------------------------------------------------------------------------------------------------ sizing
def sizing(sizes: Sequence[int], searches: int, work: Path) -> list[dict[str, Any]]:
    from bench.synthetic import make_catalog, make_queries
    from toolrag.search.replicas import open_replica

    rows = []
    with ChromaServer(work) as chroma:
        for n in sizes:
            folder = make_catalog(work / f"synthetic-{n}", n, image_every=0)
            name = f"synthetic-{n}"
            start = time.perf_counter()
            version = _push(folder, chroma.url, name, work / "data-push")
            push_s = time.perf_counter() - start
            say(f"{n} tools: version {version} pushed in {push_s:.0f} s")
            queries = [q for q, _ in make_queries(folder, searches + 20)]
            proc, port = _serve(chroma.url, name, work / f"data-serve-{n}", work)
            try:
                start = time.perf_counter()
                _wait_ready(port)
                ready_s = time.perf_counter() - start
                _search(port, queries[:20])
                rss = _rss_mb(proc.pid)
            finally:
                proc.terminate()
                proc.wait(timeout=60)
            retriever = open_replica(index=name, chroma_url=chroma.url, data_dir=work / f"data-local-{n}",
                                     follow=False)
            for query in queries[:5]:
                retriever.search(query)  # warm
            times = []
            for query in queries[20:20 + searches]:
                t0 = time.perf_counter()
                retriever.search(query)
                times.append(time.perf_counter() - t0)
            rows.append({"tools": n, "push_s": round(push_s, 1), "replica_start_s": round(ready_s, 1),
                         "rss_mb": round(rss), "searches": len(times), "per_s_per_core": round(len(times) / sum(times), 1),
                         "p50_ms": round(statistics.median(times) * 1000, 1),
                         "p95_ms": round(sorted(times)[int(0.95 * (len(times) - 1))] * 1000, 1)})
            say(f"{n} tools: {rows[-1]}")
    return rows


# -------------------------------------------------------------------------------------------------------- load
def _changed_catalog(source: Path, target: Path) -> dict[str, str]:
    """A copy of the synthetic catalog ``source`` with the first :data:`CHANGED` tools' descriptions changed; the
    changed ids' new descriptions."""
    shutil.copytree(source, target, dirs_exist_ok=True)
    lines = (source / "tools.jsonl").read_text(encoding="utf-8").splitlines()
    new: dict[str, str] = {}
    out = []
    for n, line in enumerate(lines):
        tool = json.loads(line)
        if n < CHANGED:
            tool["description"] = new[tool["id"]] = tool["description"].rstrip() + " (revised)"
        out.append(json.dumps(tool, ensure_ascii=False))
    (target / "tools.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    return new


def load(seconds: float, clients: int, tools: int, work: Path) -> dict[str, Any]:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from bench.synthetic import make_catalog, make_queries
    from toolrag.catalog.loader import load_catalog
    from toolrag.index.client import StoreConfig, open_client
    from toolrag.index.published import PublishedIndex

    source = make_catalog(work / "synthetic", tools, image_every=0)
    old = {t.id: t.description for t in load_catalog(source).tools}
    changed = work / "changed"
    new = _changed_catalog(source, changed)
    # A quarter of the requests find a changed tool (its description as the request): the answers that could mix.
    queries = [q for q, _ in make_queries(source, 300)] + [old[tool] for tool in new] * 10
    with ChromaServer(work) as chroma:
        first = _push(source, chroma.url, "load", work / "data-push")
        servers = [_serve(chroma.url, "load", work / f"data-{n}", work) for n in range(2)]
        try:
            for _, port in servers:
                _wait_ready(port, first)
            say("both replicas ready; clients start")
            answers: list[tuple[float, str | None, dict[str, str], str | None]] = []
            versions = {first: old}
            pushed: dict[str, Any] = {}

            async def client(n: int, port: int, stop: float) -> None:
                async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_), \
                        ClientSession(read, write) as session:
                    await session.initialize()
                    i = n
                    while time.monotonic() < stop:
                        query = f"{queries[i % len(queries)]} (request {i})"  # never a cached query vector
                        i += clients
                        t0 = time.perf_counter()
                        try:
                            result = await session.call_tool("search_tools", {"query": query, "k": 3})
                            error = texts(result) if result.is_error else None
                            answer = result.structured_content or {}
                        except Exception as exc:  # counted, never fatal to the run
                            error, answer = f"{type(exc).__name__}: {exc}", {}
                        answers.append((time.perf_counter() - t0, answer.get("index_version"),
                                        {t["id"]: t["description"] for t in answer.get("tools", [])}, error))

            def push_later() -> None:
                time.sleep(min(10.0, seconds / 6))
                seen: dict[int, float] = {}  # replica port -> when its /readyz first named another version

                def watch() -> None:
                    while len(seen) < len(servers) and "error" not in pushed:
                        for _, port in servers:
                            if port not in seen and _readyz(port).get("version") not in (None, first):
                                seen[port] = time.time()
                        time.sleep(0.05)

                watcher = threading.Thread(target=watch, daemon=True)
                watcher.start()
                start = time.monotonic()
                try:
                    version = _push(changed, chroma.url, "load", work / "data-push")
                except SystemExit as exc:
                    pushed["error"] = str(exc)
                    return
                pushed.update(version=version, pushed_s=round(time.monotonic() - start, 1))
                versions[version] = {**old, **new}
                watcher.join(timeout=60)
                manifest = PublishedIndex(open_client(StoreConfig(url=chroma.url)), "load").manifest()
                if len(seen) == len(servers):  # from the manifest's flip to the last replica serving the version
                    pushed["served_after_s"] = round(max(seen.values()) - manifest.pushed_at, 2)

            async def run() -> None:
                stop = time.monotonic() + seconds
                async with anyio.create_task_group() as tg:
                    for n in range(clients):
                        tg.start_soon(client, n, servers[n % 2][1], stop)

            pusher = threading.Thread(target=push_later)
            pusher.start()
            anyio.run(run)
            pusher.join()
        finally:
            for proc, _ in servers:
                proc.terminate()
                proc.wait(timeout=60)
    errors = [a for a in answers if a[3] is not None]
    mixed = [a for a in answers if a[3] is None and (a[1] not in versions or any(
        versions[a[1]].get(tool) != description for tool, description in a[2].items()))]
    times = sorted(a[0] for a in answers if a[3] is None)
    return {"replicas": 2, "clients": clients, "seconds": seconds, "searches": len(answers), "errors": len(errors),
            "mixed": len(mixed), "per_version": {v: sum(1 for a in answers if a[1] == v) for v in versions},
            "p50_ms": round(statistics.median(times) * 1000, 1) if times else None,
            "p95_ms": round(times[int(0.95 * (len(times) - 1))] * 1000, 1) if times else None,
            "throughput_per_s": round(len(times) / seconds, 1), "tools": tools, **pushed,
            "first_errors": [a[3] for a in errors[:3]]}


def texts(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def tables(results: dict[str, Any]) -> str:
    lines = [f"Machine: {results['machine']}", ""]
    if results.get("sizing"):
        lines += ["| tools | push (s) | replica start (s) | replica memory (MB RSS) | searches/s per core | p50 (ms) | "
                  "p95 (ms) |", "|---:|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['tools']:,} | {r['push_s']} | {r['replica_start_s']} | {r['rss_mb']} | {r['per_s_per_core']} | "
                  f"{r['p50_ms']} | {r['p95_ms']} |" for r in results["sizing"]]
        lines.append("")
    if results.get("load"):
        r = results["load"]
        counts = " / ".join(str(n) for n in r["per_version"].values())
        lines += ["| replicas x clients | tools | seconds | searches (first / pushed version) | errors | answers mixing "
                  "versions | p50 (ms) | p95 (ms) | push command (s) | served by both after the flip (s) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
                  f"| {r['replicas']} x {r['clients']} | {r['tools']:,} | {r['seconds']:g} | {r['searches']} ({counts}) | "
                  f"{r['errors']} | {r['mixed']} | {r['p50_ms']} | {r['p95_ms']} | {r.get('pushed_s')} | "
                  f"{r.get('served_after_s')} |"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sizing", type=at_least(10), nargs="*", metavar="TOOLS",
                            help="catalog sizes to measure (e.g. 1000 10000)")
        parser.add_argument("--searches", type=at_least(10), default=200, help="timed searches per size")
        parser.add_argument("--load", type=float, metavar="SECONDS", help="run the load test for this long")
        parser.add_argument("--clients", type=at_least(1), default=8, help="clients of the load run (default 8)")
        parser.add_argument("--tools", type=at_least(20), default=1000, help="tools of the load run's catalog")

    args = parse_args("bench.replicas", __doc__ or "", argv, options, results="replicas.json")
    if not args.sizing and not args.load:
        raise SystemExit("give --sizing SIZES and/or --load SECONDS")
    work = Path(tempfile.mkdtemp(prefix="toolrag-replicas-"))
    try:
        results: dict[str, Any] = {"command": args.command_line, "machine": machine()}
        if args.sizing:
            results["sizing"] = sizing(args.sizing, args.searches, work / "sizing")
        if args.load:
            results["load"] = load(args.load, args.clients, args.tools, work / "load")
        return keep_results(args, results, "replicas.json", tables)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
