"""Hostile and careless input through the CLI and the library: every case gets one line naming the value and
the fix (exit 2, a typed ToolragError), is refused before any model loads, and writes nothing; what can be
used is cleaned or cut and the result says so. The app's side is in ``tests/test_ui_sharing.py``."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, SMALL_CATALOG
from PIL import Image

import toolrag.search.retriever as retriever_module
from toolrag.catalog.loader import load_catalog
from toolrag.cli import main
from toolrag.errors import CatalogError, ImageError, QueryError
from toolrag.evaluation.evaluator import Evaluator
from toolrag.evaluation.queries import load_queries
from toolrag.images import MAX_ASPECT, check_example_image, load_image
from toolrag.index.store import VectorCollection
from toolrag.search.request import MAX_QUERY_CHARS, prepare_request
from toolrag.search.retriever import ToolRetriever
from toolrag.text import clean_text

# ------------------------------------------------------------------------------------------- pure parts


def test_clean_text_replaces_what_no_encoder_reads_and_says_what() -> None:
    # argv bytes \xff\xfe that are not UTF-8 arrive as U+DCFF U+DCFE (surrogateescape)
    cleaned = clean_text("approve \udcff\udcfe payroll\x00\x1b now\t\n")
    assert cleaned.text == "approve    payroll   now\t\n"
    assert cleaned.removed == {"invalid UTF-8 byte": 2, "control character": 2}
    assert cleaned.notes("the query") == ["the query had 2 invalid UTF-8 bytes and 2 control characters; "
                                          "replaced by spaces"]
    assert clean_text("\ud83d\ude00 ok").text == "😀 ok"  # a surrogate pair is one character, kept
    assert clean_text("x\ud800y\ufffe").removed == {"lone surrogate": 1, "non-character": 1}
    assert clean_text("天气 ok").notes("the query") == []
    # UTF-8 bytes read in the C locale (预订 = e9 a2 84 e8 ae a2) are the text they spell, with nothing to report
    c_locale = clean_text("\udce9\udca2\udc84\udce8\udcae\udca2 room")
    assert (c_locale.text, c_locale.removed) == ("预订 room", {})
    long = clean_text("ab" * 10_000, limit=4000)
    assert len(long.text) == 4000 and long.cut == 16_000
    assert long.notes("the query") == ["the query has 20,000 characters; only the first 4,000 were used"]
    with pytest.raises(TypeError):
        clean_text(b"bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [(1, 5000), (5000, 1), (1, 1), (5, 5), (3, 3000), (40, 2), (1, 40_000)])
def test_degenerate_images_are_padded_for_the_models_and_refused_as_examples(size: tuple[int, int]) -> None:
    fitted = load_image(Image.new("RGB", size, (10, 20, 30)))
    width, height = fitted.size
    assert min(width, height) >= 32 and max(width, height) <= MAX_ASPECT * min(width, height)
    assert max(width, height) <= max(2000, *size)
    with pytest.raises(ImageError, match=f"is {size[0]}x{size[1]} pixels: .*crop it"):
        check_example_image(Image.new("RGB", size))


def test_an_image_is_taken_as_python_users_pass_it_and_anything_else_is_named(tmp_path: Path) -> None:
    import io

    import numpy as np

    picture = Image.effect_noise((48, 40), 60).convert("RGB")
    path = tmp_path / "noise.png"
    picture.save(path)
    data = path.read_bytes()
    pixels = np.asarray(picture)
    with path.open("rb") as handle:
        given = [picture, data, bytearray(data), io.BytesIO(data), handle, str(path), path, pixels,
                 pixels.astype(np.float32) / 255.0, pixels[:, :, 0], pixels[:, :, :1], pixels > 127]
        loaded = [load_image(source, fit=False) for source in given]
    assert all(img.mode == "RGB" and img.size == (48, 40) for img in loaded)
    assert all(np.array_equal(np.asarray(img), pixels) for img in loaded[:9])
    for bad, message in [(42, "an image of type builtins.int cannot be read: give a path, a data:image/...;base64, "
                               "URL, bytes, a binary file object"),
                         ([[0, 1]], "type builtins.list"), (io.StringIO("x"), "open in text mode: open it in binary "
                                                                            "mode"),
                         (np.zeros((4, 4, 5), np.uint8), r"array of shape \(4, 4, 5\)"),
                         (np.zeros((4, 4), np.complex64), "dtype complex64"),
                         (np.full((4, 4), np.nan), "NaN")]:
        with pytest.raises(ImageError, match=message):
            load_image(bad)  # type: ignore[arg-type]
    with pytest.raises(ImageError, match="image file /dev/zero: is a character device, not an image file"):
        load_image("/dev/zero")


def test_an_image_given_as_text_is_a_path_or_a_data_url_and_anything_else_is_named(tmp_path: Path) -> None:
    import base64
    import io

    buffer = io.BytesIO()
    Image.effect_noise((48, 40), 60).convert("RGB").save(buffer, "PNG")
    encoded = base64.b64encode(buffer.getvalue()).decode()
    assert load_image(f"data:image/png;base64,{encoded}", fit=False).size == (48, 40)  # what web clients send
    assert load_image(f"  data:image/png;base64,{encoded[:40]}\n{encoded[40:]}\n", fit=False).size == (48, 40)
    for bad, message in [
        (encoded, "looks like an image's bytes as base64, not a path: give base64.b64decode"),
        ("https://example.com/receipt.png", "'https://example.com/receipt.png' is a URL: toolrag does not download"),
        ("s3://bucket/a.png", "is a URL"),
        ("x" * 300, "has a name of 300 bytes, longer than a file name can be"),
        ("a\x00b.png", "contains a NUL character"),
        ("data:image/png,rawbytes", "a data: URL of an image must be base64-encoded"),
        ("data:image/png;base64,@@@", "expected the image's bytes as base64"),
    ]:
        with pytest.raises(ImageError, match=message):
            load_image(bad)
    with pytest.raises(ImageError) as caught:
        load_image(encoded)
    assert len(str(caught.value)) < 300  # the text is named by its start, never echoed whole


def test_a_path_that_can_never_name_a_file_is_named_by_each_reader(tmp_path: Path) -> None:
    from toolrag.paths import path_problem, shown

    assert shown("a" * 60) == repr("a" * 60) and shown("a" * 61) == repr("a" * 60 + "...")  # never echoed whole
    assert path_problem("sample_tools") is None and path_problem(tmp_path / ("a" * 255)) is None
    assert path_problem("a" * 256) == "has a name of 256 bytes, longer than a file name can be (255)"
    assert path_problem("规" * 86) is not None  # 258 bytes of UTF-8: the file system counts bytes
    assert path_problem("/".join(["a" * 200] * 21)) == "is 4,220 bytes long, longer than a path can be (4096)"
    with pytest.raises(CatalogError, match=r"catalog path 'x{60}\.\.\.' has a name of 300 bytes"):
        load_catalog("x" * 300)
    with pytest.raises(QueryError, match=r"queries file 'q{60}\.\.\.' has a name of 305 bytes"):
        load_queries("q" * 300 + ".yaml")
    queries = tmp_path / "queries.yaml"
    queries.write_text(f"- query: fix this\n  gold: []\n  image: {'p' * 300}.png\n", encoding="utf-8")
    with pytest.raises(QueryError, match="has a name of 304 bytes"):
        load_queries(queries)


def test_settings_and_caller_of_another_type_are_named_with_the_fix(small_catalog_dir: Path) -> None:
    import numpy as np

    from toolrag.settings import Settings, settings_or

    settings = Settings(top_k=np.int64(3), history_weight=np.float32(0.5), weights={"dense": np.float64(0.3)})
    assert type(settings.top_k) is int and settings.top_k == 3 and type(settings.history_weight) is float
    assert Settings().with_overrides(top_k=np.int32(7)).top_k == 7
    assert settings_or(None) == Settings() and settings_or(None, settings) is settings
    with pytest.raises(TypeError, match=r"settings is a dict, not toolrag.Settings: give Settings\(top_k=3\)"):
        settings_or({"top_k": 3})
    with pytest.raises(TypeError, match="caller is a str, not toolrag.Caller: for a role give role='employee'"):
        prepare_request(load_catalog(small_catalog_dir), "x", caller="employee")  # type: ignore[arg-type]


def test_a_usable_image_is_left_alone() -> None:
    img = Image.new("RGB", (300, 200), (1, 2, 3))
    assert load_image(img).size == (300, 200) and check_example_image(img).size == (300, 200)


def test_prepare_request_names_bad_values_and_notes_unknown_codes(small_catalog_dir: Path) -> None:
    catalog = load_catalog(small_catalog_dir)
    with pytest.raises(QueryError, match=r"unknown category 'travl' \(did you mean 'travel'\?\)"):
        prepare_request(catalog, "x", categories=["travl"])
    with pytest.raises(CatalogError, match="unknown role 'boss'; roles of catalog 'small': employee, hr_manager"):
        prepare_request(catalog, "x", role="boss")
    with pytest.raises(QueryError, match="holds no readable text .*2 invalid UTF-8 bytes"):
        prepare_request(catalog, "\udcff\udcfe  ")
    with pytest.raises(QueryError, match="query must be text, got int"):
        prepare_request(catalog, 5)
    with pytest.raises(QueryError, match="not one string"):
        prepare_request(catalog, "x", permissions="hr.payroll.approve")  # type: ignore[arg-type]
    request = prepare_request(catalog, "x", permissions=["hr.payrol.approve", "hr.payroll.approve"])
    assert request.caller.codes == {"hr.payrol.approve", "hr.payroll.approve"}
    assert request.notes == ("permission code 'hr.payrol.approve' is used by no tool or role of this catalog "
                             "(did you mean 'hr.payroll.approve'?); it grants nothing",)


# ----------------------------------------------------------------------- CLI: refused before any model


@pytest.fixture()
def no_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything loads a model: these inputs must be refused before."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("models were loaded for an input that should have been refused first")

    monkeypatch.setattr(retriever_module, "load_models", refuse)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the socket is


@pytest.mark.parametrize(("line", "message"), [
    ("weights: {bm25: lots}", "weight of 'bm25' is 'lots'; use a number from 0 to 10"),
    ("weights: [1, 2]", "weights is [1, 2]; give a mapping of signal to weight"),
    ("weights: {bm25: null}", "weight of 'bm25' is None; use a number"),
    ("weights: 3", "weights is 3; give a mapping"),
    ("text_model: 5", "text_model is 5; give 'e5', 'minilm'"),
    ("weights: {dense: 0, dense_en: 0, bm25: 0, ocr: 0, visual: 0, concepts: 0, clip: 0}",
     "every signal weight is 0: no signal would score a tool"),
    ("topk: 4", "unknown key 'topk'; did you mean 'top_k'?"),
    ("weights: {bm52: 1}", "unknown signal weight 'bm52'; did you mean 'bm25'?"),
])
def test_a_bad_settings_file_names_file_line_and_setting(capsys: pytest.CaptureFixture[str], no_models: None,
                                                         small_catalog_dir: Path, tmp_path: Path, line: str,
                                                         message: str) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"top_k: 3\n{line}\n", "utf-8")
    code, out, err = run(capsys, "search", "--catalog", str(small_catalog_dir), "--data-dir", str(tmp_path / "d"),
                         "--settings", str(settings), "weather")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"toolrag: {settings}:2: ") and message in err
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["search", "   "], "toolrag: empty query"),
    (["search", "\udcff\udcfe \x00"], "holds no readable text (2 invalid UTF-8 bytes and 1 control character"),
    (["search", "x", "--role", "boss"], "unknown role 'boss'"),
    (["search", "x", "--category", "travl"], "unknown category 'travl' (did you mean 'travel'?)"),
    (["search", "x", "--image", "MISSING"], "missing.png: not found"),
    (["search", "x", "--image", "NOT_IMAGE"], "not an image Pillow can read"),
    (["search", "x", "--image", "/dev/zero"], "/dev/zero: is a character device, not an image file"),
    (["search", "x", "--image", "x" * 300], "has a name of 300 bytes, longer than a file name can be (255)"),
    (["search", "x", "--image", "https://example.com/a.png"], "is a URL: toolrag does not download images"),
    (["lint", "--catalog", "c" * 300], "catalog path 'ccc"),
    (["search", "x", "--role", ""], "--role '' is empty"),
    (["search", "x", "--role", "  "], "--role '  ' is empty"),
    (["serve", "--role", ""], "--role '' is empty"),
    (["index", "--index", ""], "--index '' is empty"),
    (["serve", "--index", " "], "--index ' ' is empty"),
    (["search", "x", "--chroma-url", "CLOSED"], "cannot reach a Chroma server at http://127.0.0.1:"),
    (["eval", "--queries", "TYPO"], "2 gold ids are not in catalog 'small': 'weather.curent' (line 1; closest: "
                                    "'weather.current'"),
    (["eval", "--queries", "GOOD", "--permissions", "no.such.code"], "permission code 'no.such.code' (given for "
                                                                     "every row) is used by no tool or role"),
    (["eval", "--queries", "GOOD", "--role", "boss"], "unknown role 'boss'"),
    (["tune", "--queries", "TYPO"], "gold ids are not in catalog"),
    (["serve", "--role", "emplyee"], "unknown role 'emplyee'; roles of catalog 'small'"),
    (["report", "--role", "emplyee"], "unknown role 'emplyee'; roles of catalog 'small'"),
])
def test_bad_input_is_one_line_before_any_model_and_writes_nothing(
        capsys: pytest.CaptureFixture[str], no_models: None, small_catalog_dir: Path, tmp_path: Path,
        args: list[str], message: str) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text("- {query: weather, gold: [weather.curent]}\n- {query: room, gold: [calendar.bok]}\n", "utf-8")
    good = tmp_path / "good.yaml"
    good.write_text("- {query: weather, gold: [weather.current]}\n", "utf-8")
    not_image = tmp_path / "notes.png"
    not_image.write_text("not an image", "utf-8")
    names = {"TYPO": str(typo), "GOOD": str(good), "MISSING": str(tmp_path / "missing.png"),
             "NOT_IMAGE": str(not_image), "CLOSED": f"http://127.0.0.1:{closed_port()}"}
    args = [names.get(a, a) for a in args]
    code, out, err = run(capsys, args[0], "--catalog", str(small_catalog_dir), "--data-dir", str(tmp_path / "d"),
                         *args[1:])
    assert code == 2 and out == ""
    assert err.startswith("toolrag: ") and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "d").exists()  # no index folder, no Chroma file


def test_a_closed_chroma_port_is_reported_before_the_models_load(no_models: None, small_catalog_dir: Path) -> None:
    from toolrag.errors import StoreError
    from toolrag.ui import Backend

    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(StoreError, match=f"cannot reach a Chroma server at {url}"):
        ToolRetriever.from_catalog(small_catalog_dir, chroma_url=url)
    backend = Backend(small_catalog_dir, chroma_url=url)  # the app's build: the status line says why
    backend.build()
    assert not backend.ready and backend.error is not None and "cannot reach a Chroma server" in backend.error


@pytest.mark.slow
def test_invalid_utf8_argv_from_a_real_shell(small_catalog_dir: Path, tmp_path: Path) -> None:
    """The bytes a terminal in another encoding sends: refused with a message when nothing readable is left."""
    done = subprocess.run([sys.executable, "-m", "toolrag", "search", "--catalog", str(small_catalog_dir),
                           "--data-dir", str(tmp_path / "d"), b"\xff\xfe"], capture_output=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2 and b"Traceback" not in done.stderr
    assert done.stderr.decode() == ("toolrag: the query holds no readable text (2 invalid UTF-8 bytes; replaced by "
                                    "spaces); type the request as UTF-8 text\n")
    assert not (tmp_path / "d").exists()


@pytest.mark.slow  # a child process
@pytest.mark.parametrize("url", ["localhost:7871", "ftp://127.0.0.1:7871"])
def test_a_replica_with_a_malformed_chroma_url_exits_at_start(small_catalog_dir: Path, tmp_path: Path,
                                                              url: str) -> None:
    """A URL that can never work is refused at once (exit 2, the value and the fix), as `toolrag index` refuses
    it, not retried every poll by a replica that never ends (the CLI replica and the app's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRAG_")}
    port = closed_port()
    commands = [([sys.executable, "-m", "toolrag", "serve", "--index", "tools", "--chroma-url", url, "--transport",
                  "http", "--port", str(port), "--data-dir", str(tmp_path / "d")], env),
                ([sys.executable, "-m", "toolrag", "index", "--catalog", str(small_catalog_dir), "--index", "tools",
                  "--chroma-url", url, "--data-dir", str(tmp_path / "d")], env),
                ([sys.executable, "-X", "importtime", str(ROOT / "app.py")],  # refused before gradio is imported
                 {**env, "TOOLRAG_CHROMA_URL": url, "TOOLRAG_INDEX": "tools", "GRADIO_SERVER_PORT": str(port)})]
    for command, environment in commands:
        try:
            done = subprocess.run(command, capture_output=True, cwd=ROOT, env=environment, timeout=120,
                                  stdin=subprocess.DEVNULL, encoding="utf-8")
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{command[2:4]} with --chroma-url {url} still running after 120 s") from None
        assert done.returncode == 2, (command, done.stderr[-2000:])
        assert done.stderr.endswith(f"toolrag: Chroma URL {url!r} must start with http:// or https:// (e.g. "
                                    "--chroma-url http://127.0.0.1:8000)\n"), done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        assert not any(line.split("|")[-1].strip() == "gradio" for line in done.stderr.splitlines())
    assert not (tmp_path / "d").exists()


@pytest.mark.slow
def test_a_chinese_request_in_the_c_locale(small_catalog_dir: Path, tmp_path: Path) -> None:
    """A shell in the C locale (no UTF-8 mode): the UTF-8 bytes of the request are read as the text they spell and
    the JSON comes out as UTF-8, not as a UnicodeEncodeError."""
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONIOENCODING": ""}
    done = subprocess.run([sys.executable, "-m", "toolrag", "search", "--catalog", str(small_catalog_dir),
                           "--data-dir", str(tmp_path / "d"), "--json", "预订明天的会议室".encode()],
                          capture_output=True, cwd=ROOT, timeout=300, env=env)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    result = json.loads(done.stdout.decode("utf-8"))
    assert result["query"] == "预订明天的会议室"


def degenerate_catalog(folder: Path, image: Image.Image | bytes) -> Path:
    """The small catalog with one more tool whose example image is ``image``."""
    shutil.copytree(Path(__file__).resolve().parent.parent / "assets", folder / "assets",
                    ignore=lambda d, names: [n for n in names if n not in ("receipt_zh.png", "astronaut.jpg")])
    (folder / "catalog.yaml").write_text("name: small\nassets_dir: assets\n", "utf-8")
    path = folder / "assets" / "strip.png"
    if isinstance(image, bytes):
        path.write_bytes(image)
    else:
        image.save(path)
    (folder / "tools.yaml").write_text(SMALL_CATALOG + "- id: scan.strip\n  description: Reads a long receipt "
                                       "strip.\n  images: [{path: strip.png, caption: a strip}]\n", encoding="utf-8")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(("image", "message"), [
    (Image.new("RGB", (1, 5000)), "is 1x5000 pixels: a side is under 16 pixels"),
    (Image.new("RGB", (2000, 60)), "is 2000x60 pixels: it is 33 times longer than wide"),
    (b"\x89PNG\r\n\x1a\n not really", "strip.png is not an image Pillow can read"),
    (b"", "strip.png is empty (0 bytes)"),
    (Image.new("L", (9000, 9000)), "is 9000x9000 = 81,000,000 pixels, above the limit of 40,000,000"),
])
def test_an_unusable_example_image_is_refused_as_lint_says_it_before_anything_is_written(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, image: Image.Image | bytes, message: str) -> None:
    """The probe's bad example images (not an image, 0 bytes, 81 megapixels, 1x5000): ``index`` and ``search``
    refuse the catalog with the very line ``lint`` prints, before any model loads, in a fresh data folder
    (never created) and in one that holds an index (not a byte changed)."""
    catalog = degenerate_catalog(tmp_path / "catalog", image)
    code, out, err = run(capsys, "lint", "--catalog", str(catalog))
    assert code == 2 and "tool 'scan.strip'" in out and message in out and message in err
    first = out.splitlines()[0]
    assert first.startswith(f"{catalog / 'tools.yaml'}:") and message in first
    fresh, existing = tmp_path / "fresh", tmp_path / "existing"
    (existing / "chroma").mkdir(parents=True)
    (existing / "chroma" / "chroma.sqlite3").write_bytes(b"an index built before")
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in existing.rglob("*") if p.is_file()}
    for folder, command in ((fresh, ["index"]), (existing, ["search", "报销这张小票".encode()])):  # bytes: any locale
        done = subprocess.run([sys.executable, "-m", "toolrag", command[0], "--catalog", str(catalog), "--data-dir",
                               str(folder), *command[1:]], capture_output=True, encoding="utf-8", cwd=ROOT, timeout=300)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr == f"toolrag: {first}\n"  # lint's file:line message, the one line on stderr
    assert not fresh.exists()  # no model built, no index opened
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in existing.rglob("*") if p.is_file()} == before


