"""Reciprocal Rank Fusion and score normalisation: pure functions."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omoide.errors import InvalidInput
from omoide.fusion import (
    cosine_to_unit,
    min_max,
    normalise_rrf,
    reciprocal_rank_fusion,
    rrf_bounds,
)


def keys(fused):
    return [f.key for f in fused]


def test_one_constant_for_every_list():
    # Seed 004's sketch used k=1 for the vector list and k=60 for the lexical list, so the
    # vector list's top hit "v" would beat "b", which is 1st lexically and 2nd by vector.
    fused = reciprocal_rank_fusion([["v", "b"], ["b", "x"]], k=60)
    assert keys(fused) == ["b", "v", "x"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].score == pytest.approx(1 / 61)
    assert fused[0].ranks == (2, 1)
    assert fused[1].ranks == (1, None)


def test_default_k_is_60_and_limit_cuts():
    fused = reciprocal_rank_fusion([["a", "b", "c"]])
    assert fused[0].score == pytest.approx(1 / 61)
    assert keys(reciprocal_rank_fusion([["a", "b", "c"]], limit=2)) == ["a", "b"]
    assert reciprocal_rank_fusion([["a"]], limit=0) == []


def test_ties_broken_by_best_rank_then_first_appearance():
    # "a" and "b" both have ranks {1, 2}: equal scores and equal best rank → first appearance.
    assert keys(reciprocal_rank_fusion([["a", "b"], ["b", "a"]])) == ["a", "b"]
    assert keys(reciprocal_rank_fusion([["b", "a"], ["a", "b"]])) == ["b", "a"]


def test_duplicates_in_one_list_count_once():
    fused = reciprocal_rank_fusion([["a", "a", "b"]])
    assert keys(fused) == ["a", "b"]
    assert fused[1].ranks == (2,)


def test_empty_inputs():
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []


@pytest.mark.parametrize("bad", [-1, 1.5, True, "60"])
def test_bad_constant(bad):
    with pytest.raises(InvalidInput, match="RRF constant"):
        reciprocal_rank_fusion([["a"]], k=bad)


def test_bad_limit():
    with pytest.raises(InvalidInput, match="limit"):
        reciprocal_rank_fusion([["a"]], limit=-1)


rankings = st.lists(st.lists(st.integers(0, 30), max_size=25, unique=True), max_size=4)


@settings(max_examples=200, deadline=None)
@given(rankings, st.integers(0, 100))
def test_rrf_properties(lists, k):
    fused = reciprocal_rank_fusion(lists, k=k)
    # deterministic
    assert fused == reciprocal_rank_fusion(lists, k=k)
    # exactly the union, each once
    assert sorted(keys(fused)) == sorted({x for lst in lists for x in lst})
    # scores non-increasing
    assert all(a.score >= b.score for a, b in itertools.pairwise(fused))
    # never below a key it beats in every list that holds either of them
    position = {f.key: i for i, f in enumerate(fused)}
    rank = [{x: i for i, x in enumerate(lst)} for lst in lists]
    for a in position:
        for b in position:
            if a == b:
                continue
            relevant = [r for r in rank if a in r or b in r]
            if relevant and all(a in r and (b not in r or r[a] < r[b]) for r in relevant):
                assert position[a] < position[b]


def test_min_max():
    assert min_max([]) == []
    assert min_max([3.0, 3.0]) == [1.0, 1.0]
    assert min_max([1.0, 3.0, 2.0]) == [0.0, 1.0, 0.5]
    with pytest.raises(InvalidInput, match="NaN"):
        min_max([1.0, float("nan")])


def test_cosine_and_rrf_normalisation():
    assert cosine_to_unit(1.0) == 1.0
    assert cosine_to_unit(-1.0) == 0.0
    assert cosine_to_unit(0.0) == 0.5
    assert cosine_to_unit(1.5) == 1.0
    assert rrf_bounds(2, k=60) == pytest.approx(2 / 61)
    assert rrf_bounds(0) == 0.0
    assert normalise_rrf(2 / 61, 2, k=60) == pytest.approx(1.0)
    assert normalise_rrf(1 / 61, 2, k=60) == pytest.approx(0.5)
    assert normalise_rrf(0.1, 0) == 0.0
