"""Tests of toolrag.search.fusion: hand-worked examples of every fusion function."""

from __future__ import annotations

import numpy as np
import pytest

from toolrag.search.fusion import (
    competition_ranks,
    early_fusion,
    effective_weights,
    late_fusion,
    normalize,
    order,
    rrf_fusion,
)
from toolrag.settings import Normalization

T, F = True, False


# ------------------------------------------------------------------------------------------ normalize
RAW = np.array([3.0, 1.0, 2.0, 9.0])  # the 9.0 is absent: it must not influence anything
PRESENT = np.array([T, T, T, F])


def test_normalize_minmax() -> None:
    # min 1, max 3: (3-1)/2 = 1, (1-1)/2 = 0, (2-1)/2 = 0.5, absent -> 0
    assert normalize(RAW, PRESENT, Normalization.MINMAX) == pytest.approx([1.0, 0.0, 0.5, 0.0])


def test_normalize_logistic() -> None:
    # mean 2, std = sqrt((1 + 1 + 0)/3) = 0.816497; z = +1.224745, -1.224745, 0
    # logistic: 1/(1+exp(-1.224745)) = 1/1.293838 = 0.772897; 1/(1+exp(1.224745)) = 0.227103; 0 -> 0.5
    assert normalize(RAW, PRESENT, Normalization.LOGISTIC) == pytest.approx(
        [0.772897, 0.227103, 0.5, 0.0], abs=1e-6
    )


def test_normalize_rank() -> None:
    # ranks 1, 3, 2 of n_present = 3: 1 - 0/3 = 1, 1 - 2/3 = 0.333333, 1 - 1/3 = 0.666667
    assert normalize(RAW, PRESENT, Normalization.RANK) == pytest.approx([1.0, 1 / 3, 2 / 3, 0.0])


def test_normalize_none_is_identity_on_present() -> None:
    assert normalize(RAW, PRESENT, Normalization.NONE) == pytest.approx([3.0, 1.0, 2.0, 0.0])


def test_normalize_non_discriminating_signal() -> None:
    raw, present = np.array([5.0, 5.0, 7.0]), np.array([T, T, F])
    assert normalize(raw, present, Normalization.MINMAX) == pytest.approx([0.0, 0.0, 0.0])  # span 0
    assert normalize(raw, present, Normalization.LOGISTIC) == pytest.approx([0.5, 0.5, 0.0])  # z = 0
    assert normalize(raw, present, Normalization.RANK) == pytest.approx([1.0, 1.0, 0.0])  # shared rank 1
    nothing = np.array([F, F, F])
    for method in Normalization:
        assert not normalize(raw, nothing, method).any()


def test_normalize_validates() -> None:
    with pytest.raises(ValueError, match="finite"):
        normalize(np.array([1.0, np.nan]), np.array([T, T]), Normalization.MINMAX)
    # NaN where the signal is absent is fine
    assert normalize(np.array([1.0, np.nan]), np.array([T, F]), Normalization.RANK) == pytest.approx([1, 0])
    with pytest.raises(ValueError, match="bool"):
        normalize(np.array([1.0, 2.0]), np.array([1, 0]), Normalization.MINMAX)
    with pytest.raises(ValueError, match="shape"):
        normalize(np.array([1.0, 2.0]), np.array([T]), Normalization.MINMAX)
    with pytest.raises(ValueError, match="minmax"):
        normalize(np.array([1.0]), np.array([T]), "nonsense")  # type: ignore[arg-type]
    assert normalize(np.array([2.0, 1.0]), np.array([T, T]), "rank") == pytest.approx([1.0, 0.5])  # type: ignore[arg-type]


def test_normalize_range_on_random_data() -> None:
    rng = np.random.default_rng(0)
    raw = rng.normal(size=200) * 10
    present = rng.random(200) > 0.3
    for method in (Normalization.MINMAX, Normalization.LOGISTIC, Normalization.RANK):
        out = normalize(raw, present, method)
        assert np.all(np.isfinite(out)) and out.min() >= 0 and out.max() <= 1
        assert not out[~present].any()
        # monotone: a higher raw score never gets a lower normalised score
        idx = np.flatnonzero(present)
        by_raw = idx[np.argsort(raw[idx])]
        assert np.all(np.diff(out[by_raw]) >= -1e-12)