def test_lint_warns_about_a_role_holding_a_code_no_tool_needs(capsys: pytest.CaptureFixture[str],
                                                              small_catalog_dir: Path, tmp_path: Path) -> None:
    """A misspelt code in a role grants nothing: the role sees fewer tools than meant, silently, unless lint
    says so."""
    catalog = tmp_path / "catalog"
    shutil.copytree(small_catalog_dir, catalog)
    (catalog / "catalog.yaml").write_text("name: small\nassets_dir: assets\nroles:\n  employee: []\n"
                                          "  hr_manager: [hr.payroll.aprove]\n", encoding="utf-8")
    code, out, _ = run(capsys, "lint", "--catalog", str(catalog))
    assert code == 0
    assert (f"{catalog / 'catalog.yaml'}: role 'hr_manager': permission code 'hr.payroll.aprove' is needed by no "
            "tool, so it grants nothing; did you mean 'hr.payroll.approve'?") in out.splitlines()
    assert out.splitlines()[-1].endswith("; 1 role warning")
    code, out, _ = run(capsys, "lint", "--catalog", str(small_catalog_dir), "--json")
    assert code == 0 and json.loads(out)["roles"] == []


@pytest.mark.slow
def test_a_truncated_example_image_is_refused_before_a_single_vector(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, models: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file cut after its header passes the header check; the index decodes it before writing a vector."""
    whole = tmp_path / "whole.png"
    Image.effect_noise((64, 64), 40).save(whole)
    catalog = degenerate_catalog(tmp_path / "catalog", whole.read_bytes()[:200])
    code, out, _ = run(capsys, "lint", "--catalog", str(catalog))
    assert code == 2 and "strip.png is truncated or corrupt" in out
    monkeypatch.setattr(retriever_module, "load_models", lambda *a, **k: models)
    code, out, err = run(capsys, "index", "--catalog", str(catalog), "--data-dir", str(tmp_path / "d"))
    assert code == 2 and err.startswith("toolrag: tool 'scan.strip': ") and "truncated" in err
    written = chroma_rows(tmp_path / "d" / "chroma")
    assert written and not any(written.values()), written  # the collections exist, without a single row


def chroma_rows(folder: Path) -> dict[str, int]:
    import chromadb

    client = chromadb.PersistentClient(path=str(folder))
    return {c.name: client.get_collection(c.name).count() for c in client.list_collections()}


# ------------------------------------------------------------------------------- CLI: used, and said so


@pytest.fixture()
def shared_models(monkeypatch: pytest.MonkeyPatch, models: Any) -> None:
    """The CLI loads the session's real models instead of loading them again."""
    monkeypatch.setattr(retriever_module, "load_models", lambda *a, **k: models)


@pytest.mark.slow
def test_a_cleaned_query_with_an_unknown_code_is_searched_with_warnings(
        capsys: pytest.CaptureFixture[str], shared_models: None, small_catalog_dir: Path, data_dir: Path) -> None:
    code, out, err = run(capsys, "search", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                         "--json", "--permissions", "no.such.code", "approve \udcff\udcfe this month's payroll")
    assert code == 0
    payload = json.loads(out)
    assert payload["query"] == "approve    this month's payroll"
    assert "hr.payroll.approve" not in [c["id"] for c in payload["candidates"]]  # an unknown code grants nothing
    notes = [n for n in payload["notes"] if "invalid UTF-8" in n or "no.such.code" in n]
    assert len(notes) == 2 and all(f"toolrag: warning: {n}\n" in err for n in notes)


@pytest.mark.slow
def test_a_huge_query_is_cut_and_never_echoed(capsys: pytest.CaptureFixture[str], shared_models: None,
                                              small_catalog_dir: Path, data_dir: Path) -> None:
    query = "will it rain tomorrow in Berlin " + "x" * 120_000  # about what one argument may carry
    code, out, err = run(capsys, "search", "--catalog", str(small_catalog_dir), "--data-dir", str(data_dir),
                         "--json", query)
    assert code == 0 and len(out) < 30_000
    payload = json.loads(out)
    assert payload["query"] == query[:MAX_QUERY_CHARS] and payload["candidates"][0]["id"] == "weather.forecast"
    note = f"the query has {len(query):,} characters; only the first {MAX_QUERY_CHARS:,} were used"
    assert note in payload["notes"] and f"toolrag: warning: {note}" in err


# ---------------------------------------------------------------------------------------------- library


@pytest.mark.slow
def test_a_search_no_weighted_signal_can_score_says_so(small_retriever: Any) -> None:
    """Text weights all 0 and no image: the image signals cannot run, so every tool would score 0.0 silently."""
    settings = small_retriever.settings.with_overrides(weights={"dense": 0.0, "dense_en": 0.0, "bm25": 0.0})
    result = small_retriever.search("book a meeting room", settings=settings)
    assert {c.score for c in result.candidates} == {0.0}
    assert any(n.startswith("every signal that could score this request has weight 0 (") for n in result.notes)
    assert not any("weight 0" in n for n in small_retriever.search("book a meeting room").notes)


@pytest.mark.slow
def test_library_search_cleans_cuts_and_notes(small_retriever: Any) -> None:
    result = small_retriever.search("approve\x00 this month's \ud800payroll", role="hr_manager")
    assert result.ids[0] == "hr.payroll.approve" and result.query == "approve  this month's  payroll"
    assert result.notes[0] == "the query had 1 lone surrogate and 1 control character; replaced by spaces"
    result.to_json_str().encode("utf-8")  # printable: no lone surrogate is echoed
    huge = small_retriever.search("book a meeting room " * 500_000)  # 10,000,000 characters
    assert len(huge.query) == MAX_QUERY_CHARS and len(huge.to_json_str()) < 30_000
    assert huge.notes[0] == (f"the query has 10,000,000 characters; only the first {MAX_QUERY_CHARS:,} were used")
    with pytest.raises(QueryError, match="holds no readable text"):
        small_retriever.search("\x00\x01")


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1, 5000), (5000, 1), (3, 3)])
def test_a_degenerate_query_image_is_searched(small_retriever: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    path = tmp_path / "strip.png"
    Image.new("RGB", size, (255, 255, 255)).save(path)
    result = small_retriever.search("报销", image=path)
    assert result.candidates and result.absent_signals.get("ocr") == "no text found in the image"


@pytest.mark.slow
def test_unknown_gold_ids_are_an_error_naming_the_closest(small_retriever: Any, tmp_path: Path) -> None:
    queries = tmp_path / "q.yaml"
    queries.write_text("- {query: weather now, gold: [weather.current]}\n"
                       "- {query: book a room, gold: [calendar.bok]}\n", encoding="utf-8")
    with pytest.raises(QueryError, match=r"1 gold id is not in catalog 'small': 'calendar.bok' \(line 2; "
                                         r"closest: 'calendar.book', 'calendar.book_v1'\)"):
        small_retriever.evaluate(Evaluator(load_queries(queries)))
    with pytest.raises(QueryError, match="permission code 'no.such.code'"):
        small_retriever.evaluate(Evaluator(load_queries(queries)[:1], permissions=["no.such.code"]))


RESTRICTED_SUCCESSOR = """\
- id: payroll.export_v1
  name: export_payroll_v1
  description: Export the payroll (old endpoint, kept for reference).
  deprecated: true
  replaced_by: payroll.export
  examples: [{query: export the payroll file}]
- id: payroll.export
  name: export_payroll
  description: Export the payroll of a month as a bank file.
  permissions: [payroll.export]
  examples: [{query: export this month's payroll file}]
"""


@pytest.fixture(scope="module")
def successor_retriever(tmp_path_factory: pytest.TempPathFactory, models: Any) -> ToolRetriever:
    folder = tmp_path_factory.mktemp("successor")
    (folder / "tools.yaml").write_text(RESTRICTED_SUCCESSOR, "utf-8")
    return ToolRetriever.from_catalog(folder, data_dir=folder / "data", models=models)


@pytest.mark.slow
def test_a_successor_the_caller_cannot_see_is_not_named(successor_retriever: ToolRetriever) -> None:
    # the request names the tool, so it is called and the prompt lists it (docs/decisions.md: named_tool)
    guest = successor_retriever.search("run payroll.export_v1 to export the payroll file", include_deprecated=True)
    assert guest.ids == ["payroll.export_v1"] and guest.candidates[0].replaced_by is None
    assert "deprecated" in guest.prompt and "prefer" not in guest.prompt
    text = guest.to_json_str() + guest.prompt
    assert "payroll.export\"" not in text and "export_payroll\"" not in text
    assert guest.to_json()["candidates"][0]["replaced_by"] is None
    # The request names the old tool, so it is injected (the prompt holds only the selection: docs/decisions.md)
    allowed = successor_retriever.search("run payroll.export_v1 to export the payroll file", include_deprecated=True,
                                         permissions=["payroll.export"])
    old = next(c for c in allowed.candidates if c.id == "payroll.export_v1")
    assert "payroll.export_v1" in allowed.selected
    assert old.replaced_by == "payroll.export" and "deprecated, prefer payroll.export" in allowed.prompt


@pytest.fixture()
def chroma_writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every write toolrag sends to Chroma (rows and collections)."""
    calls: list[str] = []
    for name in ("upsert", "delete", "rename", "drop", "new_generation"):
        original = getattr(VectorCollection, name)

        def spy(self: VectorCollection, *args: Any, _name: str = name, _original: Any = original,
                **kwargs: Any) -> Any:
            calls.append(f"{_name} {self.name}")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(VectorCollection, name, spy)
    yield calls


@pytest.mark.slow
def test_an_unchanged_catalog_is_searched_without_a_write(small_catalog_dir: Path, tmp_path: Path, models: Any,
                                                          chroma_writes: list[str]) -> None:
    first = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path, models=models)  # type: ignore[arg-type]
    assert chroma_writes  # the first build writes every row
    first.search("weather", image=ROOT / "assets" / "queries" / "receipt_dinner.png")
    chroma_writes.clear()
    again = ToolRetriever.from_catalog(small_catalog_dir, data_dir=tmp_path, models=models)  # type: ignore[arg-type]
    again.search("weather", image=ROOT / "assets" / "queries" / "receipt_dinner.png")
    assert again.index.encoded_last_sync == 0 and chroma_writes == []
