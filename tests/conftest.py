"""Shared fixtures: offline environment, real models loaded once, a small catalog and the sample catalog.

Every model here is real (packaged e5, MiniLM, EfficientNet-Lite0, RapidOCR). The index lives in a
temporary folder per test session, so tests never touch a user's cache.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolrag.config import configure_environment, data_dir

# The suite runs offline with telemetry off, whatever the machine: no Space, no Chroma server from outside.
os.environ.pop("SPACE_ID", None)
os.environ.pop("TOOLRAG_ONLINE", None)
os.environ.pop("TOOLRAG_CHROMA_URL", None)
os.environ.pop("TOOLRAG_WARMUP", None)  # the warm-up tests assert the default, whatever the developer's shell says
os.environ.pop("TOOLRAG_MAP_WARMUP", None)
configure_environment(offline=True)
if os.environ.get("PYTEST_XDIST_WORKER"):
    # One intra-op thread per xdist worker (scripts/test.sh runs one worker per core), for ONNX Runtime and torch
    # here and in the child processes the tests start: two builds of the sample catalog side by side took 52 s of
    # wall and 51 s of CPU each with two threads apiece, 37 s and 36 s with one (2 cores; alone, one build takes
    # 28 s with one thread, 24 s with two).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
# UMAP's compiled numba code (the map) is kept where the app keeps it, in the data folder beside the built models,
# not in the clone: a fresh clone's first map compiled it all again (42 s of CPU against 19 s with the cache; the
# functions numba cannot cache are compiled in every process anyway). numba keys it by the source of the compiled
# functions, which live in the installed packages.
os.environ.setdefault("NUMBA_CACHE_DIR", str(data_dir() / "numba"))

pytest_plugins = ["quick_tier"]  # --quick: the pure-logic tier (bash scripts/test.sh quick)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_tools"
ASSETS = ROOT / "assets"

SMALL_CATALOG = """\
- id: weather.current
  name: get_current_weather
  description: Current weather conditions (temperature, wind, rain) for a city right now.
  category: travel
  tags: [weather, 天气]
  examples: [{query: what's the weather in Paris now}, {query: 北京现在天气怎么样}, {query: is it raining in London}]
  parameters: {type: object, properties: {city: {type: string, description: city name}}, required: [city]}
- id: weather.forecast
  name: get_weather_forecast
  description: Weather forecast for the next 1 to 7 days for a city.
  category: travel
  tags: [forecast, 天气预报]
  examples: [{query: will it rain tomorrow in Berlin}, {query: 下周上海天气预报}, {query: forecast for the weekend}]
- id: finance.expense.submit
  name: submit_expense
  description: 提交费用报销单：上传餐饮、交通发票或小票，填写金额和事由，提交给主管审批。
  category: finance
  tags: [报销, expense, receipt, 发票]
  examples:
    - {query: 帮我报销这张餐饮发票}
    - {query: submit this taxi receipt for reimbursement}
    - {query: 报销昨天的午饭}
  images: [{path: receipt_zh.png, caption: 一张餐饮小票 restaurant receipt}]
- id: image.background.blur
  name: blur_background
  description: Blur the background of a portrait photo while keeping the person sharp.
  category: image
  tags: [photo, portrait, bokeh]
  examples: [{query: make the background of my photo blurry}, {query: 把照片背景虚化}, {query: bokeh effect}]
  images: [{path: astronaut.jpg, caption: a portrait photo of a person}]
- id: hr.payroll.approve
  name: approve_payroll
  description: Approve the monthly payroll run so salaries are paid. Irreversible; HR managers only.
  category: hr
  mutation: true
  permissions: [hr.payroll.approve]
  examples: [{query: approve this month's payroll}, {query: 批准本月工资发放}, {query: sign off payroll}]
- id: dev.search.code
  name: search_code
  description: Search the company's source code repositories for a function, class or string.
  category: devtools
  examples: [{query: where is getUserProfile defined}, {query: 在代码库里搜索 parseInvoice}, {query: grep for TODO}]
- id: calendar.book_v1
  name: book_meeting_v1
  description: Book a meeting room (old API).
  category: office
  deprecated: true
  replaced_by: calendar.book
  examples: [{query: book a meeting room}, {query: 订会议室}, {query: reserve room 5}]
- id: calendar.book
  name: book_meeting_room
  description: Book a meeting room for a time slot and invite attendees.
  category: office
  examples: [{query: book a meeting room for 3pm}, {query: 帮我订明天下午的会议室}, {query: reserve a room}]
"""


_TREE_BEFORE = pytest.StashKey[set[str] | None]()


def _tree_state() -> set[str] | None:
    """``git status --porcelain`` of the repository as a set of lines (None outside a git checkout)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
                             capture_output=True, encoding="utf-8", timeout=60, check=False)
    except OSError:
        return None
    return set(out.stdout.splitlines()) if out.returncode == 0 else None


def _xdist_worker(config: pytest.Config) -> bool:
    """Whether this process is one of pytest-xdist's workers (``bash scripts/test.sh`` runs the full suite in
    several); the controller that started them sees the whole run."""
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _xdist_worker(session.config):
        session.config.stash[_TREE_BEFORE] = _tree_state()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The suite leaves the checkout as it found it: a file it wrote, changed or removed there fails the run
    (docs/screenshots/ only with ``--update-screenshots``, whose purpose it is). Only states new since the start
    count, so a commit made meanwhile fails nothing. Checked once, by the process that started the run (not by
    each xdist worker, which would see another worker's test in the middle of its work)."""
    if _xdist_worker(session.config):
        return
    before = session.config.stash.get(_TREE_BEFORE, None)
    after = _tree_state()
    if before is None or after is None:
        return
    changed = sorted(line for line in after - before
                     if not (session.config.getoption("--update-screenshots") and "docs/screenshots/" in line))
    if changed:
        print(f"\nthe test run changed the checkout (write under tests/_artifacts/ or a temporary folder; a file "
              f"edited by hand while the tests ran counts too: run them again): {changed}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

#: The test files that take longest (a Space's first start and the replicas' processes, two minutes each on 2
#: cores; the playground's files, :data:`PLAYGROUND_FILES`, three together; then the first build of the sample
#: catalog and the files that start many child processes). With several xdist workers (``--dist loadfile``: a
#: file's tests stay in one worker, which shares its module fixtures) they are handed out first, so the last
#: files to start are short ones and no worker waits long for another at the end. test_store.py (27 s, most of it
#: waiting out a hung or silent server's timeouts) was the last file of a run and its tail: 24 s with one worker
#: idle; early, its waiting overlaps the other worker's work.
LONGEST_FIRST = ("test_space.py", "test_replicas.py", "test_ui_studio_browser.py", "test_adapters.py",
                 "test_encoders.py", "test_cli.py", "test_bad_inputs.py", "test_mcp.py", "test_store.py")


#: The files that open the playground's backend in the test process (tests/ui_support.py's session app, or their
#: own) or draw the tool map: under xdist they form one unit of work, so one worker indexes the catalog copy,
#: starts the app and compiles UMAP for the map (numba, 20 s of CPU in each process: its parallel functions are
#: not cached), not every worker.
PLAYGROUND_FILES = frozenset({
    "test_catalog_cli.py", "test_editing.py", "test_fallback.py", "test_label_free_ui.py", "test_projection.py",
    "test_ui_browser.py", "test_ui_client.py", "test_ui_handlers.py", "test_ui_sharing.py", "test_ui_studio.py",
    "test_ui_studio_browser.py", "test_ui_unmatched_browser.py", "test_unmatched.py", "test_warmup.py"})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (scripts/test.sh), with :data:`PLAYGROUND_FILES` handed to one worker together."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Scheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return "playground" if Path(file).name in PLAYGROUND_FILES else file

    return Scheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In xdist workers (each collects the same order, which the controller hands out file by file), the files
    of :data:`LONGEST_FIRST` first, in that order; the others after them as collected."""
    if not _xdist_worker(config):
        return
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its order


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-screenshots", action="store_true",
                     help="browser tests write the README's screenshots to docs/screenshots/ "
                          "(python -m scripts.screenshots); otherwise they go to tests/_artifacts/screenshots/")


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("toolrag-data")


@pytest.fixture(scope="session")
def small_catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("small-catalog")
    (folder / "tools.yaml").write_text(SMALL_CATALOG, encoding="utf-8")
    (folder / "catalog.yaml").write_text(
        "name: small\nassets_dir: assets\nroles:\n  employee: []\n  hr_manager: [hr.payroll.approve]\n",
        encoding="utf-8")
    (folder / "assets").mkdir()
    for name in ("receipt_zh.png", "astronaut.jpg"):
        shutil.copy(ASSETS / name, folder / "assets" / name)
    return folder


def run_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """``name`` in this run's temporary folder, made if missing: one folder for the whole run, whether it runs in
    one process or in several xdist workers (each has its own base temporary folder inside the run's)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(exist_ok=True)
    return folder


class SessionOcr:
    """The real OCR engine, reading each distinct image once per test run.

    RapidOCR is deterministic: the same pixels read with the same options give the same lines. Reading the
    bundled example images again for every copy of the sample catalog that a test indexes (in a fixture or
    through the CLI in this process) was most of the suite's index builds: 23 images, about 35 s of CPU per
    build of the sample catalog on 2 cores. So, in the full tier, ``toolrag.encode.models.get_ocr`` (what
    :func:`toolrag.encode.models.load_models` hands an index) answers with this wrapper around the one real
    engine: the first read of an image (its pixels after :func:`toolrag.images.load_image`, ``max_lines``,
    ``detector_side`` and the engine's ``model_id``) runs the engine, a later read of the same gets that
    result, also in the run's other xdist workers (``folder``, one JSON file per read). Every other attribute
    is the engine's. The OCR's own tests (tests/test_encoders.py) and child processes use the engine itself;
    a test that counts reads wraps this one, so it counts what the library asked for."""

    def __init__(self, engine: Any, folder: Path) -> None:
        self.engine = engine
        self._folder = folder
        self._read: dict[str, Any] = {}
        self._lock = threading.Lock()

    def read(self, image: Any, *, max_lines: int | None = None, detector_side: int | None = None) -> Any:
        from toolrag.encode.ocr import OcrResult
        from toolrag.images import load_image

        if (max_lines is not None and max_lines < 1) or (detector_side is not None and detector_side < 32):
            return self.engine.read(image, max_lines=max_lines, detector_side=detector_side)  # its error
        rgb = load_image(image)
        key = hashlib.sha256(repr((rgb.size, max_lines, detector_side, type(self.engine).model_id)).encode()
                             + rgb.tobytes()).hexdigest()
        with self._lock:
            known = self._read.get(key)
        if known is not None:
            return known
        file = self._folder / f"{key}.json"
        with file.with_suffix(".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a worker reading the same image meanwhile waits for this result
            if file.exists():
                saved = json.loads(file.read_text(encoding="utf-8"))
                known = OcrResult(saved["text"], tuple(saved["lines"]), tuple(saved["scores"]))
            else:
                known = self.engine.read(rgb, max_lines=max_lines, detector_side=detector_side)
                part = file.with_suffix(".part")
                part.write_text(json.dumps(dataclasses.asdict(known), ensure_ascii=False), encoding="utf-8")
                os.replace(part, file)
        with self._lock:
            self._read[key] = known
        return known

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


@pytest.fixture(scope="session", autouse=True)
def session_ocr(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """In the full tier, ``get_ocr()`` in this process is the real engine behind :class:`SessionOcr`, whose
    reads are kept beside the xdist workers' temporary folders (in this run's own temporary folder)."""
    if request.config.getoption("--quick"):
        yield
        return
    from toolrag.encode import models as encode_models

    folder = run_folder(tmp_path_factory, "ocr-reads")
    real = encode_models.get_ocr
    wrapper: list[SessionOcr] = []

    @functools.wraps(real)
    def get_ocr() -> SessionOcr:
        if not wrapper:
            wrapper.append(SessionOcr(real(), folder))
        return wrapper[0]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(encode_models, "get_ocr", get_ocr)
        yield


@pytest.fixture(scope="session")
def models(session_ocr: None) -> object:
    from toolrag.encode.models import load_models
    from toolrag.settings import Settings

    return load_models(Settings())


@pytest.fixture(scope="session")
def small_retriever(small_catalog_dir: Path, data_dir: Path, models: object) -> Iterator[object]:
    from toolrag.search.retriever import ToolRetriever

    yield ToolRetriever.from_catalog(small_catalog_dir, data_dir=data_dir, models=models)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def sample_retriever(data_dir: Path, models: object) -> object:
    from toolrag.search.retriever import ToolRetriever

    return ToolRetriever.from_catalog(SAMPLE, data_dir=data_dir, models=models)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 1-layer BERT cross-encoder with MiniLM's tokenizer, saved like a real one.

    No cross-encoder weights ship in any package, so this tests the real loading and scoring code path."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from toolrag.encode.resolve import resolve_text_model

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    tokenizer = AutoTokenizer.from_pretrained(resolve_text_model("minilm").location)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_labels=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