# ---------------------------------------------------------------------------------- competition_ranks
def test_competition_ranks() -> None:
    # 0.9, 0.8, 0.8, 0.1 -> "1224"
    assert competition_ranks(np.array([0.9, 0.8, 0.8, 0.1]), np.array([T, T, T, T])).tolist() == [1, 2, 2, 4]
    # 0.9 twice share rank 1; 0.5 has two above -> 3; 0.1 -> 4; absent -> 0 (its 0.95 is ignored)
    ranks = competition_ranks(np.array([0.9, 0.5, 0.9, 0.1, 0.95]), np.array([T, T, T, T, F]))
    assert ranks.tolist() == [1, 3, 1, 4, 0]
    assert np.issubdtype(ranks.dtype, np.integer)


# -------------------------------------------------------------------------------------- late fusion
# 4 candidates, weights dense 0.6, bm25 0.3, image 0.1
WEIGHTS = {"dense": 0.6, "bm25": 0.3, "image": 0.1}
NORM = {
    "dense": np.array([1.0, 0.5, 0.4, 0.9]),
    "bm25": np.array([0.5, 1.0, 0.0, 0.7]),
    "image": np.array([0.0, 0.2, 1.0, 0.3]),
}
PRES = {
    "dense": np.array([T, T, T, F]),
    "bm25": np.array([T, T, F, F]),
    "image": np.array([F, T, T, F]),
}


def test_late_fusion_hand_example() -> None:
    fused, contrib = late_fusion(NORM, PRES, WEIGHTS)
    expected = [
        0.833333,  # c0: W = 0.6+0.3 = 0.9; (0.6*1.0 + 0.3*0.5)/0.9 = 0.75/0.9
        0.62,  # c1: W = 1.0; 0.6*0.5 + 0.3*1.0 + 0.1*0.2 = 0.3+0.3+0.02
        0.485714,  # c2: W = 0.6+0.1 = 0.7; (0.6*0.4 + 0.1*1.0)/0.7 = 0.34/0.7
        0.0,  # c3: nothing present, W = 0 -> 0
    ]
    assert fused == pytest.approx(expected, abs=1e-6)
    # c0: dense 0.6/0.9 = 0.666667, bm25 0.15/0.9 = 0.166667; c2: dense 0.24/0.7, image 0.1/0.7
    assert contrib["dense"] == pytest.approx([0.666667, 0.3, 0.342857, 0.0], abs=1e-6)
    assert contrib["bm25"] == pytest.approx([0.166667, 0.3, 0.0, 0.0], abs=1e-6)
    assert contrib["image"] == pytest.approx([0.0, 0.02, 0.142857, 0.0], abs=1e-6)
    assert sum(contrib.values()) == pytest.approx(fused)


def test_effective_weights_hand_example() -> None:
    eff = effective_weights(PRES, WEIGHTS)
    assert eff["dense"] == pytest.approx([0.6 / 0.9, 0.6, 0.6 / 0.7, 0.0])  # 0.666667, 0.6, 0.857143, 0
    assert eff["bm25"] == pytest.approx([0.3 / 0.9, 0.3, 0.0, 0.0])  # 0.333333, 0.3, 0, 0
    assert eff["image"] == pytest.approx([0.0, 0.1, 0.1 / 0.7, 0.0])  # 0, 0.1, 0.142857, 0
    total = sum(eff.values())
    assert total == pytest.approx([1.0, 1.0, 1.0, 0.0])


def test_whole_signal_absent_equals_fusion_without_it() -> None:
    rng = np.random.default_rng(1)
    n = 50
    norm = {s: rng.random(n) for s in ("dense", "bm25", "image")}
    pres = {s: rng.random(n) > 0.2 for s in ("dense", "bm25")}
    pres["image"] = np.zeros(n, dtype=bool)
    with_absent, contrib = late_fusion(norm, pres, WEIGHTS)
    without, _ = late_fusion(
        {s: norm[s] for s in ("dense", "bm25")}, {s: pres[s] for s in ("dense", "bm25")}, WEIGHTS
    )
    np.testing.assert_allclose(with_absent, without)
    assert not contrib["image"].any()
    # a weight for a signal that is not computed at all behaves the same
    dropped, _ = late_fusion({s: norm[s] for s in ("dense", "bm25")}, pres, {"dense": 0.6, "bm25": 0.3})
    np.testing.assert_allclose(dropped, without)
    # fused is a weighted mean of values in [0, 1]
    assert np.all((with_absent >= 0) & (with_absent <= 1))


