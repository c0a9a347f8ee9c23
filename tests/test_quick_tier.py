"""The quick tier's guard (tests/quick_tier.py) on a small suite run in a child pytest: a test that loads a
model, uses a model fixture or starts a child process fails under ``--quick`` even unmarked, a file marked
slow as a whole is not imported, and a pure test passes. Marked slow itself: it runs pytest in a child."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent

FILES = {
    "conftest": """
import pytest
pytest_plugins = ["quick_tier"]

@pytest.fixture(scope="session")
def models():
    return object()
""",
    "test_pure": "def test_arithmetic():\n    assert 1 + 1 == 2\n",
    "test_imports_a_model_library": "def test_onnx():\n    import onnxruntime  # noqa: F401\n",
    "test_survives_a_refused_import": """
def test_falls_back():
    try:
        import torch  # noqa: F401
    except ImportError:
        pass  # the code under test falls back: the guard still fails the test
""",
    "test_uses_models": "def test_with_models(models):\n    assert models is not None\n",
    "test_child_process": """
import subprocess, sys

def test_runs_python():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
""",
    "test_whole_file_slow": """
import pytest
import torch  # a quick run never imports this file

pytestmark = pytest.mark.slow

def test_uses_torch():
    assert torch.zeros(1).shape == (1,)
""",
}


def test_the_quick_tier_refuses_what_is_not_pure_logic(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    pytester.makeini("[pytest]\nmarkers =\n    slow: models\n    browser: browser\n    server: server\n")
    pytester.makepyfile(**FILES)
    result = pytester.runpytest_subprocess("--quick", "-p", "no:cacheprovider", "-rA")
    out = result.stdout.str()
    for message in ("test_imports_a_model_library.py::test_onnx imports onnxruntime; mark the test "
                    "@pytest.mark.slow", "test_survives_a_refused_import.py::test_falls_back imports ['torch']",
                    "test_uses_models.py::test_with_models uses the fixture 'models'",
                    "test_child_process.py::test_runs_python starts a child process"):
        assert message in out, message
    result.stdout.fnmatch_lines_random(["PASSED test_pure.py::test_arithmetic",
                                        "FAILED test_imports_a_model_library.py::test_onnx*",
                                        "ERROR test_survives_a_refused_import.py::test_falls_back*",
                                        "ERROR test_uses_models.py::test_with_models*",
                                        "FAILED test_child_process.py::test_runs_python*"])
    assert "test_whole_file_slow" not in out
    assert result.ret == pytest.ExitCode.TESTS_FAILED
