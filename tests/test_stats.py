"""The shared statistics (toolrag.stats) by hand: the z-score every layer uses and the tuners' significance test."""

from __future__ import annotations

import numpy as np
import pytest

from toolrag.stats import significant_gain, standard_scores


def test_standard_scores_by_hand() -> None:
    scores = standard_scores(np.array([0.4, 0.2]), np.array([0.1, 0.2, 0.3]))
    assert scores is not None and scores == pytest.approx([2.449, 0.0], abs=1e-3)
    assert standard_scores(np.array([1.0]), np.array([0.5])) is None  # one value: no spread to measure
    assert standard_scores(np.array([1.0]), np.array([0.3, 0.3, 0.3])) is None  # no spread


def test_a_gain_counts_only_beyond_its_standard_error() -> None:
    mean, stderr, changed = significant_gain([1.0, 0.0, 1.0, 0.0], z=1.0)  # mean 0.5, std 0.577, stderr 0.289
    assert mean == pytest.approx(0.5) and stderr == pytest.approx(0.2887, abs=1e-4) and changed
    assert not significant_gain([1.0, -1.0, 1.0, -0.5], z=1.0)[2]  # mean 0.125 below its stderr
    assert not significant_gain([-0.2, -0.1], z=0.0)[2] and significant_gain([], z=1.0) == (0.0, 0.0, False)
