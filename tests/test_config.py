"""toolrag.config: the one table of environment variables, its one reader, and docs/configuration.md rendered
from it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from scripts import env_table
from toolrag import config as cfg
from toolrag import env_vars as ev

ROOT = Path(__file__).resolve().parent.parent


def test_the_configuration_page_is_the_table() -> None:
    page = env_table.PAGE.read_text(encoding="utf-8")
    assert env_table.PAGE == ROOT / "docs" / "configuration.md"
    assert env_table.section(page) == ev.env_table_markdown(), "run python -m scripts.env_table"
    assert env_table.rendered(page) == page
    for var in ev.ENV_VARS:
        assert f"| `{var.name}` | {var.default} |" in page


def test_a_variable_outside_the_table_cannot_be_read_or_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLRAG_NOT_A_SETTING", "x")
    with pytest.raises(ValueError, match=r"TOOLRAG_NOT_A_SETTING is not in toolrag.env_vars.ENV_VARS; add a row"):
        cfg.env("TOOLRAG_NOT_A_SETTING")
    with pytest.raises(ValueError, match=r"PATH is not in toolrag.env_vars.LIBRARY_ENV"):
        cfg.set_default("PATH", "/nowhere")
    assert "TOOLRAG_NOT_A_SETTING" not in cfg.environ()


def test_env_strips_and_reads_unset_as_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ev.LOG_LEVEL_ENV, "  DEBUG \n")
    assert cfg.env(ev.LOG_LEVEL_ENV) == "DEBUG"
    assert cfg.environ()[ev.LOG_LEVEL_ENV] == "  DEBUG \n"  # as set: Access parses its own values
    monkeypatch.delenv(ev.LOG_LEVEL_ENV)
    assert cfg.env(ev.LOG_LEVEL_ENV) == "" and ev.LOG_LEVEL_ENV not in cfg.environ()


@pytest.mark.parametrize(("value", "on", "warned"), [(None, True, False), ("", True, False), (" ON ", True, False),
                                                    ("1", True, False), ("off", False, False), (" No ", False, False),
                                                    ("0", False, False), ("sometimes", True, True)])
def test_a_switch_is_on_unless_turned_off(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                          value: str | None, on: bool, warned: bool) -> None:
    if value is None:
        monkeypatch.delenv(ev.MAP_WARMUP_ENV, raising=False)
    else:
        monkeypatch.setenv(ev.MAP_WARMUP_ENV, value)
    with caplog.at_level("WARNING", logger="toolrag.config"):
        assert cfg.switch_setting(ev.MAP_WARMUP_ENV, meaning="skip the warm-up") is on
    assert ("ignoring TOOLRAG_MAP_WARMUP='sometimes': use off to skip the warm-up, or on" in caplog.text) is warned


def test_set_default_keeps_the_users_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", "mine")
    cfg.set_default("NUMBA_CACHE_DIR", "toolrag's")
    assert os.environ["NUMBA_CACHE_DIR"] == "mine"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    cfg.set_default("NUMBA_CACHE_DIR", "toolrag's")
    assert os.environ["NUMBA_CACHE_DIR"] == "toolrag's"


def test_chroma_url_flag_then_environment_then_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolrag.errors import SettingsError
    from toolrag.index.client import chroma_url

    monkeypatch.delenv(ev.CHROMA_URL_ENV, raising=False)
    assert chroma_url() is None and chroma_url("") is None
    monkeypatch.setenv(ev.CHROMA_URL_ENV, " http://env:8000 ")
    assert chroma_url() == "http://env:8000"
    assert chroma_url(None) == "http://env:8000"
    assert chroma_url("http://flag:9000") == "http://flag:9000"
    monkeypatch.setenv(ev.CHROMA_URL_ENV, "env:8000")  # a value that can never work: refused where it is read
    with pytest.raises(SettingsError, match="Chroma URL 'env:8000' must start with http://"):
        chroma_url()


def _sources() -> list[Path]:
    return sorted([*(ROOT / "toolrag").rglob("*.py"), ROOT / "app.py", *(ROOT / "bench").rglob("*.py"),
                   *(ROOT / "scripts").rglob("*.py"), *(ROOT / "examples").rglob("*.py")])


def test_only_config_touches_the_environment() -> None:
    """``os.environ`` appears in toolrag/, app.py and examples/ only in toolrag/config.py; in bench/ only where the
    engine to measure is chosen before any toolrag import, and where a child process inherits the environment."""
    allowed = {"toolrag/config.py", "bench/common.py", "bench/image_model.py", "bench/replicas.py"}  # child envs
    found = {f.relative_to(ROOT).as_posix() for f in _sources()
             if re.search(r"os\.environ|getenv", f.read_text("utf-8"))}
    assert found <= allowed, f"read these through toolrag.config.env: {sorted(found - allowed)}"
    assert "toolrag/config.py" in found
    common = (ROOT / "bench" / "common.py").read_text("utf-8")
    assert [line.strip() for line in common.splitlines() if "os.environ" in line] == [
        'ENGINE = os.environ.get("TOOLRAG_BENCH_ENGINE", "").strip()']


def test_every_variable_named_in_the_code_is_in_the_table() -> None:
    names = {var.name for var in ev.ENV_VARS}
    named = {(f.relative_to(ROOT).as_posix(), m) for f in _sources()
             for m in re.findall(r"\bTOOLRAG_[A-Z][A-Z_]*[A-Z]\b", f.read_text("utf-8"))}
    missing = sorted((file, name) for file, name in named if name not in names)
    assert not missing, f"add these to toolrag.env_vars.ENV_VARS (or stop reading them): {missing}"


@pytest.mark.parametrize(("space", "online", "offline_flag"), [("me/demo", "0", "1"), ("me/demo", "", None),
                                                              ("", "1", None), ("", "", "1")])
def test_bench_is_online_exactly_when_config_says(monkeypatch: pytest.MonkeyPatch, space: str, online: str,
                                                  offline_flag: str | None) -> None:
    """bench.common sets HF_HUB_OFFLINE by toolrag.config.is_online: SPACE_ID with TOOLRAG_ONLINE=0 is offline."""
    from bench import common

    monkeypatch.setenv("SPACE_ID", space)
    monkeypatch.setenv(ev.ONLINE_ENV, online)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv(ev.THREADS_ENV, raising=False)
    monkeypatch.setenv(ev.BENCH_THREADS_ENV, "3")
    common.set_up_environment()
    assert os.environ.get("HF_HUB_OFFLINE") == offline_flag
    assert cfg.is_online() is (offline_flag is None)
    assert os.environ[ev.THREADS_ENV] == "3"