def test_late_fusion_validates() -> None:
    with pytest.raises(ValueError, match="presence mask"):
        late_fusion(NORM, {"dense": PRES["dense"]}, WEIGHTS)
    with pytest.raises(ValueError, match="weight"):
        late_fusion(NORM, PRES, {"dense": -1.0})
    with pytest.raises(ValueError, match="length"):
        late_fusion({"a": np.zeros(3), "b": np.zeros(4)}, {"a": np.ones(3, bool), "b": np.ones(4, bool)}, {})
    with pytest.raises(ValueError, match="nothing to fuse"):
        late_fusion({}, {}, WEIGHTS)


# ---------------------------------------------------------------------------------------------- RRF
def test_rrf_hand_example() -> None:
    ranks = {"dense": np.array([1, 2, 3, 0]), "bm25": np.array([2, 1, 0, 0])}
    fused, contrib = rrf_fusion(ranks, {"dense": 1.0, "bm25": 0.5}, k=60)
    expected = [
        0.024458,  # 1/61 + 0.5/62 = 0.016393 + 0.008065
        0.024326,  # 1/62 + 0.5/61 = 0.016129 + 0.008197
        0.015873,  # 1/63 (bm25 absent: adds nothing)
        0.0,  # absent everywhere
    ]
    assert fused == pytest.approx(expected, abs=1e-6)
    assert contrib["bm25"] == pytest.approx([0.5 / 62, 0.5 / 61, 0.0, 0.0])
    assert sum(contrib.values()) == pytest.approx(fused)
    with pytest.raises(ValueError, match="integers"):
        rrf_fusion({"dense": np.array([1.0, 2.0])}, {"dense": 1.0})
    with pytest.raises(ValueError, match="k"):
        rrf_fusion(ranks, {"dense": 1.0}, k=-1)


# ------------------------------------------------------------------------------------------ early fusion
def test_early_fusion_hand_example() -> None:
    # 3*[1,0] + 4*[0,1] = [3,4]; |[3,4]| = 5 -> [0.6, 0.8]; the second input is unit-normalised first
    out = early_fusion({"text": np.array([1.0, 0.0]), "image": np.array([0.0, 2.0])}, {"text": 3, "image": 4})
    assert out == pytest.approx([0.6, 0.8], abs=1e-6)
    assert out.dtype == np.float32 and np.linalg.norm(out) == pytest.approx(1.0, abs=1e-6)
    # weight 0 or no weight: skipped (even with another dimension)
    skipped = early_fusion(
        {"text": np.array([1.0, 0.0]), "other": np.ones(3), "free": np.ones(5)}, {"text": 1.0, "other": 0.0}
    )
    assert skipped == pytest.approx([1.0, 0.0])


def test_early_fusion_errors() -> None:
    with pytest.raises(ValueError, match="dimensions"):
        early_fusion({"a": np.ones(2), "b": np.ones(3)}, {"a": 1, "b": 1})
    with pytest.raises(ValueError, match="nothing to combine"):
        early_fusion({"a": np.ones(2)}, {"a": 0})
    with pytest.raises(ValueError, match="nothing to combine"):
        early_fusion({}, {"a": 1})
    with pytest.raises(ValueError, match="cancel"):
        early_fusion({"a": np.array([1.0, 0.0]), "b": np.array([-1.0, 0.0])}, {"a": 1, "b": 1})
    with pytest.raises(ValueError, match="zero"):
        early_fusion({"a": np.zeros(2)}, {"a": 1})


# ------------------------------------------------------------------------------------------------ order
def test_order_tie_rule() -> None:
    fused = np.array([0.5, 0.9, 0.5, 0.5])
    ids = ["b", "z", "a", "c"]
    # z (0.9) first; the three 0.5 ties by id: a (2), b (0), c (3)
    assert order(fused, ids).tolist() == [1, 2, 0, 3]
    # priority beats id among score ties: c has priority 1
    assert order(fused, ids, np.array([0, 0, 0, 1])).tolist() == [1, 3, 2, 0]
    # but never beats a higher score
    assert order(fused, ids, np.array([9, 0, 0, 0])).tolist()[0] == 1
    assert order(np.zeros(0), []).tolist() == []
    with pytest.raises(ValueError, match="finite"):
        order(np.array([np.nan]), ["a"])
    with pytest.raises(ValueError, match="ids"):
        order(np.array([1.0]), ["a", "b"])


def test_order_is_a_sorted_permutation() -> None:
    rng = np.random.default_rng(5)
    fused = rng.integers(0, 4, size=100) / 4  # many ties
    ids = [f"t{rng.integers(1000):04d}_{i}" for i in range(100)]
    idx = order(fused, ids)
    assert sorted(idx.tolist()) == list(range(100))
    keys = [(-fused[i], ids[i]) for i in idx]
    assert keys == sorted(keys)
