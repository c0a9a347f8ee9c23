"""The pure ceilings of bench.ceilings (issue 10's targets with the labels known) and of bench.build_phases (a
build's rate), on examples worked by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.ceilings import FeatureRow, best_threshold_accuracy, ceilings, cross_fitted, max_coverage_at  # noqa: E402
from bench.decisions import auc  # noqa: E402


def test_best_threshold_accuracy_worked_example() -> None:
    # scores 0.9 0.8 0.3 0.1, labels T F T F. Calling the first i positive is right for
    # (positives among them) + (negatives after them): i=0: 0+2, i=1: 1+2, i=2: 1+1, i=3: 2+1, i=4: 2+0 -> 3/4
    assert best_threshold_accuracy([0.9, 0.8, 0.3, 0.1], [True, False, True, False]) == pytest.approx(0.75)
    # a tie is never split: 0.5 / 0.5 with T F gives 1 of 2 whichever side the cut falls
    assert best_threshold_accuracy([0.5, 0.5], [True, False]) == pytest.approx(0.5)
    assert best_threshold_accuracy([0.2, 0.7], [False, True]) == pytest.approx(1.0)


def test_max_coverage_at_worked_example() -> None:
    # P 0.9 .. 0.5, right T T F T F, precision 0.75: hits 1/1, 2/2, 2/3 (< 2.25), 3/4 (>= 3), 3/5 (< 3.75)
    # -> the largest cut that keeps 75% is 4 of 5 rows
    assert max_coverage_at([0.9, 0.8, 0.7, 0.6, 0.5], [True, True, False, True, False], 0.75) == pytest.approx(0.8)
    # tied P(right) are called together: 0.9 0.9 (T F) then 0.1 (T) never reaches 90% -> nothing is called
    assert max_coverage_at([0.9, 0.9, 0.1], [True, False, True], 0.9) == 0.0
    assert max_coverage_at([0.9], [False]) == 0.0


def test_cross_fitted_probabilities_are_out_of_fold_and_ordered() -> None:
    # one feature that separates the classes: each fold's model ranks its held-out rows right; pooled over the
    # five folds (five models, their probabilities not on one scale) the AUC stays near 1, for the trees
    # (leaves of at least 5 rows, so some rows near the cut tie) a little lower
    x = np.arange(40, dtype=np.float64).reshape(-1, 1)
    y = (x[:, 0] >= 20).astype(int)
    for kind, least in (("logistic", 0.99), ("trees", 0.95)):
        p = cross_fitted(x, y, kind=kind)
        assert p.shape == (40, 2)
        assert np.allclose(p.sum(axis=1), 1.0)
        assert auc(p[:, 1], y.astype(bool)) >= least - 1e-9
    # labels reversed, the probabilities follow: the model is fitted on the labels, not on the order
    flipped = cross_fitted(x, 1 - y, kind="logistic")
    assert auc(flipped[:, 1], (1 - y).astype(bool)) >= 0.99
    with pytest.raises(ValueError, match="logistic"):
        cross_fitted(x, y, kind="forest")


def test_ceilings_oracle_coverage_is_top1_over_the_precision() -> None:
    # 10 rows that need a tool, 6 with the right top tool, 4 that need none: the oracle calls the 6 right ones
    # and at most 6 / 0.9 = 6.67 of 10 rows keep 90% precision -> 0.667; top-1 right 0.6
    rows = [FeatureRow("EXECUTE", True, i < 6, "EXECUTE", 0.9 - 0.05 * i, 0.1, 0.1, (float(i), 1.0))
            for i in range(10)]
    rows += [FeatureRow("NO_TOOL", False, False, "NO_TOOL", 0.1, 0.1, 0.9, (20.0 + i, 0.0)) for i in range(4)]
    got = ceilings(rows)
    assert got["top1"] == pytest.approx(0.6)
    assert got["coverage_oracle"] == pytest.approx(6 / 9)
    # the shipped P(right) ranks the 6 right rows first: 6 of 10 called, all right
    assert got["coverage_shipped"] == pytest.approx(0.6)
    # the shipped P(no tool) separates the 4 rows that need none perfectly
    assert got["no_tool_auc_shipped"] == pytest.approx(1.0)
    assert got["no_tool_best_acc_shipped"] == pytest.approx(1.0)


def test_build_ceiling_line_worked_example() -> None:
    from bench.build_phases import ceiling_line

    # 1,000 tools, the tool-text phase 8 s: 1000 / 8 = 125 tools/s; 30 CPU s over 2 cores: 1000 * 2 / 30 = 66.7
    line = ceiling_line(1000, text_wall=8.0, cpu=30.0, cores=2)
    assert "125.0 tools/s" in line
    assert "66.7 tools/s" in line


def test_with_no_tool_threshold_changes_only_model_decisions() -> None:
    from bench.ceilings import with_no_tool_threshold

    rows = [
        FeatureRow("NO_TOOL", False, False, "EXECUTE", 0.5, 0.1, 0.35, (), "model"),  # turned away at t <= 0.35
        FeatureRow("EXECUTE", True, True, "EXECUTE", 0.8, 0.1, 0.30, (), "model"),    # turned away at t <= 0.30
        FeatureRow("EXECUTE", True, True, "EXECUTE", 0.8, 0.1, 0.90, (), "named_tool"),  # a rule: kept
        FeatureRow("NO_TOOL", False, False, "NO_TOOL", 0.1, 0.1, 0.70, (), "model"),  # stays NO_TOOL
    ]
    # t 0.5: nothing changes -> rows 2, 3, 4 right = 3/4; t 0.35: row 1 becomes right -> 4/4;
    # t 0.3: row 2 is turned away too -> 3/4
    assert with_no_tool_threshold(rows, 0.5) == pytest.approx(0.75)
    assert with_no_tool_threshold(rows, 0.35) == pytest.approx(1.0)
    assert with_no_tool_threshold(rows, 0.3) == pytest.approx(0.75)


def test_selection_ceiling_learns_a_separable_second_tool() -> None:
    from bench.ceilings import selection_ceiling

    # 60 requests: the even ones need two tools and their second candidate trails the top by 0.1, every other
    # candidate by 2.0 or more. With the labels known the cut keeps exactly the second tool of the two-tool
    # requests: Completeness 1.0 with 2 tools there, 1 tool for the single-tool ones; the shipped selection (1
    # tool each) completes none; the top five complete all with 5 tools each.
    rows = []
    for i in range(60):
        multi = i % 2 == 0
        cands = tuple((0.1 if multi and j == 1 else 2.0 + j, 0.0, 0.0, float(j + 1)) for j in range(1, 5))
        rows.append(FeatureRow("EXECUTE", True, True, "EXECUTE", 0.9, 0.1, 0.1, (), "model", cands,
                               (True, multi, False, False, False), 2 if multi else 1, 1))
    shipped, top5, *cut = selection_ceiling(rows, thresholds=(0.5,))
    assert (shipped["completeness"], shipped["size_multi"], shipped["size_single"]) == (0.0, 1.0, 1.0)
    assert (top5["completeness"], top5["size_multi"], top5["size_single"]) == (1.0, 5.0, 5.0)
    assert cut[0]["completeness"] == pytest.approx(1.0)
    assert (cut[0]["size_multi"], cut[0]["size_single"]) == (pytest.approx(2.0), pytest.approx(1.0))


def test_fittable_needs_two_rows_of_each_of_two_classes() -> None:
    from bench.ceilings import fittable

    assert fittable([True, True, False, False])
    assert not fittable([True, True, True])            # one class
    assert not fittable([True, True, False])           # a class of one row: a training fold would lack it
    assert fittable(["EXECUTE", "EXECUTE", "CLARIFY", "CLARIFY", "NO_TOOL", "NO_TOOL"])
    # a set cut short: the shipped columns are kept, the models' are left out (n/a in the tables)
    rows = [FeatureRow("EXECUTE", True, i < 2, "EXECUTE", 0.9, 0.1, 0.1, (1.0,)) for i in range(3)]
    got = ceilings(rows)
    assert got["top1"] == pytest.approx(2 / 3) and "coverage_logistic" not in got
