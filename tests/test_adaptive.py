"""Hand-worked checks of the score-distribution-aware normalisation (toolrag.search.adaptive)."""

from __future__ import annotations

import numpy as np
import pytest

from toolrag.search.adaptive import REFERENCE_SIZE, reference_rows, standardize


def test_standardize_by_hand() -> None:
    # scores 1, 2, 3, 6: mean 3, population std sqrt((4 + 1 + 0 + 9) / 4) = sqrt(3.5)
    z = standardize(np.array([1.0, 2.0, 3.0, 6.0]), np.ones(4, bool))
    s = np.sqrt(3.5)
    assert z == pytest.approx([-2 / s, -1 / s, 0.0, 3 / s])


def test_absent_entries_are_zero_and_ignored_by_the_statistics() -> None:
    # the absent 100.0 must change neither the mean (2) nor the std (1) of the present 1 and 3
    z = standardize(np.array([1.0, 100.0, 3.0]), np.array([True, False, True]))
    assert z.tolist() == [-1.0, 0.0, 1.0]


def test_reference_distribution_is_used_for_the_statistics() -> None:
    # candidates 4 and 8 measured against a catalog whose scores are 0, 2, 4, 6 (mean 3, std sqrt(5))
    ref = np.array([0.0, 2.0, 4.0, 6.0])
    z = standardize(np.array([4.0, 8.0]), np.ones(2, bool), reference=ref, reference_present=np.ones(4, bool))
    assert z == pytest.approx([1 / np.sqrt(5), 5 / np.sqrt(5)])
    # an absent reference entry is left out: 0, 2, 4 -> mean 2, std sqrt(8/3)
    z2 = standardize(np.array([4.0]), np.ones(1, bool), reference=ref,
                     reference_present=np.array([True, True, True, False]))
    assert z2 == pytest.approx([2 / np.sqrt(8 / 3)])


def test_a_standout_signal_outweighs_a_flat_one() -> None:
    # Both signals rank tool 0 first and min-max would give both top candidates 1.0; against the
    # distribution, the peaked signal's top candidate gets the larger value.
    peaked = standardize(np.array([9.0, 1.0, 1.0, 1.0, 1.0]), np.ones(5, bool))
    flat = standardize(np.array([0.82, 0.80, 0.80, 0.79, 0.79]), np.ones(5, bool))
    assert peaked[0] == pytest.approx(2.0)        # (9 - 2.6) / 3.2
    assert flat[0] < peaked[0]
    assert np.argmax(peaked) == np.argmax(flat) == 0


def test_no_spread_gives_zero() -> None:
    assert standardize(np.array([0.5, 0.5, 0.5]), np.ones(3, bool)).tolist() == [0.0, 0.0, 0.0]
    assert standardize(np.array([0.5, 0.7]), np.array([True, False])).tolist() == [0.0, 0.0]
    assert standardize(np.array([], dtype=float), np.zeros(0, bool)).shape == (0,)


def test_standardize_is_affine_invariant() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=50)
    present = rng.random(50) > 0.3
    assert standardize(3.0 * x + 7.0, present) == pytest.approx(standardize(x, present))


def test_standardize_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="bool array"):
        standardize(np.array([1.0, 2.0]), np.array([1, 1]))
    with pytest.raises(ValueError, match="finite"):
        standardize(np.array([1.0, np.nan]), np.ones(2, bool))
    with pytest.raises(ValueError, match="both reference"):
        standardize(np.array([1.0]), np.ones(1, bool), reference=np.array([1.0, 2.0]))


def test_reference_rows_small_and_large() -> None:
    allowed = np.array([0, 3, 5, 9])
    assert reference_rows(allowed, limit=10).tolist() == [0, 3, 5, 9]
    # 11 allowed rows, limit 3: positions 0, 5, 10 (first, middle, last)
    many = np.arange(100, 111)
    assert reference_rows(many, limit=3).tolist() == [100, 105, 110]
    big = reference_rows(np.arange(0, 200_000, 2))
    assert len(big) == REFERENCE_SIZE and big[0] == 0 and big[-1] == 199_998
    assert np.all(np.diff(big) > 0)
    with pytest.raises(ValueError):
        reference_rows(allowed, limit=1)
    with pytest.raises(ValueError):
        reference_rows(np.array([0.5, 1.5]))
