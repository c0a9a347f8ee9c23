"""The label-free risk model as package data (toolrag/data/risk_model.json): it loads, the estimate reads it, a
missing or malformed file is refused with the file and the fix named, and bench.label_free --fit --export writes
what the loader reads back."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest
import tomllib

from bench.label_free import export_model, main
from toolrag.errors import ModelUnavailable
from toolrag.evaluation.risk import (
    FEATURES,
    RISK_MODEL_FILE,
    LabelFreeReport,
    RiskModel,
    estimate,
    load_risk_model,
    risk_model,
)

ROOT = Path(__file__).resolve().parent.parent


def test_the_shipped_model_loads_and_the_estimate_reads_it() -> None:
    model = load_risk_model()
    assert RISK_MODEL_FILE == ROOT / "toolrag" / "data" / "risk_model.json"
    assert model.version and model.command.startswith("python -m bench.label_free --fit")
    assert set(model.first) == set(model.top5) == {"intercept", *FEATURES}
    assert model.first["intercept"] < 0 < model.first["own_first"]  # a tool its own text misses is at risk
    assert "training catalogs" in model.fitted_on
    assert risk_model() == model and risk_model() is risk_model()  # read once per process
    feats = {"own_first": 1.0, "own_margin": 0.5, "sentence_first": 0.5}
    assert estimate(feats) == estimate(feats, model)
    assert LabelFreeReport(()).fitted_on == model.fitted_on
    assert RiskModel.from_json(json.loads(RISK_MODEL_FILE.read_text(encoding="utf-8"))).to_json() == \
        json.loads(RISK_MODEL_FILE.read_text(encoding="utf-8"))


def test_the_package_ships_the_file() -> None:
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["toolrag"]
    name = RISK_MODEL_FILE.relative_to(ROOT / "toolrag").as_posix()
    assert any(PurePosixPath(name).match(pattern) for pattern in patterns), f"add {name} to package-data"


@pytest.mark.parametrize(("text", "why"), [
    (None, "cannot be read"),
    ("{", "malformed"),
    ("[]", "malformed (it holds list, not an object)"),
    ('{"version": "v"}', "malformed (it lacks features, first, top5, fitted_on, command)"),
    ("swap features", "are not this toolrag's"),
    ("drop a coefficient", "coefficients must be exactly intercept"),
    ("a coefficient as text", "are not finite numbers"),
    ("an empty version", "its version is not a non-empty text"),
])
def test_a_missing_or_malformed_file_names_itself_and_the_fix(tmp_path: Path, text: str | None, why: str) -> None:
    good = json.loads(RISK_MODEL_FILE.read_text(encoding="utf-8"))
    changed = {"swap features": {**good, "features": list(reversed(FEATURES))},
               "drop a coefficient": {**good, "first": {"intercept": 0.0}},
               "a coefficient as text": {**good, "top5": {**good["top5"], "own_first": "1.0"}},
               "an empty version": {**good, "version": " "}}
    path = tmp_path / "risk_model.json"
    if text is not None:
        path.write_text(json.dumps(changed[text]) if text in changed else text, encoding="utf-8")
    with pytest.raises(ModelUnavailable) as refused:
        load_risk_model(path)
    message = str(refused.value)
    assert str(path) in message and why in message
    assert "reinstall toolrag, or write it again with python -m bench.label_free --fit --export" in message


def test_export_writes_what_the_loader_reads(tmp_path: Path) -> None:
    fitted = RiskModel(first={"intercept": -1.5, "own_first": 2.0, "own_margin": 0.5, "sentence_first": 0.25},
                       top5={"intercept": 0.5, "own_first": 1.0, "own_margin": 0.125, "sentence_first": 0.75},
                       fitted_on="3 tools of a test")
    path = tmp_path / "risk_model.json"
    written = export_model(fitted, "python -m bench.label_free --fit --export", path)
    loaded = load_risk_model(path)
    assert (loaded.first, loaded.top5, loaded.fitted_on) == (fitted.first, fitted.top5, fitted.fitted_on)
    assert loaded.command == "python -m bench.label_free --fit --export"
    assert written == {"file": str(path), "version": loaded.version} and len(loaded.version.split("-")) == 4
    with pytest.raises(ValueError, match="coefficients must be exactly"):  # what the loader refuses is not written
        export_model(RiskModel({"intercept": 0.0}, {"intercept": 0.0}, "x"), "cmd", tmp_path / "other.json")
    assert not (tmp_path / "other.json").exists()


def test_export_needs_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--export"]) == 2
    assert "--export writes the model --fit fits: add --fit" in capsys.readouterr().err
